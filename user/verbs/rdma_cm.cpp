// SPDX-License-Identifier: GPL-2.0
//
// libviaduct-verbs: librdmacm's API over libviaduct's connection manager.
//
// An rdma_event_channel's descriptor is an epoll set: it holds one
// libviaduct CM channel per device the channel's ids use, and an eventfd
// for the events the library makes itself (address and route resolution,
// which iWARP does with the host's routing table and needs no exchange).
// Devices are chosen as librdmacm chooses them: by the local address an id
// is bound to, or the one the route to the destination leaves from.
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <unordered_set>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "internal.hpp"

namespace vv {

namespace {

// The ids, event channels and events the library has made and not yet
// destroyed (or seen acknowledged). Every call checks the pointer it is
// given against these before it reads through it, so that a program that
// passes one it has destroyed gets -1 and EINVAL, not a crash in the
// library. perftest 4.5-0.17's client does that when its connection is
// refused: its retry destroys the ids, the event channel and the array
// that holds the ids, then resolves and destroys "them" again.
// A pointer whose memory a new object has taken since is that object.
class LiveSet {
public:
    void add(const void *p) {
        std::lock_guard<std::mutex> g(lock_);
        set_.insert(p);
    }
    void remove(const void *p) noexcept {
        std::lock_guard<std::mutex> g(lock_);
        set_.erase(p);
    }
    bool contains(const void *p) noexcept {
        if (!p)
            return false;
        std::lock_guard<std::mutex> g(lock_);
        return set_.count(p) != 0;
    }

private:
    std::mutex lock_;
    std::unordered_set<const void *> set_;
};

// Never destroyed: a program may destroy its ids from its own exit handlers.
LiveSet &live_ids() {
    static auto *s = new LiveSet;
    return *s;
}
LiveSet &live_channels() {
    static auto *s = new LiveSet;
    return *s;
}
LiveSet &live_events() {
    static auto *s = new LiveSet;
    return *s;
}

// A thread may be inside rdma_get_cm_event() (blocked, or about to
// block) when another destroys the channel: rping's main() does so while
// its CM thread waits for the next event. The channel lives on, its
// descriptors open, until that call returns (on rdma-core the blocked
// system call keeps the file); new calls on it get EINVAL at once.
std::mutex &channel_life_lock() {
    static auto *m = new std::mutex;
    return *m;
}

struct Id;

struct Event {
    rdma_cm_event ev{};
    std::optional<viaduct::CmEvent> native;
    Id *counted = nullptr; // the id whose outstanding events this is one of

    Event() { live_events().add(this); }
    ~Event() { live_events().remove(this); }
    Event(const Event &) = delete;
    Event &operator=(const Event &) = delete;
};

struct EventChannel {
    rdma_event_channel ch{}; // ch.fd: the epoll set
    int efd = -1;            // readable while @synth is not empty
    std::mutex lock;
    // Held by a reader while it takes an event from the kernel and
    // translates it, so that rdma_destroy_id() finds every event of its
    // id either counted as handed out or not yet read (then dropped).
    std::mutex read_lock;
    // Under channel_life_lock(): rdma_get_cm_event() calls inside, and
    // whether rdma_destroy_event_channel() was called; the last of
    // them deletes the channel.
    int callers = 0;
    bool destroyed = false;
    std::deque<Event *> synth;
    std::map<std::string, std::unique_ptr<viaduct::CmChannel>> natives; // by device
    std::map<std::string, Context *> contexts;
    // The ids with a libviaduct id, by device and kernel handle: events
    // name their id by handle (a request's id inherits its listener's
    // user data, so that cannot tell them apart).
    std::map<std::pair<std::string, std::uint32_t>, Id *> ids;

    void add_id(Context *ctx, std::uint32_t handle, Id *id);
    void remove_id(Context *ctx, std::uint32_t handle) {
        std::lock_guard<std::mutex> guard(lock);
        ids.erase({ctx->attr.name, handle});
    }
    Id *find_id(Context *ctx, std::uint32_t handle) {
        std::lock_guard<std::mutex> guard(lock);
        auto it = ids.find({ctx->attr.name, handle});
        return it == ids.end() ? nullptr : it->second;
    }

    EventChannel() { live_channels().add(this); }
    EventChannel(const EventChannel &) = delete;
    EventChannel &operator=(const EventChannel &) = delete;
    ~EventChannel() {
        live_channels().remove(this);
        for (Event *e : synth)
            delete e;
        if (efd >= 0)
            ::close(efd);
        if (ch.fd >= 0)
            ::close(ch.fd);
    }

    // The libviaduct channel of @ctx's device, made on first use.
    viaduct::CmChannel &native_for(Context *ctx) {
        std::lock_guard<std::mutex> guard(lock);
        const std::string &name = ctx->attr.name;
        auto it = natives.find(name);
        if (it != natives.end())
            return *it->second;
        auto c = std::make_unique<viaduct::CmChannel>(ctx->native);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = c->fd();
        if (::epoll_ctl(ch.fd, EPOLL_CTL_ADD, c->fd(), &ev) < 0)
            throw viaduct::Error(errno, "cannot watch the CM channel");
        contexts[name] = ctx;
        return *natives.emplace(name, std::move(c)).first->second;
    }

    void push(Event *e) {
        std::lock_guard<std::mutex> guard(lock);
        synth.push_back(e);
        std::uint64_t one = 1;
        if (::write(efd, &one, sizeof(one)) < 0) {
            // the counter cannot overflow with one write per event
        }
    }
};

struct Id {
    rdma_cm_id id{};
    EventChannel *channel = nullptr;
    bool own_channel = false; // made for a synchronous id, destroyed with it
    bool sync = false;        // calls wait for the event that ends them
    std::vector<std::pair<Context *, std::uint32_t>> registered; // with the channel
    Context *ctx = nullptr;
    std::optional<viaduct::ConnectionId> native;
    std::vector<viaduct::ConnectionId> listeners; // a wildcard listen: one per device
    bool addr_resolved = false;
    bool route_resolved = false;
    std::atomic<bool> connected{false};     // set by the event reader, read by callers
    std::atomic<bool> was_connected{false}; // ESTABLISHED was seen
    std::uint32_t conn_qp = 0; // handle of the QP rdma_connect()/rdma_accept() gave the CM
    std::uint32_t req_ird = 0, req_ord = 0; // a request's: what accept(NULL) answers
    Id *listen_parent = nullptr;
    ibv_qp_init_attr listen_qp_attr{}; // rdma_create_ep() on a passive id
    bool has_listen_qp_attr = false;
    ibv_pd *own_pd = nullptr;
    bool own_cqs = false;

