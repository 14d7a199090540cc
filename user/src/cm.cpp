// SPDX-License-Identifier: GPL-2.0
// The connection manager: CM channels, connection ids and their events.
//
// Every id's state is registered with its channel, so that an event read
// from the channel holds the state of the id it is about: the kernel id is
// destroyed (CM_DESTROY_ID) only after its ConnectionId and every event of
// it are gone, and each event is acknowledged before that. The kernel
// refuses to destroy an id that still has events queued but unread
// (EBUSY); the channel then keeps the id's handle as an orphan, acks the
// orphan's events as it reads them and destroys it once it may.
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <net/if.h>
#include <set>
#include <sys/socket.h>
#include <unordered_map>

#include "objects.hpp"
#include "syscall.hpp"

namespace viaduct {

namespace {

enum class Role {
    Fresh,     // made by CM_CREATE_ID, not used yet
    Listener,  // listen()
    Active,    // connect() or convert_socket()
    Request,   // a CONNECT_REQUEST's id, not answered yet
    Answered,  // accept() or reject() was called
    HandedOff, // handoff() moved the request away: the kernel id is gone
};

const char *role_name(Role r) {
    switch (r) {
    case Role::Fresh:
        return "a new id";
    case Role::Listener:
        return "a listener";
    case Role::Active:
        return "an id that connected";
    case Role::Request:
        return "a connection request";
    case Role::Answered:
        return "a connection request already answered";
    case Role::HandedOff:
        return "a connection request handed off to another listener";
    }
    return "an id";
}

} // namespace

struct VIADUCT_LOCAL CmChannel::State {
    std::shared_ptr<Device::State> dev;
    detail::FileDescriptor fd;

    // The ids reporting to the channel, by handle, and the handles the
    // kernel would not destroy yet.
    std::mutex lock;
    std::unordered_map<std::uint32_t, std::weak_ptr<ConnectionId::State>> ids;
    std::set<std::uint32_t> orphans;

    // DESTROY_ID of @handle; an orphan if the kernel says EBUSY.
    void destroy_id(std::uint32_t handle) noexcept;
    // Acks @ev and retries the destroy if it is an orphan's; false if not.
    bool take_orphan_event(const viaduct_cm_event &ev) noexcept;

    ~State();
};

struct VIADUCT_LOCAL ConnectionId::State {
    std::shared_ptr<Device::State> dev;
    std::shared_ptr<CmChannel::State> channel;
    std::uint32_t handle = 0;
    Role role = Role::Fresh;
    bool request_mpa_v1 = false; // Request: the initiator's revision

