// SPDX-License-Identifier: GPL-2.0
//
// The object model of libviaduct-itapi: the handle table, the IT-API
// objects (IA, PZ, EVD, LMR, RMR, EP, S-RQ) over libviaduct's native core,
// and the internal interfaces the connection side (cm*.cpp, tdi*.cpp) uses
// to queue its events and move endpoints between states.
//
// Handles. An it_*_handle_t is not a pointer: it encodes a slot of one
// process-wide table and that slot's generation, so a stale or forged
// handle is refused (lookup() returns null) without touching freed memory.
// Lookups take no lock. Objects are created and destroyed under their IA's
// lock; destroying an object while another thread uses it is the
// consumer's error (IT-API: destructors are not thread-safe).
//
// Posts take no lock of the EP's: the document's "efficiently thread-safe"
// model makes the consumer serialise the posts to one EP (Documentation/
// itapi.rst, "Thread safety"). A send-queue post and a receive post touch
// disjoint state and may run at the same time. What a post shares with the
// completion side, the EP's shadow rings, is a one-producer, one-consumer
// ring each (the retired counters), and an EP a completion names is kept
// alive by its DTO SEVD's lock, which the EP's destructor takes.
//
// Locks, outermost first: Ia::lock; the lock of a DTO EVD (an AEVD's before
// its members'); Ia::map_lock; Ep::lock; the lock of any other EVD (CM_REQ,
// CM_MSG, SOFTWARE); Ia::async_lock; the AFF SEVD's; the UNAFF SEVD's. A function that queues a
// non-DTO event takes that EVD's lock only, so it may be called with an
// EP's lock held. The handlers of Ia::add_source() run with none of these
// held and may take any of them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <it_api.h>
#include <viaduct/viaduct.hpp>

#include "wait_lock.hpp"

namespace itapi {

// The lock of an EVD: every dequeue takes it (event harvesting is
// thread-safe in every model of the document).
using EvdLock = viaduct::face::WaitLock;

// The versions of the document this library implements.
inline constexpr std::uint32_t api_major = 2;
inline constexpr std::uint32_t api_minor = 1;

enum class Kind : std::uint8_t {
    Addr = IT_HANDLE_TYPE_ADDR,
    Ep = IT_HANDLE_TYPE_EP,
    Evd = IT_HANDLE_TYPE_EVD,
    Ia = IT_HANDLE_TYPE_IA,
    Listen = IT_HANDLE_TYPE_LISTEN,
    Lmr = IT_HANDLE_TYPE_LMR,
    Pz = IT_HANDLE_TYPE_PZ,
    Rmr = IT_HANDLE_TYPE_RMR,
    UdSvcReq = IT_HANDLE_TYPE_UD_SVC_REQ,
    Srq = IT_HANDLE_TYPE_SRQ,
};

struct Ia;

// What every handle names. Subclasses declare `static constexpr Kind kind`.
struct Object {
    Object(Kind k, Ia *owner) : type(k), ia(owner) {}
    Object(const Object &) = delete;
    Object &operator=(const Object &) = delete;
    virtual ~Object();

    const Kind type;
    Ia *const ia;                        // the IA it belongs to (itself for an IA)
    it_handle_t handle = nullptr;        // its entry in the handle table
    std::list<Object *>::iterator pos{}; // in ia->objects

    // it_set/get_consumer_context
    std::mutex context_lock;
    bool context_set = false;
    it_context_t context{};
};

// The process-wide handle table: up to 2^24 live objects. A lookup is
// inline: it is on every post and every dequeue.
class HandleTable {
public:
    static HandleTable &instance() noexcept {
        static HandleTable table;
        return table;
    }

    // A handle for @obj (stored in obj->handle); nullptr if the table is full.
    it_handle_t insert(Object *obj);
    // Retires @h: lookups of it fail from now on, and its slot is reused
    // under another generation.
    void erase(it_handle_t h) noexcept;
    // The live object of @h, or nullptr. No lock.
    Object *find(it_handle_t h) const noexcept;

    // handle = generation << index_bits | (index + 1): never null, and a
    // retired handle differs from every later one of its slot for 2^32
    // reuses.
    static constexpr unsigned index_bits = 24;
    static constexpr unsigned chunk_bits = 10;
    static constexpr std::size_t chunk_size = std::size_t{1} << chunk_bits;
    static constexpr std::size_t max_chunks = std::size_t{1} << (index_bits - chunk_bits);
    static constexpr std::uint64_t index_mask = (std::uint64_t{1} << index_bits) - 1;

private:
    struct Slot {
        std::atomic<std::uint32_t> gen{1};
        std::atomic<Object *> obj{nullptr};
    };
    HandleTable() = default;