    std::mutex lock;
    std::condition_variable cv;
    int outstanding = 0; // events handed out, not acked

    Id() { live_ids().add(this); }
    ~Id() { live_ids().remove(this); }

    void hold() {
        std::lock_guard<std::mutex> g(lock);
        outstanding++;
    }
    void release() {
        std::lock_guard<std::mutex> g(lock);
        outstanding--;
        cv.notify_all();
    }
};

void EventChannel::add_id(Context *ctx, std::uint32_t handle, Id *id) {
    std::lock_guard<std::mutex> guard(lock);
    ids[{ctx->attr.name, handle}] = id;
    id->registered.emplace_back(ctx, handle);
}

Id *to_id(rdma_cm_id *id) noexcept {
    return reinterpret_cast<Id *>(id);
}

EventChannel *to_ec(rdma_event_channel *c) noexcept {
    return reinterpret_cast<EventChannel *>(c);
}

// Whether @cid (@c) is an id (event channel) of ours that is not destroyed.
bool is_id(const rdma_cm_id *cid) noexcept {
    return live_ids().contains(cid);
}
bool is_ec(const rdma_event_channel *c) noexcept {
    return live_channels().contains(c);
}

// @cid as our Id; throws EINVAL if it is not a live one.
Id *checked_id(rdma_cm_id *cid) {
    if (!is_id(cid))
        throw viaduct::Error(EINVAL, "not an rdma_cm id, or one already destroyed");
    return to_id(cid);
}
EventChannel *checked_ec(rdma_event_channel *c) {
    if (!is_ec(c))
        throw viaduct::Error(EINVAL, "not an event channel, or one already destroyed");
    return to_ec(c);
}

std::mutex contexts_lock;
std::map<std::string, Context *> contexts; // rdma_cm's, never closed

std::string address_string(const sockaddr *sa) {
    char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {};
    if (sa->sa_family == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(sa)->sin_addr, buf,
                    sizeof(buf));
    } else if (sa->sa_family == AF_INET6) {
        const auto *s6 = reinterpret_cast<const sockaddr_in6 *>(sa);
        ::inet_ntop(AF_INET6, &s6->sin6_addr, buf, sizeof(buf));
        if (s6->sin6_scope_id) {
            char ifname[IF_NAMESIZE] = {};
            if (::if_indextoname(s6->sin6_scope_id, ifname))
                return std::string(buf) + "%" + ifname;
        }
    }
    return buf;
}

std::uint16_t port_of(const sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in *>(sa)->sin_port);
    if (sa->sa_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_port);
    return 0;
}

void set_port(sockaddr *sa, std::uint16_t port) {
    if (sa->sa_family == AF_INET)
        reinterpret_cast<sockaddr_in *>(sa)->sin_port = htons(port);
    else if (sa->sa_family == AF_INET6)
        reinterpret_cast<sockaddr_in6 *>(sa)->sin6_port = htons(port);
}

socklen_t sa_len(const sockaddr *sa) {
    return sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

bool is_any(const sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr);
    return false;
}

void store_addr(sockaddr *dst, const sockaddr *src) {
    std::memcpy(dst, src, sa_len(src));
}

void store_socket_address(sockaddr *dst, const viaduct::SocketAddress &a) {
    sockaddr_storage ss{};
    if (a.family == AF_INET) {
        auto *s = reinterpret_cast<sockaddr_in *>(&ss);
        s->sin_family = AF_INET;
        ::inet_pton(AF_INET, a.address.c_str(), &s->sin_addr);
        s->sin_port = htons(a.port);
    } else if (a.family == AF_INET6) {
        auto *s = reinterpret_cast<sockaddr_in6 *>(&ss);
        s->sin6_family = AF_INET6;
        ::inet_pton(AF_INET6, a.address.c_str(), &s->sin6_addr);
        s->sin6_port = htons(a.port);
        s->sin6_scope_id = a.scope_id;
    } else {
        return;
    }
    store_addr(dst, reinterpret_cast<sockaddr *>(&ss));
}

// The device that has @sa as one of its interface's addresses.
Context *device_with_address(const sockaddr *sa) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (sa->sa_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(sa)->sin_addr, buf,
                    sizeof(buf));
    else if (sa->sa_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr, buf,
                    sizeof(buf));
    else
        throw viaduct::Error(EAFNOSUPPORT, "not an IP address");
    for (const std::string &name : device_names()) {
        Context *ctx = cm_context(name);
        for (const viaduct::Address &a : ctx->native.query().addresses)
            if (a.family == sa->sa_family && a.address == buf)
                return ctx;
    }
    return nullptr;
}

rdma_cm_event_type to_event_type(viaduct::CmEventType t) {
    using T = viaduct::CmEventType;
    switch (t) {
    case T::ConnectRequest:
        return RDMA_CM_EVENT_CONNECT_REQUEST;
    case T::Established:
        return RDMA_CM_EVENT_ESTABLISHED;
    case T::Rejected:
        return RDMA_CM_EVENT_REJECTED;
    case T::Unreachable:
    case T::Timeout:
        return RDMA_CM_EVENT_UNREACHABLE;
    case T::Disconnected:
        return RDMA_CM_EVENT_DISCONNECTED;
    case T::ConnectError:
        return RDMA_CM_EVENT_CONNECT_ERROR;
    case T::DeviceRemoved:
        return RDMA_CM_EVENT_DEVICE_REMOVAL;
    }
    return RDMA_CM_EVENT_CONNECT_ERROR;
}

