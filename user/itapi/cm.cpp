// SPDX-License-Identifier: GPL-2.0
//
// IT-API connection management, Transport-Independent Interface (TII):
// listen points, it_ep_connect, it_ep_accept, it_reject, it_handoff,
// it_ep_disconnect, it_ep_reset, over libviaduct's connection manager
// (Documentation/itapi.rst, "Connection management").
//
// The profile is the document's iWARP one (its appendix B): two-way
// establishment only (three_way_handshake_support is IT_FALSE), private
// data of up to 256 bytes on connect, accept and reject and none on
// disconnect, IRD/ORD carried by the enhanced MPA frames of RFC 6581 (the
// standard successor of the appendix's IRD/ORD Header), suppressed by
// revision 1 frames. The consumer's private data is the MPA private data,
// byte for byte, so that a peer that does not use the IT-API (rping on
// siw) sees what the consumer sent.
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <thread>

#include "cm.hpp"

namespace itapi {

using namespace std::chrono_literals;

namespace {

// Guards Ia::cm, made on first use and dropped by it_ia_free.
std::mutex ias_lock;

// An unanswered connection request, named by its cn_est_id.
struct Request {
    Ia *ia = nullptr;
    viaduct::ConnectionId id;
    std::shared_ptr<NativeListener> listener; // keeps the native listener
    it_conn_request_event_t ev{};             // as delivered
    bool suppress = false;                    // no IRD/ORD exchange
    bool mpa_v1 = false;                      // the initiator sent revision 1

