// SPDX-License-Identifier: GPL-2.0
// The viaduct generic-netlink family, seen through libnl-genl-3. Every libnl
// call of viaductctl is in netlink.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "errors.hpp"
#include "link.hpp"

struct nl_sock;

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

private:
    struct SocketDeleter {
        void operator()(nl_sock *sock) const noexcept;
    };

    std::vector<LinkInfo> transact(std::uint8_t cmd, int flags, const std::string &name,
                                   const std::string &ifname);

    std::unique_ptr<nl_sock, SocketDeleter> sock_;
    int family_ = -1;
};

} // namespace viaductctl
