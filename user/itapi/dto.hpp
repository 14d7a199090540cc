// SPDX-License-Identifier: GPL-2.0
//
// The completions' way back: a DTO SEVD's CQEs translated into IT-API
// events (evd_fill), and the work request ids that let a completion find
// its WR's shadow slot. Shared by the posts (post.cpp) and the EVDs
// (evd.cpp), inline: a call and its return are dear where they are
// emulated (under QEMU TCG a return is an indirect jump, looked up each
// time), and a dequeue that polls runs this on every call.
#pragma once

#include <arpa/inet.h>
#include <array>
#include <cerrno>

#include "internal.hpp"

namespace itapi {

// The core's wr_id of an EP's WR: epoch << 48 | sequence number.
inline constexpr unsigned epoch_shift = 48;
inline constexpr std::uint64_t seq_mask = (std::uint64_t{1} << epoch_shift) - 1;

inline std::uint64_t make_wr_id(std::uint16_t epoch, std::uint64_t seq) noexcept {
    return (std::uint64_t{epoch} << epoch_shift) | (seq & seq_mask);
}

inline bool same_epoch(const Ep &ep, std::uint64_t wr_id) noexcept {
    return (wr_id >> epoch_shift) == ep.epoch.load(std::memory_order_relaxed);
}

// The IT-API status of a core completion status, for a DTO (@mm false) or
// an RMR link or unlink (a bind or local invalidate, @mm true).
constexpr it_dto_status_t dto_status_of(std::uint8_t status, bool mm) noexcept {
    using S = viaduct::WcStatus;
    switch (static_cast<S>(status)) {
    case S::Success:
        return IT_DTO_SUCCESS;
    case S::Flushed:
        return IT_DTO_ERR_FLUSHED;
    case S::LocalLengthError:
        return IT_DTO_ERR_LOCAL_LENGTH;
    case S::LocalProtectionError:
        return mm ? IT_RMR_OPERATION_FAILED : IT_DTO_ERR_LOCAL_PROTECTION;
    case S::RemoteAccessError:
        return IT_DTO_ERR_REMOTE_ACCESS;
    case S::RemoteOperationError:
    case S::RemoteInvalidRequest:
        return IT_DTO_ERR_REMOTE_RESPONDER;
    case S::TransportError:
    case S::RemoteTerminated:
        return IT_DTO_ERR_TRANSPORT;
    case S::LocalQpOperationError:
    case S::GeneralError:
        break;
    }
    return mm ? IT_RMR_OPERATION_FAILED : IT_DTO_ERR_LOCAL_EP;
}

// dto_status_of() as a table, indexed by mm << 8 | status: a lookup, not
// the switch's jump table (an indirect jump, looked up at run time under
// binary translation) on every completion.
inline constexpr auto dto_status_table = [] {
    std::array<std::uint8_t, 512> t{};
    for (unsigned i = 0; i < t.size(); i++)
        t[i] =
            static_cast<std::uint8_t>(dto_status_of(static_cast<std::uint8_t>(i & 0xff), i >= 256));
    return t;
}();

inline it_dto_status_t dto_status(const viaduct_cqe &c) noexcept {
    bool mm = c.opcode == VIADUCT_WC_BIND_MW || c.opcode == VIADUCT_WC_LOCAL_INV;
    return static_cast<it_dto_status_t>(dto_status_table[(unsigned{mm} << 8) | c.status]);
}

// A completion of a DTO SEVD's CQ as an IT-API event, built in @d (every
// member written, none zeroed first); the caller holds evd.lock. Returns
// the EP it names, or nullptr if it is dropped (its EP was freed, or reset
// since the WR was posted): @d is untouched then. @notify: whether it is a
// notification event.
[[gnu::always_inline]] inline Ep *translate_cqe(Evd &evd, const viaduct_cqe &c,
                                                it_dto_cmpl_event_t &d, bool &notify) {
    Ia &ia = *evd.ia;
    // an EP of this SEVD, alive while its lock is held (~Ep takes it)
    Ep *ep = evd.ep_of_qp(c.qp_handle);
    if (ep == nullptr)
        return nullptr; // its EP was freed: the document lets events go with it
    const bool ok = c.status == VIADUCT_WC_SUCCESS;
    WrShadow sh;
    it_handle_t unlinked = nullptr;
    notify = !ok;
    if ((c.flags & VIADUCT_WC_F_RECV) != 0) {
        if (ep->srq != nullptr) {
            Srq &srq = *ep->srq;
            std::lock_guard guard(srq.lock);
            auto slot = static_cast<std::uint32_t>(c.wr_id);
            if (slot >= srq.shadow.size())
                return nullptr;
            sh = srq.shadow[slot];
            srq.free_slots.push_back(slot); // reserved: never allocates
        } else {
            if (!same_epoch(*ep, c.wr_id))
                return nullptr; // posted before it_ep_reset
            std::uint64_t seq = c.wr_id & seq_mask;
            sh = ep->rq[seq & ep->rq_mask];
            // the slot may be posted to again from here on
            ep->rq_retired.store(seq + 1, std::memory_order_release);
        }
        if ((c.flags & VIADUCT_WC_F_SOLICITED) != 0)
            notify = true;
        if ((c.flags & VIADUCT_WC_F_INVALIDATED) != 0) {
            // the peer's Send with Invalidate unlinked one of ours
            std::lock_guard maps(ia.map_lock);
            auto it = ia.mr_by_index.find(c.invalidated_stag >> 8);
            if (it != ia.mr_by_index.end()) {
                unlinked = it->second->handle;
                if (it->second->type == Kind::Rmr) {
                    auto *rmr = static_cast<Rmr *>(it->second);
                    std::lock_guard guard(rmr->lock);
                    if (ntohl(rmr->context) == c.invalidated_stag)
                        rmr_let_go(*rmr);
                }
            }
        }
    } else {
        if (!same_epoch(*ep, c.wr_id))
            return nullptr;
        std::uint64_t seq = c.wr_id & seq_mask;
        sh = ep->sq[seq & ep->sq_mask];
        // this WR and every earlier one are complete: their slots may be
        // posted to again from here on
        ep->sq_retired.store(seq + 1, std::memory_order_release);
    }
    if ((sh.flags & IT_NOTIFY_FLAG) != 0) {
        notify = true;
        ia.notify_pending.fetch_sub(1);
    }
    d.event_number = sh.event; // IT_DTO_RC_RECV_CMPL_EVENT for a receive
    d.evd = static_cast<it_evd_handle_t>(evd.handle);
    d.ep = static_cast<it_ep_handle_t>(ep->handle);
    d.cookie = sh.cookie;
    d.dto_status = dto_status(c);
    d.transferred_length = ok ? c.byte_len : 0;
    d.unlinked_mr_handle = unlinked;
    return ep;
}

// evd_fill(), inlined where a dequeue takes a completion straight from the
// CQ (evd.cpp).
[[gnu::always_inline]] inline bool evd_fill_inline(Evd &evd, it_event_t *direct) {
    // after an overflow too: the completions before it are still read
    if (!evd.cq)
        return false;
    bool given = false;
    // raw CQEs, translated one by one: nothing is initialised for a poll
    // that finds nothing (a consumer polling by dequeueing)
    viaduct_cqe cs[16];
    for (;;) {
        bool want_direct = direct != nullptr && !given;
        std::size_t room =
            std::min<std::size_t>(evd.queue.size() - evd.count + (want_direct ? 1 : 0), 16);
        if (room == 0)
            return given;
        std::size_t n;
        try {
            n = evd.cq->poll(std::span<viaduct_cqe>(cs, room));
        } catch (const viaduct::Error &e) {
            if (e.errnum() != EIO)
                throw;
            evd_dto_overflow(evd); // every CQE before the overflow was read
            return given;
        }
        for (std::size_t i = 0; i < n; i++) {
            // the caller's event, or the queue's tail (a direct event's
            // notification bit would be counted and taken back at once)
            bool to_caller = direct != nullptr && !given;
            bool notify;
            Ep *ep = translate_cqe(evd, cs[i],
                                   to_caller ? direct->dto_cmpl : evd_tail(evd).dto_cmpl, notify);
            if (ep != nullptr) {
                if (to_caller)
                    given = true;
                else
                    evd_commit(evd, notify);
            }
            // an error breaks the connection; a flush is the consequence
            // of one
            if (ep != nullptr && cs[i].status != VIADUCT_WC_SUCCESS &&
                cs[i].status != VIADUCT_WC_FLUSHED)
                ep_break(*ep);
        }
        if (n < room)
            return given;
    }
}

} // namespace itapi
