// SPDX-License-Identifier: GPL-2.0
// The pure parts of the fast path on ordinary memory standing in for the
// kernel's: index arithmetic and wrap, reading a completion ring, room in a
// work ring, and the WQE bytes the kernel will see.
#include <cerrno>
#include <cstring>
#include <gtest/gtest.h>
#include <vector>

#include <viaduct/viaduct.hpp>

#include "ring.hpp"

using namespace viaduct;
using namespace viaduct::detail;

namespace {

// A completion ring as the kernel lays it out, with the kernel's producer.
struct FakeCq {
    explicit FakeCq(std::uint32_t n)
        : entries(n), mem(VIADUCT_RING_HDR_SIZE / 8 + n * sizeof(viaduct_cqe) / 8) {
        hdr()->entries = n;
    }
    std::byte *base() { return reinterpret_cast<std::byte *>(mem.data()); }
    viaduct_ring *hdr() { return reinterpret_cast<viaduct_ring *>(mem.data()); }
    viaduct_cqe *cqe(std::uint32_t idx) {
        return reinterpret_cast<viaduct_cqe *>(base() + VIADUCT_RING_HDR_SIZE) +
               ring_slot(idx, entries);
    }
    // Start both indices at @idx, as after 2^32 - n completions.
    void start_at(std::uint32_t idx) {
        hdr()->producer = idx;
        hdr()->consumer = idx;
    }
    void push(std::uint64_t wr_id, std::uint8_t status = VIADUCT_WC_SUCCESS) {
        std::uint32_t p = hdr()->producer;
        viaduct_cqe c{};
        c.wr_id = wr_id;
        c.qp_handle = 7;
        c.status = status;
        c.opcode = VIADUCT_WC_RECV;
        c.flags = VIADUCT_WC_F_RECV;
        *cqe(p) = c;
        store_release(hdr()->producer, p + 1);
    }

    std::uint32_t entries;
    std::vector<std::uint64_t> mem; // 8-byte aligned
};

struct FakeQueue {
    FakeQueue(std::uint32_t d, std::uint32_t size)
        : depth(d), wqe_size(size), slots(std::size_t{d} * size / 8) {}
    WorkRing ring() {
        return WorkRing(reinterpret_cast<std::byte *>(slots.data()), depth, wqe_size,
                        &db.sq_producer, &db.sq_consumer);
    }
    std::uint32_t depth, wqe_size;
    std::vector<std::uint64_t> slots;
    viaduct_doorbell db{};
};

} // namespace

TEST(RingIndex, UsedRoomAndSlot) {
    EXPECT_EQ(0u, ring_used(5, 5));
    EXPECT_EQ(3u, ring_used(8, 5));
    EXPECT_EQ(64u, ring_room(10, 10, 64));
    EXPECT_EQ(0u, ring_room(74, 10, 64));
    EXPECT_EQ(1u, ring_room(73, 10, 64));
    EXPECT_EQ(5u, ring_slot(69, 64));
    EXPECT_EQ(0u, ring_slot(64, 64));
}

TEST(RingIndex, WrapsAt32Bits) {
    // Producer wrapped past 2^32, consumer not yet.
    const std::uint32_t cons = 0xfffffffeu;
    const std::uint32_t prod = 3u; // 5 ahead
    EXPECT_EQ(5u, ring_used(prod, cons));
    EXPECT_EQ(11u, ring_room(prod, cons, 16));
    EXPECT_EQ(14u, ring_slot(cons, 16));
    EXPECT_EQ(3u, ring_slot(prod, 16));
}

TEST(RingIndex, NonsenseConsumerLeavesNoRoom) {
    EXPECT_EQ(0u, ring_room(10, 100, 64)); // consumer ahead of producer
    EXPECT_EQ(0u, ring_room(200, 10, 64)); // more than a ring behind
    EXPECT_TRUE(is_pow2(1) && is_pow2(64) && !is_pow2(0) && !is_pow2(48));
}

