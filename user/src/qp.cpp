// SPDX-License-Identifier: GPL-2.0
// Queue pairs: creation and the ring mappings, state changes, and the fast
// path: posting work requests and ringing the doorbell, polling the
// private completion rings.
#include <atomic>
#include <bit>
#include <cerrno>

#include "objects.hpp"
#include "syscall.hpp"

namespace viaduct {

namespace {

std::string qp_name(std::uint32_t handle) {
    return "QP " + std::to_string(handle);
}

const char *state_name(std::uint32_t state) {
    switch (state) {
    case VIADUCT_QPS_IDLE:
        return "Idle";
    case VIADUCT_QPS_RTS:
        return "RTS";
    case VIADUCT_QPS_CLOSING:
        return "Closing";
    case VIADUCT_QPS_TERMINATE:
        return "Terminate";
    case VIADUCT_QPS_ERROR:
        return "Error";
    default:
        return "an unknown state";
    }
}

std::shared_ptr<CompletionQueue::State>
cq_of(const CompletionQueue *cq, const std::shared_ptr<Device::State> &dev, const char *which) {
    if (!cq)
        return nullptr;
    auto s = cq->state();
    // A handle means something only on the context it came from.
    if (s->dev != dev)
        throw Error(EINVAL, std::string("the ") + which +
                                " CQ of a QP must be made on the same Device as its PD");
    return s;
}

Error create_error(int err, const QpConfig &c, const DeviceLimits &l) {
    if (err == EINVAL)
        return Error(err,
                     "cannot create a QP: depths must be 1 to " + std::to_string(l.max_qp_wr) +
                         ", SGEs at most " + std::to_string(l.max_sge) + ", inline at most " +
                         std::to_string(l.max_inline) + " bytes, ORD/IRD at most " +
                         std::to_string(l.max_ord) + "/" + std::to_string(l.max_ird) + " (asked " +
                         std::to_string(c.sq_depth) + "/" + std::to_string(c.rq_depth) + " WRs, " +
                         std::to_string(c.max_send_sge) + "/" + std::to_string(c.max_recv_sge) +
                         " SGEs, " + std::to_string(c.max_inline) + " inline)");
    if (err == ENOENT)
        return Error(err, "cannot create a QP: its PD or a CQ no longer exists");
    return detail::call_error(err, "create a QP");
}

// The limits the kernel checks, checked first here so that the message
// names the one value that is wrong.
void check_config(const QpConfig &c, const DeviceLimits &l) {
    auto bad = [](const std::string &what, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
        if (v < lo || v > hi)
            throw Error(EINVAL, "cannot create a QP: " + what + " " + std::to_string(v) +
                                    " is out of range (" + std::to_string(lo) + " to " +
                                    std::to_string(hi) + " on this device)");
    };
    bad("send queue depth", c.sq_depth, 1, l.max_qp_wr);
    bad("send ring depth", c.sq_ring_depth, 0, std::bit_ceil(c.sq_depth));
    if (!c.srq) {
        bad("receive queue depth", c.rq_depth, 1, l.max_qp_wr);
        bad("receive ring depth", c.rq_ring_depth, 0, std::bit_ceil(c.rq_depth));
        bad("max_recv_sge", c.max_recv_sge, 0, l.max_sge);
    } else if (c.rq_ring_depth) {
        throw Error(EINVAL, "cannot create a QP on an SRQ with a receive ring depth: it has no "
                            "receive ring");
    } else if (!c.recv_cq) {
        throw Error(EINVAL, "cannot create a QP on an SRQ without a receive CQ: its "
                            "receives complete there");
    }
    bad("max_send_sge", c.max_send_sge, 0, l.max_sge);
    bad("max_inline", c.max_inline, 0, l.max_inline);
    bad("ORD", c.ord, 0, l.max_ord);
    bad("IRD", c.ird, 0, l.max_ird);
    bad("max_msg_size", c.max_msg_size, 0, l.max_msg_size);
    switch (c.reliability) {
    case Reliability::Unreliable:
    case Reliability::ReliableDelivery:
    case Reliability::ReliableReception:
        break;
    default:
        throw Error(EINVAL, "cannot create a QP: unknown reliability level " +
                                std::to_string(static_cast<std::uint32_t>(c.reliability)));
    }
    if (c.access & ~std::uint32_t{VIADUCT_QP_ACCESS_REMOTE_WRITE | VIADUCT_QP_ACCESS_REMOTE_READ})
        throw Error(EINVAL, "cannot create a QP: unknown access bits " + std::to_string(c.access));
}

Error full_error(const char *queue, std::uint32_t handle, std::uint32_t depth, std::size_t count) {
    return Error(ENOMEM, std::string("the ") + queue + " queue of " + qp_name(handle) +
                             " is full: no room for " + std::to_string(count) + " WR" +
                             (count == 1 ? "" : "s") + " in its " + std::to_string(depth) +
                             " slots; poll completions and post again");
}

bool ring_fits(std::uint32_t entries, std::uint64_t size) {
    return detail::is_pow2(entries) &&
           VIADUCT_RING_HDR_SIZE + std::uint64_t{entries} * sizeof(viaduct_cqe) <= size;
}

// Tell the kernel that a producer index moved (Documentation/rings.rst,
// "Doorbells").
void ring_doorbell(QueuePair::State &s, std::uint32_t which) {
    if (s.caps.polled_doorbell) {
        // Store-buffer pattern with the kernel's poller: our producer store
        // (released above) and its NEED_WAKEUP store are each followed by
        // a full barrier before the load of the other's, so at least one
        // side sees the other: it keeps polling, or we call.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (!(detail::load_relaxed(s.db->flags) & VIADUCT_DB_F_NEED_WAKEUP))
            return;
    }
    s.doorbells.fetch_add(1, std::memory_order_relaxed);
    viaduct_doorbell_req d{};
    d.handle = s.handle;
    d.flags = which;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_DOORBELL, &d))
        throw detail::call_error(err, "ring the doorbell of " + qp_name(s.handle) +
                                          " (the WRs are in its ring; the kernel takes them at "
                                          "the next doorbell)");
}

