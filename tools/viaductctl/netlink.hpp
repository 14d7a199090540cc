// SPDX-License-Identifier: GPL-2.0
// The viaduct generic-netlink family, seen through libnl-genl-3.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct nl_sock;

namespace viaductctl {

// A failure with the errno and, when the kernel gave one, its message.
struct NetlinkError : std::runtime_error {
    NetlinkError(int e, const std::string &what, std::string ext = {})
        : std::runtime_error(what), err(e), extack(std::move(ext)) {}
    int err;
    std::string extack;
};

struct LinkInfo {
    std::uint32_t index = 0;
    std::string name;
    std::uint32_t ifindex = 0;
    std::string ifname;
    std::uint32_t mtu = 0;
    std::uint32_t flags = 0;
    std::uint32_t abi_version = 0;
    std::uint32_t contexts = 0;
    std::vector<std::string> addresses; // "192.0.2.1/24"
    std::vector<std::pair<std::string, std::uint64_t>> limits;
};

class Genl {
public:
    Genl(); // throws NetlinkError(ENOENT, "...is viaduct.ko loaded?")
    ~Genl();
    Genl(const Genl &) = delete;
    Genl &operator=(const Genl &) = delete;

    LinkInfo link_add(const std::string &name, const std::string &ifname);
    void link_del(const std::string &name);
    std::vector<LinkInfo> link_get(const std::string &name); // empty name: dump

private:
    std::vector<LinkInfo> transact(std::uint8_t cmd, int flags, const std::string &name,
                                   const std::string &ifname);
    nl_sock *sock_ = nullptr;
    int family_ = -1;
};

} // namespace viaductctl
