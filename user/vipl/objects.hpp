// SPDX-License-Identifier: GPL-2.0
//
// The objects behind VIPL's handles. A handle is the address of one of
// these; every call looks it up in a registry first (vipl_api.hpp), so a
// stale or foreign handle is VIP_INVALID_PARAMETER, never a crash. The
// calls that may sleep, create or destroy hold a reference for the call;
// the data path (post, Done, VipCQDone) looks up without one, so that a
// post costs no atomic operation beyond its work queue's mutex.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <variant>

#include "internal.hpp"
#include "wait_lock.hpp"

namespace vipl {

enum class Kind { Nic, Vi, Cq, Ptag, Conn };

struct Object {
    explicit Object(Kind k) : kind(k) {}
    virtual ~Object() = default;
    Object(const Object &) = delete;
    Object &operator=(const Object &) = delete;
    const Kind kind;
};

struct Nic;
struct Vi;
struct Cq;

struct Ptag : Object {
    Ptag(Nic *n, viaduct::ProtectionDomain p) : Object(Kind::Ptag), nic(n), pd(std::move(p)) {}
    Nic *nic;
    viaduct::ProtectionDomain pd;
    std::atomic<int> users{0}; // VIs and regions
};

// A registered region. @ptag and the Enable flags change under the NIC's
// @mem_mu (VipSetMemAttributes); the rest is fixed.
struct Mem {
    viaduct::MemoryRegion mr;
    std::shared_ptr<Ptag> ptag;
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
    bool rdma_write = false;
    bool rdma_read = false;
};

// A completion queue of the native core and the channel it sleeps on.
// A work queue's own one is polled only under that queue's mutex, so it
// takes no lock of its own (@single_threaded); a VIPL CQ's is polled by
// the Done calls of every queue on it and keeps the core's lock.
struct NativeCq {
    NativeCq(const viaduct::Device &dev, std::uint32_t entries, bool single_threaded = false)
        : channel(dev), cq(dev, config(entries, channel, single_threaded)) {}
    static viaduct::CqConfig config(std::uint32_t entries, const viaduct::CompletionChannel &ch,
                                    bool single_threaded) {
        viaduct::CqConfig c;
        c.entries = entries;
        c.channel = &ch;
        c.single_threaded = single_threaded;
        return c;
    }
    viaduct::CompletionChannel channel;
    viaduct::CompletionQueue cq;
};

// One-shot notifications, run in order on a thread of their own.
struct Notifier {
    using DescHandler = VIP_DESCRIPTOR_NOTIFY_HANDLER;
    using CqHandler = VIP_CQ_NOTIFY_HANDLER;
    struct Reg {
        VIP_PVOID context;
        std::variant<DescHandler, CqHandler> handler;
    };
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Reg> regs;
    std::thread thread;
    bool stop = false;

    ~Notifier() { shutdown(); }
    void shutdown();
};

// The bounds and tag of a registered region at the moment they were read,
// for the checks of a post: no reference is taken, nothing outlives the
// check.
struct MemBounds {
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
    const Ptag *ptag = nullptr;
};

// The mutex of a work queue (WorkQueue::mu): every post and every Done
// takes it (wait_lock.hpp).
using QueueLock = viaduct::face::WaitLock;

// std::unique_lock of a QueueLock for the data path, every member inline
// (std::unique_lock::unlock() is a call of its own).
class QueueGuard {
public:
    [[gnu::always_inline]] explicit QueueGuard(QueueLock &l) noexcept : l_(l) { l_.lock(); }
    [[gnu::always_inline]] QueueGuard(QueueLock &l, std::defer_lock_t) noexcept
        : l_(l), owns_(false) {}
    [[gnu::always_inline]] ~QueueGuard() {
        if (owns_)
            l_.unlock();
    }
    QueueGuard(const QueueGuard &) = delete;
    QueueGuard &operator=(const QueueGuard &) = delete;

