// SPDX-License-Identifier: GPL-2.0
//
// Live tests of the connection manager API, against the real module in the
// test VM: connections on the test device's own address, the listener and
// the initiator in one process, each with a context of its own. Skips
// without the module, without a device or when the device's interface has
// no IPv4 address.
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <span>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <viaduct/viaduct.hpp>

#include "ioctl_trace.hpp"
#include "live_env.hpp"
#include "objects.hpp"
#include "syscall.hpp"

using namespace std::chrono_literals;
using viaduct::CmChannel;
using viaduct::CmEvent;
using viaduct::CmEventType;
using viaduct::ConnectionId;
using viaduct::ConnectionOptions;
using viaduct::Device;
using viaduct::ProtectionDomain;
using viaduct::QpState;
using viaduct::QueuePair;

namespace {

std::vector<std::byte> bytes(std::string_view s) {
    std::vector<std::byte> v(s.size());
    std::memcpy(v.data(), s.data(), s.size());
    return v;
}

std::string text(std::span<const std::byte> b) {
    return std::string(reinterpret_cast<const char *>(b.data()), b.size());
}

// One side of a connection: a context, a channel, a PD and an Idle QP.
struct Side {
    explicit Side(const std::string &dev_name)
        : dev(Device::open(dev_name)), channel(dev), pd(dev), qp(pd, viaduct::QpConfig{}) {}

    // The next event, which must be of @type; fails the test after 10 s.
    CmEvent expect(CmEventType type) {
        auto ev = channel.read(10s);
        if (!ev)
            throw std::runtime_error(std::string("no CM event, expected ") +
                                     viaduct::to_string(type));
        if (ev->type() != type)
            throw std::runtime_error(std::string("CM event ") + viaduct::to_string(ev->type()) +
                                     " (status " + std::to_string(ev->status()) + "), expected " +
                                     viaduct::to_string(type));
        return std::move(*ev);
    }

    Device dev;
    CmChannel channel;
    ProtectionDomain pd;
    QueuePair qp;
};

class LiveCm : public ::testing::Test {
protected:
    void SetUp() override {
        VIADUCT_LIVE_DEVICE(name_);
        auto attr = Device::open(name_).attributes();
        for (const auto &a : attr.addresses) {
            if (a.family == AF_INET) {
                addr_ = a.address;
                break;
            }
        }
        if (addr_.empty())
            VIADUCT_LIVE_UNAVAILABLE(name_ << " (" << attr.ifname << ") has no IPv4 address");
        server_ = std::make_unique<Side>(name_);
        client_ = std::make_unique<Side>(name_);
        listener_ = std::make_unique<ConnectionId>(server_->channel, 0x1157);
        port_ = listener_->listen(addr_, 0);
        ASSERT_NE(0, port_);
    }

    std::string name_, addr_;
    std::unique_ptr<Side> server_, client_;
    std::unique_ptr<ConnectionId> listener_;
    std::uint16_t port_ = 0;
};

// The errno of a raw CM command on @dev.
int raw(const Device &dev, unsigned long cmd, void *arg) {
    return viaduct::detail::do_ioctl(dev.fd(), cmd, arg);
}

} // namespace

TEST_F(LiveCm, ConnectAcceptPrivateDataBothWaysAndDisconnect) {
    ConnectionId conn(client_->channel, 0xc11e);
    auto hello = bytes("hello from the initiator");
    ConnectionOptions o;
    o.private_data = hello;
    conn.connect(client_->qp, addr_, port_, o);

    CmEvent req = server_->expect(CmEventType::ConnectRequest);
    EXPECT_EQ(0, req.status());
    EXPECT_EQ(0x1157u, req.user_data());
    EXPECT_EQ(listener_->handle(), req.listen_handle());
    EXPECT_NE(listener_->handle(), req.handle());
    EXPECT_EQ("hello from the initiator", text(req.private_data()));
    EXPECT_EQ(addr_, req.peer().address);
    EXPECT_EQ(addr_, req.local().address);
    EXPECT_EQ(port_, req.local().port);
    EXPECT_EQ(0u, req.flags() & VIADUCT_CM_F_MPA_V1);

    ConnectionId accepted = req.connection();
    EXPECT_EQ(req.handle(), accepted.handle());
    req.ack();
    EXPECT_TRUE(req.acked());
    accepted.accept(server_->qp, bytes("and from the responder"));

    CmEvent est = client_->expect(CmEventType::Established);
    EXPECT_EQ(0, est.status());
    EXPECT_EQ(0xc11eu, est.user_data());
    EXPECT_EQ(conn.handle(), est.handle());
    EXPECT_EQ("and from the responder", text(est.private_data()));
    EXPECT_EQ(port_, est.peer().port);
    EXPECT_EQ(addr_ + ":" + std::to_string(port_), est.peer().to_string());
    CmEvent sest = server_->expect(CmEventType::Established);
    EXPECT_EQ(accepted.handle(), sest.handle());

    EXPECT_EQ(QpState::Rts, client_->qp.query().state);
    EXPECT_EQ(QpState::Rts, server_->qp.query().state);

    // Graceful, from the initiator: both sides hear of it.
    conn.disconnect();
    CmEvent peer_gone = server_->expect(CmEventType::Disconnected);
    EXPECT_EQ(0, peer_gone.status());
    CmEvent done = client_->expect(CmEventType::Disconnected);
    EXPECT_EQ(0, done.status());
    EXPECT_NE(QpState::Rts, client_->qp.query().state);
    EXPECT_NE(QpState::Rts, server_->qp.query().state);
}

TEST_F(LiveCm, MpaV1WithCrcAndTheLargestPrivateData) {
    ConnectionId conn(client_->channel);
    std::vector<std::byte> big(viaduct::cm_private_data_max, std::byte{0x5a});
    ConnectionOptions o;
    o.private_data = big;
    o.mpa_v1 = true;
    o.crc = true;
    conn.connect(client_->qp, addr_, port_, o);

    CmEvent req = server_->expect(CmEventType::ConnectRequest);
    EXPECT_EQ(big.size(), req.private_data().size());
    EXPECT_NE(0u, req.flags() & VIADUCT_CM_F_MPA_V1);
    EXPECT_NE(0u, req.flags() & VIADUCT_CM_F_CRC);
    ConnectionId accepted = req.connection();
    accepted.accept(server_->qp, big); // a revision 1 reply may carry 512 too

    CmEvent est = client_->expect(CmEventType::Established);
    EXPECT_EQ(big.size(), est.private_data().size());
    EXPECT_TRUE(std::equal(big.begin(), big.end(), est.private_data().begin()));
    EXPECT_NE(0u, est.flags() & VIADUCT_CM_F_CRC);
    server_->expect(CmEventType::Established);
    EXPECT_EQ(QpState::Rts, client_->qp.query().state);

    // Abortive, from the responder: the QP goes to Error, the peer is told.
    accepted.disconnect(true);
    CmEvent gone = client_->expect(CmEventType::Disconnected);
    EXPECT_EQ(QpState::Error, server_->qp.query().state);
}