TEST(CompletionRing, PollsInOrderAndReleasesTheConsumer) {
    FakeCq cq(8);
    CompletionRing ring(cq.base(), 8);
    std::array<Completion, 4> out{};
    EXPECT_EQ(0u, ring.poll(std::span<Completion>(out)));
    EXPECT_TRUE(ring.empty());
    for (std::uint64_t i = 0; i < 6; ++i)
        cq.push(100 + i, i == 5 ? VIADUCT_WC_FLUSHED : VIADUCT_WC_SUCCESS);
    EXPECT_FALSE(ring.empty());
    ASSERT_EQ(4u, ring.poll(std::span<Completion>(out)));
    for (std::uint64_t i = 0; i < 4; ++i) {
        EXPECT_EQ(100 + i, out[i].wr_id);
        EXPECT_EQ(7u, out[i].qp_handle);
        EXPECT_TRUE(out[i].ok());
        EXPECT_TRUE(out[i].is_recv());
        EXPECT_EQ(WcOpcode::Recv, out[i].opcode);
    }
    EXPECT_EQ(4u, cq.hdr()->consumer) << "consumer not published";
    ASSERT_EQ(2u, ring.poll(std::span<Completion>(out)));
    EXPECT_EQ(104u, out[0].wr_id);
    EXPECT_EQ(WcStatus::Flushed, out[1].status);
    EXPECT_EQ(6u, cq.hdr()->consumer);
    EXPECT_EQ(0u, ring.poll(std::span<Completion>(out)));
    EXPECT_TRUE(ring.empty());
}

TEST(CompletionRing, WrapsTheSlotsAndTheIndex) {
    FakeCq cq(4);
    cq.start_at(0xfffffffdu);
    CompletionRing ring(cq.base(), 4);
    EXPECT_EQ(0xfffffffdu, ring.consumer());
    std::array<viaduct_cqe, 3> out{};
    std::uint64_t next = 0;
    // 20 rounds of 3 completions go past 2^32 and round the ring many times.
    for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 3; ++i)
            cq.push(next + static_cast<std::uint64_t>(i));
        ASSERT_EQ(3u, ring.poll(std::span<viaduct_cqe>(out))) << round;
        for (int i = 0; i < 3; ++i)
            EXPECT_EQ(next + static_cast<std::uint64_t>(i), out[static_cast<std::size_t>(i)].wr_id);
        next += 3;
    }
    EXPECT_EQ(0xfffffffdu + 60u, cq.hdr()->consumer);
}

TEST(CompletionRing, ReportsOverflowAfterTheLastGoodCqe) {
    FakeCq cq(2);
    CompletionRing ring(cq.base(), 2);
    cq.push(1);
    cq.push(2);
    store_release(cq.hdr()->flags, VIADUCT_RING_F_OVERFLOW);
    EXPECT_TRUE(ring.overflowed());
    std::array<Completion, 4> out{};
    EXPECT_EQ(2u, ring.poll(std::span<Completion>(out)));
    EXPECT_TRUE(ring.empty());
}

// A producer index more than a ring ahead of what was consumed is corrupt
// (or hostile): an error, never "empty", and nothing is consumed.
TEST(CompletionRing, RefusesAProducerMoreThanARingAhead) {
    FakeCq cq(4);
    CompletionRing ring(cq.base(), 4);
    cq.push(1);
    cq.hdr()->producer = 9;
    std::array<Completion, 16> out{};
    try {
        ring.poll(std::span<Completion>(out));
        ADD_FAILURE() << "a producer index 9 ahead of a 4-entry ring was accepted";
    } catch (const Error &e) {
        EXPECT_EQ(EPROTO, e.errnum());
        EXPECT_NE(std::string::npos, std::string(e.what()).find("9 ahead")) << e.what();
    }
    EXPECT_EQ(0u, ring.consumer());
    EXPECT_EQ(0u, cq.hdr()->consumer);
    EXPECT_FALSE(ring.empty());
    // A producer exactly a ring ahead is a full ring, not an error.
    cq.hdr()->producer = 4;
    EXPECT_EQ(4u, ring.poll(std::span<Completion>(out)));
}

