// SPDX-License-Identifier: GPL-2.0
// Waiting for event records (completion channels, asynchronous events) on a
// non-blocking descriptor: the timeout is honoured, signals neither end the
// wait early nor stretch it, a record that arrives wakes the reader. A pipe
// stands in for the kernel's descriptors, which behave the same way for
// read() and poll().
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include "objects.hpp"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using viaduct::detail::read_record;

namespace {

struct Pipe {
    Pipe() { EXPECT_EQ(0, ::pipe2(fd, O_NONBLOCK | O_CLOEXEC)); }
    ~Pipe() {
        ::close(fd[0]);
        ::close(fd[1]);
    }
    Pipe(const Pipe &) = delete;
    Pipe &operator=(const Pipe &) = delete;
    int fd[2] = {-1, -1};
};

std::atomic<int> signals_seen{0};

void count_signal(int) {
    signals_seen.fetch_add(1);
}

} // namespace

TEST(ReadRecord, TimesOut) {
    Pipe p;
    viaduct_cq_event ev{};
    for (auto timeout : {0ms, 100ms, 300ms}) {
        auto t0 = Clock::now();
        EXPECT_FALSE(read_record(p.fd[0], &ev, sizeof(ev), timeout, "test pipe"));
        auto took = Clock::now() - t0;
        EXPECT_GE(took, timeout);
        EXPECT_LT(took, timeout + 1s);
    }
}

TEST(ReadRecord, ReadsARecordThatArrivesLater) {
    Pipe p;
    viaduct_cq_event sent{};
    sent.cq_handle = 7;
    sent.user_data = 0x1234;
    std::thread writer([&] {
        std::this_thread::sleep_for(100ms);
        EXPECT_EQ(static_cast<ssize_t>(sizeof(sent)), ::write(p.fd[1], &sent, sizeof(sent)));
    });
    viaduct_cq_event got{};
    auto t0 = Clock::now();
    EXPECT_TRUE(read_record(p.fd[0], &got, sizeof(got), 10s, "test pipe"));
    EXPECT_LT(Clock::now() - t0, 5s);
    writer.join();
    EXPECT_EQ(7u, got.cq_handle);
    EXPECT_EQ(0x1234u, got.user_data);
}

TEST(ReadRecord, SignalsDoNotEndTheWait) {
    struct sigaction sa {};
    sa.sa_handler = count_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; // no SA_RESTART: poll() fails with EINTR
    struct sigaction old {};
    ASSERT_EQ(0, ::sigaction(SIGUSR1, &sa, &old));

    Pipe p;
    std::atomic<bool> done{false};
    bool result = true;
    Clock::duration took{};
    std::thread reader([&] {
        viaduct_cq_event ev{};
        auto t0 = Clock::now();
        result = read_record(p.fd[0], &ev, sizeof(ev), 600ms, "test pipe");
        took = Clock::now() - t0;
        done = true;
    });
    const int before = signals_seen.load();
    while (!done) {
        std::this_thread::sleep_for(40ms);
        if (!done)
            ::pthread_kill(reader.native_handle(), SIGUSR1);
    }
    reader.join();
    ::sigaction(SIGUSR1, &old, nullptr);
    EXPECT_GT(signals_seen.load(), before);
    EXPECT_FALSE(result);
    EXPECT_GE(took, 600ms) << "a signal ended the wait early";
    EXPECT_LT(took, 2s);
}

TEST(ReadRecord, ShortRecordIsAnError) {
    Pipe p;
    const char half[4] = {};
    ASSERT_EQ(4, ::write(p.fd[1], half, sizeof(half)));
    viaduct_cq_event ev{};
    try {
        (void)read_record(p.fd[0], &ev, sizeof(ev), 0ms, "test pipe");
        FAIL() << "a short read was taken for a record";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(EIO, e.errnum());
        EXPECT_NE(nullptr, std::strstr(e.what(), "short read of test pipe")) << e.what();
    }
}
