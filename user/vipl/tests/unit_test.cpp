// SPDX-License-Identifier: GPL-2.0
//
// VIPL without a device: the pure parts, the header, the handle registry
// and bad handles.
#include <atomic>
#include <cstddef>
#include <deque>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "internal.hpp"
#include "vipl_api.hpp"

using namespace vipl;

TEST(ViplHeader, ValuesOfTheGuideWithErrataFixed) {
    EXPECT_EQ(VIP_CONTROL_RESERVED, 0xFFF0);
    EXPECT_EQ(VIP_STATUS_RESERVED, 0xFFF0FE00u);
    // every status bit is exactly one of: defined or reserved
    const std::uint32_t defined =
        VIP_STATUS_DONE | VIP_STATUS_ERROR_MASK | VIP_STATUS_OP_MASK | VIP_STATUS_IMMEDIATE;
    EXPECT_EQ(defined & VIP_STATUS_RESERVED, 0u);
    EXPECT_EQ(defined | VIP_STATUS_RESERVED, 0xFFFFFFFFu);
    const unsigned control =
        VIP_CONTROL_OP_MASK | VIP_CONTROL_IMMEDIATE | VIP_CONTROL_QFENCE | VIP_CONTROL_RESERVED;
    EXPECT_EQ(control, 0xFFFFu);
    EXPECT_EQ(VIP_ERROR_RDMAR_PROT, 7);
    EXPECT_EQ(VIP_ERROR_CATASTROPHIC, 10);
    EXPECT_EQ(VIP_NOT_REACHABLE, 15);
    EXPECT_EQ(VIP_INVALID_RDMA_READ, VIP_INVALID_RDMAREAD);
    EXPECT_EQ(VIP_CONTROL_OP_SENDRXCV, VIP_CONTROL_OP_SENDRECV);
    EXPECT_EQ(VIP_STATE_ERROR, 3);
    EXPECT_EQ(VIP_INFINITE, ~static_cast<VIP_ULONG>(0));
    EXPECT_EQ(sizeof(VIP_MEM_HANDLE), 4u);
    EXPECT_EQ(offsetof(VIP_NET_ADDRESS, HostAddress), 4u);
}

TEST(ViplNames, Vinic) {
    auto s = parse_nic_name("VINIC");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind, NicSelector::Kind::Index);
    EXPECT_EQ(s->index, 0u);
    s = parse_nic_name("vinic12");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->index, 12u);
    EXPECT_FALSE(parse_nic_name("VINIC1x"));
    EXPECT_FALSE(parse_nic_name("VINIC123456"));
    EXPECT_FALSE(parse_nic_name(""));
    EXPECT_FALSE(parse_nic_name(nullptr));
}

TEST(ViplNames, DeviceAndInterface) {
    auto s = parse_nic_name("vd0");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind, NicSelector::Kind::Name);
    EXPECT_EQ(s->name, "vd0");
    s = parse_nic_name("/dev/via_eth0");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind, NicSelector::Kind::Ifname);
    EXPECT_EQ(s->name, "eth0");
    s = parse_nic_name("via_lo");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind, NicSelector::Kind::Ifname);
    EXPECT_EQ(s->name, "lo");
    EXPECT_FALSE(parse_nic_name("/dev/via_"));
    EXPECT_FALSE(parse_nic_name("/dev/viaduct"));
}

TEST(ViplRendezvous, PortsStayInTheRangeAndProbeDistinctPorts) {
    for (unsigned n = 0; n < 200; n++) {
        std::vector<std::uint8_t> d(n % 17, static_cast<std::uint8_t>(n));
        std::set<std::uint16_t> ports;
        for (unsigned p = 0; p < port_probes; p++) {
            auto port = rendezvous_port(d, p, port_base_default);
            EXPECT_GE(port, port_base_default);
            EXPECT_LT(port, port_base_default + port_range);
            ports.insert(port);
        }
        EXPECT_EQ(ports.size(), port_probes);
    }
    // both ends compute the same port from the same bytes
    std::vector<std::uint8_t> a{'e', 'c', 'h', 'o'}, b{'e', 'c', 'h', 'o'}, c{'o', 'h', 'c', 'e'};
    EXPECT_EQ(rendezvous_port(a, 0, 20000), rendezvous_port(b, 0, 20000));
    EXPECT_NE(discriminator_hash(a), discriminator_hash(c));
}

