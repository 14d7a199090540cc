// SPDX-License-Identifier: GPL-2.0
#include "args.hpp"

#include <cctype>

#include <uapi/viaduct.h>

namespace viaductctl {

const char *const usage_text = "Usage: viaductctl [OPTIONS] OBJECT COMMAND [ARGS]\n"
                               "       viaductctl link add NAME netdev IFNAME\n"
                               "       viaductctl link del NAME\n"
                               "       viaductctl link show [NAME]\n"
                               "       viaductctl dev [show] [NAME]\n"
                               "Options:\n"
                               "  -j, --json     print JSON\n"
                               "  -p, --pretty   indent JSON\n"
                               "  -h, --help     show this help\n"
                               "  -V, --version  show the version\n";

bool valid_device_name(const std::string &name) {
    if (name.empty() || name.size() >= VIADUCT_NAME_SIZE)
        return false;
    for (unsigned char c : name)
        if (!std::isalnum(c) && c != '_' && c != '.' && c != '-')
            return false;
    return true;
}

namespace {

void check_name(const std::string &name) {
    if (!valid_device_name(name))
        throw UsageError("invalid device name '" + name +
                         "': 1 to 15 characters of A-Z a-z 0-9 _ . -");
}

} // namespace

Command parse_args(const std::vector<std::string> &args) {
    Command cmd;
    std::vector<std::string> words;
    for (const auto &a : args) {
        if (a == "-j" || a == "--json")
            cmd.json = true;
        else if (a == "-p" || a == "--pretty")
            cmd.pretty = true;
        else if (a == "-h" || a == "--help" || a == "help")
            return Command{};
        else if (a == "-V" || a == "--version")
            return Command{Command::Kind::Version, {}, {}, false, false};
        else if (a.size() > 1 && a[0] == '-')
            throw UsageError("unknown option '" + a + "'");
        else
            words.push_back(a);
    }
    if (words.empty())
        throw UsageError("missing OBJECT");

    const std::string &object = words[0];
    std::string verb = words.size() > 1 ? words[1] : "show";
    std::size_t nargs = words.size() > 2 ? words.size() - 2 : 0;

    if (object == "link") {
        if (verb == "add") {
            if (nargs != 3 || words[3] != "netdev")
                throw UsageError("usage: viaductctl link add NAME netdev IFNAME");
            cmd.kind = Command::Kind::LinkAdd;
            cmd.name = words[2];
            cmd.netdev = words[4];
            check_name(cmd.name);
            if (cmd.netdev.empty() || cmd.netdev.size() >= VIADUCT_NAME_SIZE)
                throw UsageError("invalid interface name '" + cmd.netdev + "'");
        } else if (verb == "del" || verb == "delete") {
            if (nargs != 1)
                throw UsageError("usage: viaductctl link del NAME");
            cmd.kind = Command::Kind::LinkDel;
            cmd.name = words[2];
            check_name(cmd.name);
        } else if (verb == "show" || verb == "list") {
            if (nargs > 1)
                throw UsageError("usage: viaductctl link show [NAME]");
            cmd.kind = Command::Kind::LinkShow;
            if (nargs == 1)
                cmd.name = words[2];
        } else {
            throw UsageError("unknown link command '" + verb + "'");
        }
    } else if (object == "dev" || object == "device") {
        std::size_t first = 1;
        if (words.size() > 1 && (words[1] == "show" || words[1] == "list"))
            first = 2;
        if (words.size() > first + 1)
            throw UsageError("usage: viaductctl dev [show] [NAME]");
        cmd.kind = Command::Kind::DevShow;
        if (words.size() == first + 1)
            cmd.name = words[first];
    } else {
        throw UsageError("unknown object '" + object + "'");
    }
    if (!cmd.name.empty())
        check_name(cmd.name);
    return cmd;
}

} // namespace viaductctl
