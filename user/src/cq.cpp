// SPDX-License-Identifier: GPL-2.0
// Completion queues: creation, polling the ring, arming and waiting on the
// channel, resizing.
#include <cerrno>

#include "objects.hpp"
#include "syscall.hpp"

namespace viaduct {

namespace {

std::string cq_name(std::uint32_t handle) {
    return "CQ " + std::to_string(handle);
}

Error overflow_error(std::uint32_t handle) {
    return Error(EIO, "completion queue " + std::to_string(handle) +
                          " overflowed: completions were lost and it is in error for good; "
                          "destroy it and size the new one for every WR that can complete "
                          "into it");
}

// The kernel's description of a ring must describe one.
void check_ring(std::uint32_t entries, std::uint64_t size, std::uint32_t handle) {
    if (!detail::is_pow2(entries) ||
        VIADUCT_RING_HDR_SIZE + std::uint64_t{entries} * sizeof(viaduct_cqe) > size)
        throw Error(EPROTO, "the kernel described the ring of " + cq_name(handle) +
                                " inconsistently (" + std::to_string(entries) + " entries in " +
                                std::to_string(size) + " bytes)");
}

} // namespace

Completion to_completion(const viaduct_cqe &c) noexcept {
    Completion r;
    r.wr_id = c.wr_id;
    r.qp_handle = c.qp_handle;
    r.byte_len = c.byte_len;
    r.opcode = static_cast<WcOpcode>(c.opcode);
    r.status = static_cast<WcStatus>(c.status);
    r.flags = c.flags;
    r.imm_data = c.imm_data;
    r.vendor_err = c.vendor_err;
    r.invalidated_stag = c.invalidated_stag;
    return r;
}

const char *to_string(WcStatus status) noexcept {
    switch (status) {
    case WcStatus::Success:
        return "success";
    case WcStatus::Flushed:
        return "flushed";
    case WcStatus::LocalLengthError:
        return "local length error";
    case WcStatus::LocalQpOperationError:
        return "local QP operation error";
    case WcStatus::LocalProtectionError:
        return "local protection error";
    case WcStatus::RemoteAccessError:
        return "remote access error";
    case WcStatus::RemoteOperationError:
        return "remote operation error";
    case WcStatus::RemoteInvalidRequest:
        return "remote invalid request";
    case WcStatus::TransportError:
        return "transport error";
    case WcStatus::RemoteTerminated:
        return "remote terminated";
    case WcStatus::GeneralError:
        return "general error";
    }
    return "unknown status";
}

detail::CompletionRing &CompletionQueue::State::current_ring() {
    if (unmapped) {
        check_ring(unmapped->entries, unmapped->size, handle);
        // Mapped into a local first: a failure leaves the state as it was.
        detail::Mapping m(dev->fd.get(), unmapped->key, static_cast<std::size_t>(unmapped->size),
                          "resized ring of " + cq_name(handle) +
                              " (the CQ cannot be polled until it is mapped)");
        ring = detail::CompletionRing(m.data(), unmapped->entries);
        map = std::move(m);
        unmapped.reset();
    }
    return ring;
}

CompletionQueue::State::~State() {
    detail::destroy_handle(dev.get(), VIADUCT_IOCTL_DESTROY_CQ, handle);
}

CompletionQueue::CompletionQueue(const Device &dev, std::uint32_t entries,
                                 const CompletionChannel *channel, std::uint64_t user_data)
    : CompletionQueue(dev, CqConfig{entries, channel, user_data, false}) {}

CompletionQueue::CompletionQueue(const Device &dev, const CqConfig &config) {
    const std::uint32_t entries = config.entries;
    const std::uint64_t user_data = config.user_data;
    auto s = std::make_shared<State>();
    s->dev = dev.state();
    if (config.channel)
        s->channel = config.channel->state();
    s->single_threaded = config.single_threaded;
    const std::uint32_t max_cqe = s->dev->attr.limits.max_cqe;
    if (entries == 0 || entries > max_cqe)
        throw Error(EINVAL, "cannot create a CQ of " + std::to_string(entries) + " entries: 1 to " +
                                std::to_string(max_cqe) + " on this device");
    viaduct_create_cq c{};
    c.user_data = user_data;
    c.entries = entries;
    c.channel_fd = s->channel ? s->channel->fd.get() : -1;
    if (int err = detail::do_ioctl(s->dev->fd.get(), VIADUCT_IOCTL_CREATE_CQ, &c)) {
        if (err == EINVAL)
            throw Error(err, "cannot create a CQ of " + std::to_string(entries) +
                                 " entries: 1 to " + std::to_string(s->dev->attr.limits.max_cqe));
        throw detail::call_error(err, "create a CQ of " + std::to_string(entries) + " entries");
    }
    s->handle = c.handle;
    s->user_data = user_data;
    check_ring(c.entries, c.mmap_size, c.handle);
    s->map = detail::Mapping(s->dev->fd.get(), c.mmap_key, static_cast<std::size_t>(c.mmap_size),
                             "ring of " + cq_name(c.handle));
    s->ring = detail::CompletionRing(s->map.data(), c.entries);
    state_ = std::move(s);
}

std::shared_ptr<CompletionQueue::State> CompletionQueue::state() const {
    detail::checked(state_, "CompletionQueue");
    return state_;
}

std::uint32_t CompletionQueue::handle() const {
    return state()->handle;
}

std::uint32_t CompletionQueue::entries() const {
    State &s = detail::checked(state_, "CompletionQueue");
    auto guard = s.guard();
    return s.unmapped ? s.unmapped->entries : s.ring.entries();
}

namespace {

template <class T> std::size_t poll_locked(CompletionQueue::State &s, std::span<T> out) {
    auto guard = s.guard();
    detail::CompletionRing &ring = s.current_ring();
    std::size_t n = ring.poll(out);
    // Every CQE before the overflow is handed out first.
    if (n == 0 && !out.empty() && ring.overflowed() && ring.empty())
        throw overflow_error(s.handle);
    return n;
}

} // namespace

std::size_t CompletionQueue::poll(std::span<Completion> out) {
    return poll_locked(detail::checked(state_, "CompletionQueue"), out);
}

std::size_t CompletionQueue::poll(std::span<viaduct_cqe> out) {
    return poll_locked(detail::checked(state_, "CompletionQueue"), out);
}

bool CompletionQueue::overflowed() const {
    State &s = detail::checked(state_, "CompletionQueue");
    auto guard = s.guard();
    return s.current_ring().overflowed();
}

void CompletionQueue::arm(bool solicited_only) {
    State &s = detail::checked(state_, "CompletionQueue");
    if (!s.channel)
        throw Error(EINVAL, cq_name(s.handle) +
                                " has no completion channel: an armed event would go nowhere");
    viaduct_arm_cq a{};
    a.handle = s.handle;
    a.flags = solicited_only ? VIADUCT_ARM_SOLICITED : VIADUCT_ARM_NEXT;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_ARM_CQ, &a)) {
        if (err == EIO)
            throw overflow_error(s.handle);
        throw detail::call_error(err, "arm " + cq_name(s.handle));
    }
}

