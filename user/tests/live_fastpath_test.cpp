// SPDX-License-Identifier: GPL-2.0
//
// Live tests of the fast path against the real module, in the test VM:
// protection domains, memory regions, completion queues and channels, queue
// pairs; posting into the mapped rings, doorbells, polling and waiting, and
// the lifetime of objects. Like live_test.cpp, every suite is named Live*
// and skips without the character device or a device to open.
//
// No connection is made here, so no work request executes: a QP in Idle
// keeps what is posted, and moving it to Error flushes everything, in post
// order, with VIADUCT_WC_FLUSHED. A QP already in Error flushes each WR as
// the kernel takes it. That is enough to see every WR go through the rings
// and come back through a CQ.
//
// What the kernel did is read from the kernel: QUERY_QP for the WRs it
// holds, and the counters of the generic-netlink STATS_GET dump for the
// DOORBELL calls it received (nl_stats.hpp). What the library called is
// seen through an ioctl() interposer (ioctl_trace.hpp).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <map>
#include <optional>
#include <pthread.h>
#include <set>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <viaduct/viaduct.hpp>

#include <viaduct/viaduct-nl.h>

#include "ioctl_trace.hpp"
#include "live_env.hpp"
#include "mmap_fault.hpp"
#include "nl_stats.hpp"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using viaduct::Completion;
using viaduct::CompletionChannel;
using viaduct::CompletionQueue;
using viaduct::Device;
using viaduct::Error;
using viaduct::MemoryRegion;
using viaduct::ProtectionDomain;
using viaduct::QpConfig;
using viaduct::QpState;
using viaduct::QueuePair;
using viaduct::RecvWr;
using viaduct::SendOp;
using viaduct::SendWr;
using viaduct::Sge;
using viaduct::WcOpcode;
using viaduct::WcStatus;
using viaduct::test::IoctlTrace;

namespace {

bool is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1;
}

// Runs @fn, which must throw viaduct::Error with @err; returns its message.
template <class Fn> std::string expect_error(int err, Fn fn) {
    try {
        fn();
    } catch (const Error &e) {
        EXPECT_EQ(err, e.errnum()) << e.what();
        EXPECT_EQ(std::error_code(err, std::generic_category()), e.code());
        return e.what();
    }
    ADD_FAILURE() << "no viaduct::Error thrown, expected errno " << err;
    return {};
}

bool contains(const std::string &s, const std::string &part) {
    return s.find(part) != std::string::npos;
}

// Polls until @want completions arrived or @limit passed.
std::vector<Completion> poll_n(const std::function<std::size_t(std::span<Completion>)> &poll,
                               std::size_t want, std::chrono::milliseconds limit = 10s) {
    std::vector<Completion> got;
    std::array<Completion, 32> buf{};
    const auto deadline = Clock::now() + limit;
    while (got.size() < want && Clock::now() < deadline) {
        std::size_t n = poll(buf);
        got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        if (n == 0)
            std::this_thread::sleep_for(1ms);
    }
    return got;
}

std::vector<Completion> poll_cq(CompletionQueue &cq, std::size_t want,
                                std::chrono::milliseconds limit = 10s) {
    return poll_n([&](std::span<Completion> s) { return cq.poll(s); }, want, limit);
}

// A page-aligned anonymous buffer.
class Buffer {
public:
    explicit Buffer(std::size_t size, int prot = PROT_READ | PROT_WRITE) : size_(size) {
        void *p = ::mmap(nullptr, size, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            throw std::system_error(errno, std::generic_category(), "mmap");
        p_ = static_cast<std::byte *>(p);
    }
    ~Buffer() { ::munmap(p_, size_); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    std::byte *data() const { return p_; }
    std::size_t size() const { return size_; }

private:
    std::byte *p_;
    std::size_t size_;
};

class LiveFastPath : public ::testing::Test {
protected:
    void SetUp() override { VIADUCT_LIVE_DEVICE(name_); }

    Device open() const { return Device::open(name_); }

    std::string name_;
};

class LiveFastPathDoorbell : public LiveFastPath, public ::testing::WithParamInterface<bool> {};

std::string doorbell_mode(const ::testing::TestParamInfo<bool> &info) {
    return info.param ? "Polled" : "Syscall";
}

} // namespace

TEST_F(LiveFastPath, ObjectsDescribeThemselves) {
    Device dev = open();
    ProtectionDomain pd(dev);
    EXPECT_NE(0u, pd.handle());
    Buffer buf(3 * 4096);
    MemoryRegion mr(pd, buf.data() + 100, 5000,
                    viaduct::access::local_write | viaduct::access::remote_write, 0x5a);
    EXPECT_NE(0u, mr.handle());
    EXPECT_EQ(0x5au, mr.stag() & VIADUCT_STAG_KEY_MASK);
    EXPECT_EQ(mr.stag(), mr.lkey());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf.data() + 100), mr.addr());
    EXPECT_EQ(5000u, mr.length());
    Sge whole = mr.sge();
    EXPECT_EQ(mr.addr(), whole.addr);
    EXPECT_EQ(5000u, whole.length);
    EXPECT_EQ(mr.stag(), whole.stag);
    Sge part = mr.sge(4000, 1000);
    EXPECT_EQ(mr.addr() + 4000, part.addr);
    expect_error(ERANGE, [&] { (void)mr.sge(4000, 1001); });

    CompletionQueue cq(dev, 100);
    EXPECT_NE(0u, cq.handle());
    EXPECT_EQ(128u, cq.entries());

    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.sq_depth = 10;
    c.rq_depth = 3;
    c.max_send_sge = 3;
    c.max_recv_sge = 2;
    c.max_inline = 40;
    QueuePair qp(pd, c);
    EXPECT_NE(0u, qp.handle());
    const viaduct::QpCaps &caps = qp.caps();
    EXPECT_EQ(16u, caps.sq_depth);
    EXPECT_EQ(4u, caps.rq_depth);
    EXPECT_GE(caps.max_send_sge, 3u);
    EXPECT_GE(caps.max_recv_sge, 2u);
    EXPECT_GE(caps.max_inline, 40u);
    EXPECT_GE(caps.sq_wqe_size, 64u);
    EXPECT_FALSE(caps.private_send_ring);
    EXPECT_FALSE(caps.private_recv_ring);
    EXPECT_EQ(16u, qp.send_queue_room());
    EXPECT_EQ(4u, qp.recv_queue_room());

    viaduct::QpAttributes a = qp.query();
    EXPECT_EQ(QpState::Idle, a.state);
    EXPECT_EQ(caps.qpn, a.qpn);
    EXPECT_EQ(16u, a.sq_depth);
    EXPECT_EQ(0u, a.sq_outstanding);
}