    std::mutex lock_; // insert and erase
    std::unique_ptr<std::atomic<Slot *>[]> chunks_ { new std::atomic<Slot *>[ max_chunks ]() };
    std::vector<std::uint32_t> free_; // indices
    std::size_t used_ = 0;            // slots handed out so far
};

inline Object *HandleTable::find(it_handle_t h) const noexcept {
    auto v = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(h));
    std::uint64_t low = v & index_mask;
    std::uint64_t gen = v >> index_bits;
    if (low == 0 || gen == 0 || gen > UINT32_MAX)
        return nullptr;
    auto index = static_cast<std::uint32_t>(low - 1);
    Slot *chunk = chunks_[index >> chunk_bits].load(std::memory_order_acquire);
    if (chunk == nullptr)
        return nullptr;
    const Slot &slot = chunk[index % chunk_size];
    // the generation, the object, the generation again: an erase() in
    // between (which changes the generation first) makes it fail
    if (slot.gen.load(std::memory_order_acquire) != gen)
        return nullptr;
    Object *obj = slot.obj.load(std::memory_order_acquire);
    if (slot.gen.load(std::memory_order_acquire) != gen)
        return nullptr;
    return obj;
}

// The object of type T that @h names, or nullptr. Inlined: every post and
// dequeue looks up its handles.
template <class T> [[gnu::always_inline]] inline T *lookup(const void *h) noexcept {
    Object *o = HandleTable::instance().find(const_cast<void *>(h));
    return o != nullptr && o->type == T::kind ? static_cast<T *>(o) : nullptr;
}

// Typed handles of an object.
template <class H> H handle_of(const Object *o) noexcept {
    return o != nullptr ? static_cast<H>(o->handle) : nullptr;
}

// Translates the core's exceptions: viaduct::Error's errno, std::bad_alloc.
it_status_t status_of_errno(int err, it_status_t fallback) noexcept;
it_status_t status_of_exception(const std::exception &e, it_status_t fallback) noexcept;

struct Evd;
struct Ep;
struct Srq;
// The connection side's per-IA state (its CM channel, listen points),
// defined by the connection side.
struct IaCm;

// ----------------------------------------------------------------------------
// Interface Adapter

struct Ia : Object {
    static constexpr Kind kind = Kind::Ia;

    Ia(viaduct::Device device, std::string ia_name);
    ~Ia() override;

    viaduct::Device dev;
    std::string name; // as given to it_ia_create
    viaduct::DeviceAttributes attr;

    // Objects of this IA in creation order (it_ia_free frees them in
    // reverse), EPs by their QP's handle (asynchronous events name QPs;
    // completions find theirs in their SEVD, Evd::eps), S-RQs by theirs.
    // Under @lock.
    std::mutex lock;
    std::list<Object *> objects;
    std::mutex map_lock; // the maps below; held while the EPs found are used
    std::unordered_map<std::uint32_t, Ep *> eps_by_qp;
    std::unordered_map<std::uint32_t, Srq *> srqs_by_handle;
    std::unordered_map<std::uint32_t, Object *> mr_by_index; // STag >> 8: LMR or RMR
    // The one ASYNC_AFF and ASYNC_UNAFF SEVDs, if any, under @async_lock
    // (held while an event is queued on them: it_evd_free takes it).
    std::mutex async_lock;
    Evd *aff_evd = nullptr;
    Evd *unaff_evd = nullptr;
    std::vector<it_ia_info_t *> infos; // it_ia_query's, freed by it_ia_free
    std::shared_ptr<IaCm> cm;          // the connection side's; opaque here
    // The device failed or was removed: every call but it_ia_free answers
    // IT_ERR_IA_CATASTROPHE.
    std::atomic<bool> catastrophe{false};
    std::atomic<std::uint32_t> key_counter{1}; // STag keys of new registrations

