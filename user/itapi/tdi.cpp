// SPDX-License-Identifier: GPL-2.0
//
// IT-API connection management, Transport-Dependent Interface (TDI):
// it_socket_convert, over the core's socket conversion
// (viaduct::ConnectionId::convert_socket; Documentation/itapi.rst,
// "Socket conversion").
//
// Roles (the document's appendix B.6): the Conversion Initiator passes
// the Last ULP Streaming-Mode Message, which is sent on the socket, and
// then answers the peer's MPA request: it is the RDMA responder, in the
// passive states (PASSIVE_WAIT_RDMA_TRANS_REQ, then CONNECTED). The
// Conversion Responder has read that message and sends the MPA request:
// the RDMA initiator, ACTIVE1_CONNECTION_PENDING then CONNECTED. No
// IRD/ORD and no private data are exchanged for the consumer: the
// ESTABLISHED event has both zero and private_data_present cleared.
//
// The socket becomes the core's for good, and the core closes the
// descriptor it is given. The document lets the consumer close @sd (or
// set SO_KEEPALIVE on it) afterwards, so @sd must stay a descriptor of its
// own with no moment at which its number is free for another thread's
// open(): the socket moves to a second descriptor, @sd is atomically made
// to name an inert file (dup3() of /dev/null: close() is harmless,
// setsockopt() fails, as the page allows), and the core takes the second
// one. A socket shared with another descriptor or process is refused
// (IT_ERR_INVALID_SD_STATE).
#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cm.hpp"