// N sends and M receives posted to an Idle QP, then Error: exactly N + M
// flushed completions, sends first (the kernel flushes the SQ, then the
// RQ), each queue in post order, unsignaled sends included.
TEST_P(LiveFastPathDoorbell, ErrorFlushesEveryWrInOrder) {
    const bool polled = GetParam();
    Device dev = open();
    ProtectionDomain pd(dev);
    Buffer buf(4096);
    MemoryRegion mr(pd, buf.data(), buf.size());
    CompletionQueue cq(dev, 64);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.sq_depth = 32;
    c.rq_depth = 32;
    c.max_send_sge = 2;
    c.max_inline = 16;
    c.polled_doorbell = polled;
    QueuePair qp(pd, c);
    EXPECT_EQ(polled, qp.caps().polled_doorbell);

    constexpr std::uint64_t N = 20, M = 30;
    const Sge sges[2] = {mr.sge(0, 64), mr.sge(64, 64)};
    const std::byte payload[8] = {};
    std::uint64_t posts = 0;
    for (std::uint64_t i = 0; i < N; ++i) {
        SendWr wr;
        wr.wr_id = 1000 + i;
        wr.signaled = i % 3 != 0;
        if (i % 4 == 1)
            wr.inline_data = payload;
        else
            wr.sge = std::span(sges, 1 + i % 2);
        if (i % 5 == 2)
            wr.imm_data = static_cast<std::uint32_t>(i);
        qp.post_send(wr);
        ++posts;
    }
    std::vector<RecvWr> recvs(M);
    for (std::uint64_t i = 0; i < M; ++i) {
        recvs[i].wr_id = 5000 + i;
        recvs[i].sge = std::span(sges, 1);
    }
    qp.post_recv(std::span<const RecvWr>(recvs).first(10)); // batches
    qp.post_recv(std::span<const RecvWr>(recvs).subspan(10));
    posts += 2;
    if (!polled) {
        EXPECT_EQ(posts, qp.doorbell_calls()) << "one DOORBELL per post call";
        viaduct::QpAttributes a = qp.query();
        EXPECT_EQ(N, a.sq_outstanding);
        EXPECT_EQ(M, a.rq_outstanding);
    }
    // An Idle QP completes nothing.
    std::array<Completion, 4> none{};
    EXPECT_EQ(0u, cq.poll(none));

    qp.modify(QpState::Error);
    EXPECT_EQ(QpState::Error, qp.query().state);
    std::vector<Completion> got = poll_cq(cq, N + M);
    ASSERT_EQ(N + M, got.size());
    for (std::uint64_t i = 0; i < N + M; ++i) {
        const Completion &wc = got[i];
        SCOPED_TRACE("completion " + std::to_string(i));
        EXPECT_EQ(WcStatus::Flushed, wc.status) << viaduct::to_string(wc.status);
        EXPECT_EQ(qp.handle(), wc.qp_handle);
        EXPECT_EQ(0u, wc.byte_len);
        if (i < N) {
            EXPECT_EQ(1000 + i, wc.wr_id);
            EXPECT_EQ(WcOpcode::Send, wc.opcode);
            EXPECT_FALSE(wc.is_recv());
        } else {
            EXPECT_EQ(5000 + i - N, wc.wr_id);
            EXPECT_EQ(WcOpcode::Recv, wc.opcode);
            EXPECT_TRUE(wc.is_recv());
        }
    }
    // Exactly N + M: nothing more comes.
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(0u, cq.poll(none));
    viaduct::QpAttributes a = qp.query();
    EXPECT_EQ(0u, a.sq_outstanding);
    EXPECT_EQ(0u, a.rq_outstanding);
}

// The prefix keeps the names under --gtest_filter='Live*'.
INSTANTIATE_TEST_SUITE_P(Live, LiveFastPathDoorbell, ::testing::Values(false, true), doorbell_mode);

TEST_F(LiveFastPath, PrivateCompletionRings) {
    Device dev = open();
    ProtectionDomain pd(dev);
    QpConfig c; // no CQs: a private ring per queue
    c.sq_depth = 8;
    c.rq_depth = 8;
    c.max_recv_sge = 0;
    QueuePair qp(pd, c);
    EXPECT_TRUE(qp.caps().private_send_ring);
    EXPECT_TRUE(qp.caps().private_recv_ring);
    for (std::uint64_t i = 0; i < 5; ++i)
        qp.post_send(SendWr{.wr_id = i, .signaled = false});
    for (std::uint64_t i = 0; i < 3; ++i)
        qp.post_recv(RecvWr{.wr_id = 100 + i});
    qp.modify(QpState::Error);
    auto sends = poll_n([&](std::span<Completion> s) { return qp.poll_send(s); }, 5);
    auto recvs = poll_n([&](std::span<Completion> s) { return qp.poll_recv(s); }, 3);
    ASSERT_EQ(5u, sends.size());
    ASSERT_EQ(3u, recvs.size());
    for (std::uint64_t i = 0; i < 5; ++i) {
        EXPECT_EQ(i, sends[i].wr_id);
        EXPECT_EQ(WcOpcode::Send, sends[i].opcode);
        EXPECT_EQ(WcStatus::Flushed, sends[i].status);
    }
    for (std::uint64_t i = 0; i < 3; ++i) {
        EXPECT_EQ(100 + i, recvs[i].wr_id);
        EXPECT_TRUE(recvs[i].is_recv());
    }
    // After Error, later posts are flushed as the kernel takes them.
    qp.post_recv(RecvWr{.wr_id = 7});
    auto late = poll_n([&](std::span<Completion> s) { return qp.poll_recv(s); }, 1);
    ASSERT_EQ(1u, late.size());
    EXPECT_EQ(7u, late[0].wr_id);
}

