// SPDX-License-Identifier: GPL-2.0
// viaduct through its raw character-device ABI (include/uapi/viaduct/viaduct-abi.h):
// just the ioctls, rings and doorbell protocol the benchmark times, so that
// the numbers do not depend on the library's resource classes.
#pragma once

#include <cstdint>
#include <string>

#include <viaduct/viaduct-abi.h>

#include "common.hpp"

namespace vdbench::raw {

// An open /dev/viaduct that has selected one device, with one protection
// domain (destroyed with it).
class Context {
public:
    explicit Context(const std::string &device);
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;
    ~Context();

    int fd() const { return fd_.get(); }
    uint32_t pd() const { return pd_; }
    // ioctl() that throws with @what on failure.
    void call(unsigned long request, void *arg, const char *what) const;

    struct Mr {
        uint32_t handle;
        uint32_t stag;
    };
    // The timed pair; both throw on failure.
    Mr reg_mr(const void *addr, uint64_t length, uint32_t access) const;
    void dereg_mr(uint32_t handle) const;

private:
    Fd fd_;
    uint32_t pd_ = 0;
};

// A completion queue and its mapped ring.
class Cq {
public:
    Cq(const Context &ctx, uint32_t entries);
    Cq(const Cq &) = delete;
    Cq &operator=(const Cq &) = delete;
    ~Cq();

    uint32_t handle() const { return handle_; }
    // Takes the next CQE if there is one (and releases its slot).
    bool poll(viaduct_cqe &out);

private:
    const Context &ctx_;
    uint32_t handle_ = 0;
    uint32_t entries_ = 0;
    uint32_t consumer_ = 0;
    Mapping ring_;
};

// A reliable-delivery QP whose send completions go to @cq, moved to Error
// so that every WR posted completes at once as FLUSHED: its SQ ring and
// doorbell page are mapped.
class FlushQp {
public:
    FlushQp(const Context &ctx, const Cq &cq, uint32_t sq_depth, bool polled);
    FlushQp(const FlushQp &) = delete;
    FlushQp &operator=(const FlushQp &) = delete;
    ~FlushQp();

    uint32_t sq_depth() const { return sq_depth_; }
    // Room for @n more WQEs in the SQ ring (the kernel has taken the rest).
    bool has_room(uint32_t n) const;
    // Writes a signaled RDMA Write of @sge into the next slot, unpublished.
    void write_sqe(uint64_t wr_id, const viaduct_sge &sge, uint32_t remote_stag,
                   uint64_t remote_addr);
    // Store-release of the producer index, then the doorbell: always the
    // DOORBELL ioctl for a syscall-mode QP; for a polled QP only when the
    // worker asks for it with NEED_WAKEUP. Returns whether it made the call.
    bool publish();

private:
    const Context &ctx_;
    bool polled_;
    uint32_t handle_ = 0;
    uint32_t sq_depth_ = 0;
    uint32_t wqe_size_ = 0;
    uint32_t producer_ = 0;
    Mapping db_;
    Mapping sq_;
};

} // namespace vdbench::raw