    ~State();
};

namespace {

int ack_event(const Device::State &dev, std::uint32_t handle, std::uint32_t seq) noexcept {
    if (dev.inherited()) // the parent's event, in a child of fork()
        return 0;
    viaduct_cm_ack a{};
    a.handle = handle;
    a.seq = seq;
    return detail::do_ioctl(dev.fd.get(), VIADUCT_IOCTL_CM_ACK_EVENT, &a);
}

std::string id_name(std::uint32_t handle) {
    return "CM id " + std::to_string(handle);
}

// "192.0.2.1", "2001:db8::1", "fe80::1%eth0"; "" is the IPv4 any-address.
viaduct_sockaddr parse_address(std::string_view text, std::uint16_t port, const char *step) {
    viaduct_sockaddr sa{};
    sa.port = htons(port);
    std::string addr(text.empty() ? "0.0.0.0" : text);
    std::string scope;
    if (auto pct = addr.find('%'); pct != std::string::npos) {
        scope = addr.substr(pct + 1);
        addr.resize(pct);
    }
    if (scope.empty() && ::inet_pton(AF_INET, addr.c_str(), sa.addr) == 1) {
        sa.family = VIADUCT_AF_INET;
        return sa;
    }
    if (::inet_pton(AF_INET6, addr.c_str(), sa.addr) == 1) {
        sa.family = VIADUCT_AF_INET6;
        if (!scope.empty()) {
            sa.scope_id = ::if_nametoindex(scope.c_str());
            if (sa.scope_id == 0)
                throw Error(EINVAL, std::string("cannot ") + step + ": no interface '" + scope +
                                        "' for the scope of " + addr);
        }
        return sa;
    }
    throw Error(EINVAL, std::string("cannot ") + step + ": '" + std::string(text) +
                            "' is not an IPv4 or IPv6 address");
}

SocketAddress to_socket_address(const viaduct_sockaddr &sa) {
    SocketAddress r;
    r.port = ntohs(sa.port);
    r.scope_id = sa.scope_id;
    char buf[INET6_ADDRSTRLEN] = {};
    if (sa.family == VIADUCT_AF_INET) {
        r.family = AF_INET;
        ::inet_ntop(AF_INET, sa.addr, buf, sizeof(buf));
    } else if (sa.family == VIADUCT_AF_INET6) {
        r.family = AF_INET6;
        ::inet_ntop(AF_INET6, sa.addr, buf, sizeof(buf));
    }
    r.address = buf;
    return r;
}

void check_private_data(std::size_t len, bool mpa_v1, const std::string &step) {
    std::size_t max = mpa_v1 ? cm_private_data_max : cm_private_data_max_enhanced;
    if (len > max)
        throw Error(EINVAL, "cannot " + step + ": " + std::to_string(len) +
                                " bytes of private data, at most " + std::to_string(max) +
                                (mpa_v1 ? " in an MPA revision 1 frame"
                                        : " in an enhanced MPA frame (512 with mpa_v1)"));
}

viaduct_cm_conn_param to_param(const ConnectionOptions &o, std::uint32_t qp_handle, bool mpa_v1,
                               const std::string &step) {
    check_private_data(o.private_data.size(), mpa_v1, step);
    if (o.timeout.count() < 0 || o.timeout.count() > UINT32_MAX)
        throw Error(EINVAL, "cannot " + step + ": a timeout of " +
                                std::to_string(o.timeout.count()) + " ms is out of range");
    viaduct_cm_conn_param p{};
    p.private_data = reinterpret_cast<std::uintptr_t>(o.private_data.data());
    p.private_data_len = static_cast<std::uint32_t>(o.private_data.size());
    p.qp_handle = qp_handle;
    p.ird = o.ird;
    p.ord = o.ord;
    if (o.mpa_v1)
        p.flags |= VIADUCT_CM_F_MPA_V1;
    if (o.crc)
        p.flags |= VIADUCT_CM_F_CRC;
    if (o.p2p)
        p.flags |= VIADUCT_CM_F_P2P;
    p.timeout_ms = static_cast<std::uint32_t>(o.timeout.count());
    return p;
}

// " (ird at most N, ord at most M)": the device's limits.
std::string ird_ord_limits(const Device::State &dev) {
    return " (ird at most " + std::to_string(dev.attr.limits.max_ird) + ", ord at most " +
           std::to_string(dev.attr.limits.max_ord) + ")";
}

// The errno of a CM command, worded for the user.
Error cm_error(int err, const std::string &step) {
    switch (err) {
    case EADDRNOTAVAIL:
        return Error(err, "cannot " + step +
                              ": the address is not one of the device's, or the route to it "
                              "does not leave through the device's interface");
    case EADDRINUSE:
        return Error(err, "cannot " + step + ": the address and port are in use");
    case ENETUNREACH:
        return Error(err, "cannot " + step + ": no route to the destination");
    case EBUSY:
        return Error(err, "cannot " + step + ": the QP belongs to another connection");
    default:
        return detail::call_error(err, step);
    }
}

} // namespace

const char *to_string(CmEventType type) noexcept {
    switch (type) {
    case CmEventType::ConnectRequest:
        return "connect request";
    case CmEventType::Established:
        return "established";
    case CmEventType::Rejected:
        return "rejected";
    case CmEventType::Unreachable:
        return "unreachable";
    case CmEventType::Disconnected:
        return "disconnected";
    case CmEventType::Timeout:
        return "timeout";
    case CmEventType::ConnectError:
        return "connect error";
    case CmEventType::DeviceRemoved:
        return "device removed";
    }
    return "unknown CM event";
}

std::string SocketAddress::to_string() const {
    if (family == AF_INET6)
        return "[" + address + "]:" + std::to_string(port);
    return address + ":" + std::to_string(port);
}

// --- Channels -----------------------------------------------------------

void CmChannel::State::destroy_id(std::uint32_t handle) noexcept {
    if (dev->inherited()) // the parent's id, in a child of fork()
        return;
    viaduct_handle h{};
    h.handle = handle;
    // The kernel reuses a handle as soon as it is destroyed: the entry goes
    // under the same lock as the handle, before a concurrent create or an
    // incoming CONNECT_REQUEST can register the handle anew.
    std::lock_guard<std::mutex> guard(lock);
    int err = detail::do_ioctl(dev->fd.get(), VIADUCT_IOCTL_CM_DESTROY_ID, &h);
    if (err == EBUSY) {
        orphans.insert(handle);
    } else {
        orphans.erase(handle);
        ids.erase(handle);
    }
}

bool CmChannel::State::take_orphan_event(const viaduct_cm_event &ev) noexcept {
    {
        std::lock_guard<std::mutex> guard(lock);
        if (!orphans.count(ev.handle))
            return false;
    }
    ack_event(*dev, ev.handle, ev.seq);
    destroy_id(ev.handle);
    return true;
}

CmChannel::State::~State() {
    // No id state is left (each holds the channel), so whatever is queued
    // belongs to orphans: ack it and destroy them now rather than with the
    // context.
    viaduct_cm_event ev{};
    while (!orphans.empty() && !dev->inherited()) {
        ssize_t n = ::read(fd.get(), &ev, sizeof(ev));
        if (n != static_cast<ssize_t>(sizeof(ev))) {
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        take_orphan_event(ev);
    }
}

CmChannel::CmChannel(const Device &dev) {
    auto s = std::make_shared<State>();
    s->dev = dev.state();
    viaduct_cm_channel c{};
    if (int err = detail::do_ioctl(s->dev->fd.get(), VIADUCT_IOCTL_CREATE_CM_CHANNEL, &c))
        throw detail::call_error(err, "create a CM channel on " + s->dev->attr.name);
    s->fd.reset(c.fd);
    int flags = ::fcntl(c.fd, F_GETFL);
    if (flags < 0 || ::fcntl(c.fd, F_SETFL, flags | O_NONBLOCK) < 0)
        throw detail::call_error(errno, "make the CM channel non-blocking");
    state_ = std::move(s);
}

std::shared_ptr<CmChannel::State> CmChannel::state() const {
    detail::checked(state_, "CmChannel");
    return state_;
}

int CmChannel::fd() const {
    return state()->fd.get();
}

std::optional<CmEvent> CmChannel::read(std::chrono::milliseconds timeout) const {
    State &s = detail::checked(state_, "CmChannel");
    using Clock = std::chrono::steady_clock;
    const bool forever = timeout.count() < 0;
    const auto deadline = Clock::now() + (forever ? std::chrono::milliseconds(0) : timeout);
    for (;;) {
        auto ev = std::make_unique<viaduct_cm_event>();
        auto left =
            forever
                ? std::chrono::milliseconds(-1)
                : std::max(std::chrono::milliseconds(0),
                           std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
        if (!detail::read_record(s.fd.get(), ev.get(), sizeof(*ev), left, "CM channel"))
            return std::nullopt;
        if (s.take_orphan_event(*ev))
            continue; // an id the application is done with

        std::shared_ptr<ConnectionId::State> id;
        {
            std::lock_guard<std::mutex> guard(s.lock);
            if (auto it = s.ids.find(ev->handle); it != s.ids.end())
                id = it->second.lock();
        }
        if (!id && ev->type == VIADUCT_CM_EVENT_CONNECT_REQUEST) {
            // A new id the kernel made for the incoming connection: it is
            // the application's now, destroyed with its last reference.
            id = std::make_shared<ConnectionId::State>();
            id->dev = s.dev;
            id->channel = state_;
            id->handle = ev->handle;
            id->role = Role::Request;
            id->request_mpa_v1 = (ev->flags & VIADUCT_CM_F_MPA_V1) != 0;
            std::lock_guard<std::mutex> guard(s.lock);
            s.ids[id->handle] = id;
        }
        return CmEvent(std::move(ev), s.dev, std::move(id));
    }
}

bool detail::cm_id_registered(const ConnectionId &id) {
    auto s = id.state();
    std::lock_guard<std::mutex> guard(s->channel->lock);
    auto it = s->channel->ids.find(s->handle);
    return it != s->channel->ids.end() && it->second.lock() == s;
}

// --- Ids ----------------------------------------------------------------

ConnectionId::State::~State() {
    if (channel && handle)
        channel->destroy_id(handle);
}

ConnectionId::ConnectionId(const CmChannel &channel, std::uint64_t user_data) {
    auto s = std::make_shared<State>();
    s->channel = channel.state();
    s->dev = s->channel->dev;
    viaduct_cm_create_id c{};
    c.user_data = user_data;
    c.channel_fd = s->channel->fd.get();
    if (int err = detail::do_ioctl(s->dev->fd.get(), VIADUCT_IOCTL_CM_CREATE_ID, &c))
        throw detail::call_error(err, "create a CM id on " + s->dev->attr.name);
    s->handle = c.handle;
    {
        std::lock_guard<std::mutex> guard(s->channel->lock);
        s->channel->ids[c.handle] = s;
    }
    state_ = std::move(s);
}

std::shared_ptr<ConnectionId::State> ConnectionId::state() const {
    detail::checked(state_, "ConnectionId");
    return state_;
}

std::uint32_t ConnectionId::handle() const {
    return state()->handle;
}

namespace {

void expect_role(const ConnectionId::State &s, Role want, const std::string &step,
                 const char *advice) {
    if (s.role != want)
        throw Error(EINVAL, "cannot " + step + ": it is " + role_name(s.role) + "; " + advice);
}

} // namespace

std::uint16_t ConnectionId::listen(std::string_view address, std::uint16_t port,
                                   std::uint32_t backlog) {
    State &s = detail::checked(state_, "ConnectionId");
    std::string step = "listen on " + std::string(address.empty() ? "*" : address) + " port " +
                       std::to_string(port) + " with " + id_name(s.handle);
    expect_role(s, Role::Fresh, step, "an id is used for one thing only: create a new one");
    if (backlog > 1024)
        throw Error(EINVAL, "cannot " + step + ": a backlog of " + std::to_string(backlog) +
                                " is more than 1024");
    viaduct_cm_listen l{};
    l.handle = s.handle;
    l.backlog = backlog;
    // "": every address of the device, IPv4 and IPv6, on one IPv6 socket
    // (IPv4 peers appear as ::ffff:a.b.c.d); IPv4 alone where the kernel
    // has no IPv6.
    l.addr = parse_address(address.empty() ? "::" : address, port, step.c_str());
    int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_CM_LISTEN, &l);
    if (address.empty() && err == EAFNOSUPPORT) {
        l.addr = parse_address("0.0.0.0", port, step.c_str());
        err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_CM_LISTEN, &l);
    }
    if (err)
        throw cm_error(err, step);
    s.role = Role::Listener;
    return ntohs(l.addr.port);
}

void ConnectionId::connect(QueuePair &qp, std::string_view address, std::uint16_t port,
                           const ConnectionOptions &options) {
    State &s = detail::checked(state_, "ConnectionId");
    std::string step = "connect " + id_name(s.handle) + " to " + std::string(address) + " port " +
                       std::to_string(port);
    expect_role(s, Role::Fresh, step, "an id is used for one thing only: create a new one");
    if (port == 0)
        throw Error(EINVAL, "cannot " + step + ": port 0");
    viaduct_cm_connect c{};
    c.handle = s.handle;
    c.dst = parse_address(address, port, step.c_str());
    bool any = true;
    for (std::uint8_t b : c.dst.addr)
        any = any && b == 0;
    if (address.empty() || any)
        throw Error(EINVAL, "cannot " + step + ": the any-address is not a destination");
    c.param = to_param(options, qp.handle(), options.mpa_v1, step);
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_CM_CONNECT, &c)) {
        if (err == EINVAL)
            throw Error(err, "cannot " + step + ": the QP must be Idle and the options valid" +
                                 ird_ord_limits(*s.dev));
        throw cm_error(err, step);
    }
    s.role = Role::Active;
}