TEST_F(LiveFastPath, ResizeKeepsUnreadCompletions) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 8);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.rq_depth = 8;
    QueuePair qp(pd, c);
    qp.modify(QpState::Error);
    for (std::uint64_t i = 0; i < 6; ++i)
        qp.post_recv(RecvWr{.wr_id = i});
    std::array<Completion, 2> two{};
    ASSERT_EQ(2u, cq.poll(two));
    EXPECT_EQ(64u, cq.resize(40));
    EXPECT_EQ(64u, cq.entries());
    for (std::uint64_t i = 6; i < 20; ++i)
        qp.post_recv(RecvWr{.wr_id = i});
    auto rest = poll_cq(cq, 18);
    ASSERT_EQ(18u, rest.size());
    for (std::uint64_t i = 0; i < 18; ++i)
        EXPECT_EQ(i + 2, rest[i].wr_id);
}

// The kernel switches a CQ to its new ring in RESIZE_CQ, before the library
// maps it: a mapping that fails then is an error from resize() and from
// every poll() until one maps it, never the old ring read as if current.
TEST_F(LiveFastPath, ResizeWhoseMappingFailsIsAnErrorNotSilence) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 8);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.rq_depth = 8;
    QueuePair qp(pd, c);
    qp.modify(QpState::Error);
    for (std::uint64_t i = 0; i < 3; ++i)
        qp.post_recv(RecvWr{.wr_id = i});
    std::array<Completion, 1> one{};
    ASSERT_EQ(1u, poll_n([&](std::span<Completion>) { return cq.poll(one); }, 1).size());
    {
        viaduct::test::MmapFault fault(ENOMEM, 2);
        std::string msg = expect_error(ENOMEM, [&] { cq.resize(40); });
        EXPECT_TRUE(contains(msg, "resized ring")) << msg;
        EXPECT_EQ(64u, cq.entries()) << "the kernel's size, mapped or not";
        msg = expect_error(ENOMEM, [&] { cq.poll(one); });
        EXPECT_TRUE(contains(msg, "cannot be polled until it is mapped")) << msg;
        EXPECT_EQ(2, fault.failed());
    }
    // Mapped at the next poll: the unread completions and the new ones.
    for (std::uint64_t i = 3; i < 5; ++i)
        qp.post_recv(RecvWr{.wr_id = i});
    auto rest = poll_cq(cq, 4);
    ASSERT_EQ(4u, rest.size());
    for (std::uint64_t i = 0; i < 4; ++i)
        EXPECT_EQ(i + 1, rest[i].wr_id);
    EXPECT_EQ(64u, cq.entries());
}

// fork(): the child shares the context's descriptor but not its rings.
// Whatever it inherited refuses to be used (EPERM) and is not destroyed in
// the kernel when the child lets it go; the child opens a context of its
// own; the parent's objects keep working.
TEST_F(LiveFastPath, ForkedChildNeitherUsesNorDestroysTheParentsObjects) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 8);
    Buffer buf(4096);
    MemoryRegion mr(pd, buf.data(), buf.size());
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    QueuePair qp(pd, c);
    const std::uint32_t qp_handle = qp.handle();

    const pid_t pid = ::fork();
    ASSERT_LE(0, pid);
    if (pid == 0) {
        int bad = 0;
        auto eperm = [&bad](int bit, auto &&fn) {
            try {
                fn();
                bad |= bit;
            } catch (const Error &e) {
                if (e.errnum() != EPERM)
                    bad |= bit;
            } catch (...) {
                bad |= bit;
            }
        };
        std::array<Completion, 1> one{};
        eperm(1, [&] { qp.post_recv(RecvWr{.wr_id = 1}); });
        eperm(2, [&] { cq.poll(one); });
        eperm(4, [&] { (void)qp.query(); });
        eperm(8, [&] { ProtectionDomain other(dev); });
        eperm(16, [&] { (void)mr.sge(); });
        {
            // Destroyed here: in the parent's context that would be the
            // parent's objects.
            QueuePair q = std::move(qp);
            CompletionQueue cq2 = std::move(cq);
            MemoryRegion m = std::move(mr);
            ProtectionDomain p = std::move(pd);
            Device d = std::move(dev);
        }
        try {
            Device own = open();
            ProtectionDomain p(own);
            CompletionQueue q(own, 4);
        } catch (...) {
            bad |= 32;
        }
        ::_exit(bad);
    }
    int status = 0;
    ASSERT_EQ(pid, ::waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
    EXPECT_EQ(0, WEXITSTATUS(status)) << "bits: 1 post, 2 poll, 4 query, 8 new PD, "
                                         "16 MR, 32 own context";

    // Still the parent's, all of them.
    EXPECT_EQ(qp_handle, qp.handle());
    EXPECT_EQ(QpState::Idle, qp.query().state);
    qp.modify(QpState::Error);
    qp.post_recv(RecvWr{.wr_id = 7});
    auto got = poll_cq(cq, 1);
    ASSERT_EQ(1u, got.size());
    EXPECT_EQ(7u, got[0].wr_id);
    EXPECT_EQ(WcStatus::Flushed, got[0].status);
}

TEST_F(LiveFastPath, WaitTimesOutOnAnEmptyCq) {
    Device dev = open();
    CompletionChannel ch(dev);
    CompletionQueue cq(dev, 16, &ch);
    std::array<Completion, 4> out{};
    for (auto timeout : {0ms, 150ms, 400ms}) {
        auto t0 = Clock::now();
        EXPECT_EQ(0u, cq.wait(out, timeout));
        auto took = Clock::now() - t0;
        EXPECT_GE(took, timeout);
        EXPECT_LT(took, timeout + 2s) << "the timeout was not honoured";
    }
}

