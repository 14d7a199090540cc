// SPDX-License-Identifier: GPL-2.0
//
// Event Dispatchers: simple (one event stream) and aggregate, thresholds
// and notification, waiting, file-descriptor mode, overflow.
//
// Every EVD waits the same way: under its lock it takes what its sources
// have (a DTO SEVD polls its CQ), checks the notification criteria, and if
// they are not met it resets its readiness (reads its eventfd, arms its
// CQ), looks once more, and sleeps in poll() on its wait descriptor, an
// epoll descriptor over the eventfd and the CQ's completion channel (an
// AEVD's over its members' wait descriptors). The same descriptor is the
// one IT_EVD_CREATE_FD gives out, so it is backed by the kernel's own
// readiness of those descriptors.
//
// Thresholds: a waiter that needs more than one completion (threshold N
// above 1, or IT_THRESHOLD_DISABLE: notification only) arms its CQ with the
// core's moderated arm (arm_threshold, VIADUCT_DEV_CAP_CQ_THRESHOLD) for the
// N - queued completions still missing, solicited and unsuccessful ones
// firing it at once: one wakeup for N completions. The kernel cannot see
// IT_NOTIFY_FLAG, which must wake a waiter below the threshold, so while a
// WR with that flag is outstanding in the IA (Ia::notify_pending) the
// waiter arms for the next completion and checks at each wakeup, and a post
// with the flag makes a waiter asleep on a moderated arm look again.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dto.hpp"
#include "internal.hpp"