void ConnectionId::accept(QueuePair &qp, std::span<const std::byte> private_data) {
    ConnectionOptions o;
    o.private_data = private_data;
    accept(qp, o);
}

void ConnectionId::accept(QueuePair &qp, const ConnectionOptions &options) {
    State &s = detail::checked(state_, "ConnectionId");
    std::string step = "accept on " + id_name(s.handle);
    expect_role(s, Role::Request, step,
                "accept() answers the id of a CONNECT_REQUEST event (CmEvent::connection())");
    // The request's revision decides what the reply may carry.
    viaduct_cm_accept a{};
    a.handle = s.handle;
    a.param = to_param(options, qp.handle(), s.request_mpa_v1 || options.mpa_v1, step);
    a.param.timeout_ms = 0;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_CM_ACCEPT, &a)) {
        if (err == EINVAL)
            throw Error(err, "cannot " + step + ": the QP must be Idle, the options valid" +
                                 ird_ord_limits(*s.dev) + " and the peer still there");
        throw cm_error(err, step);
    }
    s.role = Role::Answered;
}

void ConnectionId::reject(std::span<const std::byte> private_data) {
    State &s = detail::checked(state_, "ConnectionId");
    std::string step = "reject on " + id_name(s.handle);
    expect_role(s, Role::Request, step,
                "reject() answers the id of a CONNECT_REQUEST event (CmEvent::connection())");
    check_private_data(private_data.size(), s.request_mpa_v1, step);
    viaduct_cm_reject r{};
    r.handle = s.handle;
    r.private_data_len = static_cast<std::uint32_t>(private_data.size());
    r.private_data = reinterpret_cast<std::uintptr_t>(private_data.data());
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_CM_REJECT, &r))
        throw cm_error(err, step);
    s.role = Role::Answered;
}