    // WRs posted with IT_NOTIFY_FLAG whose completion has not been taken
    // yet (on any queue: an S-RQ's receive may complete on any EP's EVD).
    // While there are any, an EVD's waiter arms its CQ for the next
    // completion instead of moderately, since the kernel cannot tell which
    // completion carries the flag. It only ever errs high (a WR dropped by
    // it_ep_reset is never counted down), which costs wakeups, never an
    // event. @threshold_sleepers: how many waiters are asleep on a
    // moderated arm, @sleepers which SEVDs they wait on (under
    // @sleepers_lock, a leaf lock: a post takes it under its queue's).
    std::atomic<std::uint32_t> notify_pending{0};
    std::atomic<std::uint32_t> threshold_sleepers{0};
    std::mutex sleepers_lock;
    std::vector<Evd *> sleepers;

    // Registers a newly made object (handle and list); false if the handle
    // table is full (IT_ERR_RESOURCES). unlink() undoes it.
    bool adopt(Object *obj);
    void unlink(Object *obj) noexcept;

    // The progress thread: it reads the device's asynchronous events (and
    // turns them into AFF/UNAFF events and broken connections) and calls
    // the handlers of added sources when their descriptor is readable.
    // The connection side adds its CM channel here. A handler runs on the
    // progress thread, one at a time, and must not block. remove_source()
    // returns once the handler is not running and will not run again.
    void add_source(int fd, std::function<void()> handler);
    void remove_source(int fd);
    void stop_progress() noexcept; // it_ia_free: before the children go

private:
    void progress_loop();
    void on_async_event(const viaduct::AsyncEvent &ev);

    struct Source {
        int fd;
        std::function<void()> handler;
    };
    std::mutex sources_lock_;
    std::vector<std::shared_ptr<Source>> sources_;
    int epoll_fd_ = -1;
    int wake_fd_ = -1; // eventfd: stop, or the source list changed
    std::atomic<bool> stopping_{false};
    std::thread progress_;
    std::thread::id progress_id_{};
};

// The IA of @o failed (IT_ERR_IA_CATASTROPHE). An EVD made without an IA
// (the unit tests' software EVDs) never does.
inline bool catastrophic(const Object &o) noexcept {
    return o.ia != nullptr && o.ia->catastrophe.load(std::memory_order_relaxed);
}

// ----------------------------------------------------------------------------
// Protection Zone

struct Pz : Object {
    static constexpr Kind kind = Kind::Pz;
    Pz(Ia *owner, viaduct::ProtectionDomain domain) : Object(kind, owner), pd(std::move(domain)) {}

    viaduct::ProtectionDomain pd;
    std::atomic<std::uint32_t> refs{0}; // LMRs, RMRs, EPs, S-RQs: IT_ERR_PZ_BUSY
};

// ----------------------------------------------------------------------------
// Event Dispatchers

// The stream of an event number (IT_EVENT_STREAM_MASK).
constexpr it_event_type_t stream_of(it_event_type_t ev) noexcept {
    return static_cast<it_event_type_t>(ev & IT_EVENT_STREAM_MASK);
}

struct Evd : Object {
    static constexpr Kind kind = Kind::Evd;
    Evd(Ia *owner, it_event_type_t stream, it_evd_flags_t flags, std::size_t queue_size,
        std::size_t threshold);
    ~Evd() override;

    const it_event_type_t stream; // *_EVENT_STREAM; AEVD_NOTIFICATION for an AEVD
    bool aggregate() const noexcept { return stream == IT_AEVD_NOTIFICATION_EVENT_STREAM; }
    it_evd_flags_t flags;

    EvdLock lock;                   // taken by every dequeue
    std::condition_variable_any cv; // waiters other than the one in the kernel
    std::size_t queue_size;         // capacity of @queue (and of the CQ for DTO)
    std::size_t threshold;          // IT_THRESHOLD_DISABLE: notification only
    Evd *aevd = nullptr;            // the AEVD this SEVD feeds, if any
    std::vector<Evd *> members;     // an AEVD's SEVDs
    std::size_t next_member = 0;    // an AEVD's round-robin start
    bool enabled = true;
    bool overflowed = false;
    bool overflow_armed = true; // an overflow raises SEVD_ENQUEUE_FAILURE
    bool aevd_notified = false; // an AEVD_NOTIFICATION for it is out
    unsigned waiters = 0;
    bool sleeper = false;      // a waiter sleeps in the kernel (poll on @wait_fd)
    bool freeing = false;      // it_evd_free / it_ia_free: waiters return ABORT
    std::uint32_t sources = 0; // EPs, listen points, S-RQs feeding it: EVD_BUSY