TEST_F(LiveCm, RejectWithPrivateData) {
    ConnectionId conn(client_->channel);
    conn.connect(client_->qp, addr_, port_);
    CmEvent req = server_->expect(CmEventType::ConnectRequest);
    EXPECT_TRUE(req.private_data().empty());
    ConnectionId id = req.connection();
    id.reject(bytes("not today"));

    CmEvent rej = client_->expect(CmEventType::Rejected);
    EXPECT_EQ(-ECONNREFUSED, rej.status());
    EXPECT_EQ("not today", text(rej.private_data()));
    EXPECT_EQ(QpState::Idle, client_->qp.query().state);

    // Answered once: a second answer is refused by the library.
    try {
        id.accept(server_->qp);
        ADD_FAILURE() << "accept after reject";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(EINVAL, e.errnum());
        EXPECT_NE(nullptr, std::strstr(e.what(), "already answered")) << e.what();
    }
}

TEST_F(LiveCm, NobodyListensIsUnreachable) {
    // A port that was free a moment ago.
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_LE(0, s);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    ASSERT_EQ(1, ::inet_pton(AF_INET, addr_.c_str(), &sin.sin_addr));
    ASSERT_EQ(0, ::bind(s, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)));
    socklen_t len = sizeof(sin);
    ASSERT_EQ(0, ::getsockname(s, reinterpret_cast<sockaddr *>(&sin), &len));
    ::close(s);

    ConnectionId conn(client_->channel);
    conn.connect(client_->qp, addr_, ntohs(sin.sin_port));
    CmEvent ev = client_->expect(CmEventType::Unreachable);
    EXPECT_EQ(-ECONNREFUSED, ev.status());
    EXPECT_EQ(QpState::Idle, client_->qp.query().state);
}

// Each event is acknowledged exactly once, by its destruction or ack(), and
// the kernel id outlives the ConnectionId as long as an event of it is held.
TEST_F(LiveCm, EventsAreAckedExactlyOnce) {
    auto conn = std::make_unique<ConnectionId>(client_->channel);
    conn->connect(client_->qp, addr_, port_);
    CmEvent req = server_->expect(CmEventType::ConnectRequest);
    ConnectionId accepted = req.connection();
    accepted.accept(server_->qp);
    server_->expect(CmEventType::Established);

    std::optional<CmEvent> est = client_->expect(CmEventType::Established);
    const std::uint32_t handle = est->handle(), seq = est->seq();

    // Not acked yet: the kernel will not destroy the id.
    viaduct_handle h{};
    h.handle = handle;
    EXPECT_EQ(EBUSY, raw(client_->dev, VIADUCT_IOCTL_CM_DESTROY_ID, &h));

    // Destroying the ConnectionId while its event is held is safe: the
    // kernel id stays, connected, until the event goes.
    conn.reset();
    EXPECT_EQ(QpState::Rts, client_->qp.query().state);
    EXPECT_EQ(EBUSY, raw(client_->dev, VIADUCT_IOCTL_CM_DESTROY_ID, &h));

    // A moved event is acked once, by whichever object holds it.
    CmEvent moved = std::move(*est);
    est.reset();
    viaduct_cm_ack a{};
    a.handle = handle;
    a.seq = seq;
    moved.ack();
    moved.ack(); // no-op
    EXPECT_EQ(EINVAL, raw(client_->dev, VIADUCT_IOCTL_CM_ACK_EVENT, &a)) << "acked twice?";

    // The last reference: the id is destroyed and the connection reset.
    { CmEvent last = std::move(moved); }
    EXPECT_EQ(ENOENT, raw(client_->dev, VIADUCT_IOCTL_CM_ACK_EVENT, &a));
    server_->expect(CmEventType::Disconnected);
}

// An id destroyed with events queued but not read yet: the channel acks
// them as it reads them and destroys the id then.
TEST_F(LiveCm, DestroyedIdWithUnreadEvents) {
    auto conn = std::make_unique<ConnectionId>(client_->channel);
    const std::uint32_t handle = conn->handle();
    conn->connect(client_->qp, addr_, port_);
    CmEvent req = server_->expect(CmEventType::ConnectRequest);
    ConnectionId accepted = req.connection();
    accepted.accept(server_->qp);
    server_->expect(CmEventType::Established);

    // Wait for the initiator's ESTABLISHED to be queued, without reading.
    pollfd p{client_->channel.fd(), POLLIN, 0};
    ASSERT_EQ(1, ::poll(&p, 1, 10000));
    conn.reset(); // EBUSY in the kernel: the channel keeps it
    viaduct_handle h{};
    h.handle = handle;
    EXPECT_EQ(EBUSY, raw(client_->dev, VIADUCT_IOCTL_CM_DESTROY_ID, &h));

    EXPECT_FALSE(client_->channel.read(200ms)) << "an orphan's event was delivered";
    viaduct_cm_ack a{};
    a.handle = handle;
    EXPECT_EQ(ENOENT, raw(client_->dev, VIADUCT_IOCTL_CM_ACK_EVENT, &a)) << "id not destroyed";
    server_->expect(CmEventType::Disconnected);
}