int status_of(const viaduct::CmEvent &e) {
    if (e.status())
        return e.status();
    switch (e.type()) {
    case viaduct::CmEventType::Rejected:
        return -ECONNREFUSED;
    case viaduct::CmEventType::Timeout:
        return -ETIMEDOUT;
    case viaduct::CmEventType::Unreachable:
        return -EHOSTUNREACH;
    case viaduct::CmEventType::ConnectError:
        return -ECONNRESET;
    default:
        return 0;
    }
}

// The rdma_cm event for a libviaduct one; null if it is for nobody now.
Event *translate(EventChannel &ec, Context *ctx, viaduct::CmEvent nev) {
    const bool request = nev.type() == viaduct::CmEventType::ConnectRequest;
    Id *id = ec.find_id(ctx, request ? nev.listen_handle() : nev.handle());
    if (!id)
        return nullptr; // its id was destroyed; the event acks itself
    auto e = std::make_unique<Event>();
    e->ev.event = to_event_type(nev.type());
    e->ev.status = status_of(nev);
    // A connection the peer's TCP refused or reset is REJECTED on iWARP
    // (the kernel's rdma_cm maps it so); only a timeout is UNREACHABLE.
    if (e->ev.event == RDMA_CM_EVENT_UNREACHABLE &&
        (e->ev.status == -ECONNREFUSED || e->ev.status == -ECONNRESET))
        e->ev.event = RDMA_CM_EVENT_REJECTED;
    auto pd = nev.private_data();
    if (nev.type() == viaduct::CmEventType::ConnectRequest) {
        // @id is the listener; the request gets an id of its own.
        auto req = std::make_unique<Id>();
        req->channel = &ec;
        req->ctx = ctx;
        req->native.emplace(nev.connection());
        ec.add_id(ctx, req->native->handle(), req.get());
        // The peer's ORD is the IRD to grant it (and its IRD our ORD),
        // capped by the device as librdmacm caps them: siw asks for 128.
        req->req_ird = std::min(nev.ord(), ctx->attr.limits.max_ird);
        req->req_ord = std::min(nev.ird(), ctx->attr.limits.max_ord);
        req->listen_parent = id;
        rdma_cm_id &r = req->id;
        r.verbs = ctx->ibv();
        r.channel = &ec.ch;
        r.context = id->id.context;
        r.ps = id->id.ps;
        r.qp_type = id->id.qp_type;
        r.port_num = 1;
        store_socket_address(&r.route.addr.src_addr, nev.local());
        store_socket_address(&r.route.addr.dst_addr, nev.peer());
        e->ev.listen_id = &id->id;
        e->ev.id = &req.release()->id;
        e->ev.param.conn.responder_resources =
            static_cast<std::uint8_t>(std::min(nev.ord(), ctx->attr.limits.max_ird));
        e->ev.param.conn.initiator_depth =
            static_cast<std::uint8_t>(std::min(nev.ird(), ctx->attr.limits.max_ord));
    } else {
        e->ev.id = &id->id;
        e->ev.param.conn.responder_resources = static_cast<std::uint8_t>(nev.ord());
        e->ev.param.conn.initiator_depth = static_cast<std::uint8_t>(nev.ird());
        if (nev.type() == viaduct::CmEventType::Established) {
            id->connected = true;
            id->was_connected = true;
            store_socket_address(&id->id.route.addr.src_addr, nev.local());
            store_socket_address(&id->id.route.addr.dst_addr, nev.peer());
            if (id->id.qp)
                id->id.qp->state = IBV_QPS_RTS;
        } else if (nev.type() == viaduct::CmEventType::Disconnected) {
            id->connected = false;
            // As on every rdma-core device, a disconnected QP is in error
            // and what was posted to it completes flushed.
            // The QP may have been destroyed since: look it up, and hold
            // the table so that it cannot go while we use it.
            std::shared_lock<std::shared_mutex> guard(ctx->qps_lock);
            if (auto it = ctx->qps_by_handle.find(id->conn_qp); it != ctx->qps_by_handle.end()) {
                try {
                    it->second->native->modify(viaduct::QpState::Error);
                    it->second->qp.state = IBV_QPS_ERR;
                } catch (const viaduct::Error &) {
                    // already in Error (an abortive close flushed it)
                }
            }
        }
    }
    e->ev.param.conn.private_data_len =
        static_cast<std::uint8_t>(std::min<std::size_t>(pd.size(), 255));
    e->ev.param.conn.private_data = pd.empty() ? nullptr : pd.data();
    e->native.emplace(std::move(nev));
    e->counted = id;
    id->hold();
    return e.release();
}

void synthesize(Id *id, rdma_cm_event_type type, int status) {
    auto e = std::make_unique<Event>();
    e->ev.id = &id->id;
    e->ev.event = type;
    e->ev.status = status;
    e->counted = id;
    id->hold();
    id->channel->push(e.release());
}

Event *next_event(EventChannel &ec, bool block) {
    for (;;) {
        std::unique_lock<std::mutex> reading(ec.read_lock);
        {
            std::lock_guard<std::mutex> guard(ec.lock);
            if (!ec.synth.empty()) {
                Event *e = ec.synth.front();
                ec.synth.pop_front();
                std::uint64_t v;
                if (ec.synth.empty() && ::read(ec.efd, &v, sizeof(v)) < 0) {
                    // already drained
                }
                return e;
            }
        }
        std::vector<std::pair<viaduct::CmChannel *, Context *>> chans;
        {
            std::lock_guard<std::mutex> guard(ec.lock);
            for (auto &[name, c] : ec.natives)
                chans.emplace_back(c.get(), ec.contexts[name]);
        }
        for (auto &[c, ctx] : chans)
            if (std::optional<viaduct::CmEvent> nev = c->read(std::chrono::milliseconds(0)))
                if (Event *e = translate(ec, ctx, std::move(*nev)))
                    return e;
        reading.unlock();
        if (!block)
            throw viaduct::Error(EAGAIN, "no event");
        epoll_event ev;
        if (::epoll_wait(ec.ch.fd, &ev, 1, -1) < 0 && errno != EINTR)
            throw viaduct::Error(errno, "cannot wait for CM events");
    }
}

