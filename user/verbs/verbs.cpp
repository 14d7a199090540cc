// SPDX-License-Identifier: GPL-2.0
//
// libviaduct-verbs: libibverbs' API over libviaduct.
//
// The structures are rdma-core's own (<infiniband/verbs.h>); the context's
// ops table carries the data-path calls the header's inline functions make
// (ibv_post_send(), ibv_poll_cq(), ...), and verbs_context the extended
// ones. Every call translates to libviaduct's core; nothing here talks to
// the kernel.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <new>
#include <sys/epoll.h>
#include <unistd.h>
#include <vector>

#include <arpa/inet.h>

#include "internal.hpp"

// The header turns these into inline wrappers; the library exports the
// functions themselves.
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

// The SGE layouts agree, so the program's SGE lists are passed as they are.
static_assert(sizeof(ibv_sge) == sizeof(viaduct::Sge));
static_assert(offsetof(ibv_sge, addr) == offsetof(viaduct::Sge, addr));
static_assert(offsetof(ibv_sge, length) == offsetof(viaduct::Sge, length));
static_assert(offsetof(ibv_sge, lkey) == offsetof(viaduct::Sge, stag));

namespace vv {

int errno_of_current_exception() noexcept {
    try {
        throw;
    } catch (const viaduct::Error &e) {
        return e.errnum();
    } catch (const std::system_error &e) {
        return e.code().value();
    } catch (const std::bad_alloc &) {
        return ENOMEM;
    } catch (...) {
        return EIO;
    }
}

bool nonblocking(int fd) noexcept {
    int fl = ::fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_NONBLOCK) != 0;
}

int wrap_fd(int fd) noexcept {
    int ep = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return -1;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int err = errno;
        ::close(ep);
        errno = err;
        return -1;
    }
    return ep;
}

namespace {

std::mutex devices_lock;
std::vector<Device *> devices; // never freed, as rdma-core's

Device *device_named(const std::string &name) {
    std::lock_guard<std::mutex> guard(devices_lock);
    for (Device *d : devices)
        if (d->name == name)
            return d;
    auto *d = new Device;
    d->name = name;
    d->dev.node_type = IBV_NODE_RNIC;
    d->dev.transport_type = IBV_TRANSPORT_IWARP;
    std::snprintf(d->dev.name, sizeof(d->dev.name), "%s", name.c_str());
    std::snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "%s", name.c_str());
    std::snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "%s", viaduct::device_path().c_str());
    std::snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
                  name.c_str());
    devices.push_back(d);
    return d;
}

// iWARP devices report the interface's MAC as GUID and GID (as siw does).
__be64 guid_of(const viaduct::DeviceAttributes &a) {
    std::uint64_t g = 0;
    std::memcpy(&g, a.hw_addr.data(), 6);
    return g; // bytes in MAC order: already the big-endian GUID
}

ibv_mtu mtu_enum(std::uint32_t mtu) {
    if (mtu >= 4096)
        return IBV_MTU_4096;
    if (mtu >= 2048)
        return IBV_MTU_2048;
    if (mtu >= 1024)
        return IBV_MTU_1024;
    if (mtu >= 512)
        return IBV_MTU_512;
    return IBV_MTU_256;
}

int fill_port(Context &ctx, std::uint8_t port, ibv_port_attr *pa) {
    if (port != 1)
        return EINVAL;
    viaduct::DeviceAttributes a = ctx.native.query();
    std::memset(pa, 0, sizeof(*pa));
    pa->state = a.running() ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    pa->max_mtu = mtu_enum(a.mtu);
    pa->active_mtu = mtu_enum(a.mtu);
    pa->gid_tbl_len = 1;
    pa->port_cap_flags = IBV_PORT_CM_SUP;
    pa->max_msg_sz =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(a.limits.max_msg_size, UINT32_MAX));
    pa->pkey_tbl_len = 1;
    pa->active_width = 1;                 // 1X
    pa->active_speed = 1;                 // SDR: a software device reports the slowest
    pa->phys_state = a.running() ? 5 : 3; // LinkUp, Disabled
    pa->link_layer = IBV_LINK_LAYER_ETHERNET;
    return 0;
}

int query_port_ex(ibv_context *c, std::uint8_t port, ibv_port_attr *pa, size_t len) {
    if (len < offsetof(ibv_port_attr, link_layer))
        return EINVAL;
    ibv_port_attr full{};
    int err = guarded_err([&] {
        if (int e = fill_port(*to_ctx(c), port, &full))
            throw viaduct::Error(e, "no such port");
    });
    if (err)
        return err;
    std::memcpy(pa, &full, std::min(len, sizeof(full)));
    return 0;
}

void fill_device_attr(Context &ctx, ibv_device_attr *da) {
    const viaduct::DeviceAttributes a = ctx.native.query();
    const viaduct::DeviceLimits &l = a.limits;
    std::memset(da, 0, sizeof(*da));
    std::snprintf(da->fw_ver, sizeof(da->fw_ver), "viaduct ABI %u", a.abi_version);
    da->node_guid = guid_of(a);
    da->sys_image_guid = guid_of(a);
    da->max_mr_size = l.max_mr_size;
    da->page_size_cap = l.page_size;
    da->max_qp = static_cast<int>(l.max_qp);
    da->max_qp_wr = static_cast<int>(l.max_qp_wr);
    da->device_cap_flags = 0;
    da->max_sge = static_cast<int>(l.max_sge);
    da->max_sge_rd = 1; // an RDMA Read lands in one local SGE
    da->max_cq = static_cast<int>(l.max_cq);
    da->max_cqe = static_cast<int>(l.max_cqe);
    da->max_mr = static_cast<int>(l.max_mr);
    da->max_mw = static_cast<int>(l.max_mw);
    da->max_pd = static_cast<int>(l.max_pd);
    da->max_qp_rd_atom = static_cast<int>(l.max_ird);
    da->max_qp_init_rd_atom = static_cast<int>(l.max_ord);
    da->max_res_rd_atom = static_cast<int>(l.max_ird);
    da->atomic_cap = IBV_ATOMIC_NONE;
    if (a.caps & VIADUCT_DEV_CAP_SRQ) {
        // No count of their own: an SRQ costs what a QP's receive queue does.
        da->max_srq = static_cast<int>(l.max_qp);
        da->max_srq_wr = static_cast<int>(l.max_qp_wr);
        da->max_srq_sge = static_cast<int>(l.max_sge);
    }
    da->max_pkeys = 1;
    da->phys_port_cnt = 1;
}

int query_device_ex(ibv_context *c, const ibv_query_device_ex_input *input,
                    ibv_device_attr_ex *attr, size_t size) {
    if (input && input->comp_mask)
        return EINVAL;
    if (size < sizeof(attr->orig_attr) + sizeof(attr->comp_mask))
        return EINVAL;
    ibv_device_attr_ex full{};
    int err = guarded_err([&] { fill_device_attr(*to_ctx(c), &full.orig_attr); });
    if (err)
        return err;
    full.max_dm_size = 0;
    std::memcpy(attr, &full, std::min(size, sizeof(full)));
    return 0;
}

// --- Completion queues --------------------------------------------------

constexpr ibv_wc_status to_status(std::uint8_t s) {
    switch (s) {
    case VIADUCT_WC_SUCCESS:
        return IBV_WC_SUCCESS;
    case VIADUCT_WC_FLUSHED:
        return IBV_WC_WR_FLUSH_ERR;
    case VIADUCT_WC_LOC_LEN_ERR:
        return IBV_WC_LOC_LEN_ERR;
    case VIADUCT_WC_LOC_QP_OP_ERR:
        return IBV_WC_LOC_QP_OP_ERR;
    case VIADUCT_WC_LOC_PROT_ERR:
        return IBV_WC_LOC_PROT_ERR;
    case VIADUCT_WC_REM_ACCESS_ERR:
        return IBV_WC_REM_ACCESS_ERR;
    case VIADUCT_WC_REM_OP_ERR:
        return IBV_WC_REM_OP_ERR;
    case VIADUCT_WC_REM_INV_REQ_ERR:
        return IBV_WC_REM_INV_REQ_ERR;
    case VIADUCT_WC_TRANSPORT_ERR:
        return IBV_WC_FATAL_ERR;
    case VIADUCT_WC_REM_TERMINATED:
        return IBV_WC_REM_ABORT_ERR;
    default:
        return IBV_WC_GENERAL_ERR;
    }
}

constexpr ibv_wc_opcode to_wc_opcode(std::uint8_t op) {
    switch (op) {
    case VIADUCT_WC_SEND:
        return IBV_WC_SEND;
    case VIADUCT_WC_RDMA_WRITE:
        return IBV_WC_RDMA_WRITE;
    case VIADUCT_WC_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case VIADUCT_WC_RECV_RDMA_WITH_IMM:
        return IBV_WC_RECV_RDMA_WITH_IMM;
    case VIADUCT_WC_LOCAL_INV:
        return IBV_WC_LOCAL_INV;
    default:
        return IBV_WC_RECV;
    }
}