// Handles are reused as soon as the kernel destroys an id. Threads that
// create and destroy ids on one channel at once, while its reader takes
// CONNECT_REQUESTs (ids the kernel makes), must leave every live id mapped
// to its own state: an id whose entry a concurrent destroy erased has
// events that carry no state.
TEST_F(LiveCm, ConcurrentCreateDestroyKeepsEveryIdRegistered) {
    constexpr int threads = 4, rounds = 200;
    std::atomic<int> lost{0};
    // Each destroy lingers after the kernel freed the handle: another
    // thread's create gets the handle then.
    viaduct::test::IoctlDelay linger(VIADUCT_IOCTL_CM_DESTROY_ID, std::chrono::microseconds(500));
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
            std::vector<ConnectionId> kept;
            for (int i = 0; i < rounds; ++i) {
                ConnectionId gone(server_->channel);
                ConnectionId stays(server_->channel);
                { ConnectionId brief = std::move(gone); } // destroyed beside the others' creates
                if (!viaduct::detail::cm_id_registered(stays))
                    lost.fetch_add(1);
                kept.push_back(std::move(stays));
                if (kept.size() > 8)
                    kept.erase(kept.begin());
            }
            for (const ConnectionId &id : kept)
                if (!viaduct::detail::cm_id_registered(id))
                    lost.fetch_add(1);
        });
    }
    // Incoming connections beside them: their ids are registered by read().
    std::vector<std::unique_ptr<ConnectionId>> conns;
    std::vector<std::unique_ptr<Side>> clients;
    for (int i = 0; i < 4; ++i) {
        clients.push_back(std::make_unique<Side>(name_));
        conns.push_back(std::make_unique<ConnectionId>(clients.back()->channel));
        conns.back()->connect(clients.back()->qp, addr_, port_);
    }
    std::vector<ConnectionId> requests;
    for (int i = 0; i < 4; ++i) {
        CmEvent req = server_->expect(CmEventType::ConnectRequest);
        requests.push_back(req.connection());
    }
    for (std::thread &w : workers)
        w.join();
    EXPECT_EQ(0, lost.load()) << "ids whose channel entry was erased by another's destroy";
    for (const ConnectionId &r : requests)
        EXPECT_TRUE(viaduct::detail::cm_id_registered(r));
    for (ConnectionId &r : requests)
        r.reject();
    for (auto &c : clients)
        c->expect(CmEventType::Rejected);
}

// A moved-from event: its accessors throw EBADF rather than read through a
// null pointer, and it acknowledges nothing.
TEST_F(LiveCm, MovedFromEventThrowsEbadf) {
    ConnectionId conn(client_->channel);
    conn.connect(client_->qp, addr_, port_);
    CmEvent req = server_->expect(CmEventType::ConnectRequest);
    CmEvent held = std::move(req);
    EXPECT_FALSE(req); // NOLINT(bugprone-use-after-move): the point of the test
    EXPECT_TRUE(held);
    auto ebadf = [](auto &&fn) {
        try {
            fn();
            ADD_FAILURE() << "no error from a moved-from CmEvent";
        } catch (const viaduct::Error &e) {
            EXPECT_EQ(EBADF, e.errnum()) << e.what();
        }
    };
    ebadf([&] { (void)req.type(); });
    ebadf([&] { (void)req.status(); });
    ebadf([&] { (void)req.handle(); });
    ebadf([&] { (void)req.seq(); });
    ebadf([&] { (void)req.private_data(); });
    ebadf([&] { (void)req.peer(); });
    ebadf([&] { (void)req.raw(); });
    ebadf([&] { (void)req.connection(); });
    req.ack(); // nothing to acknowledge
    EXPECT_EQ(CmEventType::ConnectRequest, held.type());
    held.connection().reject();
    client_->expect(CmEventType::Rejected);
}

// listen("") is every address of the device, IPv4 and IPv6: one listening
// IPv6 socket on the any-address, which takes IPv4 connections too. The
// connections themselves need a peer in another namespace (a listener on
// the any-address is bound to the device's interface, and a connection
// from this host arrives on lo): selftests/ping_test.sh makes them.
TEST_F(LiveCm, ListenOnEveryAddressIsOneDualStackSocket) {
    ConnectionId any(server_->channel, 0xa11);
    const std::uint16_t port = any.listen("", 0);
    ASSERT_NE(0, port);
    // /proc/net/tcp6: "sl local_address rem_address st ..." in hex; the
    // any-address is 32 zeros, LISTEN is state 0A.
    char hex_port[8];
    std::snprintf(hex_port, sizeof(hex_port), "%04X", static_cast<unsigned>(port));
    const std::string wanted = std::string(32, '0') + ":" + hex_port;
    FILE *f = std::fopen("/proc/net/tcp6", "r");
    ASSERT_NE(nullptr, f) << "no /proc/net/tcp6: a kernel without IPv6?";
    char line[512];
    bool found = false;
    while (std::fgets(line, sizeof(line), f)) {
        std::string l(line);
        if (l.find(" " + wanted + " ") != std::string::npos && l.find(" 0A ") != std::string::npos)
            found = true;
    }
    std::fclose(f);
    EXPECT_TRUE(found) << "no IPv6 listener on [::]:" << port;
    // A second listener on the same port and IPv4's any-address collides
    // with it: the IPv6 socket holds the IPv4 port too.
    ConnectionId v4(server_->channel);
    try {
        v4.listen("0.0.0.0", port);
        ADD_FAILURE() << "0.0.0.0:" << port << " was free beside a dual-stack listener";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(EADDRINUSE, e.errnum()) << e.what();
    }
}

namespace {

// One end of a data-moving connection: a CQ, a QP allowing remote reads
// and writes, and a registered buffer.
struct Endpoint {
    Endpoint(Side &side, std::size_t size, bool single_threaded)
        : cq(side.dev, viaduct::CqConfig{.entries = 64, .single_threaded = single_threaded}),
          qp(side.pd, config(cq, single_threaded)), buf(size),
          mr(side.pd, buf.data(), buf.size(),
             viaduct::access::local_write | viaduct::access::remote_write |
                 viaduct::access::remote_read) {}

    static viaduct::QpConfig config(const viaduct::CompletionQueue &cq, bool single_threaded) {
        viaduct::QpConfig c;
        c.send_cq = &cq;
        c.recv_cq = &cq;
        c.access = VIADUCT_QP_ACCESS_REMOTE_WRITE | VIADUCT_QP_ACCESS_REMOTE_READ;
        c.ord = 4;
        c.ird = 4;
        c.single_threaded = single_threaded;
        return c;
    }

    // The next completion, which must be a success; fails after 10 s.
    viaduct::Completion next() {
        std::array<viaduct::Completion, 1> wc{};
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (cq.poll(wc) == 1) {
                EXPECT_TRUE(wc[0].ok()) << viaduct::to_string(wc[0].status);
                return wc[0];
            }
            std::this_thread::sleep_for(1ms);
        }
        throw std::runtime_error("no completion within 10 s");
    }

    void fill(std::uint32_t seed) {
        for (std::size_t i = 0; i < buf.size(); ++i)
            buf[i] = static_cast<std::byte>((i * 131 + seed) >> 3);
    }

    viaduct::CompletionQueue cq;
    QueuePair qp;
    std::vector<std::byte> buf;
    viaduct::MemoryRegion mr;
};

// The index of the first byte where @a and @b differ, or -1.
std::ptrdiff_t first_difference(std::span<const std::byte> a, std::span<const std::byte> b) {
    auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    return ia == a.end() && ib == b.end() ? -1 : ia - a.begin();
}