TEST(ViplRendezvous, PortBaseFromTheEnvironment) {
    setenv("VIADUCT_VIPL_PORT_BASE", "30000", 1);
    EXPECT_EQ(port_base(), 30000);
    setenv("VIADUCT_VIPL_PORT_BASE", "65000", 1); // the range would not fit
    EXPECT_EQ(port_base(), port_base_default);
    setenv("VIADUCT_VIPL_PORT_BASE", "12x", 1);
    EXPECT_EQ(port_base(), port_base_default);
    unsetenv("VIADUCT_VIPL_PORT_BASE");
    EXPECT_EQ(port_base(), port_base_default);
}

TEST(ViplMessages, RoundTrip) {
    Msg m;
    m.kind = MsgKind::PeerRequest;
    m.reason = 7;
    m.reliability = VIP_SERVICE_RELIABLE_RECEPTION;
    m.max_transfer = 0x12345678;
    m.rdma_write = true;
    m.target = {1, 2, 3};
    m.src_host = {192, 0, 2, 1};
    m.src_disc = std::vector<std::uint8_t>(max_discriminator, 0xab);
    auto bytes = encode(m);
    EXPECT_LE(bytes.size(), viaduct::cm_private_data_max_enhanced);
    auto d = decode(bytes);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->kind, m.kind);
    EXPECT_EQ(d->reason, 7);
    EXPECT_EQ(d->reliability, m.reliability);
    EXPECT_EQ(d->max_transfer, m.max_transfer);
    EXPECT_TRUE(d->rdma_write);
    EXPECT_FALSE(d->rdma_read);
    EXPECT_EQ(d->target, m.target);
    EXPECT_EQ(d->src_host, m.src_host);
    EXPECT_EQ(d->src_disc, m.src_disc);
}

TEST(ViplMessages, GarbageAndTruncationAreRefused) {
    Msg m;
    m.target = {9, 9};
    auto bytes = encode(m);
    for (std::size_t n = 0; n < bytes.size(); n++)
        EXPECT_FALSE(decode(std::span(bytes.data(), n))) << n;
    auto bad = bytes;
    bad[0] = std::byte{'X'};
    EXPECT_FALSE(decode(bad));
    bad = bytes;
    bad[5] = std::byte{42}; // kind
    EXPECT_FALSE(decode(bad));
    bad = bytes;
    bad[16] = std::byte{0xff}; // target length beyond the frame and the limit
    EXPECT_FALSE(decode(bad));
}

namespace {

struct alignas(64) Desc {
    VIP_CONTROL_SEGMENT cs{};
    VIP_DATA_SEGMENT ds[4]{};
    VIP_DESCRIPTOR &d() { return *reinterpret_cast<VIP_DESCRIPTOR *>(this); }
};

} // namespace

