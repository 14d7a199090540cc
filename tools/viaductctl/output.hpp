// SPDX-License-Identifier: GPL-2.0
// How viaductctl prints devices: text in the manner of rdma(8), or JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "link.hpp"

namespace viaductctl {

struct OutputStyle {
    bool json = false;
    bool pretty = false;
};

// ACTIVE (up, with carrier), NO_CARRIER (up, without) or DOWN.
std::string link_state(const LinkInfo &l);

// "link show": one line or JSON object per device, name, index, state, netdev.
void print_links(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style);

// "dev show": everything LINK_GET reports, addresses and limits included.
void print_devices(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style);

} // namespace viaductctl