    explicit Request(viaduct::ConnectionId c) : id(std::move(c)) {}
};

// The process-wide table of requests. cn_est_ids are never reused, so a
// stale one is refused (IT_ERR_INVALID_CN_EST_ID). A leaf lock.
std::mutex requests_lock;
std::unordered_map<it_cn_est_identifier_t, std::unique_ptr<Request>> requests;
it_cn_est_identifier_t next_cn_est_id = 1;

// Requests a full CM_REQ SEVD discarded: kept unanswered until the
// initiator gives up (it then sees NONPEER_REJECT with IT_CN_REJ_TIMEOUT,
// as it_listen_create says), at most this many per IA.
constexpr std::size_t discarded_max = 64;

it_cn_est_identifier_t add_request(std::unique_ptr<Request> r) {
    std::lock_guard<std::mutex> g(requests_lock);
    it_cn_est_identifier_t id = next_cn_est_id++;
    r->ev.cn_est_id = id;
    requests.emplace(id, std::move(r));
    return id;
}

// Takes @id's request out of the table, if it is one of @ia's (any IA's
// when @ia is null).
std::unique_ptr<Request> take_request(it_cn_est_identifier_t id, const Ia *ia) {
    std::lock_guard<std::mutex> g(requests_lock);
    auto it = requests.find(id);
    if (it == requests.end() || (ia != nullptr && it->second->ia != ia))
        return nullptr;
    auto r = std::move(it->second);
    requests.erase(it);
    return r;
}

// Puts @r back under its own cn_est_id (an accept that must be retried).
void put_back(std::unique_ptr<Request> r) {
    std::lock_guard<std::mutex> g(requests_lock);
    it_cn_est_identifier_t id = r->ev.cn_est_id;
    requests.emplace(id, std::move(r));
}

// The IA of @id's request, or null: a look that takes nothing.
Ia *request_ia(it_cn_est_identifier_t id) {
    std::lock_guard<std::mutex> g(requests_lock);
    auto it = requests.find(id);
    return it == requests.end() ? nullptr : it->second->ia;
}

bool valid_pdata(const unsigned char *pdata, std::size_t len) {
    return len <= IT_MAX_PRIV_DATA && (len == 0 || pdata != nullptr);
}

std::span<const std::byte> pdata_span(const unsigned char *pdata, std::size_t len) {
    return std::as_bytes(std::span(pdata, len));
}

void copy_pdata(unsigned char (&dst)[IT_MAX_PRIV_DATA], it_boolean_t &present,
                std::span<const std::byte> src) {
    std::size_t n = std::min<std::size_t>(src.size(), IT_MAX_PRIV_DATA);
    std::memset(dst, 0, sizeof(dst));
    std::memcpy(dst, src.data(), n);
    present = n > 0 ? IT_TRUE : IT_FALSE;
}

// "192.0.2.1", "::ffff:192.0.2.1" (an IPv4 peer of an IPv6 listener),
// "2001:db8::1" as an it_net_addr_t.
it_net_addr_t net_addr_of(const viaduct::SocketAddress &sa) {
    it_net_addr_t a{};
    in6_addr v6{};
    if (sa.family == AF_INET6 && ::inet_pton(AF_INET6, sa.address.c_str(), &v6) == 1) {
        if (IN6_IS_ADDR_V4MAPPED(&v6)) {
            a.addr_type = IT_IPV4;
            std::memcpy(&a.addr.ipv4, &v6.s6_addr[12], 4);
        } else {
            a.addr_type = IT_IPV6;
            a.addr.ipv6 = v6;
        }
    } else {
        a.addr_type = IT_IPV4;
        ::inet_pton(AF_INET, sa.address.c_str(), &a.addr.ipv4);
    }
    return a;
}

// The path of a connection the other side started: our address and the
// peer's, as the EP's it_ep_query and events show it.
it_path_t path_of(const viaduct::SocketAddress &local, const viaduct::SocketAddress &peer,
                  std::size_t spigot) {
    it_path_t p{};
    p.spigot_id = spigot;
    it_net_addr_t l = net_addr_of(local), r = net_addr_of(peer);
    if (l.addr_type == IT_IPV6 || r.addr_type == IT_IPV6) {
        p.remote.iwarp.ip_vers = IT_IP_VERS_IPV6;
        p.remote.iwarp.laddr.ipv6 = l.addr.ipv6;
        p.remote.iwarp.raddr.ipv6 = r.addr.ipv6;
    } else {
        p.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
        p.remote.iwarp.laddr.ipv4 = l.addr.ipv4;
        p.remote.iwarp.raddr.ipv4 = r.addr.ipv4;
    }
    return p;
}

it_event_t conn_event(it_event_type_t type) {
    it_event_t ev{};
    ev.conn.event_number = type;
    return ev;
}

// A connection that failed or ended leaves the QP in Error, so that what
// was posted (receives posted before connecting too) and whatever is
// posted from now on completes as flushed. From RTS the transport's own
// teardown or ep_transition() did it; Idle is moved here.
void flush_qp(Ep &ep) noexcept {
    if (!ep.qp)
        return;
    try {
        auto a = ep.qp->query();
        if (a.state == viaduct::QpState::Idle || a.state == viaduct::QpState::Rts)
            ep.qp->modify(viaduct::QpState::Error);
    } catch (const std::exception &) {
        // the device went away: nothing will complete anyway
    }
}

constexpr std::initializer_list<it_ep_state_rc_t> pending_states = {
    IT_EP_STATE_ACTIVE1_CONNECTION_PENDING, IT_EP_STATE_ACTIVE2_CONNECTION_PENDING,
    IT_EP_STATE_PASSIVE_CONNECTION_PENDING, IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ};

// Drops @ep's native connection (aborting it if it is up) under
// IaCm::lock.
void drop_connection(IaCm &cm, Ep &ep) noexcept {
    if (!ep.cm || !ep.cm->id)
        return;
    try {
        cm.conns.erase(ep.cm->id->handle());
    } catch (const std::exception &) {
    }
    ep.cm->id.reset();
}

// Establishment failed: the EP becomes NONOPERATIONAL with one reject
// event (PEER_REJECT carries the peer's private data).
void fail_establishment(IaCm &cm, Ep &ep, it_event_type_t type, it_conn_reject_code_t code,
                        std::span<const std::byte> pdata) {
    it_event_t ev = conn_event(type);
    ev.conn.reject_reason_code = code;
    ev.conn.dst_path = ep.dst_path;
    copy_pdata(ev.conn.private_data, ev.conn.private_data_present, pdata);
    drop_connection(cm, ep);
    if (ep_transition(ep, pending_states, IT_EP_STATE_NONOPERATIONAL, &ev))
        flush_qp(ep);
}

bool valid_spigot(const Ia &ia, std::size_t spigot) {
    (void)ia;
    return spigot == 0; // one spigot: the device's interface
}

} // namespace

it_conn_reject_code_t reject_code_of(int status) noexcept {
    switch (-status) {
    case ETIMEDOUT:
        return IT_CN_REJ_TIMEOUT;
    case ENETUNREACH:
    case EHOSTUNREACH:
    case EADDRNOTAVAIL:
    case ECONNREFUSED:
        return IT_CN_REJ_BAD_PATH;
    case EADDRINUSE:
        return IT_CN_REJ_STALE_CONN;
    case ENOMEM:
    case ENOBUFS:
        return IT_CN_REJ_RESOURCES;
    case EPROTO:
        // the peer's MPA frame was not one we understand: another
        // revision or format of the connection parameters
        return IT_CN_REJ_BAD_CONN_PARMS;
    default:
        return IT_CN_REJ_OTHER;
    }
}

Listen::~Listen() = default;

IaCm::IaCm(Ia &owner) : ia(owner), channel(owner.dev) {}

IaCm::~IaCm() = default;

IaCm *ia_cm(Ia &ia, it_status_t &err) noexcept {
    std::lock_guard<std::mutex> g(ias_lock);
    if (ia.cm)
        return ia.cm.get();
    try {
        auto cm = std::make_shared<IaCm>(ia);
        IaCm *p = cm.get();
        ia.add_source(p->channel.fd(), [p] { p->drain(); });
        p->registered = true;
        ia.cm = std::move(cm);
        return p;
    } catch (const viaduct::Error &e) {
        err = status_of_errno(e.errnum(), IT_ERR_RESOURCES);
    } catch (const std::exception &) {
        err = IT_ERR_RESOURCES;
    }
    return nullptr;
}

EpCm &ep_cm(Ep &ep) {
    if (!ep.cm)
        ep.cm = std::make_shared<EpCm>();
    return *ep.cm;
}

namespace {

IaCm *existing_cm(Ia &ia) noexcept {
    std::lock_guard<std::mutex> g(ias_lock);
    return ia.cm.get();
}

// Under IaCm::lock: a listen point goes; its requests stay answerable.
void release_listen(IaCm &cm, Listen &l) noexcept {
    if (!l.native)
        return;
    if (Evd *evd = l.native->evd) {
        std::lock_guard g(evd->lock);
        if (evd->sources > 0)
            evd->sources--;
    }
    l.native->listen = nullptr;
    l.native.reset();
    cm.listens.erase(std::remove(cm.listens.begin(), cm.listens.end(), &l), cm.listens.end());
}

// Delivers @r's CONN_REQUEST to @evd; a full SEVD discards it (the
// initiator times out).
void deliver_request(IaCm &cm, std::unique_ptr<Request> r, Evd &evd) {
    r->ev.evd = handle_of<it_evd_handle_t>(&evd);
    it_event_t ev{};
    ev.conn_req = r->ev;
    ev.conn_req.event_number = IT_CM_REQ_CONN_REQUEST_EVENT;
    Request *raw = r.get();
    it_cn_est_identifier_t id = add_request(std::move(r));
    ev.conn_req.cn_est_id = id;
    if (evd_enqueue(evd, ev))
        return;
    // dropped: take it back (the consumer cannot have seen it)
    auto back = take_request(id, nullptr);
    if (!back || back.get() != raw)
        return;
    if (cm.discarded.size() < discarded_max) {
        std::uint32_t h = back->id.handle();
        cm.discarded.emplace(h, std::move(back->id));
    }
}

void on_request(IaCm &cm, viaduct::CmEvent &e) {
    std::shared_ptr<NativeListener> nl;
    if (auto it = cm.listeners.find(e.listen_handle()); it != cm.listeners.end())
        nl = it->second.lock();
    viaduct::ConnectionId id = e.connection();
    if (!nl || nl->listen == nullptr || nl->evd == nullptr)
        return; // a listen point being freed: the id goes, the TCP connection is reset
    auto r = std::make_unique<Request>(std::move(id));
    r->ia = &cm.ia;
    r->listener = nl;
    r->mpa_v1 = (e.flags() & VIADUCT_CM_F_MPA_V1) != 0;
    r->suppress = r->mpa_v1 || (nl->flags & IT_LISTEN_SUPPRESS_IRD_ORD) != 0;
    it_conn_request_event_t &ev = r->ev;
    ev.conn_qual = nl->qual;
    ev.source_addr = net_addr_of(e.peer());
    ev.spigot_id = nl->spigot_id;
    ev.max_message_size = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(cm.ia.attr.limits.max_msg_size, UINT32_MAX));
    if (!r->suppress) {
        ev.rdma_read_ird = e.ird();
        ev.rdma_read_ord = e.ord();
    }
    copy_pdata(ev.private_data, ev.private_data_present, e.private_data());
    deliver_request(cm, std::move(r), *nl->evd);
}

void on_established(Ep &ep, viaduct::CmEvent &e) {
    EpCm &c = ep_cm(ep);
    it_event_t ev = conn_event(IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    if (c.passive || c.tdi) {
        std::lock_guard<std::mutex> g(ep.lock);
        ep.dst_path = path_of(e.local(), e.peer(), ep.spigot_id);
    }
    ev.conn.dst_path = ep.dst_path;
    if (c.passive) {
        if (!c.tdi) {
            // the initiator's IRD/ORD and private data, as its request had them
            ev.conn.rdma_read_ird = c.peer_ird;
            ev.conn.rdma_read_ord = c.peer_ord;
            copy_pdata(ev.conn.private_data, ev.conn.private_data_present,
                       std::as_bytes(std::span(c.request_pdata)));
        }
        ep_transition(
            ep, {IT_EP_STATE_PASSIVE_CONNECTION_PENDING, IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ},
            IT_EP_STATE_CONNECTED, &ev);
        return;
    }
    if (!c.tdi) {
        if (!c.suppress_ird_ord && !(e.flags() & VIADUCT_CM_F_MPA_V1)) {
            // the responder's IRD/ORD (B.3.3); the core has already kept
            // our ORD within its IRD, and so does the EP's attribute
            ev.conn.rdma_read_ird = e.ird();
            ev.conn.rdma_read_ord = e.ord();
            std::lock_guard<std::mutex> g(ep.lock);
            ep.attr.srv.rc.rdma_read_ord = std::min(ep.attr.srv.rc.rdma_read_ord, e.ird());
        }
        copy_pdata(ev.conn.private_data, ev.conn.private_data_present, e.private_data());
    }
    ep_transition(ep, {IT_EP_STATE_ACTIVE1_CONNECTION_PENDING}, IT_EP_STATE_CONNECTED, &ev);
}

// The connection ended. From CONNECTED: DISCONNECT when a side closed it,
// BROKEN when the transport did (a Terminate was sent or received, the
// stream failed); the EP may have been broken already by an error
// completion or an affiliated event, then nothing more is queued.
void on_disconnected(IaCm &cm, Ep &ep, viaduct::CmEvent &e) {
    if (ep.state.load() == IT_EP_STATE_CONNECTED) {
        bool broken = e.status() != 0 && e.status() != -ECONNRESET;
        if (!broken && ep.qp) {
            try {
                broken = ep.qp->query().terminate != 0;
            } catch (const std::exception &) {
            }
        }
        it_event_t ev =
            conn_event(broken ? IT_CM_MSG_CONN_BROKEN_EVENT : IT_CM_MSG_CONN_DISCONNECT_EVENT);
        ev.conn.dst_path = ep.dst_path;
        ep_transition(ep, {IT_EP_STATE_CONNECTED}, IT_EP_STATE_NONOPERATIONAL, &ev);
    } else if (ep.state.load() != IT_EP_STATE_NONOPERATIONAL) {
        fail_establishment(cm, ep, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, reject_code_of(e.status()),
                           {});
        return;
    }
    drop_connection(cm, ep);
    flush_qp(ep);
}

void on_event(IaCm &cm, viaduct::CmEvent &e) {
    if (e.type() == viaduct::CmEventType::ConnectRequest) {
        on_request(cm, e);
        return;
    }
    auto it = cm.conns.find(e.handle());
    if (it == cm.conns.end()) {
        // a discarded request whose initiator gave up, or an id already let go
        if (e.type() != viaduct::CmEventType::Established) {
            cm.discarded.erase(e.handle());
            cm.closing.erase(e.handle());
        }
        return;
    }
    Ep &ep = *it->second;
    switch (e.type()) {
    case viaduct::CmEventType::Established:
        on_established(ep, e);
        break;
    case viaduct::CmEventType::Rejected:
        fail_establishment(cm, ep, IT_CM_MSG_CONN_PEER_REJECT_EVENT, IT_CN_REJ_OTHER,
                           e.private_data());
        break;
    case viaduct::CmEventType::Timeout:
        fail_establishment(cm, ep, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, IT_CN_REJ_TIMEOUT, {});
        break;
    case viaduct::CmEventType::Unreachable:
    case viaduct::CmEventType::ConnectError:
        fail_establishment(cm, ep, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, reject_code_of(e.status()),
                           {});
        break;
    case viaduct::CmEventType::Disconnected:
        on_disconnected(cm, ep, e);
        break;
    case viaduct::CmEventType::DeviceRemoved:
        if (ep.state.load() == IT_EP_STATE_CONNECTED) {
            it_event_t ev = conn_event(IT_CM_MSG_CONN_BROKEN_EVENT);
            ev.conn.dst_path = ep.dst_path;
            ep_transition(ep, {IT_EP_STATE_CONNECTED}, IT_EP_STATE_NONOPERATIONAL, &ev);
            drop_connection(cm, ep);
        } else {
            fail_establishment(cm, ep, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, IT_CN_REJ_OTHER, {});
        }
        break;
    case viaduct::CmEventType::ConnectRequest:
        break;
    }
}

} // namespace

void IaCm::drain() noexcept {
    for (;;) {
        std::optional<viaduct::CmEvent> e;
        try {
            e = channel.read(0ms);
        } catch (const std::exception &) {
            return;
        }
        if (!e)
            return;
        std::lock_guard<std::mutex> g(lock);
        try {
            on_event(*this, *e);
        } catch (const std::exception &) {
            // no memory for a request: it is dropped as if the SEVD were full
        }
    }
}

void cm_ep_free(Ep &ep) noexcept {
    IaCm *cm = existing_cm(*ep.ia);
    if (cm == nullptr) {
        ep.cm.reset();
        return;
    }
    std::lock_guard<std::mutex> g(cm->lock);
    if (ep.cm && ep.cm->id && ep.cm->closing && cm->closing.size() < discarded_max) {
        // let the graceful close finish: the id keeps what it needs of the QP
        try {
            const std::uint32_t h = ep.cm->id->handle();
            cm->conns.erase(h);
            cm->closing.emplace(h, std::move(*ep.cm->id));
            ep.cm->id.reset();
        } catch (const std::exception &) {
        }
    }
    drop_connection(*cm, ep);
    ep.cm.reset();
}

void cm_ia_free(Ia &ia) noexcept {
    std::shared_ptr<IaCm> cm;
    {
        std::lock_guard<std::mutex> g(ias_lock);
        cm = std::move(ia.cm);
    }
    if (!cm)
        return;
    if (cm->registered)
        ia.remove_source(cm->channel.fd());
    std::vector<std::unique_ptr<Request>> gone;
    {
        std::lock_guard<std::mutex> g(requests_lock);
        for (auto it = requests.begin(); it != requests.end();) {
            if (it->second->ia == &ia) {
                gone.push_back(std::move(it->second));
                it = requests.erase(it);
            } else {
                ++it;
            }
        }
    }
    std::lock_guard<std::mutex> g(cm->lock);
    gone.clear(); // unanswered requests: their TCP connections are reset
    while (!cm->listens.empty())
        release_listen(*cm, *cm->listens.back());
    for (auto &[h, ep] : cm->conns)
        if (ep->cm)
            ep->cm->id.reset();
    cm->conns.clear();
    cm->discarded.clear();
    cm->closing.clear();
}

} // namespace itapi