void ConnectionId::disconnect(bool abort) {
    State &s = detail::checked(state_, "ConnectionId");
    std::string step = std::string(abort ? "abort" : "disconnect") + " " + id_name(s.handle);
    if (s.role == Role::Fresh || s.role == Role::Listener || s.role == Role::Request)
        throw Error(EINVAL,
                    "cannot " + step + ": it is " + role_name(s.role) + ", not a connection");
    viaduct_cm_disconnect d{};
    d.handle = s.handle;
    d.flags = abort ? VIADUCT_CM_DISC_ABORT : 0;
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_CM_DISCONNECT, &d)) {
        if (err == EINVAL || err == ENOTCONN)
            throw Error(err, "cannot " + step + ": it is not connected (any more)");
        throw cm_error(err, step);
    }
}

void ConnectionId::convert_socket(int sockfd, QueuePair &qp, bool active,
                                  const ConnectionOptions &options) {
    convert_socket(sockfd, qp, active, options, SocketConversion{});
}

void ConnectionId::convert_socket(int sockfd, QueuePair &qp, bool active,
                                  const ConnectionOptions &options, const SocketConversion &carry) {
    State &s = detail::checked(state_, "ConnectionId");
    std::string step = "convert socket " + std::to_string(sockfd) + " with " + id_name(s.handle);
    expect_role(s, Role::Fresh, step, "an id is used for one thing only: create a new one");
    if (sockfd < 0)
        throw Error(EBADF, "cannot " + step + ": not a descriptor");
    viaduct_cm_convert_socket c{};
    c.sockfd = sockfd;
    c.handle = s.handle;
    c.param = to_param(options, qp.handle(), options.mpa_v1, step);
    if (active)
        c.param.flags |= VIADUCT_CM_F_ACTIVE;
    if (carry.last_message.size() > socket_conversion_send_max)
        throw Error(EINVAL, "cannot " + step + ": a last message of " +
                                std::to_string(carry.last_message.size()) + " bytes is more than " +
                                std::to_string(socket_conversion_send_max));
    if (carry.already_read.size() > socket_conversion_recv_max)
        throw Error(EINVAL, "cannot " + step + ": " + std::to_string(carry.already_read.size()) +
                                " bytes already read are more than an MPA frame (" +
                                std::to_string(socket_conversion_recv_max) + ")");
    c.send_data = reinterpret_cast<std::uintptr_t>(carry.last_message.data());
    c.send_len = static_cast<std::uint32_t>(carry.last_message.size());
    c.recv_data = reinterpret_cast<std::uintptr_t>(carry.already_read.data());
    c.recv_len = static_cast<std::uint32_t>(carry.already_read.size());
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_CM_CONVERT_SOCKET, &c)) {
        if (err == EINVAL)
            throw Error(err, "cannot " + step +
                                 ": it must be a connected TCP socket of this network namespace "
                                 "on one of the device's addresses, and the QP Idle");
        if (err == EBUSY)
            throw Error(err, "cannot " + step +
                                 ": its file is shared (dup(), fork(), another thread) or it has "
                                 "an upper layer protocol or another kernel user");
        if (err == ENOTSOCK)
            throw Error(err, "cannot " + step + ": not a socket");
        if (err == E2BIG && (c.send_len || c.recv_len))
            throw Error(EOPNOTSUPP,
                        "cannot " + step + ": this module cannot carry data with a conversion");
        if (err == EAGAIN)
            throw Error(err, "cannot " + step +
                                 ": the socket's send buffer has no room for the last message");
        throw cm_error(err, step);
    }
    s.role = Role::Active;
}

