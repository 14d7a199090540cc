// SPDX-License-Identifier: GPL-2.0
//
// VIPL on viaduct: NICs, protection tags, memory, VIs, completion queues,
// posting and completing descriptors, notifications and errors. The
// connections are in connect.cpp, the name service and system management in
// names.cpp. Every call is a translation over libviaduct's native API.
#include "objects.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vipl_api.hpp"

namespace vipl {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Data segments per descriptor: the guide's minimum (5.4), which the
// device's SGE limit meets; every VI's slots hold that many (4 KiB each).
constexpr std::uint32_t max_data_segments = 252;
// Bytes per descriptor (MaxTransferSize): what the examples exchange in
// every size class and verify (vipl_test.sh); the module takes up to 2 GiB.
constexpr std::uint64_t max_transfer = std::uint64_t{4} << 20;
constexpr auto wait_slice = 100ms;

Registry::Registry() {
    indexes_.push_back(std::make_unique<Index>(64));
    index_.store(indexes_.back().get(), std::memory_order_release);
}

void Registry::index_insert(const Object *o) {
    auto &slots = index_.load(std::memory_order_relaxed)->slots;
    const std::size_t n = slots.size();
    for (std::size_t i = home(o, n);; i = (i + 1) & (n - 1)) {
        const Object *at = slots[i].load(std::memory_order_relaxed);
        if (at == nullptr)
            filled_++;
        if (at == nullptr || at == tombstone()) {
            // the object is complete before a reader can find it
            slots[i].store(o, std::memory_order_release);
            return;
        }
    }
}

// A new index of @n slots holding what the map holds. One of the current
// size is rebuilt in place (a reader that misses an object meanwhile asks
// the map); a larger one replaces it.
void Registry::index_rebuild(std::size_t n) {
    Index *cur = index_.load(std::memory_order_relaxed);
    if (n == cur->slots.size()) {
        for (auto &s : cur->slots)
            s.store(nullptr, std::memory_order_relaxed);
    } else {
        indexes_.push_back(std::make_unique<Index>(n));
        index_.store(indexes_.back().get(), std::memory_order_release);
    }
    filled_ = 0;
    for (const auto &[h, o] : map)
        index_insert(o.get());
}

void Registry::add(const std::shared_ptr<Object> &o) {
    std::lock_guard<std::mutex> g(mu);
    if (!map.insert_or_assign(o.get(), o).second)
        return; // already there, and in the index
    const std::size_t n = index_.load(std::memory_order_relaxed)->slots.size();
    // at most 3/4 of the slots filled (live or tombstones), a quarter live
    // after a rebuild
    if (4 * (filled_ + 1) > 3 * n)
        index_rebuild(4 * map.size() > n ? 2 * n : n);
    else
        index_insert(o.get());
}

void Registry::remove(const void *h) {
    std::shared_ptr<Object> keep; // destroyed outside the lock
    std::unique_lock<std::mutex> g(mu);
    auto it = map.find(h);
    if (it == map.end())
        return;
    keep = std::move(it->second);
    map.erase(it);
    auto &slots = index_.load(std::memory_order_relaxed)->slots;
    const std::size_t n = slots.size();
    for (std::size_t i = home(h, n); slots[i].load(std::memory_order_relaxed);
         i = (i + 1) & (n - 1)) {
        if (slots[i].load(std::memory_order_relaxed) == h) {
            slots[i].store(tombstone(), std::memory_order_release);
            break;
        }
    }
    g.unlock();
}

std::shared_ptr<Object> Registry::find(const void *h, Kind k) {
    if (!h)
        return nullptr;
    std::lock_guard<std::mutex> g(mu);
    auto it = map.find(h);
    if (it == map.end() || it->second->kind != k)
        return nullptr;
    return it->second;
}

Object *Registry::peek_locked(const void *h, Kind k) {
    std::lock_guard<std::mutex> g(mu);
    auto it = map.find(h);
    return it != map.end() && it->second->kind == k ? it->second.get() : nullptr;
}

std::chrono::milliseconds until(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() < 0 ? 0ms : left;
}

Clock::time_point deadline_of(VIP_ULONG timeout) {
    if (timeout == VIP_INFINITE || timeout > 365UL * 24 * 3600 * 1000)
        return Clock::time_point::max();
    return Clock::now() + std::chrono::milliseconds(timeout);
}

// ---------------------------------------------------------------- errors

void Nic::raise(VIP_ERROR_DESCRIPTOR ed) {
    ed.NicHandle = this;
    VIP_ERROR_HANDLER h;
    VIP_PVOID ctx;
    {
        std::lock_guard<std::mutex> g(mu);
        h = handler;
        ctx = handler_context;
    }
    if (h) {
        h(ctx, &ed);
        return;
    }
    static const char *const names[] = {"post descriptor error",       "connection lost",
                                        "receive queue empty",         "VI overrun",
                                        "RDMA Write protection error", "RDMA Write data error",
                                        "RDMA Write packet abort",     "RDMA Read protection error",
                                        "completion protection error", "RDMA transport error",
                                        "catastrophic error"};
    const unsigned c = static_cast<unsigned>(ed.ErrorCode);
    std::fprintf(stderr, "vipl: %s: %s%s%p\n", attr.name.c_str(),
                 c < std::size(names) ? names[c] : "error",
                 ed.ViHandle   ? " on VI "
                 : ed.CQHandle ? " on CQ "
                               : " ",
                 ed.ViHandle ? ed.ViHandle : ed.CQHandle);
}

// Puts @vi in Error: its native QP flushes what is posted.
// With @lost (the peer went), what the peer sent before it left is placed
// first: the transport takes the QP out of RTS once it has read the stream.
void fail_vi(Vi &vi, bool lost) {
    vi.error_latched = true;
    try {
        // a graceful close ends in Idle on its own, soon: flush after it
        auto st = vi.qp->query().state;
        for (int i = 0;
             i < 200 && (st == viaduct::QpState::Closing || st == viaduct::QpState::Terminate ||
                         (lost && st == viaduct::QpState::Rts));
             i++) {
            std::this_thread::sleep_for(10ms);
            st = vi.qp->query().state;
        }
        if (st == viaduct::QpState::Idle || st == viaduct::QpState::Rts)
            vi.qp->modify(viaduct::QpState::Error);
    } catch (const viaduct::Error &) {
        // Closing or Terminate: the transport moves it to Error itself
    }
}

void async_error(Vi &vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *desc, bool recv) {
    VIP_ERROR_DESCRIPTOR ed{};
    ed.ViHandle = &vi;
    ed.DescriptorPtr = desc;
    ed.OpCode = recv ? VIP_STATUS_OP_RECEIVE : VIP_STATUS_OP_SEND;
    ed.ResourceCode = desc ? VIP_RESOURCE_DESCRIPTOR : VIP_RESOURCE_VI;
    ed.ErrorCode = code;
    fail_vi(vi);
    vi.nic->raise(ed);
}

// ---------------------------------------------------------------- queues

inline void WorkQueue::finish(Entry &e, std::uint32_t bits, std::uint32_t length,
                              std::uint32_t extra, std::uint32_t imm) {
    VIP_CONTROL_SEGMENT &cs = e.desc->CS;
    if (recv)
        cs.Length = bits ? 0 : length;
    if (extra & VIP_STATUS_IMMEDIATE)
        cs.ImmediateData = imm;
    e.status = VIP_STATUS_DONE | bits | extra;
    // Done last: whoever sees it sees the rest
    std::atomic_ref<VIP_UINT32>(cs.Status).store(e.status, std::memory_order_release);
    e.done = true;
}

inline void WorkQueue::advance() {
    while (delivered < q.size() && q[delivered].done) {
        if (cq)
            cq->push(vi, recv);
        delivered++;
    }
}

void WorkQueue::complete(const viaduct_cqe &c) {
    std::lock_guard<QueueLock> g(mu);
    complete_locked(c);
}

inline void WorkQueue::complete_locked(const viaduct_cqe &c) {
    if (c.wr_id == barrier_id) {
        barrier = true;
        return;
    }
    const std::uint64_t seq = c.wr_id >> 1;
    const bool trailing = c.wr_id & 1;
    if (seq < head_seq || seq >= next_seq)
        return; // of a descriptor no longer queued
    Entry &e = q[static_cast<std::size_t>(seq - head_seq)];
    if (e.done)
        return;
    std::uint32_t bits = status_bits(static_cast<viaduct::WcStatus>(c.status));
    if (e.rr && !trailing && !bits)
        return; // Reliable Reception: done when the Read behind it returns
    std::uint32_t extra = e.op;
    if (recv) {
        extra = c.opcode == VIADUCT_WC_RECV_RDMA_WITH_IMM ? VIP_STATUS_OP_REMOTE_RDMA_WRITE
                                                          : VIP_STATUS_OP_RECEIVE;
        if ((c.flags & VIADUCT_WC_F_IMMEDIATE) && !bits)
            extra |= VIP_STATUS_IMMEDIATE;
    }
    finish(e, bits, c.byte_len, extra, c.imm_data);
    advance();
}

// A completion of a VIPL CQ's native CQ, onto the queue it belongs to.
void dispatch(Nic &nic, const viaduct_cqe &c) {
    // the VI cannot go while vi_mu is held for reading
    std::shared_lock<std::shared_mutex> g(nic.vi_mu);
    auto it = nic.vis.find(c.qp_handle);
    if (it != nic.vis.end())
        ((c.flags & VIADUCT_WC_F_RECV) ? it->second->rq : it->second->sq).complete(c);
}

// What CompletionQueue::wait() returned (the sleeping paths), the same way.
void dispatch(Nic &nic, std::span<const viaduct::Completion> cs) {
    for (const auto &c : cs) {
        viaduct_cqe raw{};
        raw.wr_id = c.wr_id;
        raw.qp_handle = c.qp_handle;
        raw.byte_len = c.byte_len;
        raw.opcode = static_cast<std::uint8_t>(c.opcode);
        raw.status = static_cast<std::uint8_t>(c.status);
        raw.flags = c.flags;
        raw.imm_data = c.imm_data;
        dispatch(nic, raw);
    }
}

inline std::optional<MemBounds> WorkQueue::bounds(std::uint32_t mh) {
    Nic &nic = *vi->nic;
    // read before the region: a change after it makes the next post look again
    const std::uint64_t gen = nic.mem_gen.load(std::memory_order_acquire);
    if (gen == region_gen && mh == region_handle)
        return region;
    auto b = nic.mem_bounds(mh);
    if (b) {
        region_gen = gen;
        region_handle = mh;
        region = *b;
    }
    return b;
}

// Moves what a native CQ holds onto the work queues. No system call.
// VipSendDone and friends call this on every turn of a polling loop, so
// it polls raw CQEs into uninitialised room: nothing is zeroed or
// translated into a viaduct::Completion (a call per CQE into libviaduct)
// first; poll() writes the first n.
constexpr std::size_t poll_batch = 16;

inline bool WorkQueue::poll_own() {
    viaduct_cqe buf[poll_batch];
    for (;;) {
        std::size_t n;
        try {
            n = ncq->cq.poll(std::span<viaduct_cqe>(buf));
        } catch (const viaduct::Error &) {
            return false;
        }
        for (std::size_t i = 0; i < n; i++)
            complete_locked(buf[i]);
        if (n < poll_batch)
            return true;
    }
}

// The CQ of @owner (its own) or @cq overflowed: the VI or CQ is lost.
void cq_failed(Nic &nic, WorkQueue *owner, Cq *cq) {
    VIP_ERROR_DESCRIPTOR ed{};
    ed.CQHandle = cq;
    ed.ViHandle = owner ? owner->vi : nullptr;
    ed.ResourceCode = cq ? VIP_RESOURCE_CQ : VIP_RESOURCE_VI;
    ed.ErrorCode = VIP_ERROR_CATASTROPHIC;
    nic.raise(ed);
}

// A VIPL CQ's native CQ: its completions are of any queue on it, each
// completed under that queue's mutex.
void drain(Nic &nic, NativeCq &ncq, Cq *cq) {
    viaduct_cqe buf[poll_batch];
    for (;;) {
        std::size_t n;
        try {
            n = ncq.cq.poll(std::span<viaduct_cqe>(buf));
        } catch (const viaduct::Error &) {
            cq_failed(nic, nullptr, cq);
            return;
        }
        for (std::size_t i = 0; i < n; i++)
            dispatch(nic, buf[i]);
        if (n < poll_batch)
            return;
    }
}

void drain(WorkQueue &wq) {
    if (wq.cq) {
        drain(*wq.vi->nic, *wq.ncq, wq.cq.get());
        return;
    }
    bool ok;
    {
        std::lock_guard<QueueLock> g(wq.mu);
        ok = wq.poll_own();
    }
    if (!ok)
        cq_failed(*wq.vi->nic, &wq, nullptr);
}

// The Done calls. A queue with a CQ of its own polls it under its mutex
// and takes the head in the same turn: one lock per call. A queue on a
// VIPL CQ polls that first, without its mutex: the CQ's completions
// belong to other queues too, which are completed under their own.
[[gnu::always_inline]] inline VIP_RETURN done(WorkQueue &wq, VIP_DESCRIPTOR **out) {
    QueueGuard g(wq.mu, std::defer_lock);
    if (wq.cq) {
        drain(wq);
        g.lock();
    } else {
        g.lock();
        if (!wq.poll_own()) {
            g.unlock();
            cq_failed(*wq.vi->nic, &wq, nullptr);
            g.lock();
        }
    }
    if (wq.q.empty()) {
        *out = nullptr;
        return VIP_DESCRIPTOR_ERROR;
    }
    auto &e = wq.q.front();
    if (!e.done)
        return VIP_NOT_DONE;
    *out = e.desc;
    const bool err = e.status & VIP_STATUS_ERROR_MASK;
    wq.q.pop_front();
    wq.head_seq++;
    if (wq.delivered)
        wq.delivered--;
    return err ? VIP_DESCRIPTOR_ERROR : VIP_SUCCESS;
}

// The Wait calls: Done, then sleep on the CQ's channel. The own CQ is
// polled only by done() (under the queue's mutex), so the sleep arms the
// CQ and looks once more instead of polling in CompletionQueue::wait().
VIP_RETURN wait(WorkQueue &wq, Clock::time_point deadline, VIP_DESCRIPTOR **out) {
    std::array<viaduct::Completion, 16> buf;
    for (;;) {
        VIP_RETURN r = done(wq, out);
        if (r != VIP_NOT_DONE)
            return r;
        auto left = until(deadline);
        if (left == 0ms)
            return VIP_TIMEOUT;
        const auto slice = std::min<std::chrono::milliseconds>(left, wait_slice);
        if (wq.cq) {
            std::size_t n = wq.ncq->cq.wait(buf, slice);
            dispatch(*wq.vi->nic, std::span(buf.data(), n));
            continue;
        }
        bool armed = true;
        try {
            wq.ncq->cq.arm();
        } catch (const viaduct::Error &) {
            armed = false; // overflowed: done() reported it; look again after the slice
        }
        if (armed) {
            // a completion that came before the arm took effect fires nothing
            r = done(wq, out);
            if (r != VIP_NOT_DONE)
                return r;
        }
        // an event of an earlier arm only makes the loop look again
        wq.ncq->channel.wait(slice);
    }
}

// ---------------------------------------------------------------- notify

void Notifier::shutdown() {
    {
        std::lock_guard<std::mutex> g(mu);
        stop = true;
        regs.clear();
    }
    cv.notify_all();
    if (thread.joinable() && thread.get_id() != std::this_thread::get_id())
        thread.join();
    else if (thread.joinable())
        thread.detach();
}

namespace {

// Runs the registrations of @n in order: @next returns VIP_SUCCESS (and
// the argument for the handler) or VIP_TIMEOUT to try again.
template <typename Next> void notify_loop(Notifier &n, Next next) {
    for (;;) {
        Notifier::Reg reg;
        {
            std::unique_lock<std::mutex> g(n.mu);
            n.cv.wait(g, [&] { return n.stop || !n.regs.empty(); });
            if (n.stop)
                return;
            reg = n.regs.front();
        }
        if (!next(reg))
            continue;
        std::lock_guard<std::mutex> g(n.mu);
        if (!n.regs.empty())
            n.regs.pop_front();
    }
}

void start(Notifier &n, std::function<void()> body) {
    if (!n.thread.joinable())
        n.thread = std::thread(std::move(body));
}

} // namespace

VIP_RETURN desc_notify(WorkQueue &wq, VIP_PVOID context, VIP_DESCRIPTOR_NOTIFY_HANDLER handler) {
    if (!handler)
        return VIP_INVALID_PARAMETER;
    if (wq.cq)
        return VIP_ERROR_RESOURCE;
    {
        std::lock_guard<QueueLock> g(wq.mu);
        if (wq.q.empty())
            return VIP_DESCRIPTOR_ERROR;
    }
    Notifier &n = wq.notifier;
    std::lock_guard<std::mutex> g(n.mu);
    n.regs.push_back({context, handler});
    start(n, [&wq] {
        notify_loop(wq.notifier, [&wq](const Notifier::Reg &reg) {
            VIP_DESCRIPTOR *d = nullptr;
            VIP_RETURN r = wait(wq, Clock::now() + wait_slice, &d);
            if (r == VIP_TIMEOUT)
                return wq.notifier.stop ? true : false;
            std::get<Notifier::DescHandler>(reg.handler)(reg.context, wq.vi->nic, wq.vi, d);
            return true;
        });
    });
    n.cv.notify_one();
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- objects

Vi::~Vi() {
    sq.notifier.shutdown();
    rq.notifier.shutdown();
    if (peer.thread.joinable()) {
        peer.cancel = true;
        peer.thread.join();
    }
}

Cq::~Cq() {
    notifier.shutdown();
}

Nic::~Nic() {
    if (thread.joinable()) {
        std::uint64_t one = 1;
        if (::write(stop_fd, &one, sizeof(one)) < 0)
            std::perror("vipl: eventfd");
        thread.join();
    }
    if (stop_fd >= 0)
        ::close(stop_fd);
}

void unhook_vi(Vi &vi) {
    std::unique_lock<std::shared_mutex> g(vi.nic->vi_mu);
    vi.nic->vis.erase(vi.qp->handle());
}

} // namespace vipl

using namespace vipl;

namespace {

std::shared_ptr<Nic> nic_of(VIP_NIC_HANDLE h) {
    return std::static_pointer_cast<Nic>(registry().find(h, Kind::Nic));
}
std::shared_ptr<Vi> vi_of(VIP_VI_HANDLE h) {
    return std::static_pointer_cast<Vi>(registry().find(h, Kind::Vi));
}
std::shared_ptr<Cq> cq_of(VIP_CQ_HANDLE h) {
    return std::static_pointer_cast<Cq>(registry().find(h, Kind::Cq));
}
[[gnu::always_inline]] inline Vi *vi_peek(VIP_VI_HANDLE h) {
    return static_cast<Vi *>(registry().peek(h, Kind::Vi));
}
[[gnu::always_inline]] inline Cq *cq_peek(VIP_CQ_HANDLE h) {
    return static_cast<Cq *>(registry().peek(h, Kind::Cq));
}

std::shared_ptr<Ptag> ptag_of(Nic &nic, VIP_PROTECTION_HANDLE h) {
    if (!h)
        return nic.default_ptag; // Early Adopter programs that ignore tags
    auto p = std::static_pointer_cast<Ptag>(registry().find(h, Kind::Ptag));
    return p && p->nic == &nic ? p : nullptr;
}

bool readable_attrs(const VIP_VI_ATTRIBUTES *a) {
    return a != nullptr;
}

// The checks of VipCreateVi and VipSetViAttributes, in the guide's order.
VIP_RETURN check_vi_attrs(Nic &nic, const VIP_VI_ATTRIBUTES &a, std::shared_ptr<Ptag> &ptag) {
    if (!valid_reliability(a.ReliabilityLevel))
        return VIP_INVALID_RELIABILITY_LEVEL;
    if (a.MaxTransferSize > std::min(nic.attr.limits.max_msg_size, max_transfer))
        return VIP_INVALID_MTU;
    ptag = ptag_of(nic, a.Ptag);
    if (!ptag)
        return VIP_INVALID_PTAG;
    if (a.EnableRdmaRead && a.ReliabilityLevel == VIP_SERVICE_UNRELIABLE)
        return VIP_INVALID_RDMAREAD;
    return VIP_SUCCESS;
}

std::uint32_t qp_access(const VIP_VI_ATTRIBUTES &a) {
    return (a.EnableRdmaWrite ? std::uint32_t{VIADUCT_QP_ACCESS_REMOTE_WRITE} : 0u) |
           (a.EnableRdmaRead ? std::uint32_t{VIADUCT_QP_ACCESS_REMOTE_READ} : 0u);
}

std::unique_ptr<viaduct::QueuePair> make_qp(Nic &nic, Vi &vi, const VIP_VI_ATTRIBUTES &a,
                                            Ptag &ptag) {
    viaduct::QpConfig cfg;
    cfg.send_cq = &vi.sq.ncq->cq;
    cfg.recv_cq = &vi.rq.ncq->cq;
    // A descriptor is one native work request, and on Reliable Reception
    // two (the trailing Read). Every slot is 4 KiB (252 segments), and
    // every post writes its slot and the kernel's intake reads it: the
    // rings are short (ring_slots pages) in front of queues that hold
    // every descriptor the VI may have posted.
    cfg.sq_depth =
        a.ReliabilityLevel == VIP_SERVICE_RELIABLE_RECEPTION ? 2 * queue_depth : queue_depth;
    cfg.rq_depth = queue_depth;
    if (nic.attr.caps & VIADUCT_DEV_CAP_RING_DEPTH) {
        cfg.sq_ring_depth = ring_slots;
        cfg.rq_ring_depth = ring_slots;
    }
    cfg.max_send_sge = std::min(nic.attr.limits.max_sge, max_data_segments);
    cfg.max_recv_sge = cfg.max_send_sge;
    // asynchronous events name the QP by its handle, which a later QP may
    // get: the serial tells the VI's own (on_async())
    cfg.user_data = vi.serial;
    // Reliable Reception is this library's (a zero-length RDMA Read behind
    // each Send and Write, Documentation/vipl.rst); the module refuses it
    // on a QP, so such a VI runs on a Reliable Delivery QP.
    cfg.reliability = a.ReliabilityLevel == VIP_SERVICE_RELIABLE_RECEPTION
                          ? viaduct::Reliability::ReliableDelivery
                          : static_cast<viaduct::Reliability>(a.ReliabilityLevel);
    cfg.access = qp_access(a);
    cfg.ord = std::min(nic.attr.limits.max_ord, 8u);
    cfg.ird = std::min(nic.attr.limits.max_ird, 8u);
    // Every post to the native queues happens under the work queue's own
    // mutex (WorkQueue::mu), so the native QP need not lock again.
    cfg.single_threaded = true;
    return std::make_unique<viaduct::QueuePair>(ptag.pd, cfg);
}

// What the slots of @vi's QP hold, at most what post()'s SGE array holds.
void set_sges(Vi &vi) {
    vi.send_sge = std::min(vi.qp->caps().max_send_sge, max_data_segments);
    vi.recv_sge = std::min(vi.qp->caps().max_recv_sge, max_data_segments);
}

VIP_RETURN resource(const viaduct::Error &e) {
    return e.errnum() == EINVAL ? VIP_INVALID_PARAMETER : VIP_ERROR_RESOURCE;
}

} // namespace

namespace vipl {

// Everything of a VI's queues is empty and it has no connection.
bool vi_idle(Vi &vi) {
    if (vi.pending || vi.error_latched || vi.conn)
        return false;
    return vi.qp->query().state == viaduct::QpState::Idle;
}

VIP_VI_STATE vi_state(Vi &vi) {
    if (vi.pending)
        return VIP_STATE_CONNECT_PENDING;
    if (vi.error_latched)
        return VIP_STATE_ERROR;
    switch (vi.qp->query().state) {
    case viaduct::QpState::Idle:
        return vi.conn ? VIP_STATE_ERROR : VIP_STATE_IDLE;
    case viaduct::QpState::Rts:
        return VIP_STATE_CONNECTED;
    default:
        return VIP_STATE_ERROR;
    }
}

void close_nic(Nic &nic);

} // namespace vipl

// ================================================================ the API

extern "C" {

VIP_RETURN VipOpenNic(const VIP_CHAR *DeviceName, VIP_NIC_HANDLE *NicHandle) {
    if (!NicHandle)
        return VIP_INVALID_PARAMETER;
    auto sel = parse_nic_name(DeviceName);
    if (!sel)
        return VIP_INVALID_PARAMETER;
    auto nic = std::make_shared<Nic>();
    try {
        switch (sel->kind) {
        case NicSelector::Kind::Name:
            nic->dev.emplace(viaduct::Device::open(sel->name));
            break;
        case NicSelector::Kind::Index:
        case NicSelector::Kind::Ifname: {
            auto list = viaduct::Device::list();
            std::sort(list.begin(), list.end(),
                      [](const auto &a, const auto &b) { return a.index < b.index; });
            const viaduct::DeviceEntry *pick = nullptr;
            if (sel->kind == NicSelector::Kind::Index) {
                if (sel->index < list.size())
                    pick = &list[sel->index];
            } else {
                for (const auto &e : list)
                    if (e.ifname == sel->name)
                        pick = &e;
            }
            if (!pick)
                return VIP_INVALID_PARAMETER;
            nic->dev.emplace(viaduct::Device::open(pick->index));
            break;
        }
        }
        nic->attr = nic->dev->attributes();
        for (const auto &a : nic->attr.addresses) {
            if (a.family == AF_INET &&
                inet_pton(AF_INET, a.address.c_str(), nic->addr.data()) == 1) {
                nic->addr_str = a.address;
                break;
            }
        }
        nic->cm.emplace(*nic->dev);
        nic->default_ptag = std::make_shared<Ptag>(nic.get(), viaduct::ProtectionDomain(*nic->dev));
    } catch (const viaduct::Error &e) {
        return e.errnum() == ENODEV || e.errnum() == ENOENT ? VIP_INVALID_PARAMETER
                                                            : VIP_ERROR_RESOURCE;
    }
    nic->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (nic->stop_fd < 0)
        return VIP_ERROR_RESOURCE;
    Nic *raw = nic.get();
    nic->thread = std::thread([raw] { raw->run(); });
    registry().add(nic);
    *NicHandle = nic.get();
    return VIP_SUCCESS;
}

VIP_RETURN VipCloseNic(VIP_NIC_HANDLE NicHandle) {
    auto nic = nic_of(NicHandle);
    if (!nic)
        return VIP_INVALID_PARAMETER;
    registry().remove(NicHandle);
    close_nic(*nic);
    return VIP_SUCCESS;
}

VIP_RETURN VipQueryNic(VIP_NIC_HANDLE NicHandle, VIP_NIC_ATTRIBUTES *a) {
    auto nic = nic_of(NicHandle);
    if (!nic || !a)
        return VIP_INVALID_PARAMETER;
    const auto &l = nic->attr.limits;
    *a = VIP_NIC_ATTRIBUTES{};
    std::snprintf(a->Name, sizeof(a->Name), "%s", nic->attr.name.c_str());
    a->HardwareVersion = nic->attr.abi_version;
    a->ProviderVersion = 0x00010000; // VIPL 1.0
    a->NicAddressLen = 4;
    a->LocalNicAddress = nic->addr.data();
    a->ThreadSafe = VIP_TRUE;
    a->MaxDiscriminatorLen = max_discriminator;
    a->MaxRegisterBytes = static_cast<VIP_ULONG>(l.max_mr_size);
    a->MaxRegisterRegions = l.max_mr;
    a->MaxRegisterBlockBytes = static_cast<VIP_ULONG>(l.max_mr_size);
    a->MaxVI = l.max_qp;
    a->MaxDescriptorsPerQueue = queue_depth;
    a->MaxSegmentsPerDesc = std::min(l.max_sge, max_data_segments) + 1; // and the AS
    a->MaxCQ = l.max_cq;
    a->MaxCQEntries = l.max_cqe / 2;
    a->MaxTransferSize = static_cast<VIP_ULONG>(std::min(l.max_msg_size, max_transfer));
    a->NativeMTU = nic->attr.mtu;
    a->MaxPtags = l.max_pd;
    a->ReliabilityLevelSupport =
        VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
    a->RDMAReadSupport = VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
    return VIP_SUCCESS;
}

VIP_RETURN VipCreatePtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE *Ptag) {
    auto nic = nic_of(NicHandle);
    if (!nic || !Ptag)
        return VIP_INVALID_PARAMETER;
    try {
        auto p = std::make_shared<vipl::Ptag>(nic.get(), viaduct::ProtectionDomain(*nic->dev));
        {
            std::lock_guard<std::mutex> g(nic->mu);
            nic->children.push_back(p);
        }
        registry().add(p);
        *Ptag = p.get();
    } catch (const viaduct::Error &) {
        return VIP_ERROR_RESOURCE;
    }
    return VIP_SUCCESS;
}

VIP_RETURN VipDestroyPtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE Ptag) {
    auto nic = nic_of(NicHandle);
    if (!nic)
        return VIP_INVALID_PARAMETER;
    auto p = std::static_pointer_cast<vipl::Ptag>(registry().find(Ptag, Kind::Ptag));
    if (!p || p->nic != nic.get())
        return VIP_INVALID_PARAMETER;
    if (p->users > 0)
        return VIP_ERROR_RESOURCE;
    registry().remove(Ptag);
    std::lock_guard<std::mutex> g(nic->mu);
    nic->children.remove(p);
    return VIP_SUCCESS;
}