using namespace itapi;

// --- Listen points ----------------------------------------------------------

it_status_t it_listen_create(it_ia_handle_t ia_handle, size_t spigot_id,
                             it_evd_handle_t connect_evd, it_listen_flags_t flags,
                             it_conn_qual_t *conn_qual, it_listen_handle_t *listen_handle) {
    Ia *ia = lookup<Ia>(ia_handle);
    if (ia == nullptr)
        return IT_ERR_INVALID_IA;
    if (!valid_spigot(*ia, spigot_id))
        return IT_ERR_INVALID_SPIGOT;
    Evd *evd = lookup<Evd>(connect_evd);
    if (evd == nullptr || evd->ia != ia)
        return IT_ERR_INVALID_CONN_EVD;
    if (evd->stream != IT_CM_REQ_EVENT_STREAM)
        return IT_ERR_INVALID_EVD_TYPE;
    if (flags & ~(IT_LISTEN_CONN_QUAL_INPUT | IT_LISTEN_SUPPRESS_IRD_ORD))
        return IT_ERR_INVALID_FLAGS;
    if (conn_qual == nullptr || listen_handle == nullptr)
        return IT_ERR_INVALID_CONN_QUAL;
    std::uint16_t port = 0;
    if (flags & IT_LISTEN_CONN_QUAL_INPUT) {
        if (conn_qual->type != IT_IANA_PORT || conn_qual->conn_qual.port == 0)
            return IT_ERR_INVALID_CONN_QUAL;
        port = ntohs(conn_qual->conn_qual.port);
    }
    it_status_t err = IT_SUCCESS;
    IaCm *cm = ia_cm(*ia, err);
    if (cm == nullptr)
        return err;

    // The handle first (Ia::adopt takes the IA's lock, which comes before
    // ours), then the native listener, registered before its first
    // request can be read.
    auto l = std::make_unique<Listen>(ia);
    if (!ia->adopt(l.get()))
        return IT_ERR_RESOURCES;
    it_status_t st = IT_SUCCESS;
    {
        std::lock_guard<std::mutex> g(cm->lock);
        try {
            auto nl = std::make_shared<NativeListener>(cm->channel);
            // every address of the device, IPv4 and IPv6
            port = nl->id.listen("", port);
            nl->evd = evd;
            nl->spigot_id = spigot_id;
            nl->flags = flags;
            nl->qual.type = IT_IANA_PORT;
            nl->qual.conn_qual.port = htons(port);
            nl->listen = l.get();
            cm->listeners[nl->id.handle()] = nl;
            cm->listens.push_back(l.get());
            l->native = std::move(nl);
        } catch (const viaduct::Error &e) {
            switch (e.errnum()) {
            case EADDRINUSE:
                st = IT_ERR_CONN_QUAL_BUSY;
                break;
            case EACCES:
            case EPERM:
                st = IT_ERR_NO_PERMISSION;
                break;
            default:
                st = IT_ERR_RESOURCES;
                break;
            }
        } catch (const std::exception &) {
            st = IT_ERR_RESOURCES;
        }
    }
    if (st != IT_SUCCESS) {
        ia->unlink(l.get());
        return st;
    }
    {
        std::lock_guard eg(evd->lock);
        evd->sources++;
    }
    *conn_qual = l->native->qual;
    *listen_handle = handle_of<it_listen_handle_t>(l.get());
    l.release();
    return IT_SUCCESS;
}