    // Events taken from their source and not dequeued yet, oldest first,
    // each with its notification bit. A ring of @queue_size slots, never
    // grown: queueing allocates nothing.
    struct Entry {
        it_event_t ev;
        bool notify;
    };
    std::vector<Entry> queue;
    std::size_t head = 0, count = 0, notify_count = 0;

    // DTO stream: the CQ the EPs' queues complete on, its channel.
    std::optional<viaduct::CompletionChannel> channel;
    std::optional<viaduct::CompletionQueue> cq;
    bool cq_armed = false;
    bool cq_moderated = false; // the pending arm is a moderated one
    // a waiter sleeps on a moderated arm: a post with IT_NOTIFY_FLAG, or
    // a dequeuer taking completions from the ring, makes it re-arm
    std::atomic<bool> moderated_sleeper{false};
    bool cq_broken = false; // the CQ overflowed: every EP on it is broken

    // DTO stream: the EPs whose queues complete on the CQ, by their QP's
    // handle (a completion names its QP), and the last one found. An EP
    // is added at creation and removed by its destructor, both under
    // @lock: an EP found under it lives until it is released.
    std::unordered_map<std::uint32_t, Ep *> eps;
    std::uint32_t last_qp = 0;
    Ep *last_ep = nullptr;
    Ep *ep_of_qp(std::uint32_t qp_handle) noexcept {
        if (last_ep != nullptr && last_qp == qp_handle)
            return last_ep;
        auto it = eps.find(qp_handle);
        if (it == eps.end())
            return nullptr;
        last_qp = qp_handle;
        last_ep = it->second;
        return last_ep;
    }
    void forget_ep(std::uint32_t qp_handle) noexcept {
        eps.erase(qp_handle);
        if (last_qp == qp_handle)
            last_ep = nullptr;
    }

    // Readable when this EVD (or for an AEVD, any member) has an event to
    // notify: an epoll descriptor over the CQ channel and @event_fd. Given
    // out by it_evd_create with IT_EVD_CREATE_FD.
    int wait_fd = -1;
    int event_fd = -1;                        // eventfd written when an event is queued in software
    std::atomic<bool> event_signalled{false}; // event_fd may be readable
    int user_fd = -1;                         // the consumer's copy of wait_fd (IT_EVD_CREATE_FD)
};

// Queues @ev (a DTO completion, evd field set) with its notification bit;
// the caller holds evd.lock and checked the room.
void evd_push(Evd &evd, const it_event_t &ev, bool notify) noexcept;

// The same in two steps, the event built in place: the slot at the tail,
// then its queueing. (head < size and count <= size: no division.)
inline Evd::Entry &evd_tail_entry(Evd &e) noexcept {
    std::size_t i = e.head + e.count;
    if (i >= e.queue.size())
        i -= e.queue.size();
    return e.queue[i];
}

inline it_event_t &evd_tail(Evd &e) noexcept {
    return evd_tail_entry(e).ev;
}

inline void evd_commit(Evd &e, bool notify) noexcept {
    evd_tail_entry(e).notify = notify;
    e.count++;
    if (notify)
        e.notify_count++;
    e.aevd_notified = false;
}

// Takes the completions of a DTO SEVD's CQ into its queue (while there is
// room), translated into IT-API events; an error completion breaks its EP's
// connection. With @direct (the caller's event; the queue must be empty)
// the first completion is translated straight into it and not queued:
// returns whether it was. The caller holds evd.lock.
bool evd_fill(Evd &evd, it_event_t *direct = nullptr);

// The CQ of a DTO SEVD overflowed: the SEVD is overflowed for good, every
// EP on it is broken (and cannot be reset), and SEVD_ENQUEUE_FAILURE is
// raised if its flags say so. The caller holds evd.lock (and not
// Ia::map_lock).
void evd_dto_overflow(Evd &evd);

// A WR with IT_NOTIFY_FLAG is about to be posted (before the post, so that
// its completion cannot be taken first): counted, and waiters asleep on a
// moderated arm look again. notify_unposted() undoes it for a failed post.
void notify_posted(Ia &ia) noexcept;
void notify_unposted(Ia &ia) noexcept;

// it_evd_free and it_ia_free: waiters return IT_ERR_ABORT; returns once
// none is left.
void evd_abort_waiters(Evd &evd) noexcept;