VIP_RETURN VipRegisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_ULONG Length,
                          VIP_MEM_ATTRIBUTES *MemAttribs, VIP_MEM_HANDLE *MemoryHandle) try {
    auto nic = nic_of(NicHandle);
    if (!nic || !VirtualAddress || Length == 0 || !MemAttribs || !MemoryHandle)
        return VIP_INVALID_PARAMETER;
    auto ptag = ptag_of(*nic, MemAttribs->Ptag);
    if (!ptag)
        return VIP_INVALID_PTAG;
    std::uint32_t access = viaduct::access::local_write;
    if (MemAttribs->EnableRdmaWrite)
        access |= viaduct::access::remote_write;
    if (MemAttribs->EnableRdmaRead)
        access |= viaduct::access::remote_read;
    auto mem = std::make_shared<Mem>(
        Mem{[&]() -> viaduct::MemoryRegion {
                try {
                    return viaduct::MemoryRegion(ptag->pd, VirtualAddress, Length, access);
                } catch (const viaduct::Error &e) {
                    // read-only pages: registered for sending and RDMA Read only,
                    // the NIC never writes them
                    if ((e.errnum() == EFAULT || e.errnum() == EPERM || e.errnum() == EACCES) &&
                        !MemAttribs->EnableRdmaWrite)
                        return viaduct::MemoryRegion(ptag->pd, VirtualAddress, Length,
                                                     access & ~viaduct::access::local_write);
                    throw;
                }
            }(),
            ptag, reinterpret_cast<std::uintptr_t>(VirtualAddress), Length,
            MemAttribs->EnableRdmaWrite != 0, MemAttribs->EnableRdmaRead != 0});
    ptag->users++;
    std::unique_lock<std::shared_mutex> g(nic->mem_mu);
    nic->mems[mem->mr.stag()] = mem;
    *MemoryHandle = mem->mr.stag();
    return VIP_SUCCESS;
} catch (const viaduct::Error &e) {
    return resource(e);
}

