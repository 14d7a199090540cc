// SPDX-License-Identifier: GPL-2.0
//
// The private CM wrapper of viaduct-perf: see raw_cm.hpp.
#include "raw_cm.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <viaduct/viaduct.hpp>

namespace perf {

namespace {

void cm_ioctl(int fd, unsigned long cmd, void *arg, const std::string &what) {
    while (::ioctl(fd, cmd, arg) < 0) {
        if (errno == EINTR)
            continue;
        int err = errno;
        throw viaduct::Error(err, what + ": " + std::strerror(err));
    }
}

} // namespace

RawCm::RawCm(int dev_fd) : dev_fd_(dev_fd) {
    viaduct_cm_channel ch{};
    ch.fd = -1;
    cm_ioctl(dev_fd_, VIADUCT_IOCTL_CREATE_CM_CHANNEL, &ch, "cannot create a CM channel");
    ch_ = ch.fd;
}

RawCm::~RawCm() {
    if (ch_ >= 0)
        ::close(ch_);
}

std::uint32_t RawCm::create_id() {
    viaduct_cm_create_id c{};
    c.channel_fd = ch_;
    cm_ioctl(dev_fd_, VIADUCT_IOCTL_CM_CREATE_ID, &c, "cannot create a CM id");
    return c.handle;
}

viaduct_sockaddr parse_address(const std::string &addr, std::uint16_t port) {
    viaduct_sockaddr a{};
    a.port = htons(port);
    if (addr.empty()) {
        a.family = VIADUCT_AF_INET;
    } else if (::inet_pton(AF_INET, addr.c_str(), a.addr) == 1) {
        a.family = VIADUCT_AF_INET;
    } else if (::inet_pton(AF_INET6, addr.c_str(), a.addr) == 1) {
        a.family = VIADUCT_AF_INET6;
    } else {
        throw viaduct::Error(EINVAL, "'" + addr + "' is not an IPv4 or IPv6 address");
    }
    return a;
}

void RawCm::listen(std::uint32_t id, const std::string &addr, std::uint16_t port) {
    viaduct_cm_listen l{};
    l.handle = id;
    l.addr = parse_address(addr, port);
    cm_ioctl(dev_fd_, VIADUCT_IOCTL_CM_LISTEN, &l,
             "cannot listen on " + (addr.empty() ? std::string("*") : addr) + " port " +
                 std::to_string(port));
}

void RawCm::connect(std::uint32_t id, const std::string &addr, std::uint16_t port,
                    std::uint32_t qp_handle, std::span<const std::uint8_t> priv) {
    viaduct_cm_connect c{};
    c.handle = id;
    c.dst = parse_address(addr, port);
    c.param.qp_handle = qp_handle;
    c.param.private_data = reinterpret_cast<std::uintptr_t>(priv.data());
    c.param.private_data_len = static_cast<std::uint32_t>(priv.size());
    cm_ioctl(dev_fd_, VIADUCT_IOCTL_CM_CONNECT, &c,
             "cannot connect to " + addr + " port " + std::to_string(port));
}

void RawCm::accept(std::uint32_t id, std::uint32_t qp_handle, std::span<const std::uint8_t> priv) {
    viaduct_cm_accept a{};
    a.handle = id;
    a.param.qp_handle = qp_handle;
    a.param.private_data = reinterpret_cast<std::uintptr_t>(priv.data());
    a.param.private_data_len = static_cast<std::uint32_t>(priv.size());
    cm_ioctl(dev_fd_, VIADUCT_IOCTL_CM_ACCEPT, &a, "cannot accept a connection");
}

void RawCm::reject(std::uint32_t id, const std::string &why) {
    viaduct_cm_reject r{};
    r.handle = id;
    r.private_data = reinterpret_cast<std::uintptr_t>(why.data());
    r.private_data_len =
        static_cast<std::uint32_t>(std::min<std::size_t>(why.size(), VIADUCT_CM_PRIVATE_DATA_MAX));
    cm_ioctl(dev_fd_, VIADUCT_IOCTL_CM_REJECT, &r, "cannot reject a connection");
}

std::optional<viaduct_cm_event> RawCm::next_event(int timeout_ms) {
    pollfd p{ch_, POLLIN, 0};
    int n;
    while ((n = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
    }
    if (n < 0)
        throw viaduct::Error(errno, std::string("poll on the CM channel: ") + std::strerror(errno));
    if (n == 0)
        return std::nullopt;
    viaduct_cm_event ev{};
    ssize_t got = ::read(ch_, &ev, sizeof(ev));
    if (got != static_cast<ssize_t>(sizeof(ev))) {
        int err = got < 0 ? errno : EIO;
        throw viaduct::Error(err, std::string("reading a CM event: ") + std::strerror(err));
    }
    viaduct_cm_ack ack{ev.handle, ev.seq};
    cm_ioctl(dev_fd_, VIADUCT_IOCTL_CM_ACK_EVENT, &ack, "cannot acknowledge a CM event");
    return ev;
}

const char *cm_event_name(std::uint32_t type) {
    switch (type) {
    case VIADUCT_CM_EVENT_CONNECT_REQUEST:
        return "CONNECT_REQUEST";
    case VIADUCT_CM_EVENT_ESTABLISHED:
        return "ESTABLISHED";
    case VIADUCT_CM_EVENT_REJECTED:
        return "REJECTED";
    case VIADUCT_CM_EVENT_UNREACHABLE:
        return "UNREACHABLE";
    case VIADUCT_CM_EVENT_DISCONNECTED:
        return "DISCONNECTED";
    case VIADUCT_CM_EVENT_TIMEOUT:
        return "TIMEOUT";
    case VIADUCT_CM_EVENT_CONNECT_ERROR:
        return "CONNECT_ERROR";
    case VIADUCT_CM_EVENT_DEVICE_REMOVED:
        return "DEVICE_REMOVED";
    default:
        return "unknown";
    }
}

} // namespace perf