TEST_F(LiveFastPath, WaitWakesForACompletionFromAnotherThread) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionChannel ch(dev);
    CompletionQueue cq(dev, 16, &ch, 0xfeed);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    QueuePair qp(pd, c);
    qp.modify(QpState::Error);

    for (int round = 0; round < 3; ++round) {
        std::atomic<bool> started{false};
        std::size_t n = 0;
        Completion wc;
        Clock::duration took{};
        std::thread waiter([&] {
            std::array<Completion, 4> out{};
            started = true;
            auto t0 = Clock::now();
            n = cq.wait(out, 20s);
            took = Clock::now() - t0;
            wc = out[0];
        });
        while (!started)
            std::this_thread::yield();
        std::this_thread::sleep_for(200ms); // let it go to sleep
        qp.post_recv(RecvWr{.wr_id = 42u + static_cast<std::uint64_t>(round)});
        waiter.join();
        ASSERT_EQ(1u, n);
        EXPECT_EQ(42u + static_cast<std::uint64_t>(round), wc.wr_id);
        EXPECT_EQ(WcStatus::Flushed, wc.status);
        EXPECT_LT(took, 10s) << "woke only near the timeout";
    }
}

namespace {

std::atomic<int> signals_seen{0};

void count_signal(int) {
    signals_seen.fetch_add(1);
}

} // namespace

// Signals interrupt the poll() inside wait(): it carries on with the time
// left, neither returning early nor waiting longer.
TEST_F(LiveFastPath, WaitSurvivesSignals) {
    struct sigaction sa {};
    sa.sa_handler = count_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; // no SA_RESTART: poll() fails with EINTR
    struct sigaction old {};
    ASSERT_EQ(0, ::sigaction(SIGUSR1, &sa, &old));

    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionChannel ch(dev);
    CompletionQueue cq(dev, 16, &ch);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    QueuePair qp(pd, c);
    qp.modify(QpState::Error);

    auto run = [&](std::chrono::milliseconds timeout, bool complete) {
        std::atomic<bool> done{false};
        std::size_t n = 99;
        Clock::duration took{};
        std::thread waiter([&] {
            std::array<Completion, 4> out{};
            auto t0 = Clock::now();
            try {
                n = cq.wait(out, timeout);
            } catch (const Error &e) {
                ADD_FAILURE() << "wait threw: " << e.what();
            }
            took = Clock::now() - t0;
            done = true;
        });
        const int before = signals_seen.load();
        for (int i = 0; i < 8 && !done; ++i) {
            std::this_thread::sleep_for(60ms);
            if (!done)
                ::pthread_kill(waiter.native_handle(), SIGUSR1);
        }
        if (complete)
            qp.post_recv(RecvWr{.wr_id = 9});
        waiter.join();
        EXPECT_GT(signals_seen.load(), before) << "no signal reached the waiter";
        return std::make_pair(n, took);
    };

    auto [n1, t1] = run(1000ms, false);
    EXPECT_EQ(0u, n1);
    EXPECT_GE(t1, 1000ms) << "a signal ended the wait early";
    EXPECT_LT(t1, 3000ms);

    auto [n2, t2] = run(20000ms, true);
    EXPECT_EQ(1u, n2);
    EXPECT_LT(t2, 10s);

    ::sigaction(SIGUSR1, &old, nullptr);
}

// An armed CQ raises one event on its channel; SOLICITED fires for an error
// completion (a flush is one), and CQEs already there do not fire.
TEST_F(LiveFastPath, ArmNextAndSolicited) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionChannel ch(dev);
    CompletionQueue cq(dev, 16, &ch, 0xabc);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    QueuePair qp(pd, c);
    qp.modify(QpState::Error);

    EXPECT_FALSE(ch.wait(0ms)) << "an event without an arm";
    qp.post_recv(RecvWr{.wr_id = 1});
    cq.arm(false);
    EXPECT_FALSE(ch.wait(100ms)) << "a CQE already in the ring fired the arm";
    qp.post_recv(RecvWr{.wr_id = 2});
    auto ev = ch.wait(5s);
    ASSERT_TRUE(ev);
    EXPECT_EQ(cq.handle(), ev->cq_handle);
    EXPECT_EQ(0xabcu, ev->user_data);
    qp.post_recv(RecvWr{.wr_id = 3});
    EXPECT_FALSE(ch.wait(100ms)) << "an arm fired twice";

    cq.arm(true);
    qp.post_recv(RecvWr{.wr_id = 4}); // flushed: an error completion
    ev = ch.wait(5s);
    ASSERT_TRUE(ev);
    EXPECT_EQ(cq.handle(), ev->cq_handle);

    auto got = poll_cq(cq, 4);
    ASSERT_EQ(4u, got.size());
    for (std::uint64_t i = 0; i < 4; ++i)
        EXPECT_EQ(i + 1, got[i].wr_id);
}