// Both over every byte a CQE may carry: a completion's translation takes a
// load each, with no bounds check or branch (each branch ends a block of
// code that QEMU TCG translates and enters on its own).
template <class T, class F> constexpr std::array<std::uint8_t, 256> byte_table(F f) {
    std::array<std::uint8_t, 256> t{};
    for (unsigned i = 0; i < t.size(); ++i) {
        const T v = f(static_cast<std::uint8_t>(i));
        t[i] = static_cast<std::uint8_t>(v);
    }
    return t;
}
constexpr auto status_table = byte_table<ibv_wc_status>(to_status);
constexpr auto wc_opcode_table = byte_table<ibv_wc_opcode>(to_wc_opcode);
static_assert(IBV_WC_GENERAL_ERR < 256 && IBV_WC_RECV_RDMA_WITH_IMM < 256);

// The QP number of a completion's QP handle, from the table: slow path of
// qp_num_of(). Cached in @cq when the QP completes into @cq, so that the
// cache only ever names a QP that ibv_destroy_qp() clears it of; a handle
// whose QP does not complete into @cq came from a QP destroyed since (the
// kernel reuses handles), and has no number.
[[gnu::noinline]] std::uint32_t qp_num_lookup(Cq &cq, std::uint32_t handle) {
    Context &ctx = *to_ctx(cq.cq.context);
    std::shared_lock<std::shared_mutex> guard(ctx.qps_lock);
    auto it = ctx.qps_by_handle.find(handle);
    if (it == ctx.qps_by_handle.end())
        return 0;
    const Qp &qp = *it->second;
    if (qp.send_cq != &cq && qp.recv_cq != &cq)
        return 0;
    cq.last_qp.store(std::uint64_t{handle} << 32 | qp.qp.qp_num, std::memory_order_release);
    return qp.qp.qp_num;
}

[[gnu::always_inline]] inline std::uint32_t qp_num_of(Cq &cq, std::uint32_t handle) {
    const std::uint64_t last = cq.last_qp.load(std::memory_order_acquire);
    if (static_cast<std::uint32_t>(last >> 32) == handle) [[likely]]
        return static_cast<std::uint32_t>(last);
    return qp_num_lookup(cq, handle);
}

// Every member of @w, each written once.
[[gnu::always_inline]] inline void to_wc(Cq &cq, const viaduct_cqe &c, ibv_wc &w) {
    const bool imm = (c.flags & VIADUCT_WC_F_IMMEDIATE) != 0;
    const bool inv = !imm && (c.flags & VIADUCT_WC_F_INVALIDATED) != 0;
    w.wr_id = c.wr_id;
    w.status = static_cast<ibv_wc_status>(status_table[c.status]);
    w.opcode = static_cast<ibv_wc_opcode>(wc_opcode_table[c.opcode]);
    w.vendor_err = c.vendor_err;
    w.byte_len = c.byte_len;
    // imm_data or invalidated_rkey (a union)
    w.invalidated_rkey = imm ? htonl(c.imm_data) : inv ? c.invalidated_stag : 0;
    w.qp_num = qp_num_of(cq, c.qp_handle);
    w.src_qp = 0;
    w.wc_flags = (imm ? unsigned{IBV_WC_WITH_IMM} : 0u) | (inv ? unsigned{IBV_WC_WITH_INV} : 0u);
    w.pkey_index = 0;
    w.slid = 0;
    w.sl = 0;
    w.dlid_path_bits = 0;
}

// CQEs polled at a time into the stack, then translated into the caller's
// ibv_wc. Left uninitialised: a poll that finds nothing (a program spinning
// on ibv_poll_cq()) costs the ring's look and nothing more.
constexpr std::size_t poll_max = 16;

int poll_cq(ibv_cq *ibcq, int num, ibv_wc *wc) {
    Cq &cq = *to_cq(ibcq);
    if (num <= 0)
        return 0;
    viaduct_cqe buf[poll_max];
    int done = 0;
    try {
        for (;;) {
            const std::size_t want =
                std::min<std::size_t>(poll_max, static_cast<std::size_t>(num - done));
            const std::size_t n = cq.native->poll(std::span<viaduct_cqe>(buf, want));
            for (std::size_t i = 0; i < n; ++i)
                to_wc(cq, buf[i], wc[done + static_cast<int>(i)]);
            done += static_cast<int>(n);
            if (n < want || done == num)
                return done;
        }
    } catch (...) {
        if (done)
            return done;
        errno = errno_of_current_exception();
        return -1;
    }
}

int req_notify_cq(ibv_cq *ibcq, int solicited_only) {
    return guarded_err([&] { to_cq(ibcq)->native->arm(solicited_only != 0); });
}

// --- Work requests ------------------------------------------------------
//
// One WR per call is what most programs post (perftest's default, rping),
// so it has a path of its own: translated into one SendWr (RecvWr) on the
// stack and handed to the core in one call, with no batch array, no
// per-thread buffer and no call of the face's own in between. Under QEMU
// TCG, where the test VM runs, each call and return is an indirect jump
// looked up at run time; so the helpers here are inline. A list goes in
// batches of up to 16, each all or none, the core's own rule; if a batch
// fails, its WRs are posted one by one up to the one that fails, which is
// then *bad_wr, as rdma-core's providers stop at the first bad WR.

constexpr std::size_t batch_max = 16;

// What an ibv_wr_opcode becomes: a table, not a switch (a jump table's
// indirect jump costs what a call does under TCG).
struct OpInfo {
    viaduct::SendOp op = viaduct::SendOp::Send;
    std::uint8_t flags = 0; // op_*
    std::uint32_t cap = 0;  // the VIADUCT_DEV_CAP_* it needs
};

constexpr std::uint8_t op_ok = 1;         // viaduct does it
constexpr std::uint8_t op_imm = 2;        // with immediate data
constexpr std::uint8_t op_remote = 4;     // remote address and rkey
constexpr std::uint8_t op_inv_stag = 8;   // invalidate_rkey is the STag
constexpr std::uint8_t op_no_sge = 16;    // no SGEs, no inline data
constexpr std::uint8_t op_no_inline = 32; // IBV_SEND_INLINE ignored (a Read's sink)

constexpr std::array<OpInfo, 16> op_table = [] {
    using viaduct::SendOp;
    std::array<OpInfo, 16> t{};
    t[IBV_WR_RDMA_WRITE] = {SendOp::RdmaWrite, op_ok | op_remote, 0};
    t[IBV_WR_RDMA_WRITE_WITH_IMM] = {SendOp::RdmaWrite, op_ok | op_remote | op_imm, 0};
    t[IBV_WR_SEND] = {SendOp::Send, op_ok, 0};
    t[IBV_WR_SEND_WITH_IMM] = {SendOp::Send, op_ok | op_imm, 0};
    t[IBV_WR_RDMA_READ] = {SendOp::RdmaRead, op_ok | op_remote | op_no_inline, 0};
    t[IBV_WR_SEND_WITH_INV] = {SendOp::SendWithInvalidate, op_ok | op_inv_stag,
                               VIADUCT_DEV_CAP_SEND_INV};
    t[IBV_WR_LOCAL_INV] = {SendOp::LocalInvalidate, op_ok | op_inv_stag | op_no_sge,
                           VIADUCT_DEV_CAP_FAST_REG};
    return t; // atomics, memory windows, TSO: not op_ok
}();

constexpr unsigned send_flags_known =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

// to_send_wr()'s answer for an inline WR of several SGEs when it has no
// buffer to gather them in: not an errno.
constexpr int need_gather = -1;

// Bytes an inline WR of @w's SGEs comes to.
[[gnu::always_inline]] inline std::size_t sge_bytes(const ibv_send_wr &w) noexcept {
    std::size_t t = 0;
    for (int i = 0; i < w.num_sge; ++i)
        t += w.sg_list[i].length;
    return t;
}

