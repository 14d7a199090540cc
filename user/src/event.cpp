// SPDX-License-Identifier: GPL-2.0
// Reading event records: the asynchronous events of a context and the
// completion channels' CQ events. Both descriptors are non-blocking and
// waited on with poll(), so a timeout is honoured and a record another
// thread took first costs a retry, not a hang.
#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "objects.hpp"
#include "syscall.hpp"

namespace viaduct {

namespace detail {

namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left before @deadline, rounded up so that a wait does not
// end early; -1 for no deadline.
int poll_timeout(const std::optional<Clock::time_point> &deadline) {
    if (!deadline)
        return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
    if (left <= 0)
        return 0;
    return left > INT32_MAX ? INT32_MAX : static_cast<int>(left);
}

} // namespace

bool read_record(int fd, void *buf, std::size_t size, std::chrono::milliseconds timeout,
                 const std::string &what) {
    std::optional<Clock::time_point> deadline;
    if (timeout.count() >= 0)
        deadline = Clock::now() + timeout;
    for (;;) {
        ssize_t n = ::read(fd, buf, size);
        if (n == static_cast<ssize_t>(size))
            return true;
        if (n >= 0)
            throw Error(EIO, "short read of " + what + ": " + std::to_string(n) + " of " +
                                 std::to_string(size) + " bytes");
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            throw call_error(errno, "read " + what);

        int ms = poll_timeout(deadline);
        if (ms == 0)
            return false;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, ms) < 0 && errno != EINTR)
            throw call_error(errno, "wait for " + what);
        // Readable, timed out or interrupted: the read above tells which,
        // and the deadline is recomputed.
    }
}

} // namespace detail

AsyncEvent to_event(const viaduct_async_event &ev) {
    AsyncEvent e;
    e.type = static_cast<AsyncEventType>(ev.type);
    e.handle = ev.handle;
    e.user_data = ev.user_data;
    e.detail = ev.detail;
    return e;
}

std::optional<AsyncEvent> Device::read_event(std::chrono::milliseconds timeout) const {
    const State &s = checked();
    viaduct_async_event ev{};
    if (!detail::read_record(s.fd.get(), &ev, sizeof(ev), timeout,
                             "asynchronous events of " + s.attr.name))
        return std::nullopt;
    return to_event(ev);
}

std::optional<CqEvent> CompletionChannel::State::take_pending(std::uint32_t cq_handle) {
    std::lock_guard<std::mutex> guard(lock);
    for (auto it = pending.begin(); it != pending.end(); ++it) {
        if (cq_handle == 0 || it->cq_handle == cq_handle) {
            CqEvent ev = *it;
            pending.erase(it);
            return ev;
        }
    }
    return std::nullopt;
}

CompletionChannel::CompletionChannel(const Device &dev) {
    auto s = std::make_shared<State>();
    s->dev = dev.state();
    viaduct_comp_channel c{};
    if (int err = detail::do_ioctl(s->dev->fd.get(), VIADUCT_IOCTL_CREATE_COMP_CHANNEL, &c))
        throw detail::call_error(err, "create a completion channel on " + s->dev->attr.name);
    s->fd.reset(c.fd);
    int flags = ::fcntl(c.fd, F_GETFL);
    if (flags < 0 || ::fcntl(c.fd, F_SETFL, flags | O_NONBLOCK) < 0)
        throw detail::call_error(errno, "make the completion channel non-blocking");
    state_ = std::move(s);
}

std::shared_ptr<CompletionChannel::State> CompletionChannel::state() const {
    detail::checked(state_, "CompletionChannel");
    return state_;
}

int CompletionChannel::fd() const {
    return state()->fd.get();
}

std::optional<CqEvent> CompletionChannel::wait(std::chrono::milliseconds timeout) const {
    State &s = *state();
    if (auto ev = s.take_pending(0))
        return ev;
    viaduct_cq_event rec{};
    if (!detail::read_record(s.fd.get(), &rec, sizeof(rec), timeout, "completion channel"))
        return std::nullopt;
    return CqEvent{rec.cq_handle, rec.user_data};
}

} // namespace viaduct