namespace itapi {

namespace {

// What it_socket_convert makes of @sd: IT_SUCCESS for a connected TCP
// socket.
it_status_t check_socket(int sd) {
    struct stat st {};
    if (sd < 0 || ::fstat(sd, &st) != 0 || !S_ISSOCK(st.st_mode))
        return IT_ERR_INVALID_SD;
    int type = 0, proto = 0, domain = 0;
    socklen_t len = sizeof(type);
    if (::getsockopt(sd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        return IT_ERR_INVALID_SD;
    len = sizeof(proto);
    if (::getsockopt(sd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) != 0)
        return IT_ERR_INVALID_SD;
    len = sizeof(domain);
    if (::getsockopt(sd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
        return IT_ERR_INVALID_SD;
    // "an sd not corresponding to a TCP connection": not supported
    if (type != SOCK_STREAM || proto != IPPROTO_TCP || (domain != AF_INET && domain != AF_INET6))
        return IT_ERR_OP_NOT_SUPPORTED;
    sockaddr_storage peer{};
    len = sizeof(peer);
    if (::getpeername(sd, reinterpret_cast<sockaddr *>(&peer), &len) != 0)
        return IT_ERR_INVALID_SD_STATE;
    return IT_SUCCESS;
}

// Sends all of @msg on @sd, a blocking or non-blocking socket.
bool send_all(int sd, const unsigned char *msg, std::size_t len) {
    while (len > 0) {
        ssize_t n = ::send(sd, msg, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                pollfd p{sd, POLLOUT, 0};
                if (::poll(&p, 1, -1) < 0 && errno != EINTR)
                    return false;
                continue;
            }
            return false;
        }
        msg += n;
        len -= static_cast<std::size_t>(n);
    }
    return true;
}

// @sd's socket moved to a descriptor of its own, @sd naming /dev/null in
// its place; undo() puts it back (the conversion failed).
class Swap {
public:
    explicit Swap(int sd) : sd_(sd) {
        const int fdflags = ::fcntl(sd, F_GETFD);
        moved_ = ::fcntl(sd, F_DUPFD_CLOEXEC, 0);
        const int inert = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fdflags < 0 || moved_ < 0 || inert < 0 ||
            ::dup3(inert, sd, (fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
            if (inert >= 0)
                ::close(inert);
            if (moved_ >= 0)
                ::close(moved_);
            moved_ = -1;
            return;
        }
        ::close(inert);
        cloexec_ = fdflags & FD_CLOEXEC;
    }
    Swap(const Swap &) = delete;
    Swap &operator=(const Swap &) = delete;
    ~Swap() {
        if (moved_ >= 0 && !taken_) {
            ::dup3(moved_, sd_, cloexec_ ? O_CLOEXEC : 0);
            ::close(moved_);
        }
    }

    bool ok() const noexcept { return moved_ >= 0; }
    int fd() const noexcept { return moved_; }
    void taken() noexcept { taken_ = true; } // the core closed fd()

private:
    int sd_;
    int moved_ = -1;
    bool cloexec_ = false;
    bool taken_ = false;
};

} // namespace

} // namespace itapi

using namespace itapi;

it_status_t it_socket_convert(int sd, it_ep_handle_t ep_handle, it_sc_flags_t flags,
                              const unsigned char *msg, size_t len) {
    Ep *ep = lookup<Ep>(ep_handle);
    if (ep == nullptr)
        return IT_ERR_INVALID_EP;
    if (static_cast<unsigned>(flags) & ~static_cast<unsigned>(IT_SC_NO_REQ_REP))
        return IT_ERR_INVALID_FLAGS;
    // Without the MPA startup (RDMAC peers): the core always runs it.
    if (flags & IT_SC_NO_REQ_REP)
        return IT_ERR_OP_NOT_SUPPORTED;
    // The role is the message's: a Responder passes none.
    if ((len > 0) != (msg != nullptr))
        return IT_ERR_INVALID_FLAGS;
    if (it_status_t st = check_socket(sd); st != IT_SUCCESS)
        return st;
    it_status_t err = IT_SUCCESS;
    IaCm *cm = ia_cm(*ep->ia, err);
    if (cm == nullptr)
        return err;

    const bool initiator = len > 0;
    std::lock_guard<std::mutex> g(cm->lock);
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
        c.tdi = true;
        c.passive = initiator;
        const it_ep_state_rc_t pending = initiator ? IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ
                                                   : IT_EP_STATE_ACTIVE1_CONNECTION_PENDING;
        // The Last ULP Streaming-Mode Message goes first, as the last bytes
        // of the stream: sent by the core as it takes the socket over where
        // it can (VIADUCT_DEV_CAP_CONVERT_DATA, a message that fits), else
        // here; the peer's MPA request, which can only follow it, waits in
        // the socket until the core reads it.
        viaduct::SocketConversion carry;
        const bool carried = initiator && (ep->ia->attr.caps & VIADUCT_DEV_CAP_CONVERT_DATA) &&
                             len <= viaduct::socket_conversion_send_max;
        if (carried)
            carry.last_message = std::as_bytes(std::span(msg, len));
        Swap swap(sd);
        if (!swap.ok())
            return IT_ERR_RESOURCES;
        if (!ep_transition(*ep, {IT_EP_STATE_UNCONNECTED}, pending, nullptr))
            return IT_ERR_INVALID_EP_STATE;
        try {
            // The MPA initiator is the Conversion Responder. On success the
            // socket is the core's and the descriptor it was given closed.
            if (carried) {
                try {
                    id.convert_socket(swap.fd(), *ep->qp, false, {}, carry);
                } catch (const viaduct::Error &e) {
                    if (e.errnum() != EAGAIN)
                        throw;
                    // no room in the send buffer now: send it ourselves
                    if (!send_all(swap.fd(), msg, len))
                        throw viaduct::Error(ENOTCONN, "send the last streaming-mode message");
                    id.convert_socket(swap.fd(), *ep->qp, false);
                }
            } else {
                if (initiator && !send_all(swap.fd(), msg, len))
                    throw viaduct::Error(ENOTCONN, "send the last streaming-mode message");
                id.convert_socket(swap.fd(), *ep->qp, !initiator);
            }
            swap.taken();
        } catch (const viaduct::Error &) {
            ep_transition(*ep, {pending}, IT_EP_STATE_UNCONNECTED, nullptr);
            throw;
        }
        c.id.emplace(std::move(id));
        cm->conns[h] = ep;
        return IT_SUCCESS;
    } catch (const viaduct::Error &e) {
        switch (e.errnum()) {
        case EBADF:
        case ENOTSOCK:
            return IT_ERR_INVALID_SD;
        case ENOTCONN:
        case EINVAL:
        case EADDRNOTAVAIL:
        case EBUSY:
            // not connected (any more), not on the device's addresses,
            // shared with another descriptor or process, or driven by
            // something else already
            return IT_ERR_INVALID_SD_STATE;
        case EOPNOTSUPP:
            return IT_ERR_OP_NOT_SUPPORTED;
        default:
            return status_of_errno(e.errnum(), IT_ERR_RESOURCES);
        }
    } catch (const std::exception &) {
        return IT_ERR_RESOURCES;
    }
}