// Translates one send WR into @out, a freshly constructed SendWr; EINVAL
// for what viaduct does not do (as a provider without the opcode answers)
// and for inline data beyond the QP's max_inline_data. Inline data of one
// SGE is handed over where it is (the core copies it into the slot); of
// several, gathered at the end of @gather, or need_gather without one.
[[gnu::always_inline]] inline int to_send_wr(const Qp &qp, const ibv_send_wr &w,
                                             viaduct::SendWr &out, std::vector<std::byte> *gather) {
    const unsigned sf = w.send_flags;
    const OpInfo info = w.opcode < op_table.size() ? op_table[w.opcode] : OpInfo{};
    if (!(info.flags & op_ok) || (info.cap & ~qp.caps) || w.num_sge < 0 || (sf & ~send_flags_known))
        return EINVAL;
    out.wr_id = w.wr_id;
    out.opcode = info.op;
    out.signaled = qp.sq_sig_all || (sf & IBV_SEND_SIGNALED);
    out.solicited = (sf & IBV_SEND_SOLICITED) != 0;
    out.read_fence = (sf & IBV_SEND_FENCE) != 0;
    if (info.flags & op_imm)
        out.imm_data = ntohl(w.imm_data);
    if (info.flags & op_remote) {
        out.remote_addr = w.wr.rdma.remote_addr;
        out.remote_stag = w.wr.rdma.rkey;
    }
    if (info.flags & op_inv_stag)
        out.remote_stag = w.invalidate_rkey;
    if (info.flags & op_no_sge)
        return (sf & IBV_SEND_INLINE) ? EINVAL : 0;
    const auto *sges = reinterpret_cast<const viaduct::Sge *>(w.sg_list);
    const auto nsge = static_cast<std::size_t>(w.num_sge);
    if (!(sf & IBV_SEND_INLINE) || (info.flags & op_no_inline)) [[likely]] {
        out.sge = std::span<const viaduct::Sge>(sges, nsge);
        return 0;
    }
    if (nsge == 1) {
        if (sges[0].length > qp.cap.max_inline_data)
            return EINVAL;
        out.inline_data = std::span<const std::byte>(
            reinterpret_cast<const std::byte *>(static_cast<std::uintptr_t>(sges[0].addr)),
            sges[0].length);
        return 0;
    }
    const std::size_t total = sge_bytes(w);
    if (total > qp.cap.max_inline_data)
        return EINVAL;
    if (nsge == 0)
        return 0; // an empty inline send
    if (!gather)
        return need_gather;
    const std::size_t at = gather->size();
    if (gather->capacity() < at + total)
        return ENOMEM; // reserved by the caller; cannot happen
    for (std::size_t i = 0; i < nsge; ++i) {
        const auto *p =
            reinterpret_cast<const std::byte *>(static_cast<std::uintptr_t>(sges[i].addr));
        gather->insert(gather->end(), p, p + sges[i].length);
    }
    out.inline_data = std::span<const std::byte>(gather->data() + at, total);
    return 0;
}

// Bytes @w needs gathered into the buffer: inline data of several SGEs
// that to_send_wr() takes (a WR beyond max_inline_data fails before).
std::size_t gather_bytes(const Qp &qp, const ibv_send_wr &w) noexcept {
    if (!(w.send_flags & IBV_SEND_INLINE) || w.num_sge <= 1)
        return 0;
    const std::size_t t = sge_bytes(w);
    return t <= qp.cap.max_inline_data ? t : 0;
}

// Posts @wrs whole with the core's try_post_*: 0, ENOMEM for a full queue,
// or the errno of what the core threw (EINVAL for a WR the QP cannot
// hold); errno is set too.
template <class Wr, class Post>
[[gnu::always_inline]] inline int post_whole(std::span<const Wr> wrs, Post &post) noexcept {
    try {
        if (post(wrs)) [[likely]]
            return 0;
        errno = ENOMEM;
        return ENOMEM;
    } catch (...) {
        const int err = errno_of_current_exception();
        errno = err;
        return err;
    }
}

// Posts a batch of @wrs (@ib the program's WRs they came from), all or
// none; if none, posts them one by one up to the first that fails, which
// is *@bad. A failure other than a bad WR or a full queue (the doorbell
// call: the WRs are in the ring) is not retried: *@bad is the first.
template <class Wr, class Ib, class Post>
int post_batch(std::span<const Wr> wrs, std::span<Ib *const> ib, Ib **bad, Post &post) {
    if (wrs.empty())
        return 0;
    int err = post_whole(wrs, post);
    if (!err)
        return 0;
    if (err != EINVAL && err != ENOMEM) {
        *bad = ib[0];
        return err;
    }
    for (std::size_t i = 0; i < wrs.size(); ++i) {
        err = post_whole(wrs.subspan(i, 1), post);
        if (err) {
            *bad = ib[i];
            return err;
        }
    }
    return 0;
}

// A list of send WRs, or one whose inline data must be gathered.
[[gnu::noinline]] int post_send_list(Qp &qp, ibv_send_wr *wr, ibv_send_wr **bad) {
    // Room for a batch, left uninitialised: each slot is constructed when
    // its WR is translated.
    union Batch {
        Batch() {}
        viaduct::SendWr at[batch_max];
    } slots;
    std::array<ibv_send_wr *, batch_max> ibs;
    auto post = [&](std::span<const viaduct::SendWr> s) { return qp.native->try_post_send(s); };
    while (wr) {
        // Inline data of several SGEs is gathered into a per-thread buffer
        // reserved for the whole batch (so the spans into it stay valid).
        std::size_t n = 0, need = 0;
        for (ibv_send_wr *w = wr; w && n < batch_max; w = w->next, ++n)
            need += gather_bytes(qp, *w);
        std::vector<std::byte> *gather = nullptr;
        if (need) {
            thread_local std::vector<std::byte> buf;
            try {
                buf.clear();
                buf.reserve(need);
            } catch (...) {
                *bad = wr;
                return ENOMEM;
            }
            gather = &buf;
        }
        n = 0;
        for (; wr && n < batch_max; wr = wr->next) {
            viaduct::SendWr *w = new (&slots.at[n]) viaduct::SendWr;
            if (int err = to_send_wr(qp, *wr, *w, gather)) {
                if (int e = post_batch<viaduct::SendWr, ibv_send_wr>(
                        std::span(slots.at, n), std::span(ibs.data(), n), bad, post))
                    return e;
                *bad = wr;
                return err;
            }
            ibs[n++] = wr;
        }
        if (int e = post_batch<viaduct::SendWr, ibv_send_wr>(std::span(slots.at, n),
                                                             std::span(ibs.data(), n), bad, post))
            return e;
    }
    return 0;
}

int post_send(ibv_qp *ibqp, ibv_send_wr *wr, ibv_send_wr **bad) {
    Qp &qp = *to_qp(ibqp);
    if (wr && !wr->next) [[likely]] {
        viaduct::SendWr w;
        int err = to_send_wr(qp, *wr, w, nullptr);
        if (!err) [[likely]] {
            auto post = [&](std::span<const viaduct::SendWr> s) {
                return qp.native->try_post_send(s);
            };
            err = post_whole(std::span<const viaduct::SendWr>(&w, 1), post);
            if (!err) [[likely]]
                return 0;
        }
        if (err != need_gather) {
            *bad = wr;
            return err;
        }
    }
    return post_send_list(qp, wr, bad);
}

// A list of receive WRs for @post (a QP's RQ or an SRQ), in batches.
template <class Post>
[[gnu::noinline]] int post_recv_list(ibv_recv_wr *wr, ibv_recv_wr **bad, Post post) {
    union Batch {
        Batch() {}
        viaduct::RecvWr at[batch_max];
    } slots;
    std::array<ibv_recv_wr *, batch_max> ibs;
    while (wr) {
        std::size_t n = 0;
        for (; wr && n < batch_max; wr = wr->next) {
            if (wr->num_sge < 0) {
                if (int e = post_batch<viaduct::RecvWr, ibv_recv_wr>(
                        std::span(slots.at, n), std::span(ibs.data(), n), bad, post))
                    return e;
                *bad = wr;
                return EINVAL;
            }
            new (&slots.at[n]) viaduct::RecvWr{
                wr->wr_id, std::span(reinterpret_cast<const viaduct::Sge *>(wr->sg_list),
                                     static_cast<std::size_t>(wr->num_sge))};
            ibs[n++] = wr;
        }
        if (int e = post_batch<viaduct::RecvWr, ibv_recv_wr>(std::span(slots.at, n),
                                                             std::span(ibs.data(), n), bad, post))
            return e;
    }
    return 0;
}

// Posts a receive WR list to @post: one WR directly, a list in batches.
template <class Post>
[[gnu::always_inline]] inline int post_recv_wrs(ibv_recv_wr *wr, ibv_recv_wr **bad, Post post) {
    if (wr && !wr->next) [[likely]] {
        if (wr->num_sge < 0) {
            *bad = wr;
            return EINVAL;
        }
        const viaduct::RecvWr r{wr->wr_id,
                                std::span(reinterpret_cast<const viaduct::Sge *>(wr->sg_list),
                                          static_cast<std::size_t>(wr->num_sge))};
        if (int err = post_whole(std::span<const viaduct::RecvWr>(&r, 1), post)) {
            *bad = wr;
            return err;
        }
        return 0;
    }
    return post_recv_list(wr, bad, post);
}

int post_recv(ibv_qp *ibqp, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    Qp &qp = *to_qp(ibqp);
    if (qp.srq) {
        *bad = wr; // its receives go to the SRQ (as rdma-core's providers answer)
        return EINVAL;
    }
    return post_recv_wrs(
        wr, bad, [&](std::span<const viaduct::RecvWr> s) { return qp.native->try_post_recv(s); });
}

