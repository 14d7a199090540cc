// SPDX-License-Identifier: GPL-2.0
#include "errors.hpp"

#include <cerrno>
#include <cstring>

namespace viaductctl {

namespace {

std::string kernel_error(int err, const Command &cmd) {
    using Kind = Command::Kind;
    switch (err) {
    case ENODEV:
        if (cmd.kind == Kind::LinkAdd)
            return "interface '" + cmd.netdev + "' not found in this network namespace";
        return "no viaduct device '" + cmd.name + "' in this network namespace";
    case EEXIST:
        return "device name '" + cmd.name + "' already exists in this network namespace";
    case EBUSY:
        if (cmd.kind == Kind::LinkAdd)
            return "interface '" + cmd.netdev + "' already has a viaduct device";
        break;
    case EPERM:
    case EACCES:
        return "permission denied: adding and removing devices needs CAP_NET_ADMIN";
    case EINVAL:
        if (cmd.kind == Kind::LinkAdd)
            return "invalid request for device '" + cmd.name + "' on '" + cmd.netdev + "'";
        break;
    default:
        break;
    }
    return std::strerror(err);
}

} // namespace

std::string explain(const NetlinkError &e, const Command &cmd) {
    if (e.source != NetlinkError::Source::Kernel)
        return e.what();
    std::string msg = kernel_error(e.err, cmd);
    if (!e.extack.empty() && e.extack != msg)
        msg += " (kernel: " + e.extack + ")";
    return msg;
}

} // namespace viaductctl
