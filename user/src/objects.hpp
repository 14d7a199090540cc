// SPDX-License-Identifier: GPL-2.0
// The shared states behind ProtectionDomain, MemoryRegion, CompletionChannel,
// CompletionQueue and QueuePair. Each holds its parents' states, so the
// kernel object it names is destroyed only after every object made with it,
// and the context's descriptor stays open until the last one is gone.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include <viaduct/viaduct.hpp>

#include "device_state.hpp"
#include "file_descriptor.hpp"
#include "ring.hpp"

namespace viaduct {

namespace detail {

// A shared mapping of one ring or doorbell page, unmapped exactly once.
class Mapping {
public:
    Mapping() noexcept = default;
    // mmap(PROT_READ | PROT_WRITE, MAP_SHARED) of @key; Error on failure,
    // naming @what.
    Mapping(int fd, std::uint64_t key, std::size_t size, const std::string &what);
    Mapping(const Mapping &) = delete;
    Mapping &operator=(const Mapping &) = delete;
    Mapping(Mapping &&other) noexcept;
    Mapping &operator=(Mapping &&other) noexcept;
    ~Mapping();

    std::byte *data() const noexcept { return static_cast<std::byte *>(addr_); }
    std::size_t size() const noexcept { return size_; }

private:
    void reset() noexcept;

    void *addr_ = nullptr;
    std::size_t size_ = 0;
    // A child of fork() does not inherit the mapping (VM_DONTCOPY): its
    // range may hold something else there, which is not unmapped.
    std::uint64_t generation_ = 0;
};

// The object's own lock, or none for one its user serialises.
inline std::unique_lock<std::mutex> lock_unless(std::mutex &m, bool single_threaded) {
    return single_threaded ? std::unique_lock<std::mutex>(m, std::defer_lock)
                           : std::unique_lock<std::mutex>(m);
}

// Whether the object of @s belongs to the parent of this child of fork().
template <class S> bool inherited(const S &s) noexcept {
    if constexpr (requires { s.dev; })
        return s.dev && s.dev->inherited();
    else if constexpr (requires { s.pd; })
        return s.pd && s.pd->dev && s.pd->dev->inherited();
    else
        return false;
}

// The state of a handle object; Error(EBADF) for a moved-from one and
// Error(EPERM) for one inherited across fork(). No reference is taken: the
// caller's object holds one.
template <class S> S &checked(const std::shared_ptr<S> &state, const char *type) {
    if (!state)
        throw Error(EBADF, std::string("viaduct::") + type + " used after it was moved from");
    if (inherited(*state))
        throw inherited_error(type);
    return *state;
}

// DESTROY_* of a handle from a destructor: errors are ignored, since the
// kernel frees whatever is left when the context closes. Nothing to do for
// a state whose construction failed before it had a context or a handle,
// nor in a child of fork(), where the handle is the parent's.
void destroy_handle(const Device::State *dev, unsigned long cmd, std::uint32_t handle) noexcept;

// Reads one record of @size bytes from the non-blocking @fd into @buf,
// waiting up to @timeout (negative: for ever). False on timeout.
bool read_record(int fd, void *buf, std::size_t size, std::chrono::milliseconds timeout,
                 const std::string &what);

// Whether @id's channel maps its handle to its state: the entry the
// channel's events are matched with (a check for the tests).
bool cm_id_registered(const ConnectionId &id);

} // namespace detail

// The states are the library's own business: none of their members is
// exported, although their enclosing classes are.
#define VIADUCT_LOCAL __attribute__((visibility("hidden")))

struct VIADUCT_LOCAL ProtectionDomain::State {
    std::shared_ptr<Device::State> dev;
    std::uint32_t handle = 0;

    ~State();
};

struct VIADUCT_LOCAL MemoryRegion::State {
    std::shared_ptr<ProtectionDomain::State> pd;
    std::uint32_t handle = 0;
    std::uint32_t stag = 0;
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
    std::uint32_t access = 0;

    ~State();
};

struct VIADUCT_LOCAL MemoryWindow::State {
    std::shared_ptr<ProtectionDomain::State> pd;
    std::uint32_t handle = 0;
    std::uint32_t stag = 0;
    MwType type = MwType::Type1;
    // The region of the binding bind() made: deregistered only after the
    // window lets go of it (the kernel refuses it while bound).
    std::shared_ptr<MemoryRegion::State> region;

    ~State();
};

struct VIADUCT_LOCAL CompletionChannel::State {
    std::shared_ptr<Device::State> dev;
    detail::FileDescriptor fd;
    // Events read by CompletionQueue::wait() for another CQ, kept for the
    // next reader.
    std::mutex lock;
    std::deque<CqEvent> pending;

    // An event from @pending, for @cq_handle only if it is not 0.
    std::optional<CqEvent> take_pending(std::uint32_t cq_handle);
};

struct VIADUCT_LOCAL CompletionQueue::State {
    std::shared_ptr<Device::State> dev;
    std::shared_ptr<CompletionChannel::State> channel; // may be null
    std::uint32_t handle = 0;
    std::uint64_t user_data = 0;
    bool single_threaded = false; // no lock taken

    std::unique_lock<std::mutex> guard() { return detail::lock_unless(lock, single_threaded); }

    // Serialises poll, wait and resize: the ring and its mapping change in
    // a resize, and the consumer index has one writer.
    std::mutex lock;
    detail::Mapping map;
    detail::CompletionRing ring;

    // The ring the kernel switched to in a RESIZE_CQ whose mmap failed: the
    // old ring is never written again, so nothing is polled until this one
    // is mapped (retried by the next poll, which throws if it fails again).
    struct NewRing {
        std::uint64_t key = 0;
        std::uint64_t size = 0;
        std::uint32_t entries = 0;
    };
    std::optional<NewRing> unmapped;

    // The ring, mapping the resized one first if a resize left it unmapped.
    detail::CompletionRing &current_ring();

    ~State();
};

struct VIADUCT_LOCAL SharedReceiveQueue::State {
    std::shared_ptr<Device::State> dev;
    std::shared_ptr<ProtectionDomain::State> pd;
    std::uint32_t handle = 0;
    std::uint32_t depth = 0;
    std::uint32_t max_sge = 0;
    bool single_threaded = false;

    detail::Mapping map;
    std::mutex lock; // posting
    detail::WorkRing ring;
    detail::WqeLimits limits;

    ~State();
};

struct VIADUCT_LOCAL QueuePair::State {
    std::shared_ptr<Device::State> dev;
    std::shared_ptr<ProtectionDomain::State> pd;
    std::shared_ptr<CompletionQueue::State> send_cq; // null: private ring
    std::shared_ptr<CompletionQueue::State> recv_cq;
    std::shared_ptr<SharedReceiveQueue::State> srq; // null: an RQ of its own
    std::uint32_t handle = 0;
    QpCaps caps;

    detail::Mapping db_map, sq_map, rq_map, scq_map, rcq_map;
    viaduct_doorbell *db = nullptr;

    // One per work queue, each on cache lines of its own: the send and
    // receive sides share nothing that is written.
    struct alignas(VIADUCT_CACHELINE) Queue {
        std::mutex lock;
        detail::WorkRing ring;
        detail::WqeLimits limits;
    };
    Queue sq, rq;

    struct alignas(VIADUCT_CACHELINE) PrivateRing {
        std::mutex lock;
        detail::CompletionRing ring;
    };
    PrivateRing scq, rcq;

    std::atomic<std::uint64_t> doorbells{0};

    ~State();
};

} // namespace viaduct