VIP_RETURN VipDeregisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                            VIP_MEM_HANDLE MemoryHandle) {
    auto nic = nic_of(NicHandle);
    if (!nic)
        return VIP_INVALID_PARAMETER;
    std::shared_ptr<Mem> mem;
    {
        std::unique_lock<std::shared_mutex> g(nic->mem_mu);
        auto it = nic->mems.find(MemoryHandle);
        if (it == nic->mems.end() ||
            it->second->addr != reinterpret_cast<std::uintptr_t>(VirtualAddress))
            return VIP_INVALID_PARAMETER;
        mem = std::move(it->second);
        nic->mems.erase(it);
        nic->mem_gen.fetch_add(1, std::memory_order_release);
        mem->ptag->users--;
    }
    return VIP_SUCCESS;
}

VIP_RETURN VipQueryMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle,
                       VIP_MEM_ATTRIBUTES *MemAttribs) {
    auto nic = nic_of(NicHandle);
    if (!nic || !MemAttribs)
        return VIP_INVALID_PARAMETER;
    auto mem = nic->find_mem(MemHandle);
    const auto a = reinterpret_cast<std::uintptr_t>(Address);
    if (!mem || a < mem->addr || a >= mem->addr + mem->length)
        return VIP_INVALID_PARAMETER;
    std::shared_lock<std::shared_mutex> g(nic->mem_mu);
    MemAttribs->Ptag = mem->ptag == nic->default_ptag ? nullptr : mem->ptag.get();
    MemAttribs->EnableRdmaWrite = mem->rdma_write;
    MemAttribs->EnableRdmaRead = mem->rdma_read;
    return VIP_SUCCESS;
}

