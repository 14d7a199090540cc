// SPDX-License-Identifier: GPL-2.0
//
// Data transfer: the posts of an RC endpoint (send, send and unlink,
// receive, RDMA read and write), RMR link and unlink (they are work
// requests too), shared receive queues, and the completions' way back into
// a DTO SEVD (evd_fill).
//
// Every WR posted goes into a slot of its queue's shadow, made with the EP
// (or S-RQ); the core's wr_id names the slot, so the completion gives back
// the consumer's cookie and flags. A post never allocates, and fails for
// lack of room only, with IT_ERR_TOO_MANY_POSTS: the shadow holds exactly
// max_request_dtos (max_recv_dtos) WRs not yet known to be complete, and a
// completion of an SQ WR retires every earlier one (completion
// suppression: "a later completion implies the earlier ones").
#include <arpa/inet.h>
#include <cerrno>

#include "dto.hpp"
#include "internal.hpp"

namespace itapi {

namespace {

// The helpers of the posting and completion paths are always inlined: a
// call and its return are dear where they are emulated (under QEMU TCG a
// return is an indirect jump, looked up each time).

// LMR triplets as SGEs, into @out (at least @n long). The kernel checks
// each against its STag's bounds and rights when the WR executes.
[[gnu::always_inline]] inline it_status_t to_sges(const it_lmr_triplet_t *segs, std::size_t n,
                                                  viaduct::Sge *out) noexcept {
    for (std::size_t i = 0; i < n; i++) {
        Lmr *l = lookup<Lmr>(segs[i].lmr);
        if (l == nullptr)
            return IT_ERR_INVALID_LMR;
        if (segs[i].length > UINT32_MAX)
            return IT_ERR_INVALID_LENGTH;
        std::uint64_t addr =
            l->addr_mode == IT_ADDR_MODE_RELATIVE
                ? reinterpret_cast<std::uintptr_t>(l->addr) + std::uint64_t{segs[i].addr.rel}
                : reinterpret_cast<std::uintptr_t>(segs[i].addr.abs);
        out[i] = {addr, static_cast<std::uint32_t>(segs[i].length),
                  l->lkey.load(std::memory_order_relaxed)};
    }
    return IT_SUCCESS;
}

it_status_t post_error(const std::exception &e) noexcept {
    if (const auto *err = dynamic_cast<const viaduct::Error *>(&e)) {
        switch (err->errnum()) {
        case ENOMEM:
            return IT_ERR_TOO_MANY_POSTS;
        case EINVAL:
            return IT_ERR_INVALID_NUM_SEGMENTS;
        default:
            return status_of_errno(err->errnum(), IT_ERR_INVALID_EP_STATE);
        }
    }
    return IT_ERR_RESOURCES;
}

// A post to a NONOPERATIONAL EP is flushed: a QP that was closing when the
// connection ended may have gone back to Idle, where it would keep the WR.
// Once it is in Error it stays there until it_ep_reset: not asked again.
void flush_idle_qp_slow(Ep &ep) noexcept {
    try {
        viaduct::QpState st = ep.qp->query().state;
        if (st == viaduct::QpState::Idle) {
            ep.qp->modify(viaduct::QpState::Error);
            st = viaduct::QpState::Error;
        }
        if (st == viaduct::QpState::Error)
            ep.qp_in_error.store(true, std::memory_order_release);
    } catch (const std::exception &) {
        // in Error already, or the device is gone: the post says so
    }
}

[[gnu::always_inline]] inline void flush_idle_qp(Ep &ep) noexcept {
    if (!ep.qp_in_error.load(std::memory_order_acquire))
        flush_idle_qp_slow(ep);
}

// The EP of a send-queue post, checked; posting is allowed when CONNECTED
// and, to be flushed, NONOPERATIONAL.
[[gnu::always_inline]] inline it_status_t sq_ep(it_ep_handle_t h, Ep *&ep) noexcept {
    ep = lookup<Ep>(h);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    if (ep->ia->catastrophe.load(std::memory_order_relaxed))
        return IT_ERR_IA_CATASTROPHE;
    it_ep_state_rc_t st = ep->state.load(std::memory_order_acquire);
    if (st == IT_EP_STATE_CONNECTED)
        return IT_SUCCESS;
    if (st != IT_EP_STATE_NONOPERATIONAL)
        return IT_ERR_INVALID_EP_STATE;
    flush_idle_qp(*ep);
    return IT_SUCCESS;
}

// IT_NOTIFY_FLAG needs IT_COMPLETION_FLAG; @allowed lists the rest.
[[gnu::always_inline]] inline bool flags_ok(it_dto_flags_t f, int allowed) noexcept {
    if ((f & ~allowed) != 0)
        return false;
    return (f & IT_NOTIFY_FLAG) == 0 || (f & IT_COMPLETION_FLAG) != 0;
}

// Posts @wr on @ep's send queue with @sh in its slot. The slot is written
// before the WR is posted, so its completion finds it.
[[gnu::always_inline]] inline it_status_t post_sq(Ep &ep, viaduct::SendWr &wr,
                                                  const WrShadow &sh) noexcept {
    std::uint64_t seq = ep.sq_posted;
    if (seq - ep.sq_retired.load(std::memory_order_acquire) >= ep.sq_limit)
        return IT_ERR_TOO_MANY_POSTS;
    ep.sq[seq & ep.sq_mask] = sh;
    wr.wr_id = make_wr_id(ep.epoch.load(std::memory_order_relaxed), seq);
    wr.signaled = (sh.flags & IT_COMPLETION_FLAG) != 0;
    wr.read_fence = wr.read_fence || (sh.flags & IT_BARRIER_FENCE_FLAG) != 0;
    bool notify = (sh.flags & IT_NOTIFY_FLAG) != 0;
    if (notify)
        notify_posted(*ep.ia);
    try {
        if (!ep.qp->try_post_send(std::span<const viaduct::SendWr>(&wr, 1))) {
            if (notify)
                notify_unposted(*ep.ia);
            return IT_ERR_TOO_MANY_POSTS;
        }
    } catch (const std::exception &e) {
        if (notify)
            notify_unposted(*ep.ia);
        return post_error(e);
    }
    ep.sq_posted = seq + 1;
    return IT_SUCCESS;
}

constexpr int sq_flags =
    IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_BARRIER_FENCE_FLAG | IT_COALESCE_WR_FLAG;

// Send, Send with Invalidate, RDMA Write and Read: they differ in the
// opcode, the segment limit and the remote fields.
[[gnu::always_inline]] inline it_status_t
post_dto(it_ep_handle_t ep_handle, const it_lmr_triplet_t *segs, std::size_t n,
         it_dto_cookie_t cookie, it_dto_flags_t flags, viaduct::SendOp op, it_event_type_t event,
         std::uint64_t remote_addr, std::uint32_t remote_stag) noexcept {
    Ep *ep;
    if (it_status_t st = sq_ep(ep_handle, ep); st != IT_SUCCESS)
        return st;
    bool send = op == viaduct::SendOp::Send || op == viaduct::SendOp::SendWithInvalidate;
    int allowed = sq_flags | (send ? IT_SOLICITED_WAIT_FLAG : 0);
    if (!flags_ok(flags, allowed))
        return IT_ERR_INVALID_DTO_FLAGS;
    std::size_t max = op == viaduct::SendOp::RdmaRead    ? ep->attr.srv.rc.max_rdma_read_segments
                      : op == viaduct::SendOp::RdmaWrite ? ep->attr.srv.rc.max_rdma_write_segments
                                                         : ep->attr.max_send_segments;
    if (n > max || n > ep->sq_sge.size() || (n > 0 && segs == nullptr))
        return IT_ERR_INVALID_NUM_SEGMENTS;
    if (it_status_t st = to_sges(segs, n, ep->sq_sge.data()); st != IT_SUCCESS)
        return st;
    viaduct::SendWr wr;
    wr.opcode = op;
    wr.solicited = (flags & IT_SOLICITED_WAIT_FLAG) != 0;
    wr.sge = std::span<const viaduct::Sge>(ep->sq_sge.data(), n);
    wr.remote_addr = remote_addr;
    wr.remote_stag = remote_stag;
    WrShadow sh;
    sh.cookie = cookie;
    sh.flags = flags;
    sh.event = event;
    return post_sq(*ep, wr, sh);
}

} // namespace

// An RMR's link or unlink moved it: its LMR and (narrow) EP references.
void rmr_let_go(Rmr &rmr) noexcept {
    if (!rmr.linked)
        return;
    if (rmr.lmr != nullptr && lookup<Lmr>(rmr.lmr_handle) == rmr.lmr)
        rmr.lmr->links--;
    if (rmr.ep != nullptr && lookup<Ep>(rmr.ep_handle) == rmr.ep)
        rmr.ep->narrow_rmrs--;
    rmr.linked = false;
    rmr.lmr = nullptr;
    rmr.lmr_handle = nullptr;
    rmr.ep = nullptr;
    rmr.ep_handle = nullptr;
}

} // namespace itapi