// Receives without a doorbell (Documentation/rings.rst): in RTS the kernel
// takes new RQ WQEs from the ring when a message needs one, and says so in
// rq_on_demand. Store-buffer pattern with qp_set_state() leaving RTS: our
// producer store (released above), a full fence, then its flag; it clears
// the flag, a full barrier, then reads our producer. While the ring is
// half full or more we ring anyway, so that a short ring (VIPL's) or a
// burst of receives goes to the kernel's FIFO and the ring has room.
bool rq_taken_on_demand(QueuePair::State &s, QueuePair::State::Queue &q) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return detail::load_relaxed(s.db->rq_on_demand) &&
           q.ring.depth() - q.ring.room() < q.ring.depth() / 2;
}

// Posts @wrs whole; false if the queue has no room for them (nothing
// posted then), and the full_error() if @throw_if_full.
template <class Wr, class Encode>
bool post(QueuePair::State &s, QueuePair::State::Queue &q, std::span<const Wr> wrs,
          std::uint32_t which, const char *name, Encode encode, bool throw_if_full) {
    if (wrs.empty())
        return true;
    {
        auto guard = detail::lock_unless(q.lock, s.caps.single_threaded);
        if (q.ring.room() < wrs.size()) {
            if (!throw_if_full)
                return false;
            throw full_error(name, s.handle, q.ring.depth(), wrs.size());
        }
        // Written whole before anything is published: a WR that does not
        // encode leaves the queue as it was.
        for (std::size_t i = 0; i < wrs.size(); ++i)
            encode(q.ring.next_slot(static_cast<std::uint32_t>(i)), wrs[i], q.limits, s.handle);
        q.ring.publish(static_cast<std::uint32_t>(wrs.size()));
        if (which == VIADUCT_DOORBELL_RQ && rq_taken_on_demand(s, q))
            return true;
    }
    ring_doorbell(s, which);
    return true;
}