// Every attribute may change: the region keeps its memory handle (its
// STag, which a peer may hold) and the module changes the tag and the
// rights in place, both or neither (MemoryRegion::modify()).
VIP_RETURN VipSetMemAttributes(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address,
                               VIP_MEM_HANDLE MemHandle, VIP_MEM_ATTRIBUTES *MemAttribs) try {
    auto nic = nic_of(NicHandle);
    if (!nic || !MemAttribs)
        return VIP_INVALID_PARAMETER;
    auto mem = nic->find_mem(MemHandle);
    const auto a = reinterpret_cast<std::uintptr_t>(Address);
    if (!mem || a < mem->addr || a >= mem->addr + mem->length)
        return VIP_INVALID_PARAMETER;
    auto ptag = ptag_of(*nic, MemAttribs->Ptag);
    if (!ptag)
        return VIP_INVALID_PTAG;
    std::unique_lock<std::shared_mutex> g(nic->mem_mu);
    if (auto it = nic->mems.find(MemHandle); it == nic->mems.end() || it->second != mem)
        return VIP_INVALID_PARAMETER; // deregistered meanwhile
    // memory registered read-only stays so: the NIC never writes it
    std::uint32_t access = mem->mr.access() & viaduct::access::local_write;
    if (MemAttribs->EnableRdmaWrite) {
        if (!access)
            return VIP_INVALID_PARAMETER;
        access |= viaduct::access::remote_write;
    }
    if (MemAttribs->EnableRdmaRead)
        access |= viaduct::access::remote_read;
    if (ptag == mem->ptag) {
        mem->mr.modify(access);
    } else {
        mem->mr.modify(ptag->pd, access);
        ptag->users++;
        mem->ptag->users--;
        mem->ptag = std::move(ptag);
        nic->mem_gen.fetch_add(1, std::memory_order_release);
    }
    mem->rdma_write = MemAttribs->EnableRdmaWrite != 0;
    mem->rdma_read = MemAttribs->EnableRdmaRead != 0;
    return VIP_SUCCESS;
} catch (const viaduct::Error &e) {
    return resource(e);
}