TEST(WorkRing, RoomFollowsTheKernelsConsumer) {
    FakeQueue q(4, 64);
    WorkRing ring = q.ring();
    EXPECT_EQ(4u, ring.room());
    ring.publish(3);
    EXPECT_EQ(3u, q.db.sq_producer);
    EXPECT_EQ(1u, ring.room());
    ring.publish(1);
    EXPECT_EQ(0u, ring.room());
    store_release(q.db.sq_consumer, 2); // the kernel copied two slots
    EXPECT_EQ(2u, ring.room());
    store_release(q.db.sq_consumer, 9); // nonsense: no room
    EXPECT_EQ(0u, ring.room());
}

TEST(WorkRing, SlotsWrapWithTheProducer) {
    FakeQueue q(4, 64);
    q.db.sq_producer = 0xffffffffu;
    q.db.sq_consumer = 0xffffffffu;
    WorkRing ring = q.ring();
    auto *base = reinterpret_cast<std::byte *>(q.slots.data());
    EXPECT_EQ(base + 3 * 64, ring.next_slot().data());
    EXPECT_EQ(base, ring.next_slot(1).data());
    EXPECT_EQ(64u, ring.next_slot().size());
    ring.publish(2);
    EXPECT_EQ(1u, q.db.sq_producer);
    EXPECT_EQ(2u, ring.room());
    EXPECT_EQ(base + 64, ring.next_slot().data());
}

TEST(Encode, SendWithSgesAndImmediate) {
    std::vector<std::uint64_t> buf(128 / 8, ~0ull);
    std::span<std::byte> slot(reinterpret_cast<std::byte *>(buf.data()), 128);
    const Sge sges[2] = {{0x1000, 10, 0x100}, {0x2000, 20, 0x200}};
    SendWr wr;
    wr.wr_id = 42;
    wr.opcode = SendOp::RdmaWrite;
    wr.read_fence = true;
    wr.sge = sges;
    wr.imm_data = 0xabcd;
    wr.remote_addr = 0xdead0000;
    wr.remote_stag = 0x1234;
    encode_send(slot, wr, WqeLimits{128, 4, 64}, 1);

    viaduct_sqe h;
    std::memcpy(&h, slot.data(), sizeof(h));
    EXPECT_EQ(42u, h.wr_id);
    EXPECT_EQ(VIADUCT_OP_RDMA_WRITE, h.opcode);
    EXPECT_EQ(VIADUCT_SQE_SIGNALED | VIADUCT_SQE_READ_FENCE | VIADUCT_SQE_IMMEDIATE, h.flags);
    EXPECT_EQ(2u, h.num_sge);
    EXPECT_EQ(0u, h.length);
    EXPECT_EQ(0xabcdu, h.imm_data);
    EXPECT_EQ(0x1234u, h.remote_stag);
    EXPECT_EQ(0xdead0000u, h.remote_addr);
    viaduct_sge s[2];
    std::memcpy(s, slot.data() + sizeof(h), sizeof(s));
    EXPECT_EQ(0x1000u, s[0].addr);
    EXPECT_EQ(10u, s[0].length);
    EXPECT_EQ(0x100u, s[0].stag);
    EXPECT_EQ(0x2000u, s[1].addr);
    EXPECT_EQ(20u, s[1].length);
    EXPECT_EQ(0x200u, s[1].stag);
}

TEST(Encode, UnsignaledPlainSendHasNoFlags) {
    std::vector<std::uint64_t> buf(64 / 8, ~0ull);
    std::span<std::byte> slot(reinterpret_cast<std::byte *>(buf.data()), 64);
    SendWr wr;
    wr.wr_id = 1;
    wr.signaled = false;
    encode_send(slot, wr, WqeLimits{64, 1, 0}, 1);
    viaduct_sqe h;
    std::memcpy(&h, slot.data(), sizeof(h));
    EXPECT_EQ(VIADUCT_OP_SEND, h.opcode);
    EXPECT_EQ(0u, h.flags);
    EXPECT_EQ(0u, h.num_sge);
    EXPECT_EQ(0u, h.imm_data);
    EXPECT_EQ(0u, h.remote_addr);
}