// A QP on an SRQ has no receive queue to post to.
void check_own_rq(const QueuePair::State &s) {
    if (s.srq)
        throw Error(EINVAL, qp_name(s.handle) + " receives from SRQ " +
                                std::to_string(s.srq->handle) + ": post receives there");
}

std::size_t poll_private(QueuePair::State &s, QueuePair::State::PrivateRing &r, bool present,
                         std::span<Completion> out, const char *name) {
    if (!present)
        throw Error(EINVAL, std::string("the ") + name + " queue of " + qp_name(s.handle) +
                                " completes into a CQ: poll that");
    auto guard = detail::lock_unless(r.lock, s.caps.single_threaded);
    std::size_t n = r.ring.poll(out);
    if (n == 0 && !out.empty() && r.ring.overflowed() && r.ring.empty())
        throw Error(EIO, std::string("the private ") + name + " completion ring of " +
                             qp_name(s.handle) + " overflowed: the QP is in error");
    return n;
}

} // namespace

QueuePair::State::~State() {
    // The rings stay mapped until the members go, after the QP is gone.
    detail::destroy_handle(dev.get(), VIADUCT_IOCTL_DESTROY_QP, handle);
}

QueuePair::QueuePair(const ProtectionDomain &pd, const QpConfig &c) {
    auto s = std::make_shared<State>();
    s->pd = pd.state();
    s->dev = s->pd->dev;
    s->send_cq = cq_of(c.send_cq, s->dev, "send");
    s->recv_cq = cq_of(c.recv_cq, s->dev, "receive");
    if (c.srq) {
        s->srq = c.srq->state();
        if (s->srq->pd != s->pd)
            throw Error(EINVAL, "a QP and the SRQ it receives from must be made on the same PD");
    }
    check_config(c, s->dev->attr.limits);
    if ((c.sq_ring_depth || c.rq_ring_depth) && !(s->dev->attr.caps & VIADUCT_DEV_CAP_RING_DEPTH))
        throw Error(EOPNOTSUPP, "this viaduct module cannot make a ring shorter than its queue "
                                "(VIADUCT_DEV_CAP_RING_DEPTH is clear)");

    viaduct_create_qp a{};
    a.user_data = c.user_data;
    a.pd_handle = s->pd->handle;
    a.send_cq = s->send_cq ? s->send_cq->handle : 0;
    a.recv_cq = s->recv_cq ? s->recv_cq->handle : 0;
    a.flags = c.polled_doorbell ? VIADUCT_QP_F_POLLED : 0;
    a.reliability = static_cast<std::uint32_t>(c.reliability);
    a.access = c.access;
    a.sq_depth = c.sq_depth;
    a.rq_depth = s->srq ? 0 : c.rq_depth;
    a.max_send_sge = c.max_send_sge;
    a.max_recv_sge = s->srq ? 0 : c.max_recv_sge;
    a.srq_handle = s->srq ? s->srq->handle : 0;
    a.max_inline = c.max_inline;
    a.ord = c.ord;
    a.ird = c.ird;
    a.max_msg_size = c.max_msg_size;
    a.sq_ring_depth = c.sq_ring_depth;
    a.rq_ring_depth = s->srq ? 0 : c.rq_ring_depth;
    if (int err = detail::do_ioctl(s->dev->fd.get(), VIADUCT_IOCTL_CREATE_QP, &a))
        throw create_error(err, c, s->dev->attr.limits);
    s->handle = a.handle;
    // a module without VIADUCT_DEV_CAP_RING_DEPTH leaves them 0: full
    // rings (and a QP on an SRQ has no RQ ring: 0 either way)
    if (!a.sq_ring_depth)
        a.sq_ring_depth = a.sq_depth;
    if (!a.rq_ring_depth)
        a.rq_ring_depth = a.rq_depth;

    QpCaps &caps = s->caps;
    caps.qpn = a.qpn;
    caps.sq_depth = a.sq_depth;
    caps.rq_depth = a.rq_depth;
    caps.sq_ring_depth = a.sq_ring_depth;
    caps.rq_ring_depth = a.rq_ring_depth;
    caps.max_send_sge = a.max_send_sge;
    caps.max_recv_sge = a.max_recv_sge;
    caps.max_inline = a.max_inline;
    caps.sq_wqe_size = a.sq_wqe_size;
    caps.rq_wqe_size = a.rq_wqe_size;
    caps.srq_handle = a.srq_handle;
    caps.polled_doorbell = c.polled_doorbell;
    caps.private_send_ring = !s->send_cq;
    caps.private_recv_ring = !s->recv_cq;
    caps.single_threaded = c.single_threaded;
    if (!detail::is_pow2(a.sq_depth) || (!s->srq && !detail::is_pow2(a.rq_depth)) ||
        !detail::is_pow2(a.sq_ring_depth) || a.sq_ring_depth > a.sq_depth ||
        (!s->srq && (!detail::is_pow2(a.rq_ring_depth) || a.rq_ring_depth > a.rq_depth)) ||
        sizeof(viaduct_doorbell) > a.db_size ||
        std::uint64_t{a.sq_ring_depth} * a.sq_wqe_size > a.sq_size ||
        std::uint64_t{a.rq_ring_depth} * a.rq_wqe_size > a.rq_size ||
        (caps.private_send_ring && !ring_fits(a.scq_entries, a.scq_size)) ||
        (caps.private_recv_ring && !ring_fits(a.rcq_entries, a.rcq_size)))
        throw Error(EPROTO,
                    "the kernel described " + qp_name(a.handle) + "'s rings inconsistently");

    const int fd = s->dev->fd.get();
    const std::string name = qp_name(a.handle);
    s->db_map = detail::Mapping(fd, a.db_key, a.db_size, "doorbell page of " + name);
    s->sq_map = detail::Mapping(fd, a.sq_key, a.sq_size, "send queue of " + name);
    if (!s->srq)
        s->rq_map = detail::Mapping(fd, a.rq_key, a.rq_size, "receive queue of " + name);
    s->db = reinterpret_cast<viaduct_doorbell *>(s->db_map.data());
    s->sq.ring = detail::WorkRing(s->sq_map.data(), a.sq_ring_depth, a.sq_wqe_size,
                                  &s->db->sq_producer, &s->db->sq_consumer);
    s->sq.limits = detail::WqeLimits{a.sq_wqe_size, a.max_send_sge, a.max_inline};
    if (!s->srq) {
        s->rq.ring = detail::WorkRing(s->rq_map.data(), a.rq_ring_depth, a.rq_wqe_size,
                                      &s->db->rq_producer, &s->db->rq_consumer);
        s->rq.limits = detail::WqeLimits{a.rq_wqe_size, a.max_recv_sge, 0};
    }
    if (caps.private_send_ring) {
        s->scq_map = detail::Mapping(fd, a.scq_key, a.scq_size, "send completions of " + name);
        s->scq.ring = detail::CompletionRing(s->scq_map.data(), a.scq_entries);
    }
    if (caps.private_recv_ring) {
        s->rcq_map = detail::Mapping(fd, a.rcq_key, a.rcq_size, "receive completions of " + name);
        s->rcq.ring = detail::CompletionRing(s->rcq_map.data(), a.rcq_entries);
    }
    state_ = std::move(s);
}

