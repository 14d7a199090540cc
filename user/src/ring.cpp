// SPDX-License-Identifier: GPL-2.0
// Completion and work rings: the index protocol of Documentation/rings.rst.
#include "ring.hpp"

#include <cerrno>

namespace viaduct::detail {

static_assert(sizeof(viaduct_ring) == VIADUCT_RING_HDR_SIZE);
static_assert(sizeof(viaduct_cqe) == 32);
static_assert(sizeof(viaduct_sqe) == 32);
static_assert(sizeof(viaduct_rqe) == 16);
static_assert(sizeof(viaduct_sge) == sizeof(Sge));
static_assert(offsetof(viaduct_sge, addr) == offsetof(Sge, addr));
static_assert(offsetof(viaduct_sge, length) == offsetof(Sge, length));
static_assert(offsetof(viaduct_sge, stag) == offsetof(Sge, stag));

CompletionRing::CompletionRing(std::byte *base, std::uint32_t entries) noexcept
    : hdr_(reinterpret_cast<viaduct_ring *>(base)), cqes_(base + VIADUCT_RING_HDR_SIZE),
      entries_(entries) {
    // The ring may hold CQEs already (after a resize, or a reused
    // mapping): start from what the header says was consumed.
    consumer_ = load_relaxed(hdr_->consumer);
}

template <class T, class Convert>
std::size_t CompletionRing::poll_as(std::span<T> out, Convert convert) {
    if (out.empty())
        return 0;
    // Pairs with the kernel's store-release of producer after it wrote the
    // CQE: every CQE before the index we see is complete.
    const std::uint32_t producer = load_acquire(hdr_->producer);
    const std::uint32_t avail = ring_used(producer, consumer_);
    if (avail > entries_) // the ring is corrupt: nothing in it can be trusted
        throw Error(EPROTO, "completion ring of " + std::to_string(entries_) +
                                " entries: the kernel's producer index " +
                                std::to_string(producer) + " is " + std::to_string(avail) +
                                " ahead of the consumer index " + std::to_string(consumer_) +
                                "; the ring is corrupt");
    const std::size_t n = avail < out.size() ? avail : out.size();
    for (std::size_t i = 0; i < n; ++i) {
        viaduct_cqe cqe;
        std::memcpy(&cqe, cqes_ + std::size_t{ring_slot(consumer_, entries_)} * sizeof(cqe),
                    sizeof(cqe));
        out[i] = convert(cqe);
        ++consumer_;
    }
    // Our reads of the slots come before the kernel may overwrite them.
    if (n)
        store_release(hdr_->consumer, consumer_);
    return n;
}

std::size_t CompletionRing::poll(std::span<viaduct_cqe> out) {
    return poll_as(out, [](const viaduct_cqe &c) { return c; });
}

std::size_t CompletionRing::poll(std::span<Completion> out) {
    return poll_as(out, [](const viaduct_cqe &c) { return to_completion(c); });
}

bool CompletionRing::empty() const noexcept {
    return load_acquire(hdr_->producer) == consumer_;
}

std::uint32_t CompletionRing::unread() const noexcept {
    const std::uint32_t avail = ring_used(load_acquire(hdr_->producer), consumer_);
    return avail > entries_ ? entries_ : avail;
}

bool CompletionRing::unread_error() const noexcept {
    const std::uint32_t n = unread();
    for (std::uint32_t i = 0; i < n; ++i) {
        viaduct_cqe cqe;
        std::memcpy(&cqe, cqes_ + std::size_t{ring_slot(consumer_ + i, entries_)} * sizeof(cqe),
                    sizeof(cqe));
        if (cqe.status != VIADUCT_WC_SUCCESS)
            return true;
    }
    return false;
}

bool CompletionRing::overflowed() const noexcept {
    // Released after the last CQE that fitted: those are all visible.
    return (load_acquire(hdr_->flags) & VIADUCT_RING_F_OVERFLOW) != 0;
}

void CompletionRing::publish_consumer() noexcept {
    store_release(hdr_->consumer, consumer_);
}

namespace {

void put_sges(std::byte *dst, std::span<const Sge> sges) {
    for (const Sge &s : sges) {
        viaduct_sge w{};
        w.addr = s.addr;
        w.length = s.length;
        w.stag = s.stag;
        std::memcpy(dst, &w, sizeof(w));
        dst += sizeof(w);
    }
}

std::string qp_name(std::uint32_t qp_handle) {
    return "QP " + std::to_string(qp_handle);
}

} // namespace

void encode_send(std::span<std::byte> slot, const SendWr &wr, const WqeLimits &limits,
                 std::uint32_t qp_handle) {
    const std::size_t nsge = wr.sge.size();
    const std::size_t ninline = wr.inline_data.size();
    if (ninline && nsge)
        throw Error(EINVAL, "send WR " + std::to_string(wr.wr_id) + " on " + qp_name(qp_handle) +
                                " has both inline data and SGEs");
    if (nsge > limits.max_sge)
        throw Error(EINVAL, "send WR " + std::to_string(wr.wr_id) + " on " + qp_name(qp_handle) +
                                " has " + std::to_string(nsge) + " SGEs, the QP takes at most " +
                                std::to_string(limits.max_sge));
    if (ninline > limits.max_inline)
        throw Error(EINVAL, "send WR " + std::to_string(wr.wr_id) + " on " + qp_name(qp_handle) +
                                " has " + std::to_string(ninline) +
                                " bytes inline, the QP takes at most " +
                                std::to_string(limits.max_inline));
    auto refuse = [&](const std::string &why) {
        return Error(EINVAL, "send WR " + std::to_string(wr.wr_id) + " on " + qp_name(qp_handle) +
                                 ": " + why);
    };
    switch (wr.opcode) {
    case SendOp::Send:
        if (wr.remote_addr || wr.remote_stag)
            throw refuse("a Send has no remote address or STag");
        break;
    case SendOp::SendWithInvalidate:
        if (wr.remote_addr)
            throw refuse("a Send with Invalidate has no remote address");
        if (wr.imm_data)
            throw refuse("a Send with Invalidate carries no immediate data");
        break;
    case SendOp::RdmaWrite:
        if (wr.solicited && !wr.imm_data)
            throw refuse("only a Send or an RDMA Write with immediate data can be solicited");
        break;
    case SendOp::LocalInvalidate:
    case SendOp::FastRegister:
        if (wr.solicited || wr.imm_data || ninline)
            throw refuse("a local operation has no solicited event, immediate or inline data");
        if (wr.opcode == SendOp::LocalInvalidate && (nsge || wr.remote_addr))
            throw refuse("a Local Invalidate has no SGE and no address");
        if (wr.opcode == SendOp::FastRegister && !nsge)
            throw refuse("a Fast-Register takes its page list as at least one SGE");
        break;
    case SendOp::BindWindow:
        if (wr.solicited || wr.imm_data || ninline)
            throw refuse("a local operation has no solicited event, immediate or inline data");
        if (nsge != 1 || wr.remote_addr)
            throw refuse("a window's bind takes exactly one SGE (the range of the region) "
                         "and no remote address");
        break;
    case SendOp::RdmaRead:
    case SendOp::RdmaReadWithInvalidate:
        if (wr.solicited)
            throw refuse("only a Send can be solicited");
        if (wr.imm_data)
            throw refuse("an RDMA Read carries no immediate data");
        if (ninline || nsge != 1)
            throw refuse("an RDMA Read takes exactly one local SGE and no inline data");
        break;
    default:
        throw refuse("unknown opcode " + std::to_string(static_cast<unsigned>(wr.opcode)));
    }
    if (wr.fast_reg_access && wr.opcode != SendOp::FastRegister && wr.opcode != SendOp::BindWindow)
        throw refuse("only a Fast-Register or a window's bind takes access rights");
    const std::size_t body = ninline ? ninline : nsge * sizeof(viaduct_sge);
    if (sizeof(viaduct_sqe) + body > slot.size())
        throw Error(EINVAL, "send WR " + std::to_string(wr.wr_id) + " does not fit a " +
                                std::to_string(slot.size()) + "-byte slot");

    viaduct_sqe h{};
    h.wr_id = wr.wr_id;
    h.opcode = static_cast<__u8>(wr.opcode);
    unsigned flags = 0;
    if (wr.signaled)
        flags |= VIADUCT_SQE_SIGNALED;
    if (wr.solicited)
        flags |= VIADUCT_SQE_SOLICITED;
    if (wr.read_fence)
        flags |= VIADUCT_SQE_READ_FENCE;
    if (wr.local_fence)
        flags |= VIADUCT_SQE_LOCAL_FENCE;
    if (ninline)
        flags |= VIADUCT_SQE_INLINE;
    if (wr.imm_data) {
        flags |= VIADUCT_SQE_IMMEDIATE;
        h.imm_data = *wr.imm_data;
    }
    h.flags = static_cast<__u8>(flags);
    h.num_sge = static_cast<__u16>(nsge);
    h.length = static_cast<__u32>(ninline);
    h.remote_stag = wr.remote_stag;
    h.remote_addr = wr.remote_addr;
    if (wr.opcode == SendOp::FastRegister || wr.opcode == SendOp::BindWindow)
        h.imm_data = wr.fast_reg_access;
    std::memcpy(slot.data(), &h, sizeof(h));
    if (ninline)
        std::memcpy(slot.data() + sizeof(h), wr.inline_data.data(), ninline);
    else
        put_sges(slot.data() + sizeof(h), wr.sge);
}

void encode_recv(std::span<std::byte> slot, const RecvWr &wr, const WqeLimits &limits,
                 std::uint32_t qp_handle) {
    const std::size_t nsge = wr.sge.size();
    if (nsge > limits.max_sge)
        throw Error(EINVAL, "receive WR " + std::to_string(wr.wr_id) + " on " + qp_name(qp_handle) +
                                " has " + std::to_string(nsge) + " SGEs, the QP takes at most " +
                                std::to_string(limits.max_sge));
    if (sizeof(viaduct_rqe) + nsge * sizeof(viaduct_sge) > slot.size())
        throw Error(EINVAL, "receive WR " + std::to_string(wr.wr_id) + " does not fit a " +
                                std::to_string(slot.size()) + "-byte slot");
    viaduct_rqe h{};
    h.wr_id = wr.wr_id;
    h.num_sge = static_cast<__u16>(nsge);
    std::memcpy(slot.data(), &h, sizeof(h));
    put_sges(slot.data() + sizeof(h), wr.sge);
}

WorkRing::WorkRing(std::byte *slots, std::uint32_t depth, std::uint32_t wqe_size,
                   std::uint32_t *producer, std::uint32_t *consumer) noexcept
    : slots_(slots), depth_(depth), wqe_size_(wqe_size), shared_producer_(producer),
      shared_consumer_(consumer) {
    // The producer index is ours; the page starts zeroed, but a ring made
    // on an index that already ran (tests) continues where it stands.
    producer_ = load_relaxed(*shared_producer_);
}

std::uint32_t WorkRing::room() const noexcept {
    // Pairs with the kernel's store-release of its consumer index after it
    // copied the slots: a slot counted free here is no longer read.
    return ring_room(producer_, load_acquire(*shared_consumer_), depth_);
}

std::span<std::byte> WorkRing::next_slot(std::uint32_t n) const noexcept {
    const std::size_t slot = ring_slot(producer_ + n, depth_);
    return {slots_ + slot * wqe_size_, wqe_size_};
}

void WorkRing::publish(std::uint32_t n) noexcept {
    producer_ += n;
    store_release(*shared_producer_, producer_);
}

} // namespace viaduct::detail
