// SPDX-License-Identifier: GPL-2.0
// The command-line grammar of viaductctl, kept apart from netlink so that it
// can be tested on any host.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace viaductctl {

// A command line that does not parse; main() prints it with the usage and
// exits 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A "res" filter: KEY VALUE, as rdma(8)'s "res show qp pid 123 lqpn 5".
struct ResFilter {
    std::string key; // "ifname", "pid", "comm", "ctxn", "handle", "lqpn"
    std::string value;
};

struct Command {
    enum class Kind { Help, Version, LinkAdd, LinkDel, LinkShow, DevShow, Stats, Res, Limits };
    Kind kind = Kind::Help;
    std::string help_object;    // Help: "link", "dev", "stats", "res", "limits"; empty for all
    std::string name;           // device name; empty for all devices
    std::string netdev;         // link add: the interface
    std::uint32_t res_type = 0; // res: VIADUCT_RES_*, 0 for every type
    std::vector<ResFilter> filters;
    bool json = false;
    bool pretty = false;
    bool details = false;
};

// Parses argv[1..] with getopt_long(): -j/--json, -p/--pretty,
// -d/--details, -h/--help, -V/--version, which may be combined (-jp) and
// appear anywhere. Keywords may be abbreviated to any prefix, as in
// iproute2 ("dev sh", "l a vd0 t viaduct n eth0"); where a prefix is
// ambiguous, the keyword listed first in the usage wins.
Command parse_args(const std::vector<std::string> &args);

// The usage of one object ("link", "dev", "stats", "res", "limits"), or of all.
std::string usage_of(const std::string &object);

// 1 to 15 characters of [A-Za-z0-9_.-], as the kernel accepts.
bool valid_device_name(const std::string &name);

extern const char *const usage_text;

} // namespace viaductctl