void ConnectionId::handoff(std::string_view address, std::uint16_t port) {
    State &s = detail::checked(state_, "ConnectionId");
    std::string step = "hand off " + id_name(s.handle) + " to port " + std::to_string(port);
    expect_role(s, Role::Request, step,
                "handoff() moves the id of a CONNECT_REQUEST event (CmEvent::connection())");
    if (port == 0)
        throw Error(EINVAL, "cannot " + step + ": port 0");
    viaduct_cm_handoff h{};
    h.handle = s.handle;
    h.addr = parse_address(address, port, step.c_str());
    if (address.empty())
        h.addr.family = 0; // any listener on the port, whatever its family
    if (int err = detail::do_ioctl(s.dev->fd.get(), VIADUCT_IOCTL_CM_HANDOFF, &h)) {
        if (err == ENOENT)
            throw Error(err, "cannot " + step + ": no listener there on " + s.dev->attr.name +
                                 " (or the id is gone)");
        if (err == EBUSY)
            throw Error(err, "cannot " + step + ": the listener's backlog or channel is full");
        if (err == EPERM)
            throw Error(err, "cannot " + step + ": the listener is another user's");
        if (err == ENOTTY)
            throw Error(EOPNOTSUPP, "cannot " + step + ": this module cannot hand off requests");
        throw cm_error(err, step);
    }
    // The kernel id is gone: its handle may name another object soon.
    {
        std::lock_guard<std::mutex> guard(s.channel->lock);
        if (auto it = s.channel->ids.find(s.handle); it != s.channel->ids.end())
            s.channel->ids.erase(it);
    }
    s.handle = 0;
    s.role = Role::HandedOff;
}