int post_srq_recv(ibv_srq *ibsrq, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    Srq &srq = *to_srq(ibsrq);
    return post_recv_wrs(
        wr, bad, [&](std::span<const viaduct::RecvWr> s) { return srq.native->try_post_recv(s); });
}

ibv_mw *alloc_mw(ibv_pd *, ibv_mw_type) {
    errno = EOPNOTSUPP;
    return nullptr;
}

int bind_mw(ibv_qp *, ibv_mw *, ibv_mw_bind *) {
    return EOPNOTSUPP;
}

int dealloc_mw(ibv_mw *) {
    return EOPNOTSUPP;
}

// ibv_query_qp's state from the kernel's and what the program asked for:
// before the CM connects a QP it is Idle, whichever of RESET, INIT or RTR
// the program moved it to.
ibv_qp_state to_ib_state(viaduct::QpState s, ibv_qp_state asked) {
    switch (s) {
    case viaduct::QpState::Idle:
        return asked <= IBV_QPS_RTR ? asked : IBV_QPS_RTR;
    case viaduct::QpState::Rts:
        return IBV_QPS_RTS;
    case viaduct::QpState::Closing:
        return IBV_QPS_SQD;
    case viaduct::QpState::Terminate:
        return IBV_QPS_SQE;
    case viaduct::QpState::Error:
        return IBV_QPS_ERR;
    }
    return IBV_QPS_UNKNOWN;
}

std::uint32_t to_qp_access(unsigned a) {
    std::uint32_t r = 0;
    if (a & IBV_ACCESS_REMOTE_WRITE)
        r |= VIADUCT_QP_ACCESS_REMOTE_WRITE;
    if (a & IBV_ACCESS_REMOTE_READ)
        r |= VIADUCT_QP_ACCESS_REMOTE_READ;
    return r;
}

void wait_events(pthread_mutex_t &m, pthread_cond_t &c, const std::uint32_t &done,
                 const std::uint32_t &reported) {
    pthread_mutex_lock(&m);
    while (done != reported)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
}

// VIADUCT_VERBS_DOORBELL: "syscall" (the default: every ibv_post_send()
// and ibv_post_recv() rings the DOORBELL ioctl) or "polled" (a kernel
// thread polls the doorbell page; Documentation/verbs.rst).
bool doorbell_from_env() {
    const char *v = std::getenv("VIADUCT_VERBS_DOORBELL");
    if (!v || !*v || std::strcmp(v, "syscall") == 0)
        return false;
    if (std::strcmp(v, "polled") == 0)
        return true;
    throw viaduct::Error(EINVAL, std::string("VIADUCT_VERBS_DOORBELL='") + v +
                                     "': expected syscall or polled");
}

Cq *find_cq(Context &ctx, std::uint32_t handle) {
    std::shared_lock<std::shared_mutex> guard(ctx.qps_lock);
    auto it = ctx.cqs_by_handle.find(handle);
    return it == ctx.cqs_by_handle.end() ? nullptr : it->second;
}

Srq *find_srq(Context &ctx, std::uint32_t handle) {
    std::shared_lock<std::shared_mutex> guard(ctx.qps_lock);
    auto it = ctx.srqs_by_handle.find(handle);
    return it == ctx.srqs_by_handle.end() ? nullptr : it->second;
}

} // namespace

std::vector<std::string> device_names() {
    std::vector<std::string> names;
    for (const viaduct::DeviceEntry &e : viaduct::Device::list())
        names.push_back(e.name);
    return names;
}

ibv_qp *create_qp(ibv_pd *ibpd, ibv_qp_init_attr *attr, bool for_cm) {
    Pd &pd = *to_pd(ibpd);
    Context &ctx = *to_ctx(ibpd->context);
    if (attr->qp_type != IBV_QPT_RC)
        throw viaduct::Error(EOPNOTSUPP, "only RC QPs");
    if (!attr->send_cq || !attr->recv_cq)
        throw viaduct::Error(EINVAL, "a QP needs a send and a receive CQ");
    Srq *srq = attr->srq ? to_srq(attr->srq) : nullptr;
    if (srq && srq->pd != &pd)
        throw viaduct::Error(EINVAL, "the SRQ is of another PD");
    const viaduct::DeviceLimits &l = ctx.attr.limits;
    const ibv_qp_cap &c = attr->cap;
    // With an SRQ the receive capabilities are the SRQ's and ignored here.
    if (c.max_send_wr > l.max_qp_wr || c.max_send_sge > l.max_sge ||
        c.max_inline_data > l.max_inline ||
        (!srq && (c.max_recv_wr > l.max_qp_wr || c.max_recv_sge > l.max_sge)))
        throw viaduct::Error(EINVAL, "QP capabilities beyond the device's");
    auto qp = std::make_unique<Qp>();
    qp->send_cq = to_cq(attr->send_cq);
    qp->recv_cq = to_cq(attr->recv_cq);
    viaduct::QpConfig cfg;
    cfg.send_cq = &*qp->send_cq->native;
    cfg.recv_cq = &*qp->recv_cq->native;
    cfg.srq = srq ? &*srq->native : nullptr;
    cfg.sq_depth = std::max(1u, c.max_send_wr);
    cfg.rq_depth = std::max(1u, c.max_recv_wr);
    cfg.max_send_sge = std::max(1u, c.max_send_sge);
    cfg.max_recv_sge = std::max(1u, c.max_recv_sge);
    cfg.max_inline = c.max_inline_data;
    cfg.reliability = viaduct::Reliability::ReliableDelivery;
    // iWARP's CM enables remote reads and writes on the QPs it connects.
    if (for_cm) {
        qp->access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        cfg.access = VIADUCT_QP_ACCESS_REMOTE_WRITE | VIADUCT_QP_ACCESS_REMOTE_READ;
    }
    cfg.ord = l.max_ord;
    cfg.ird = l.max_ird;
    cfg.user_data = reinterpret_cast<std::uintptr_t>(qp.get());
    cfg.polled_doorbell = ctx.polled_doorbell;
    qp->native.emplace(pd.native, cfg);
    const viaduct::QpCaps &caps = qp->native->caps();
    qp->cap.max_send_wr = caps.sq_depth;
    qp->cap.max_recv_wr = caps.rq_depth;
    qp->cap.max_send_sge = caps.max_send_sge;
    qp->cap.max_recv_sge = caps.max_recv_sge;
    qp->cap.max_inline_data = caps.max_inline;
    if (srq) {
        qp->cap.max_recv_wr = 0;
        qp->cap.max_recv_sge = 0;
    }
    attr->cap = qp->cap;
    qp->pd = &pd;
    qp->srq = srq;
    qp->caps = ctx.attr.caps;
    qp->sq_sig_all = attr->sq_sig_all != 0;
    ibv_qp &q = qp->qp;
    q.context = ibpd->context;
    q.qp_context = attr->qp_context;
    q.pd = ibpd;
    q.send_cq = attr->send_cq;
    q.recv_cq = attr->recv_cq;
    q.srq = attr->srq;
    q.handle = qp->native->handle();
    q.qp_num = caps.qpn;
    q.state = for_cm ? IBV_QPS_INIT : IBV_QPS_RESET;
    q.qp_type = IBV_QPT_RC;
    pthread_mutex_init(&q.mutex, nullptr);
    pthread_cond_init(&q.cond, nullptr);
    {
        std::unique_lock<std::shared_mutex> guard(ctx.qps_lock);
        ctx.qps_by_handle[q.handle] = qp.get();
        ctx.qps_by_qpn[q.qp_num] = qp.get();
    }
    pd.users++;
    qp->send_cq->users++;
    qp->recv_cq->users++;
    if (srq)
        srq->users++;
    return &qp.release()->qp;
}

Qp *find_qp_by_qpn(Context &ctx, std::uint32_t qpn) {
    std::shared_lock<std::shared_mutex> guard(ctx.qps_lock);
    auto it = ctx.qps_by_qpn.find(qpn);
    return it == ctx.qps_by_qpn.end() ? nullptr : it->second;
}

} // namespace vv

using namespace vv;

// --- Devices ------------------------------------------------------------

VV_EXPORT ibv_device **ibv_get_device_list(int *num) {
    return guarded<ibv_device **>(nullptr, [&]() -> ibv_device ** {
        std::vector<std::string> names;
        try {
            names = device_names();
        } catch (const viaduct::Error &e) {
            if (e.errnum() == ENOENT || e.errnum() == ENXIO)
                throw viaduct::Error(ENOSYS, "no viaduct module");
            throw;
        }
        auto **list =
            static_cast<ibv_device **>(std::calloc(names.size() + 1, sizeof(ibv_device *)));
        if (!list)
            throw std::bad_alloc();
        for (std::size_t i = 0; i < names.size(); ++i)
            list[i] = &device_named(names[i])->dev;
        if (num)
            *num = static_cast<int>(names.size());
        return list;
    });
}

