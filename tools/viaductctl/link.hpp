// SPDX-License-Identifier: GPL-2.0
// A viaduct device as VIADUCT_CMD_LINK_GET describes it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace viaductctl {

struct LinkInfo {
    std::uint32_t index = 0;
    std::string name;
    std::uint32_t ifindex = 0;
    std::string ifname;
    std::uint32_t mtu = 0;
    std::uint32_t flags = 0; // VIADUCT_DEV_F_*
    std::uint32_t abi_version = 0;
    std::uint32_t contexts = 0;         // open contexts that selected the device
    std::vector<std::string> addresses; // "192.0.2.1/24", "2001:db8::1/64"
    // In VIADUCT_A_LIMIT_* order: ("max_pd", 1024), ...
    std::vector<std::pair<std::string, std::uint64_t>> limits;
    // The device's objects not yet freed: ("pds", 1), ("mrs", 2), ...
    std::vector<std::pair<std::string, std::uint64_t>> resources;
};

} // namespace viaductctl