it_status_t it_listen_free(it_listen_handle_t listen_handle) {
    Listen *l = lookup<Listen>(listen_handle);
    if (l == nullptr)
        return IT_ERR_INVALID_LISTEN;
    Ia &ia = *l->ia;
    if (IaCm *cm = existing_cm(ia)) {
        std::lock_guard<std::mutex> g(cm->lock);
        release_listen(*cm, *l);
    }
    ia.unlink(l);
    delete l;
    return IT_SUCCESS;
}

it_status_t it_listen_query(it_listen_handle_t listen_handle, it_listen_param_mask_t mask,
                            it_listen_param_t *params) {
    Listen *l = lookup<Listen>(listen_handle);
    if (l == nullptr)
        return IT_ERR_INVALID_LISTEN;
    constexpr unsigned all = IT_LISTEN_PARAM_ALL | IT_LISTEN_PARAM_IA_HANDLE |
                             IT_LISTEN_PARAM_SPIGOT_ID | IT_LISTEN_PARAM_CONNECT_EVD |
                             IT_LISTEN_PARAM_CONN_QUAL;
    if (mask == 0 || (static_cast<unsigned>(mask) & ~all) || params == nullptr)
        return IT_ERR_INVALID_MASK;
    IaCm *cm = existing_cm(*l->ia);
    if (cm == nullptr)
        return IT_ERR_INVALID_LISTEN;
    std::lock_guard<std::mutex> g(cm->lock);
    if (!l->native)
        return IT_ERR_INVALID_LISTEN;
    const bool every = mask & IT_LISTEN_PARAM_ALL;
    if (every || (mask & IT_LISTEN_PARAM_IA_HANDLE))
        params->ia_handle = handle_of<it_ia_handle_t>(l->ia);
    if (every || (mask & IT_LISTEN_PARAM_SPIGOT_ID))
        params->spigot_id = l->native->spigot_id;
    if (every || (mask & IT_LISTEN_PARAM_CONNECT_EVD))
        params->connect_evd = handle_of<it_evd_handle_t>(l->native->evd);
    if (every || (mask & IT_LISTEN_PARAM_CONN_QUAL))
        params->connect_qual = l->native->qual;
    return IT_SUCCESS;
}