// Queues @ev (its evd field is set here) on @evd, a SEVD of @ev's stream,
// under the stream's overflow rule (B.3.5): a full CM_REQ SEVD drops it
// silently, a full CM_MSG or AFF one drops it and raises
// SEVD_ENQUEUE_FAILURE on the AFF SEVD (auto-reset once room frees up), a
// full UNAFF one drops it silently. Wakes waiters and, for an SEVD that
// feeds an AEVD, the AEVD. Returns false if the event was dropped.
// Non-DTO events are notification events. Takes the EVD's lock only.
bool evd_enqueue(Evd &evd, const it_event_t &ev);

// An affiliated event (IT_ASYNC_AFF_*) about @cause on the IA's AFF SEVD,
// if there is one (dropped otherwise, as the document says).
void raise_affiliated(Ia &ia, it_event_type_t type, Ep *ep, Srq *srq, Evd *sevd);

// ----------------------------------------------------------------------------
// Memory

struct Lmr : Object {
    static constexpr Kind kind = Kind::Lmr;
    Lmr(Ia *owner, Pz *zone) : Object(kind, owner), pz(zone) {}
    ~Lmr() override;

    Pz *pz;
    std::optional<viaduct::MemoryRegion> mr;
    // mr's STag, as posts put it in their SGEs: read without a lock while
    // it_lmr_modify may re-register (a post of the old one fails on it)
    std::atomic<std::uint32_t> lkey{0};
    // A relative LMR with remote rights: the type-1 window, bound zero-based
    // over the whole region, whose STag is the rmr_context.
    std::optional<viaduct::MemoryWindow> rel_mw;
    std::uint32_t context_stag = 0; // host order: mr's STag, or rel_mw's
    void *addr = nullptr;
    it_length_t length = 0;
    it_mem_priv_t privs = IT_PRIV_NONE;
    it_lmr_flag_t flags = IT_LMR_FLAG_NONE;
    it_addr_mode_t addr_mode = IT_ADDR_MODE_ABSOLUTE;
    std::uint32_t shared_id = 0;
    std::atomic<std::uint32_t> links{0}; // RMRs linked to it: IT_ERR_LMR_BUSY
};

struct Rmr : Object {
    static constexpr Kind kind = Kind::Rmr;
    Rmr(Ia *owner, Pz *zone, it_rmr_type_t t) : Object(kind, owner), pz(zone), rmr_type(t) {}
    ~Rmr() override;

    Pz *pz;
    it_rmr_type_t rmr_type; // NARROW (a type-2 window) or WIDE (type 1)
    std::optional<viaduct::MemoryWindow> mw;
    // The last link posted, as it_rmr_query reports it.
    std::mutex lock;
    bool linked = false;
    Lmr *lmr = nullptr; // and its handle: used only while that still names it
    it_lmr_handle_t lmr_handle = nullptr;
    Ep *ep = nullptr; // a narrow RMR's EP while linked: IT_ERR_EP_BUSY
    it_ep_handle_t ep_handle = nullptr;
    void *addr = nullptr;
    it_length_t length = 0;
    it_mem_priv_t privs = IT_PRIV_NONE;
    it_addr_mode_t addr_mode = IT_ADDR_MODE_ABSOLUTE;
    it_rmr_context_t context = 0; // network byte order
};

// An RMR's link or unlink moved it (or the peer's Send with Invalidate
// did): its LMR and (narrow) EP references go. Caller holds rmr.lock.
void rmr_let_go(Rmr &rmr) noexcept;

// ----------------------------------------------------------------------------
// Endpoints and shared receive queues

// What a posted WR comes back as: its slot in the shadow of its queue, so
// that the core's wr_id names the slot and the completion finds the
// consumer's cookie and flags. Sized at creation; posting allocates nothing.
struct WrShadow {
    it_dto_cookie_t cookie = 0;
    it_dto_flags_t flags{};
    it_event_type_t event{};  // the completion event's number
    Object *unlink = nullptr; // the LMR/RMR a completion reports as unlinked
    Rmr *rmr = nullptr;       // link/unlink: the RMR whose state completes
};

struct Srq : Object {
    static constexpr Kind kind = Kind::Srq;
    Srq(Ia *owner, Pz *zone) : Object(kind, owner), pz(zone) {}
    ~Srq() override;

    Pz *pz;
    std::optional<viaduct::SharedReceiveQueue> srq;
    std::size_t max_recv_dtos = 0, max_recv_segs = 0;
    std::size_t low_watermark = 0;
    std::atomic<std::uint32_t> eps{0}; // EPs on it: IT_ERR_SRQ_BUSY
    // Receives complete in any order: a free list of shadow slots.
    std::mutex lock;
    std::vector<WrShadow> shadow;
    std::vector<std::uint32_t> free_slots;
    std::vector<viaduct::Sge> sge; // scratch for posts, under @lock
};

