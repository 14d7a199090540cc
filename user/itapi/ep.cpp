// SPDX-License-Identifier: GPL-2.0
//
// RC endpoints as objects: it_ep_rc_create (the EP and its queue pair),
// it_ep_query, it_ep_modify, it_ep_free, and the state changes the
// connection side drives (ep_transition, ep_break, ep_reset_queues).
// Connecting, accepting and disconnecting are the connection side's.
#include <algorithm>
#include <bit>
#include <cerrno>

#include "cm.hpp"
#include "internal.hpp"

namespace itapi {

namespace {

std::uint32_t qp_access(const it_ep_attributes_t &a) noexcept {
    std::uint32_t acc = 0;
    if (a.srv.rc.rdma_read_enable != IT_FALSE)
        acc |= VIADUCT_QP_ACCESS_REMOTE_READ;
    if (a.srv.rc.rdma_write_enable != IT_FALSE)
        acc |= VIADUCT_QP_ACCESS_REMOTE_WRITE;
    return acc;
}

// The QP to Error (flushing what it holds); a QP that is there already or
// in a state that goes to Idle by itself is left alone.
void flush_qp(Ep &ep) noexcept {
    try {
        ep.qp->modify(viaduct::QpState::Error);
    } catch (const std::exception &) {
        // Error already, or Closing (Idle follows; ep_reset_queues flushes)
    }
}

} // namespace

Ep::~Ep() {
    Ia &owner = *ia;
    if (qp) {
        // no completion of this EP is being translated while it goes: the
        // SEVDs find it under their locks only
        std::scoped_lock evds(request_evd->lock);
        std::unique_lock recv_guard(recv_evd->lock, std::defer_lock);
        if (recv_evd != request_evd)
            recv_guard.lock();
        request_evd->forget_ep(qp->handle());
        recv_evd->forget_ep(qp->handle());
        std::lock_guard maps(owner.map_lock);
        owner.eps_by_qp.erase(qp->handle());
    }
    cm.reset();
    qp.reset();
    for (Evd *e : {request_evd, recv_evd, connect_evd}) {
        if (e != nullptr) {
            std::lock_guard guard(e->lock);
            e->sources--;
        }
    }
    if (srq != nullptr)
        srq->eps--;
    pz->refs--;
}

bool ep_transition(Ep &ep, std::initializer_list<it_ep_state_rc_t> from, it_ep_state_rc_t to,
                   const it_event_t *ev, Evd *evd) {
    std::lock_guard guard(ep.lock);
    it_ep_state_rc_t cur = ep.state.load();
    if (std::find(from.begin(), from.end(), cur) == from.end())
        return false;
    ep.state.store(to);
    if (to == IT_EP_STATE_NONOPERATIONAL && cur != IT_EP_STATE_NONOPERATIONAL)
        flush_qp(ep);
    if (ev != nullptr) {
        it_event_t e = *ev;
        e.conn.ep = handle_of<it_ep_handle_t>(&ep);
        Evd *target = evd != nullptr ? evd : ep.connect_evd;
        if (target != nullptr)
            evd_enqueue(*target, e);
    }
    return true;
}

void ep_break(Ep &ep) {
    it_event_t ev{};
    ev.conn.event_number = IT_CM_MSG_CONN_BROKEN_EVENT;
    ep_transition(ep,
                  {IT_EP_STATE_CONNECTED, IT_EP_STATE_ACTIVE1_CONNECTION_PENDING,
                   IT_EP_STATE_ACTIVE2_CONNECTION_PENDING, IT_EP_STATE_PASSIVE_CONNECTION_PENDING,
                   IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ},
                  IT_EP_STATE_NONOPERATIONAL, &ev);
}

it_status_t ep_reset_queues(Ep &ep) {
    try {
        flush_qp(ep);
        // Error -> Idle flushes what was posted since and empties the queues
        ep.qp->modify(viaduct::QpState::Idle);
        ep.qp_in_error.store(false, std::memory_order_release);
        viaduct::QpModify m;
        m.access = qp_access(ep.attr);
        m.ord = ep.attr.srv.rc.rdma_read_ord;
        m.ird = ep.attr.srv.rc.rdma_read_ird;
        ep.qp->modify(m);
    } catch (const std::exception &e) {
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
    // completions of the old WRs still in the CQs are recognised by the
    // epoch and dropped (no post runs now: it_ep_reset is the consumer's
    // to serialise with the EP's posts)
    ep.epoch.store(static_cast<std::uint16_t>(ep.epoch.load(std::memory_order_relaxed) + 1),
                   std::memory_order_relaxed);
    ep.sq_posted = 0;
    ep.sq_retired.store(0);
    ep.rq_posted = 0;
    ep.rq_retired.store(0);
    ep.state.store(IT_EP_STATE_UNCONNECTED);
    return IT_SUCCESS;
}

void ep_apply_rdma_attributes(Ep &ep) {
    viaduct::QpModify m;
    m.access = qp_access(ep.attr);
    m.ord = ep.attr.srv.rc.rdma_read_ord;
    m.ird = ep.attr.srv.rc.rdma_read_ird;
    ep.qp->modify(m);
}

} // namespace itapi

using namespace itapi;

extern "C" {

it_status_t it_ep_rc_create(it_pz_handle_t pz_handle, it_evd_handle_t request_sevd_handle,
                            it_evd_handle_t recv_sevd_handle, it_evd_handle_t connect_sevd_handle,
                            it_ep_rc_creation_flags_t flags, const it_ep_attributes_t *ep_attr,
                            it_ep_handle_t *ep_handle) {
    Pz *pz = lookup<Pz>(pz_handle);
    if (pz == nullptr)
        return IT_ERR_INVALID_PZ;
    Ia *ia = pz->ia;
    if (ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    if (ep_attr == nullptr || ep_handle == nullptr)
        return IT_ERR_INVALID_EP_ATTR;
    if ((flags & ~(IT_EP_REUSEADDR | IT_EP_SRQ)) != 0)
        return IT_ERR_INVALID_FLAGS;
    Evd *req = lookup<Evd>(request_sevd_handle);
    Evd *recv = lookup<Evd>(recv_sevd_handle);
    Evd *conn = lookup<Evd>(connect_sevd_handle);
    if (req == nullptr || req->ia != ia)
        return IT_ERR_INVALID_REQ_EVD;
    if (recv == nullptr || recv->ia != ia)
        return IT_ERR_INVALID_RECV_EVD;
    if (conn == nullptr || conn->ia != ia)
        return IT_ERR_INVALID_CONN_EVD;
    if (req->stream != IT_DTO_EVENT_STREAM || recv->stream != IT_DTO_EVENT_STREAM ||
        conn->stream != IT_CM_MSG_EVENT_STREAM)
        return IT_ERR_INVALID_EVD_TYPE;
    {
        std::lock_guard guard(req->lock);
        if (req->cq_broken)
            return IT_ERR_INVALID_REQ_EVD_STATE;
    }
    {
        std::lock_guard guard(recv->lock);
        if (recv->cq_broken)
            return IT_ERR_INVALID_RECV_EVD_STATE;
    }
    const it_ep_attributes_t &a = *ep_attr;
    const it_rc_only_attributes_t &rc = a.srv.rc;
    const viaduct::DeviceLimits &lim = ia->attr.limits;
    if (a.priv_ops_enable != IT_FALSE)
        return IT_ERR_PRIV_OPS_UNAVAILABLE;
    if (rc.atomics_enable != IT_FALSE)
        return IT_ERR_OP_NOT_SUPPORTED;
    if (rc.soft_hi_watermark != 0)
        return IT_ERR_SOFT_HI_WATERMARK;
    if (rc.hard_hi_watermark != 0 && rc.hard_hi_watermark != IT_HARD_HI_WATERMARK_DISABLE)
        return IT_ERR_HARD_HI_WATERMARK;
    if (a.max_dto_payload_size > lim.max_msg_size)
        return IT_ERR_PAYLOAD_SIZE;
    if (a.max_request_dtos == 0 || a.max_request_dtos > lim.max_qp_wr)
        return IT_ERR_RESOURCE_REQ_DTO;
    Srq *srq = nullptr;
    if ((flags & IT_EP_SRQ) != 0) {
        srq = lookup<Srq>(rc.srq);
        if (srq == nullptr || srq->ia != ia)
            return IT_ERR_INVALID_SRQ;
    } else if (a.max_rcv_dtos == 0 || a.max_rcv_dtos > lim.max_qp_wr) {
        return IT_ERR_RESOURCE_RECV_DTO;
    }
    if (a.max_send_segments == 0 || a.max_send_segments > lim.max_sge)
        return IT_ERR_RESOURCE_SSEG;
    if (srq == nullptr && (a.max_rcv_segments == 0 || a.max_rcv_segments > lim.max_sge))
        return IT_ERR_RESOURCE_RSEG;
    if (rc.max_rdma_read_segments > lim.max_sge)
        return IT_ERR_RESOURCE_RRSEG;
    if (rc.max_rdma_write_segments > lim.max_sge)
        return IT_ERR_RESOURCE_RWSEG;
    if (rc.rdma_read_ird > lim.max_ird)
        return IT_ERR_RESOURCE_IRD;
    if (rc.rdma_read_ord > lim.max_ord)
        return IT_ERR_RESOURCE_ORD;

    auto *ep = new (std::nothrow) Ep(ia, pz);
    if (ep == nullptr)
        return IT_ERR_RESOURCES;
    // Until it is adopted the EP holds nothing but its PZ reference, which
    // its destructor gives back.
    pz->refs++;
    auto discard = [ep](it_status_t st) {
        ep->qp.reset();
        delete ep;
        return st;
    };
    ep->attr = a;
    ep->create_flags = flags;
    if (srq == nullptr)
        ep->attr.srv.rc.srq = nullptr;
    else
        ep->attr.max_rcv_dtos = ep->attr.max_rcv_segments = 0;
    if (ep->attr.max_dto_payload_size == 0)
        ep->attr.max_dto_payload_size = lim.max_msg_size;
    ep->attr.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
    std::size_t send_sge =
        std::max({a.max_send_segments, rc.max_rdma_read_segments, rc.max_rdma_write_segments});
    ep->attr.srv.rc.max_rdma_read_segments = std::max<std::size_t>(rc.max_rdma_read_segments, 1);
    ep->attr.srv.rc.max_rdma_write_segments = std::max<std::size_t>(rc.max_rdma_write_segments, 1);
    try {
        ep->sq.resize(std::bit_ceil(a.max_request_dtos));
        ep->sq_mask = ep->sq.size() - 1;
        ep->sq_limit = a.max_request_dtos;
        ep->sq_sge.resize(std::max<std::size_t>(send_sge, 1));
        if (srq == nullptr) {
            ep->rq.resize(std::bit_ceil(a.max_rcv_dtos));
            ep->rq_mask = ep->rq.size() - 1;
            ep->rq_limit = a.max_rcv_dtos;
            ep->rq_sge.resize(a.max_rcv_segments);
        }
        viaduct::QpConfig c;
        c.send_cq = &*req->cq;
        c.recv_cq = &*recv->cq;
        c.srq = srq != nullptr ? &*srq->srq : nullptr;
        c.sq_depth = static_cast<std::uint32_t>(a.max_request_dtos);
        c.rq_depth = srq != nullptr ? 1 : static_cast<std::uint32_t>(a.max_rcv_dtos);
        c.max_send_sge = static_cast<std::uint32_t>(send_sge);
        c.max_recv_sge = srq != nullptr ? 1 : static_cast<std::uint32_t>(a.max_rcv_segments);
        c.access = qp_access(a);
        c.ord = rc.rdma_read_ord;
        c.ird = rc.rdma_read_ird;
        c.max_msg_size = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(ep->attr.max_dto_payload_size, UINT32_MAX));
        c.user_data = 0; // asynchronous events name the QP by its handle
        // the posts to each queue are serialised by the consumer (the
        // thread-safety model), and the core locks a QP's queues for
        // posting only (modify and query are system calls of their own):
        // the native QP need not lock its queues
        c.single_threaded = true;
        ep->qp.emplace(pz->pd, c);
        ep->qp_max_msg = c.max_msg_size;
    } catch (const std::exception &e) {
        return discard(status_of_exception(e, IT_ERR_RESOURCES));
    }
    if (!ia->adopt(ep))
        return discard(IT_ERR_RESOURCES);
    // the DTO SEVDs find it by its QP from here on (the destructor, which
    // runs with the QP, removes it)
    std::uint32_t qh = ep->qp->handle();
    auto enter = [ep, qh](Evd &e) {
        std::lock_guard guard(e.lock);
        e.eps.emplace(qh, ep);
    };
    try {
        enter(*req);
        try {
            enter(*recv);
        } catch (...) {
            std::lock_guard guard(req->lock);
            req->forget_ep(qh);
            throw;
        }
    } catch (const std::exception &) {
        ia->unlink(ep);
        return discard(IT_ERR_RESOURCES);
    }
    // counted from here on: the destructor gives each back
    for (Evd *e : {req, recv, conn}) {
        std::lock_guard guard(e->lock);
        e->sources++;
    }
    ep->request_evd = req;
    ep->recv_evd = recv;
    ep->connect_evd = conn;
    ep->srq = srq;
    if (srq != nullptr)
        srq->eps++;
    {
        std::lock_guard guard(ia->map_lock);
        ia->eps_by_qp[ep->qp->handle()] = ep;
    }
    *ep_handle = handle_of<it_ep_handle_t>(ep);
    return IT_SUCCESS;
}

it_status_t it_ep_free(it_ep_handle_t ep_handle) {
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    if (ep->narrow_rmrs.load() != 0)
        return IT_ERR_EP_BUSY;
    cm_ep_free(*ep); // the connection goes first (aborted if there is one)
    ep->ia->unlink(ep);
    delete ep;
    return IT_SUCCESS;
}

it_status_t it_ep_query(it_ep_handle_t ep_handle, it_ep_param_mask_t mask, it_ep_param_t *params) {
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    if ((mask & ~0x0fffffff) != 0)
        return IT_ERR_INVALID_MASK;
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    std::lock_guard guard(ep->lock);
    params->ia = handle_of<it_ia_handle_t>(ep->ia);
    params->spigot_id = ep->spigot_id;
    params->ep_state.rc = ep->state.load();
    params->service_type = IT_RC_SERVICE;
    params->dst_path = ep->dst_path;
    params->pz = handle_of<it_pz_handle_t>(ep->pz);
    params->request_sevd = handle_of<it_evd_handle_t>(ep->request_evd);
    params->recv_sevd = handle_of<it_evd_handle_t>(ep->recv_evd);
    params->connect_sevd = handle_of<it_evd_handle_t>(ep->connect_evd);
    params->attr = ep->attr;
    params->attr.srv.rc.srq = handle_of<it_srq_handle_t>(ep->srq);
    return IT_SUCCESS;
}

it_status_t it_ep_modify(it_ep_handle_t ep_handle, it_ep_param_mask_t mask,
                         const it_ep_attributes_t *ep_attr) {
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    const int modifiable = IT_EP_PARAM_MAX_PAYLOAD | IT_EP_PARAM_MAX_REQ_DTO |
                           IT_EP_PARAM_MAX_RECV_DTO | IT_EP_PARAM_RDMA_RD_ENABLE |
                           IT_EP_PARAM_RDMA_WR_ENABLE | IT_EP_PARAM_MAX_IRD | IT_EP_PARAM_MAX_ORD |
                           IT_EP_PARAM_SOFT_HI_WATERMARK | IT_EP_PARAM_HARD_HI_WATERMARK;
    if (mask == 0 || (mask & ~modifiable) != 0)
        return IT_ERR_INVALID_MASK;
    if (ep_attr == nullptr)
        return IT_ERR_INVALID_EP_ATTR;
    if (ep->ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    const viaduct::DeviceLimits &lim = ep->ia->attr.limits;
    std::lock_guard guard(ep->lock);
    it_ep_state_rc_t st = ep->state.load();
    it_ep_attributes_t next = ep->attr;
    const it_rc_only_attributes_t &rc = ep_attr->srv.rc;
    // Every check first: all or nothing.
    if ((mask & (IT_EP_PARAM_MAX_REQ_DTO | IT_EP_PARAM_MAX_RECV_DTO)) != 0)
        return IT_ERR_OP_NOT_SUPPORTED; // ep_work_queues_resizable is false
    if ((mask & IT_EP_PARAM_SOFT_HI_WATERMARK) != 0 && rc.soft_hi_watermark != 0)
        return IT_ERR_SOFT_HI_WATERMARK;
    if ((mask & IT_EP_PARAM_HARD_HI_WATERMARK) != 0 && rc.hard_hi_watermark != 0 &&
        rc.hard_hi_watermark != IT_HARD_HI_WATERMARK_DISABLE)
        return IT_ERR_HARD_HI_WATERMARK;
    if ((mask & IT_EP_PARAM_MAX_PAYLOAD) != 0) {
        if (st != IT_EP_STATE_UNCONNECTED && st != IT_EP_STATE_NONOPERATIONAL)
            return IT_ERR_INVALID_EP_STATE;
        // the QP takes messages up to the size it was made with
        if (ep_attr->max_dto_payload_size == 0 || ep_attr->max_dto_payload_size > ep->qp_max_msg)
            return IT_ERR_PAYLOAD_SIZE;
        next.max_dto_payload_size = ep_attr->max_dto_payload_size;
    }
    if ((mask & IT_EP_PARAM_MAX_IRD) != 0) {
        if (st != IT_EP_STATE_UNCONNECTED && st != IT_EP_STATE_ACTIVE2_CONNECTION_PENDING)
            return IT_ERR_INVALID_EP_STATE;
        if (rc.rdma_read_ird > lim.max_ird)
            return IT_ERR_RESOURCE_IRD;
        next.srv.rc.rdma_read_ird = rc.rdma_read_ird;
    }
    if ((mask & IT_EP_PARAM_MAX_ORD) != 0) {
        if (st != IT_EP_STATE_UNCONNECTED && st != IT_EP_STATE_ACTIVE2_CONNECTION_PENDING &&
            st != IT_EP_STATE_CONNECTED)
            return IT_ERR_INVALID_EP_STATE;
        if (rc.rdma_read_ord > lim.max_ord)
            return IT_ERR_RESOURCE_ORD;
        // connected, ORD may only go down (rdma_read_ord_increasable)
        if (st == IT_EP_STATE_CONNECTED && rc.rdma_read_ord > ep->attr.srv.rc.rdma_read_ord)
            return IT_ERR_RESOURCE_ORD;
        next.srv.rc.rdma_read_ord = rc.rdma_read_ord;
    }
    if ((mask & IT_EP_PARAM_RDMA_RD_ENABLE) != 0)
        next.srv.rc.rdma_read_enable = rc.rdma_read_enable != IT_FALSE ? IT_TRUE : IT_FALSE;
    if ((mask & IT_EP_PARAM_RDMA_WR_ENABLE) != 0)
        next.srv.rc.rdma_write_enable = rc.rdma_write_enable != IT_FALSE ? IT_TRUE : IT_FALSE;
    // Then the QP, in one MODIFY_QP: a QP in Error takes no attributes, and
    // gets them when it is reset.
    viaduct::QpModify m;
    if ((mask & (IT_EP_PARAM_RDMA_RD_ENABLE | IT_EP_PARAM_RDMA_WR_ENABLE)) != 0)
        m.access = qp_access(next);
    if ((mask & IT_EP_PARAM_MAX_ORD) != 0)
        m.ord = next.srv.rc.rdma_read_ord;
    if ((mask & IT_EP_PARAM_MAX_IRD) != 0)
        m.ird = next.srv.rc.rdma_read_ird;
    if (st != IT_EP_STATE_NONOPERATIONAL && (m.access || m.ord || m.ird)) {
        try {
            ep->qp->modify(m);
        } catch (const viaduct::Error &e) {
            return e.errnum() == EINVAL ? IT_ERR_INVALID_EP_STATE
                                        : status_of_errno(e.errnum(), IT_ERR_RESOURCES);
        }
    }
    ep->attr = next;
    return IT_SUCCESS;
}

} // extern "C"
