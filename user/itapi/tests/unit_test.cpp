// SPDX-License-Identifier: GPL-2.0
//
// The IT-API face without a device: handles, consumer contexts, byte
// order, names.
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstring>
#include <poll.h>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "internal.hpp"

namespace {

using itapi::HandleTable;

// A PZ-typed object that needs no device, for the handle table.
struct FakeZone : itapi::Object {
    static constexpr itapi::Kind kind = itapi::Kind::Pz;
    FakeZone() : Object(kind, nullptr) {}
};

TEST(Handles, StaleAndForgedHandlesAreRefused) {
    auto &table = HandleTable::instance();
    FakeZone a;
    it_handle_t h = table.insert(&a);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(table.find(h), &a);
    EXPECT_EQ(itapi::lookup<FakeZone>(h), &a);
    it_handle_type_enum_t type{};
    ASSERT_EQ(it_get_handle_type(h, &type), IT_SUCCESS);
    EXPECT_EQ(type, IT_HANDLE_TYPE_PZ);

    table.erase(h);
    EXPECT_EQ(table.find(h), nullptr);
    EXPECT_EQ(it_get_handle_type(h, &type), IT_ERR_INVALID_HANDLE);

    // the slot is reused under another generation: the old handle stays dead
    FakeZone b;
    it_handle_t h2 = table.insert(&b);
    ASSERT_NE(h2, nullptr);
    EXPECT_NE(h2, h);
    EXPECT_EQ(table.find(h), nullptr);
    EXPECT_EQ(table.find(h2), &b);
    table.erase(h2);

    // pointers that were never handles
    int x = 0;
    EXPECT_EQ(table.find(&x), nullptr);
    EXPECT_EQ(table.find(nullptr), nullptr);
    EXPECT_EQ(table.find(reinterpret_cast<it_handle_t>(~std::uintptr_t{0})), nullptr);
}

TEST(Handles, ConsumerContext) {
    FakeZone a;
    it_handle_t h = HandleTable::instance().insert(&a);
    it_context_t ctx{};
    EXPECT_EQ(it_get_consumer_context(h, &ctx), IT_ERR_NO_CONTEXT);
    it_context_t set{};
    set.index = 0x1234567890abcdefULL;
    ASSERT_EQ(it_set_consumer_context(h, set), IT_SUCCESS);
    ASSERT_EQ(it_get_consumer_context(h, &ctx), IT_SUCCESS);
    EXPECT_EQ(ctx.index, set.index);
    HandleTable::instance().erase(h);
    EXPECT_EQ(it_set_consumer_context(h, set), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(it_get_consumer_context(h, &ctx), IT_ERR_INVALID_HANDLE);
}

TEST(ByteOrder, Hton64) {
    std::uint64_t v = it_hton64(0x0102030405060708ULL);
    unsigned char bytes[8];
    std::memcpy(bytes, &v, 8);
    for (int i = 0; i < 8; i++)
        EXPECT_EQ(bytes[i], i + 1);
    EXPECT_EQ(it_ntoh64(v), 0x0102030405060708ULL);
}

TEST(Names, Statuses) {
    EXPECT_STREQ(viaduct_it_status_str(IT_SUCCESS), "IT_SUCCESS");
    EXPECT_STREQ(viaduct_it_status_str(IT_ERR_TOO_MANY_POSTS), "IT_ERR_TOO_MANY_POSTS");
    EXPECT_STREQ(viaduct_it_status_str(IT_ERR_EP_TIMEWAIT), "IT_ERR_EP_TIMEWAIT");
    EXPECT_STREQ(viaduct_it_status_str(static_cast<it_status_t>(IT_ERR_INVALID_SD_STATE + 1)),
                 "unknown");
    EXPECT_STREQ(viaduct_it_event_str(IT_CM_MSG_CONN_BROKEN_EVENT), "IT_CM_MSG_CONN_BROKEN_EVENT");
    EXPECT_STREQ(viaduct_it_event_str(IT_RMR_LINK_CMPL_EVENT), "IT_RMR_LINK_CMPL_EVENT");
    EXPECT_STREQ(viaduct_it_dto_status_str(IT_DTO_ERR_FLUSHED), "IT_DTO_ERR_FLUSHED");
}

// An EVD without an IA: what the EVD rules do without a device.
struct TestEvd {
    itapi::Evd *evd;
    it_evd_handle_t h;
    TestEvd(it_event_type_t stream, std::size_t size, std::size_t threshold, int flags = 0)
        : evd(new itapi::Evd(nullptr, stream, static_cast<it_evd_flags_t>(flags), size, threshold)),
          h(static_cast<it_evd_handle_t>(HandleTable::instance().insert(evd))) {
        if ((flags & IT_EVD_CREATE_FD) != 0)
            evd->user_fd = evd->wait_fd;
    }
    ~TestEvd() {
        HandleTable::instance().erase(h);
        delete evd;
    }
};

int marker[8];

it_evd_param_mask_t mask(int m) {
    return static_cast<it_evd_param_mask_t>(m);
}

it_event_t conn_event(it_event_type_t type) {
    it_event_t ev{};
    ev.conn.event_number = type;
    return ev;
}

TEST(Evd, SoftwareEventsInOrderAndFullQueue) {
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 2, 1);
    it_event_t ev;
    EXPECT_EQ(it_evd_dequeue(e.h, &ev), IT_ERR_QUEUE_EMPTY);
    ASSERT_EQ(it_evd_post_se(e.h, &marker[0]), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(e.h, &marker[1]), IT_SUCCESS);
    // a software SEVD never overflows: the post fails
    EXPECT_EQ(it_evd_post_se(e.h, &marker[2]), IT_ERR_EVD_QUEUE_FULL);
    it_evd_param_t p{};
    ASSERT_EQ(it_evd_query(e.h, IT_EVD_PARAM_ALL, &p), IT_SUCCESS);
    EXPECT_EQ(p.evd_overflowed, IT_FALSE);
    ASSERT_EQ(it_evd_dequeue(e.h, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_SOFTWARE_EVENT);
    EXPECT_EQ(ev.sw.evd, e.h);
    EXPECT_EQ(ev.sw.data, &marker[0]);
    size_t nmore = 99;
    ASSERT_EQ(it_evd_wait(e.h, 0, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &marker[1]);
    EXPECT_EQ(nmore, 0u);
    EXPECT_EQ(it_evd_dequeue(e.h, &ev), IT_ERR_QUEUE_EMPTY);
}

TEST(Evd, PostSeNeedsASoftwareStream) {
    TestEvd e(IT_CM_MSG_EVENT_STREAM, 4, 1);
    EXPECT_EQ(it_evd_post_se(e.h, nullptr), IT_ERR_INVALID_SOFT_EVD);
    EXPECT_EQ(it_evd_post_se(nullptr, nullptr), IT_ERR_INVALID_EVD);
}

TEST(Evd, WaitTimesOutWithNmore) {
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 4, 1);
    it_event_t ev;
    size_t nmore = 99;
    EXPECT_EQ(it_evd_wait(e.h, 1000, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
    EXPECT_EQ(nmore, 0u);
}

TEST(Evd, WaiterWokenByAnotherThread) {
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 4, 1);
    std::thread t([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        it_evd_post_se(e.h, &marker[3]);
    });
    it_event_t ev;
    size_t nmore;
    EXPECT_EQ(it_evd_wait(e.h, IT_TIMEOUT_INFINITE, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &marker[3]);
    t.join();
}

TEST(Evd, OneWaiterOnlyAboveThresholdOne) {
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 4, 2);
    std::thread t([&] {
        it_event_t ev;
        size_t nmore;
        EXPECT_EQ(it_evd_wait(e.h, IT_TIMEOUT_INFINITE, &ev, &nmore), IT_SUCCESS);
    });
    // the first waiter is in: a second one is refused
    for (;;) {
        {
            std::lock_guard g(e.evd->lock);
            if (e.evd->waiters == 1)
                break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    it_event_t ev;
    size_t nmore;
    EXPECT_EQ(it_evd_wait(e.h, 0, &ev, &nmore), IT_ERR_WAITER_LIMIT);
    ASSERT_EQ(it_evd_post_se(e.h, &marker[0]), IT_SUCCESS);
    t.join();
}

TEST(Evd, SeveralWaitersWithThresholdOneEachGetOneEvent) {
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 8, 1);
    void *got[3] = {};
    std::thread ts[3];
    for (int i = 0; i < 3; i++)
        ts[i] = std::thread([&, i] {
            it_event_t ev;
            size_t nmore;
            if (it_evd_wait(e.h, IT_TIMEOUT_INFINITE, &ev, &nmore) == IT_SUCCESS)
                got[i] = ev.sw.data;
        });
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(it_evd_post_se(e.h, &marker[i]), IT_SUCCESS);
    for (auto &t : ts)
        t.join();
    std::sort(std::begin(got), std::end(got));
    EXPECT_EQ(got[0], &marker[0]);
    EXPECT_EQ(got[1], &marker[1]);
    EXPECT_EQ(got[2], &marker[2]);
}

TEST(EvdLock, ExcludesAndWakesTheThreadsItMadeSleep) {
    itapi::EvdLock lock;
    long count = 0;
    constexpr int threads = 4, rounds = 20000;
    // held while the threads start: they spin, then sleep until unlock()
    lock.lock();
    std::thread ts[threads];
    for (auto &t : ts)
        t = std::thread([&] {
            for (int i = 0; i < rounds; i++) {
                std::lock_guard g(lock);
                count++;
            }
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    count = -1;
    lock.unlock();
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(count, threads * rounds - 1);
    EXPECT_TRUE(lock.try_lock());
    EXPECT_FALSE(lock.try_lock());
    lock.unlock();
}

TEST(Evd, DequeuersOnSeveralThreadsTakeEachEventOnce) {
    constexpr int events = 2000, threads = 3;
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 64, 1);
    std::vector<char> seen(events, 0);
    std::atomic<int> taken{0};
    std::thread ts[threads];
    for (auto &t : ts)
        t = std::thread([&] {
            it_event_t ev;
            while (taken.load() < events) {
                if (it_evd_dequeue(e.h, &ev) != IT_SUCCESS)
                    continue;
                auto *at = static_cast<char *>(ev.sw.data);
                (*at)++;
                taken++;
            }
        });
    for (int i = 0; i < events; i++) {
        it_status_t st;
        while ((st = it_evd_post_se(e.h, &seen[static_cast<std::size_t>(i)])) ==
               IT_ERR_EVD_QUEUE_FULL)
            std::this_thread::yield();
        ASSERT_EQ(st, IT_SUCCESS);
    }
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), events);
}

TEST(Evd, FdTurnsReadableAndBackWhenDrained) {
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 4, 1, IT_EVD_CREATE_FD);
    pollfd p{e.evd->user_fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 0), 0);
    ASSERT_EQ(it_evd_post_se(e.h, &marker[0]), IT_SUCCESS);
    ASSERT_EQ(poll(&p, 1, 0), 1);
    // an enabled EVD with an fd is not waited on
    it_event_t ev;
    size_t nmore;
    EXPECT_EQ(it_evd_wait(e.h, 0, &ev, &nmore), IT_ERR_INVALID_EVD_STATE);
    ASSERT_EQ(it_evd_dequeue(e.h, &ev), IT_SUCCESS);
    EXPECT_EQ(it_evd_dequeue(e.h, &ev), IT_ERR_QUEUE_EMPTY);
    EXPECT_EQ(poll(&p, 1, 0), 0);
    // disabled, it may be waited on
    it_evd_param_t par{};
    par.evd_enabled = IT_FALSE;
    ASSERT_EQ(it_evd_modify(e.h, IT_EVD_PARAM_ENABLED, &par), IT_SUCCESS);
    EXPECT_EQ(it_evd_wait(e.h, 0, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
}

TEST(Evd, OverflowOfCmMsgDropsAndAutoResets) {
    TestEvd e(IT_CM_MSG_EVENT_STREAM, 1, 1, IT_EVD_OVERFLOW_DEFAULT);
    EXPECT_TRUE(itapi::evd_enqueue(*e.evd, conn_event(IT_CM_MSG_CONN_ESTABLISHED_EVENT)));
    EXPECT_FALSE(itapi::evd_enqueue(*e.evd, conn_event(IT_CM_MSG_CONN_DISCONNECT_EVENT)));
    it_evd_param_t p{};
    ASSERT_EQ(it_evd_query(e.h, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
    EXPECT_EQ(p.evd_overflowed, IT_TRUE);
    it_event_t ev;
    ASSERT_EQ(it_evd_dequeue(e.h, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    EXPECT_EQ(ev.conn.evd, e.h);
    // room again: events are taken again, the condition is over
    ASSERT_EQ(it_evd_query(e.h, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
    EXPECT_EQ(p.evd_overflowed, IT_FALSE);
    EXPECT_TRUE(itapi::evd_enqueue(*e.evd, conn_event(IT_CM_MSG_CONN_BROKEN_EVENT)));
}

TEST(Evd, ConsumerControlledOverflowStaysUntilCleared) {
    TestEvd e(IT_CM_REQ_EVENT_STREAM, 1, 1, IT_EVD_OVERFLOW_NOTIFY);
    EXPECT_TRUE(itapi::evd_enqueue(*e.evd, conn_event(IT_CM_REQ_CONN_REQUEST_EVENT)));
    EXPECT_FALSE(itapi::evd_enqueue(*e.evd, conn_event(IT_CM_REQ_CONN_REQUEST_EVENT)));
    it_event_t ev;
    ASSERT_EQ(it_evd_dequeue(e.h, &ev), IT_SUCCESS);
    it_evd_param_t p{};
    ASSERT_EQ(it_evd_query(e.h, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
    EXPECT_EQ(p.evd_overflowed, IT_TRUE);
    p.evd_overflowed = IT_FALSE;
    ASSERT_EQ(it_evd_modify(e.h, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
    ASSERT_EQ(it_evd_query(e.h, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
    EXPECT_EQ(p.evd_overflowed, IT_FALSE);
}

TEST(Evd, ModifyChecksQueueSizeAndThreshold) {
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 4, 1);
    ASSERT_EQ(it_evd_post_se(e.h, &marker[0]), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(e.h, &marker[1]), IT_SUCCESS);
    it_evd_param_t p{};
    p.sevd_queue_size = 1; // fewer than queued
    EXPECT_EQ(it_evd_modify(e.h, IT_EVD_PARAM_QUEUE_SIZE, &p), IT_ERR_INVALID_QUEUE_SIZE);
    p.sevd_threshold = 5;
    EXPECT_EQ(it_evd_modify(e.h, IT_EVD_PARAM_THRESHOLD, &p), IT_ERR_INVALID_THRESHOLD);
    p.sevd_queue_size = 16;
    ASSERT_EQ(it_evd_modify(e.h, IT_EVD_PARAM_QUEUE_SIZE, &p), IT_SUCCESS);
    EXPECT_EQ(it_evd_modify(e.h, IT_EVD_PARAM_FD, &p), IT_ERR_INVALID_MASK);
    // the queued events moved over, in order
    it_event_t ev;
    ASSERT_EQ(it_evd_dequeue(e.h, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &marker[0]);
    ASSERT_EQ(it_evd_dequeue(e.h, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &marker[1]);
    ASSERT_EQ(it_evd_query(e.h, IT_EVD_PARAM_QUEUE_SIZE, &p), IT_SUCCESS);
    EXPECT_EQ(p.sevd_queue_size, 16u);
}

TEST(Evd, AggregateTakesFromEveryMemberAndNotifies) {
    TestEvd agg(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0, 0);
    TestEvd notif(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0, 0, IT_EVD_DEQUEUE_NOTIFICATIONS);
    TestEvd a(IT_SOFTWARE_EVENT_STREAM, 4, 1);
    TestEvd b(IT_CM_MSG_EVENT_STREAM, 4, 1);
    TestEvd c(IT_SOFTWARE_EVENT_STREAM, 4, 1);
    it_evd_param_t p{};
    p.aevd = agg.h;
    p.evd_enabled = IT_FALSE;
    // only a disabled SEVD changes its AEVD
    EXPECT_EQ(it_evd_modify(a.h, IT_EVD_PARAM_AEVD_HANDLE, &p), IT_ERR_INVALID_EVD_STATE);
    ASSERT_EQ(it_evd_modify(a.h, mask(IT_EVD_PARAM_AEVD_HANDLE | IT_EVD_PARAM_ENABLED), &p),
              IT_SUCCESS);
    ASSERT_EQ(it_evd_modify(b.h, mask(IT_EVD_PARAM_AEVD_HANDLE | IT_EVD_PARAM_ENABLED), &p),
              IT_SUCCESS);
    p.evd_enabled = IT_TRUE;
    ASSERT_EQ(it_evd_modify(a.h, IT_EVD_PARAM_ENABLED, &p), IT_SUCCESS);
    ASSERT_EQ(it_evd_modify(b.h, IT_EVD_PARAM_ENABLED, &p), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(a.h, &marker[0]), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(a.h, &marker[1]), IT_SUCCESS);
    EXPECT_TRUE(itapi::evd_enqueue(*b.evd, conn_event(IT_CM_MSG_CONN_ESTABLISHED_EVENT)));
    it_event_t ev;
    // the members' own queues are the AEVD's: not dequeued from directly
    EXPECT_EQ(it_evd_dequeue(a.h, &ev), IT_ERR_INVALID_EVD_STATE);
    // in turn: a, b, a
    size_t nmore;
    ASSERT_EQ(it_evd_wait(agg.h, 0, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_SOFTWARE_EVENT);
    ASSERT_EQ(it_evd_dequeue(agg.h, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    EXPECT_EQ(ev.conn.evd, b.h);
    ASSERT_EQ(it_evd_dequeue(agg.h, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &marker[1]);
    EXPECT_EQ(it_evd_dequeue(agg.h, &ev), IT_ERR_QUEUE_EMPTY);

    // DEQUEUE_NOTIFICATIONS: the AEVD names the SEVD, once per arrival
    p.aevd = notif.h;
    p.evd_enabled = IT_FALSE;
    ASSERT_EQ(it_evd_modify(c.h, mask(IT_EVD_PARAM_AEVD_HANDLE | IT_EVD_PARAM_ENABLED), &p),
              IT_SUCCESS);
    p.evd_enabled = IT_TRUE;
    ASSERT_EQ(it_evd_modify(c.h, IT_EVD_PARAM_ENABLED, &p), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(c.h, &marker[2]), IT_SUCCESS);
    ASSERT_EQ(it_evd_wait(notif.h, 0, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_AEVD_NOTIFICATION_EVENT);
    EXPECT_EQ(ev.aevd_notify.aevd, notif.h);
    EXPECT_EQ(ev.aevd_notify.sevd, c.h);
    EXPECT_EQ(it_evd_dequeue(notif.h, &ev), IT_ERR_QUEUE_EMPTY);
    ASSERT_EQ(it_evd_dequeue(c.h, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &marker[2]);
    // an enabled SEVD that feeds an AEVD is not waited on
    EXPECT_EQ(it_evd_wait(c.h, 0, &ev, &nmore), IT_ERR_INVALID_EVD_STATE);
}

TEST(Evd, AggregateWaiterWokenByAMember) {
    TestEvd agg(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0, 0);
    TestEvd a(IT_SOFTWARE_EVENT_STREAM, 4, 1);
    it_evd_param_t p{};
    p.aevd = agg.h;
    p.evd_enabled = IT_FALSE;
    ASSERT_EQ(it_evd_modify(a.h, mask(IT_EVD_PARAM_AEVD_HANDLE | IT_EVD_PARAM_ENABLED), &p),
              IT_SUCCESS);
    p.evd_enabled = IT_TRUE;
    ASSERT_EQ(it_evd_modify(a.h, IT_EVD_PARAM_ENABLED, &p), IT_SUCCESS);
    std::thread t([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        it_evd_post_se(a.h, &marker[4]);
    });
    it_event_t ev;
    size_t nmore;
    ASSERT_EQ(it_evd_wait(agg.h, IT_TIMEOUT_INFINITE, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &marker[4]);
    t.join();
}

TEST(Evd, FreeingAbortsWaiters) {
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 4, 1);
    it_status_t st = IT_SUCCESS;
    std::thread t([&] {
        it_event_t ev;
        size_t nmore;
        st = it_evd_wait(e.h, IT_TIMEOUT_INFINITE, &ev, &nmore);
    });
    for (;;) {
        {
            std::lock_guard g(e.evd->lock);
            if (e.evd->waiters == 1)
                break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    itapi::evd_abort_waiters(*e.evd);
    t.join();
    EXPECT_EQ(st, IT_ERR_ABORT);
}

TEST(Addr, Conversions) {
    it_net_addr_t v4{};
    v4.addr_type = IT_IPV4;
    ASSERT_EQ(inet_pton(AF_INET, "192.0.2.7", &v4.addr.ipv4), 1);
    it_net_addr_t v6;
    ASSERT_EQ(it_convert_net_addr(&v4, IT_IPV6, &v6), IT_SUCCESS);
    char buf[INET6_ADDRSTRLEN];
    EXPECT_STREQ(inet_ntop(AF_INET6, &v6.addr.ipv6, buf, sizeof(buf)), "::ffff:192.0.2.7");
    it_net_addr_t back;
    ASSERT_EQ(it_convert_net_addr(&v6, IT_IPV4, &back), IT_SUCCESS);
    EXPECT_EQ(back.addr_type, IT_IPV4);
    EXPECT_EQ(std::memcmp(&back.addr.ipv4, &v4.addr.ipv4, 4), 0);
    it_net_addr_t via;
    ASSERT_EQ(it_convert_net_addr(&v4, IT_VIA_HOSTADDR, &via), IT_SUCCESS);
    EXPECT_EQ(via.addr.via.len, 4);
    ASSERT_EQ(it_convert_net_addr(&via, IT_IPV4, &back), IT_SUCCESS);
    EXPECT_EQ(std::memcmp(&back.addr.ipv4, &v4.addr.ipv4, 4), 0);

    it_net_addr_t pure6{};
    pure6.addr_type = IT_IPV6;
    ASSERT_EQ(inet_pton(AF_INET6, "2001:db8::1", &pure6.addr.ipv6), 1);
    EXPECT_EQ(it_convert_net_addr(&pure6, IT_IPV4, &back), IT_ERR_INVALID_CONVERSION);
    EXPECT_EQ(it_convert_net_addr(&pure6, IT_IB_GID, &back), IT_ERR_INVALID_CONVERSION);
    it_net_addr_t bad{};
    bad.addr_type = static_cast<it_net_addr_type_t>(0);
    EXPECT_EQ(it_convert_net_addr(&bad, IT_IPV4, &back), IT_ERR_INVALID_NETADDR);
    bad.addr_type = IT_VIA_HOSTADDR;
    bad.addr.via.len = 7;
    EXPECT_EQ(it_convert_net_addr(&bad, IT_IPV4, &back), IT_ERR_INVALID_ADDRESS);
}

TEST(RdmaAddr, NetworkOrder) {
    int x;
    it_rdma_addr_t a = it_make_rdma_addr_absolute(&x);
    EXPECT_EQ(it_ntoh64(a), reinterpret_cast<std::uintptr_t>(&x));
    EXPECT_EQ(it_ntoh64(it_make_rdma_addr_relative(4096)), 4096u);
}

TEST(Handles, EveryCallRefusesABadHandle) {
    it_handle_t bogus = reinterpret_cast<it_handle_t>(std::uintptr_t{0x1234});
    it_event_t ev;
    size_t n;
    EXPECT_EQ(it_evd_dequeue(static_cast<it_evd_handle_t>(bogus), &ev), IT_ERR_INVALID_EVD);
    EXPECT_EQ(it_evd_wait(static_cast<it_evd_handle_t>(bogus), 0, &ev, &n), IT_ERR_INVALID_EVD);
    EXPECT_EQ(it_post_send(static_cast<it_ep_handle_t>(bogus), nullptr, 0, 0, IT_COMPLETION_FLAG),
              IT_ERR_INVALID_EP);
    EXPECT_EQ(it_post_recv(bogus, nullptr, 0, 0, IT_COMPLETION_FLAG), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(it_pz_free(static_cast<it_pz_handle_t>(bogus)), IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_lmr_free(static_cast<it_lmr_handle_t>(bogus)), IT_ERR_INVALID_LMR);
    EXPECT_EQ(it_rmr_free(static_cast<it_rmr_handle_t>(bogus)), IT_ERR_INVALID_RMR);
    EXPECT_EQ(it_ep_free(static_cast<it_ep_handle_t>(bogus)), IT_ERR_INVALID_EP);
    EXPECT_EQ(it_srq_free(static_cast<it_srq_handle_t>(bogus)), IT_ERR_INVALID_SRQ);
    EXPECT_EQ(it_ia_free(static_cast<it_ia_handle_t>(bogus)), IT_ERR_INVALID_IA);
    // a handle of another type is refused as well
    TestEvd e(IT_SOFTWARE_EVENT_STREAM, 1, 1);
    EXPECT_EQ(it_pz_free(reinterpret_cast<it_pz_handle_t>(e.h)), IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_ep_free(reinterpret_cast<it_ep_handle_t>(e.h)), IT_ERR_INVALID_EP);
}

TEST(Interfaces, ListWithoutADeviceIsEmptyOrNamesThem) {
    it_interface_t ifs[4];
    size_t num = 4, total = 99;
    it_interface_list(ifs, &num, &total);
    EXPECT_LE(num, total);
    for (size_t i = 0; i < num; i++) {
        EXPECT_EQ(ifs[i].major_version, 2u);
        EXPECT_EQ(ifs[i].minor_version, 1u);
        EXPECT_EQ(ifs[i].transport_type, IT_IWARP_TCP_TRANSPORT);
    }
    it_ia_handle_t ia;
    EXPECT_EQ(it_ia_create(nullptr, 2, 1, &ia), IT_ERR_INVALID_NAME);
    EXPECT_EQ(it_ia_create("vd0", 3, 0, &ia), IT_ERR_INVALID_MAJOR_VERSION);
    EXPECT_EQ(it_ia_create("vd0", 2, 2, &ia), IT_ERR_INVALID_MINOR_VERSION);
}

} // namespace
