// SPDX-License-Identifier: GPL-2.0
//
// WaitLock, the lock the API faces take on their data path: libvipl's work
// queues (QueueLock) and libviaduct-itapi's EVDs (EvdLock). Every post, Done
// and dequeue takes one, so its uncontended path is inline and makes one
// atomic read-modify-write: lock() is a compare-and-swap, unlock() a store,
// a fence and a load. std::mutex makes two, each in a call into libc; under
// binary translation (QEMU TCG) an atomic read-modify-write is a helper
// call, and every call, return and PLT jump an indirect branch looked up at
// run time. A lock() that finds it held spins briefly, then sleeps
// (std::atomic::wait, a futex); unlock() wakes a sleeper only when one has
// announced itself. Lockable, so std::lock_guard, std::unique_lock and
// std::scoped_lock take it, and std::condition_variable_any waits with it.
//
// Header-only, for the faces only (not installed, not part of libviaduct's
// API): each face library compiles its own copy.
#pragma once

#include <atomic>
#include <cstdint>

namespace viaduct::face {

// A full fence: stores before it are visible before loads after it. On x86
// an mfence, not the locked read-modify-write of the stack that compilers
// emit for a sequentially consistent fence (a helper call under binary
// translation; an mfence is a host fence).
[[gnu::always_inline]] inline void full_fence() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    std::atomic_signal_fence(std::memory_order_seq_cst);
    __builtin_ia32_mfence();
    std::atomic_signal_fence(std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

class WaitLock {
public:
    WaitLock() = default;
    WaitLock(const WaitLock &) = delete;
    WaitLock &operator=(const WaitLock &) = delete;

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
    // A holder keeps the lock for one post, one poll or one dequeue: worth
    // a short spin before sleeping.
    [[gnu::noinline]] void lock_slow() noexcept {
        for (int i = 0; i < 64; i++) {
            if (held_.load(std::memory_order_relaxed) == 0 && try_lock())
                return;
        }
        sleepers_.fetch_add(1, std::memory_order_relaxed);
        for (;;) {
            // pairs with the fence in unlock()
            full_fence();
            if (try_lock())
                break;
            held_.wait(1, std::memory_order_relaxed);
        }
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }

    std::atomic<std::uint32_t> held_{0};     // 1: held
    std::atomic<std::uint32_t> sleepers_{0}; // lock()s that may sleep on held_
};

} // namespace viaduct::face
