// SPDX-License-Identifier: GPL-2.0
//
// EvdLock, the lock of an EVD. Every dequeue takes it (event harvesting is
// thread-safe in every model of the document), so its uncontended path is
// inline and makes one atomic read-modify-write: lock() is a
// compare-and-swap, unlock() a store, a fence and a load. std::mutex makes
// two, each in a call into libc; under binary translation (QEMU TCG) an
// atomic read-modify-write is a helper call, and every call, return and PLT
// jump an indirect branch looked up at run time. A lock() that finds it
// held spins briefly, then sleeps (std::atomic::wait, a futex); unlock()
// wakes a sleeper only when one has announced itself. Lockable, so
// std::lock_guard, std::unique_lock and std::scoped_lock take it, and
// std::condition_variable_any waits with it.
#pragma once

#include <atomic>
#include <cstdint>

namespace itapi {

// A full fence: stores before it are visible before loads after it. On
// x86 an mfence, not the locked read-modify-write of the stack that
// compilers emit for a sequentially consistent fence (a helper call under
// binary translation; an mfence is a host fence).
[[gnu::always_inline]] inline void full_fence() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    std::atomic_signal_fence(std::memory_order_seq_cst);
    __builtin_ia32_mfence();
    std::atomic_signal_fence(std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

class EvdLock {
public:
    EvdLock() = default;
    EvdLock(const EvdLock &) = delete;
    EvdLock &operator=(const EvdLock &) = delete;

    [[gnu::always_inline]] bool try_lock() noexcept {
        std::uint32_t free = 0;
        return held_.compare_exchange_strong(free, 1, std::memory_order_acquire,
                                             std::memory_order_relaxed);
    }
    [[gnu::always_inline]] void lock() noexcept {
        if (!try_lock())
            lock_slow();
    }
    [[gnu::always_inline]] void unlock() noexcept {
        held_.store(0, std::memory_order_release);
        // Pairs with the fence in lock_slow(): either this load sees the
        // sleeper announced, or the sleeper's next look sees the lock free.
        full_fence();
        if (sleepers_.load(std::memory_order_relaxed) != 0)
            held_.notify_one();
    }

private:
    void lock_slow() noexcept;

    std::atomic<std::uint32_t> held_{0};     // 1: held
    std::atomic<std::uint32_t> sleepers_{0}; // lock()s that may sleep on held_
};

} // namespace itapi
