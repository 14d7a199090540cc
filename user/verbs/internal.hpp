// SPDX-License-Identifier: GPL-2.0
//
// libviaduct-verbs: the objects behind rdma-core's structures.
//
// Each verbs object is the rdma-core structure the program sees, first in a
// struct of ours that also holds the libviaduct object it translates to.
// The program only ever holds a pointer to the rdma-core structure; to_*()
// gets back to ours.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include <infiniband/verbs.h>

#include <viaduct/viaduct.hpp>

#define VV_EXPORT extern "C" __attribute__((visibility("default")))

namespace vv {

// One device of ibv_get_device_list(); lives as long as the process, as
// rdma-core's do once listed.
struct Device {
    ibv_device dev{};
    std::string name;
};

struct Context;
struct Qp;

// An ibv_context. The verbs_context (with the ibv_context as its last
// member) comes first, so the header's verbs_get_ctx() finds it.
struct Context {
    verbs_context vctx{};
    viaduct::Device native;
    viaduct::DeviceAttributes attr;
    int async_epfd = -1; // the program's async_fd: readable with the device's events
    // QPs take the polled doorbell (VIADUCT_VERBS_DOORBELL=polled): a
    // post costs no system call while the kernel's poller is awake.
    bool polled_doorbell = false;

    // Queue pairs by kernel handle (for ibv_wc.qp_num) and by QP number
    // (for rdma_connect() with a QP the program made itself).
    std::shared_mutex qps_lock;
    std::unordered_map<std::uint32_t, Qp *> qps_by_handle;
    std::unordered_map<std::uint32_t, Qp *> qps_by_qpn;
    std::unordered_map<std::uint32_t, struct Cq *> cqs_by_handle;   // for events
    std::unordered_map<std::uint32_t, struct Srq *> srqs_by_handle; // for events

    explicit Context(viaduct::Device dev) : native(std::move(dev)) {}
    ibv_context *ibv() noexcept { return &vctx.context; }
};

struct Pd {
    ibv_pd pd{};
    viaduct::ProtectionDomain native;
    std::atomic<int> users{0}; // MRs and QPs: dealloc is EBUSY until none

    explicit Pd(viaduct::ProtectionDomain p) : native(std::move(p)) {}
};

struct Mr {
    ibv_mr mr{};
    viaduct::MemoryRegion native;
    Pd *pd;

    Mr(viaduct::MemoryRegion m, Pd *p) : native(std::move(m)), pd(p) {}
};

struct CompChannel {
    ibv_comp_channel ch{};
    viaduct::CompletionChannel native;
    std::atomic<int> users{0}; // CQs

    explicit CompChannel(viaduct::CompletionChannel c) : native(std::move(c)) {}
};

struct Cq {
    ibv_cq cq{};
    std::optional<viaduct::CompletionQueue> native;
    CompChannel *channel = nullptr;
    std::atomic<int> users{0};     // QPs
    std::uint32_t comp_events = 0; // reported to the program, under cq.mutex
    std::uint32_t async_events = 0;
    // The QP handle and number (handle << 32 | qp_num) of the last QP whose
    // completion ibv_poll_cq() looked up, so that the next ones of that QP
    // find ibv_wc.qp_num without the table and its lock. Filled with
    // ctx.qps_lock held shared, for a QP that completes into this CQ only;
    // cleared with it held exclusively when that QP is destroyed, before
    // its handle can be given to another. 0: none (no handle is 0).
    std::atomic<std::uint64_t> last_qp{0};
};

struct Srq {
    ibv_srq srq{};
    std::optional<viaduct::SharedReceiveQueue> native;
    Pd *pd = nullptr;
    std::atomic<int> users{0};      // QPs: destroy is EBUSY until none
    std::uint32_t async_events = 0; // reported, under srq.mutex
};

struct Qp {
    ibv_qp qp{};
    std::optional<viaduct::QueuePair> native;
    Pd *pd = nullptr;
    Srq *srq = nullptr;
    Cq *send_cq = nullptr;
    Cq *recv_cq = nullptr;
    ibv_qp_cap cap{};
    unsigned access = 0;    // IBV_ACCESS_* as last modified
    std::uint32_t caps = 0; // the device's VIADUCT_DEV_CAP_*
    bool sq_sig_all = false;
    std::uint32_t async_events = 0;    // reported, under qp.mutex
    std::atomic<bool> cm_owned{false}; // connected (or being) by the CM
};

inline Context *to_ctx(ibv_context *c) noexcept {
    return reinterpret_cast<Context *>(reinterpret_cast<char *>(c) -
                                       offsetof(verbs_context, context));
}
inline Pd *to_pd(ibv_pd *p) noexcept {
    return reinterpret_cast<Pd *>(p);
}
inline Mr *to_mr(ibv_mr *m) noexcept {
    return reinterpret_cast<Mr *>(m);
}
inline Cq *to_cq(ibv_cq *c) noexcept {
    return reinterpret_cast<Cq *>(c);
}
inline Qp *to_qp(ibv_qp *q) noexcept {
    return reinterpret_cast<Qp *>(q);
}
inline Srq *to_srq(ibv_srq *s) noexcept {
    return reinterpret_cast<Srq *>(s);
}
inline CompChannel *to_channel(ibv_comp_channel *c) noexcept {
    return reinterpret_cast<CompChannel *>(c);
}

// The errno of what a call threw: viaduct::Error's, ENOMEM for bad_alloc.
int errno_of_current_exception() noexcept;

// Runs @f; on an exception sets errno and returns @fail.
template <class T, class F> T guarded(T fail, F &&f) noexcept {
    try {
        return f();
    } catch (...) {
        errno = errno_of_current_exception();
        return fail;
    }
}

// Runs @f returning 0, or the errno of what it threw (also left in errno).
template <class F> int guarded_err(F &&f) noexcept {
    try {
        f();
        return 0;
    } catch (...) {
        int err = errno_of_current_exception();
        errno = err;
        return err;
    }
}

// Whether the program set O_NONBLOCK on @fd: our own descriptors are
// non-blocking, the ones we hand out behave as the program made them.
bool nonblocking(int fd) noexcept;

// An epoll descriptor that is readable whenever @fd is; -1 and errno.
int wrap_fd(int fd) noexcept;

// Creates a QP for the CM (rdma_create_qp) or the program (ibv_create_qp).
ibv_qp *create_qp(ibv_pd *pd, ibv_qp_init_attr *attr, bool for_cm);
Qp *find_qp_by_qpn(Context &ctx, std::uint32_t qpn);

// The process-wide contexts rdma_cm uses (one per device, opened on first
// use and never closed, as librdmacm does).
Context *cm_context(const std::string &name);
std::vector<std::string> device_names();

} // namespace vv