    [[gnu::always_inline]] void lock() noexcept {
        l_.lock();
        owns_ = true;
    }
    [[gnu::always_inline]] void unlock() noexcept {
        l_.unlock();
        owns_ = false;
    }

private:
    QueueLock &l_;
    bool owns_ = true;
};

// Descriptors per work queue; the send ring has room for the trailing
// Reads of Reliable Reception too.
constexpr std::uint32_t queue_depth = 256;

// Slots of a VI's mapped send and receive rings (4 KiB each): the
// kernel takes a VI's descriptors from them at each post, so a few are
// enough (two for a Reliable Reception pair).
constexpr std::uint32_t ring_slots = 8;

// The descriptors of a work queue in posting order, at most queue_depth
// of them, in room allocated with the queue (a deque allocates and frees
// a chunk every few posts). push_back() needs size() < queue_depth.
template <class T> class DescRing {
public:
    bool empty() const noexcept { return n_ == 0; }
    std::size_t size() const noexcept { return n_; }
    T &operator[](std::size_t i) noexcept { return (*a_)[(head_ + i) % queue_depth]; }
    const T &operator[](std::size_t i) const noexcept { return (*a_)[(head_ + i) % queue_depth]; }
    T &front() noexcept { return (*this)[0]; }
    T &back() noexcept { return (*this)[n_ - 1]; }
    void push_back(const T &v) noexcept {
        (*this)[n_] = v;
        n_++;
    }
    void pop_front() noexcept {
        head_ = (head_ + 1) % queue_depth;
        n_--;
    }

private:
    std::unique_ptr<std::array<T, queue_depth>> a_ = std::make_unique<std::array<T, queue_depth>>();
    std::size_t head_ = 0, n_ = 0;
};

// A work queue: the descriptors posted, in order, until Done dequeues them.
// Everything here is under @mu, but for what is set before the VI has a
// handle and @barrier.
struct WorkQueue {
    struct Entry {
        VIP_DESCRIPTOR *desc = nullptr;
        std::uint32_t op = 0; // VIP_STATUS_OP_*
        bool rr = false;      // completes when its trailing zero-length Read does
        bool done = false;
        std::uint32_t status = 0;
    };

    Vi *vi = nullptr;
    bool recv = false;
    QueueLock mu;
    DescRing<Entry> q;
    std::uint64_t head_seq = 0; // sequence number of q.front()
    std::uint64_t next_seq = 0;
    std::size_t delivered = 0;     // done entries at the front already put on the CQ
    std::unique_ptr<NativeCq> own; // without a VIPL CQ
    std::shared_ptr<Cq> cq;        // with one
    NativeCq *ncq = nullptr;
    Notifier notifier;

    // The zero-length Read of a graceful VipDisconnect, not a descriptor.
    static constexpr std::uint64_t barrier_id = ~std::uint64_t{0};
    std::atomic<bool> barrier{false};

    // The native work requests of a send post (the second for Reliable
    // Reception), reused under @mu: a post writes only the fields a
    // descriptor decides. (Constructing a SendWr zeroes about 100 bytes,
    // with a rep-prefixed store that binary translation runs one
    // iteration per translated block.)
    std::array<viaduct::SendWr, 2> wr{};

    // The region of the last post's memory handle, valid while the NIC's
    // mem_gen is @region_gen (0: nothing cached).
    std::uint64_t region_gen = 0;
    std::uint32_t region_handle = 0;
    MemBounds region;

