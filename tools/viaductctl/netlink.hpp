// SPDX-License-Identifier: GPL-2.0
// The viaduct generic-netlink family, seen through libnl-genl-3. Every libnl
// call of viaductctl is in netlink.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "errors.hpp"
#include "link.hpp"
#include "res.hpp"

struct nl_msg;
struct nl_sock;
struct nlattr;

namespace viaductctl {

// A generic-netlink socket with the "viaduct" family resolved. Every method
// throws NetlinkError; the constructor throws it with Source::FamilyMissing
// when viaduct.ko is not loaded.
class Genl {
public:
    Genl();
    Genl(const Genl &) = delete;
    Genl &operator=(const Genl &) = delete;

    LinkInfo link_add(const std::string &name, const std::string &ifname);
    void link_del(const std::string &name);
    // One device, or with an empty name all devices of the namespace.
    std::vector<LinkInfo> link_get(const std::string &name);
    // Module-wide counters and those of every context of the namespace.
    Stats stats();
    // The resources of the namespace's contexts; @type VIADUCT_RES_* or 0.
    std::vector<ResInfo> res(std::uint32_t type);

private:
    struct SocketDeleter {
        void operator()(nl_sock *sock) const noexcept;
    };

    std::vector<LinkInfo> transact(std::uint8_t cmd, int flags, const std::string &name,
                                   const std::string &ifname);
    // Sends one request (@fill adds its attributes) and hands every reply
    // message's top-level attributes to @on_msg until the ack or dump end.
    void exchange(std::uint8_t cmd, int flags, const std::function<bool(nl_msg *)> &fill,
                  const std::function<void(nlattr **)> &on_msg);

    std::unique_ptr<nl_sock, SocketDeleter> sock_;
    int family_ = -1;
};

} // namespace viaductctl