VV_EXPORT void ibv_free_device_list(ibv_device **list) {
    std::free(list);
}

VV_EXPORT const char *ibv_get_device_name(ibv_device *dev) {
    return dev->name;
}

VV_EXPORT int ibv_get_device_index(ibv_device *dev) {
    return guarded(-1, [&] {
        for (const viaduct::DeviceEntry &e : viaduct::Device::list())
            if (e.name == dev->name)
                return static_cast<int>(e.index);
        throw viaduct::Error(ENODEV, "device gone");
    });
}

VV_EXPORT __be64 ibv_get_device_guid(ibv_device *dev) {
    return guarded<__be64>(0, [&] {
        return guid_of(viaduct::Device::open(std::string_view(dev->name)).attributes());
    });
}

VV_EXPORT ibv_context *ibv_open_device(ibv_device *dev) {
    return guarded<ibv_context *>(nullptr, [&] {
        auto ctx = std::make_unique<Context>(viaduct::Device::open(std::string_view(dev->name)));
        ctx->attr = ctx->native.attributes();
        ctx->polled_doorbell = doorbell_from_env();
        ctx->async_epfd = wrap_fd(ctx->native.fd());
        if (ctx->async_epfd < 0)
            throw viaduct::Error(errno, "cannot make the async event descriptor");
        verbs_context &v = ctx->vctx;
        v.sz = sizeof(verbs_context);
        v.query_port = query_port_ex;
        v.query_device_ex = query_device_ex;
        ibv_context &c = v.context;
        c.device = dev;
        c.cmd_fd = ctx->native.fd();
        c.async_fd = ctx->async_epfd;
        c.num_comp_vectors = 1;
        pthread_mutex_init(&c.mutex, nullptr);
        c.abi_compat = __VERBS_ABI_IS_EXTENDED;
        c.ops.poll_cq = poll_cq;
        c.ops.req_notify_cq = req_notify_cq;
        c.ops.post_send = post_send;
        c.ops.post_recv = post_recv;
        c.ops.post_srq_recv = post_srq_recv;
        c.ops.alloc_mw = alloc_mw;
        c.ops.bind_mw = bind_mw;
        c.ops.dealloc_mw = dealloc_mw;
        return ctx.release()->ibv();
    });
}

VV_EXPORT int ibv_close_device(ibv_context *c) {
    Context *ctx = to_ctx(c);
    ::close(ctx->async_epfd);
    pthread_mutex_destroy(&c->mutex);
    delete ctx;
    return 0;
}

VV_EXPORT int ibv_query_device(ibv_context *c, ibv_device_attr *attr) {
    return guarded_err([&] { fill_device_attr(*to_ctx(c), attr); });
}

// The exported ibv_query_port() is the old entry point that fills only the
// fields before link_layer; the header's inline version uses query_port.
VV_EXPORT int ibv_query_port(ibv_context *c, std::uint8_t port, _compat_ibv_port_attr *pa) {
    return query_port_ex(c, port, reinterpret_cast<ibv_port_attr *>(pa),
                         offsetof(ibv_port_attr, link_layer));
}