// Two threads post sends and two post receives on one QP at once, with no
// lock of the test's, while the main thread polls: every WR comes back
// exactly once, and each thread's WRs in the order it posted them.
TEST_P(LiveFastPathDoorbell, ConcurrentPostersLoseNothing) {
    const bool polled = GetParam();
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 1024);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.sq_depth = 128;
    c.rq_depth = 128;
    c.polled_doorbell = polled;
    QueuePair qp(pd, c);
    qp.modify(QpState::Error); // every WR is flushed as soon as it is taken

    constexpr int threads = 4; // 0, 1 send; 2, 3 receive
    constexpr std::uint64_t per_thread = 4000;
    constexpr std::uint64_t window = 128; // outstanding per thread: 4 * 128 <= 1024 CQEs
    std::array<std::atomic<std::uint64_t>, threads> completed{};
    std::atomic<bool> failed{false};
    std::atomic<int> busy_retries{0};

    std::atomic<int> ready{0};
    auto poster = [&](int t) {
        // All start together, so that the posts really overlap.
        ready.fetch_add(1);
        while (ready.load() < threads)
            std::this_thread::yield();
        try {
            for (std::uint64_t i = 0; i < per_thread; ++i) {
                while (i - completed[static_cast<std::size_t>(t)].load() >= window && !failed)
                    std::this_thread::yield();
                const std::uint64_t id = (std::uint64_t(t) << 32) | i;
                for (;;) {
                    try {
                        if (t < 2)
                            qp.post_send(SendWr{.wr_id = id});
                        else
                            qp.post_recv(RecvWr{.wr_id = id});
                        break;
                    } catch (const Error &e) {
                        // The other thread on this queue may have filled
                        // it; the kernel frees slots as it takes WRs.
                        if (e.errnum() != ENOMEM)
                            throw;
                        if (failed)
                            return;
                        busy_retries.fetch_add(1);
                        std::this_thread::yield();
                    }
                }
            }
        } catch (const std::exception &e) {
            failed = true;
            ADD_FAILURE() << "thread " << t << ": " << e.what();
        }
    };
    std::vector<std::thread> posters;
    for (int t = 0; t < threads; ++t)
        posters.emplace_back(poster, t);

    std::array<std::uint64_t, threads> next{};
    std::set<std::uint64_t> seen;
    std::uint64_t total = 0;
    const auto deadline = Clock::now() + 120s;
    std::array<Completion, 64> buf{};
    while (total < threads * per_thread && !failed && Clock::now() < deadline) {
        std::size_t n = cq.poll(buf);
        for (std::size_t k = 0; k < n; ++k) {
            const Completion &wc = buf[k];
            const auto t = static_cast<std::size_t>(wc.wr_id >> 32);
            const std::uint64_t i = wc.wr_id & 0xffffffffu;
            ASSERT_LT(t, static_cast<std::size_t>(threads)) << wc.wr_id;
            EXPECT_TRUE(seen.insert(wc.wr_id).second) << "completed twice: " << wc.wr_id;
            EXPECT_EQ(next[t], i) << "thread " << t << "'s WRs out of order";
            next[t] = i + 1;
            EXPECT_EQ(t < 2 ? WcOpcode::Send : WcOpcode::Recv, wc.opcode);
            EXPECT_EQ(t >= 2, wc.is_recv());
            EXPECT_EQ(WcStatus::Flushed, wc.status);
            completed[t].store(i + 1);
            ++total;
        }
        if (n == 0)
            std::this_thread::yield();
    }
    failed = failed || total < threads * per_thread;
    for (auto &p : posters)
        p.join();
    EXPECT_EQ(threads * per_thread, total) << "WRs lost";
    EXPECT_EQ(threads * per_thread, seen.size());
    EXPECT_FALSE(cq.overflowed());
    RecordProperty("queue_full_retries", busy_retries.load());
}

namespace {

// Sets the module's poll_idle_us for one scope.
class PollIdle {
public:
    static constexpr const char *path = "/sys/module/viaduct/parameters/poll_idle_us";

    explicit PollIdle(unsigned us) {
        std::ifstream in(path);
        ok_ = static_cast<bool>(in >> old_) && write(us);
    }
    ~PollIdle() {
        if (ok_)
            write(old_);
    }
    PollIdle(const PollIdle &) = delete;
    PollIdle &operator=(const PollIdle &) = delete;
    bool ok() const { return ok_; }

private:
    static bool write(unsigned us) {
        std::ofstream out(path);
        out << us << '\n';
        out.flush();
        return static_cast<bool>(out);
    }

    unsigned old_ = 0;
    bool ok_ = false;
};

} // namespace

// With the polled doorbell, a burst of posts while the kernel's worker is
// awake makes no DOORBELL call at all, and the kernel still takes every
// WQE. Counted three ways: the library's counter, the ioctl() calls the
// process made (interposer), and the context's DOORBELLS counter that the
// kernel reports over netlink.
TEST_F(LiveFastPath, PolledDoorbellBurstMakesNoSystemCall) {
    // The worker sleeps after poll_idle_us without work (2 ms by default),
    // and this VM is slow: keep it awake through the test.
    PollIdle idle(20'000'000);
    if (!idle.ok())
        GTEST_SKIP() << "cannot set " << PollIdle::path << " (not root?)";

    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 1024);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.sq_depth = 256;
    c.rq_depth = 256;
    c.polled_doorbell = true;
    QueuePair qp(pd, c);

    // A new polled QP starts with NEED_WAKEUP set until the worker has seen
    // it, so the first posts may ring. Post until one goes without a call.
    std::uint64_t warm = 0;
    for (; warm < 100; ++warm) {
        const std::uint64_t before = qp.doorbell_calls();
        qp.post_send(SendWr{.wr_id = warm, .signaled = false});
        if (qp.doorbell_calls() == before)
            break;
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_LT(warm, 100u) << "every post rang DOORBELL: the worker never stayed awake";
    ++warm; // the one that went without a call

    constexpr std::uint64_t burst = 100;
    const pid_t pid = ::getpid();
    viaduct::test::StatsDump before = viaduct::test::read_stats();
    const std::uint64_t calls_before = qp.doorbell_calls();
    {
        IoctlTrace trace;
        for (std::uint64_t i = 0; i < burst; ++i) {
            qp.post_send(SendWr{.wr_id = 1000 + i});
            qp.post_recv(RecvWr{.wr_id = 2000 + i});
        }
        EXPECT_EQ(0u, trace.calls().size()) << "the burst made ioctl() calls";
    }
    EXPECT_EQ(calls_before, qp.doorbell_calls());

    // The kernel takes them all without being told: wait for the worker.
    viaduct::QpAttributes a{};
    const auto deadline = Clock::now() + 20s;
    do {
        a = qp.query();
        if (a.sq_outstanding == warm + burst && a.rq_outstanding == burst)
            break;
        std::this_thread::sleep_for(10ms);
    } while (Clock::now() < deadline);
    EXPECT_EQ(warm + burst, a.sq_outstanding);
    EXPECT_EQ(burst, a.rq_outstanding);

    viaduct::test::StatsDump after = viaduct::test::read_stats();
    EXPECT_EQ(before.sum_for_pid(pid, VIADUCT_A_STAT_DOORBELLS),
              after.sum_for_pid(pid, VIADUCT_A_STAT_DOORBELLS))
        << "the kernel counted DOORBELL calls from this process during the burst";
    EXPECT_GE(after.module[VIADUCT_A_STAT_WQES_CONSUMED] -
                  before.module[VIADUCT_A_STAT_WQES_CONSUMED],
              2 * burst);
    EXPECT_GT(after.module[VIADUCT_A_STAT_WORKER_POLLS],
              before.module[VIADUCT_A_STAT_WORKER_POLLS]);

    // And every one of them comes back flushed, in order.
    qp.modify(QpState::Error);
    auto got = poll_cq(cq, warm + 2 * burst);
    ASSERT_EQ(warm + 2 * burst, got.size());
    for (std::uint64_t i = 0; i < warm; ++i)
        EXPECT_EQ(i, got[i].wr_id);
    for (std::uint64_t i = 0; i < burst; ++i) {
        EXPECT_EQ(1000 + i, got[warm + i].wr_id);
        EXPECT_EQ(2000 + i, got[warm + burst + i].wr_id);
        EXPECT_TRUE(got[warm + burst + i].is_recv());
    }
}