    // Records a native completion; writes the descriptor, Done last.
    void complete(const viaduct_cqe &c);
    // The members marked always_inline make up VipPostSend/VipSendDone and
    // friends: each call and return is dear under binary translation.
    [[gnu::always_inline]] void complete_locked(const viaduct_cqe &c); // under @mu
    // Takes what the own native CQ holds (not a VIPL CQ's), under @mu;
    // false if the CQ failed (overflow: the caller raises the error with
    // @mu released).
    [[gnu::always_inline]] bool poll_own();
    // The region of memory handle @mh now, or nothing; under @mu.
    [[gnu::always_inline]] std::optional<MemBounds> bounds(std::uint32_t mh);
    // Completes the entry of @seq with @bits (VIP_STATUS_* errors).
    [[gnu::always_inline]] void finish(Entry &e, std::uint32_t bits, std::uint32_t length,
                                       std::uint32_t extra, std::uint32_t imm);
    [[gnu::always_inline]] void advance();
};

struct Conn;

inline std::uint64_t next_serial() {
    static std::atomic<std::uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

struct Vi : Object {
    Vi() : Object(Kind::Vi) {}
    ~Vi() override;
    Nic *nic = nullptr;
    // unique in the process: the user data of the VI's native QPs
    const std::uint64_t serial = next_serial();
    VIP_VI_ATTRIBUTES attrs{};
    std::shared_ptr<Ptag> ptag;
    std::unique_ptr<viaduct::QueuePair> qp;
    // The data segments a descriptor may have on @qp, send and receive:
    // @qp's caps, read once (both change only under sq.mu and rq.mu).
    unsigned send_sge = 0, recv_sge = 0;
    WorkQueue sq, rq;

    std::mutex cm_mu; // conn, peer request
    std::shared_ptr<Conn> conn;
    std::atomic<bool> pending{false};       // a connect request under way
    std::atomic<bool> error_latched{false}; // connection lost, not yet VipDisconnect'ed

    struct Peer {
        std::thread thread;
        std::atomic<bool> done{false};
        std::atomic<bool> cancel{false};
        VIP_RETURN result = VIP_SUCCESS;
        VIP_VI_ATTRIBUTES remote{};
        bool active = false; // a peer request was made and not yet collected
    } peer;
};

struct CmEv {
    viaduct::CmEventType type{};
    int status = 0;
    std::vector<std::byte> private_data;
};

struct Listener;

struct Conn : Object {
    Conn() : Object(Kind::Conn) {}
    Nic *nic = nullptr;
    std::optional<viaduct::ConnectionId> id;
    std::uint32_t handle = 0;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<CmEv> events;
    std::weak_ptr<Vi> vi;
    Msg request; // server side: what the client sent
    // server side, until answered: the kernel rejects the requests of a
    // listener that goes away
    std::shared_ptr<Listener> listener;
    bool answered = false; // server side: accepted or rejected
    std::atomic<bool> established{false};
    std::atomic<bool> local_close{false};

    // The next event, or nothing by @deadline.
    std::optional<CmEv> next(std::chrono::steady_clock::time_point deadline);
};

struct Cq : Object {
    Cq() : Object(Kind::Cq) {}
    ~Cq() override;
    Nic *nic = nullptr;
    std::unique_ptr<NativeCq> ncq;
    std::uint32_t entries = 0;
    std::mutex entries_mu;
    struct Item {
        Vi *vi;
        bool recv;
    };
    std::deque<Item> items;
    std::atomic<int> users{0};
    Notifier notifier;

    void push(Vi *vi, bool recv) {
        std::lock_guard<std::mutex> g(entries_mu);
        items.push_back({vi, recv});
    }
};

// A connection wait of this process: client/server (VipConnectWait) or the
// passive side of a peer-to-peer request.
struct Waiter {
    bool peer = false;
    std::vector<std::uint8_t> disc;
    std::vector<std::uint8_t> remote_host, remote_disc; // peer: who must ask
    std::shared_ptr<Vi> vi;                             // peer: the VI to accept with
    bool done = false;
    VIP_RETURN result = VIP_SUCCESS;
    std::shared_ptr<Conn> conn;
    Msg msg;
};

struct Listener {
    std::optional<viaduct::ConnectionId> id;
    std::uint16_t port = 0;
    std::list<std::shared_ptr<Waiter>> waiters;
};

struct Nic : Object {
    Nic() : Object(Kind::Nic) {}
    ~Nic() override;

    std::optional<viaduct::Device> dev;
    viaduct::DeviceAttributes attr;
    std::array<std::uint8_t, 4> addr{};
    std::string addr_str;
    std::optional<viaduct::CmChannel> cm;

    std::mutex mu; // everything below
    std::condition_variable cv;
    std::shared_ptr<Ptag> default_ptag;
    std::list<std::shared_ptr<Object>> children; // VIs, CQs, ptags
    std::map<std::uint16_t, std::shared_ptr<Listener>> listeners;
    std::unordered_map<std::uint32_t, std::shared_ptr<Conn>> conns;
    VIP_ERROR_HANDLER handler = nullptr;
    VIP_PVOID handler_context = nullptr;
    bool ns_up = false;
    std::string ns_file;

    std::shared_mutex mem_mu;
    std::map<std::uint32_t, std::shared_ptr<Mem>> mems;
    // Moves on (under mem_mu, written) whenever a region goes or changes its
    // tag, so that what a work queue cached of one is read again.
    std::atomic<std::uint64_t> mem_gen{1};
    std::shared_mutex vi_mu;
    std::unordered_map<std::uint32_t, Vi *> vis; // by QP handle

    int stop_fd = -1;
    std::thread thread;

    std::shared_ptr<Mem> find_mem(std::uint32_t handle) {
        std::shared_lock<std::shared_mutex> g(mem_mu);
        auto it = mems.find(handle);
        return it == mems.end() ? nullptr : it->second;
    }
    // The bounds and tag of the moment of region @handle (VipSetMemAttributes
    // changes the tag under @mem_mu).
    std::optional<MemBounds> mem_bounds(std::uint32_t handle) {
        std::shared_lock<std::shared_mutex> g(mem_mu);
        auto it = mems.find(handle);
        if (it == mems.end())
            return std::nullopt;
        return MemBounds{it->second->addr, it->second->length, it->second->ptag.get()};
    }
    void raise(VIP_ERROR_DESCRIPTOR ed);
    void run();
};

} // namespace vipl