namespace itapi {

namespace {

constexpr it_event_type_t streams[] = {
    IT_DTO_EVENT_STREAM,       IT_CM_REQ_EVENT_STREAM,      IT_CM_MSG_EVENT_STREAM,
    IT_ASYNC_AFF_EVENT_STREAM, IT_ASYNC_UNAFF_EVENT_STREAM, IT_SOFTWARE_EVENT_STREAM,
};

bool is_dto(const Evd &e) noexcept {
    return e.stream == IT_DTO_EVENT_STREAM;
}

void signal_fd(int fd) noexcept {
    std::uint64_t one = 1;
    if (::write(fd, &one, sizeof(one)) < 0) {
        // EAGAIN: the counter is saturated, and so readable: nothing lost
    }
}

void drain_fd(int fd) noexcept {
    std::uint64_t v;
    if (::read(fd, &v, sizeof(v)) < 0) {
        // EAGAIN: it was not readable
    }
}

// An EVD's eventfd with a note of whether it may be readable, so that
// resetting it costs a system call only then. Written before the note is
// set, the note cleared before it is read: the note may say readable when
// it is not (a read for nothing), never the other way round.
void signal_evd(Evd &e) noexcept {
    signal_fd(e.event_fd);
    e.event_signalled.store(true, std::memory_order_release);
}

[[gnu::always_inline]] inline void drain_evd(Evd &e) noexcept {
    // a plain load first: the usual answer, without an atomic write
    if (!e.event_signalled.load(std::memory_order_acquire) ||
        !e.event_signalled.exchange(false, std::memory_order_acq_rel))
        return;
    drain_fd(e.event_fd);
}

} // namespace

// Queues @ev at the tail (the caller checked the room).
void evd_push(Evd &e, const it_event_t &ev, bool notify) noexcept {
    evd_tail(e) = ev;
    evd_commit(e, notify);
}

namespace {

// The stream's overflow rule (B.3.5): whether an overflow raises
// SEVD_ENQUEUE_FAILURE, and whether that re-arms once room frees up.
struct OverflowRule {
    bool notify;
    bool auto_reset;
};

OverflowRule overflow_rule(const Evd &e) noexcept {
    if ((e.flags & IT_EVD_OVERFLOW_DEFAULT) == 0)
        return {(e.flags & IT_EVD_OVERFLOW_NOTIFY) != 0,
                (e.flags & IT_EVD_OVERFLOW_AUTO_RESET) != 0};
    switch (e.stream) {
    case IT_DTO_EVENT_STREAM:
        return {true, false};
    case IT_CM_MSG_EVENT_STREAM:
    case IT_ASYNC_AFF_EVENT_STREAM:
        return {true, true};
    default: // CM_REQ, UNAFF (never detected), SOFTWARE (never overflows)
        return {false, false};
    }
}

// Takes the oldest event into @out: a DTO SEVD's events are DTO completion
// events, and only that member of the union is copied.
void pop(Evd &e, it_event_t &out) noexcept {
    Evd::Entry &en = e.queue[e.head];
    if (is_dto(e))
        std::memcpy(&out, &en.ev, sizeof(it_dto_cmpl_event_t));
    else
        out = en.ev;
    if (++e.head == e.queue.size())
        e.head = 0;
    e.count--;
    if (en.notify)
        e.notify_count--;
    // room again: auto-reset overflow notification (non-DTO streams)
    if (e.overflowed && !is_dto(e) && overflow_rule(e).auto_reset) {
        e.overflowed = false;
        e.overflow_armed = true;
    }
}

bool criteria(const Evd &e) noexcept {
    return e.notify_count > 0 || (e.threshold != IT_THRESHOLD_DISABLE && e.count >= e.threshold);
}

// Raises SEVD_ENQUEUE_FAILURE for @e on the AFF SEVD (the UNAFF one for
// the AFF SEVD itself). Called without e.lock.
void raise_overflow(Ia &ia, Evd &e) {
    std::lock_guard guard(ia.async_lock);
    it_event_t ev{};
    if (e.stream == IT_ASYNC_AFF_EVENT_STREAM) {
        if (ia.unaff_evd == nullptr)
            return;
        ev.unaff_async.event_number = IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE;
        ev.unaff_async.ia = handle_of<it_ia_handle_t>(&ia);
        evd_enqueue(*ia.unaff_evd, ev);
        return;
    }
    if (ia.aff_evd == nullptr || ia.aff_evd == &e)
        return;
    ev.aff_async.event_number = IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE;
    ev.aff_async.cause.sevd = handle_of<it_evd_handle_t>(&e);
    evd_enqueue(*ia.aff_evd, ev);
}

// May the consumer wait on @e? (it_evd_wait's INVALID_EVD_STATE rules)
it_status_t may_wait(const Evd &e) noexcept {
    if (e.aevd != nullptr && (e.aevd->flags & IT_EVD_DEQUEUE_NOTIFICATIONS) == 0)
        return IT_ERR_INVALID_EVD_STATE;
    if ((e.aevd != nullptr || e.user_fd >= 0) && e.enabled)
        return IT_ERR_INVALID_EVD_STATE;
    return IT_SUCCESS;
}

it_status_t may_dequeue(const Evd &e) noexcept {
    if (e.aevd != nullptr && (e.aevd->flags & IT_EVD_DEQUEUE_NOTIFICATIONS) == 0)
        return IT_ERR_INVALID_EVD_STATE;
    return IT_SUCCESS;
}

// Reads the completion channel's events of a DTO SEVD: an event comes only
// for an arm, so no system call while unarmed. Caller holds e.lock.
void drain_channel(Evd &e) {
    while (e.cq_armed && e.channel->wait(std::chrono::milliseconds(0)))
        e.cq_armed = false;
}

// Takes what @e's sources have: for a DTO SEVD the channel's events and the
// CQ's completions. Caller holds e.lock.
void refresh(Evd &e) {
    if (!is_dto(e) || !e.cq)
        return;
    drain_channel(e);
    std::size_t before = e.count;
    evd_fill(e);
    // a waiter asleep on a moderated arm counts on the completions left in
    // the ring: taking some makes it arm again for fewer
    if (e.count != before && e.moderated_sleeper.load())
        signal_evd(e);
    // one that notifies an AEVD or a descriptor stays armed: the next
    // completion makes its wait descriptor readable
    if ((e.aevd != nullptr || e.user_fd >= 0) && (!e.cq_armed || e.cq_moderated) && !e.cq_broken) {
        e.cq->arm(false);
        e.cq_armed = true;
        e.cq_moderated = false;
        evd_fill(e);
    }
}

// May a waiter on @e arm its CQ moderately? Only a plain SEVD (an AEVD or a
// descriptor is told at each completion) waiting for more than one, with
// no other waiter (IT_THRESHOLD_DISABLE allows several).
bool may_moderate(const Evd &e) noexcept {
    return is_dto(e) && e.cq && !e.cq_broken && e.aevd == nullptr && e.user_fd < 0 &&
           e.waiters == 1 && e.threshold != 1 &&
           (e.ia->attr.caps & VIADUCT_DEV_CAP_CQ_THRESHOLD) != 0;
}

// The waiter is awake again: no longer a moderated sleeper.
void woken(Evd &e) noexcept {
    if (!e.moderated_sleeper.exchange(false))
        return;
    Ia &ia = *e.ia;
    ia.threshold_sleepers.fetch_sub(1);
    std::lock_guard guard(ia.sleepers_lock);
    std::erase(ia.sleepers, &e);
}

// A waiter's moderated arm for what it still misses; false if a WR with
// IT_NOTIFY_FLAG is outstanding (then it arms for the next completion).
// No poll after it: the kernel counts what is in the ring at the arm, and
// taking it would leave the arm counting from nothing. Caller holds e.lock,
// drained e.event_fd, found the criteria unmet.
bool arm_moderated(Evd &e) {
    Ia &ia = *e.ia;
    {
        std::lock_guard guard(ia.sleepers_lock);
        ia.sleepers.push_back(&e);
    }
    e.moderated_sleeper.store(true);
    ia.threshold_sleepers.fetch_add(1);
    // after the sleeper is visible: a post with the flag from now on
    // signals e.event_fd (notify_posted)
    if (ia.notify_pending.load() != 0) {
        woken(e);
        return false;
    }
    try {
        if (e.threshold == IT_THRESHOLD_DISABLE) {
            // notification only: a solicited or unsuccessful completion;
            // one in the ring before the arm is found by the poll below
            e.cq->arm(true);
            e.cq_armed = true;
            e.cq_moderated = true;
            evd_fill(e);
        } else {
            std::size_t need = std::min<std::size_t>(e.threshold - e.count, e.cq->entries());
            e.cq->arm_threshold(static_cast<std::uint32_t>(need), true);
            e.cq_armed = true;
            e.cq_moderated = true;
        }
    } catch (...) {
        woken(e);
        throw;
    }
    return true;
}

// Before sleeping: readiness reset, CQ armed (moderately for a @waiter
// that may). Returns true if it armed moderately: then the caller must not
// poll the CQ before it sleeps. Caller holds e.lock.
bool prepare_sleep(Evd &e, bool waiter = false) {
    drain_evd(e);
    if (waiter && may_moderate(e) && arm_moderated(e))
        return true;
    if (is_dto(e) && e.cq && !e.cq_broken && (!e.cq_armed || e.cq_moderated)) {
        e.cq->arm(false);
        e.cq_armed = true;
        e.cq_moderated = false;
        evd_fill(e); // what raced with the arm
    }
    return false;
}

// Is @e's wait descriptor looked at: by the consumer (fd mode), by an
// AEVD, or by a waiter asleep on it? A waiter to come resets it first.
bool watched(const Evd &e) noexcept {
    return e.user_fd >= 0 || e.aevd != nullptr || e.waiters > 0;
}

// After an event was taken: the wait descriptor stays readable while events
// are queued, and is not once there are none. Caller holds e.lock.
[[gnu::always_inline]] inline void settle(Evd &e) {
    if (e.count == 0 && is_dto(e) && watched(e))
        evd_fill(e); // readable while the ring has more
    if (!watched(e)) {
        // nobody looks at the descriptor: reset it only if it may be set
        if (e.count == 0)
            drain_evd(e);
        return;
    }
    if (e.count > 0)
        signal_evd(e);
    else
        drain_evd(e);
}

// An SEVD's next event for a waiter or dequeuer, if any. @need_criteria: a
// waiter's (the notification criteria must hold). Caller holds e.lock.
bool take(Evd &e, bool need_criteria, it_event_t &out, std::size_t *nmore) {
    refresh(e);
    if (e.count == 0 || (need_criteria && !criteria(e)))
        return false;
    pop(e, out);
    settle(e);
    if (nmore != nullptr)
        *nmore = e.count;
    return true;
}

// An AEVD's next event: the members in turn from where the last look
// stopped (no SEVD starves the others). Caller holds a.lock.
bool take_aggregate(Evd &a, bool need_criteria, it_event_t &out) {
    std::size_t n = a.members.size();
    for (std::size_t i = 0; i < n; i++) {
        Evd &m = *a.members[(a.next_member + i) % n];
        std::lock_guard guard(m.lock);
        if (!m.enabled && (need_criteria || (a.flags & IT_EVD_DEQUEUE_NOTIFICATIONS) != 0))
            continue; // a disabled SEVD does not notify its AEVD
        refresh(m);
        bool ready = m.count > 0 && (!need_criteria || criteria(m));
        if (!ready)
            continue;
        a.next_member = (a.next_member + i + 1) % n;
        if ((a.flags & IT_EVD_DEQUEUE_NOTIFICATIONS) != 0) {
            if (m.aevd_notified)
                continue; // told already; a new event tells again
            m.aevd_notified = true;
            out = {};
            out.aevd_notify.event_number = IT_AEVD_NOTIFICATION_EVENT;
            out.aevd_notify.aevd = handle_of<it_evd_handle_t>(&a);
            out.aevd_notify.sevd = handle_of<it_evd_handle_t>(&m);
            return true;
        }
        pop(m, out);
        settle(m);
        return true;
    }
    return false;
}

void prepare_sleep_aggregate(Evd &a) {
    drain_evd(a);
    for (Evd *m : a.members) {
        std::lock_guard guard(m->lock);
        prepare_sleep(*m);
    }
}

// Sleeps until @fd is readable or @deadline; IT_ERR_INTERRUPT for a signal.
it_status_t sleep_on(int fd, std::optional<std::chrono::steady_clock::time_point> deadline) {
    int ms = -1;
    if (deadline) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline -
                                                                 std::chrono::steady_clock::now());
        if (left.count() <= 0)
            return IT_ERR_TIMEOUT_EXPIRED;
        ms = static_cast<int>(std::min<long long>(left.count(), 1000 * 1000));
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, ms);
    if (r < 0)
        return errno == EINTR ? IT_ERR_INTERRUPT : IT_ERR_RESOURCES;
    return IT_SUCCESS;
}