struct Connected {
    ConnectionId initiator, responder;
};

// Connects @client's QP to @server's through the listener at @addr:@port
// (of @ss), both ESTABLISHED. C, S: anything with a QueuePair qp.
template <class C, class S>
Connected connect_endpoints(Side &cs, C &client, Side &ss, S &server, const std::string &addr,
                            std::uint16_t port) {
    ConnectionId conn(cs.channel);
    conn.connect(client.qp, addr, port);
    CmEvent req = ss.expect(CmEventType::ConnectRequest);
    ConnectionId accepted = req.connection();
    req.ack();
    accepted.accept(server.qp);
    cs.expect(CmEventType::Established);
    ss.expect(CmEventType::Established);
    return {std::move(conn), std::move(accepted)};
}

} // namespace

// Connected QPs moving data: Send into a posted receive, Send with
// immediate data, RDMA Write and RDMA Read, every byte checked. The
// initiator's QP and CQ are single-threaded, the responder's locked.
TEST_F(LiveCm, ConnectedQpsMoveDataEveryByteChecked) {
    const std::size_t size = 1 << 20;
    Endpoint client(*client_, size, true), server(*server_, size, false);
    client.fill(1);

    [[maybe_unused]] auto [conn, accepted] =
        connect_endpoints(*client_, client, *server_, server, addr_, port_);

    // Send: 64 KiB into a receive of the whole buffer.
    const std::uint32_t send_len = 64 << 10;
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 1, .sge = std::array{server.mr.sge()}});
    auto sge = client.mr.sge(0, send_len);
    ASSERT_TRUE(client.qp.try_post_send(viaduct::SendWr{.wr_id = 2, .sge = {&sge, 1}}));
    EXPECT_EQ(2u, client.next().wr_id);
    viaduct::Completion rc = server.next();
    EXPECT_EQ(1u, rc.wr_id);
    EXPECT_TRUE(rc.is_recv());
    EXPECT_EQ(send_len, rc.byte_len);
    EXPECT_EQ(-1, first_difference(std::span(server.buf).first(send_len),
                                   std::span(client.buf).first(send_len)));

    // Send with immediate data and no payload.
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 3});
    client.qp.post_send(viaduct::SendWr{.wr_id = 4, .imm_data = 0xfeedu});
    EXPECT_EQ(4u, client.next().wr_id);
    rc = server.next();
    EXPECT_TRUE(rc.has_imm());
    EXPECT_EQ(0xfeedu, rc.imm_data);
    EXPECT_EQ(0u, rc.byte_len);

    // RDMA Write of the whole buffer: no completion at the target.
    auto all = client.mr.sge();
    client.qp.post_send(viaduct::SendWr{.wr_id = 5,
                                        .opcode = viaduct::SendOp::RdmaWrite,
                                        .sge = {&all, 1},
                                        .remote_addr = server.mr.addr(),
                                        .remote_stag = server.mr.rkey()});
    viaduct::Completion wc = client.next();
    EXPECT_EQ(viaduct::WcOpcode::RdmaWrite, wc.opcode);
    // Ordered after the Write on the same connection.
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 6});
    client.qp.post_send(viaduct::SendWr{.wr_id = 7});
    client.next();
    server.next();
    EXPECT_EQ(-1, first_difference(server.buf, client.buf));

    // RDMA Read of the responder's buffer, changed first, into the
    // initiator's.
    server.fill(77);
    client.qp.post_send(viaduct::SendWr{.wr_id = 8,
                                        .opcode = viaduct::SendOp::RdmaRead,
                                        .sge = {&all, 1},
                                        .remote_addr = server.mr.addr(),
                                        .remote_stag = server.mr.rkey()});
    wc = client.next();
    EXPECT_EQ(8u, wc.wr_id);
    EXPECT_EQ(viaduct::WcOpcode::RdmaRead, wc.opcode);
    EXPECT_EQ(size, wc.byte_len);
    EXPECT_EQ(-1, first_difference(client.buf, server.buf));

    conn.disconnect();
    client_->expect(CmEventType::Disconnected);
    server_->expect(CmEventType::Disconnected);
}

// Receives posted in RTS need no DOORBELL: a message that finds no receive
// in the kernel's FIFO takes the new ones from the ring. Every one still
// gets its message, in order; a ring half full is handed over anyway; and
// once the QP left RTS a receive rings again, so that one posted into an
// Error QP is flushed, behind those still waiting in the ring.
TEST_F(LiveCm, ReceivesInRtsNeedNoDoorbell) {
    const std::size_t size = 64 << 10;
    Endpoint client(*client_, size, true), server(*server_, size, true);
    client.fill(5);

    [[maybe_unused]] auto [conn, accepted] =
        connect_endpoints(*client_, client, *server_, server, addr_, port_);
    ASSERT_EQ(QpState::Rts, server.qp.query().state);

    // One receive at a time, each before its Send, as a ping-pong does.
    const std::uint64_t rings = server.qp.doorbell_calls();
    for (std::uint32_t i = 0; i < 4; ++i) {
        auto dst = server.mr.sge(i * 1024, 1024);
        server.qp.post_recv(viaduct::RecvWr{.wr_id = 10 + i, .sge = {&dst, 1}});
        auto src = client.mr.sge(i * 1024, 100 + i);
        client.qp.post_send(viaduct::SendWr{.wr_id = 20 + i, .sge = {&src, 1}});
        EXPECT_EQ(20u + i, client.next().wr_id);
        viaduct::Completion rc = server.next();
        EXPECT_EQ(10u + i, rc.wr_id);
        EXPECT_EQ(100u + i, rc.byte_len);
        EXPECT_EQ(-1, first_difference(std::span(server.buf).subspan(i * 1024, 100 + i),
                                       std::span(client.buf).subspan(i * 1024, 100 + i)));
    }
    EXPECT_EQ(rings, server.qp.doorbell_calls()) << "a receive in RTS made a system call";

    // A burst: half the ring waiting is handed to the kernel.
    const std::uint32_t half = server.qp.caps().rq_ring_depth / 2;
    ASSERT_GT(half, 2u);
    for (std::uint32_t i = 0; i < half; ++i)
        server.qp.post_recv(viaduct::RecvWr{.wr_id = 100 + i});
    EXPECT_LT(rings, server.qp.doorbell_calls()) << "the ring filled without a doorbell";
    EXPECT_GE(server.qp.recv_queue_room(), server.qp.caps().rq_ring_depth - half);
    // two more, left in the ring
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 100 + half});
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 101 + half});
    for (std::uint32_t i = 0; i < 2; ++i)
        client.qp.post_send(viaduct::SendWr{.wr_id = 30 + i});
    for (std::uint32_t i = 0; i < 2; ++i) {
        client.next();
        EXPECT_EQ(100u + i, server.next().wr_id);
    }

    // Out of RTS: a receive rings, and in Error it is flushed in post
    // order behind the others, those the kernel holds and those it never
    // took from the ring.
    server.qp.modify(QpState::Error);
    const std::uint64_t before = server.qp.doorbell_calls();
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 999});
    EXPECT_EQ(before + 1, server.qp.doorbell_calls());
    std::array<viaduct::Completion, 1> wc{};
    std::vector<std::uint64_t> flushed; // 100 and 101 took the two Sends
    for (std::uint64_t id = 102; id < 102 + half; ++id)
        flushed.push_back(id);
    flushed.push_back(999);
    for (const std::uint64_t id : flushed) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        std::size_t n = 0;
        while (!(n = server.cq.poll(wc)) && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(1ms);
        ASSERT_EQ(1u, n) << "receive " << id << " never completed";
        EXPECT_EQ(id, wc[0].wr_id);
        EXPECT_EQ(viaduct::WcStatus::Flushed, wc[0].status);
    }
    client_->expect(CmEventType::Disconnected);
}