VIP_RETURN VipCreateCQ(VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount, VIP_CQ_HANDLE *CQHandle) {
    auto nic = nic_of(NicHandle);
    if (!nic || !CQHandle || EntryCount == 0)
        return VIP_INVALID_PARAMETER;
    if (EntryCount > nic->attr.limits.max_cqe / 2)
        return VIP_ERROR_RESOURCE;
    try {
        auto cq = std::make_shared<Cq>();
        cq->nic = nic.get();
        // room for the trailing Reads of Reliable Reception
        cq->ncq = std::make_unique<NativeCq>(*nic->dev, static_cast<std::uint32_t>(2 * EntryCount));
        cq->entries = static_cast<std::uint32_t>(EntryCount);
        {
            std::lock_guard<std::mutex> g(nic->mu);
            nic->children.push_back(cq);
        }
        registry().add(cq);
        *CQHandle = cq.get();
    } catch (const viaduct::Error &e) {
        return VIP_ERROR_RESOURCE;
    }
    return VIP_SUCCESS;
}

VIP_RETURN VipDestroyCQ(VIP_CQ_HANDLE CQHandle) {
    auto cq = cq_of(CQHandle);
    if (!cq)
        return VIP_INVALID_PARAMETER;
    if (cq->users > 0)
        return VIP_ERROR_RESOURCE;
    registry().remove(CQHandle);
    cq->notifier.shutdown();
    std::lock_guard<std::mutex> g(cq->nic->mu);
    cq->nic->children.remove(cq);
    return VIP_SUCCESS;
}