// One EP's connection-side state, defined by the connection side.
struct EpCm;

struct Ep : Object {
    static constexpr Kind kind = Kind::Ep;
    Ep(Ia *owner, Pz *zone) : Object(kind, owner), pz(zone) {}
    ~Ep() override;

    Pz *pz;
    Evd *request_evd = nullptr, *recv_evd = nullptr, *connect_evd = nullptr;
    Srq *srq = nullptr;
    it_ep_rc_creation_flags_t create_flags = IT_EP_NO_FLAG;
    it_ep_attributes_t attr{}; // as allocated (it_ep_query)
    std::optional<viaduct::QueuePair> qp;

    // The state and everything of the connection. state is written under
    // @lock and read without it by posts.
    std::mutex lock;
    std::atomic<it_ep_state_rc_t> state{IT_EP_STATE_UNCONNECTED};
    // The QP was seen in Error while NONOPERATIONAL: it stays there until
    // it_ep_reset, so posts need not look again (flush_idle_qp).
    std::atomic<bool> qp_in_error{false};
    size_t spigot_id = 0;
    it_path_t dst_path{};
    bool dto_overflow = false; // its DTO SEVD overflowed: IT_ERR_CANNOT_RESET
    std::shared_ptr<EpCm> cm;  // the connection side's; shared_ptr: opaque here

    // Send queue: slots in post order; a completion retires its WR and
    // every earlier one (completion suppression). Receive queue likewise
    // (receives complete in order); with an S-RQ, its shadow is used.
    // The posts to a queue are the consumer's to serialise (see the top of
    // this file); @sq_posted and @rq_posted are theirs. A shadow has a
    // power of two slots (a mask, not a division, finds a WR's), of which
    // at most @sq_limit (max_request_dtos) and @rq_limit (max_rcv_dtos)
    // are in use.
    std::vector<WrShadow> sq, rq;
    std::uint64_t sq_mask = 0, rq_mask = 0;
    std::uint64_t sq_limit = 0, rq_limit = 0;
    std::uint64_t sq_posted = 0, rq_posted = 0;
    std::atomic<std::uint64_t> sq_retired{0}, rq_retired{0}; // by the DTO SEVDs
    std::size_t qp_max_msg = 0;                              // the QP's message size limit
    // Scratch SGE arrays of max segments, filled by posts: posting
    // allocates nothing.
    std::vector<viaduct::Sge> sq_sge, rq_sge;
    // The core's wr_id is epoch << 48 | sequence: completions of WRs posted
    // before an it_ep_reset are recognised and dropped.
    std::atomic<std::uint16_t> epoch{0};
    std::atomic<std::uint32_t> narrow_rmrs{0}; // narrow RMRs linked through it (EP_BUSY)
};

// Moves @ep from one of the states in @from to @to and then, if @ev is not
// null, queues *@ev (ep field set to @ep) on @evd (the EP's connect SEVD
// when @evd is null), all under the EP's lock: a consumer that dequeues the
// event sees the new state (B.3.2). Returns false, changing and queueing
// nothing, if the state is not in @from. Leaving CONNECTED for
// NONOPERATIONAL flushes the QP (it goes to Error).
bool ep_transition(Ep &ep, std::initializer_list<it_ep_state_rc_t> from, it_ep_state_rc_t to,
                   const it_event_t *ev, Evd *evd = nullptr);

// The connection broke (error completion, affiliated error, CQ overflow):
// CONNECTED (or a pending state) -> NONOPERATIONAL with one
// IT_CM_MSG_CONN_BROKEN_EVENT. Does nothing if it is not connected or
// connecting, so it never queues a second event for one transition.
void ep_break(Ep &ep);

// it_ep_reset's part of the EP: the QP back to Idle (from Error) with its
// queues empty, the shadows emptied and the epoch advanced. The caller
// holds ep.lock and has checked the state.
it_status_t ep_reset_queues(Ep &ep);

// Sets up the QP's queue-pair attributes for a connection: ORD/IRD and the
// RDMA enables of ep.attr (used by the connection side before connecting
// or accepting).
void ep_apply_rdma_attributes(Ep &ep);

} // namespace itapi