// --- Events -------------------------------------------------------------

const viaduct_cm_event &CmEvent::event() const {
    if (!ev_)
        throw Error(EBADF, "viaduct::CmEvent used after it was moved from");
    return *ev_;
}

CmEvent::CmEvent(std::unique_ptr<viaduct_cm_event> ev, std::shared_ptr<Device::State> dev,
                 std::shared_ptr<ConnectionId::State> id) noexcept
    : ev_(std::move(ev)), dev_(std::move(dev)), id_(std::move(id)), acked_(false) {}

CmEvent::CmEvent(CmEvent &&other) noexcept
    : ev_(std::move(other.ev_)), dev_(std::move(other.dev_)), id_(std::move(other.id_)),
      acked_(other.acked_) {
    other.acked_ = true;
}

CmEvent &CmEvent::operator=(CmEvent &&other) noexcept {
    if (this != &other) {
        if (!acked_)
            ack_event(*dev_, ev_->handle, ev_->seq);
        ev_ = std::move(other.ev_);
        dev_ = std::move(other.dev_);
        id_ = std::move(other.id_);
        acked_ = other.acked_;
        other.acked_ = true;
    }
    return *this;
}

CmEvent::~CmEvent() {
    // Before id_ lets go: the id may be destroyed only once this is acked.
    // A handed-off request's events went with its kernel id.
    if (!acked_ && !(id_ && id_->role == Role::HandedOff))
        ack_event(*dev_, ev_->handle, ev_->seq);
}

void CmEvent::ack() {
    if (acked_)
        return; // a moved-from event counts as acknowledged
    if (id_ && id_->role == Role::HandedOff) {
        acked_ = true; // gone with the kernel id handoff() moved away
        return;
    }
    if (int err = ack_event(*dev_, ev_->handle, ev_->seq))
        throw detail::call_error(err, "acknowledge CM event " + std::to_string(ev_->seq) + " of " +
                                          id_name(ev_->handle));
    acked_ = true;
}

SocketAddress CmEvent::local() const {
    return to_socket_address(event().local);
}

SocketAddress CmEvent::peer() const {
    return to_socket_address(event().peer);
}

std::span<const std::byte> CmEvent::private_data() const {
    const viaduct_cm_event &ev = event();
    std::size_t len = std::min<std::size_t>(ev.private_data_len, sizeof(ev.private_data));
    return std::as_bytes(std::span(ev.private_data, len));
}

ConnectionId CmEvent::connection() const {
    event();
    if (!id_)
        throw Error(ENOENT, "CM event " + std::to_string(ev_->seq) + " is about " +
                                id_name(ev_->handle) + ", which this library did not make");
    return ConnectionId(id_);
}

} // namespace viaduct