void ack(Event *e) {
    Id *id = e->counted;
    delete e; // the libviaduct event acks itself
    if (id)
        id->release();
}

// For synchronous ids (no channel): waits for the event that ends a step.
// Events of other ids that come first are kept for the channel's next
// reader.
void wait_sync(Id *id, rdma_cm_event_type want) {
    std::vector<Event *> others;
    Event *e = nullptr;
    try {
        while ((e = next_event(*id->channel, true))->ev.id != &id->id)
            others.push_back(e);
    } catch (...) {
        for (Event *o : others)
            id->channel->push(o);
        throw;
    }
    for (Event *o : others)
        id->channel->push(o);
    rdma_cm_event_type got = e->ev.event;
    int status = e->ev.status;
    ack(e);
    if (got != want)
        throw viaduct::Error(status ? -status : ECONNREFUSED, rdma_event_str(got));
}

EventChannel *make_channel() {
    auto ec = std::make_unique<EventChannel>();
    ec->ch.fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (ec->ch.fd < 0)
        throw viaduct::Error(errno, "cannot make the event channel");
    ec->efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ec->efd < 0)
        throw viaduct::Error(errno, "cannot make the event channel");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = ec->efd;
    if (::epoll_ctl(ec->ch.fd, EPOLL_CTL_ADD, ec->efd, &ev) < 0)
        throw viaduct::Error(errno, "cannot make the event channel");
    return ec.release();
}

ibv_qp *qp_for(Id *id, const rdma_conn_param *p) {
    if (id->id.qp)
        return id->id.qp;
    if (p && p->qp_num) {
        if (Qp *qp = find_qp_by_qpn(*id->ctx, p->qp_num))
            return &qp->qp;
    }
    throw viaduct::Error(EINVAL, "no QP for the connection");
}

viaduct::ConnectionOptions options_of(const rdma_conn_param *p, std::uint32_t ird,
                                      std::uint32_t ord) {
    viaduct::ConnectionOptions o;
    o.ird = ird;
    o.ord = ord;
    if (p) {
        o.private_data = std::span(static_cast<const std::byte *>(p->private_data),
                                   p->private_data ? p->private_data_len : 0);
        // RDMA_MAX_RESP_RES and RDMA_MAX_INIT_DEPTH ask for the default,
        // as without a conn_param (librdmacm's reading).
        if (p->responder_resources != RDMA_MAX_RESP_RES)
            o.ird = p->responder_resources;
        if (p->initiator_depth != RDMA_MAX_INIT_DEPTH)
            o.ord = p->initiator_depth;
    }
    return o;
}

void bind_id(Id *id, const sockaddr *addr) {
    if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
        throw viaduct::Error(EAFNOSUPPORT, "not an IP address");
    if (!is_any(addr)) {
        Context *ctx = device_with_address(addr);
        if (!ctx)
            throw viaduct::Error(ENODEV, "no viaduct device has that address");
        id->ctx = ctx;
        id->id.verbs = ctx->ibv();
        id->id.port_num = 1;
    }
    store_addr(&id->id.route.addr.src_addr, addr);
}

void resolve_addr(Id *id, const sockaddr *src, const sockaddr *dst) {
    if (src && src->sa_family)
        bind_id(id, src);
    if (!dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
        throw viaduct::Error(EINVAL, "no destination address");
    store_addr(&id->id.route.addr.dst_addr, dst);
    // The local address the route to @dst leaves from.
    int s = ::socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        throw viaduct::Error(errno, "cannot make a socket");
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    int err = 0;
    sockaddr_storage d{};
    store_addr(reinterpret_cast<sockaddr *>(&d), dst);
    if (port_of(dst) == 0)
        set_port(reinterpret_cast<sockaddr *>(&d), 9); // any port: only the route matters
    if (::connect(s, reinterpret_cast<sockaddr *>(&d), sa_len(dst)) < 0 ||
        ::getsockname(s, reinterpret_cast<sockaddr *>(&local), &len) < 0)
        err = errno;
    ::close(s);
    if (err) {
        synthesize(id, RDMA_CM_EVENT_ADDR_ERROR, -err);
        return;
    }
    Context *ctx = id->ctx;
    if (!ctx)
        ctx = device_with_address(reinterpret_cast<sockaddr *>(&local));
    if (!ctx) {
        synthesize(id, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV);
        return;
    }
    id->ctx = ctx;
    id->id.verbs = ctx->ibv();
    id->id.port_num = 1;
    if (!src || !src->sa_family) {
        set_port(reinterpret_cast<sockaddr *>(&local), 0);
        store_addr(&id->id.route.addr.src_addr, reinterpret_cast<sockaddr *>(&local));
    }
    if (!id->native) {
        id->native.emplace(id->channel->native_for(ctx), reinterpret_cast<std::uintptr_t>(id));
        id->channel->add_id(ctx, id->native->handle(), id);
    }
    id->addr_resolved = true;
    synthesize(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

} // namespace

Context *cm_context(const std::string &name) {
    std::lock_guard<std::mutex> guard(contexts_lock);
    auto it = contexts.find(name);
    if (it != contexts.end())
        return it->second;
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (!list)
        throw viaduct::Error(errno, "cannot list devices");
    ibv_context *c = nullptr;
    for (int i = 0; i < n && !c; ++i)
        if (name == list[i]->name)
            c = ibv_open_device(list[i]);
    int err = errno;
    ibv_free_device_list(list);
    if (!c)
        throw viaduct::Error(err ? err : ENODEV, "cannot open " + name);
    return contexts[name] = to_ctx(c);
}

} // namespace vv

using namespace vv;

VV_EXPORT rdma_event_channel *rdma_create_event_channel(void) {
    return guarded<rdma_event_channel *>(nullptr, [] { return &make_channel()->ch; });
}

VV_EXPORT void rdma_destroy_event_channel(rdma_event_channel *c) {
    std::unique_lock<std::mutex> g(channel_life_lock());
    if (!is_ec(c)) {
        errno = EINVAL;
        return;
    }
    EventChannel *ec = to_ec(c);
    live_channels().remove(ec); // new calls get EINVAL
    ec->destroyed = true;
    if (ec->callers)
        return; // the last rdma_get_cm_event() inside deletes it
    g.unlock();
    delete ec;
}

VV_EXPORT int rdma_create_id(rdma_event_channel *channel, rdma_cm_id **out, void *context,
                             rdma_port_space ps) {
    return guarded(-1, [&] {
        if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB)
            throw viaduct::Error(EOPNOTSUPP, "iWARP connects RC QPs only");
        auto id = std::make_unique<Id>();
        if (channel) {
            id->channel = checked_ec(channel);
        } else {
            // Synchronous: a channel of its own, which only its calls read.
            id->channel = make_channel();
            id->own_channel = true;
            id->sync = true;
        }
        id->id.channel = &id->channel->ch;
        id->id.context = context;
        id->id.ps = ps;
        id->id.qp_type = IBV_QPT_RC;
        *out = &id.release()->id;
        return 0;
    });
}