// Fast registration through the native API: a FastRegRegion filled over
// pages of the responder's own MR, an RDMA Write through its new STag, the
// initiator's Send with Invalidate reported at the responder, and an RDMA
// Read with invalidate into a fast-registered sink. A region registers
// again only once it is INVALID, so each re-registration proves the
// invalidation before it.
TEST_F(LiveCm, FastRegisterAndInvalidate) {
    const std::size_t size = 1 << 20;
    const std::uint32_t page = 4096, pages = 15;
    Endpoint client(*client_, size, false), server(*server_, size, false);
    client.fill(3);

    [[maybe_unused]] auto [conn, accepted] =
        connect_endpoints(*client_, client, *server_, server, addr_, port_);

    viaduct::FastRegRegion fr(server_->pd, pages + 1, 0x21);
    EXPECT_EQ(0x21u, fr.stag() & 0xffu);
    const std::uint32_t stag = viaduct::with_key(fr.stag(), 0x77);
    const std::uint64_t iova = 0x4000'0000;
    auto list = server.mr.sge(page, pages * page);
    const viaduct::SendWr reg{.wr_id = 10,
                              .opcode = viaduct::SendOp::FastRegister,
                              .sge = {&list, 1},
                              .remote_addr = iova,
                              .remote_stag = stag,
                              .fast_reg_access =
                                  viaduct::access::local_write | viaduct::access::remote_write};
    server.qp.post_send(reg);
    EXPECT_EQ(viaduct::WcOpcode::FastRegister, server.next().opcode);

    // An RDMA Write through it lands at the page list's bytes.
    auto src = client.mr.sge(0, 5000);
    client.qp.post_send(viaduct::SendWr{.wr_id = 11,
                                        .opcode = viaduct::SendOp::RdmaWrite,
                                        .sge = {&src, 1},
                                        .remote_addr = iova + 100,
                                        .remote_stag = stag});
    client.next();
    // The Send with Invalidate behind it ends the registration.
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 12});
    client.qp.post_send(viaduct::SendWr{
        .wr_id = 13, .opcode = viaduct::SendOp::SendWithInvalidate, .remote_stag = stag});
    client.next();
    viaduct::Completion rc = server.next();
    EXPECT_TRUE(rc.has_invalidated());
    EXPECT_EQ(stag, rc.invalidated_stag);
    EXPECT_EQ(-1, first_difference(std::span(server.buf).subspan(page + 100, 5000),
                                   std::span(client.buf).first(5000)));
    server.qp.post_send(reg); // INVALID now: registers again
    EXPECT_EQ(viaduct::WcOpcode::FastRegister, server.next().opcode);
    server.qp.post_send(viaduct::SendWr{
        .wr_id = 14, .opcode = viaduct::SendOp::LocalInvalidate, .remote_stag = stag});
    EXPECT_EQ(viaduct::WcOpcode::LocalInvalidate, server.next().opcode);

    // RDMA Read with invalidate into the initiator's own fast-registered sink.
    viaduct::FastRegRegion sink(client_->pd, pages + 1);
    const std::uint32_t sink_stag = viaduct::with_key(sink.stag(), 5);
    auto sink_list = client.mr.sge(0, pages * page);
    const viaduct::SendWr sink_reg{.wr_id = 20,
                                   .opcode = viaduct::SendOp::FastRegister,
                                   .sge = {&sink_list, 1},
                                   .remote_addr = iova,
                                   .remote_stag = sink_stag,
                                   .fast_reg_access = viaduct::access::local_write};
    client.qp.post_send(sink_reg);
    client.next();
    server.fill(9);
    const viaduct::Sge dst{iova, 8000, sink_stag};
    client.qp.post_send(viaduct::SendWr{.wr_id = 21,
                                        .opcode = viaduct::SendOp::RdmaReadWithInvalidate,
                                        .sge = {&dst, 1},
                                        .remote_addr = server.mr.addr(),
                                        .remote_stag = server.mr.rkey()});
    viaduct::Completion wc = client.next();
    EXPECT_EQ(viaduct::WcOpcode::RdmaRead, wc.opcode);
    EXPECT_EQ(8000u, wc.byte_len);
    EXPECT_EQ(
        -1, first_difference(std::span(client.buf).first(8000), std::span(server.buf).first(8000)));
    client.qp.post_send(sink_reg); // INVALID now: registers again
    EXPECT_EQ(viaduct::WcOpcode::FastRegister, client.next().opcode);

    conn.disconnect();
    client_->expect(CmEventType::Disconnected);
    server_->expect(CmEventType::Disconnected);
}

