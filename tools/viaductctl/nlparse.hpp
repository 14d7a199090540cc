// SPDX-License-Identifier: GPL-2.0
// Parsing the viaduct generic-netlink family's messages, apart from the
// socket so that the host tests can feed it messages they build.
#pragma once

#include <linux/netlink.h>
#include <string>

#include "link.hpp"
#include "res.hpp"

struct nlattr;

namespace viaductctl {

// A LINK_GET/LINK_ADD reply's top-level attributes (tb[VIADUCT_A_*]).
LinkInfo parse_link(nlattr **tb);

// A VIADUCT_A_STATS nest (null: none).
Counters parse_counters(nlattr *nest);

// The context a STATS_GET or RES_GET reply is about.
Owner parse_owner(nlattr **tb);

// A RES_GET reply's top-level attributes.
ResInfo parse_res(nlattr **tb);

// The kernel's extended-ack message (NLMSGERR_ATTR_MSG), which follows the
// echoed request in an error reply when the socket asked for
// NETLINK_EXT_ACK; @err is the payload of that reply, with its nlmsghdr
// just in front. Empty if there is none or the reply is malformed.
std::string extack_message(const nlmsgerr *err);

} // namespace viaductctl