VIP_RETURN VipResizeCQ(VIP_CQ_HANDLE CQHandle, VIP_ULONG EntryCount) {
    auto cq = cq_of(CQHandle);
    if (!cq || EntryCount == 0)
        return VIP_INVALID_PARAMETER;
    if (EntryCount > cq->nic->attr.limits.max_cqe / 2)
        return VIP_ERROR_RESOURCE;
    try {
        cq->ncq->cq.resize(static_cast<std::uint32_t>(2 * EntryCount));
        cq->entries = static_cast<std::uint32_t>(EntryCount);
    } catch (const viaduct::Error &) {
        return VIP_ERROR_RESOURCE;
    }
    return VIP_SUCCESS;
}

VIP_RETURN VipCQDone(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue) {
    Cq *cq = cq_peek(CQHandle);
    if (!cq || !ViHandle || !RecvQueue)
        return VIP_INVALID_PARAMETER;
    drain(*cq->nic, *cq->ncq, cq);
    std::lock_guard<std::mutex> g(cq->entries_mu);
    if (cq->items.empty())
        return VIP_NOT_DONE;
    *ViHandle = cq->items.front().vi;
    *RecvQueue = cq->items.front().recv ? VIP_TRUE : VIP_FALSE;
    cq->items.pop_front();
    return VIP_SUCCESS;
}

VIP_RETURN VipCQWait(VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout, VIP_VI_HANDLE *ViHandle,
                     VIP_BOOLEAN *RecvQueue) {
    auto cq = cq_of(CQHandle);
    if (!cq || !ViHandle || !RecvQueue)
        return VIP_INVALID_PARAMETER;
    const auto deadline = deadline_of(Timeout);
    std::array<viaduct::Completion, 16> buf;
    for (;;) {
        VIP_RETURN r = VipCQDone(CQHandle, ViHandle, RecvQueue);
        if (r != VIP_NOT_DONE)
            return r;
        auto left = until(deadline);
        if (left == 0ms)
            return VIP_TIMEOUT;
        std::size_t n =
            cq->ncq->cq.wait(buf, std::min<std::chrono::milliseconds>(left, wait_slice));
        dispatch(*cq->nic, std::span(buf.data(), n));
    }
}

VIP_RETURN VipCQNotify(VIP_CQ_HANDLE CQHandle, VIP_PVOID Context, VIP_CQ_NOTIFY_HANDLER Handler) {
    auto cq = cq_of(CQHandle);
    if (!cq || !Handler)
        return VIP_INVALID_PARAMETER;
    Notifier &n = cq->notifier;
    std::lock_guard<std::mutex> g(n.mu);
    n.regs.push_back({Context, Handler});
    Cq *raw = cq.get();
    start(n, [raw] {
        notify_loop(raw->notifier, [raw](const Notifier::Reg &reg) {
            VIP_VI_HANDLE vi = nullptr;
            VIP_BOOLEAN recv = VIP_FALSE;
            VIP_RETURN r = VipCQWait(raw, static_cast<VIP_ULONG>(wait_slice.count()), &vi, &recv);
            if (r != VIP_SUCCESS)
                return false;
            std::get<Notifier::CqHandler>(reg.handler)(reg.context, raw->nic, vi, recv);
            return true;
        });
    });
    n.cv.notify_one();
    return VIP_SUCCESS;
}

VIP_RETURN VipCreateVi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs,
                       VIP_CQ_HANDLE SendCQHandle, VIP_CQ_HANDLE RecvCQHandle,
                       VIP_VI_HANDLE *ViHandle) {
    auto nic = nic_of(NicHandle);
    if (!nic || !readable_attrs(ViAttribs) || !ViHandle)
        return VIP_INVALID_PARAMETER;
    std::shared_ptr<Cq> scq, rcq;
    if (SendCQHandle && (!(scq = cq_of(SendCQHandle)) || scq->nic != nic.get()))
        return VIP_INVALID_PARAMETER;
    if (RecvCQHandle && (!(rcq = cq_of(RecvCQHandle)) || rcq->nic != nic.get()))
        return VIP_INVALID_PARAMETER;
    std::shared_ptr<vipl::Ptag> ptag;
    if (VIP_RETURN r = check_vi_attrs(*nic, *ViAttribs, ptag))
        return r;
    try {
        auto vi = std::make_shared<Vi>();
        vi->nic = nic.get();
        vi->attrs = *ViAttribs;
        vi->attrs.Ptag = ViAttribs->Ptag;
        vi->ptag = ptag;
        for (auto [wq, cq, recv] :
             {std::tuple{&vi->sq, scq, false}, std::tuple{&vi->rq, rcq, true}}) {
            wq->vi = vi.get();
            wq->recv = recv;
            wq->cq = cq;
            if (!cq)
                wq->own = std::make_unique<NativeCq>(
                    *nic->dev, recv ? queue_depth : 2 * queue_depth, /*single_threaded=*/true);
            wq->ncq = cq ? cq->ncq.get() : wq->own.get();
        }
        vi->qp = make_qp(*nic, *vi, vi->attrs, *ptag);
        set_sges(*vi);
        ptag->users++;
        if (scq)
            scq->users++;
        if (rcq)
            rcq->users++;
        {
            std::unique_lock<std::shared_mutex> g(nic->vi_mu);
            nic->vis[vi->qp->handle()] = vi.get();
        }
        {
            std::lock_guard<std::mutex> g(nic->mu);
            nic->children.push_back(vi);
        }
        registry().add(vi);
        *ViHandle = vi.get();
    } catch (const viaduct::Error &) {
        return VIP_ERROR_RESOURCE;
    }
    return VIP_SUCCESS;
}

