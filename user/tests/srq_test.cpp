// SPDX-License-Identifier: GPL-2.0
// Shared receive queues in the native API: ownership (host), and against
// the module (LiveSrq): creation, posting without a system call, the
// errors a program can make, and the lifetimes of an SRQ and its QPs. The
// data path between connected QPs is selftests/srq_test.c's.
#include <cerrno>
#include <gtest/gtest.h>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <type_traits>
#include <vector>

#include <viaduct/viaduct.hpp>

#include "ioctl_trace.hpp"
#include "live_env.hpp"

using viaduct::CompletionQueue;
using viaduct::Device;
using viaduct::Error;
using viaduct::ProtectionDomain;
using viaduct::QpConfig;
using viaduct::QpState;
using viaduct::QueuePair;
using viaduct::RecvWr;
using viaduct::Sge;
using viaduct::SharedReceiveQueue;
using viaduct::SrqConfig;
using viaduct::test::IoctlTrace;

static_assert(!std::is_copy_constructible_v<SharedReceiveQueue>);
static_assert(!std::is_copy_assignable_v<SharedReceiveQueue>);
static_assert(std::is_nothrow_move_constructible_v<SharedReceiveQueue>);
static_assert(std::is_nothrow_move_assignable_v<SharedReceiveQueue>);
static_assert(std::is_nothrow_destructible_v<SharedReceiveQueue>);

namespace {

template <class Fn> std::string expect_error(int err, Fn fn) {
    try {
        fn();
    } catch (const Error &e) {
        EXPECT_EQ(err, e.errnum()) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error thrown, expected errno " << err;
    return {};
}

bool contains(const std::string &s, const std::string &part) {
    return s.find(part) != std::string::npos;
}

class LiveSrq : public ::testing::Test {
protected:
    void SetUp() override { VIADUCT_LIVE_DEVICE(name_); }

    Device open() const { return Device::open(name_); }

    std::string name_;
};

} // namespace

TEST(Srq, QpConfigHasNoSrqByDefault) {
    QpConfig c;
    EXPECT_EQ(nullptr, c.srq);
    SrqConfig s;
    EXPECT_LE(1u, s.depth);
}

TEST_F(LiveSrq, CreatePostQuery) {
    Device dev = open();
    ProtectionDomain pd(dev);
    SrqConfig sc;
    sc.depth = 6;
    sc.max_sge = 2;
    sc.user_data = 77;
    SharedReceiveQueue srq(pd, sc);
    EXPECT_NE(0u, srq.handle());
    EXPECT_EQ(8u, srq.depth());
    EXPECT_LE(2u, srq.max_sge());
    EXPECT_EQ(8u, srq.room());

    std::vector<std::byte> buf(4096);
    viaduct::MemoryRegion mr(pd, buf.data(), buf.size(), viaduct::access::local_write);
    Sge sge{reinterpret_cast<std::uintptr_t>(buf.data()), 512, mr.lkey()};
    // Posting is no system call: the kernel reads the ring when it needs to.
    IoctlTrace trace;
    for (std::uint64_t i = 0; i < 5; ++i)
        srq.post_recv(RecvWr{.wr_id = i, .sge = {&sge, 1}});
    EXPECT_TRUE(trace.calls().empty());
    EXPECT_EQ(3u, srq.room());

    auto a = srq.query();
    EXPECT_EQ(8u, a.depth);
    EXPECT_EQ(5u, a.outstanding);
    EXPECT_EQ(0u, a.limit);
    EXPECT_EQ(0u, a.num_qps);
    EXPECT_FALSE(a.broken);
    srq.arm_limit(3);
    EXPECT_EQ(3u, srq.query().limit);
    srq.arm_limit(0);
    EXPECT_EQ(0u, srq.query().limit);
}

TEST_F(LiveSrq, BadUseIsAClearError) {
    Device dev = open();
    ProtectionDomain pd(dev), other(dev);
    CompletionQueue cq(dev, 64);
    SrqConfig sc;
    sc.depth = 2;
    SharedReceiveQueue srq(pd, sc);

    sc.depth = 0;
    std::string m = expect_error(EINVAL, [&] { SharedReceiveQueue bad(pd, sc); });
    EXPECT_TRUE(contains(m, "depth")) << m;
    m = expect_error(EINVAL, [&] { srq.arm_limit(3); });
    EXPECT_TRUE(contains(m, "at most 2")) << m;

    // A full SRQ: ENOMEM from post, false from try_post, nothing posted.
    srq.post_recv(RecvWr{.wr_id = 1});
    srq.post_recv(RecvWr{.wr_id = 2});
    m = expect_error(ENOMEM, [&] { srq.post_recv(RecvWr{.wr_id = 3}); });
    EXPECT_TRUE(contains(m, "full")) << m;
    EXPECT_FALSE(srq.try_post_recv(RecvWr{.wr_id = 3}));
    EXPECT_EQ(2u, srq.query().outstanding);

    Sge sges[8]{};
    QpConfig c;
    c.send_cq = &cq;
    c.srq = &srq;
    m = expect_error(EINVAL, [&] { QueuePair qp(pd, c); });
    EXPECT_TRUE(contains(m, "receive CQ")) << m;
    c.recv_cq = &cq;
    QueuePair qp(pd, c);
    EXPECT_EQ(srq.handle(), qp.caps().srq_handle);
    EXPECT_EQ(0u, qp.caps().rq_depth);
    EXPECT_EQ(1u, srq.query().num_qps);
    m = expect_error(EINVAL, [&] { qp.post_recv(RecvWr{.wr_id = 9}); });
    EXPECT_TRUE(contains(m, "post receives there")) << m;
    expect_error(EINVAL, [&] { (void)qp.recv_queue_room(); });

    SharedReceiveQueue srq2(pd, SrqConfig{});
    expect_error(EINVAL, [&] { srq2.post_recv(RecvWr{.wr_id = 1, .sge = sges}); });
    m = expect_error(EINVAL, [&] {
        QpConfig o = c;
        QueuePair bad(other, o);
    });
    EXPECT_TRUE(contains(m, "same PD")) << m;
}

// The QP keeps its SRQ: the SRQ object may go first, the kernel's SRQ is
// destroyed after the QP.
TEST_F(LiveSrq, QpOutlivesItsSrqObject) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 64);
    std::optional<SharedReceiveQueue> srq;
    srq.emplace(pd, SrqConfig{});
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.srq = &*srq;
    QueuePair qp(pd, c);
    srq.reset();
    qp.modify(QpState::Error);
    auto ev = dev.read_event(std::chrono::seconds(10));
    ASSERT_TRUE(ev.has_value());
    EXPECT_EQ(viaduct::AsyncEventType::QpLastWqe, ev->type);
    EXPECT_EQ(qp.handle(), ev->handle);
}
