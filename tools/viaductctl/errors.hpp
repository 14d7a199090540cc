// SPDX-License-Identifier: GPL-2.0
// Failures of a viaductctl command, and the sentences they become.
#pragma once

#include <stdexcept>
#include <string>

#include "args.hpp"

namespace viaductctl {

struct NetlinkError : std::runtime_error {
    enum class Source {
        Kernel,        // the kernel refused the request: @err is its errno
        FamilyMissing, // no "viaduct" generic-netlink family: module not loaded
        Local,         // the socket or libnl failed on this side
    };

    NetlinkError(Source src, int e, const std::string &what, std::string ext = {})
        : std::runtime_error(what), source(src), err(e), extack(std::move(ext)) {}

    Source source;
    int err;
    std::string extack; // the kernel's extended-ack message, if it sent one
};

// What to tell the user about @e, in the terms of the command that failed;
// the kernel's own message follows in parentheses when it adds something.
std::string explain(const NetlinkError &e, const Command &cmd);

} // namespace viaductctl
