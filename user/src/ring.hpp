// SPDX-License-Identifier: GPL-2.0
// The library's side of the shared rings (Documentation/rings.rst): index
// arithmetic, reading a completion ring, filling a work ring and encoding
// WQEs. Nothing here makes a system call, so the unit tests run it on
// ordinary memory standing in for the kernel's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include <viaduct/viaduct.hpp>

namespace viaduct::detail {

// Indices are free-running: the count in a ring is producer - consumer in
// unsigned arithmetic, and the slot the low bits.
constexpr std::uint32_t ring_used(std::uint32_t producer, std::uint32_t consumer) noexcept {
    return producer - consumer;
}

// Free slots for the producer; 0 if the consumer index makes no sense
// (more than a ring behind, or ahead of the producer).
constexpr std::uint32_t ring_room(std::uint32_t producer, std::uint32_t consumer,
                                  std::uint32_t entries) noexcept {
    std::uint32_t used = ring_used(producer, consumer);
    return used > entries ? 0 : entries - used;
}

constexpr std::uint32_t ring_slot(std::uint32_t index, std::uint32_t entries) noexcept {
    return index & (entries - 1);
}

constexpr bool is_pow2(std::uint32_t n) noexcept {
    return n != 0 && (n & (n - 1)) == 0;
}

// The two orderings of the ring protocol, on words of the mapped memory.
inline std::uint32_t load_acquire(std::uint32_t &word) noexcept {
    return std::atomic_ref<std::uint32_t>(word).load(std::memory_order_acquire);
}

inline void store_release(std::uint32_t &word, std::uint32_t value) noexcept {
    std::atomic_ref<std::uint32_t>(word).store(value, std::memory_order_release);
}

inline std::uint32_t load_relaxed(std::uint32_t &word) noexcept {
    return std::atomic_ref<std::uint32_t>(word).load(std::memory_order_relaxed);
}

// A completion ring: the header at @base, CQEs behind it. The caller
// serialises poll() and keeps the memory mapped.
class CompletionRing {
public:
    CompletionRing() noexcept = default;
    CompletionRing(std::byte *base, std::uint32_t entries) noexcept;

    std::uint32_t entries() const noexcept { return entries_; }
    std::uint32_t consumer() const noexcept { return consumer_; }
    bool valid() const noexcept { return hdr_ != nullptr; }

    // Load-acquire the producer, copy out up to out.size() CQEs, then
    // store-release the consumer. Returns how many were copied. A producer
    // index more than a ring ahead of the consumer is Error(EPROTO), and
    // nothing is consumed.
    std::size_t poll(std::span<viaduct_cqe> out);
    std::size_t poll(std::span<Completion> out);

    // Nothing left to read before the kernel's producer index.
    bool empty() const noexcept;
    // CQEs before the kernel's producer index not yet polled (at most
    // entries(): a corrupt producer index counts as a full ring).
    std::uint32_t unread() const noexcept;
    // One of the unread CQEs is not successful.
    bool unread_error() const noexcept;
    // VIADUCT_RING_F_OVERFLOW: the kernel refused a completion.
    bool overflowed() const noexcept;

    // Writes the consumer index back (before a resize).
    void publish_consumer() noexcept;

private:
    template <class T, class Convert> std::size_t poll_as(std::span<T> out, Convert convert);

    viaduct_ring *hdr_ = nullptr;
    std::byte *cqes_ = nullptr;
    std::uint32_t entries_ = 0;
    std::uint32_t consumer_ = 0; // ours: never read back from the ring
};

// What a work queue's slots can hold.
struct WqeLimits {
    std::uint32_t wqe_size = 0;
    std::uint32_t max_sge = 0;
    std::uint32_t max_inline = 0;
};

// Encode one WR into a slot. Error(EINVAL) for a WR the slot cannot hold
// (too many SGEs, too much inline data, both); the kernel checks the rest.
void encode_send(std::span<std::byte> slot, const SendWr &wr, const WqeLimits &limits,
                 std::uint32_t qp_handle);
void encode_recv(std::span<std::byte> slot, const RecvWr &wr, const WqeLimits &limits,
                 std::uint32_t qp_handle);

// One work queue (SQ or RQ): its slots and its two indices in the doorbell
// page. The caller serialises everything but room().
class WorkRing {
public:
    WorkRing() noexcept = default;
    WorkRing(std::byte *slots, std::uint32_t depth, std::uint32_t wqe_size, std::uint32_t *producer,
             std::uint32_t *consumer) noexcept;

    std::uint32_t depth() const noexcept { return depth_; }
    std::uint32_t producer() const noexcept { return producer_; }

    // Slots free now: load-acquire the kernel's consumer index, which it
    // releases after copying the slots it covers.
    std::uint32_t room() const noexcept;

    // The slot @n places after the producer index (n < room()).
    std::span<std::byte> next_slot(std::uint32_t n = 0) const noexcept;

    // Advance the producer by @n and store-release it: the WQEs written
    // before are then visible to the kernel's load-acquire.
    void publish(std::uint32_t n) noexcept;

private:
    std::byte *slots_ = nullptr;
    std::uint32_t depth_ = 0;
    std::uint32_t wqe_size_ = 0;
    std::uint32_t *shared_producer_ = nullptr;
    std::uint32_t *shared_consumer_ = nullptr;
    std::uint32_t producer_ = 0;
};

} // namespace viaduct::detail