int add_to_epoll(int epfd, int fd) noexcept {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    return ::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

// A waiter in poll() on the AEVD sees the new member at once (epoll).
void link_member(Evd &a, Evd &m) {
    a.members.push_back(&m);
    m.aevd = &a;
    add_to_epoll(a.wait_fd, m.wait_fd);
    refresh(m); // armed from now on
}

void unlink_member(Evd &a, Evd &m) noexcept {
    std::erase(a.members, &m);
    ::epoll_ctl(a.wait_fd, EPOLL_CTL_DEL, m.wait_fd, nullptr);
    m.aevd = nullptr;
    if (a.next_member >= a.members.size())
        a.next_member = 0;
}

} // namespace

Evd::Evd(Ia *owner, it_event_type_t s, it_evd_flags_t f, std::size_t qsize, std::size_t thr)
    : Object(kind, owner), stream(s), flags(f), queue_size(qsize), threshold(thr) {
    wait_fd = ::epoll_create1(EPOLL_CLOEXEC);
    event_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wait_fd < 0 || event_fd < 0 || add_to_epoll(wait_fd, event_fd) < 0) {
        int err = errno;
        if (wait_fd >= 0)
            ::close(wait_fd);
        if (event_fd >= 0)
            ::close(event_fd);
        throw viaduct::Error(err, "cannot make the descriptors of an EVD");
    }
    if (!aggregate())
        queue.resize(queue_size);
}