std::uint32_t QueuePair::handle() const {
    return detail::checked(state_, "QueuePair").handle;
}

std::uint32_t QueuePair::qpn() const {
    return detail::checked(state_, "QueuePair").caps.qpn;
}

const QpCaps &QueuePair::caps() const {
    return detail::checked(state_, "QueuePair").caps;
}

void QueuePair::modify(QpState state) {
    QpModify m;
    m.state = state;
    modify(m);
}

void QueuePair::modify(const QpModify &m) {
    State &s = detail::checked(state_, "QueuePair");
    viaduct_modify_qp r{};
    r.handle = s.handle;
    if (m.state) {
        r.mask |= VIADUCT_QP_ATTR_STATE;
        r.state = static_cast<std::uint32_t>(*m.state);
    }
    if (m.access) {
        r.mask |= VIADUCT_QP_ATTR_ACCESS;
        r.access = *m.access;
    }
    if (m.ord) {
        r.mask |= VIADUCT_QP_ATTR_ORD;
        r.ord = *m.ord;
    }
    if (m.ird) {
        r.mask |= VIADUCT_QP_ATTR_IRD;
        r.ird = *m.ird;
    }
    if (r.mask == 0)
        return;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_MODIFY_QP, &r)) {
        if (err == EINVAL) {
            std::string to = m.state ? state_name(r.state) : "its own state";
            throw Error(err, "cannot modify " + qp_name(s.handle) + " to " + to +
                                 ": the transition or a value is not allowed "
                                 "(see Documentation/qp.rst)");
        }
        throw detail::call_error(err, "modify " + qp_name(s.handle));
    }
}