// Memory windows through the native API: a type-1 window bound by a call
// and a type-2 window bound by a WR onto the responder's region, an RDMA
// Write and Read through each with the bytes checked, the type-2 window
// ended by the initiator's Send with Invalidate, and a region kept by the
// type-1 window bound to it after the MemoryRegion is gone.
TEST_F(LiveCm, MemoryWindows) {
    const std::size_t size = 1 << 20;
    Endpoint client(*client_, size, false), server(*server_, size, false);
    client.fill(4);

    [[maybe_unused]] auto [conn, accepted] =
        connect_endpoints(*client_, client, *server_, server, addr_, port_);

    auto region = std::make_unique<viaduct::MemoryRegion>(
        server_->pd, server.buf.data(), server.buf.size(),
        viaduct::access::local_write | viaduct::access::mw_bind);
    const std::uint64_t base = region->addr();

    // Type 1 by a call: Write then Read through it.
    viaduct::MemoryWindow w1(server_->pd, viaduct::MwType::Type1, 3);
    EXPECT_EQ(viaduct::MwType::Type1, w1.type());
    EXPECT_EQ(3u, w1.stag() & 0xffu);
    const std::uint32_t s1 =
        w1.bind(*region, base + 4096, 8192,
                viaduct::access::remote_read | viaduct::access::remote_write, 0x31);
    EXPECT_EQ(viaduct::with_key(w1.stag(), 0x31), s1);
    EXPECT_EQ(s1, w1.stag());
    auto src = client.mr.sge(0, 8192);
    client.qp.post_send(viaduct::SendWr{.wr_id = 30,
                                        .opcode = viaduct::SendOp::RdmaWrite,
                                        .sge = {&src, 1},
                                        .remote_addr = base + 4096,
                                        .remote_stag = s1});
    client.next();
    auto back = client.mr.sge(size / 2, 8192);
    client.qp.post_send(viaduct::SendWr{.wr_id = 31,
                                        .opcode = viaduct::SendOp::RdmaRead,
                                        .sge = {&back, 1},
                                        .remote_addr = base + 4096,
                                        .remote_stag = s1});
    client.next();
    EXPECT_EQ(-1, first_difference(std::span(server.buf).subspan(4096, 8192),
                                   std::span(client.buf).first(8192)));
    EXPECT_EQ(-1, first_difference(std::span(client.buf).subspan(size / 2, 8192),
                                   std::span(client.buf).first(8192)));
    // Type 2 by a WR of the server's QP, zero based.
    viaduct::MemoryWindow w2(server_->pd, viaduct::MwType::Type2);
    const std::uint32_t s2 = viaduct::with_key(w2.stag(), 0x32);
    auto range = region->sge(65536, 4096);
    server.qp.post_send(viaduct::SendWr{.wr_id = 32,
                                        .opcode = viaduct::SendOp::BindWindow,
                                        .sge = {&range, 1},
                                        .remote_stag = s2,
                                        .fast_reg_access = viaduct::access::remote_write |
                                                           viaduct::access::zero_based});
    EXPECT_EQ(viaduct::WcOpcode::BindWindow, server.next().opcode);
    auto src2 = client.mr.sge(100, 4000);
    client.qp.post_send(viaduct::SendWr{.wr_id = 33,
                                        .opcode = viaduct::SendOp::RdmaWrite,
                                        .sge = {&src2, 1},
                                        .remote_addr = 96,
                                        .remote_stag = s2});
    client.next();
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 34});
    client.qp.post_send(viaduct::SendWr{
        .wr_id = 35, .opcode = viaduct::SendOp::SendWithInvalidate, .remote_stag = s2});
    client.next();
    viaduct::Completion rc = server.next();
    EXPECT_TRUE(rc.has_invalidated());
    EXPECT_EQ(s2, rc.invalidated_stag);
    EXPECT_EQ(-1, first_difference(std::span(server.buf).subspan(65536 + 96, 4000),
                                   std::span(client.buf).subspan(100, 4000)));
    // The type-1 window, bound by a call, holds its region: dropping the
    // MemoryRegion leaves it registered until the window lets go.
    region.reset();
    auto src3 = client.mr.sge(200, 100);
    client.qp.post_send(viaduct::SendWr{.wr_id = 36,
                                        .opcode = viaduct::SendOp::RdmaWrite,
                                        .sge = {&src3, 1},
                                        .remote_addr = base + 4096,
                                        .remote_stag = s1});
    client.next();
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 37});
    client.qp.post_send(viaduct::SendWr{.wr_id = 38, .opcode = viaduct::SendOp::Send});
    client.next();
    server.next();
    EXPECT_EQ(-1, first_difference(std::span(server.buf).subspan(4096, 100),
                                   std::span(client.buf).subspan(200, 100)));
    w1.unbind();
    EXPECT_EQ(3u, w1.stag() & 0xffu);

    conn.disconnect();
    client_->expect(CmEventType::Disconnected);
    server_->expect(CmEventType::Disconnected);
}

TEST_F(LiveCm, BadArguments) {
    auto expect_error = [](int err, const char *what, auto &&fn) {
        try {
            fn();
            ADD_FAILURE() << "no error; expected one saying '" << what << "'";
        } catch (const viaduct::Error &e) {
            EXPECT_EQ(err, e.errnum()) << e.what();
            EXPECT_NE(nullptr, std::strstr(e.what(), what)) << e.what();
        }
    };
    ConnectionId conn(client_->channel);
    std::vector<std::byte> pd(viaduct::cm_private_data_max_enhanced + 1);
    ConnectionOptions o;
    o.private_data = pd;
    expect_error(EINVAL, "509 bytes of private data, at most 508",
                 [&] { conn.connect(client_->qp, addr_, port_, o); });
    pd.resize(viaduct::cm_private_data_max + 1);
    o.private_data = pd;
    o.mpa_v1 = true;
    expect_error(EINVAL, "513 bytes of private data, at most 512",
                 [&] { conn.connect(client_->qp, addr_, port_, o); });
    expect_error(EINVAL, "not an IPv4 or IPv6 address",
                 [&] { conn.connect(client_->qp, "vd.example", port_); });
    expect_error(EINVAL, "any-address", [&] { conn.connect(client_->qp, "0.0.0.0", port_); });
    expect_error(EINVAL, "port 0", [&] { conn.connect(client_->qp, addr_, 0); });
    expect_error(EINVAL, "CONNECT_REQUEST", [&] { conn.accept(client_->qp); });
    expect_error(EINVAL, "CONNECT_REQUEST", [&] { conn.reject(); });
    expect_error(EINVAL, "not a connection", [&] { conn.disconnect(); });
    expect_error(EINVAL, "CONNECT_REQUEST", [&] { listener_->accept(server_->qp); });
    expect_error(EINVAL, "used for one thing", [&] { listener_->listen(addr_, 0); });
    expect_error(EADDRNOTAVAIL, "not one of the device's",
                 [&] { ConnectionId(client_->channel).listen("127.0.0.1", 0); });

    // A request's reply is limited by the request's revision.
    conn.connect(client_->qp, addr_, port_);
    CmEvent req = server_->expect(CmEventType::ConnectRequest);
    ConnectionId id = req.connection();
    pd.resize(viaduct::cm_private_data_max_enhanced + 1);
    expect_error(EINVAL, "509 bytes of private data", [&] { id.accept(server_->qp, pd); });
    expect_error(EINVAL, "509 bytes of private data", [&] { id.reject(pd); });
    expect_error(EINVAL, "used for one thing", [&] { conn.connect(client_->qp, addr_, port_); });

    // A QP that is not Idle.
    id.accept(server_->qp);
    client_->expect(CmEventType::Established);
    ConnectionId again(client_->channel);
    try {
        again.connect(client_->qp, addr_, port_);
        ADD_FAILURE() << "connected a QP in RTS";
    } catch (const viaduct::Error &e) {
        // In RTS and taken by another id: either is the kernel's answer.
        EXPECT_TRUE(e.errnum() == EINVAL || e.errnum() == EBUSY) << e.what();
        EXPECT_TRUE(std::strstr(e.what(), "Idle") || std::strstr(e.what(), "another connection"))
            << e.what();
    }

    ConnectionId moved = std::move(again);
    expect_error(EBADF, "moved from", [&] { again.handle(); });
}