Evd::~Evd() {
    if (aevd != nullptr) {
        std::lock_guard guard(aevd->lock);
        unlink_member(*aevd, *this);
    }
    for (Evd *m : members) {
        std::lock_guard guard(m->lock);
        m->aevd = nullptr;
    }
    cq.reset();
    channel.reset();
    ::close(wait_fd);
    ::close(event_fd);
}

bool evd_fill(Evd &evd, it_event_t *direct) {
    return evd_fill_inline(evd, direct);
}

bool evd_enqueue(Evd &evd, const it_event_t &ev) {
    bool raise = false;
    {
        std::lock_guard guard(evd.lock);
        if (evd.count == evd.queue.size()) {
            OverflowRule rule = overflow_rule(evd);
            evd.overflowed = true;
            if (rule.notify && evd.overflow_armed) {
                raise = true;
                evd.overflow_armed = false;
            }
        } else {
            it_event_t e = ev;
            e.any.evd = handle_of<it_evd_handle_t>(&evd);
            evd_push(evd, e, true); // every non-DTO event notifies
            signal_evd(evd);
            return true;
        }
    }
    if (raise && evd.ia != nullptr)
        raise_overflow(*evd.ia, evd);
    return false;
}

void raise_affiliated(Ia &ia, it_event_type_t type, Ep *ep, Srq *srq, Evd *sevd) {
    std::lock_guard guard(ia.async_lock);
    if (ia.aff_evd == nullptr)
        return; // nobody listens: the document drops it
    it_event_t ev{};
    ev.aff_async.event_number = type;
    if (ep != nullptr)
        ev.aff_async.cause.ep = handle_of<it_ep_handle_t>(ep);
    else if (srq != nullptr)
        ev.aff_async.cause.srq = handle_of<it_srq_handle_t>(srq);
    else
        ev.aff_async.cause.sevd = handle_of<it_evd_handle_t>(sevd);
    Evd &aff = *ia.aff_evd;
    bool raise = false;
    {
        std::lock_guard g(aff.lock);
        if (aff.count == aff.queue.size()) {
            OverflowRule rule = overflow_rule(aff);
            aff.overflowed = true;
            raise = rule.notify && aff.overflow_armed;
            if (raise)
                aff.overflow_armed = false;
        } else {
            ev.any.evd = handle_of<it_evd_handle_t>(&aff);
            evd_push(aff, ev, true);
            signal_evd(aff);
        }
    }
    if (raise && ia.unaff_evd != nullptr) {
        it_event_t u{};
        u.unaff_async.event_number = IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE;
        u.unaff_async.ia = handle_of<it_ia_handle_t>(&ia);
        evd_enqueue(*ia.unaff_evd, u);
    }
}

void evd_dto_overflow(Evd &evd) {
    Ia &ia = *evd.ia;
    if (evd.cq_broken)
        return;
    evd.cq_broken = true;
    evd.overflowed = true;
    OverflowRule rule = overflow_rule(evd);
    bool raise = rule.notify && evd.overflow_armed;
    evd.overflow_armed = false;
    {
        std::lock_guard maps(ia.map_lock);
        for (auto &[qp, ep] : ia.eps_by_qp) {
            if (ep->request_evd != &evd && ep->recv_evd != &evd)
                continue;
            {
                std::lock_guard g(ep->lock);
                ep->dto_overflow = true;
            }
            ep_break(*ep);
        }
    }
    signal_evd(evd);
    // a DTO SEVD's lock comes before the AFF SEVD's
    if (raise)
        raise_overflow(ia, evd);
}

