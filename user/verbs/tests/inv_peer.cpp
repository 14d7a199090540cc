// SPDX-License-Identifier: GPL-2.0
//
// verbs_inv_peer: the responder for verbs_test.sh's Send with Invalidate
// checks. libibverbs has no fast registration, so a verbs program cannot
// make an STag that a peer may invalidate; this program, on libviaduct's
// native API, can. It accepts one connection and waits for the
// initiator's first message: an MPA responder sends nothing before that
// (RFC 5044, 7.1.2), and siw as initiator fails a connection whose first
// FPDU comes with the MPA reply. It then fast-registers VI_PAGES pages of
// its buffer under a fresh STag and sends STag and address to the
// initiator. The initiator (verbs_ops inv, through the verbs face or on
// siw) RDMA-Writes a pattern there and ends with a Send with Invalidate
// of that STag. This program checks the
// receive's completion (invalidated, that STag), the written bytes, that
// the region registers again (so it was INVALID), and answers with one
// byte: 1 if every check held.
//
//   verbs_inv_peer ADDR PORT
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <viaduct/viaduct.hpp>

#include "../../../selftests/verbs_inv.h"

using namespace std::chrono_literals;

namespace {

int failures;

void check(bool cond, const char *what) {
    std::printf("#   %s: %s\n", cond ? "ok" : "FAILED", what);
    std::fflush(stdout);
    if (!cond)
        ++failures;
}

viaduct::Completion next(viaduct::CompletionQueue &cq) {
    std::array<viaduct::Completion, 1> wc{};
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (cq.poll(wc) == 1)
            return wc[0];
        std::this_thread::sleep_for(1ms);
    }
    throw viaduct::Error(ETIMEDOUT, "no completion within 20 s");
}

viaduct::CmEvent expect(viaduct::CmChannel &ch, viaduct::CmEventType type) {
    auto ev = ch.read(20s);
    if (!ev)
        throw viaduct::Error(ETIMEDOUT, std::string("no CM event, want ") + to_string(type));
    if (ev->type() != type)
        throw viaduct::Error(EPROTO, std::string("CM event ") + to_string(ev->type()) + ", want " +
                                         to_string(type));
    return std::move(*ev);
}