QpAttributes QueuePair::query() const {
    State &s = detail::checked(state_, "QueuePair");
    viaduct_query_qp q{};
    q.handle = s.handle;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_QUERY_QP, &q))
        throw detail::call_error(err, "query " + qp_name(s.handle));
    QpAttributes a;
    a.state = static_cast<QpState>(q.state);
    a.access = q.access;
    a.ord = q.ord;
    a.ird = q.ird;
    a.qpn = q.qpn;
    a.sq_depth = q.sq_depth;
    a.rq_depth = q.rq_depth;
    a.sq_outstanding = q.sq_outstanding;
    a.rq_outstanding = q.rq_outstanding;
    a.terminate = q.terminate;
    return a;
}

void QueuePair::post_send(const SendWr &wr) {
    post_send(std::span<const SendWr>(&wr, 1));
}

void QueuePair::post_send(std::span<const SendWr> wrs) {
    State &s = detail::checked(state_, "QueuePair");
    post(s, s.sq, wrs, VIADUCT_DOORBELL_SQ, "send", detail::encode_send, true);
}

void QueuePair::post_recv(const RecvWr &wr) {
    post_recv(std::span<const RecvWr>(&wr, 1));
}

void QueuePair::post_recv(std::span<const RecvWr> wrs) {
    State &s = detail::checked(state_, "QueuePair");
    check_own_rq(s);
    post(s, s.rq, wrs, VIADUCT_DOORBELL_RQ, "receive", detail::encode_recv, true);
}

bool QueuePair::try_post_send(const SendWr &wr) {
    return try_post_send(std::span<const SendWr>(&wr, 1));
}

bool QueuePair::try_post_send(std::span<const SendWr> wrs) {
    State &s = detail::checked(state_, "QueuePair");
    return post(s, s.sq, wrs, VIADUCT_DOORBELL_SQ, "send", detail::encode_send, false);
}

bool QueuePair::try_post_recv(const RecvWr &wr) {
    return try_post_recv(std::span<const RecvWr>(&wr, 1));
}

bool QueuePair::try_post_recv(std::span<const RecvWr> wrs) {
    State &s = detail::checked(state_, "QueuePair");
    check_own_rq(s);
    return post(s, s.rq, wrs, VIADUCT_DOORBELL_RQ, "receive", detail::encode_recv, false);
}

std::uint32_t QueuePair::send_queue_room() const {
    State &s = detail::checked(state_, "QueuePair");
    auto guard = detail::lock_unless(s.sq.lock, s.caps.single_threaded);
    return s.sq.ring.room();
}

std::uint32_t QueuePair::recv_queue_room() const {
    State &s = detail::checked(state_, "QueuePair");
    check_own_rq(s);
    auto guard = detail::lock_unless(s.rq.lock, s.caps.single_threaded);
    return s.rq.ring.room();
}

std::size_t QueuePair::poll_send(std::span<Completion> out) {
    State &s = detail::checked(state_, "QueuePair");
    return poll_private(s, s.scq, s.caps.private_send_ring, out, "send");
}

std::size_t QueuePair::poll_recv(std::span<Completion> out) {
    State &s = detail::checked(state_, "QueuePair");
    return poll_private(s, s.rcq, s.caps.private_recv_ring, out, "receive");
}

std::uint64_t QueuePair::doorbell_calls() const {
    return detail::checked(state_, "QueuePair").doorbells.load(std::memory_order_relaxed);
}

} // namespace viaduct
