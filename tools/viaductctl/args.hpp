// SPDX-License-Identifier: GPL-2.0
// Command-line grammar of viaductctl, kept apart from netlink for testing.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace viaductctl {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Command {
    enum class Kind { Help, Version, LinkAdd, LinkDel, LinkShow, DevShow };
    Kind kind = Kind::Help;
    std::string name;   // device name, empty for all
    std::string netdev; // link add
    bool json = false;
    bool pretty = false;
};

// Parses argv[1..]; throws UsageError with a message for the user.
Command parse_args(const std::vector<std::string> &args);

// True if @name is a valid device name: 1..15 of [A-Za-z0-9_.-].
bool valid_device_name(const std::string &name);

extern const char *const usage_text;

} // namespace viaductctl