VV_EXPORT int rdma_destroy_id(rdma_cm_id *cid) {
    if (!is_id(cid)) {
        errno = EINVAL;
        return -1;
    }
    Id *id = to_id(cid);
    {
        // No event of the id is being read meanwhile: each was handed out
        // (counted, waited for below) or is dropped when read.
        std::lock_guard<std::mutex> reading(id->channel->read_lock);
        for (auto &[ctx, handle] : id->registered)
            id->channel->remove_id(ctx, handle);
    }
    {
        std::unique_lock<std::mutex> g(id->lock);
        id->cv.wait(g, [&] { return id->outstanding == 0; });
    }
    id->native.reset();
    id->listeners.clear();
    // The PD the id made for itself (rdma_create_qp() without one), once
    // nothing uses it; a QP the program keeps keeps it (EBUSY).
    if (id->own_pd) {
        int err = errno;
        ibv_dealloc_pd(id->own_pd);
        errno = err;
    }
    if (id->own_channel)
        delete id->channel;
    delete id;
    return 0;
}

VV_EXPORT int rdma_bind_addr(rdma_cm_id *cid, sockaddr *addr) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        if (!addr)
            throw viaduct::Error(EINVAL, "no address");
        bind_id(id, addr);
        return 0;
    });
}

VV_EXPORT int rdma_resolve_addr(rdma_cm_id *cid, sockaddr *src, sockaddr *dst, int) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        resolve_addr(id, src, dst);
        if (id->sync)
            wait_sync(id, RDMA_CM_EVENT_ADDR_RESOLVED);
        return 0;
    });
}

VV_EXPORT int rdma_resolve_route(rdma_cm_id *cid, int) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        if (!id->addr_resolved)
            throw viaduct::Error(EINVAL, "the address is not resolved");
        id->route_resolved = true;
        id->id.route.num_paths = 1;
        synthesize(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
        if (id->sync)
            wait_sync(id, RDMA_CM_EVENT_ROUTE_RESOLVED);
        return 0;
    });
}

VV_EXPORT int rdma_listen(rdma_cm_id *cid, int backlog) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        sockaddr *src = &id->id.route.addr.src_addr;
        if (src->sa_family != AF_INET && src->sa_family != AF_INET6)
            throw viaduct::Error(EINVAL, "bind the id first");
        std::uint32_t bl = backlog <= 0 ? 0u : static_cast<std::uint32_t>(std::min(backlog, 1024));
        std::string addr = address_string(src);
        std::uint16_t port = port_of(src);
        std::vector<Context *> ctxs;
        if (id->ctx) {
            ctxs.push_back(id->ctx);
        } else {
            for (const std::string &name : device_names())
                ctxs.push_back(cm_context(name));
            if (ctxs.empty())
                throw viaduct::Error(ENODEV, "no viaduct device");
        }
        std::vector<viaduct::ConnectionId> ls;
        for (Context *ctx : ctxs) {
            viaduct::ConnectionId l(id->channel->native_for(ctx),
                                    reinterpret_cast<std::uintptr_t>(id));
            port = l.listen(addr, port, bl);
            id->channel->add_id(ctx, l.handle(), id);
            ls.push_back(std::move(l));
        }
        set_port(src, port);
        id->listeners = std::move(ls);
        return 0;
    });
}

// The PD calls without one use: the id's, else one of its own.
static ibv_pd *default_pd(Id *id) {
    if (id->id.pd)
        return id->id.pd;
    if (!id->own_pd) {
        id->own_pd = ibv_alloc_pd(id->id.verbs);
        if (!id->own_pd)
            throw viaduct::Error(errno, "cannot allocate a PD");
    }
    return id->own_pd;
}

VV_EXPORT int rdma_create_qp(rdma_cm_id *cid, ibv_pd *pd, ibv_qp_init_attr *attr) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        if (!id->ctx)
            throw viaduct::Error(EINVAL, "the id has no device yet");
        if (pd && pd->context != id->id.verbs)
            throw viaduct::Error(EINVAL, "the PD is of another device");
        if (!pd)
            pd = default_pd(id);
        ibv_qp_init_attr a = *attr;
        if (id->id.srq && !a.srq)
            a.srq = id->id.srq; // as librdmacm: the id's SRQ (rdma_create_srq())
        if (!a.send_cq || !a.recv_cq) {
            // As librdmacm: CQs with channels of their own, on the id.
            auto make = [&](ibv_comp_channel *&ch, ibv_cq *&cq, std::uint32_t n) {
                ch = ibv_create_comp_channel(id->id.verbs);
                if (!ch)
                    throw viaduct::Error(errno, "cannot make a completion channel");
                cq = ibv_create_cq(id->id.verbs, static_cast<int>(std::max(1u, n)), cid, ch, 0);
                if (!cq)
                    throw viaduct::Error(errno, "cannot make a CQ");
            };
            if (!a.send_cq) {
                make(id->id.send_cq_channel, id->id.send_cq, a.cap.max_send_wr);
                a.send_cq = id->id.send_cq;
            }
            if (!a.recv_cq) {
                make(id->id.recv_cq_channel, id->id.recv_cq, a.cap.max_recv_wr);
                a.recv_cq = id->id.recv_cq;
            }
            id->own_cqs = true;
        }
        ibv_qp *qp = create_qp(pd, &a, true);
        *attr = a; // as librdmacm: the CQs and SRQ it chose, the caps made
        id->id.qp = qp;
        id->id.pd = pd;
        return 0;
    });
}