TEST(ViplDescriptors, Send) {
    Desc x;
    x.cs.SegCount = 2;
    x.ds[0].Length = 100;
    x.ds[1].Length = 28;
    x.cs.Length = 128;
    auto c = check_send(x.d(), 4, 16, 1 << 20, true);
    EXPECT_EQ(c.error, 0u);
    EXPECT_EQ(c.nds, 2u);
    EXPECT_EQ(c.total, 128u);
    EXPECT_EQ(c.op, static_cast<std::uint32_t>(VIP_STATUS_OP_SEND));

    x.cs.Length = 127; // Length must be the sum
    EXPECT_EQ(check_send(x.d(), 4, 16, 1 << 20, true).error,
              static_cast<std::uint32_t>(VIP_STATUS_LENGTH_ERROR));
    x.cs.Length = 128;
    EXPECT_EQ(check_send(x.d(), 4, 16, 64, true).error, // beyond MaxTransferSize
              static_cast<std::uint32_t>(VIP_STATUS_LENGTH_ERROR));
    EXPECT_EQ(check_send(x.d(), 4, 1, 1 << 20, true).error, // more segments than the NIC has
              static_cast<std::uint32_t>(VIP_STATUS_LENGTH_ERROR));
    EXPECT_EQ(check_send(x.d(), 1, 16, 1 << 20, true).error, // beyond the registered bytes
              static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
    x.cs.Control = VIP_CONTROL_OP_RESERVED;
    EXPECT_EQ(check_send(x.d(), 4, 16, 1 << 20, true).error,
              static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
    x.cs.Control = 0x10; // a reserved control bit
    EXPECT_EQ(check_send(x.d(), 4, 16, 1 << 20, true).error,
              static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
    x.cs.Control = 0;
    x.cs.Reserved = 1;
    EXPECT_EQ(check_send(x.d(), 4, 16, 1 << 20, true).error,
              static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
    // immediate data only, no segment at all
    Desc e;
    e.cs.Control = VIP_CONTROL_IMMEDIATE;
    EXPECT_EQ(check_send(e.d(), 0, 16, 1 << 20, true).error, 0u);
}

TEST(ViplDescriptors, Rdma) {
    Desc x;
    x.cs.Control = VIP_CONTROL_OP_RDMAWRITE;
    x.cs.SegCount = 2; // the address segment and one data segment
    x.ds[1].Length = 4096;
    x.cs.Length = 4096;
    auto c = check_send(x.d(), 4, 16, 1 << 20, true);
    EXPECT_EQ(c.error, 0u);
    EXPECT_EQ(c.nds, 1u);
    EXPECT_EQ(c.op, static_cast<std::uint32_t>(VIP_STATUS_OP_RDMA_WRITE));
    x.cs.SegCount = 0; // no address segment
    EXPECT_EQ(check_send(x.d(), 4, 16, 1 << 20, true).error,
              static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
    x.cs.SegCount = 2;
    x.ds[0].Length = 1; // the address segment's Reserved word
    EXPECT_EQ(check_send(x.d(), 4, 16, 1 << 20, true).error,
              static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
    x.ds[0].Length = 0;
    x.cs.Control = VIP_CONTROL_OP_RDMAREAD;
    c = check_send(x.d(), 4, 16, 1 << 20, true);
    EXPECT_EQ(c.error, 0u);
    EXPECT_EQ(c.op, static_cast<std::uint32_t>(VIP_STATUS_OP_RDMA_READ));
    EXPECT_EQ(check_send(x.d(), 4, 16, 1 << 20, false).error, // not supported on the VI
              static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
}

TEST(ViplDescriptors, Recv) {
    Desc x;
    x.cs.SegCount = 3;
    x.ds[0].Length = 1;
    x.ds[1].Length = 2;
    x.ds[2].Length = 3;
    auto c = check_recv(x.d(), 4, 16);
    EXPECT_EQ(c.error, 0u);
    EXPECT_EQ(c.total, 6u);
    EXPECT_EQ(c.op, static_cast<std::uint32_t>(VIP_STATUS_OP_RECEIVE));
    x.cs.Control = VIP_CONTROL_OP_RDMAWRITE; // RDMA on the receive queue
    EXPECT_EQ(check_recv(x.d(), 4, 16).error, static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
    x.cs.Control = VIP_CONTROL_IMMEDIATE | VIP_CONTROL_QFENCE; // both ignored on receives
    EXPECT_EQ(check_recv(x.d(), 4, 16).error, 0u);
    EXPECT_EQ(check_recv(x.d(), 2, 16).error, static_cast<std::uint32_t>(VIP_STATUS_FORMAT_ERROR));
}

TEST(ViplDescriptors, CompletionStatus) {
    using viaduct::WcStatus;
    EXPECT_EQ(status_bits(WcStatus::Success), 0u);
    EXPECT_EQ(status_bits(WcStatus::Flushed),
              static_cast<std::uint32_t>(VIP_STATUS_DESC_FLUSHED_ERROR));
    EXPECT_EQ(status_bits(WcStatus::LocalLengthError),
              static_cast<std::uint32_t>(VIP_STATUS_LENGTH_ERROR));
    EXPECT_EQ(status_bits(WcStatus::LocalProtectionError),
              static_cast<std::uint32_t>(VIP_STATUS_PROTECTION_ERROR));
    EXPECT_EQ(status_bits(WcStatus::RemoteAccessError),
              static_cast<std::uint32_t>(VIP_STATUS_RDMA_PROT_ERROR));
    EXPECT_EQ(status_bits(WcStatus::RemoteInvalidRequest),
              static_cast<std::uint32_t>(VIP_STATUS_REMOTE_DESC_ERROR));
    EXPECT_EQ(status_bits(WcStatus::TransportError),
              static_cast<std::uint32_t>(VIP_STATUS_TRANSPORT_ERROR));
    for (int s = 0; s <= 10; s++)
        EXPECT_EQ(status_bits(static_cast<WcStatus>(s)) & ~std::uint32_t{VIP_STATUS_ERROR_MASK},
                  0u);
}

TEST(ViplReliability, Levels) {
    EXPECT_TRUE(valid_reliability(VIP_SERVICE_UNRELIABLE));
    EXPECT_TRUE(valid_reliability(VIP_SERVICE_RELIABLE_DELIVERY));
    EXPECT_TRUE(valid_reliability(VIP_SERVICE_RELIABLE_RECEPTION));
    EXPECT_FALSE(valid_reliability(0));
    EXPECT_FALSE(valid_reliability(3));
    EXPECT_FALSE(valid_reliability(8));
}

// Every call answers a handle that is not one with VIP_INVALID_PARAMETER.
TEST(ViplApi, BadHandles) {
    int junk = 0;
    void *bad = &junk;
    VIP_DESCRIPTOR *d = nullptr;
    VIP_VI_HANDLE vi = nullptr;
    VIP_BOOLEAN b = 0;
    VIP_VI_ATTRIBUTES va{};
    VIP_MEM_ATTRIBUTES ma{};
    VIP_NIC_ATTRIBUTES na{};
    VIP_VI_STATE st{};
    VIP_CQ_HANDLE cq = nullptr;
    VIP_PROTECTION_HANDLE pt = nullptr;
    VIP_MEM_HANDLE mh = 0;
    VIP_CONN_HANDLE ch = nullptr;
    VIP_ULONG len = 10;
    char name[10];
    alignas(8) unsigned char addrbuf[64] = {};
    auto *addr = reinterpret_cast<VIP_NET_ADDRESS *>(addrbuf);
    VIP_NIC_HANDLE nic = nullptr;
    for (void *h : {static_cast<void *>(nullptr), bad}) {
        EXPECT_EQ(VipCloseNic(h), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipQueryNic(h, &na), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipCreateVi(h, &va, nullptr, nullptr, &vi), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipDestroyVi(h), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipConnectWait(h, addr, 0, addr, &va, &ch), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipConnectAccept(h, h), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipConnectReject(h), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipConnectRequest(h, addr, addr, 1, &va), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipDisconnect(h), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipConnectPeerRequest(h, addr, addr, 1), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipConnectPeerDone(h, &va), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipConnectPeerWait(h, &va), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipCreatePtag(h, &pt), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipDestroyPtag(h, h), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipRegisterMem(h, addrbuf, 64, &ma, &mh), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipDeregisterMem(h, addrbuf, 1), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipPostSend(h, d, 1), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipSendDone(h, &d), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipSendWait(h, 0, &d), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipPostRecv(h, d, 1), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipRecvDone(h, &d), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipRecvWait(h, 0, &d), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipCQDone(h, &vi, &b), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipCQWait(h, 0, &vi, &b), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipSendNotify(h, nullptr, nullptr), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipRecvNotify(h, nullptr, nullptr), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipCQNotify(h, nullptr, nullptr), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipCreateCQ(h, 1, &cq), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipDestroyCQ(h), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipResizeCQ(h, 1), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipSetViAttributes(h, &va), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipQueryVi(h, &st, &va, &b, &b), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipSetMemAttributes(h, addrbuf, 1, &ma), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipQueryMem(h, addrbuf, 1, &ma), VIP_INVALID_PARAMETER);
        VIP_AUTODISCOVERY_LIST l{};
        EXPECT_EQ(VipQuerySystemManagementInfo(h, VIP_SMI_AUTODISCOVERY, &l),
                  VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipErrorCallback(h, nullptr, nullptr), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipNSInit(h, nullptr), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipNSGetHostByName(h, name, addr, 0), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipNSGetHostByAddr(h, addr, name, &len), VIP_INVALID_PARAMETER);
        EXPECT_EQ(VipNSShutdown(h), VIP_INVALID_PARAMETER);
    }
    // malformed NIC names never reach the device
    EXPECT_EQ(VipOpenNic(nullptr, &nic), VIP_INVALID_PARAMETER);
    EXPECT_EQ(VipOpenNic("VINIC0", nullptr), VIP_INVALID_PARAMETER);
    EXPECT_EQ(VipOpenNic("VINICx", &nic), VIP_INVALID_PARAMETER);
    EXPECT_EQ(nic, nullptr);
}

// The registry's lock-free lookup (peek, the data path's) answers what the
// locked one (find) answers, through the tombstones of removed handles, the
// index's rebuilds and its growth.
TEST(ViplRegistry, PeekFindsLiveHandlesOnly) {
    Registry r;
    std::vector<std::shared_ptr<Object>> live, removed; // removed: kept, so no address comes back
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 40; i++) {
            auto o = std::make_shared<Object>(i % 2 ? Kind::Vi : Kind::Cq);
            r.add(o);
            live.push_back(o);
        }
        for (int i = 0; i < 30; i++) {
            const std::size_t k =
                (static_cast<std::size_t>(i) * 7 + static_cast<std::size_t>(round)) % live.size();
            r.remove(live[k].get());
            removed.push_back(live[k]);
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
    }
    EXPECT_GT(r.index_size(), 4 * live.size()) << "the index grew with the live handles";
    for (const auto &o : live) {
        const Kind other = o->kind == Kind::Vi ? Kind::Cq : Kind::Vi;
        EXPECT_EQ(r.peek(o.get(), o->kind), o.get());
        EXPECT_EQ(r.peek(o.get(), other), nullptr) << "a handle of another kind";
        EXPECT_EQ(r.find(o.get(), o->kind), o);
    }
    for (const auto &o : removed) {
        EXPECT_EQ(r.peek(o.get(), o->kind), nullptr) << "a stale handle";
        EXPECT_EQ(r.find(o.get(), o->kind), nullptr);
    }
    // memory of the program's, as large as an object (the compiler sees the
    // inlined lookup compare it with the index's pointers)
    alignas(Object) unsigned char junk[sizeof(Object)] = {};
    EXPECT_EQ(r.peek(nullptr, Kind::Vi), nullptr);
    EXPECT_EQ(r.peek(junk, Kind::Vi), nullptr) << "a foreign handle";
    // removing what is not there changes nothing
    r.remove(junk);
    r.remove(removed.front().get());
    for (const auto &o : live)
        EXPECT_EQ(r.peek(o.get(), o->kind), o.get());
}

// A live handle is never refused while other threads add and remove
// handles (and so rebuild and grow the index) around it.
TEST(ViplRegistry, PeekDuringChurn) {
    Registry r;
    std::vector<std::shared_ptr<Object>> fixed;
    for (int i = 0; i < 16; i++) {
        fixed.push_back(std::make_shared<Object>(Kind::Vi));
        r.add(fixed.back());
    }
    std::atomic<bool> stop{false};
    std::atomic<long> lookups{0}, misses{0};
    std::thread reader([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            for (const auto &o : fixed)
                if (r.peek(o.get(), Kind::Vi) != o.get())
                    misses.fetch_add(1, std::memory_order_relaxed);
            lookups.fetch_add(1, std::memory_order_relaxed);
        }
    });
    std::deque<std::shared_ptr<Object>> churn;
    for (int i = 0; i < 200000; i++) {
        auto o = std::make_shared<Object>(Kind::Cq);
        r.add(o);
        churn.push_back(o);
        if (churn.size() > 300 || i % 3 == 0) {
            r.remove(churn.front().get());
            churn.pop_front();
        }
    }
    // the reader looks a few times at least (on a loaded machine it may
    // have been scheduled only now)
    while (lookups.load() < 2)
        std::this_thread::yield();
    stop = true;
    reader.join();
    EXPECT_EQ(misses.load(), 0);
}