using namespace itapi;

extern "C" {

it_status_t it_post_send(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments,
                         size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags) {
    return post_dto(ep_handle, local_segments, num_segments, cookie, dto_flags,
                    viaduct::SendOp::Send, IT_DTO_SEND_CMPL_EVENT, 0, 0);
}

it_status_t it_post_send_and_unlink(it_ep_handle_t ep_handle,
                                    const it_lmr_triplet_t *local_segments, size_t num_segments,
                                    it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                                    it_rmr_context_t rmr_context) {
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    if ((ep->ia->attr.caps & VIADUCT_DEV_CAP_SEND_INV) == 0)
        return IT_ERR_OP_NOT_SUPPORTED;
    return post_dto(ep_handle, local_segments, num_segments, cookie, dto_flags,
                    viaduct::SendOp::SendWithInvalidate, IT_DTO_SEND_CMPL_EVENT, 0,
                    ntohl(rmr_context));
}

it_status_t it_post_rdma_write(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments,
                               size_t num_segments, it_dto_cookie_t cookie,
                               it_dto_flags_t dto_flags, it_rdma_addr_t rdma_addr,
                               it_rmr_context_t rmr_context) {
    return post_dto(ep_handle, local_segments, num_segments, cookie, dto_flags,
                    viaduct::SendOp::RdmaWrite, IT_DTO_RDMA_WRITE_CMPL_EVENT, it_ntoh64(rdma_addr),
                    ntohl(rmr_context));
}

it_status_t it_post_rdma_read(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments,
                              size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                              it_rdma_addr_t rdma_addr, it_rmr_context_t rmr_context) {
    // IT_UNLINK_LOCAL_SINK is one of rdma_read_local_extensions: refused by
    // the flag check
    return post_dto(ep_handle, local_segments, num_segments, cookie, dto_flags,
                    viaduct::SendOp::RdmaRead, IT_DTO_RDMA_READ_CMPL_EVENT, it_ntoh64(rdma_addr),
                    ntohl(rmr_context));
}

it_status_t it_post_recv(it_handle_t handle, const it_lmr_triplet_t *local_segments,
                         size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags) {
    Object *o = HandleTable::instance().find(handle);
    if (o == nullptr)
        return IT_ERR_INVALID_HANDLE;
    // a receive always completes with an event
    constexpr int allowed = IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_COALESCE_WR_FLAG;
    if (!flags_ok(dto_flags, allowed) || (dto_flags & IT_COMPLETION_FLAG) == 0)
        return IT_ERR_INVALID_DTO_FLAGS;
    if (num_segments > 0 && local_segments == nullptr)
        return IT_ERR_INVALID_NUM_SEGMENTS;
    WrShadow sh;
    sh.cookie = cookie;
    sh.flags = dto_flags;
    sh.event = IT_DTO_RC_RECV_CMPL_EVENT;
    bool notify = (dto_flags & IT_NOTIFY_FLAG) != 0;
    if (o->type == Kind::Srq) {
        auto &srq = *static_cast<Srq *>(o);
        if (srq.ia->catastrophe.load(std::memory_order_relaxed))
            return IT_ERR_IA_CATASTROPHE;
        if (num_segments > srq.max_recv_segs)
            return IT_ERR_INVALID_NUM_SEGMENTS;
        std::lock_guard guard(srq.lock);
        if (srq.free_slots.empty())
            return IT_ERR_TOO_MANY_POSTS;
        if (it_status_t st = to_sges(local_segments, num_segments, srq.sge.data());
            st != IT_SUCCESS)
            return st;
        std::uint32_t slot = srq.free_slots.back();
        viaduct::RecvWr wr;
        wr.wr_id = slot;
        wr.sge = std::span<const viaduct::Sge>(srq.sge.data(), num_segments);
        if (notify)
            notify_posted(*srq.ia);
        try {
            if (!srq.srq->try_post_recv(std::span<const viaduct::RecvWr>(&wr, 1))) {
                if (notify)
                    notify_unposted(*srq.ia);
                return IT_ERR_TOO_MANY_POSTS;
            }
        } catch (const std::exception &e) {
            if (notify)
                notify_unposted(*srq.ia);
            return post_error(e);
        }
        srq.free_slots.pop_back();
        srq.shadow[slot] = sh;
        return IT_SUCCESS;
    }
    if (o->type != Kind::Ep)
        return IT_ERR_INVALID_HANDLE;
    auto &ep = *static_cast<Ep *>(o);
    if (ep.ia->catastrophe.load(std::memory_order_relaxed))
        return IT_ERR_IA_CATASTROPHE;
    if (ep.srq != nullptr)
        return IT_ERR_INVALID_SRQ;
    // receives may be posted in every state: before connecting the QP
    // keeps them, once NONOPERATIONAL they complete as flushed
    if (ep.state.load(std::memory_order_acquire) == IT_EP_STATE_NONOPERATIONAL)
        flush_idle_qp(ep);
    if (num_segments > ep.attr.max_rcv_segments || num_segments > ep.rq_sge.size())
        return IT_ERR_INVALID_NUM_SEGMENTS;
    std::uint64_t seq = ep.rq_posted;
    if (seq - ep.rq_retired.load(std::memory_order_acquire) >= ep.rq_limit)
        return IT_ERR_TOO_MANY_POSTS;
    if (it_status_t st = to_sges(local_segments, num_segments, ep.rq_sge.data()); st != IT_SUCCESS)
        return st;
    ep.rq[seq & ep.rq_mask] = sh;
    viaduct::RecvWr wr;
    wr.wr_id = make_wr_id(ep.epoch.load(std::memory_order_relaxed), seq);
    wr.sge = std::span<const viaduct::Sge>(ep.rq_sge.data(), num_segments);
    if (notify)
        notify_posted(*ep.ia);
    try {
        if (!ep.qp->try_post_recv(std::span<const viaduct::RecvWr>(&wr, 1))) {
            if (notify)
                notify_unposted(*ep.ia);
            return IT_ERR_TOO_MANY_POSTS;
        }
    } catch (const std::exception &e) {
        if (notify)
            notify_unposted(*ep.ia);
        return post_error(e);
    }
    ep.rq_posted = seq + 1;
    return IT_SUCCESS;
}

it_status_t it_rmr_link(it_rmr_handle_t rmr_handle, it_lmr_handle_t lmr_handle, void *addr,
                        it_length_t length, it_addr_mode_t addr_mode, it_mem_priv_t privs,
                        it_ep_handle_t ep_handle, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                        it_rmr_context_t *rmr_context) {
    Rmr *rmr = lookup<Rmr>(rmr_handle);
    if (rmr == nullptr)
        return IT_ERR_INVALID_RMR;
    Lmr *lmr = lookup<Lmr>(lmr_handle);
    if (lmr == nullptr)
        return IT_ERR_INVALID_LMR;
    Ep *ep;
    if (it_status_t st = sq_ep(ep_handle, ep); st != IT_SUCCESS)
        return st;
    if (ep->state.load() != IT_EP_STATE_CONNECTED)
        return IT_ERR_INVALID_EP_STATE;
    if (rmr_context == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (!flags_ok(dto_flags, sq_flags))
        return IT_ERR_INVALID_DTO_FLAGS;
    if (privs == 0 || (privs & ~IT_PRIV_REMOTE) != 0)
        return IT_ERR_INVALID_PRIVS;
    if (addr_mode != IT_ADDR_MODE_ABSOLUTE && addr_mode != IT_ADDR_MODE_RELATIVE)
        return IT_ERR_INVALID_ADDR_MODE;
    if (lmr->addr_mode != IT_ADDR_MODE_ABSOLUTE)
        return IT_ERR_INVALID_ADDR_MODE;
    if (rmr->pz != lmr->pz || rmr->pz != ep->pz)
        return IT_ERR_INVALID_PZ;
    auto start = reinterpret_cast<std::uintptr_t>(addr);
    auto base = reinterpret_cast<std::uintptr_t>(lmr->addr);
    if (length == 0 || length > UINT32_MAX)
        return IT_ERR_INVALID_LENGTH;
    if (start < base || start - base > lmr->length || length > lmr->length - (start - base))
        return IT_ERR_RANGE;
    std::lock_guard rguard(rmr->lock);
    if (rmr->linked && rmr->rmr_type == IT_RMR_TYPE_NARROW)
        return IT_ERR_INVALID_RMR; // unlink it first
    std::uint32_t cur = ntohl(rmr->context);
    std::uint32_t stag = viaduct::with_key(cur, static_cast<std::uint8_t>((cur & 0xff) + 1));
    std::uint32_t acc = 0;
    if ((privs & IT_PRIV_REMOTE_READ) != 0)
        acc |= viaduct::access::remote_read;
    if ((privs & IT_PRIV_REMOTE_WRITE) != 0)
        acc |= viaduct::access::remote_write;
    if (addr_mode == IT_ADDR_MODE_RELATIVE)
        acc |= viaduct::access::zero_based;
    ep->sq_sge[0] = {start, static_cast<std::uint32_t>(length),
                     lmr->lkey.load(std::memory_order_relaxed)};
    viaduct::SendWr wr;
    wr.opcode = viaduct::SendOp::BindWindow;
    wr.sge = std::span<const viaduct::Sge>(ep->sq_sge.data(), 1);
    wr.remote_stag = stag;
    wr.fast_reg_access = acc;
    WrShadow sh;
    sh.cookie = cookie;
    sh.flags = dto_flags;
    sh.event = IT_RMR_LINK_CMPL_EVENT;
    sh.rmr = rmr;
    if (it_status_t st = post_sq(*ep, wr, sh); st != IT_SUCCESS)
        return st;
    rmr_let_go(*rmr); // a wide RMR linked anew
    rmr->linked = true;
    rmr->lmr = lmr;
    rmr->lmr_handle = lmr_handle;
    lmr->links++;
    if (rmr->rmr_type == IT_RMR_TYPE_NARROW) {
        rmr->ep = ep;
        rmr->ep_handle = ep_handle;
        ep->narrow_rmrs++;
    }
    rmr->addr = addr;
    rmr->length = length;
    rmr->privs = privs;
    rmr->addr_mode = addr_mode;
    rmr->context = htonl(stag);
    *rmr_context = rmr->context;
    return IT_SUCCESS;
}

it_status_t it_rmr_bind10(it_rmr_handle_t rmr_handle, it_lmr_handle_t lmr_handle, void *addr,
                          it_length_t length, it_mem_priv_t privs, it_ep_handle_t ep_handle,
                          it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                          it_rmr_context_t *rmr_context) {
    return it_rmr_link(rmr_handle, lmr_handle, addr, length, IT_ADDR_MODE_ABSOLUTE, privs,
                       ep_handle, cookie, dto_flags, rmr_context);
}

it_status_t it_rmr_unlink(it_rmr_handle_t rmr_handle, it_ep_handle_t ep_handle,
                          it_dto_cookie_t cookie, it_dto_flags_t dto_flags) {
    Rmr *rmr = lookup<Rmr>(rmr_handle);
    if (rmr == nullptr)
        return IT_ERR_INVALID_RMR;
    Ep *ep;
    if (it_status_t st = sq_ep(ep_handle, ep); st != IT_SUCCESS)
        return st;
    if (ep->state.load() != IT_EP_STATE_CONNECTED)
        return IT_ERR_INVALID_EP_STATE;
    int allowed = sq_flags;
    if ((ep->ia->attr.caps & VIADUCT_DEV_CAP_LOCAL_FENCE) != 0)
        allowed |= IT_UNLINK_FENCE_FLAG;
    if (!flags_ok(dto_flags, allowed))
        return IT_ERR_INVALID_DTO_FLAGS;
    std::lock_guard rguard(rmr->lock);
    if (!rmr->linked)
        return IT_ERR_INVALID_RMR;
    if (rmr->pz != ep->pz || (rmr->rmr_type == IT_RMR_TYPE_NARROW && rmr->ep != ep))
        return IT_ERR_INVALID_EP;
    viaduct::SendWr wr;
    wr.remote_stag = ntohl(rmr->context);
    wr.local_fence = (dto_flags & IT_UNLINK_FENCE_FLAG) != 0;
    if (rmr->rmr_type == IT_RMR_TYPE_NARROW) {
        wr.opcode = viaduct::SendOp::LocalInvalidate;
    } else {
        // a type-1 window is unbound by a bind of length 0
        Lmr *lmr = lookup<Lmr>(rmr->lmr_handle) == rmr->lmr ? rmr->lmr : nullptr;
        ep->sq_sge[0] = {reinterpret_cast<std::uintptr_t>(rmr->addr), 0,
                         lmr != nullptr ? lmr->lkey.load(std::memory_order_relaxed) : 0};
        wr.opcode = viaduct::SendOp::BindWindow;
        wr.sge = std::span<const viaduct::Sge>(ep->sq_sge.data(), 1);
    }
    WrShadow sh;
    sh.cookie = cookie;
    sh.flags = static_cast<it_dto_flags_t>(dto_flags & ~IT_UNLINK_FENCE_FLAG);
    sh.event = IT_RMR_LINK_CMPL_EVENT;
    sh.rmr = rmr;
    if (it_status_t st = post_sq(*ep, wr, sh); st != IT_SUCCESS)
        return st;
    rmr_let_go(*rmr);
    return IT_SUCCESS;
}

// ----------------------------------------------------------------------------
// Shared receive queues

it_status_t it_srq_create(it_pz_handle_t pz_handle, size_t max_recv_segments, size_t max_recv_dtos,
                          it_srq_handle_t *srq_handle) {
    Pz *pz = lookup<Pz>(pz_handle);
    if (pz == nullptr)
        return IT_ERR_INVALID_PZ;
    Ia *ia = pz->ia;
    if (ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    if ((ia->attr.caps & VIADUCT_DEV_CAP_SRQ) == 0)
        return IT_ERR_SRQ_NOT_SUPPORTED;
    if (srq_handle == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (max_recv_dtos == 0 || max_recv_dtos > ia->attr.limits.max_qp_wr)
        return IT_ERR_RESOURCE_RECV_DTO;
    if (max_recv_segments == 0 || max_recv_segments > ia->attr.limits.max_sge)
        return IT_ERR_RESOURCE_RSEG;
    auto *srq = new (std::nothrow) Srq(ia, pz);
    if (srq == nullptr)
        return IT_ERR_RESOURCES;
    pz->refs++; // the destructor gives it back
    try {
        viaduct::SrqConfig c;
        c.depth = static_cast<std::uint32_t>(max_recv_dtos);
        c.max_sge = static_cast<std::uint32_t>(max_recv_segments);
        srq->srq.emplace(pz->pd, c);
        srq->max_recv_dtos = max_recv_dtos;
        srq->max_recv_segs = max_recv_segments;
        srq->shadow.resize(max_recv_dtos);
        srq->free_slots.reserve(max_recv_dtos);
        for (std::size_t i = max_recv_dtos; i > 0; i--)
            srq->free_slots.push_back(static_cast<std::uint32_t>(i - 1));
        srq->sge.resize(max_recv_segments);
        std::lock_guard guard(ia->map_lock);
        ia->srqs_by_handle[srq->srq->handle()] = srq;
    } catch (const std::exception &e) {
        delete srq;
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
    if (!ia->adopt(srq)) {
        delete srq;
        return IT_ERR_RESOURCES;
    }
    *srq_handle = handle_of<it_srq_handle_t>(srq);
    return IT_SUCCESS;
}

it_status_t it_srq_free(it_srq_handle_t srq_handle) {
    Srq *srq = lookup<Srq>(srq_handle);
    if (srq == nullptr)
        return IT_ERR_INVALID_SRQ;
    if (srq->eps.load() != 0)
        return IT_ERR_SRQ_BUSY;
    srq->ia->unlink(srq);
    delete srq;
    return IT_SUCCESS;
}

it_status_t it_srq_modify(it_srq_handle_t srq_handle, it_srq_param_mask_t mask,
                          const it_srq_param_t *params) {
    Srq *srq = lookup<Srq>(srq_handle);
    if (srq == nullptr)
        return IT_ERR_INVALID_SRQ;
    if (mask == 0 || (mask & ~(IT_SRQ_PARAM_MAX_RECV_DTO | IT_SRQ_PARAM_LOW_WATERMARK)) != 0)
        return IT_ERR_INVALID_MASK;
    if ((mask & IT_SRQ_PARAM_MAX_RECV_DTO) != 0)
        return IT_ERR_INVALID_MASK; // srq_resizable is false
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (params->low_watermark > srq->max_recv_dtos)
        return IT_ERR_INVALID_WATERMARK;
    try {
        srq->srq->arm_limit(static_cast<std::uint32_t>(params->low_watermark));
    } catch (const std::exception &e) {
        return status_of_exception(e, IT_ERR_INVALID_WATERMARK);
    }
    std::lock_guard guard(srq->ia->map_lock);
    srq->low_watermark = params->low_watermark;
    return IT_SUCCESS;
}

it_status_t it_srq_query(it_srq_handle_t srq_handle, it_srq_param_mask_t mask,
                         it_srq_param_t *params) {
    Srq *srq = lookup<Srq>(srq_handle);
    if (srq == nullptr)
        return IT_ERR_INVALID_SRQ;
    if ((mask & ~0x3f) != 0)
        return IT_ERR_INVALID_MASK;
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    params->ia = handle_of<it_ia_handle_t>(srq->ia);
    params->pz = handle_of<it_pz_handle_t>(srq->pz);
    params->max_recv_dtos = srq->max_recv_dtos;
    params->max_recv_segs = srq->max_recv_segs;
    std::lock_guard guard(srq->ia->map_lock);
    params->low_watermark = srq->low_watermark;
    return IT_SUCCESS;
}

} // extern "C"

namespace itapi {

Srq::~Srq() {
    if (srq) {
        std::lock_guard guard(ia->map_lock);
        ia->srqs_by_handle.erase(srq->handle());
    }
    srq.reset();
    pz->refs--;
}

} // namespace itapi
