// SPDX-License-Identifier: GPL-2.0
//
// What the parts of the library share: the handle registry, time, and
// moving a VI to Error.
#pragma once

#include <chrono>
#include <vector>

#include "objects.hpp"

namespace vipl {

using Clock = std::chrono::steady_clock;

// Every live handle of the process. find() takes the lock and returns a
// reference: for the calls that may sleep or that create and destroy.
// peek() takes neither, for the calls of the data path (VipPostSend,
// VipPostRecv, VipSendDone, VipRecvDone, VipCQDone): a handle is found
// with plain loads in an index of the registered addresses, so it costs
// no atomic read-modify-write. A handle the index does not show is looked
// up under the lock before it is refused, so the index may be rebuilt
// while readers probe it. What peek() returns is not kept alive: destroying
// an object while another thread still calls on it is the program's error
// (the guide, 2.3; Documentation/vipl.rst, "Threads").
class Registry {
public:
    Registry();
    void add(const std::shared_ptr<Object> &o);
    void remove(const void *h);
    std::shared_ptr<Object> find(const void *h, Kind k);
    Object *peek(const void *h, Kind k) {
        if (!h || h == tombstone())
            return nullptr;
        const auto &slots = index_.load(std::memory_order_acquire)->slots;
        const std::size_t n = slots.size();
        std::size_t i = home(h, n);
        for (std::size_t probes = 0; probes < n; probes++, i = (i + 1) & (n - 1)) {
            const Object *o = slots[i].load(std::memory_order_acquire);
            if (o == h)
                return o->kind == k ? const_cast<Object *>(o) : nullptr;
            if (!o)
                break;
        }
        return peek_locked(h, k);
    }

    // For the unit tests: slots of the current index.
    std::size_t index_size() const { return index_.load(std::memory_order_relaxed)->slots.size(); }

private:
    // Open addressing, linear probing: a slot holds a registered object, a
    // tombstone (one that was removed) or nothing, which ends a probe.
    struct Index {
        explicit Index(std::size_t n) : slots(n) {
            for (auto &s : slots)
                s.store(nullptr, std::memory_order_relaxed);
        }
        std::vector<std::atomic<const Object *>> slots; // a power of two
    };
    static std::size_t home(const void *h, std::size_t n) noexcept {
        // objects are 16-byte aligned: the bits above, scattered (Fibonacci)
        const std::uint64_t x = (reinterpret_cast<std::uintptr_t>(h) >> 4) * 0x9e3779b97f4a7c15ull;
        return static_cast<std::size_t>(x >> 32) & (n - 1);
    }
    static inline const char tomb_mark = 0; // an address that is no object's
    static const Object *tombstone() noexcept {
        return reinterpret_cast<const Object *>(&tomb_mark);
    }
    // Not in the index: no handle, or one a rebuild moved. The map decides.
    Object *peek_locked(const void *h, Kind k);
    // Under @mu.
    void index_insert(const Object *o);
    void index_rebuild(std::size_t n);

    std::mutex mu;
    std::unordered_map<const void *, std::shared_ptr<Object>> map;
    std::atomic<Index *> index_{nullptr};
    // Every index made: a reader may still probe one that was replaced.
    // They double in size, so all of them hold no more than twice the slots
    // of the current one.
    std::vector<std::unique_ptr<Index>> indexes_;
    std::size_t filled_ = 0; // slots of the current index not empty
};

[[gnu::always_inline]] inline Registry &registry() {
    static Registry *const r = new Registry; // used by threads until exit
    return *r;
}

// VIP_INFINITE (and anything beyond a year): never.
Clock::time_point deadline_of(VIP_ULONG timeout);
std::chrono::milliseconds until(Clock::time_point deadline);

void fail_vi(Vi &vi, bool lost = false);
void async_error(Vi &vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *desc, bool recv);
VIP_VI_STATE vi_state(Vi &vi);
bool vi_idle(Vi &vi);
void unhook_vi(Vi &vi);
void close_nic(Nic &nic);
void drain(WorkQueue &wq);

} // namespace vipl