// --- Establishment ------------------------------------------------------------

namespace {

// "a.b.c.d" or an IPv6 address of @p's remote side; "" if it has none.
std::string remote_address(const it_path_t &p) {
    char buf[INET6_ADDRSTRLEN] = "";
    if (p.remote.iwarp.ip_vers == IT_IP_VERS_IPV4)
        ::inet_ntop(AF_INET, &p.remote.iwarp.raddr.ipv4, buf, sizeof(buf));
    else if (p.remote.iwarp.ip_vers == IT_IP_VERS_IPV6)
        ::inet_ntop(AF_INET6, &p.remote.iwarp.raddr.ipv6, buf, sizeof(buf));
    return buf;
}

// Whether @p's local address is unset or one of the device's.
bool local_address_ok(const Ia &ia, const it_path_t &p) {
    const bool v4 = p.remote.iwarp.ip_vers == IT_IP_VERS_IPV4;
    const unsigned char *want =
        v4 ? reinterpret_cast<const unsigned char *>(&p.remote.iwarp.laddr.ipv4)
           : p.remote.iwarp.laddr.ipv6.s6_addr;
    const std::size_t len = v4 ? 4 : 16;
    if (std::all_of(want, want + len, [](unsigned char b) { return b == 0; }))
        return true;
    for (const auto &a : ia.attr.addresses) {
        unsigned char buf[16] = {};
        if (a.family == (v4 ? AF_INET : AF_INET6) &&
            ::inet_pton(a.family, a.address.c_str(), buf) == 1 && std::memcmp(buf, want, len) == 0)
            return true;
    }
    return false;
}

std::chrono::milliseconds timeout_of(std::uint64_t us) {
    if (us == 0)
        return 0ms; // the core's default, 30 s
    std::uint64_t ms = us / 1000 + (us % 1000 != 0);
    return std::chrono::milliseconds(std::min<std::uint64_t>(ms, UINT32_MAX));
}

} // namespace

