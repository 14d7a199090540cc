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

struct Command {
    enum class Kind { Help, Version, LinkAdd, LinkDel, LinkShow, DevShow, Stats, Res };
    Kind kind = Kind::Help;
    std::string name;           // device name; empty for all devices
    std::string netdev;         // link add: the interface
    std::uint32_t res_type = 0; // res: VIADUCT_RES_*, 0 for every type
    bool json = false;
    bool pretty = false;
};

// Parses argv[1..]. Options (-j/--json, -p/--pretty, -h/--help,
// -V/--version; short ones may be combined, as in -jp) may appear anywhere.
Command parse_args(const std::vector<std::string> &args);

// 1 to 15 characters of [A-Za-z0-9_.-], as the kernel accepts.
bool valid_device_name(const std::string &name);

extern const char *const usage_text;

} // namespace viaductctl