// The syscall doorbell, for contrast: one DOORBELL per post, which the kernel
// counts for this context.
TEST_F(LiveFastPath, SyscallDoorbellIsCountedByTheKernel) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 64);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    QueuePair qp(pd, c);
    const pid_t pid = ::getpid();
    viaduct::test::StatsDump before = viaduct::test::read_stats();
    {
        IoctlTrace trace;
        for (std::uint64_t i = 0; i < 10; ++i)
            qp.post_send(SendWr{.wr_id = i});
        EXPECT_EQ(10u, trace.count(VIADUCT_IOCTL_DOORBELL));
    }
    viaduct::test::StatsDump after = viaduct::test::read_stats();
    EXPECT_EQ(10u, after.sum_for_pid(pid, VIADUCT_A_STAT_DOORBELLS) -
                       before.sum_for_pid(pid, VIADUCT_A_STAT_DOORBELLS));
    EXPECT_EQ(10u, qp.doorbell_calls());
}

// Children keep their parents alive: the Device, PD, MR, CQ and channel
// objects may go first; the QPs still work, and the kernel objects are
// destroyed child first when the last user goes, never refused with EBUSY.
TEST_F(LiveFastPath, ParentsOutliveChildren) {
    IoctlTrace trace;
    auto dev = std::make_unique<Device>(open());
    const int fd = dev->fd();
    auto pd = std::make_unique<ProtectionDomain>(*dev);
    Buffer buf(4096);
    auto mr = std::make_unique<MemoryRegion>(*pd, buf.data(), buf.size());
    auto ch = std::make_unique<CompletionChannel>(*dev);
    const int ch_fd = ch->fd();
    auto cq = std::make_unique<CompletionQueue>(*dev, 32, ch.get());
    QpConfig c;
    c.send_cq = cq.get();
    c.recv_cq = cq.get();
    auto qp1 = std::make_unique<QueuePair>(*pd, c);
    auto qp2 = std::make_unique<QueuePair>(*pd, QpConfig{}); // private rings
    const std::uint32_t pd_h = pd->handle(), cq_h = cq->handle(), mr_h = mr->handle();
    const std::uint32_t qp1_h = qp1->handle(), qp2_h = qp2->handle();

    auto destroys = [&](unsigned long cmd, std::uint32_t handle) {
        std::vector<std::size_t> at;
        auto calls = trace.calls();
        for (std::size_t i = 0; i < calls.size(); ++i)
            if (calls[i].cmd == cmd && calls[i].handle == handle)
                at.push_back(i);
        return at;
    };

    dev.reset();
    pd.reset();
    cq.reset();
    ch.reset();
    const Sge sge = mr->sge(0, 128);
    mr.reset(); // the MR has no children: deregistered now
    EXPECT_EQ(1u, destroys(VIADUCT_IOCTL_DEREG_MR, mr_h).size());
    EXPECT_TRUE(destroys(VIADUCT_IOCTL_DESTROY_PD, pd_h).empty());
    EXPECT_TRUE(destroys(VIADUCT_IOCTL_DESTROY_CQ, cq_h).empty());
    EXPECT_TRUE(is_open(fd)) << "the context closed under its QPs";
    EXPECT_TRUE(is_open(ch_fd)) << "the channel closed under its CQ";

    // Both QPs still work.
    qp1->post_send(SendWr{.wr_id = 1, .sge = std::span(&sge, 1)});
    qp2->post_recv(RecvWr{.wr_id = 2});
    qp2->modify(QpState::Error);
    auto got = poll_n([&](std::span<Completion> s) { return qp2->poll_recv(s); }, 1);
    ASSERT_EQ(1u, got.size());
    EXPECT_EQ(2u, got[0].wr_id);
    EXPECT_EQ(QpState::Idle, qp1->query().state);
    qp1->modify(QpState::Error);

    qp1.reset(); // the last user of the CQ and the channel
    EXPECT_FALSE(is_open(ch_fd));
    EXPECT_TRUE(is_open(fd));
    EXPECT_TRUE(destroys(VIADUCT_IOCTL_DESTROY_PD, pd_h).empty());
    qp2.reset(); // the last user of the PD and the context
    EXPECT_FALSE(is_open(fd)) << "the last object did not close the context";

    auto qp1_at = destroys(VIADUCT_IOCTL_DESTROY_QP, qp1_h);
    auto qp2_at = destroys(VIADUCT_IOCTL_DESTROY_QP, qp2_h);
    auto cq_at = destroys(VIADUCT_IOCTL_DESTROY_CQ, cq_h);
    auto pd_at = destroys(VIADUCT_IOCTL_DESTROY_PD, pd_h);
    ASSERT_EQ(1u, qp1_at.size());
    ASSERT_EQ(1u, qp2_at.size());
    ASSERT_EQ(1u, cq_at.size());
    ASSERT_EQ(1u, pd_at.size());
    EXPECT_LT(qp1_at[0], cq_at[0]);
    EXPECT_LT(qp2_at[0], pd_at[0]);
    for (const auto &call : trace.calls()) {
        if (call.cmd == VIADUCT_IOCTL_DESTROY_QP || call.cmd == VIADUCT_IOCTL_DESTROY_CQ ||
            call.cmd == VIADUCT_IOCTL_DESTROY_PD || call.cmd == VIADUCT_IOCTL_DEREG_MR) {
            EXPECT_EQ(0, call.ret)
                << "destroy of handle " << call.handle << " failed: " << std::strerror(call.err);
        }
    }
}