void CompletionQueue::arm_threshold(std::uint32_t count, bool solicited) {
    State &s = detail::checked(state_, "CompletionQueue");
    if (!s.channel)
        throw Error(EINVAL, cq_name(s.handle) +
                                " has no completion channel: an armed event would go nowhere");
    if (!(s.dev->attr.caps & VIADUCT_DEV_CAP_CQ_THRESHOLD))
        throw Error(EOPNOTSUPP, "this viaduct module cannot arm a CQ for a count of completions "
                                "(VIADUCT_DEV_CAP_CQ_THRESHOLD is clear)");
    const std::uint32_t max = entries();
    if (count == 0 || count > max)
        throw Error(EINVAL, "cannot arm " + cq_name(s.handle) + " for " + std::to_string(count) +
                                " completions: 1 to its " + std::to_string(max) + " entries");
    viaduct_arm_cq a{};
    a.handle = s.handle;
    a.flags = VIADUCT_ARM_NEXT | (solicited ? VIADUCT_ARM_SOLICITED : 0);
    a.threshold = count;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_ARM_CQ, &a)) {
        if (err == EIO)
            throw overflow_error(s.handle);
        throw detail::call_error(err, "arm " + cq_name(s.handle) + " for " + std::to_string(count) +
                                          " completions");
    }
}