VV_EXPORT int rdma_create_qp_ex(rdma_cm_id *cid, ibv_qp_init_attr_ex *ex) {
    if (ex->comp_mask & ~static_cast<std::uint32_t>(IBV_QP_INIT_ATTR_PD)) {
        errno = EOPNOTSUPP;
        return -1;
    }
    ibv_qp_init_attr a{};
    a.qp_context = ex->qp_context;
    a.send_cq = ex->send_cq;
    a.recv_cq = ex->recv_cq;
    a.srq = ex->srq;
    a.cap = ex->cap;
    a.qp_type = ex->qp_type;
    a.sq_sig_all = ex->sq_sig_all;
    int r = rdma_create_qp(cid, (ex->comp_mask & IBV_QP_INIT_ATTR_PD) ? ex->pd : nullptr, &a);
    if (!r)
        ex->cap = a.cap;
    return r;
}

VV_EXPORT void rdma_destroy_qp(rdma_cm_id *cid) {
    if (!is_id(cid)) {
        errno = EINVAL;
        return;
    }
    Id *id = to_id(cid);
    if (id->id.qp) {
        ibv_destroy_qp(id->id.qp);
        id->id.qp = nullptr;
    }
    if (id->own_cqs) {
        for (ibv_cq **cq : {&id->id.send_cq, &id->id.recv_cq})
            if (*cq) {
                ibv_destroy_cq(*cq);
                *cq = nullptr;
            }
        for (ibv_comp_channel **ch : {&id->id.send_cq_channel, &id->id.recv_cq_channel})
            if (*ch) {
                ibv_destroy_comp_channel(*ch);
                *ch = nullptr;
            }
        id->own_cqs = false;
    }
}

VV_EXPORT int rdma_connect(rdma_cm_id *cid, rdma_conn_param *param) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        if (!id->route_resolved || !id->native)
            throw viaduct::Error(EINVAL, "resolve the address and route first");
        ibv_qp *qp = qp_for(id, param);
        const sockaddr *dst = &id->id.route.addr.dst_addr;
        id->native->connect(*to_qp(qp)->native, address_string(dst), port_of(dst),
                            options_of(param, 0, 0));
        to_qp(qp)->cm_owned = true;
        id->conn_qp = qp->handle;
        if (id->sync)
            wait_sync(id, RDMA_CM_EVENT_ESTABLISHED);
        return 0;
    });
}

VV_EXPORT int rdma_accept(rdma_cm_id *cid, rdma_conn_param *param) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        if (!id->native || !id->listen_parent)
            throw viaduct::Error(EINVAL, "not a connection request");
        ibv_qp *qp = qp_for(id, param);
        id->native->accept(*to_qp(qp)->native, options_of(param, id->req_ird, id->req_ord));
        to_qp(qp)->cm_owned = true;
        id->conn_qp = qp->handle;
        if (id->sync)
            wait_sync(id, RDMA_CM_EVENT_ESTABLISHED);
        return 0;
    });
}

VV_EXPORT int rdma_reject(rdma_cm_id *cid, const void *pd, std::uint8_t len) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        if (!id->native || !id->listen_parent)
            throw viaduct::Error(EINVAL, "not a connection request");
        id->native->reject(std::span(static_cast<const std::byte *>(pd), pd ? len : 0));
        return 0;
    });
}

VV_EXPORT int rdma_disconnect(rdma_cm_id *cid) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        if (!id->native)
            throw viaduct::Error(ENOTCONN, "not connected");
        // Once the peer has closed the connection there is nothing left
        // to do, and librdmacm on iWARP succeeds then too.
        if (id->was_connected && !id->connected)
            return 0;
        try {
            id->native->disconnect(false);
        } catch (const viaduct::Error &e) {
            if (!id->was_connected || (e.errnum() != EINVAL && e.errnum() != ENOTCONN))
                throw;
            // closed by the peer; its DISCONNECTED is on the way
        }
        return 0;
    });
}

VV_EXPORT int rdma_establish(rdma_cm_id *cid) {
    // iWARP's MPA exchange has no step left for the program to take.
    if (!is_id(cid) || !to_id(cid)->connected) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

VV_EXPORT int rdma_init_qp_attr(rdma_cm_id *cid, ibv_qp_attr *attr, int *mask) {
    if (!is_id(cid) || !to_id(cid)->ctx) {
        errno = EINVAL;
        return -1;
    }
    attr->port_num = 1;
    switch (attr->qp_state) {
    case IBV_QPS_INIT:
    case IBV_QPS_RTR:
        attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        *mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT;
        return 0;
    case IBV_QPS_RTS:
        *mask = IBV_QP_STATE | IBV_QP_PORT;
        return 0;
    default:
        errno = EINVAL;
        return -1;
    }
}

VV_EXPORT int rdma_get_cm_event(rdma_event_channel *channel, rdma_cm_event **event) {
    EventChannel *ec;
    {
        std::lock_guard<std::mutex> g(channel_life_lock());
        if (!is_ec(channel)) {
            errno = EINVAL;
            return -1;
        }
        ec = to_ec(channel);
        ec->callers++;
    }
    int ret = guarded(-1, [&] {
        *event = &next_event(*ec, !nonblocking(ec->ch.fd))->ev;
        return 0;
    });
    const int err = errno;
    bool last;
    {
        std::lock_guard<std::mutex> g(channel_life_lock());
        last = --ec->callers == 0 && ec->destroyed;
    }
    if (last)
        delete ec;
    errno = err;
    return ret;
}

VV_EXPORT int rdma_ack_cm_event(rdma_cm_event *event) {
    if (!live_events().contains(event)) {
        errno = EINVAL; // not an event, or one already acknowledged
        return -1;
    }
    ack(reinterpret_cast<Event *>(event));
    return 0;
}

VV_EXPORT int rdma_set_option(rdma_cm_id *cid, int level, int optname, void *optval,
                              size_t optlen) {
    // The IB ACK timeout: the kernel takes it for any RC id and uses it
    // only on InfiniBand and RoCE, so on an iWARP device it is accepted
    // and changes nothing (TCP retransmits); newer perftest sets it.
    if (!is_id(cid)) {
        errno = EINVAL;
        return -1;
    }
    if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT) {
        if (!optval || optlen != sizeof(std::uint8_t) || cid->qp_type != IBV_QPT_RC) {
            errno = EINVAL;
            return -1;
        }
        return 0;
    }
    // TOS, REUSEADDR, AFONLY and the IB path options are not settable on
    // viaduct's connections; say so as the kernel does for an unknown one.
    errno = ENOSYS;
    return -1;
}