TEST_F(LiveFastPath, BadArgumentsAreClearErrors) {
    Device dev = open();
    const viaduct::DeviceLimits &l = dev.attributes().limits;
    ProtectionDomain pd(dev);

    std::string m = expect_error(EINVAL, [&] { CompletionQueue cq(dev, 0); });
    EXPECT_TRUE(contains(m, "CQ of 0 entries")) << m;
    m = expect_error(EINVAL, [&] { CompletionQueue cq(dev, l.max_cqe + 1); });
    EXPECT_TRUE(contains(m, std::to_string(l.max_cqe))) << m;

    QpConfig c;
    c.sq_depth = 0;
    m = expect_error(EINVAL, [&] { QueuePair qp(pd, c); });
    EXPECT_TRUE(contains(m, "send queue depth 0")) << m;
    c = QpConfig{};
    c.rq_depth = l.max_qp_wr + 1;
    m = expect_error(EINVAL, [&] { QueuePair qp(pd, c); });
    EXPECT_TRUE(contains(m, "receive queue depth")) << m;
    c = QpConfig{};
    c.max_send_sge = l.max_sge + 1;
    m = expect_error(EINVAL, [&] { QueuePair qp(pd, c); });
    EXPECT_TRUE(contains(m, "max_send_sge")) << m;
    c = QpConfig{};
    c.max_inline = l.max_inline + 1;
    m = expect_error(EINVAL, [&] { QueuePair qp(pd, c); });
    EXPECT_TRUE(contains(m, "max_inline")) << m;

    // A CQ of another context means nothing on this one.
    Device other = open();
    CompletionQueue foreign(other, 8);
    c = QpConfig{};
    c.send_cq = &foreign;
    m = expect_error(EINVAL, [&] { QueuePair qp(pd, c); });
    EXPECT_TRUE(contains(m, "same Device")) << m;

    // Too many SGEs for the QP: refused, nothing posted, no doorbell.
    CompletionQueue cq(dev, 16);
    c = QpConfig{};
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.max_send_sge = 1;
    c.max_recv_sge = 1;
    QueuePair qp(pd, c);
    const Sge sges[17] = {};
    const std::uint32_t room = qp.send_queue_room();
    const std::size_t too_many = qp.caps().max_send_sge + 1;
    m = expect_error(EINVAL,
                     [&] { qp.post_send(SendWr{.wr_id = 1, .sge = std::span(sges, too_many)}); });
    EXPECT_TRUE(contains(m, "SGEs")) << m;
    m = expect_error(EINVAL, [&] {
        qp.post_recv(RecvWr{.wr_id = 1, .sge = std::span(sges, qp.caps().max_recv_sge + 1)});
    });
    EXPECT_EQ(room, qp.send_queue_room());
    EXPECT_EQ(0u, qp.doorbell_calls());
    // A bad WR in a batch refuses the whole batch.
    const SendWr batch[2] = {SendWr{.wr_id = 1},
                             SendWr{.wr_id = 2, .sge = std::span(sges, too_many)}};
    expect_error(EINVAL, [&] { qp.post_send(batch); });
    EXPECT_EQ(room, qp.send_queue_room());
    m = expect_error(EINVAL, [&] {
        qp.post_send(SendWr{.wr_id = 3, .opcode = SendOp::RdmaRead, .sge = std::span(sges, 0)});
    });
    EXPECT_TRUE(contains(m, "RDMA Read")) << m;
    EXPECT_EQ(0u, qp.query().sq_outstanding);

    // Calls that need what the object lacks.
    std::array<Completion, 1> out{};
    m = expect_error(EINVAL, [&] { (void)qp.poll_send(out); });
    EXPECT_TRUE(contains(m, "completes into a CQ")) << m;
    m = expect_error(EINVAL, [&] { (void)cq.wait(out, 0ms); });
    EXPECT_TRUE(contains(m, "no completion channel")) << m;
    expect_error(EINVAL, [&] { cq.arm(); });
    m = expect_error(EINVAL, [&] { qp.modify(QpState::Rts); });
    EXPECT_TRUE(contains(m, "RTS")) << m;

    // Memory.
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void *hole =
        ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, hole);
    ASSERT_EQ(0, ::munmap(hole, 2 * page));
    m = expect_error(EFAULT, [&] { MemoryRegion mr(pd, hole, 2 * page); });
    EXPECT_TRUE(contains(m, "not mapped")) << m;

    Buffer ro(page, PROT_READ);
    m = expect_error(EACCES,
                     [&] { MemoryRegion mr(pd, ro.data(), page, viaduct::access::local_write); });
    EXPECT_TRUE(contains(m, "not writable")) << m;
    EXPECT_NO_THROW({ MemoryRegion mr(pd, ro.data(), page, 0); }); // read-only is fine

    Buffer rw(page);
    m = expect_error(EINVAL,
                     [&] { MemoryRegion mr(pd, rw.data(), page, viaduct::access::remote_write); });
    EXPECT_TRUE(contains(m, "remote write needs local write")) << m;
    expect_error(EINVAL, [&] { MemoryRegion mr(pd, rw.data(), 0); });
}

TEST_F(LiveFastPath, FullQueueIsRefused) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 64);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.sq_depth = 4;
    QueuePair qp(pd, c);
    ASSERT_EQ(4u, qp.caps().sq_depth);
    // An Idle QP's kernel holds depth WRs; depth more wait in the ring.
    for (std::uint64_t i = 0; i < 8; ++i)
        qp.post_send(SendWr{.wr_id = i});
    EXPECT_EQ(0u, qp.send_queue_room());
    std::string m = expect_error(ENOMEM, [&] { qp.post_send(SendWr{.wr_id = 8}); });
    EXPECT_TRUE(contains(m, "full")) << m;
    qp.modify(QpState::Error);
    auto got = poll_cq(cq, 8);
    ASSERT_EQ(8u, got.size());
    for (std::uint64_t i = 0; i < 8; ++i)
        EXPECT_EQ(i, got[i].wr_id);
    EXPECT_EQ(4u, qp.send_queue_room());
}