VIP_RETURN VipDestroyVi(VIP_VI_HANDLE ViHandle) {
    auto vi = vi_of(ViHandle);
    if (!vi)
        return VIP_INVALID_PARAMETER;
    {
        std::scoped_lock g(vi->cm_mu, vi->sq.mu, vi->rq.mu);
        if (!vi->sq.q.empty() || !vi->rq.q.empty() || vi->conn || vi->pending ||
            vi->error_latched || vi->qp->query().state != viaduct::QpState::Idle)
            return VIP_INVALID_STATE;
    }
    registry().remove(ViHandle);
    unhook_vi(*vi);
    vi->sq.notifier.shutdown();
    vi->rq.notifier.shutdown();
    for (auto *wq : {&vi->sq, &vi->rq}) {
        if (!wq->cq)
            continue;
        // no stale CQ entries for a VI that is gone
        std::lock_guard<std::mutex> g(wq->cq->entries_mu);
        std::erase_if(wq->cq->items, [&](const Cq::Item &i) { return i.vi == vi.get(); });
        wq->cq->users--;
    }
    vi->ptag->users--;
    std::lock_guard<std::mutex> g(vi->nic->mu);
    vi->nic->children.remove(vi);
    return VIP_SUCCESS;
}

VIP_RETURN VipQueryVi(VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State, VIP_VI_ATTRIBUTES *ViAttribs,
                      VIP_BOOLEAN *ViSendQEmpty, VIP_BOOLEAN *ViRecvQEmpty) {
    auto vi = vi_of(ViHandle);
    if (!vi || !State || !ViAttribs || !ViSendQEmpty || !ViRecvQEmpty)
        return VIP_INVALID_PARAMETER;
    try {
        std::lock_guard<std::mutex> g(vi->cm_mu);
        *State = vi_state(*vi);
        *ViAttribs = vi->attrs;
    } catch (const viaduct::Error &) {
        return VIP_ERROR_RESOURCE;
    }
    {
        std::lock_guard<QueueLock> g(vi->sq.mu);
        *ViSendQEmpty = vi->sq.q.empty() ? VIP_TRUE : VIP_FALSE;
    }
    std::lock_guard<QueueLock> g(vi->rq.mu);
    *ViRecvQEmpty = vi->rq.q.empty() ? VIP_TRUE : VIP_FALSE;
    return VIP_SUCCESS;
}