VV_EXPORT __be16 rdma_get_src_port(rdma_cm_id *cid) {
    if (!is_id(cid))
        return 0;
    return htons(port_of(&cid->route.addr.src_addr));
}

VV_EXPORT __be16 rdma_get_dst_port(rdma_cm_id *cid) {
    if (!is_id(cid))
        return 0;
    return htons(port_of(&cid->route.addr.dst_addr));
}

VV_EXPORT const char *rdma_event_str(rdma_cm_event_type e) {
    switch (e) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR:
        return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR:
        return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST:
        return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
        return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR:
        return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE:
        return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED:
        return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED:
        return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED:
        return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN:
        return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR:
        return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE:
        return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
        return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
    default:
        return "UNKNOWN EVENT";
    }
}

VV_EXPORT int rdma_getaddrinfo(const char *node, const char *service, const rdma_addrinfo *hints,
                               rdma_addrinfo **res) {
    addrinfo h{};
    h.ai_socktype = SOCK_STREAM;
    bool passive = false;
    if (hints) {
        passive = (hints->ai_flags & RAI_PASSIVE) != 0;
        if (hints->ai_flags & RAI_NUMERICHOST)
            h.ai_flags |= AI_NUMERICHOST;
        h.ai_family = hints->ai_family;
        if (hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP &&
            hints->ai_port_space != RDMA_PS_IB) {
            errno = EOPNOTSUPP;
            return -1;
        }
        if (hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC) {
            errno = EOPNOTSUPP;
            return -1;
        }
    }
    if (passive)
        h.ai_flags |= AI_PASSIVE;
    addrinfo *ai = nullptr;
    if (int r = ::getaddrinfo(node, service, &h, &ai)) {
        errno = r == EAI_SYSTEM ? errno : (r == EAI_MEMORY ? ENOMEM : ENODEV);
        return r;
    }
    rdma_addrinfo *head = nullptr, **tail = &head;
    for (addrinfo *a = ai; a; a = a->ai_next) {
        auto *r = static_cast<rdma_addrinfo *>(std::calloc(1, sizeof(rdma_addrinfo)));
        auto *sa = static_cast<sockaddr *>(std::calloc(1, a->ai_addrlen));
        if (!r || !sa) {
            std::free(r);
            std::free(sa);
            ::freeaddrinfo(ai);
            rdma_freeaddrinfo(head);
            errno = ENOMEM;
            return EAI_MEMORY;
        }
        std::memcpy(sa, a->ai_addr, a->ai_addrlen);
        r->ai_flags = passive ? RAI_PASSIVE : 0;
        r->ai_family = a->ai_family;
        r->ai_qp_type = IBV_QPT_RC;
        r->ai_port_space = RDMA_PS_TCP;
        if (passive) {
            r->ai_src_len = a->ai_addrlen;
            r->ai_src_addr = sa;
        } else {
            r->ai_dst_len = a->ai_addrlen;
            r->ai_dst_addr = sa;
            if (hints && hints->ai_src_addr && hints->ai_src_len) {
                r->ai_src_addr = static_cast<sockaddr *>(std::calloc(1, hints->ai_src_len));
                if (r->ai_src_addr) {
                    std::memcpy(r->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
                    r->ai_src_len = hints->ai_src_len;
                }
            }
        }
        *tail = r;
        tail = &r->ai_next;
    }
    ::freeaddrinfo(ai);
    *res = head;
    return 0;
}

VV_EXPORT void rdma_freeaddrinfo(rdma_addrinfo *res) {
    while (res) {
        rdma_addrinfo *next = res->ai_next;
        std::free(res->ai_src_addr);
        std::free(res->ai_dst_addr);
        std::free(res->ai_src_canonname);
        std::free(res->ai_dst_canonname);
        std::free(res->ai_route);
        std::free(res->ai_connect);
        std::free(res);
        res = next;
    }
}

VV_EXPORT int rdma_create_ep(rdma_cm_id **out, rdma_addrinfo *res, ibv_pd *pd,
                             ibv_qp_init_attr *qp_init_attr) {
    rdma_cm_id *cid = nullptr;
    if (rdma_create_id(nullptr, &cid, nullptr,
                       res->ai_port_space ? static_cast<rdma_port_space>(res->ai_port_space)
                                          : RDMA_PS_TCP))
        return -1;
    Id *id = to_id(cid);
    int r = 0;
    if (res->ai_flags & RAI_PASSIVE) {
        r = res->ai_src_addr ? rdma_bind_addr(cid, res->ai_src_addr) : (errno = EINVAL, -1);
        if (!r && qp_init_attr) {
            id->listen_qp_attr = *qp_init_attr;
            id->has_listen_qp_attr = true;
            id->id.pd = pd;
        }
    } else {
        r = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000);
        if (!r)
            r = rdma_resolve_route(cid, 2000);
        if (!r && qp_init_attr)
            r = rdma_create_qp(cid, pd, qp_init_attr);
    }
    if (r) {
        int err = errno;
        rdma_destroy_qp(cid);
        rdma_destroy_id(cid);
        errno = err;
        return -1;
    }
    *out = cid;
    return 0;
}