// A ring shorter than its queue: each post's doorbell frees its slot, so
// the queue fills through a ring of two, two more wait in the ring, and
// the flush completes all of them in order. Bad ring depths are refused
// by the library before the kernel is asked.
TEST_F(LiveFastPath, ShortRingCarriesTheWholeQueue) {
    Device dev = open();
    ProtectionDomain pd(dev);
    CompletionQueue cq(dev, 64);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.sq_depth = 16;
    c.sq_ring_depth = 2;
    c.rq_ring_depth = 64; // the default RQ depth
    QueuePair qp(pd, c);
    ASSERT_EQ(16u, qp.caps().sq_depth);
    ASSERT_EQ(2u, qp.caps().sq_ring_depth);
    ASSERT_EQ(64u, qp.caps().rq_ring_depth);
    for (std::uint64_t i = 0; i < 18; ++i)
        ASSERT_NO_THROW(qp.post_send(SendWr{.wr_id = i})) << i;
    EXPECT_EQ(0u, qp.send_queue_room());
    EXPECT_EQ(16u, qp.query().sq_outstanding);
    std::string m = expect_error(ENOMEM, [&] { qp.post_send(SendWr{.wr_id = 18}); });
    EXPECT_TRUE(contains(m, "2 slots")) << m;
    qp.modify(QpState::Error);
    auto got = poll_cq(cq, 18);
    ASSERT_EQ(18u, got.size());
    for (std::uint64_t i = 0; i < 18; ++i) {
        EXPECT_EQ(i, got[i].wr_id);
        EXPECT_EQ(WcStatus::Flushed, got[i].status);
    }
    EXPECT_EQ(2u, qp.send_queue_room());

    c.sq_ring_depth = 17; // deeper than the queue
    m = expect_error(EINVAL, [&] { QueuePair bad(pd, c); });
    EXPECT_TRUE(contains(m, "send ring depth 17")) << m;
    c.sq_ring_depth = 0;
    c.rq_ring_depth = 65;
    m = expect_error(EINVAL, [&] { QueuePair bad(pd, c); });
    EXPECT_TRUE(contains(m, "receive ring depth 65")) << m;
}

// try_post_*: a full queue is a false return, with nothing posted and no
// doorbell; on a single-threaded QP and CQ, which take no lock.
TEST_F(LiveFastPath, TryPostReportsAFullQueueWithoutThrowing) {
    Device dev = open();
    ProtectionDomain pd(dev);
    viaduct::CqConfig cc;
    cc.entries = 64;
    cc.single_threaded = true;
    CompletionQueue cq(dev, cc);
    QpConfig c;
    c.send_cq = &cq;
    c.recv_cq = &cq;
    c.sq_depth = 4;
    c.rq_depth = 4;
    c.single_threaded = true;
    QueuePair qp(pd, c);
    EXPECT_TRUE(qp.caps().single_threaded);
    // A WR the QP cannot hold is still an error.
    std::vector<std::byte> data(qp.caps().max_inline + 1);
    expect_error(EINVAL, [&] { qp.try_post_send(SendWr{.wr_id = 9, .inline_data = data}); });
    for (std::uint64_t i = 0; i < 8; ++i)
        ASSERT_TRUE(qp.try_post_send(SendWr{.wr_id = i})) << i;
    const std::uint64_t doorbells = qp.doorbell_calls();
    EXPECT_FALSE(qp.try_post_send(SendWr{.wr_id = 8}));
    EXPECT_EQ(doorbells, qp.doorbell_calls()) << "a refused post rang the doorbell";

    std::array<RecvWr, 5> five{};
    for (std::uint64_t i = 0; i < five.size(); ++i)
        five[i].wr_id = 100 + i;
    // Idle: the kernel takes 4 receives, 4 more wait in the ring.
    ASSERT_TRUE(qp.try_post_recv(std::span<const RecvWr>(five).first(4)));
    EXPECT_FALSE(qp.try_post_recv(five)) << "5 WRs in 4 free slots";
    ASSERT_TRUE(qp.try_post_recv(std::span<const RecvWr>(five).first(4)));
    EXPECT_FALSE(qp.try_post_recv(five[4]));

    qp.modify(QpState::Error);
    auto got = poll_cq(cq, 16);
    ASSERT_EQ(16u, got.size());
    std::size_t sends = 0;
    for (const Completion &wc : got) {
        EXPECT_EQ(WcStatus::Flushed, wc.status);
        sends += !wc.is_recv();
    }
    EXPECT_EQ(8u, sends);
}

TEST_F(LiveFastPath, MovedFromObjectsThrowEbadf) {
    Device dev = open();
    ProtectionDomain pd(dev);
    ProtectionDomain pd2 = std::move(pd);
    EXPECT_FALSE(pd);                                // NOLINT(bugprone-use-after-move)
    expect_error(EBADF, [&] { (void)pd.handle(); }); // NOLINT(bugprone-use-after-move)
    EXPECT_NE(0u, pd2.handle());

    CompletionQueue cq(dev, 8);
    CompletionQueue cq2 = std::move(cq);
    std::array<Completion, 1> out{};
    expect_error(EBADF, [&] { (void)cq.poll(out); }); // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(0u, cq2.poll(out));

    QpConfig c;
    c.send_cq = &cq2;
    c.recv_cq = &cq2;
    QueuePair qp(pd2, c);
    QueuePair qp2 = std::move(qp);
    // NOLINTNEXTLINE(bugprone-use-after-move)
    std::string m = expect_error(EBADF, [&] { qp.post_send(SendWr{}); });
    EXPECT_TRUE(contains(m, "QueuePair")) << m;
    qp2.post_send(SendWr{.wr_id = 5});
    // Handing a moved-from parent to a constructor is the same mistake,
    // and the half-made object must clean up after itself.
    // NOLINTBEGIN(bugprone-use-after-move)
    expect_error(EBADF, [&] { QueuePair bad(pd, c); });
    Device moved = std::move(dev);
    expect_error(EBADF, [&] { ProtectionDomain bad(dev); });
    expect_error(EBADF, [&] { CompletionQueue bad(dev, 8); });
    expect_error(EBADF, [&] { CompletionChannel bad(dev); });
    Buffer buf(4096);
    expect_error(EBADF, [&] { MemoryRegion bad(pd, buf.data(), buf.size()); });
    // NOLINTEND(bugprone-use-after-move)
    qp2.post_send(SendWr{.wr_id = 6});
    EXPECT_EQ(QpState::Idle, qp2.query().state);
}