VIP_RETURN VipSetViAttributes(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *ViAttribs) {
    auto vi = vi_of(ViHandle);
    if (!vi || !ViAttribs)
        return VIP_INVALID_PARAMETER;
    std::shared_ptr<vipl::Ptag> ptag;
    std::scoped_lock g(vi->cm_mu, vi->sq.mu, vi->rq.mu);
    try {
        if (!vi_idle(*vi))
            return VIP_INVALID_STATE;
    } catch (const viaduct::Error &) {
        return VIP_ERROR_RESOURCE;
    }
    if (VIP_RETURN r = check_vi_attrs(*vi->nic, *ViAttribs, ptag))
        return r;
    try {
        if (ptag != vi->ptag || ViAttribs->ReliabilityLevel != vi->attrs.ReliabilityLevel) {
            // the tag and the level are the native QP's for life: a new one
            if (!vi->sq.q.empty() || !vi->rq.q.empty())
                return VIP_INVALID_STATE;
            auto qp = make_qp(*vi->nic, *vi, *ViAttribs, *ptag);
            unhook_vi(*vi);
            vi->qp = std::move(qp);
            set_sges(*vi);
            std::unique_lock<std::shared_mutex> w(vi->nic->vi_mu);
            vi->nic->vis[vi->qp->handle()] = vi.get();
            ptag->users++;
            vi->ptag->users--;
            vi->ptag = ptag;
        } else if (qp_access(*ViAttribs) != qp_access(vi->attrs)) {
            viaduct::QpModify m;
            m.access = qp_access(*ViAttribs);
            vi->qp->modify(m);
        }
    } catch (const viaduct::Error &) {
        return VIP_ERROR_RESOURCE;
    }
    vi->attrs = *ViAttribs;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- posting

// Everything a post reads of the VI (its tag, attributes, QP, the region
// cache) is read under the work queue's mutex, which VipSetViAttributes
// holds to change them; the native QP takes no lock of its own.
[[gnu::always_inline]] static inline VIP_RETURN post(Vi &vi, WorkQueue &wq, VIP_DESCRIPTOR *d,
                                                     VIP_MEM_HANDLE mh) {
    if (!d)
        return VIP_INVALID_PARAMETER;
    const auto at = reinterpret_cast<std::uintptr_t>(d);
    QueueGuard g(wq.mu);
    const auto mem = wq.bounds(mh);
    // The descriptor must lie in the region its handle names, of the VI's
    // tag: otherwise it is not touched at all (Post Descriptor Error).
    if (at % VIP_DESCRIPTOR_ALIGNMENT || !mem || mem->ptag != vi.ptag.get() || at < mem->addr ||
        at + sizeof(VIP_CONTROL_SEGMENT) > mem->addr + mem->length) {
        g.unlock();
        async_error(vi, VIP_ERROR_POST_DESC, d, wq.recv);
        return VIP_SUCCESS;
    }
    if (wq.q.size() >= queue_depth) {
        g.unlock();
        async_error(vi, VIP_ERROR_VI_OVERRUN, d, wq.recv);
        return VIP_SUCCESS;
    }
    const unsigned segs = static_cast<unsigned>(std::min<std::uint64_t>(
        (mem->addr + mem->length - at - sizeof(VIP_CONTROL_SEGMENT)) / sizeof(VIP_DATA_SEGMENT),
        0xffff));
    const bool rr = !wq.recv && vi.attrs.ReliabilityLevel == VIP_SERVICE_RELIABLE_RECEPTION;
    DescCheck c = wq.recv ? check_recv(*d, segs, vi.recv_sge)
                          : check_send(*d, segs, vi.send_sge, vi.attrs.MaxTransferSize, true);
    std::atomic_ref<VIP_UINT32>(d->CS.Status).store(0, std::memory_order_relaxed);

    const std::uint64_t seq = wq.next_seq++;
    wq.q.push_back({d, c.op, rr && c.op != VIP_STATUS_OP_RDMA_READ, false, 0});
    auto local_error = [&](std::uint32_t bits) {
        wq.finish(wq.q.back(), bits, 0, c.op, 0);
        wq.advance();
        g.unlock();
        // a reliable VI stops at its first bad descriptor
        if (vi.attrs.ReliabilityLevel != VIP_SERVICE_UNRELIABLE)
            fail_vi(vi);
        return VIP_SUCCESS;
    };
    if (c.error)
        return local_error(c.error);

    const bool rdma = c.op == VIP_STATUS_OP_RDMA_WRITE || c.op == VIP_STATUS_OP_RDMA_READ;
    // Room for the most segments a descriptor may have (4 KiB), left
    // uninitialised: only the first c.nds are written, then read. (An
    // std::array of Sge would zero all of it on every post.)
    union Sges {
        Sges() {}
        viaduct::Sge at[max_data_segments];
    } sges;
    viaduct::Sge *sge = sges.at;
    for (unsigned i = 0; i < c.nds; i++) {
        const VIP_DATA_SEGMENT *ds = segment(*d, i + (rdma ? 1u : 0u));
        sges.at[i] = {ds->Data.AddressBits, ds->Length, ds->Handle};
    }
    try {
        if (wq.recv) {
            vi.qp->post_recv(viaduct::RecvWr{seq << 1, std::span<const viaduct::Sge>(sge, c.nds)});
            return VIP_SUCCESS;
        }
        // The queue's own work requests, under its mutex: only what a
        // descriptor decides is written (see WorkQueue::wr)
        viaduct::SendWr &wr = wq.wr[0];
        wr.wr_id = seq << 1;
        wr.opcode = c.op == VIP_STATUS_OP_RDMA_WRITE  ? viaduct::SendOp::RdmaWrite
                    : c.op == VIP_STATUS_OP_RDMA_READ ? viaduct::SendOp::RdmaRead
                                                      : viaduct::SendOp::Send;
        wr.sge = std::span<const viaduct::Sge>(sge, c.nds);
        wr.read_fence = d->CS.Control & VIP_CONTROL_QFENCE;
        if ((d->CS.Control & VIP_CONTROL_IMMEDIATE) && c.op != VIP_STATUS_OP_RDMA_READ)
            wr.imm_data = d->CS.ImmediateData;
        else
            wr.imm_data.reset();
        const VIP_ADDRESS_SEGMENT &as = d->DS[0].Remote;
        wr.remote_addr = rdma ? as.Data.AddressBits : 0;
        wr.remote_stag = rdma ? as.Handle : 0;
        if (!wq.q.back().rr) {
            vi.qp->post_send(std::span<const viaduct::SendWr>(&wr, 1));
            return VIP_SUCCESS;
        }
        // Reliable Reception: the peer answers this Read only once
        // everything before it is placed
        const viaduct::Sge zero{0, 0, mh};
        viaduct::SendWr &read = wq.wr[1];
        read.wr_id = seq << 1 | 1;
        read.opcode = viaduct::SendOp::RdmaRead;
        read.sge = std::span<const viaduct::Sge>(&zero, 1);
        read.remote_stag = rdma ? as.Handle : 0;
        vi.qp->post_send(std::span<const viaduct::SendWr>(wq.wr));
    } catch (const viaduct::Error &e) {
        // Each post rings the doorbell, and the kernel takes what the ring
        // holds while fewer WRs than the queue's depth (every descriptor
        // the VI may have posted) are in flight; so the short ring is full
        // only while the kernel takes nothing: a connection closing or
        // terminated, whose descriptors are all flushed. The connection's
        // end fails the VI, not this post.
        const std::uint32_t room = wq.recv ? vi.qp->recv_queue_room() : vi.qp->send_queue_room();
        if (e.errnum() == ENOMEM && room < (wq.q.back().rr ? 2u : 1u)) {
            wq.finish(wq.q.back(), VIP_STATUS_DESC_FLUSHED_ERROR, 0, c.op, 0);
            wq.advance();
            return VIP_SUCCESS;
        }
        return local_error(e.errnum() == ENOMEM ? VIP_STATUS_LENGTH_ERROR
                                                : VIP_STATUS_FORMAT_ERROR);
    }
    return VIP_SUCCESS;
}

// The data path looks its VI up with Registry::peek(): no lock, no
// reference (see Registry).
VIP_RETURN VipPostSend(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
                       VIP_MEM_HANDLE MemoryHandle) {
    Vi *vi = vi_peek(ViHandle);
    if (!vi)
        return VIP_INVALID_PARAMETER;
    return post(*vi, vi->sq, DescriptorPtr, MemoryHandle);
}

VIP_RETURN VipPostRecv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
                       VIP_MEM_HANDLE MemoryHandle) {
    Vi *vi = vi_peek(ViHandle);
    if (!vi)
        return VIP_INVALID_PARAMETER;
    return post(*vi, vi->rq, DescriptorPtr, MemoryHandle);
}

VIP_RETURN VipSendDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr) {
    Vi *vi = vi_peek(ViHandle);
    if (!vi || !DescriptorPtr)
        return VIP_INVALID_PARAMETER;
    return done(vi->sq, DescriptorPtr);
}

VIP_RETURN VipRecvDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr) {
    Vi *vi = vi_peek(ViHandle);
    if (!vi || !DescriptorPtr)
        return VIP_INVALID_PARAMETER;
    return done(vi->rq, DescriptorPtr);
}

VIP_RETURN VipSendWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr) {
    auto vi = vi_of(ViHandle);
    if (!vi || !DescriptorPtr)
        return VIP_INVALID_PARAMETER;
    if (vi->sq.cq)
        return VIP_ERROR_RESOURCE;
    return wait(vi->sq, deadline_of(Timeout), DescriptorPtr);
}

VIP_RETURN VipRecvWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr) {
    auto vi = vi_of(ViHandle);
    if (!vi || !DescriptorPtr)
        return VIP_INVALID_PARAMETER;
    if (vi->rq.cq)
        return VIP_ERROR_RESOURCE;
    return wait(vi->rq, deadline_of(Timeout), DescriptorPtr);
}

VIP_RETURN VipSendNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
                         VIP_DESCRIPTOR_NOTIFY_HANDLER Handler) {
    auto vi = vi_of(ViHandle);
    if (!vi)
        return VIP_INVALID_PARAMETER;
    return desc_notify(vi->sq, Context, Handler);
}

VIP_RETURN VipRecvNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
                         VIP_DESCRIPTOR_NOTIFY_HANDLER Handler) {
    auto vi = vi_of(ViHandle);
    if (!vi)
        return VIP_INVALID_PARAMETER;
    return desc_notify(vi->rq, Context, Handler);
}

VIP_RETURN VipErrorCallback(VIP_NIC_HANDLE NicHandle, VIP_PVOID Context,
                            VIP_ERROR_HANDLER Handler) {
    auto nic = nic_of(NicHandle);
    if (!nic)
        return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(nic->mu);
    nic->handler = Handler; // NULL: the default, which logs
    nic->handler_context = Context;
    return VIP_SUCCESS;
}

} // extern "C"
