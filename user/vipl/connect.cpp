// SPDX-License-Identifier: GPL-2.0
//
// VIPL connections over viaduct's connection manager (Documentation/vipl.rst,
// "Rendezvous"). VIPL has no ports: a request names a host and a
// discriminator. A waiting process listens on the first free port of the
// discriminator's probe sequence (a hash into a fixed range, then the next
// ports); a client tries the sequence in order and carries the
// discriminator in the MPA private data, and a listener whose process does
// not wait on it answers NoMatch, which sends the client to the next port.
// Each NIC handle has a thread reading its CM channel and asynchronous
// events.
#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <unistd.h>

#include "vipl_api.hpp"

namespace vipl {

using namespace std::chrono_literals;

namespace {

// How long the connection manager may take to report what it must report
// (an accepted connection established, a disconnect done): a bound for a
// lost event, never a measure of speed, so generous for a loaded host.
constexpr auto cm_bound = 120s;

struct NetAddr {
    std::vector<std::uint8_t> host, disc;
};

std::optional<NetAddr> read_addr(const VIP_NET_ADDRESS *a) {
    if (!a || a->DiscriminatorLen > max_discriminator || a->HostAddressLen > 16)
        return std::nullopt;
    const std::uint8_t *p = a->HostAddress;
    NetAddr r;
    r.host.assign(p, p + a->HostAddressLen);
    r.disc.assign(p + a->HostAddressLen, p + a->HostAddressLen + a->DiscriminatorLen);
    return r;
}

void write_addr(VIP_NET_ADDRESS *a, const std::vector<std::uint8_t> &host,
                const std::vector<std::uint8_t> &disc) {
    a->HostAddressLen = static_cast<VIP_UINT16>(host.size());
    a->DiscriminatorLen = static_cast<VIP_UINT16>(disc.size());
    std::copy(host.begin(), host.end(), a->HostAddress);
    std::copy(disc.begin(), disc.end(), a->HostAddress + host.size());
}

bool is_local(const Nic &nic, const std::vector<std::uint8_t> &host) {
    return host.size() == 4 && std::equal(host.begin(), host.end(), nic.addr.begin());
}

std::string host_string(const std::vector<std::uint8_t> &host) {
    char buf[INET_ADDRSTRLEN] = "";
    if (host.size() == 4)
        inet_ntop(AF_INET, host.data(), buf, sizeof(buf));
    return buf;
}

Msg msg_of(const Vi &vi, MsgKind kind) {
    Msg m;
    m.kind = kind;
    m.reliability = vi.attrs.ReliabilityLevel;
    m.max_transfer =
        static_cast<std::uint32_t>(std::min<VIP_ULONG>(vi.attrs.MaxTransferSize, 0xffffffffUL));
    m.rdma_write = vi.attrs.EnableRdmaWrite;
    m.rdma_read = vi.attrs.EnableRdmaRead;
    return m;
}

void attrs_of(const Msg &m, VIP_VI_ATTRIBUTES *a) {
    if (!a)
        return;
    *a = VIP_VI_ATTRIBUTES{};
    a->ReliabilityLevel = m.reliability;
    a->MaxTransferSize = m.max_transfer;
    a->EnableRdmaWrite = m.rdma_write;
    a->EnableRdmaRead = m.rdma_read;
}

// The attribute rule of VipConnectAccept and of peer-to-peer: the levels and
// the transfer sizes must be equal (QoS is not defined).
VIP_RETURN conflict(const Vi &vi, const Msg &m) {
    if (m.reliability != vi.attrs.ReliabilityLevel)
        return VIP_INVALID_RELIABILITY_LEVEL;
    if (m.max_transfer != std::min<VIP_ULONG>(vi.attrs.MaxTransferSize, 0xffffffffUL))
        return VIP_INVALID_MTU;
    return VIP_SUCCESS;
}

viaduct::ConnectionOptions options(const Nic &nic, const std::vector<std::byte> &pd) {
    viaduct::ConnectionOptions o;
    o.private_data = pd;
    o.ord = std::min(nic.attr.limits.max_ord, 8u);
    o.ird = std::min(nic.attr.limits.max_ird, 8u);
    return o;
}

void forget(Nic &nic, const std::shared_ptr<Conn> &c) {
    std::lock_guard<std::mutex> g(nic.mu);
    auto it = nic.conns.find(c->handle);
    if (it != nic.conns.end() && it->second == c)
        nic.conns.erase(it);
}

// Adds @w to a listener of this NIC on one of its discriminator's ports,
// listening on the first free one if none is there yet. Under nic.mu.
bool add_waiter(Nic &nic, const std::shared_ptr<Waiter> &w) {
    const std::uint16_t base = port_base();
    for (unsigned p = 0; p < port_probes; p++) {
        auto it = nic.listeners.find(rendezvous_port(w->disc, p, base));
        if (it != nic.listeners.end()) {
            it->second->waiters.push_back(w);
            return true;
        }
    }
    for (unsigned p = 0; p < port_probes; p++) {
        const std::uint16_t port = rendezvous_port(w->disc, p, base);
        auto l = std::make_shared<Listener>();
        try {
            l->id.emplace(*nic.cm, 0);
            l->id->listen(nic.addr_str, port);
        } catch (const viaduct::Error &e) {
            if (e.errnum() == EADDRINUSE)
                continue; // another process's: the next port
            return false;
        }
        l->port = port;
        l->waiters.push_back(w);
        nic.listeners[port] = l;
        return true;
    }
    return false;
}

// Under nic.mu. A listener nobody waits on is closed: a request to it
// finds nothing listening, as the guide's "no server waiting" says.
void remove_waiter(Nic &nic, const std::shared_ptr<Waiter> &w) {
    for (auto it = nic.listeners.begin(); it != nic.listeners.end(); ++it) {
        auto &ws = it->second->waiters;
        auto f = std::find(ws.begin(), ws.end(), w);
        if (f == ws.end())
            continue;
        ws.erase(f);
        // kept while a request of it is unanswered (Conn::listener)
        if (ws.empty() && it->second.use_count() == 1)
            nic.listeners.erase(it);
        return;
    }
}

// A request was answered: its listener goes if nobody else needs it.
void release_listener(Nic &nic, Conn &c) {
    std::lock_guard<std::mutex> g(nic.mu);
    auto l = std::move(c.listener);
    if (!l)
        return;
    auto it = nic.listeners.find(l->port);
    if (it != nic.listeners.end() && it->second == l && l->waiters.empty() && l.use_count() == 2)
        nic.listeners.erase(it);
}

void reject(viaduct::ConnectionId &id, MsgKind kind, std::uint8_t reason = 0) {
    Msg m;
    m.kind = kind;
    m.reason = reason;
    try {
        id.reject(encode(m));
    } catch (const viaduct::Error &) {
        // the initiator is gone: nothing to tell
    }
}

} // namespace

std::optional<CmEv> Conn::next(Clock::time_point deadline) {
    std::unique_lock<std::mutex> g(mu);
    if (!cv.wait_until(g, deadline, [&] { return !events.empty(); }))
        return std::nullopt;
    CmEv ev = std::move(events.front());
    events.pop_front();
    return ev;
}

namespace {

void on_request(Nic &nic, viaduct::CmEvent &ev) {
    viaduct::ConnectionId id = ev.connection();
    auto msg = decode(ev.private_data());
    std::unique_lock<std::mutex> g(nic.mu);
    std::shared_ptr<Listener> l;
    for (auto &[port, li] : nic.listeners)
        if (li->id && li->id->handle() == ev.listen_handle())
            l = li;
    if (!l || !msg || (msg->kind != MsgKind::Request && msg->kind != MsgKind::PeerRequest)) {
        reject(id, MsgKind::NoMatch);
        return;
    }
    // the address the request names as its sender is the one it came from
    std::array<std::uint8_t, 4> from{};
    const auto src = ev.peer();
    if (msg->src_host.size() != 4 || src.family != AF_INET ||
        inet_pton(AF_INET, src.address.c_str(), from.data()) != 1 ||
        !std::equal(from.begin(), from.end(), msg->src_host.begin())) {
        reject(id, MsgKind::NoMatch);
        return;
    }
    const bool peer = msg->kind == MsgKind::PeerRequest;
    for (auto &w : l->waiters) {
        if (w->done || w->peer != peer || w->disc != msg->target)
            continue;
        if (peer && (w->remote_host != msg->src_host || w->remote_disc != msg->src_disc))
            continue;
        auto c = std::make_shared<Conn>();
        c->nic = &nic;
        c->handle = ev.handle();
        c->request = *msg;
        c->listener = l;
        w->msg = *msg;
        w->done = true;
        if (peer) {
            // the passive side of a rendezvous answers at once
            if (VIP_RETURN r = conflict(*w->vi, *msg)) {
                reject(id, MsgKind::Conflict, static_cast<std::uint8_t>(r));
                w->result = r;
                nic.cv.notify_all();
                return;
            }
            c->vi = w->vi;
            c->id.emplace(std::move(id));
            nic.conns[c->handle] = c;
            try {
                auto pd = encode(msg_of(*w->vi, MsgKind::Accept));
                c->id->accept(*w->vi->qp, options(nic, pd));
            } catch (const viaduct::Error &) {
                nic.conns.erase(c->handle);
                w->result = VIP_NOT_REACHABLE;
                nic.cv.notify_all();
                return;
            }
        } else {
            c->id.emplace(std::move(id));
            nic.conns[c->handle] = c;
        }
        w->conn = c;
        nic.cv.notify_all();
        return;
    }
    reject(id, MsgKind::NoMatch);
}

void on_event(Nic &nic, viaduct::CmEvent &ev) {
    std::shared_ptr<Conn> c;
    {
        std::lock_guard<std::mutex> g(nic.mu);
        auto it = nic.conns.find(ev.handle());
        if (it == nic.conns.end())
            return;
        c = it->second;
        if (ev.type() == viaduct::CmEventType::Disconnected)
            nic.conns.erase(it);
    }
    const auto pd = ev.private_data();
    {
        std::lock_guard<std::mutex> g(c->mu);
        c->events.push_back({ev.type(), ev.status(), std::vector<std::byte>(pd.begin(), pd.end())});
    }
    c->cv.notify_all();
    if (ev.type() != viaduct::CmEventType::Disconnected || !c->established || c->local_close)
        return;
    // the peer went: Connection Lost, and the VI is in Error until
    // VipDisconnect
    if (auto vi = c->vi.lock()) {
        fail_vi(*vi, true);
        VIP_ERROR_DESCRIPTOR ed{};
        ed.ViHandle = vi.get();
        ed.ResourceCode = VIP_RESOURCE_VI;
        ed.ErrorCode = VIP_ERROR_CONN_LOST;
        nic.raise(ed);
    }
}

// The Terminate code (layer << 12 | error type << 8 | code, as
// viaduct_async_event.detail carries it) of an untagged message for which
// no receive was posted: layer DDP, untagged buffer error, invalid MSN -
// no buffer available.
constexpr std::uint32_t term_no_recv_buffer = 0x1202;

void on_async(Nic &nic, const viaduct::AsyncEvent &ae) {
    VIP_ERROR_DESCRIPTOR ed{};
    Vi *vi = nullptr;
    switch (ae.type) {
    case viaduct::AsyncEventType::QpAccessError:
        ed.ErrorCode = VIP_ERROR_RDMAW_PROT;
        break;
    case viaduct::AsyncEventType::QpRequestError:
        ed.ErrorCode = VIP_ERROR_POST_DESC;
        break;
    case viaduct::AsyncEventType::QpFatal:
        // A Send that found no receive descriptor: the NIC dropped it
        // (DDP untagged, "invalid MSN - no buffer", RFC 5041 5.2).
        ed.ErrorCode =
            ae.detail == term_no_recv_buffer ? VIP_ERROR_RECVQ_EMPTY : VIP_ERROR_RDMA_TRANSPORT;
        break;
    case viaduct::AsyncEventType::CqError:
    case viaduct::AsyncEventType::DeviceFatal:
        ed.ErrorCode = VIP_ERROR_CATASTROPHIC;
        break;
    default:
        return; // established, drained: nothing VIPL reports
    }
    if (ae.type != viaduct::AsyncEventType::CqError &&
        ae.type != viaduct::AsyncEventType::DeviceFatal) {
        // The VI cannot go while vi_mu is held. An event read just before
        // its VI was destroyed may find another VI under the handle: the
        // serial tells.
        std::shared_lock<std::shared_mutex> g(nic.vi_mu);
        auto it = nic.vis.find(ae.handle);
        if (it == nic.vis.end() || it->second->serial != ae.user_data)
            return;
        vi = it->second;
        vi->error_latched = true;
    }
    ed.ViHandle = vi;
    ed.ResourceCode = vi ? VIP_RESOURCE_VI : VIP_RESOURCE_NIC;
    nic.raise(ed);
}

} // namespace

void Nic::run() {
    for (;;) {
        pollfd fds[3] = {{cm->fd(), POLLIN, 0}, {dev->fd(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
        if (::poll(fds, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        if (fds[2].revents)
            return;
        try {
            while (auto ev = cm->read(0ms)) {
                if (ev->type() == viaduct::CmEventType::ConnectRequest)
                    on_request(*this, *ev);
                else
                    on_event(*this, *ev);
            }
            while (auto ae = dev->read_event(0ms))
                on_async(*this, *ae);
        } catch (const viaduct::Error &e) {
            std::fprintf(stderr, "vipl: %s: %s\n", attr.name.c_str(), e.what());
            if (e.errnum() == ENODEV)
                return;
        }
    }
}

void close_nic(Nic &nic) {
    std::list<std::shared_ptr<Object>> children;
    {
        std::lock_guard<std::mutex> g(nic.mu);
        children.swap(nic.children);
    }
    for (auto &o : children) {
        registry().remove(o.get());
        if (o->kind == Kind::Vi) {
            auto &vi = static_cast<Vi &>(*o);
            vi.peer.cancel = true;
            vi.sq.notifier.shutdown();
            vi.rq.notifier.shutdown();
            if (vi.peer.thread.joinable())
                vi.peer.thread.join();
            std::lock_guard<std::mutex> g(vi.cm_mu);
            if (vi.conn) {
                vi.conn->local_close = true;
                vi.conn.reset();
            }
            unhook_vi(vi);
        } else if (o->kind == Kind::Cq) {
            static_cast<Cq &>(*o).notifier.shutdown();
        }
    }
    {
        std::lock_guard<std::mutex> g(nic.mu);
        // unanswered requests of VipConnectWait are handles too
        for (auto &[h, c] : nic.conns)
            registry().remove(c.get());
        nic.listeners.clear();
        nic.conns.clear();
    }
    {
        std::unique_lock<std::shared_mutex> g(nic.mem_mu);
        nic.mems.clear();
        nic.mem_gen.fetch_add(1, std::memory_order_release);
    }
    children.clear();
}

namespace {

std::shared_ptr<Nic> nic_of(VIP_NIC_HANDLE h) {
    return std::static_pointer_cast<Nic>(registry().find(h, Kind::Nic));
}
std::shared_ptr<Vi> vi_of(VIP_VI_HANDLE h) {
    return std::static_pointer_cast<Vi>(registry().find(h, Kind::Vi));
}

enum class Attempt { Done, Next };

// One connection attempt of @vi to @host's @port. Done with *ret set, or
// Next: nobody there waits on the discriminator.
Attempt attempt(Vi &vi, const std::string &host, std::uint16_t port, const Msg &req,
                Clock::time_point deadline, VIP_RETURN *ret, VIP_VI_ATTRIBUTES *remote) {
    Nic &nic = *vi.nic;
    auto c = std::make_shared<Conn>();
    c->nic = &nic;
    auto pd = encode(req);
    auto opts = options(nic, pd);
    auto left = until(deadline);
    if (deadline == Clock::time_point::max() || left > 24h)
        left = 24h;
    opts.timeout = std::max(left, 1ms);
    try {
        c->id.emplace(*nic.cm, 0);
        c->handle = c->id->handle();
        c->vi = std::static_pointer_cast<Vi>(registry().find(&vi, Kind::Vi));
        {
            std::lock_guard<std::mutex> g(nic.mu);
            nic.conns[c->handle] = c;
        }
        c->id->connect(*vi.qp, host, port, opts);
    } catch (const viaduct::Error &e) {
        forget(nic, c);
        *ret = e.errnum() == ENETUNREACH || e.errnum() == EHOSTUNREACH ? VIP_NOT_REACHABLE
               : e.errnum() == EINVAL                                  ? VIP_INVALID_STATE
                                                                       : VIP_ERROR_RESOURCE;
        return Attempt::Done;
    }
    // the kernel's own timeout ends the attempt; the margin is for a lost event
    auto ev = c->next(left == 24h ? Clock::time_point::max() : Clock::now() + left + 5s);
    if (ev && ev->type == viaduct::CmEventType::Established) {
        auto m = decode(ev->private_data);
        if (m && m->kind == MsgKind::Accept) {
            attrs_of(*m, remote);
            c->established = true;
            std::lock_guard<std::mutex> g(vi.cm_mu);
            vi.conn = c;
            *ret = VIP_SUCCESS;
            return Attempt::Done;
        }
        // not a VIPL peer
        c->local_close = true;
        forget(nic, c);
        c->id.reset();
        return Attempt::Next;
    }
    forget(nic, c);
    c->id.reset();
    if (!ev) {
        *ret = VIP_TIMEOUT;
        return Attempt::Done;
    }
    switch (ev->type) {
    case viaduct::CmEventType::Rejected: {
        auto m = decode(ev->private_data);
        if (m && m->kind == MsgKind::Reject) {
            *ret = VIP_REJECT;
            return Attempt::Done;
        }
        if (m && m->kind == MsgKind::Conflict && m->reason) {
            *ret = static_cast<VIP_RETURN>(m->reason);
            return Attempt::Done;
        }
        return Attempt::Next;
    }
    case viaduct::CmEventType::Unreachable:
        if (ev->status == -ECONNREFUSED)
            return Attempt::Next;
        *ret = ev->status == -ETIMEDOUT ? VIP_TIMEOUT : VIP_NOT_REACHABLE;
        return Attempt::Done;
    case viaduct::CmEventType::Timeout:
        *ret = VIP_TIMEOUT;
        return Attempt::Done;
    default:
        return Attempt::Next;
    }
}

// The probe sequence of @disc at @host: VIP_NO_MATCH when every port said
// no.
VIP_RETURN connect_active(Vi &vi, const NetAddr &remote, const Msg &req, Clock::time_point deadline,
                          VIP_VI_ATTRIBUTES *attrs) {
    const std::string host = host_string(remote.host);
    const std::uint16_t base = port_base();
    for (unsigned p = 0; p < port_probes; p++) {
        VIP_RETURN r = VIP_SUCCESS;
        if (attempt(vi, host, rendezvous_port(remote.disc, p, base), req, deadline, &r, attrs) ==
            Attempt::Done)
            return r;
    }
    return VIP_NO_MATCH;
}

// Waits for @w to be matched; removes it from its listener either way.
bool wait_matched(Nic &nic, const std::shared_ptr<Waiter> &w, Clock::time_point deadline,
                  const std::atomic<bool> *cancel = nullptr) {
    std::unique_lock<std::mutex> g(nic.mu);
    for (;;) {
        if (w->done || (cancel && *cancel))
            break;
        auto until_next = std::min(deadline, Clock::now() + 100ms);
        nic.cv.wait_until(g, until_next);
        if (Clock::now() >= deadline)
            break;
    }
    remove_waiter(nic, w);
    return w->done;
}

} // namespace

} // namespace vipl

using namespace vipl;

extern "C" {

VIP_RETURN VipConnectWait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout,
                          VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
                          VIP_CONN_HANDLE *ConnHandle) {
    auto nic = nic_of(NicHandle);
    auto local = read_addr(LocalAddr);
    if (!nic || !local || !RemoteAddr || !RemoteViAttribs || !ConnHandle ||
        !is_local(*nic, local->host))
        return VIP_INVALID_PARAMETER;
    auto w = std::make_shared<Waiter>();
    w->disc = local->disc;
    {
        std::lock_guard<std::mutex> g(nic->mu);
        if (!add_waiter(*nic, w))
            return VIP_ERROR_RESOURCE;
    }
    if (!wait_matched(*nic, w, deadline_of(Timeout)))
        return VIP_TIMEOUT;
    write_addr(RemoteAddr, w->msg.src_host, w->msg.src_disc);
    attrs_of(w->msg, RemoteViAttribs);
    registry().add(w->conn);
    *ConnHandle = w->conn.get();
    return VIP_SUCCESS;
}

VIP_RETURN VipConnectAccept(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle) {
    auto c = std::static_pointer_cast<Conn>(registry().find(ConnHandle, Kind::Conn));
    auto vi = vi_of(ViHandle);
    if (!c || !vi || vi->nic != c->nic)
        return VIP_INVALID_PARAMETER;
    {
        std::lock_guard<std::mutex> g(vi->cm_mu);
        try {
            if (!vi_idle(*vi))
                return VIP_INVALID_STATE;
        } catch (const viaduct::Error &) {
            return VIP_ERROR_RESOURCE;
        }
        // a conflict tells the client nothing: the server may try again
        if (VIP_RETURN r = conflict(*vi, c->request))
            return r;
        vi->pending = true;
    }
    registry().remove(ConnHandle);
    c->vi = vi;
    c->answered = true;
    VIP_RETURN ret = VIP_SUCCESS;
    try {
        auto pd = encode(msg_of(*vi, MsgKind::Accept));
        c->id->accept(*vi->qp, options(*vi->nic, pd));
        auto ev = c->next(Clock::now() + cm_bound);
        if (ev && ev->type == viaduct::CmEventType::Established) {
            c->established = true;
            std::lock_guard<std::mutex> g(vi->cm_mu);
            vi->conn = c;
        } else {
            ret = VIP_TIMEOUT; // the client gave up
        }
    } catch (const viaduct::Error &) {
        ret = VIP_TIMEOUT;
    }
    if (ret != VIP_SUCCESS) {
        forget(*vi->nic, c);
        c->id.reset();
    }
    release_listener(*vi->nic, *c);
    vi->pending = false;
    return ret;
}

VIP_RETURN VipConnectReject(VIP_CONN_HANDLE ConnHandle) {
    auto c = std::static_pointer_cast<Conn>(registry().find(ConnHandle, Kind::Conn));
    if (!c)
        return VIP_INVALID_PARAMETER;
    registry().remove(ConnHandle);
    c->answered = true;
    reject(*c->id, MsgKind::Reject); // after the client's timeout: still a success
    forget(*c->nic, c);
    c->id.reset();
    release_listener(*c->nic, *c);
    return VIP_SUCCESS;
}

VIP_RETURN VipConnectRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr,
                             VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout,
                             VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    auto vi = vi_of(ViHandle);
    auto local = read_addr(LocalAddr);
    auto remote = read_addr(RemoteAddr);
    if (!vi || !local || !remote || Timeout == 0 || !RemoteViAttribs ||
        !is_local(*vi->nic, local->host) || remote->host.size() != 4)
        return VIP_INVALID_PARAMETER;
    {
        std::lock_guard<std::mutex> g(vi->cm_mu);
        try {
            if (!vi_idle(*vi))
                return VIP_INVALID_STATE;
        } catch (const viaduct::Error &) {
            return VIP_ERROR_RESOURCE;
        }
        vi->pending = true;
    }
    Msg req = msg_of(*vi, MsgKind::Request);
    req.target = remote->disc;
    req.src_host = local->host;
    req.src_disc = local->disc;
    VIP_RETURN r = connect_active(*vi, *remote, req, deadline_of(Timeout), RemoteViAttribs);
    vi->pending = false;
    return r;
}

VIP_RETURN VipDisconnect(VIP_VI_HANDLE ViHandle) {
    auto vi = vi_of(ViHandle);
    if (!vi)
        return VIP_INVALID_PARAMETER;
    if (vi->peer.thread.joinable()) {
        vi->peer.cancel = true;
        vi->peer.thread.join();
        vi->peer.active = false;
    }
    std::shared_ptr<Conn> c;
    {
        std::lock_guard<std::mutex> g(vi->cm_mu);
        c = std::move(vi->conn);
    }
    if (c) {
        c->local_close = true;
        try {
            if (vi->qp->query().state == viaduct::QpState::Rts) {
                // graceful when nothing is in flight, so that what was sent
                // arrives; abortive otherwise (the guide flushes it anyway)
                bool idle_sq;
                {
                    std::lock_guard<QueueLock> g(vi->sq.mu);
                    idle_sq = true;
                    for (std::size_t i = 0; i < vi->sq.q.size(); i++)
                        idle_sq = idle_sq && vi->sq.q[i].done;
                }
                // a graceful close waits until the peer has placed
                // everything: the answer to a zero-length Read posted
                // behind it says so (RDMAP answers Reads in order), and
                // the FIN cannot overtake the last messages at the peer
                if (idle_sq) {
                    vi->sq.barrier = false;
                    const viaduct::Sge zero{0, 0, 0};
                    viaduct::SendWr wr;
                    wr.wr_id = WorkQueue::barrier_id;
                    wr.opcode = viaduct::SendOp::RdmaRead;
                    wr.sge = std::span<const viaduct::Sge>(&zero, 1);
                    {
                        // posts to the native QP hold the queue's mutex
                        std::lock_guard<QueueLock> g(vi->sq.mu);
                        vi->qp->post_send(wr);
                    }
                    // Until the QP leaves RTS: the peer's FIN (its own
                    // VipDisconnect) takes it to Closing, where the SQ is
                    // no longer taken from the ring, so a barrier posted
                    // just after the check above would sit there, without
                    // a completion, until the flush below. Nothing sent
                    // after the peer's FIN is placed anyway.
                    for (int i = 0; i < 30000 && !vi->sq.barrier; i++) {
                        drain(vi->sq);
                        if (vi->sq.barrier || vi->qp->query().state != viaduct::QpState::Rts)
                            break;
                        std::this_thread::sleep_for(1ms);
                    }
                }
                c->id->disconnect(!idle_sq);
                for (;;) {
                    // then an abortive close: the peer may never answer
                    auto ev = c->next(Clock::now() + 5s);
                    if (!ev) {
                        c->id->disconnect(true);
                        break;
                    }
                    if (ev->type == viaduct::CmEventType::Disconnected)
                        break;
                }
            }
        } catch (const viaduct::Error &) {
            // the peer closed at the same time: the connection is over anyway
        }
        forget(*vi->nic, c);
        c->id.reset();
    }
    // Closing ends on its own; then flush what is posted and go Idle
    for (int i = 0; i < 6000; i++) {
        try {
            auto st = vi->qp->query().state;
            if (st == viaduct::QpState::Idle)
                vi->qp->modify(viaduct::QpState::Error);
            else if (st == viaduct::QpState::Error)
                vi->qp->modify(viaduct::QpState::Idle);
            if (st == viaduct::QpState::Error || st == viaduct::QpState::Idle) {
                if (vi->qp->query().state == viaduct::QpState::Idle)
                    break;
                continue;
            }
        } catch (const viaduct::Error &) {
            // the transport moved it meanwhile: look again
        }
        std::this_thread::sleep_for(10ms);
    }
    try {
        if (vi->qp->query().state != viaduct::QpState::Idle)
            return VIP_ERROR_RESOURCE;
    } catch (const viaduct::Error &) {
        return VIP_ERROR_RESOURCE;
    }
    // A barrier that the close overtook completed (flushed) on the way to
    // Idle: take it now, or the next connection's close would count it.
    drain(vi->sq);
    vi->error_latched = false;
    return VIP_SUCCESS;
}

VIP_RETURN VipConnectPeerRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr,
                                 VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout) {
    auto vi = vi_of(ViHandle);
    auto local = read_addr(LocalAddr);
    auto remote = read_addr(RemoteAddr);
    if (!vi || !local || !remote || Timeout == 0 || !is_local(*vi->nic, local->host) ||
        remote->host.size() != 4)
        return VIP_INVALID_PARAMETER;
    // the side with the smaller (host, discriminator) connects, the other
    // waits; a VI cannot meet itself
    auto key = [](const NetAddr &a) { return std::tie(a.host, a.disc); };
    if (key(*local) == key(*remote))
        return VIP_INVALID_PARAMETER;
    const bool active = key(*local) < key(*remote);
    {
        std::lock_guard<std::mutex> g(vi->cm_mu);
        try {
            if (!vi_idle(*vi) || vi->peer.active)
                return VIP_INVALID_STATE;
        } catch (const viaduct::Error &) {
            return VIP_ERROR_RESOURCE;
        }
        vi->pending = true;
        vi->peer.active = true;
        vi->peer.done = false;
        vi->peer.cancel = false;
    }
    const auto deadline = deadline_of(Timeout);
    Vi *raw = vi.get();
    if (active) {
        Msg req = msg_of(*vi, MsgKind::PeerRequest);
        req.target = remote->disc;
        req.src_host = local->host;
        req.src_disc = local->disc;
        vi->peer.thread = std::thread([raw, req, remote = *remote, deadline] {
            VIP_RETURN r;
            // the peer may not have asked yet: try until the deadline
            for (;;) {
                r = connect_active(*raw, remote, req, deadline, &raw->peer.remote);
                if (r != VIP_NO_MATCH)
                    break;
                if (raw->peer.cancel || until(deadline) == 0ms) {
                    r = VIP_TIMEOUT;
                    break;
                }
                std::this_thread::sleep_for(
                    std::min(until(deadline), std::chrono::milliseconds(50)));
            }
            raw->peer.result = r;
            raw->pending = false;
            raw->peer.done = true;
        });
        return VIP_SUCCESS;
    }
    auto w = std::make_shared<Waiter>();
    w->peer = true;
    w->disc = local->disc;
    w->remote_host = remote->host;
    w->remote_disc = remote->disc;
    w->vi = vi;
    {
        std::lock_guard<std::mutex> g(vi->nic->mu);
        if (!add_waiter(*vi->nic, w)) {
            vi->pending = false;
            vi->peer.active = false;
            return VIP_ERROR_RESOURCE;
        }
    }
    vi->peer.thread = std::thread([raw, w, deadline] {
        Nic &nic = *raw->nic;
        VIP_RETURN r = VIP_TIMEOUT;
        if (wait_matched(nic, w, deadline, &raw->peer.cancel)) {
            r = w->result;
            if (r == VIP_SUCCESS) {
                auto ev = w->conn->next(Clock::now() + cm_bound);
                if (ev && ev->type == viaduct::CmEventType::Established) {
                    attrs_of(w->msg, &raw->peer.remote);
                    w->conn->established = true;
                    std::lock_guard<std::mutex> g(raw->cm_mu);
                    raw->conn = w->conn;
                } else {
                    forget(nic, w->conn);
                    w->conn->id.reset();
                    r = VIP_TIMEOUT;
                }
            }
        }
        w->vi.reset();
        raw->peer.result = r;
        raw->pending = false;
        raw->peer.done = true;
    });
    return VIP_SUCCESS;
}

static VIP_RETURN peer_collect(Vi &vi, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    vi.peer.thread.join();
    vi.peer.active = false;
    if (vi.peer.result == VIP_SUCCESS && RemoteViAttribs)
        *RemoteViAttribs = vi.peer.remote;
    return vi.peer.result;
}

VIP_RETURN VipConnectPeerDone(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    auto vi = vi_of(ViHandle);
    if (!vi || !RemoteViAttribs)
        return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(vi->cm_mu);
    if (!vi->peer.active || !vi->peer.thread.joinable())
        return VIP_INVALID_STATE;
    if (!vi->peer.done)
        return VIP_NOT_DONE;
    // the thread has finished: join() does not wait for cm_mu
    std::thread t = std::move(vi->peer.thread);
    t.join();
    vi->peer.active = false;
    if (vi->peer.result == VIP_SUCCESS)
        *RemoteViAttribs = vi->peer.remote;
    return vi->peer.result;
}

VIP_RETURN VipConnectPeerWait(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteViAttribs) {
    auto vi = vi_of(ViHandle);
    if (!vi || !RemoteViAttribs)
        return VIP_INVALID_PARAMETER;
    if (!vi->peer.active || !vi->peer.thread.joinable())
        return VIP_INVALID_STATE;
    return peer_collect(*vi, RemoteViAttribs);
}

} // extern "C"