namespace {

// A connected pair of the application's own TCP sockets on @addr.
std::pair<viaduct::detail::FileDescriptor, viaduct::detail::FileDescriptor>
tcp_pair(const std::string &addr) {
    viaduct::detail::FileDescriptor l(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    viaduct::detail::FileDescriptor c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    ::inet_pton(AF_INET, addr.c_str(), &sin.sin_addr);
    socklen_t len = sizeof(sin);
    if (l.get() < 0 || c.get() < 0 || ::bind(l.get(), reinterpret_cast<sockaddr *>(&sin), len) ||
        ::listen(l.get(), 1) || ::getsockname(l.get(), reinterpret_cast<sockaddr *>(&sin), &len) ||
        ::connect(c.get(), reinterpret_cast<sockaddr *>(&sin), len))
        throw std::runtime_error(std::string("tcp pair: ") + std::strerror(errno));
    viaduct::detail::FileDescriptor a(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (a.get() < 0)
        throw std::runtime_error(std::string("accept: ") + std::strerror(errno));
    return {std::move(a), std::move(c)};
}

} // namespace

// IT-API's order: the conversion initiator hands its last streaming-mode
// message to the conversion and answers the MPA request; the responder
// reads the message, then converts as the MPA initiator. Each descriptor
// is gone afterwards; a shared one is refused and left alone.
TEST_F(LiveCm, ConvertSocketSendsTheLastMessageAndTakesTheDescriptor) {
    if (!(server_->dev.attributes().caps & VIADUCT_DEV_CAP_CONVERT_DATA))
        GTEST_SKIP() << "the module cannot carry data with a conversion";
    auto [sfd, cfd] = tcp_pair(addr_);
    ConnectionId sconn(server_->channel, 1), cconn(client_->channel, 2);

    int dup_fd = ::dup(cfd.get());
    ASSERT_LE(0, dup_fd);
    try {
        cconn.convert_socket(cfd.get(), client_->qp, true);
        ADD_FAILURE() << "converted a dup()ed socket";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(EBUSY, e.errnum()) << e.what();
        EXPECT_NE(nullptr, std::strstr(e.what(), "shared")) << e.what();
    }
    ::close(dup_fd);
    EXPECT_NE(-1, ::fcntl(cfd.get(), F_GETFD));

    auto msg = bytes("the last streaming-mode message");
    viaduct::SocketConversion carry;
    carry.last_message = msg;
    sconn.convert_socket(sfd.get(), server_->qp, false, {}, carry);
    EXPECT_EQ(-1, ::fcntl(sfd.release(), F_GETFD)); // closed by the conversion
    std::string got(msg.size(), '\0');
    std::size_t n = 0;
    while (n < got.size()) {
        ssize_t r = ::read(cfd.get(), got.data() + n, got.size() - n);
        ASSERT_LT(0, r) << std::strerror(errno);
        n += static_cast<std::size_t>(r);
    }
    EXPECT_EQ("the last streaming-mode message", got);
    cconn.convert_socket(cfd.get(), client_->qp, true);
    EXPECT_EQ(-1, ::fcntl(cfd.release(), F_GETFD));

    CmEvent sest = server_->expect(CmEventType::Established);
    EXPECT_EQ(sconn.handle(), sest.handle());
    CmEvent cest = client_->expect(CmEventType::Established);
    EXPECT_EQ(cconn.handle(), cest.handle());
    EXPECT_EQ(QpState::Rts, server_->qp.query().state);
    EXPECT_EQ(QpState::Rts, client_->qp.query().state);
    cconn.disconnect();
    server_->expect(CmEventType::Disconnected);
    client_->expect(CmEventType::Disconnected);
}

// A request handed to another context's listener arrives there as it came,
// and is gone here; a hand-off to nobody leaves it where it was.
TEST_F(LiveCm, HandoffMovesTheRequestToAnotherListener) {
    if (!(server_->dev.attributes().caps & VIADUCT_DEV_CAP_CM_HANDOFF))
        GTEST_SKIP() << "the module cannot hand off requests";
    Side other(name_);
    ConnectionId other_listener(other.channel, 0x0747);
    std::uint16_t other_port = other_listener.listen(addr_, 0);

    ConnectionId conn(client_->channel);
    auto hello = bytes("to whoever serves it");
    ConnectionOptions o;
    o.private_data = hello;
    conn.connect(client_->qp, addr_, port_, o);
    CmEvent req = server_->expect(CmEventType::ConnectRequest);
    ConnectionId id = req.connection();
    try {
        id.handoff("", 9);
        ADD_FAILURE() << "handed off to nobody";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(ENOENT, e.errnum()) << e.what();
        EXPECT_NE(nullptr, std::strstr(e.what(), "no listener")) << e.what();
    }
    id.handoff(addr_, other_port);
    EXPECT_EQ(0u, id.handle());
    req.ack(); // nothing to acknowledge any more: the kernel id is gone
    try {
        id.accept(server_->qp);
        ADD_FAILURE() << "accepted a request handed off";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(EINVAL, e.errnum()) << e.what();
        EXPECT_NE(nullptr, std::strstr(e.what(), "handed off")) << e.what();
    }

    CmEvent moved = other.expect(CmEventType::ConnectRequest);
    EXPECT_EQ(other_listener.handle(), moved.listen_handle());
    EXPECT_EQ(0x0747u, moved.user_data());
    EXPECT_EQ("to whoever serves it", text(moved.private_data()));
    EXPECT_EQ(port_, moved.local().port);
    moved.connection().accept(other.qp);
    client_->expect(CmEventType::Established);
    other.expect(CmEventType::Established);
    EXPECT_EQ(QpState::Rts, other.qp.query().state);
    EXPECT_NE(QpState::Rts, server_->qp.query().state);
    conn.disconnect();
    other.expect(CmEventType::Disconnected);
    client_->expect(CmEventType::Disconnected);
}

namespace {

// The receiving end of a moderated-arming test: a receive CQ on a
// completion channel, a send CQ of its own, and a QP over both.
struct ThresholdSide {
    explicit ThresholdSide(Side &side)
        : channel(side.dev),
          recv_cq(side.dev, viaduct::CqConfig{.entries = 64, .channel = &channel}),
          send_cq(side.dev, 16), qp(side.pd, config(send_cq, recv_cq)) {}

    static viaduct::QpConfig config(const viaduct::CompletionQueue &scq,
                                    const viaduct::CompletionQueue &rcq) {
        viaduct::QpConfig c;
        c.send_cq = &scq;
        c.recv_cq = &rcq;
        return c;
    }

    viaduct::CompletionChannel channel;
    viaduct::CompletionQueue recv_cq;
    viaduct::CompletionQueue send_cq;
    QueuePair qp;
};

} // namespace

// An arm with a threshold of N wakes a waiter once for N successful
// completions: N-1 raise nothing, the Nth one event. ARM_CQ serialises with
// the kernel's pushes, so once a second arm returned, an event fired by an
// earlier completion would be on the channel already: the "nothing yet" is
// a fact, not a timeout.
TEST_F(LiveCm, ThresholdArmWakesOnceForNCompletions) {
    constexpr std::uint32_t n = 8;
    ASSERT_TRUE(server_->dev.attributes().caps & VIADUCT_DEV_CAP_CQ_THRESHOLD);
    ThresholdSide server(*server_);
    Endpoint client(*client_, 4096, false);
    [[maybe_unused]] auto [conn, accepted] =
        connect_endpoints(*client_, client, *server_, server, addr_, port_);

    for (std::uint32_t i = 0; i < n; ++i)
        server.qp.post_recv(viaduct::RecvWr{.wr_id = i});
    server.recv_cq.arm_threshold(n);
    for (std::uint32_t i = 0; i + 1 < n; ++i) {
        client.qp.post_send(viaduct::SendWr{.wr_id = 100 + i});
        EXPECT_EQ(100 + i, client.next().wr_id);
    }
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (server.recv_cq.unread() < n - 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    ASSERT_EQ(n - 1, server.recv_cq.unread());
    server.recv_cq.arm_threshold(n);
    EXPECT_FALSE(server.channel.wait(0ms)) << n - 1 << " completions fired an arm for " << n;

    client.qp.post_send(viaduct::SendWr{.wr_id = 100 + n - 1});
    auto ev = server.channel.wait(10s);
    ASSERT_TRUE(ev) << "no event for " << n << " completions";
    EXPECT_EQ(server.recv_cq.handle(), ev->cq_handle);
    EXPECT_EQ(n, server.recv_cq.unread());
    EXPECT_FALSE(server.channel.wait(0ms)) << "one arm, two events";
    std::array<viaduct::Completion, n> wc{};
    ASSERT_EQ(n, server.recv_cq.poll(wc));
    for (std::uint32_t i = 0; i < n; ++i) {
        EXPECT_EQ(i, wc[i].wr_id);
        EXPECT_TRUE(wc[i].ok()) << viaduct::to_string(wc[i].status);
    }
    EXPECT_EQ(100 + n - 1, client.next().wr_id);

    // An arm that finds enough unread fires from ARM_CQ itself.
    server.qp.post_recv(viaduct::RecvWr{.wr_id = 50});
    client.qp.post_send(viaduct::SendWr{.wr_id = 150});
    EXPECT_EQ(150u, client.next().wr_id);
    ASSERT_TRUE(server.recv_cq.wait_unread(1, 10s));
    server.recv_cq.arm_threshold(1);
    EXPECT_TRUE(server.channel.wait(0ms)) << "an arm for 1 with 1 unread did not fire";
    ASSERT_EQ(1u, server.recv_cq.poll(std::span(wc).first(1)));
    EXPECT_EQ(50u, wc[0].wr_id);

    conn.disconnect();
    client_->expect(CmEventType::Disconnected);
    server_->expect(CmEventType::Disconnected);
}

// wait_unread() while the peer's Sends arrive at any moment, so that
// completions race the arm: no event is lost (each wait ends long before
// its deadline is even near), and every completion arrives, in order.
TEST_F(LiveCm, ThresholdWaitLosesNoCompletionRacingTheArm) {
    constexpr std::uint32_t total = 48;
    ThresholdSide server(*server_);
    Endpoint client(*client_, 4096, false);
    [[maybe_unused]] auto [conn, accepted] =
        connect_endpoints(*client_, client, *server_, server, addr_, port_);

    for (std::uint32_t batch : {1u, 3u, 7u}) {
        SCOPED_TRACE("batches of " + std::to_string(batch));
        for (std::uint32_t i = 0; i < total; ++i)
            server.qp.post_recv(viaduct::RecvWr{.wr_id = i});
        std::thread sender([&] {
            for (std::uint32_t i = 0; i < total; ++i) {
                client.qp.post_send(viaduct::SendWr{.wr_id = i});
                if (i % 5 == 0)
                    std::this_thread::yield();
            }
        });
        std::uint32_t got = 0;
        std::array<viaduct::Completion, 16> wc{};
        while (got < total) {
            const std::uint32_t want = std::min(batch, total - got);
            if (!server.recv_cq.wait_unread(want, 30s)) {
                ADD_FAILURE() << "no wakeup for " << want << " completions after " << got
                              << ": an event was lost";
                break;
            }
            const std::size_t k = server.recv_cq.poll(wc);
            ASSERT_LE(want, k);
            for (std::size_t i = 0; i < k; ++i) {
                EXPECT_TRUE(wc[i].ok()) << viaduct::to_string(wc[i].status);
                EXPECT_EQ(got + i, wc[i].wr_id);
            }
            got += static_cast<std::uint32_t>(k);
        }
        sender.join();
        for (std::uint32_t i = 0; i < total; ++i)
            EXPECT_EQ(i, client.next().wr_id);
        EXPECT_EQ(total, got);
    }

    conn.disconnect();
    client_->expect(CmEventType::Disconnected);
    server_->expect(CmEventType::Disconnected);
}