TEST(Encode, InlineDataIsCopiedIntoTheSlot) {
    std::vector<std::uint64_t> buf(128 / 8, 0);
    std::span<std::byte> slot(reinterpret_cast<std::byte *>(buf.data()), 128);
    const char msg[] = "hello, viaduct";
    SendWr wr;
    wr.wr_id = 9;
    wr.inline_data = std::as_bytes(std::span(msg));
    encode_send(slot, wr, WqeLimits{128, 1, 96}, 1);
    viaduct_sqe h;
    std::memcpy(&h, slot.data(), sizeof(h));
    EXPECT_EQ(VIADUCT_SQE_SIGNALED | VIADUCT_SQE_INLINE, h.flags);
    EXPECT_EQ(sizeof(msg), h.length);
    EXPECT_EQ(0u, h.num_sge);
    EXPECT_EQ(0, std::memcmp(msg, slot.data() + sizeof(h), sizeof(msg)));
}

TEST(Encode, RefusesWhatTheSlotCannotHold) {
    std::vector<std::uint64_t> buf(64 / 8, 0);
    std::span<std::byte> slot(reinterpret_cast<std::byte *>(buf.data()), 64);
    const Sge sges[3] = {};
    const std::byte data[40] = {};
    auto expect_einval = [&](const SendWr &wr, const WqeLimits &l) {
        try {
            encode_send(slot, wr, l, 3);
            ADD_FAILURE() << "encoded";
        } catch (const Error &e) {
            EXPECT_EQ(EINVAL, e.errnum()) << e.what();
        }
    };
    SendWr too_many;
    too_many.sge = std::span(sges, 3);
    expect_einval(too_many, WqeLimits{64, 2, 0});
    SendWr too_long;
    too_long.inline_data = data;
    expect_einval(too_long, WqeLimits{64, 1, 32});
    SendWr both;
    both.sge = std::span(sges, 1);
    both.inline_data = std::span(data, 4);
    expect_einval(both, WqeLimits{64, 1, 32});
    SendWr over_slot; // limits that lie about the slot
    over_slot.inline_data = data;
    expect_einval(over_slot, WqeLimits{64, 1, 256});

    // What the kernel would complete with LOC_QP_OP_ERR (and put the QP
    // in Error for) is refused before it reaches the ring.
    SendWr read;
    read.opcode = SendOp::RdmaRead;
    expect_einval(read, WqeLimits{64, 2, 32}); // no SGE
    read.sge = std::span(sges, 2);
    expect_einval(read, WqeLimits{64, 2, 32}); // two
    read.sge = std::span(sges, 1);
    read.imm_data = 1;
    expect_einval(read, WqeLimits{64, 2, 32}); // immediate
    read.imm_data.reset();
    read.solicited = true;
    expect_einval(read, WqeLimits{64, 2, 32});
    read.solicited = false;
    EXPECT_NO_THROW(encode_send(slot, read, WqeLimits{64, 2, 32}, 3));
    SendWr write;
    write.opcode = SendOp::RdmaWrite;
    write.solicited = true;
    expect_einval(write, WqeLimits{64, 2, 32}); // solicited needs immediate data
    write.imm_data = 0xfeedU;
    EXPECT_NO_THROW(encode_send(slot, write, WqeLimits{64, 2, 32}, 3));
    {
        viaduct_sqe w;
        std::memcpy(&w, slot.data(), sizeof(w));
        EXPECT_EQ(VIADUCT_SQE_SIGNALED | VIADUCT_SQE_SOLICITED | VIADUCT_SQE_IMMEDIATE, w.flags);
        EXPECT_EQ(0xfeedU, w.imm_data);
    }
    SendWr send_remote;
    send_remote.remote_addr = 0x1000;
    expect_einval(send_remote, WqeLimits{64, 2, 32});
    SendWr inv;
    inv.opcode = SendOp::SendWithInvalidate;
    inv.remote_stag = 0x1234'56a5U;
    inv.solicited = true;
    EXPECT_NO_THROW(encode_send(slot, inv, WqeLimits{64, 2, 32}, 3));
    {
        viaduct_sqe w;
        std::memcpy(&w, slot.data(), sizeof(w));
        EXPECT_EQ(VIADUCT_OP_SEND_INV, w.opcode);
        EXPECT_EQ(VIADUCT_SQE_SIGNALED | VIADUCT_SQE_SOLICITED, w.flags);
        EXPECT_EQ(0x1234'56a5U, w.remote_stag);
        EXPECT_EQ(0U, w.remote_addr);
    }
    inv.imm_data = 1;
    expect_einval(inv, WqeLimits{64, 2, 32}); // the STag rides where imm goes
    inv.imm_data.reset();
    inv.remote_addr = 0x1000;
    expect_einval(inv, WqeLimits{64, 2, 32});
    SendWr fr;
    fr.opcode = SendOp::FastRegister;
    fr.sge = std::span(sges, 2);
    fr.remote_stag = 0x300'07U;
    fr.remote_addr = 0x5000;
    fr.fast_reg_access = VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE;
    fr.local_fence = true;
    EXPECT_NO_THROW(encode_send(slot, fr, WqeLimits{64, 2, 32}, 3));
    {
        viaduct_sqe w;
        std::memcpy(&w, slot.data(), sizeof(w));
        EXPECT_EQ(VIADUCT_OP_FAST_REG, w.opcode);
        EXPECT_EQ(VIADUCT_SQE_SIGNALED | VIADUCT_SQE_LOCAL_FENCE, w.flags);
        EXPECT_EQ(fr.fast_reg_access, w.imm_data);
        EXPECT_EQ(2u, w.num_sge);
        EXPECT_EQ(0x5000u, w.remote_addr);
    }
    fr.sge = {};
    expect_einval(fr, WqeLimits{64, 2, 32}); // a page list of nothing
    SendWr linv;
    linv.opcode = SendOp::LocalInvalidate;
    linv.remote_stag = 0x300'07U;
    EXPECT_NO_THROW(encode_send(slot, linv, WqeLimits{64, 2, 32}, 3));
    linv.fast_reg_access = 1;
    expect_einval(linv, WqeLimits{64, 2, 32});
    linv.fast_reg_access = 0;
    linv.sge = std::span(sges, 1);
    expect_einval(linv, WqeLimits{64, 2, 32});
    SendWr rinv;
    rinv.opcode = SendOp::RdmaReadWithInvalidate;
    rinv.sge = std::span(sges, 1);
    EXPECT_NO_THROW(encode_send(slot, rinv, WqeLimits{64, 2, 32}, 3));
    rinv.sge = std::span(sges, 2);
    expect_einval(rinv, WqeLimits{64, 2, 32});
    EXPECT_EQ(0x1234'56ffU, with_key(0x1234'5601U, 0xff));
    // A window's bind: one SGE (the region's range), rights in imm_data.
    SendWr bind;
    bind.opcode = SendOp::BindWindow;
    bind.sge = std::span(sges, 1);
    bind.remote_stag = 0x400'09U;
    bind.fast_reg_access = VIADUCT_ACCESS_REMOTE_READ | VIADUCT_ACCESS_ZERO_BASED;
    EXPECT_NO_THROW(encode_send(slot, bind, WqeLimits{64, 2, 32}, 3));
    {
        viaduct_sqe w;
        viaduct_sge g;
        std::memcpy(&w, slot.data(), sizeof(w));
        std::memcpy(&g, slot.data() + sizeof(w), sizeof(g));
        EXPECT_EQ(VIADUCT_OP_BIND_MW, w.opcode);
        EXPECT_EQ(VIADUCT_SQE_SIGNALED, w.flags);
        EXPECT_EQ(bind.fast_reg_access, w.imm_data);
        EXPECT_EQ(0x400'09U, w.remote_stag);
        EXPECT_EQ(1u, w.num_sge);
        EXPECT_EQ(0u, w.remote_addr);
        EXPECT_EQ(sges[0].stag, g.stag);
        EXPECT_EQ(sges[0].addr, g.addr);
        EXPECT_EQ(sges[0].length, g.length);
    }
    bind.sge = std::span(sges, 2);
    expect_einval(bind, WqeLimits{64, 2, 32}); // one range only
    bind.sge = {};
    expect_einval(bind, WqeLimits{64, 2, 32});
    bind.sge = std::span(sges, 1);
    bind.remote_addr = 0x1000;
    expect_einval(bind, WqeLimits{64, 2, 32});
    bind.remote_addr = 0;
    bind.solicited = true;
    expect_einval(bind, WqeLimits{64, 2, 32});
    SendWr bad_op;
    bad_op.opcode = static_cast<SendOp>(VIADUCT_OP_MAX + 1);
    expect_einval(bad_op, WqeLimits{64, 2, 32});
    SendWr solicited_send;
    solicited_send.solicited = true;
    EXPECT_NO_THROW(encode_send(slot, solicited_send, WqeLimits{64, 2, 32}, 3));
    viaduct_sqe h;
    std::memcpy(&h, slot.data(), sizeof(h));
    EXPECT_EQ(VIADUCT_SQE_SIGNALED | VIADUCT_SQE_SOLICITED, h.flags);

    RecvWr r;
    r.sge = std::span(sges, 3);
    EXPECT_THROW(encode_recv(slot, r, WqeLimits{64, 2, 0}, 3), Error);
}

TEST(Encode, Recv) {
    std::vector<std::uint64_t> buf(64 / 8, ~0ull);
    std::span<std::byte> slot(reinterpret_cast<std::byte *>(buf.data()), 64);
    const Sge sges[2] = {{0x10, 1, 2}, {0x20, 3, 4}};
    RecvWr wr;
    wr.wr_id = 77;
    wr.sge = sges;
    encode_recv(slot, wr, WqeLimits{64, 3, 0}, 1);
    viaduct_rqe h;
    std::memcpy(&h, slot.data(), sizeof(h));
    EXPECT_EQ(77u, h.wr_id);
    EXPECT_EQ(2u, h.num_sge);
    EXPECT_EQ(0u, h.reserved0); // the kernel refuses nonzero reserved fields
    EXPECT_EQ(0u, h.reserved1);
    viaduct_sge s;
    std::memcpy(&s, slot.data() + sizeof(h) + sizeof(s), sizeof(s));
    EXPECT_EQ(0x20u, s.addr);
    EXPECT_EQ(3u, s.length);
    EXPECT_EQ(4u, s.stag);
}

TEST(Completion, FromTheKernelsCqe) {
    viaduct_cqe c{};
    c.wr_id = 5;
    c.qp_handle = 3;
    c.byte_len = 100;
    c.opcode = VIADUCT_WC_RDMA_READ;
    c.status = VIADUCT_WC_REM_ACCESS_ERR;
    c.flags = VIADUCT_WC_F_IMMEDIATE;
    c.imm_data = 9;
    c.vendor_err = 0x123;
    Completion r = to_completion(c);
    EXPECT_EQ(5u, r.wr_id);
    EXPECT_EQ(3u, r.qp_handle);
    EXPECT_EQ(100u, r.byte_len);
    EXPECT_EQ(WcOpcode::RdmaRead, r.opcode);
    EXPECT_EQ(WcStatus::RemoteAccessError, r.status);
    EXPECT_FALSE(r.ok());
    EXPECT_FALSE(r.is_recv());
    EXPECT_TRUE(r.has_imm());
    EXPECT_EQ(9u, r.imm_data);
    EXPECT_EQ(0x123u, r.vendor_err);
    EXPECT_STREQ("remote access error", to_string(r.status));
    EXPECT_STREQ("flushed", to_string(WcStatus::Flushed));
    EXPECT_FALSE(r.has_invalidated());
    EXPECT_EQ(0u, r.invalidated_stag);

    c.opcode = VIADUCT_WC_RECV;
    c.status = VIADUCT_WC_SUCCESS;
    c.flags = VIADUCT_WC_F_RECV | VIADUCT_WC_F_INVALIDATED;
    c.invalidated_stag = 0xabcd'ef12U;
    r = to_completion(c);
    EXPECT_TRUE(r.is_recv());
    EXPECT_TRUE(r.has_invalidated());
    EXPECT_EQ(0xabcd'ef12U, r.invalidated_stag);
}