void notify_posted(Ia &ia) noexcept {
    if (ia.notify_pending.fetch_add(1) != 0 || ia.threshold_sleepers.load() == 0)
        return; // a sleeper that came after the first one saw it
    std::lock_guard guard(ia.sleepers_lock);
    for (Evd *e : ia.sleepers)
        signal_evd(*e);
}

void notify_unposted(Ia &ia) noexcept {
    ia.notify_pending.fetch_sub(1);
}

void evd_abort_waiters(Evd &evd) noexcept {
    std::unique_lock guard(evd.lock);
    evd.freeing = true;
    signal_evd(evd);
    evd.cv.wait(guard, [&] { return evd.waiters == 0; });
}

} // namespace itapi

using namespace itapi;

extern "C" {

it_status_t it_evd_create(it_ia_handle_t ia_handle, it_event_type_t event_number,
                          it_evd_flags_t evd_flag, size_t sevd_queue_size, size_t sevd_threshold,
                          it_evd_handle_t aevd_handle, it_evd_handle_t *evd_handle, int *fd) {
    Ia *ia = lookup<Ia>(ia_handle);
    if (ia == nullptr)
        return IT_ERR_INVALID_IA;
    if (ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    if (evd_handle == nullptr)
        return IT_ERR_INVALID_HANDLE;
    const int all_flags = IT_EVD_DEQUEUE_NOTIFICATIONS | IT_EVD_CREATE_FD |
                          IT_EVD_OVERFLOW_DEFAULT | IT_EVD_OVERFLOW_NOTIFY |
                          IT_EVD_OVERFLOW_AUTO_RESET;
    if ((evd_flag & ~all_flags) != 0)
        return IT_ERR_INVALID_FLAGS;
    bool aggregate = event_number == IT_AEVD_NOTIFICATION_EVENT_STREAM;
    if (!aggregate &&
        std::find(std::begin(streams), std::end(streams), event_number) == std::end(streams))
        return IT_ERR_INVALID_EVD_TYPE;
    if ((evd_flag & IT_EVD_CREATE_FD) != 0 && fd == nullptr)
        return IT_ERR_INVALID_FLAGS;
    Evd *aevd = nullptr;
    if (aevd_handle != nullptr) {
        if (aggregate)
            return IT_ERR_AEVD_NOT_ALLOWED;
        if ((evd_flag & IT_EVD_CREATE_FD) != 0)
            return IT_ERR_INVALID_FLAGS;
        aevd = lookup<Evd>(aevd_handle);
        if (aevd == nullptr || !aevd->aggregate() || aevd->ia != ia)
            return IT_ERR_INVALID_AEVD;
    }
    if (!aggregate) {
        if (sevd_queue_size == 0)
            return IT_ERR_INVALID_QUEUE_SIZE;
        if (sevd_queue_size > ia->attr.limits.max_cqe && event_number == IT_DTO_EVENT_STREAM)
            return IT_ERR_RESOURCE_QUEUE_SIZE;
        if (sevd_queue_size > (std::size_t{1} << 20))
            return IT_ERR_RESOURCE_QUEUE_SIZE;
        if (sevd_threshold > sevd_queue_size)
            return IT_ERR_INVALID_THRESHOLD;
    } else {
        sevd_queue_size = 0;
        sevd_threshold = 0;
    }
    {
        std::lock_guard guard(ia->async_lock);
        if (event_number == IT_ASYNC_AFF_EVENT_STREAM && ia->aff_evd != nullptr)
            return IT_ERR_ASYNC_AFF_EVD_EXISTS;
        if (event_number == IT_ASYNC_UNAFF_EVENT_STREAM && ia->unaff_evd != nullptr)
            return IT_ERR_ASYNC_UNAFF_EVD_EXISTS;
    }
    Evd *evd;
    try {
        evd = new Evd(ia, event_number, evd_flag, sevd_queue_size, sevd_threshold);
    } catch (const std::exception &e) {
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
    if (!ia->adopt(evd)) {
        delete evd;
        return IT_ERR_RESOURCES;
    }
    try {
        if (event_number == IT_DTO_EVENT_STREAM) {
            // the CQ tells its EVD by its handle (asynchronous CqError)
            evd->channel.emplace(ia->dev);
            viaduct::CqConfig c;
            c.entries = static_cast<std::uint32_t>(sevd_queue_size);
            c.channel = &*evd->channel;
            c.user_data = reinterpret_cast<std::uintptr_t>(evd->handle);
            // polled, armed and resized only under the EVD's lock
            c.single_threaded = true;
            evd->cq.emplace(ia->dev, c);
            evd->queue_size = evd->cq->entries();
            evd->queue.resize(evd->queue_size);
            if (add_to_epoll(evd->wait_fd, evd->channel->fd()) < 0)
                throw viaduct::Error(errno, "cannot watch the completion channel");
            // readable at the first completion (fd mode; an AEVD's member
            // is armed when linked, a waiter arms as it goes to sleep)
            if ((evd_flag & IT_EVD_CREATE_FD) != 0) {
                evd->cq->arm(false);
                evd->cq_armed = true;
            }
        }
        if ((evd_flag & IT_EVD_CREATE_FD) != 0) {
            evd->user_fd = ::fcntl(evd->wait_fd, F_DUPFD_CLOEXEC, 0);
            if (evd->user_fd < 0)
                throw viaduct::Error(errno, "cannot duplicate the EVD's descriptor");
        }
    } catch (const std::exception &e) {
        ia->unlink(evd);
        delete evd;
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
    if (aevd != nullptr) {
        std::lock_guard g1(aevd->lock);
        std::lock_guard g2(evd->lock);
        link_member(*aevd, *evd);
    }
    {
        std::lock_guard guard(ia->async_lock);
        if (event_number == IT_ASYNC_AFF_EVENT_STREAM)
            ia->aff_evd = evd;
        if (event_number == IT_ASYNC_UNAFF_EVENT_STREAM)
            ia->unaff_evd = evd;
    }
    *evd_handle = handle_of<it_evd_handle_t>(evd);
    if (fd != nullptr && evd->user_fd >= 0)
        *fd = evd->user_fd;
    return IT_SUCCESS;
}

it_status_t it_evd_free(it_evd_handle_t evd_handle) {
    Evd *evd = lookup<Evd>(evd_handle);
    if (evd == nullptr)
        return IT_ERR_INVALID_EVD;
    {
        std::lock_guard guard(evd->lock);
        if (evd->sources != 0 || (evd->aggregate() && !evd->members.empty()))
            return IT_ERR_EVD_BUSY;
    }
    Ia *ia = evd->ia;
    {
        std::lock_guard guard(ia->async_lock);
        if (ia->aff_evd == evd)
            ia->aff_evd = nullptr;
        if (ia->unaff_evd == evd)
            ia->unaff_evd = nullptr;
    }
    evd_abort_waiters(*evd);
    ia->unlink(evd);
    if (evd->user_fd >= 0)
        ::close(evd->user_fd);
    delete evd;
    return IT_SUCCESS;
}

it_status_t it_evd_query(it_evd_handle_t evd_handle, it_evd_param_mask_t mask,
                         it_evd_param_t *params) {
    Evd *evd = lookup<Evd>(evd_handle);
    if (evd == nullptr)
        return IT_ERR_INVALID_EVD;
    if ((mask & ~0xfff) != 0)
        return IT_ERR_INVALID_MASK;
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    std::lock_guard guard(evd->lock);
    params->ia = handle_of<it_ia_handle_t>(evd->ia);
    params->event_number = evd->stream;
    params->evd_flag = evd->flags;
    params->sevd_queue_size = evd->queue_size;
    params->sevd_threshold = evd->threshold;
    params->aevd = handle_of<it_evd_handle_t>(evd->aevd);
    params->fd = evd->user_fd;
    params->evd_bound =
        (evd->sources != 0 || evd->aevd != nullptr || !evd->members.empty()) ? IT_TRUE : IT_FALSE;
    params->evd_enabled = evd->enabled ? IT_TRUE : IT_FALSE;
    params->evd_overflowed = evd->overflowed ? IT_TRUE : IT_FALSE;
    params->evd_callback = IT_FALSE;
    return IT_SUCCESS;
}

it_status_t it_evd_modify(it_evd_handle_t evd_handle, it_evd_param_mask_t mask,
                          const it_evd_param_t *params) {
    Evd *evd = lookup<Evd>(evd_handle);
    if (evd == nullptr)
        return IT_ERR_INVALID_EVD;
    const int modifiable = IT_EVD_PARAM_QUEUE_SIZE | IT_EVD_PARAM_THRESHOLD |
                           IT_EVD_PARAM_AEVD_HANDLE | IT_EVD_PARAM_ENABLED |
                           IT_EVD_PARAM_OVERFLOWED;
    if (mask == 0 || (mask & ~modifiable) != 0)
        return IT_ERR_INVALID_MASK;
    if (evd->aggregate() &&
        (mask & (IT_EVD_PARAM_QUEUE_SIZE | IT_EVD_PARAM_THRESHOLD | IT_EVD_PARAM_AEVD_HANDLE)))
        return IT_ERR_INVALID_MASK;
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (catastrophic(*evd))
        return IT_ERR_IA_CATASTROPHE;

    // The AEVD first (its lock is taken before the SEVD's).
    Evd *new_aevd = nullptr;
    if ((mask & IT_EVD_PARAM_AEVD_HANDLE) != 0 && params->aevd != nullptr) {
        new_aevd = lookup<Evd>(params->aevd);
        if (new_aevd == nullptr || !new_aevd->aggregate() || new_aevd->ia != evd->ia)
            return IT_ERR_INVALID_AEVD;
    }
    Evd *old_aevd;
    {
        std::lock_guard guard(evd->lock);
        old_aevd = evd->aevd;
        std::size_t qsize =
            (mask & IT_EVD_PARAM_QUEUE_SIZE) ? params->sevd_queue_size : evd->queue_size;
        std::size_t thr = (mask & IT_EVD_PARAM_THRESHOLD) ? params->sevd_threshold : evd->threshold;
        if ((mask & IT_EVD_PARAM_QUEUE_SIZE) != 0 &&
            (qsize == 0 || qsize < evd->count || qsize < thr))
            return IT_ERR_INVALID_QUEUE_SIZE;
        if ((mask & IT_EVD_PARAM_THRESHOLD) != 0 && thr > qsize)
            return IT_ERR_INVALID_THRESHOLD;
        if ((mask & IT_EVD_PARAM_THRESHOLD) != 0 && thr > 1 && evd->waiters > 1)
            return IT_ERR_WAITER_LIMIT;
        if ((mask & IT_EVD_PARAM_AEVD_HANDLE) != 0 && new_aevd != old_aevd) {
            // only a disabled SEVD without fd, between AEVDs that let go
            if (evd->enabled && !((mask & IT_EVD_PARAM_ENABLED) && !params->evd_enabled))
                return IT_ERR_INVALID_EVD_STATE;
            if (evd->user_fd >= 0)
                return IT_ERR_INVALID_EVD_STATE;
            if (old_aevd != nullptr && (old_aevd->flags & IT_EVD_DEQUEUE_NOTIFICATIONS) == 0)
                return IT_ERR_INVALID_EVD_STATE;
        }
        if ((mask & IT_EVD_PARAM_QUEUE_SIZE) != 0 && qsize != evd->queue_size) {
            try {
                std::size_t actual = qsize;
                if (evd->stream == IT_DTO_EVENT_STREAM) {
                    if (qsize > evd->ia->attr.limits.max_cqe)
                        return IT_ERR_RESOURCE_QUEUE_SIZE;
                    // events already taken stay in the ring: the CQ needs
                    // room for the rest only, but is never made smaller
                    // than what it holds
                    actual = evd->cq->resize(static_cast<std::uint32_t>(qsize));
                }
                std::vector<Evd::Entry> q(std::max(actual, evd->count));
                for (std::size_t i = 0; i < evd->count; i++)
                    q[i] = evd->queue[(evd->head + i) % evd->queue.size()];
                evd->queue = std::move(q);
                evd->head = 0;
                evd->queue_size = evd->queue.size();
                if (evd->overflowed && evd->stream != IT_DTO_EVENT_STREAM &&
                    overflow_rule(*evd).auto_reset) {
                    evd->overflowed = false;
                    evd->overflow_armed = true;
                }
            } catch (const std::exception &e) {
                return status_of_exception(e, IT_ERR_RESOURCE_QUEUE_SIZE);
            }
        }
        if ((mask & IT_EVD_PARAM_THRESHOLD) != 0)
            evd->threshold = thr;
        if ((mask & IT_EVD_PARAM_ENABLED) != 0)
            evd->enabled = params->evd_enabled != IT_FALSE;
        if ((mask & IT_EVD_PARAM_OVERFLOWED) != 0 && params->evd_overflowed == IT_FALSE &&
            !evd->cq_broken) {
            evd->overflowed = false;
            evd->overflow_armed = true;
        }
        if (evd->waiters > 0)
            signal_evd(*evd); // they look again (threshold, enable)
    }
    if ((mask & IT_EVD_PARAM_AEVD_HANDLE) != 0 && new_aevd != old_aevd) {
        if (old_aevd != nullptr) {
            std::lock_guard g1(old_aevd->lock);
            std::lock_guard g2(evd->lock);
            unlink_member(*old_aevd, *evd);
        }
        if (new_aevd != nullptr) {
            std::lock_guard g1(new_aevd->lock);
            std::lock_guard g2(evd->lock);
            link_member(*new_aevd, *evd);
        }
    }
    return IT_SUCCESS;
}

it_status_t it_evd_dequeue(it_evd_handle_t evd_handle, it_event_t *event) {
    Evd *evd = lookup<Evd>(evd_handle);
    if (evd == nullptr)
        return IT_ERR_INVALID_EVD;
    if (event == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (catastrophic(*evd))
        return IT_ERR_IA_CATASTROPHE;
    std::lock_guard guard(evd->lock);
    try {
        if (evd->aggregate()) {
            if (take_aggregate(*evd, false, *event))
                return IT_SUCCESS;
            prepare_sleep_aggregate(*evd);
            return take_aggregate(*evd, false, *event) ? IT_SUCCESS : IT_ERR_QUEUE_EMPTY;
        }
        if (it_status_t st = may_dequeue(*evd); st != IT_SUCCESS)
            return st;
        if (evd->count == 0 && is_dto(*evd) && !watched(*evd)) {
            // nothing queued, nobody to tell: the next completion goes
            // straight into the caller's event
            drain_channel(*evd);
            if (!evd_fill_inline(*evd, event))
                return IT_ERR_QUEUE_EMPTY;
            settle(*evd);
            return IT_SUCCESS;
        }
        if (take(*evd, false, *event, nullptr))
            return IT_SUCCESS;
        // empty: a descriptor someone watches turns readable at the next
        // event (a consumer that polls by dequeueing makes no system call)
        if (!watched(*evd))
            return IT_ERR_QUEUE_EMPTY;
        prepare_sleep(*evd);
        return take(*evd, false, *event, nullptr) ? IT_SUCCESS : IT_ERR_QUEUE_EMPTY;
    } catch (const std::exception &e) {
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
}

it_status_t it_evd_wait(it_evd_handle_t evd_handle, uint64_t timeout, it_event_t *event,
                        size_t *nmore) {
    Evd *evd = lookup<Evd>(evd_handle);
    if (evd == nullptr)
        return IT_ERR_INVALID_EVD;
    if (event == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (catastrophic(*evd))
        return IT_ERR_IA_CATASTROPHE;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (timeout != IT_TIMEOUT_INFINITE)
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::microseconds(std::min<uint64_t>(timeout, 1ULL << 50));

    std::unique_lock guard(evd->lock);
    if (evd->freeing)
        return IT_ERR_ABORT;
    if (evd->aggregate()) {
        if (evd->user_fd >= 0 && evd->enabled)
            return IT_ERR_INVALID_EVD_STATE;
    } else if (it_status_t st = may_wait(*evd); st != IT_SUCCESS) {
        return st;
    }
    if (!evd->aggregate() && evd->threshold > 1 && evd->waiters > 0)
        return IT_ERR_WAITER_LIMIT;
    evd->waiters++;
    it_status_t st = IT_SUCCESS;
    try {
        for (;;) {
            if (evd->freeing) {
                st = IT_ERR_ABORT;
                break;
            }
            bool got = evd->aggregate() ? take_aggregate(*evd, true, *event)
                                        : take(*evd, true, *event, nmore);
            if (got)
                break;
            bool moderated = false;
            if (evd->aggregate())
                prepare_sleep_aggregate(*evd);
            else
                moderated = prepare_sleep(*evd, true);
            if (moderated) {
                // the arm covers what raced with it; what the arm's poll
                // (notification only) queued is looked at here
                got = evd->count > 0 && criteria(*evd);
                if (got) {
                    woken(*evd);
                    got = take(*evd, true, *event, nmore);
                }
            } else {
                got = evd->aggregate() ? take_aggregate(*evd, true, *event)
                                       : take(*evd, true, *event, nmore);
            }
            if (got)
                break;
            guard.unlock();
            st = sleep_on(evd->wait_fd, deadline);
            guard.lock();
            woken(*evd);
            if (st != IT_SUCCESS)
                break;
            if (catastrophic(*evd)) {
                st = IT_ERR_IA_CATASTROPHE;
                break;
            }
        }
    } catch (const std::exception &e) {
        if (!guard.owns_lock())
            guard.lock();
        woken(*evd);
        st = status_of_exception(e, IT_ERR_RESOURCES);
    }
    if (st == IT_ERR_TIMEOUT_EXPIRED && nmore != nullptr && !evd->aggregate())
        *nmore = evd->count;
    evd->waiters--;
    if (evd->freeing)
        evd->cv.notify_all();
    return st;
}

it_status_t it_evd_post_se(it_evd_handle_t evd_handle, const void *event) {
    Evd *evd = lookup<Evd>(evd_handle);
    if (evd == nullptr)
        return IT_ERR_INVALID_EVD;
    if (evd->stream != IT_SOFTWARE_EVENT_STREAM)
        return IT_ERR_INVALID_SOFT_EVD;
    if (catastrophic(*evd))
        return IT_ERR_IA_CATASTROPHE;
    std::lock_guard guard(evd->lock);
    if (evd->count == evd->queue.size())
        return IT_ERR_EVD_QUEUE_FULL; // never an overflow
    it_event_t ev{};
    ev.sw.event_number = IT_SOFTWARE_EVENT;
    ev.sw.evd = evd_handle;
    ev.sw.data = const_cast<void *>(event);
    evd_push(*evd, ev, true);
    signal_evd(*evd);
    return IT_SUCCESS;
}

// Callbacks are for privileged consumers (kernel ULPs); a process is not one.
it_status_t it_evd_callback_attach(it_evd_handle_t evd_handle, it_evd_callback_rtn_t, void *) {
    return lookup<Evd>(evd_handle) == nullptr ? IT_ERR_INVALID_EVD : IT_ERR_NO_PERMISSION;
}

it_status_t it_evd_callback_detach(it_evd_handle_t evd_handle) {
    return lookup<Evd>(evd_handle) == nullptr ? IT_ERR_INVALID_EVD : IT_ERR_NO_PERMISSION;
}

} // extern "C"