std::uint32_t CompletionQueue::unread() const {
    State &s = detail::checked(state_, "CompletionQueue");
    auto guard = s.guard();
    return s.current_ring().unread();
}

namespace {

// Reads channel records until one for @s's CQ; records for other CQs are
// kept for CompletionChannel::wait() or their own CQ's waiter. false on
// timeout.
bool read_own_event(CompletionQueue::State &s, std::chrono::steady_clock::time_point deadline,
                    bool forever) {
    using Clock = std::chrono::steady_clock;
    for (;;) {
        if (s.channel->take_pending(s.handle))
            return true;
        std::chrono::milliseconds left{-1};
        if (!forever) {
            left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() < 0)
                left = std::chrono::milliseconds{0};
        }
        viaduct_cq_event rec{};
        if (!detail::read_record(s.channel->fd.get(), &rec, sizeof(rec), left,
                                 "completion channel"))
            return false;
        if (rec.cq_handle == s.handle)
            return true;
        std::lock_guard<std::mutex> guard(s.channel->lock);
        s.channel->pending.push_back(CqEvent{rec.cq_handle, rec.user_data});
    }
}

} // namespace

bool CompletionQueue::wait_unread(std::uint32_t count, std::chrono::milliseconds timeout) {
    using Clock = std::chrono::steady_clock;
    State &s = detail::checked(state_, "CompletionQueue");
    if (!s.channel)
        throw Error(EINVAL, cq_name(s.handle) + " has no completion channel to wait on");
    const bool forever = timeout.count() < 0;
    const Clock::time_point deadline = forever ? Clock::time_point::max() : Clock::now() + timeout;
    auto ready = [&s, count] {
        auto guard = s.guard();
        detail::CompletionRing &ring = s.current_ring();
        return ring.unread() >= count || ring.overflowed() || ring.unread_error();
    };

    for (;;) {
        if (ready())
            return true;
        // The kernel counts the CQEs already in the ring: if enough arrived
        // since ready(), the arm fires at once and the read below returns.
        arm_threshold(count);
        if (!read_own_event(s, deadline, forever))
            return ready(); // timed out: one last look
        // An event from an earlier arm may come too soon: look and re-arm.
    }
}

std::size_t CompletionQueue::wait(std::span<Completion> out, std::chrono::milliseconds timeout) {
    using Clock = std::chrono::steady_clock;
    State &s = detail::checked(state_, "CompletionQueue");
    if (!s.channel)
        throw Error(EINVAL, cq_name(s.handle) + " has no completion channel to wait on");
    if (out.empty())
        throw Error(EINVAL,
                    "waiting on " + cq_name(s.handle) + " needs room for at least one completion");
    const bool forever = timeout.count() < 0;
    const Clock::time_point deadline = forever ? Clock::time_point::max() : Clock::now() + timeout;

    for (;;) {
        if (std::size_t n = poll(out))
            return n;
        arm(false);
        // A CQE pushed before the arm took effect did not fire it, but its
        // producer index was released before ARM_CQ returned: seen here.
        if (std::size_t n = poll(out))
            return n;

        if (!read_own_event(s, deadline, forever))
            return poll(out); // timed out: one last look
        // An event for this CQ: its CQE is visible now. An event from an
        // earlier arm may find the ring empty; then arm and sleep again.
    }
}

std::uint32_t CompletionQueue::resize(std::uint32_t entries) {
    State &s = detail::checked(state_, "CompletionQueue");
    auto guard = s.guard();
    // CQEs already taken must not move to the new ring.
    s.current_ring().publish_consumer();
    viaduct_resize_cq r{};
    r.handle = s.handle;
    r.entries = entries;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_RESIZE_CQ, &r)) {
        if (err == EIO)
            throw overflow_error(s.handle);
        if (err == EINVAL)
            throw Error(err, "cannot resize " + cq_name(s.handle) + " to " +
                                 std::to_string(entries) +
                                 " entries: out of range, or fewer than it holds");
        throw detail::call_error(err, "resize " + cq_name(s.handle));
    }
    // The kernel writes only the new ring from here on: the old one must
    // not be polled again, whatever happens next.
    s.ring = detail::CompletionRing();
    s.map = detail::Mapping();
    s.unmapped = State::NewRing{r.mmap_key, r.mmap_size, r.entries};
    s.current_ring();
    return r.entries;
}

} // namespace viaduct