VV_EXPORT void rdma_destroy_ep(rdma_cm_id *cid) {
    if (!is_id(cid)) {
        errno = EINVAL;
        return;
    }
    Id *id = to_id(cid);
    rdma_destroy_qp(cid);
    rdma_destroy_srq(cid);
    if (id->own_pd && ibv_dealloc_pd(id->own_pd) == 0)
        id->own_pd = nullptr;
    rdma_destroy_id(cid);
}

VV_EXPORT int rdma_get_request(rdma_cm_id *listen, rdma_cm_id **out) {
    return guarded(-1, [&] {
        Id *l = checked_id(listen);
        if (!l->own_channel)
            throw viaduct::Error(EINVAL, "rdma_get_request() is for synchronous ids");
        for (;;) {
            Event *e = next_event(*l->channel, true);
            if (e->ev.event != RDMA_CM_EVENT_CONNECT_REQUEST) {
                ack(e);
                continue;
            }
            rdma_cm_id *cid = e->ev.id;
            Id *id = to_id(cid);
            ack(e);
            // The request's id answers synchronously too, on the
            // listener's channel (so it must not outlive the listener).
            id->sync = true;
            if (l->has_listen_qp_attr) {
                ibv_qp_init_attr a = l->listen_qp_attr;
                if (rdma_create_qp(cid, l->id.pd, &a)) {
                    int err = errno;
                    rdma_destroy_id(cid);
                    throw viaduct::Error(err, "cannot create the request's QP");
                }
            }
            *out = cid;
            return 0;
        }
    });
}

VV_EXPORT ibv_context **rdma_get_devices(int *num) {
    return guarded<ibv_context **>(nullptr, [&] {
        std::vector<std::string> names = device_names();
        auto **list =
            static_cast<ibv_context **>(std::calloc(names.size() + 1, sizeof(ibv_context *)));
        if (!list)
            throw std::bad_alloc();
        for (std::size_t i = 0; i < names.size(); ++i)
            list[i] = cm_context(names[i])->ibv();
        if (num)
            *num = static_cast<int>(names.size());
        return list;
    });
}

VV_EXPORT void rdma_free_devices(ibv_context **list) {
    std::free(list);
}

VV_EXPORT int rdma_migrate_id(rdma_cm_id *, rdma_event_channel *) {
    errno = EOPNOTSUPP;
    return -1;
}

VV_EXPORT int rdma_notify(rdma_cm_id *, ibv_event_type) {
    errno = EOPNOTSUPP;
    return -1;
}

VV_EXPORT int rdma_join_multicast(rdma_cm_id *, sockaddr *, void *) {
    errno = EOPNOTSUPP; // no multicast on iWARP
    return -1;
}

VV_EXPORT int rdma_leave_multicast(rdma_cm_id *, sockaddr *) {
    errno = EOPNOTSUPP;
    return -1;
}

VV_EXPORT int rdma_join_multicast_ex(rdma_cm_id *, rdma_cm_join_mc_attr_ex *, void *) {
    errno = EOPNOTSUPP;
    return -1;
}

// An SRQ on the id (id->srq): the QP rdma_create_qp() makes on the id
// receives from it, and rdma_post_recv() posts to it.
VV_EXPORT int rdma_create_srq_ex(rdma_cm_id *cid, ibv_srq_init_attr_ex *attr) {
    return guarded(-1, [&] {
        Id *id = checked_id(cid);
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
            throw viaduct::Error(EINVAL, "no SRQ type");
        if (!id->ctx)
            throw viaduct::Error(EINVAL, "the id has no device yet");
        if (id->id.srq)
            throw viaduct::Error(EINVAL, "the id has an SRQ");
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
            attr->pd = default_pd(id);
            attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
        }
        if (attr->pd->context != id->id.verbs)
            throw viaduct::Error(EINVAL, "the PD is of another device");
        ibv_srq *srq = ibv_create_srq_ex(id->id.verbs, attr);
        if (!srq)
            throw viaduct::Error(errno, "cannot create the SRQ");
        if (!id->id.pd)
            id->id.pd = attr->pd;
        id->id.srq = srq;
        return 0;
    });
}

VV_EXPORT int rdma_create_srq(rdma_cm_id *cid, ibv_pd *pd, ibv_srq_init_attr *attr) {
    ibv_srq_init_attr_ex ex{};
    ex.srq_context = attr->srq_context;
    ex.attr = attr->attr;
    ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
    ex.srq_type = IBV_SRQT_BASIC;
    ex.pd = pd;
    int r = rdma_create_srq_ex(cid, &ex);
    attr->attr = ex.attr;
    return r;
}

VV_EXPORT void rdma_destroy_srq(rdma_cm_id *cid) {
    if (!is_id(cid)) {
        errno = EINVAL;
        return;
    }
    if (cid->srq && ibv_destroy_srq(cid->srq) == 0)
        cid->srq = nullptr;
}

VV_EXPORT int rdma_set_local_ece(rdma_cm_id *, ibv_ece *) {
    errno = EOPNOTSUPP;
    return -1;
}

VV_EXPORT int rdma_get_remote_ece(rdma_cm_id *, ibv_ece *) {
    errno = EOPNOTSUPP;
    return -1;
}

VV_EXPORT int rdma_reject_ece(rdma_cm_id *, const void *, std::uint8_t) {
    errno = EOPNOTSUPP;
    return -1;
}

// rsockets are not provided; with no rsocket descriptor in the process,
// rpoll() is poll().
VV_EXPORT int rpoll(pollfd *fds, nfds_t nfds, int timeout) {
    return ::poll(fds, nfds, timeout);
}
