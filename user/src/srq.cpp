// SPDX-License-Identifier: GPL-2.0
// Shared receive queues: creation and the ring mapping, posting receive
// WRs (no system call: the kernel reads the producer index when a message
// arrives), the limit and queries.
#include <cerrno>

#include "objects.hpp"
#include "syscall.hpp"

namespace viaduct {

namespace {

std::string srq_name(std::uint32_t handle) {
    return "SRQ " + std::to_string(handle);
}

void check_config(const SrqConfig &c, const DeviceLimits &l) {
    auto bad = [](const std::string &what, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
        if (v < lo || v > hi)
            throw Error(EINVAL, "cannot create an SRQ: " + what + " " + std::to_string(v) +
                                    " is out of range (" + std::to_string(lo) + " to " +
                                    std::to_string(hi) + " on this device)");
    };
    bad("depth", c.depth, 1, l.max_qp_wr);
    bad("max_sge", c.max_sge, 0, l.max_sge);
    bad("max_msg_size", c.max_msg_size, 0, l.max_msg_size);
}

Error create_error(int err) {
    switch (err) {
    case ENOENT:
        return Error(err, "cannot create an SRQ: its PD no longer exists");
    case ENOTTY:
        return Error(EOPNOTSUPP, "cannot create an SRQ: the viaduct module has no shared "
                                 "receive queues (VIADUCT_DEV_CAP_SRQ is clear)");
    default:
        return detail::call_error(err, "create an SRQ");
    }
}

// Posts @wrs whole; false if the SRQ has no room for them.
bool post(SharedReceiveQueue::State &s, std::span<const RecvWr> wrs, bool throw_if_full) {
    if (wrs.empty())
        return true;
    auto guard = detail::lock_unless(s.lock, s.single_threaded);
    if (s.ring.room() < wrs.size()) {
        if (!throw_if_full)
            return false;
        throw Error(ENOMEM, "the receive queue of " + srq_name(s.handle) +
                                " is full: no room for " + std::to_string(wrs.size()) + " WR" +
                                (wrs.size() == 1 ? "" : "s") + " in its " +
                                std::to_string(s.depth) +
                                " slots; receives complete, then post again");
    }
    for (std::size_t i = 0; i < wrs.size(); ++i) {
        if (wrs[i].sge.size() > s.max_sge)
            throw Error(EINVAL, "receive WR " + std::to_string(wrs[i].wr_id) + " on " +
                                    srq_name(s.handle) + " has " +
                                    std::to_string(wrs[i].sge.size()) +
                                    " SGEs, the SRQ takes at most " + std::to_string(s.max_sge));
        detail::encode_recv(s.ring.next_slot(static_cast<std::uint32_t>(i)), wrs[i], s.limits,
                            s.handle);
    }
    // Released: a QP's message that arrives after this may take them.
    s.ring.publish(static_cast<std::uint32_t>(wrs.size()));
    return true;
}

} // namespace

SharedReceiveQueue::State::~State() {
    detail::destroy_handle(dev.get(), VIADUCT_IOCTL_DESTROY_SRQ, handle);
}

SharedReceiveQueue::SharedReceiveQueue(const ProtectionDomain &pd, const SrqConfig &c) {
    auto s = std::make_shared<State>();
    s->pd = pd.state();
    s->dev = s->pd->dev;
    check_config(c, s->dev->attr.limits);

    viaduct_create_srq a{};
    a.user_data = c.user_data;
    a.pd_handle = s->pd->handle;
    a.depth = c.depth;
    a.max_sge = c.max_sge;
    a.max_msg_size = c.max_msg_size;
    if (int err = detail::do_ioctl(s->dev->fd.get(), VIADUCT_IOCTL_CREATE_SRQ, &a))
        throw create_error(err);
    s->handle = a.handle;
    s->depth = a.depth;
    s->max_sge = a.max_sge;
    s->single_threaded = c.single_threaded;
    if (!detail::is_pow2(a.depth) || a.wqe_size < sizeof(viaduct_rqe) ||
        sizeof(viaduct_srq_ring) > VIADUCT_RING_HDR_SIZE ||
        VIADUCT_RING_HDR_SIZE + std::uint64_t{a.depth} * a.wqe_size > a.mmap_size)
        throw Error(EPROTO,
                    "the kernel described " + srq_name(a.handle) + "'s ring inconsistently");
    s->map = detail::Mapping(s->dev->fd.get(), a.mmap_key, a.mmap_size,
                             "receive queue of " + srq_name(a.handle));
    auto *hdr = reinterpret_cast<viaduct_srq_ring *>(s->map.data());
    s->ring = detail::WorkRing(s->map.data() + VIADUCT_RING_HDR_SIZE, a.depth, a.wqe_size,
                               &hdr->producer, &hdr->consumer);
    s->limits = detail::WqeLimits{a.wqe_size, a.max_sge, 0};
    state_ = std::move(s);
}

std::shared_ptr<SharedReceiveQueue::State> SharedReceiveQueue::state() const {
    detail::checked(state_, "SharedReceiveQueue");
    return state_;
}

std::uint32_t SharedReceiveQueue::handle() const {
    return detail::checked(state_, "SharedReceiveQueue").handle;
}

std::uint32_t SharedReceiveQueue::depth() const {
    return detail::checked(state_, "SharedReceiveQueue").depth;
}

std::uint32_t SharedReceiveQueue::max_sge() const {
    return detail::checked(state_, "SharedReceiveQueue").max_sge;
}

void SharedReceiveQueue::post_recv(const RecvWr &wr) {
    post_recv(std::span<const RecvWr>(&wr, 1));
}

void SharedReceiveQueue::post_recv(std::span<const RecvWr> wrs) {
    post(detail::checked(state_, "SharedReceiveQueue"), wrs, true);
}

bool SharedReceiveQueue::try_post_recv(const RecvWr &wr) {
    return try_post_recv(std::span<const RecvWr>(&wr, 1));
}

bool SharedReceiveQueue::try_post_recv(std::span<const RecvWr> wrs) {
    return post(detail::checked(state_, "SharedReceiveQueue"), wrs, false);
}

std::uint32_t SharedReceiveQueue::room() const {
    State &s = detail::checked(state_, "SharedReceiveQueue");
    auto guard = detail::lock_unless(s.lock, s.single_threaded);
    return s.ring.room();
}

void SharedReceiveQueue::arm_limit(std::uint32_t limit) {
    State &s = detail::checked(state_, "SharedReceiveQueue");
    viaduct_modify_srq m{};
    m.handle = s.handle;
    m.mask = VIADUCT_SRQ_ATTR_LIMIT;
    m.limit = limit;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_MODIFY_SRQ, &m)) {
        if (err == EINVAL)
            throw Error(err, "cannot arm the limit of " + srq_name(s.handle) + " at " +
                                 std::to_string(limit) + ": it holds at most " +
                                 std::to_string(s.depth) + " WRs");
        throw detail::call_error(err, "arm the limit of " + srq_name(s.handle));
    }
}

SrqAttributes SharedReceiveQueue::query() const {
    State &s = detail::checked(state_, "SharedReceiveQueue");
    viaduct_query_srq q{};
    q.handle = s.handle;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_QUERY_SRQ, &q))
        throw detail::call_error(err, "query " + srq_name(s.handle));
    SrqAttributes a;
    a.depth = q.depth;
    a.max_sge = q.max_sge;
    a.limit = q.limit;
    a.outstanding = q.outstanding;
    a.num_qps = q.num_qps;
    a.broken = q.broken != 0;
    return a;
}

} // namespace viaduct