VV_EXPORT int ibv_query_gid(ibv_context *c, std::uint8_t port, int index, ibv_gid *gid) {
    if (port != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    std::memset(gid, 0, sizeof(*gid));
    std::memcpy(gid->raw, to_ctx(c)->attr.hw_addr.data(), 6);
    return 0;
}

VV_EXPORT int _ibv_query_gid_ex(ibv_context *c, std::uint32_t port, std::uint32_t index,
                                ibv_gid_entry *entry, std::uint32_t flags, size_t size) {
    if (flags)
        return EINVAL;
    if (port != 1 || index != 0)
        return ENODATA;
    ibv_gid_entry e{};
    std::memcpy(e.gid.raw, to_ctx(c)->attr.hw_addr.data(), 6);
    e.gid_index = 0;
    e.port_num = 1;
    e.gid_type = IBV_GID_TYPE_IB;
    e.ndev_ifindex = to_ctx(c)->attr.ifindex;
    std::memcpy(entry, &e, std::min(size, sizeof(e)));
    return 0;
}

VV_EXPORT ssize_t _ibv_query_gid_table(ibv_context *c, ibv_gid_entry *entries, size_t max_entries,
                                       std::uint32_t flags, size_t size) {
    if (flags || size < sizeof(ibv_gid_entry)) {
        errno = EINVAL;
        return -EINVAL;
    }
    if (max_entries < 1)
        return -EINVAL;
    if (int err = _ibv_query_gid_ex(c, 1, 0, entries, 0, size))
        return -err;
    return 1;
}

// rdma-core's private helper (IBVERBS_PRIVATE), used by ibv_devinfo. Its
// enum ibv_gid_type_sysfs is not in the public header: 0 is the IB/RoCE v1
// type, which iWARP GIDs have.
VV_EXPORT int ibv_query_gid_type(ibv_context *, std::uint8_t port, unsigned index, int *type) {
    if (port != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *type = 0;
    return 0;
}

VV_EXPORT int ibv_query_pkey(ibv_context *, std::uint8_t port, int index, __be16 *pkey) {
    if (port != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htons(0xffff);
    return 0;
}

VV_EXPORT int ibv_get_pkey_index(ibv_context *, std::uint8_t port, __be16 pkey) {
    if (port != 1 || pkey != htons(0xffff)) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

// --- Asynchronous events ------------------------------------------------

VV_EXPORT int ibv_get_async_event(ibv_context *c, ibv_async_event *event) {
    Context &ctx = *to_ctx(c);
    return guarded(-1, [&] {
        for (;;) {
            auto timeout = nonblocking(ctx.async_epfd) ? std::chrono::milliseconds(0)
                                                       : std::chrono::milliseconds(-1);
            std::optional<viaduct::AsyncEvent> ev = ctx.native.read_event(timeout);
            if (!ev)
                throw viaduct::Error(EAGAIN, "no event");
            std::memset(event, 0, sizeof(*event));
            using T = viaduct::AsyncEventType;
            if (ev->type == T::DeviceFatal) {
                event->event_type = IBV_EVENT_DEVICE_FATAL;
                event->element.port_num = 1;
                return 0;
            }
            if (ev->type == T::SrqLimit || ev->type == T::SrqError) {
                Srq *srq = find_srq(ctx, ev->handle);
                if (!srq)
                    continue; // destroyed since
                pthread_mutex_lock(&srq->srq.mutex);
                srq->async_events++;
                pthread_mutex_unlock(&srq->srq.mutex);
                event->event_type =
                    ev->type == T::SrqLimit ? IBV_EVENT_SRQ_LIMIT_REACHED : IBV_EVENT_SRQ_ERR;
                event->element.srq = &srq->srq;
                return 0;
            }
            if (ev->type == T::CqError) {
                Cq *cq = find_cq(ctx, ev->handle);
                if (!cq)
                    continue; // destroyed since
                pthread_mutex_lock(&cq->cq.mutex);
                cq->async_events++;
                pthread_mutex_unlock(&cq->cq.mutex);
                event->event_type = IBV_EVENT_CQ_ERR;
                event->element.cq = &cq->cq;
                return 0;
            }
            Qp *qp = nullptr;
            {
                std::shared_lock<std::shared_mutex> guard(ctx.qps_lock);
                if (auto it = ctx.qps_by_handle.find(ev->handle); it != ctx.qps_by_handle.end())
                    qp = it->second;
            }
            if (!qp)
                continue; // destroyed since
            switch (ev->type) {
            case T::QpFatal:
                event->event_type = IBV_EVENT_QP_FATAL;
                break;
            case T::QpRequestError:
                event->event_type = IBV_EVENT_QP_REQ_ERR;
                break;
            case T::QpAccessError:
                event->event_type = IBV_EVENT_QP_ACCESS_ERR;
                break;
            case T::CommunicationEstablished:
                event->event_type = IBV_EVENT_COMM_EST;
                break;
            case T::SqDrained:
                event->event_type = IBV_EVENT_SQ_DRAINED;
                break;
            case T::QpLastWqe:
                event->event_type = IBV_EVENT_QP_LAST_WQE_REACHED;
                break;
            default:
                continue;
            }
            pthread_mutex_lock(&qp->qp.mutex);
            qp->async_events++;
            pthread_mutex_unlock(&qp->qp.mutex);
            event->element.qp = &qp->qp;
            return 0;
        }
    });
}

VV_EXPORT void ibv_ack_async_event(ibv_async_event *event) {
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
        ibv_cq *cq = event->element.cq;
        pthread_mutex_lock(&cq->mutex);
        cq->async_events_completed++;
        pthread_cond_broadcast(&cq->cond);
        pthread_mutex_unlock(&cq->mutex);
        return;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
        ibv_srq *srq = event->element.srq;
        pthread_mutex_lock(&srq->mutex);
        srq->events_completed++;
        pthread_cond_broadcast(&srq->cond);
        pthread_mutex_unlock(&srq->mutex);
        return;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: {
        ibv_qp *qp = event->element.qp;
        pthread_mutex_lock(&qp->mutex);
        qp->events_completed++;
        pthread_cond_broadcast(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
        return;
    }
    default:
        return;
    }
}

// --- Protection domains and memory regions -------------------------------

VV_EXPORT ibv_pd *ibv_alloc_pd(ibv_context *c) {
    return guarded<ibv_pd *>(nullptr, [&] {
        auto pd = std::make_unique<Pd>(viaduct::ProtectionDomain(to_ctx(c)->native));
        pd->pd.context = c;
        pd->pd.handle = pd->native.handle();
        return &pd.release()->pd;
    });
}

VV_EXPORT int ibv_dealloc_pd(ibv_pd *ibpd) {
    Pd *pd = to_pd(ibpd);
    if (pd->users.load() > 0)
        return EBUSY;
    delete pd;
    return 0;
}

namespace {

ibv_mr *reg_mr(ibv_pd *ibpd, void *addr, size_t length, std::uint64_t iova, unsigned access) {
    return guarded<ibv_mr *>(nullptr, [&] {
        access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
        if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
            !(access & IBV_ACCESS_LOCAL_WRITE))
            throw viaduct::Error(EINVAL, "remote write needs local write");
        if (access & ~static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                            IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND))
            throw viaduct::Error(EOPNOTSUPP, "atomics, on-demand paging, zero-based");
        if (iova != reinterpret_cast<std::uintptr_t>(addr))
            throw viaduct::Error(EOPNOTSUPP, "an iova other than the address");
        std::uint32_t a = 0;
        if (access & IBV_ACCESS_LOCAL_WRITE)
            a |= viaduct::access::local_write;
        if (access & IBV_ACCESS_REMOTE_WRITE)
            a |= viaduct::access::remote_write;
        if (access & IBV_ACCESS_REMOTE_READ)
            a |= viaduct::access::remote_read;
        if (access & IBV_ACCESS_MW_BIND)
            a |= viaduct::access::mw_bind;
        Pd *pd = to_pd(ibpd);
        auto mr = std::make_unique<Mr>(viaduct::MemoryRegion(pd->native, addr, length, a), pd);
        ibv_mr &m = mr->mr;
        m.context = ibpd->context;
        m.pd = ibpd;
        m.addr = addr;
        m.length = length;
        m.handle = mr->native.handle();
        m.lkey = mr->native.lkey();
        m.rkey = mr->native.rkey();
        pd->users++;
        return &mr.release()->mr;
    });
}

} // namespace

VV_EXPORT ibv_mr *ibv_reg_mr(ibv_pd *pd, void *addr, size_t length, int access) {
    return reg_mr(pd, addr, length, reinterpret_cast<std::uintptr_t>(addr),
                  static_cast<unsigned>(access));
}

VV_EXPORT ibv_mr *ibv_reg_mr_iova(ibv_pd *pd, void *addr, size_t length, std::uint64_t iova,
                                  int access) {
    return reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

VV_EXPORT ibv_mr *ibv_reg_mr_iova2(ibv_pd *pd, void *addr, size_t length, std::uint64_t iova,
                                   unsigned access) {
    return reg_mr(pd, addr, length, iova, access);
}

VV_EXPORT ibv_mr *ibv_reg_dmabuf_mr(ibv_pd *, std::uint64_t, size_t, std::uint64_t, int, int) {
    errno = EOPNOTSUPP;
    return nullptr;
}

VV_EXPORT int ibv_rereg_mr(ibv_mr *, int, ibv_pd *, void *, size_t, int) {
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT;
}

VV_EXPORT int ibv_dereg_mr(ibv_mr *ibmr) {
    Mr *mr = to_mr(ibmr);
    mr->pd->users--;
    delete mr;
    return 0;
}

// --- Completion channels and queues -------------------------------------

VV_EXPORT ibv_comp_channel *ibv_create_comp_channel(ibv_context *c) {
    return guarded<ibv_comp_channel *>(nullptr, [&] {
        auto ch = std::make_unique<CompChannel>(viaduct::CompletionChannel(to_ctx(c)->native));
        ch->ch.context = c;
        ch->ch.fd = wrap_fd(ch->native.fd());
        if (ch->ch.fd < 0)
            throw viaduct::Error(errno, "cannot make the channel's descriptor");
        return &ch.release()->ch;
    });
}

VV_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel *c) {
    CompChannel *ch = to_channel(c);
    if (ch->users.load() > 0) {
        errno = EBUSY;
        return -1;
    }
    ::close(c->fd);
    delete ch;
    return 0;
}

VV_EXPORT ibv_cq *ibv_create_cq(ibv_context *c, int cqe, void *cq_context,
                                ibv_comp_channel *channel, int comp_vector) {
    return guarded<ibv_cq *>(nullptr, [&] {
        Context &ctx = *to_ctx(c);
        if (cqe < 1 || static_cast<std::uint32_t>(cqe) > ctx.attr.limits.max_cqe ||
            comp_vector < 0 || comp_vector >= c->num_comp_vectors)
            throw viaduct::Error(EINVAL, "bad CQ size or vector");
        auto cq = std::make_unique<Cq>();
        CompChannel *ch = channel ? to_channel(channel) : nullptr;
        cq->native.emplace(ctx.native, static_cast<std::uint32_t>(cqe), ch ? &ch->native : nullptr,
                           reinterpret_cast<std::uintptr_t>(cq.get()));
        cq->channel = ch;
        ibv_cq &q = cq->cq;
        q.context = c;
        q.channel = channel;
        q.cq_context = cq_context;
        q.handle = cq->native->handle();
        q.cqe = static_cast<int>(cq->native->entries());
        pthread_mutex_init(&q.mutex, nullptr);
        pthread_cond_init(&q.cond, nullptr);
        if (ch)
            ch->users++;
        {
            std::unique_lock<std::shared_mutex> guard(ctx.qps_lock);
            ctx.cqs_by_handle[q.handle] = cq.get();
        }
        return &cq.release()->cq;
    });
}

VV_EXPORT int ibv_resize_cq(ibv_cq *ibcq, int cqe) {
    return guarded_err([&] {
        if (cqe < 1 || static_cast<std::uint32_t>(cqe) > to_ctx(ibcq->context)->attr.limits.max_cqe)
            throw viaduct::Error(EINVAL, "bad CQ size");
        ibcq->cqe = static_cast<int>(to_cq(ibcq)->native->resize(static_cast<std::uint32_t>(cqe)));
    });
}

VV_EXPORT int ibv_destroy_cq(ibv_cq *ibcq) {
    Cq *cq = to_cq(ibcq);
    if (cq->users.load() > 0)
        return EBUSY;
    wait_events(ibcq->mutex, ibcq->cond, ibcq->comp_events_completed, cq->comp_events);
    wait_events(ibcq->mutex, ibcq->cond, ibcq->async_events_completed, cq->async_events);
    if (cq->channel)
        cq->channel->users--;
    {
        Context &ctx = *to_ctx(ibcq->context);
        std::unique_lock<std::shared_mutex> guard(ctx.qps_lock);
        ctx.cqs_by_handle.erase(ibcq->handle);
    }
    delete cq;
    return 0;
}

VV_EXPORT int ibv_get_cq_event(ibv_comp_channel *channel, ibv_cq **cq, void **cq_context) {
    CompChannel &ch = *to_channel(channel);
    return guarded(-1, [&] {
        Cq *q = nullptr;
        while (!q) {
            const bool nb = nonblocking(channel->fd);
            std::optional<viaduct::CqEvent> ev =
                ch.native.wait(std::chrono::milliseconds(nb ? 0 : -1));
            if (!ev)
                throw viaduct::Error(EAGAIN, "no event");
            q = find_cq(*to_ctx(channel->context), ev->cq_handle); // null: destroyed since
        }
        pthread_mutex_lock(&q->cq.mutex);
        q->comp_events++;
        pthread_mutex_unlock(&q->cq.mutex);
        *cq = &q->cq;
        *cq_context = q->cq.cq_context;
        return 0;
    });
}

VV_EXPORT void ibv_ack_cq_events(ibv_cq *cq, unsigned nevents) {
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_broadcast(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

// --- Queue pairs --------------------------------------------------------

VV_EXPORT ibv_qp *ibv_create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) {
    return guarded<ibv_qp *>(nullptr, [&] { return create_qp(pd, attr, false); });
}

VV_EXPORT ibv_qp_ex *ibv_qp_to_qp_ex(ibv_qp *) {
    errno = EOPNOTSUPP; // QPs made with ibv_create_qp() have no ibv_qp_ex
    return nullptr;
}

VV_EXPORT int ibv_modify_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int mask) {
    Qp &qp = *to_qp(ibqp);
    return guarded_err([&] {
        const unsigned m = static_cast<unsigned>(mask);
        viaduct::QpModify mod;
        bool keep_state = false;
        if (m & IBV_QP_ACCESS_FLAGS) {
            if (attr->qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC)
                throw viaduct::Error(EOPNOTSUPP, "no atomics");
            mod.access = to_qp_access(attr->qp_access_flags);
        }
        if (m & IBV_QP_MAX_QP_RD_ATOMIC)
            mod.ord = attr->max_rd_atomic;
        if (m & IBV_QP_MAX_DEST_RD_ATOMIC)
            mod.ird = attr->max_dest_rd_atomic;
        if (m & IBV_QP_STATE) {
            viaduct::QpState now = qp.native->query().state;
            switch (attr->qp_state) {
            case IBV_QPS_RESET:
            case IBV_QPS_INIT:
            case IBV_QPS_RTR:
            case IBV_QPS_RTS:
                // iWARP QPs wait in Idle for the CM, which moves them to
                // RTS when it connects them; like other iWARP devices, a
                // connected QP takes the steps rdma_init_qp_attr() lists
                // as attribute changes. One in Error is reset.
                if (now == viaduct::QpState::Error && attr->qp_state == IBV_QPS_RESET)
                    mod.state = viaduct::QpState::Idle;
                else if (now == viaduct::QpState::Rts)
                    keep_state = true;
                else if (now != viaduct::QpState::Idle)
                    throw viaduct::Error(EINVAL, "the QP is closing or in error");
                break;
            case IBV_QPS_ERR:
                mod.state = viaduct::QpState::Error;
                break;
            default:
                throw viaduct::Error(EINVAL, "no such state transition on iWARP");
            }
        }
        if (mod.state || mod.access || mod.ord || mod.ird) {
            // Idle QPs only take attributes; a connected one only a state.
            if (!mod.state || qp.native->query().state == viaduct::QpState::Idle)
                qp.native->modify(mod);
            else
                qp.native->modify(*mod.state);
        }
        if (m & IBV_QP_ACCESS_FLAGS)
            qp.access = attr->qp_access_flags;
        if ((m & IBV_QP_STATE) && !keep_state)
            ibqp->state = attr->qp_state;
    });
}

VV_EXPORT int ibv_query_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int, ibv_qp_init_attr *init) {
    Qp &qp = *to_qp(ibqp);
    return guarded_err([&] {
        viaduct::QpAttributes a = qp.native->query();
        std::memset(attr, 0, sizeof(*attr));
        attr->qp_state = to_ib_state(a.state, ibqp->state);
        attr->cur_qp_state = attr->qp_state;
        attr->qp_access_flags = qp.access;
        attr->cap = qp.cap;
        attr->max_rd_atomic = static_cast<std::uint8_t>(std::min(a.ord, 255u));
        attr->max_dest_rd_atomic = static_cast<std::uint8_t>(std::min(a.ird, 255u));
        attr->port_num = 1;
        std::memset(init, 0, sizeof(*init));
        init->qp_context = ibqp->qp_context;
        init->send_cq = ibqp->send_cq;
        init->recv_cq = ibqp->recv_cq;
        init->srq = ibqp->srq;
        init->cap = qp.cap;
        init->qp_type = IBV_QPT_RC;
        init->sq_sig_all = qp.sq_sig_all;
    });
}

VV_EXPORT int ibv_query_qp_data_in_order(ibv_qp *, ibv_wr_opcode, std::uint32_t) {
    return 0; // placement is out of order on iWARP
}

VV_EXPORT int ibv_destroy_qp(ibv_qp *ibqp) {
    Qp *qp = to_qp(ibqp);
    Context &ctx = *to_ctx(ibqp->context);
    wait_events(ibqp->mutex, ibqp->cond, ibqp->events_completed, qp->async_events);
    {
        std::unique_lock<std::shared_mutex> guard(ctx.qps_lock);
        ctx.qps_by_handle.erase(ibqp->handle);
        ctx.qps_by_qpn.erase(ibqp->qp_num);
        // Its CQs forget its number: a QP made later may get its handle.
        // (Under the lock, which every fill of the caches holds shared.)
        for (Cq *cq : {qp->send_cq, qp->recv_cq}) {
            const std::uint64_t last = cq->last_qp.load(std::memory_order_relaxed);
            if (static_cast<std::uint32_t>(last >> 32) == ibqp->handle)
                cq->last_qp.store(0, std::memory_order_release);
        }
    }
    qp->pd->users--;
    qp->send_cq->users--;
    qp->recv_cq->users--;
    if (qp->srq)
        qp->srq->users--;
    delete qp;
    return 0;
}

// --- Shared receive queues ----------------------------------------------
//
// ibv_create_srq_ex() (an inline function) comes here for a basic SRQ on a
// PD; XRC and tag-matching SRQs find no create_srq_ex in the context and
// fail with EOPNOTSUPP, as on a device without them.

VV_EXPORT ibv_srq *ibv_create_srq(ibv_pd *ibpd, ibv_srq_init_attr *init) {
    return guarded<ibv_srq *>(nullptr, [&] {
        Pd &pd = *to_pd(ibpd);
        Context &ctx = *to_ctx(ibpd->context);
        if (!(ctx.attr.caps & VIADUCT_DEV_CAP_SRQ))
            throw viaduct::Error(EOPNOTSUPP, "no shared receive queues");
        const ibv_srq_attr &a = init->attr;
        const viaduct::DeviceLimits &l = ctx.attr.limits;
        if (a.max_wr > l.max_qp_wr || a.max_sge > l.max_sge || a.srq_limit > a.max_wr)
            throw viaduct::Error(EINVAL, "SRQ attributes beyond the device's");
        auto srq = std::make_unique<Srq>();
        viaduct::SrqConfig cfg;
        cfg.depth = std::max(1u, a.max_wr);
        cfg.max_sge = std::max(1u, a.max_sge);
        cfg.user_data = reinterpret_cast<std::uintptr_t>(srq.get());
        srq->native.emplace(pd.native, cfg);
        if (a.srq_limit)
            srq->native->arm_limit(a.srq_limit);
        srq->pd = &pd;
        init->attr.max_wr = srq->native->depth();
        init->attr.max_sge = srq->native->max_sge();
        ibv_srq &q = srq->srq;
        q.context = ibpd->context;
        q.srq_context = init->srq_context;
        q.pd = ibpd;
        q.handle = srq->native->handle();
        pthread_mutex_init(&q.mutex, nullptr);
        pthread_cond_init(&q.cond, nullptr);
        {
            std::unique_lock<std::shared_mutex> guard(ctx.qps_lock);
            ctx.srqs_by_handle[q.handle] = srq.get();
        }
        pd.users++;
        return &srq.release()->srq;
    });
}

// Arms the limit (IBV_SRQ_LIMIT); the depth cannot change (IBV_SRQ_MAX_WR
// is EOPNOTSUPP, as from a device without IBV_DEVICE_SRQ_RESIZE).
VV_EXPORT int ibv_modify_srq(ibv_srq *ibsrq, ibv_srq_attr *attr, int mask) {
    return guarded_err([&] {
        const unsigned m = static_cast<unsigned>(mask);
        if (m & ~static_cast<unsigned>(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
            throw viaduct::Error(EINVAL, "unknown SRQ attribute");
        if (m & IBV_SRQ_MAX_WR)
            throw viaduct::Error(EOPNOTSUPP, "an SRQ cannot be resized");
        if (m & IBV_SRQ_LIMIT)
            to_srq(ibsrq)->native->arm_limit(attr->srq_limit);
    });
}

VV_EXPORT int ibv_query_srq(ibv_srq *ibsrq, ibv_srq_attr *attr) {
    return guarded_err([&] {
        viaduct::SrqAttributes a = to_srq(ibsrq)->native->query();
        attr->max_wr = a.depth;
        attr->max_sge = a.max_sge;
        attr->srq_limit = a.limit;
    });
}

VV_EXPORT int ibv_destroy_srq(ibv_srq *ibsrq) {
    Srq *srq = to_srq(ibsrq);
    if (srq->users.load() > 0)
        return EBUSY;
    wait_events(ibsrq->mutex, ibsrq->cond, ibsrq->events_completed, srq->async_events);
    {
        Context &ctx = *to_ctx(ibsrq->context);
        std::unique_lock<std::shared_mutex> guard(ctx.qps_lock);
        ctx.srqs_by_handle.erase(ibsrq->handle);
    }
    srq->pd->users--;
    delete srq;
    return 0;
}

// --- What iWARP (or viaduct) does not have ------------------------------

VV_EXPORT ibv_ah *ibv_create_ah(ibv_pd *, ibv_ah_attr *) {
    errno = EOPNOTSUPP;
    return nullptr;
}
VV_EXPORT int ibv_destroy_ah(ibv_ah *) {
    return EOPNOTSUPP;
}
VV_EXPORT ibv_ah *ibv_create_ah_from_wc(ibv_pd *, ibv_wc *, ibv_grh *, std::uint8_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
VV_EXPORT int ibv_init_ah_from_wc(ibv_context *, std::uint8_t, ibv_wc *, ibv_grh *, ibv_ah_attr *) {
    errno = EOPNOTSUPP;
    return -1;
}
VV_EXPORT int ibv_attach_mcast(ibv_qp *, const ibv_gid *, std::uint16_t) {
    return EOPNOTSUPP;
}
VV_EXPORT int ibv_detach_mcast(ibv_qp *, const ibv_gid *, std::uint16_t) {
    return EOPNOTSUPP;
}
VV_EXPORT int ibv_query_ece(ibv_qp *, ibv_ece *) {
    return EOPNOTSUPP;
}
VV_EXPORT int ibv_set_ece(ibv_qp *, ibv_ece *) {
    return EOPNOTSUPP;
}
VV_EXPORT ibv_context *ibv_import_device(int) {
    errno = EOPNOTSUPP;
    return nullptr;
}
VV_EXPORT ibv_pd *ibv_import_pd(ibv_context *, std::uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
VV_EXPORT void ibv_unimport_pd(ibv_pd *) {}
VV_EXPORT ibv_mr *ibv_import_mr(ibv_pd *, std::uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
VV_EXPORT void ibv_unimport_mr(ibv_mr *) {}

// --- Fork support -------------------------------------------------------
//
// Registered memory is pinned by the kernel; after fork() the parent keeps
// its pages (the kernel's pinning uses FOLL_LONGTERM, and copy-on-write
// breaks toward the child), so nothing is needed from the library.

VV_EXPORT int ibv_fork_init(void) {
    return 0;
}
VV_EXPORT ibv_fork_status ibv_is_fork_initialized(void) {
    return IBV_FORK_UNNEEDED;
}
VV_EXPORT int ibv_dontfork_range(void *, size_t) {
    return 0;
}
VV_EXPORT int ibv_dofork_range(void *, size_t) {
    return 0;
}

// --- Helpers ------------------------------------------------------------

VV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size) {
    std::string path = std::string(dir) + "/" + file;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = ::read(fd, buf, size);
    ::close(fd);
    if (n <= 0)
        return -1;
    std::size_t len = static_cast<std::size_t>(n);
    if (len == size)
        --len;
    if (len > 0 && buf[len - 1] == '\n')
        --len;
    buf[len] = '\0';
    return static_cast<int>(len);
}

VV_EXPORT const char *ibv_node_type_str(ibv_node_type t) {
    switch (t) {
    case IBV_NODE_CA:
        return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
        return "InfiniBand switch";
    case IBV_NODE_ROUTER:
        return "InfiniBand router";
    case IBV_NODE_RNIC:
        return "iWARP NIC";
    case IBV_NODE_USNIC:
        return "usNIC";
    case IBV_NODE_USNIC_UDP:
        return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED:
        return "unspecified";
    default:
        return "unknown";
    }
}

VV_EXPORT const char *ibv_port_state_str(ibv_port_state s) {
    switch (s) {
    case IBV_PORT_NOP:
        return "PORT_NOP";
    case IBV_PORT_DOWN:
        return "PORT_DOWN";
    case IBV_PORT_INIT:
        return "PORT_INIT";
    case IBV_PORT_ARMED:
        return "PORT_ARMED";
    case IBV_PORT_ACTIVE:
        return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
        return "PORT_ACTIVE_DEFER";
    default:
        return "invalid state";
    }
}

VV_EXPORT const char *ibv_event_type_str(ibv_event_type e) {
    switch (e) {
    case IBV_EVENT_CQ_ERR:
        return "CQ error";
    case IBV_EVENT_QP_FATAL:
        return "local work queue catastrophic error";
    case IBV_EVENT_QP_REQ_ERR:
        return "invalid request local work queue error";
    case IBV_EVENT_QP_ACCESS_ERR:
        return "local access violation work queue error";
    case IBV_EVENT_COMM_EST:
        return "communication established";
    case IBV_EVENT_SQ_DRAINED:
        return "send queue drained";
    case IBV_EVENT_PATH_MIG:
        return "path migrated";
    case IBV_EVENT_PATH_MIG_ERR:
        return "path migration request error";
    case IBV_EVENT_DEVICE_FATAL:
        return "local catastrophic error";
    case IBV_EVENT_PORT_ACTIVE:
        return "port active";
    case IBV_EVENT_PORT_ERR:
        return "port error";
    case IBV_EVENT_LID_CHANGE:
        return "LID change";
    case IBV_EVENT_PKEY_CHANGE:
        return "P_Key change";
    case IBV_EVENT_SM_CHANGE:
        return "SM change";
    case IBV_EVENT_SRQ_ERR:
        return "SRQ catastrophic error";
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        return "SRQ limit reached";
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return "last WQE reached";
    case IBV_EVENT_CLIENT_REREGISTER:
        return "client reregistration";
    case IBV_EVENT_GID_CHANGE:
        return "GID table change";
    case IBV_EVENT_WQ_FATAL:
        return "WQ fatal";
    default:
        return "unknown";
    }
}

VV_EXPORT const char *ibv_wc_status_str(ibv_wc_status s) {
    switch (s) {
    case IBV_WC_SUCCESS:
        return "success";
    case IBV_WC_LOC_LEN_ERR:
        return "local length error";
    case IBV_WC_LOC_QP_OP_ERR:
        return "local QP operation error";
    case IBV_WC_LOC_EEC_OP_ERR:
        return "local EE context operation error";
    case IBV_WC_LOC_PROT_ERR:
        return "local protection error";
    case IBV_WC_WR_FLUSH_ERR:
        return "Work Request Flushed Error";
    case IBV_WC_MW_BIND_ERR:
        return "memory management operation error";
    case IBV_WC_BAD_RESP_ERR:
        return "bad response error";
    case IBV_WC_LOC_ACCESS_ERR:
        return "local access error";
    case IBV_WC_REM_INV_REQ_ERR:
        return "remote invalid request error";
    case IBV_WC_REM_ACCESS_ERR:
        return "remote access error";
    case IBV_WC_REM_OP_ERR:
        return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR:
        return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return "RNR retry counter exceeded";
    case IBV_WC_LOC_RDD_VIOL_ERR:
        return "local RDD violation error";
    case IBV_WC_REM_INV_RD_REQ_ERR:
        return "remote invalid RD request";
    case IBV_WC_REM_ABORT_ERR:
        return "aborted error";
    case IBV_WC_INV_EECN_ERR:
        return "invalid EE context number";
    case IBV_WC_INV_EEC_STATE_ERR:
        return "invalid EE context state";
    case IBV_WC_FATAL_ERR:
        return "fatal error";
    case IBV_WC_RESP_TIMEOUT_ERR:
        return "response timeout error";
    case IBV_WC_GENERAL_ERR:
        return "general error";
    case IBV_WC_TM_ERR:
        return "TM error";
    case IBV_WC_TM_RNDV_INCOMPLETE:
        return "TM software rendezvous";
    default:
        return "unknown";
    }
}

VV_EXPORT int ibv_rate_to_mult(ibv_rate rate) {
    switch (rate) {
    case IBV_RATE_2_5_GBPS:
        return 1;
    case IBV_RATE_5_GBPS:
        return 2;
    case IBV_RATE_10_GBPS:
        return 4;
    case IBV_RATE_20_GBPS:
        return 8;
    case IBV_RATE_30_GBPS:
        return 12;
    case IBV_RATE_40_GBPS:
        return 16;
    case IBV_RATE_60_GBPS:
        return 24;
    case IBV_RATE_80_GBPS:
        return 32;
    case IBV_RATE_120_GBPS:
        return 48;
    default:
        return -1;
    }
}

VV_EXPORT ibv_rate mult_to_ibv_rate(int mult) {
    switch (mult) {
    case 1:
        return IBV_RATE_2_5_GBPS;
    case 2:
        return IBV_RATE_5_GBPS;
    case 4:
        return IBV_RATE_10_GBPS;
    case 8:
        return IBV_RATE_20_GBPS;
    case 12:
        return IBV_RATE_30_GBPS;
    case 16:
        return IBV_RATE_40_GBPS;
    case 24:
        return IBV_RATE_60_GBPS;
    case 32:
        return IBV_RATE_80_GBPS;
    case 48:
        return IBV_RATE_120_GBPS;
    default:
        return IBV_RATE_MAX;
    }
}

VV_EXPORT int ibv_rate_to_mbps(ibv_rate rate) {
    int mult = ibv_rate_to_mult(rate);
    return mult < 0 ? -1 : mult * 2500;
}

VV_EXPORT ibv_rate mbps_to_ibv_rate(int mbps) {
    return mult_to_ibv_rate(mbps % 2500 ? -1 : mbps / 2500);
}