int run(const char *addr, std::uint16_t port) {
    const auto devs = viaduct::Device::list();
    if (devs.empty())
        throw viaduct::Error(ENODEV, "no viaduct device");
    viaduct::Device dev = viaduct::Device::open(devs.front().name);
    viaduct::CmChannel ch(dev);
    viaduct::ProtectionDomain pd(dev);
    viaduct::CompletionQueue cq(dev, viaduct::CqConfig{.entries = 16});
    viaduct::QpConfig qc;
    qc.send_cq = &cq;
    qc.recv_cq = &cq;
    qc.access = VIADUCT_QP_ACCESS_REMOTE_WRITE | VIADUCT_QP_ACCESS_REMOTE_READ;
    viaduct::QueuePair qp(pd, qc);
    const std::uint32_t page = 4096;
    std::vector<std::byte> buf((VI_PAGES + 1) * page);
    viaduct::MemoryRegion mr(pd, buf.data(), buf.size(), viaduct::access::local_write);
    // the buffer need not be page-aligned: its pages may be one more
    viaduct::FastRegRegion fr(pd, VI_PAGES + 1);
    const std::uint32_t stag = viaduct::with_key(fr.stag(), 0x5a);
    auto list = mr.sge(0, VI_PAGES * page);
    const viaduct::SendWr reg{.wr_id = 1,
                              .opcode = viaduct::SendOp::FastRegister,
                              .sge = {&list, 1},
                              .remote_addr = VI_IOVA,
                              .remote_stag = stag,
                              .fast_reg_access =
                                  viaduct::access::local_write | viaduct::access::remote_write};

    viaduct::ConnectionId listener(ch, 1);
    listener.listen(addr, port);
    std::printf("# listening on %s port %u\n", addr, port);
    std::fflush(stdout);
    viaduct::CmEvent req = expect(ch, viaduct::CmEventType::ConnectRequest);
    viaduct::ConnectionId conn = req.connection();
    req.ack();
    qp.post_recv(viaduct::RecvWr{.wr_id = 5, .sge = std::array{mr.sge(VI_PAGES * page + 64, 64)}});
    qp.post_recv(viaduct::RecvWr{.wr_id = 2, .sge = std::array{mr.sge(VI_PAGES * page, 64)}});
    conn.accept(qp);
    expect(ch, viaduct::CmEventType::Established).ack();
    viaduct::Completion wc = next(cq);
    check(wc.ok() && wc.wr_id == 5 && wc.is_recv(), "the initiator's first message");

    // A connected QP executes the registration; then the initiator learns
    // the STag (into the receive it posted before connecting).
    qp.post_send(reg);
    wc = next(cq);
    if (!wc.ok())
        std::printf("#   status: %s\n", viaduct::to_string(wc.status));
    check(wc.ok() && wc.opcode == viaduct::WcOpcode::FastRegister, "fast registration");
    vi_offer offer{};
    offer.stag = stag;
    offer.iova = VI_IOVA;
    offer.len = VI_PAGES * page;
    std::array<std::byte, 64> out{};
    std::memcpy(out.data(), &offer, sizeof(offer));
    viaduct::MemoryRegion omr(pd, out.data(), out.size(), 0);
    auto osge = omr.sge(0, sizeof(offer));
    qp.post_send(viaduct::SendWr{.wr_id = 4, .sge = {&osge, 1}});
    // the offer's completion and the Send with Invalidate, in either order
    viaduct::Completion sent = next(cq);
    wc = next(cq);
    if (sent.wr_id == 2)
        std::swap(sent, wc);
    check(sent.ok() && sent.wr_id == 4, "the offer sent");
    if (!wc.ok())
        std::printf("#   status: %s, Terminate 0x%x\n", viaduct::to_string(wc.status),
                    wc.vendor_err);
    check(wc.ok() && wc.wr_id == 2 && wc.is_recv(), "the Send with Invalidate arrived");
    check(wc.has_invalidated() && wc.invalidated_stag == stag,
          "its completion names the invalidated STag");
    bool same = true;
    for (std::uint32_t i = 0; i < VI_PAGES * page; ++i)
        same = same && buf[i] == static_cast<std::byte>(vi_pattern(i));
    check(same, "the RDMA Write through the STag placed every byte");
    qp.post_send(reg); // registers only in an INVALID region
    wc = next(cq);
    check(wc.ok() && wc.opcode == viaduct::WcOpcode::FastRegister,
          "the region registers again: the invalidation took");

    out[0] = std::byte{static_cast<unsigned char>(failures == 0)};
    auto rsge = omr.sge(0, 1);
    qp.post_send(viaduct::SendWr{.wr_id = 3, .sge = {&rsge, 1}});
    wc = next(cq);
    // The initiator checks that the verdict arrived. Having it, it may end
    // the connection (inv+local: its QP fails and sends a Terminate) before
    // the transmit work here retired the Send: then the Terminate blames
    // the oldest WR in flight, this one, or the close flushes it.
    using S = viaduct::WcStatus;
    bool ended = wc.status == S::RemoteOperationError || wc.status == S::RemoteAccessError ||
                 wc.status == S::RemoteInvalidRequest || wc.status == S::RemoteTerminated ||
                 wc.status == S::Flushed;
    if (!wc.ok())
        std::printf("#   verdict: %s, Terminate 0x%x\n", viaduct::to_string(wc.status),
                    wc.vendor_err);
    check(wc.wr_id == 3 && (wc.ok() || ended), "the verdict sent");
    // The initiator disconnects (or, with inv+local, its QP fails).
    if (auto ev = ch.read(20s))
        ev->ack();
    return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
        return 2;
    }
    try {
        return run(argv[1], static_cast<std::uint16_t>(std::atoi(argv[2])));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "verbs_inv_peer: %s\n", e.what());
        return 1;
    }
}