it_status_t it_ep_connect(it_ep_handle_t ep_handle, const it_path_t *path,
                          const it_conn_attributes_t *conn_attr, const it_conn_qual_t *connect_qual,
                          it_cn_est_flags_t cn_est_flags, const unsigned char *private_data,
                          size_t private_data_length) {
    (void)conn_attr; // iWARP has no transport-specific connection attributes
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    // two-way only on iWARP (the document's appendix B.2, "Handshake")
    const unsigned known =
        IT_CONNECT_FLAG_TWO_WAY | IT_CONNECT_FLAG_THREE_WAY | IT_CONNECT_SUPPRESS_IRD_ORD;
    if ((static_cast<unsigned>(cn_est_flags) & ~known) ||
        !(cn_est_flags & IT_CONNECT_FLAG_TWO_WAY) || (cn_est_flags & IT_CONNECT_FLAG_THREE_WAY))
        return IT_ERR_INVALID_CN_EST_FLAGS;
    if (!valid_pdata(private_data, private_data_length))
        return IT_ERR_INVALID_PDATA_LENGTH;
    if (path == nullptr)
        return IT_ERR_INVALID_SOURCE_PATH;
    if (!valid_spigot(*ep->ia, path->spigot_id))
        return IT_ERR_INVALID_SPIGOT;
    const std::string dst = remote_address(*path);
    if (dst.empty() || !local_address_ok(*ep->ia, *path))
        return IT_ERR_INVALID_SOURCE_PATH;
    std::uint16_t port = 0;
    if (connect_qual != nullptr && connect_qual->type == IT_IANA_PORT)
        port = ntohs(connect_qual->conn_qual.port);
    else if (connect_qual != nullptr && connect_qual->type == IT_IANA_LR_PORT &&
             connect_qual->conn_qual.lr_port.local == 0)
        port = ntohs(connect_qual->conn_qual.lr_port.remote);
    if (port == 0)
        return IT_ERR_INVALID_CONN_QUAL;

    it_status_t err = IT_SUCCESS;
    IaCm *cm = ia_cm(*ep->ia, err);
    if (cm == nullptr)
        return err;
    const bool suppress = cn_est_flags & IT_CONNECT_SUPPRESS_IRD_ORD;
    viaduct::ConnectionOptions o;
    o.private_data = pdata_span(private_data, private_data_length);
    o.mpa_v1 = suppress; // revision 1 frames carry no IRD/ORD
    o.timeout = timeout_of(path->timeout);

    // A QP that a connection just let go of may still be held by its
    // native id until the progress thread has read the id's last events:
    // EBUSY then, for a moment.
    for (int tries = 0;; tries++) {
        std::unique_lock<std::mutex> g(cm->lock);
        if (ep->state.load() != IT_EP_STATE_UNCONNECTED)
            return IT_ERR_INVALID_EP_STATE;
        if (!ep->qp)
            return IT_ERR_INVALID_EP;
        try {
            ep_apply_rdma_attributes(*ep);
            EpCm &c = ep_cm(*ep);
            viaduct::ConnectionId id(cm->channel);
            const std::uint32_t h = id.handle();
            c = EpCm{};
            c.suppress_ird_ord = suppress;
            {
                std::lock_guard<std::mutex> eg(ep->lock);
                ep->dst_path = *path;
                ep->spigot_id = path->spigot_id;
            }
            if (!ep_transition(*ep, {IT_EP_STATE_UNCONNECTED},
                               IT_EP_STATE_ACTIVE1_CONNECTION_PENDING, nullptr))
                return IT_ERR_INVALID_EP_STATE;
            try {
                id.connect(*ep->qp, dst, port, o);
            } catch (const viaduct::Error &e) {
                ep_transition(*ep, {IT_EP_STATE_ACTIVE1_CONNECTION_PENDING},
                              IT_EP_STATE_UNCONNECTED, nullptr);
                throw;
            }
            c.id.emplace(std::move(id));
            cm->conns[h] = ep;
            return IT_SUCCESS;
        } catch (const viaduct::Error &e) {
            switch (e.errnum()) {
            case EBUSY:
                if (tries < 100) {
                    g.unlock();
                    std::this_thread::sleep_for(10ms);
                    continue;
                }
                return IT_ERR_INVALID_EP_STATE;
            case EADDRNOTAVAIL:
            case ENETUNREACH:
            case EHOSTUNREACH: {
                // no way there: the attempt fails as the document's iWARP
                // table says, with an event
                it_event_t ev = conn_event(IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
                ev.conn.reject_reason_code = IT_CN_REJ_BAD_PATH;
                ev.conn.dst_path = *path;
                ep_transition(*ep, {IT_EP_STATE_UNCONNECTED},
                              IT_EP_STATE_ACTIVE1_CONNECTION_PENDING, nullptr);
                if (ep_transition(*ep, {IT_EP_STATE_ACTIVE1_CONNECTION_PENDING},
                                  IT_EP_STATE_NONOPERATIONAL, &ev))
                    flush_qp(*ep);
                return IT_SUCCESS;
            }
            case EINVAL:
                return IT_ERR_INVALID_EP_ATTR;
            default:
                return status_of_errno(e.errnum(), IT_ERR_RESOURCES);
            }
        } catch (const std::exception &) {
            return IT_ERR_RESOURCES;
        }
    }
}

it_status_t it_ep_accept(it_ep_handle_t ep_handle, it_cn_est_identifier_t cn_est_id,
                         const unsigned char *private_data, size_t private_data_length) {
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    if (!valid_pdata(private_data, private_data_length))
        return IT_ERR_INVALID_PDATA_LENGTH;
    // the EP's state first (its primary argument), then the identifier
    it_status_t err = IT_SUCCESS;
    IaCm *cm = ia_cm(*ep->ia, err);
    if (cm == nullptr)
        return err;

    for (int tries = 0;; tries++) {
        std::unique_lock<std::mutex> g(cm->lock);
        if (ep->state.load() != IT_EP_STATE_UNCONNECTED)
            return IT_ERR_INVALID_EP_STATE;
        if (!ep->qp)
            return IT_ERR_INVALID_EP;
        std::unique_ptr<Request> r;
        {
            std::lock_guard<std::mutex> rg(requests_lock);
            auto it = requests.find(cn_est_id);
            if (it == requests.end() || it->second->ia != ep->ia)
                return IT_ERR_INVALID_CN_EST_ID;
            const Request &q = *it->second;
            // B.3.3: the responder's ORD may not exceed the initiator's
            // IRD; IRD/ORD are adjusted with it_ep_modify before accepting
            if (!q.suppress) {
                std::lock_guard<std::mutex> eg(ep->lock);
                if (ep->attr.srv.rc.rdma_read_ord > q.ev.rdma_read_ird)
                    return IT_ERR_INVALID_EP_ATTR;
            }
            r = std::move(it->second);
            requests.erase(it);
        }
        EpCm &c = ep_cm(*ep);
        c = EpCm{};
        c.passive = true;
        c.suppress_ird_ord = r->suppress;
        c.peer_ird = r->ev.rdma_read_ird;
        c.peer_ord = r->ev.rdma_read_ord;
        c.request_pdata.assign(r->ev.private_data,
                               r->ev.private_data +
                                   (r->ev.private_data_present ? IT_MAX_PRIV_DATA : 0));
        ep->spigot_id = r->ev.spigot_id;
        viaduct::ConnectionOptions o;
        o.private_data = pdata_span(private_data, private_data_length);
        o.mpa_v1 = r->suppress;
        try {
            ep_apply_rdma_attributes(*ep);
            ep_transition(*ep, {IT_EP_STATE_UNCONNECTED}, IT_EP_STATE_PASSIVE_CONNECTION_PENDING,
                          nullptr);
            r->id.accept(*ep->qp, o);
            const std::uint32_t h = r->id.handle();
            c.id.emplace(std::move(r->id));
            cm->conns[h] = ep;
            return IT_SUCCESS;
        } catch (const viaduct::Error &e) {
            if (e.errnum() == EBUSY && tries < 100) {
                // the QP's last connection is still letting go of it
                ep_transition(*ep, {IT_EP_STATE_PASSIVE_CONNECTION_PENDING},
                              IT_EP_STATE_UNCONNECTED, nullptr);
                put_back(std::move(r));
                g.unlock();
                std::this_thread::sleep_for(10ms);
                continue;
            }
            // the initiator left, or the QP cannot take it: the
            // establishment fails with an event
            it_event_t ev = conn_event(IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
            ev.conn.reject_reason_code = IT_CN_REJ_OTHER;
            if (ep_transition(*ep, {IT_EP_STATE_PASSIVE_CONNECTION_PENDING},
                              IT_EP_STATE_NONOPERATIONAL, &ev))
                flush_qp(*ep);
            return IT_SUCCESS;
        } catch (const std::exception &) {
            return IT_ERR_RESOURCES;
        }
    }
}

it_status_t it_reject(it_cn_est_identifier_t cn_est_id, const unsigned char *private_data,
                      size_t private_data_length) {
    if (!valid_pdata(private_data, private_data_length))
        return IT_ERR_INVALID_PDATA_LENGTH;
    auto r = take_request(cn_est_id, nullptr);
    if (!r)
        return IT_ERR_INVALID_CN_EST_ID;
    try {
        r->id.reject(pdata_span(private_data, private_data_length));
    } catch (const std::exception &) {
        // the initiator is gone: nobody to tell
    }
    return IT_SUCCESS;
}

it_status_t it_handoff(const it_conn_qual_t *conn_qual, size_t spigot_id,
                       it_cn_est_identifier_t cn_est_id) {
    Ia *ia = request_ia(cn_est_id);
    if (ia == nullptr)
        return IT_ERR_INVALID_CN_EST_ID;
    if (conn_qual == nullptr || conn_qual->type != IT_IANA_PORT || conn_qual->conn_qual.port == 0)
        return IT_ERR_INVALID_CONN_QUAL;
    if (!valid_spigot(*ia, spigot_id))
        return IT_ERR_INVALID_SPIGOT;
    IaCm *cm = existing_cm(*ia);
    if (cm == nullptr)
        return IT_ERR_INVALID_CN_EST_ID;
    std::lock_guard<std::mutex> g(cm->lock);
    Listen *to = nullptr;
    for (Listen *l : cm->listens)
        if (l->native && l->native->spigot_id == spigot_id &&
            l->native->qual.conn_qual.port == conn_qual->conn_qual.port)
            to = l;
    auto r = take_request(cn_est_id, ia);
    if (!r)
        return IT_ERR_INVALID_CN_EST_ID;
    if (to == nullptr) {
        // Another process's listen point on the same device (its IA on the
        // same interface): the core moves the request there, and this
        // cn_est_id is gone. A qualifier nobody listens on leaves the
        // request here, answerable.
        if (!(ia->attr.caps & VIADUCT_DEV_CAP_CM_HANDOFF)) {
            put_back(std::move(r));
            return IT_ERR_INVALID_CONN_QUAL;
        }
        try {
            r->id.handoff("", ntohs(conn_qual->conn_qual.port));
            return IT_SUCCESS;
        } catch (const viaduct::Error &e) {
            put_back(std::move(r));
            return e.errnum() == EBUSY ? IT_ERR_RESOURCES : IT_ERR_INVALID_CONN_QUAL;
        } catch (const std::exception &) {
            put_back(std::move(r));
            return IT_ERR_RESOURCES;
        }
    }
    // As the listen point's own requests: its qualifier, its IRD/ORD rule.
    r->ev.conn_qual = to->native->qual;
    if (to->native->flags & IT_LISTEN_SUPPRESS_IRD_ORD) {
        r->suppress = true;
        r->ev.rdma_read_ird = r->ev.rdma_read_ord = 0;
    }
    try {
        deliver_request(*cm, std::move(r), *to->native->evd);
    } catch (const std::exception &) {
        return IT_ERR_RESOURCES;
    }
    return IT_SUCCESS;
}

// --- Disconnect and reset ---------------------------------------------------

it_status_t it_ep_disconnect(it_ep_handle_t ep_handle, const unsigned char *private_data,
                             size_t private_data_length) {
    (void)private_data;
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    // iWARP conveys no private data on disconnect (appendix B.2)
    if (private_data_length != 0)
        return IT_ERR_INVALID_PDATA_LENGTH;
    IaCm *cm = existing_cm(*ep->ia);
    std::unique_lock<std::mutex> g;
    if (cm != nullptr)
        g = std::unique_lock<std::mutex>(cm->lock);
    const it_ep_state_rc_t s = ep->state.load();
    if (s == IT_EP_STATE_UNCONNECTED)
        return IT_ERR_INVALID_EP_STATE;
    it_event_t ev = conn_event(IT_CM_MSG_CONN_DISCONNECT_EVENT);
    ev.conn.dst_path = ep->dst_path;
    if (s == IT_EP_STATE_NONOPERATIONAL) {
        // no messages, no events; a connection the transport broke is
        // taken down here too
        if (cm != nullptr)
            drop_connection(*cm, *ep);
        return IT_SUCCESS;
    }
    if (s == IT_EP_STATE_CONNECTED) {
        // FIN: what was sent before still reaches the peer; the QP is
        // flushed once the close is done (on_disconnected)
        try {
            if (ep->cm && ep->cm->id) {
                ep->cm->id->disconnect(false);
                ep->cm->closing = true;
            }
        } catch (const std::exception &) {
            if (cm != nullptr)
                drop_connection(*cm, *ep);
        }
        ep_transition(*ep, {IT_EP_STATE_CONNECTED}, IT_EP_STATE_NONOPERATIONAL, &ev);
        return IT_SUCCESS;
    }
    // being set up: the attempt is abandoned (the peer's side is reset)
    if (cm != nullptr)
        drop_connection(*cm, *ep);
    if (ep_transition(*ep, pending_states, IT_EP_STATE_NONOPERATIONAL, &ev))
        flush_qp(*ep);
    return IT_SUCCESS;
}

it_status_t it_ep_reset(it_ep_handle_t ep_handle) {
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    IaCm *cm = existing_cm(*ep->ia);
    std::unique_lock<std::mutex> g;
    if (cm != nullptr)
        g = std::unique_lock<std::mutex>(cm->lock);
    if (ep->state.load() != IT_EP_STATE_NONOPERATIONAL)
        return IT_ERR_INVALID_EP_STATE;
    // A graceful close of ours still running (the peer's FIN not there
    // yet) is let finish, for a while, so the peer sees a disconnect
    // rather than a reset: the progress thread drops the connection when
    // the close is done.
    for (int i = 0; i < 500 && ep->cm && ep->cm->id && ep->cm->closing; i++) {
        g.unlock();
        std::this_thread::sleep_for(10ms);
        g.lock();
    }
    if (ep->state.load() != IT_EP_STATE_NONOPERATIONAL)
        return IT_ERR_INVALID_EP_STATE;
    // what is left of the connection goes first: the QP is free again
    if (cm != nullptr)
        drop_connection(*cm, *ep);
    flush_qp(*ep);
    std::lock_guard<std::mutex> eg(ep->lock);
    if (ep->state.load() != IT_EP_STATE_NONOPERATIONAL)
        return IT_ERR_INVALID_EP_STATE;
    if (ep->dto_overflow)
        return IT_ERR_CANNOT_RESET;
    // the QP Idle with empty queues, the attributes kept
    if (it_status_t st = ep_reset_queues(*ep); st != IT_SUCCESS)
        return st;
    if (ep->cm)
        *ep->cm = EpCm{};
    ep->state.store(IT_EP_STATE_UNCONNECTED);
    return IT_SUCCESS;
}
