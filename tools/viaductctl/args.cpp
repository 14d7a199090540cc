// SPDX-License-Identifier: GPL-2.0
#include "args.hpp"

#include <viaduct/viaduct-abi.h>

#include "res.hpp"

namespace viaductctl {

const char *const usage_text = "Usage: viaductctl [OPTIONS] OBJECT COMMAND [ARGS]\n"
                               "       viaductctl link add NAME netdev IFNAME\n"
                               "       viaductctl link del NAME\n"
                               "       viaductctl link show [NAME]\n"
                               "       viaductctl dev [show] [NAME]\n"
                               "       viaductctl stats [show]\n"
                               "       viaductctl res [show] [pd | mr | cq | qp]\n"
                               "Options:\n"
                               "  -j, --json     print JSON\n"
                               "  -p, --pretty   indent the JSON of --json\n"
                               "  -h, --help     show this help\n"
                               "  -V, --version  show the version\n";

namespace {

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

void check_name(const std::string &name) {
    if (!valid_device_name(name))
        throw UsageError("invalid device name '" + name +
                         "': 1 to 15 characters of A-Z a-z 0-9 _ . -");
}

void check_netdev(const std::string &ifname) {
    // The kernel's rules for interface names (IFNAMSIZ, no '/', ':' or
    // blanks); anything else is for the kernel to find or not.
    bool ok = !ifname.empty() && ifname.size() < VIADUCT_NAME_SIZE && ifname != "." &&
              ifname != ".." && ifname.find_first_of("/: \t\n") == std::string::npos;
    if (!ok)
        throw UsageError("invalid interface name '" + ifname + "'");
}

bool is_word(const std::string &s, std::initializer_list<const char *> words) {
    for (const char *w : words)
        if (s == w)
            return true;
    return false;
}

} // namespace

bool valid_device_name(const std::string &name) {
    if (name.empty() || name.size() >= VIADUCT_NAME_SIZE)
        return false;
    for (char c : name)
        if (!name_char(c))
            return false;
    return true;
}

Command parse_args(const std::vector<std::string> &args) {
    Command cmd;
    std::vector<std::string> words;
    bool help = false, version = false;
    for (const auto &a : args) {
        if (a == "--json") {
            cmd.json = true;
        } else if (a == "--pretty") {
            cmd.pretty = true;
        } else if (a == "--help") {
            help = true;
        } else if (a == "--version") {
            version = true;
        } else if (a.size() > 1 && a[0] == '-' && a[1] != '-') {
            for (std::size_t i = 1; i < a.size(); ++i) {
                switch (a[i]) {
                case 'j':
                    cmd.json = true;
                    break;
                case 'p':
                    cmd.pretty = true;
                    break;
                case 'h':
                    help = true;
                    break;
                case 'V':
                    version = true;
                    break;
                default:
                    throw UsageError("unknown option '-" + std::string(1, a[i]) + "'");
                }
            }
        } else if (a.size() > 1 && a[0] == '-') {
            throw UsageError("unknown option '" + a + "'");
        } else {
            words.push_back(a);
        }
    }
    if (help || (!words.empty() && words[0] == "help")) {
        cmd.kind = Command::Kind::Help;
        return cmd;
    }
    if (version) {
        cmd.kind = Command::Kind::Version;
        return cmd;
    }
    if (words.empty())
        throw UsageError("missing OBJECT: link, dev, stats or res");

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
            check_netdev(cmd.netdev);
        } else if (is_word(verb, {"del", "delete"})) {
            if (nargs != 1)
                throw UsageError("usage: viaductctl link del NAME");
            cmd.kind = Command::Kind::LinkDel;
            cmd.name = words[2];
        } else if (is_word(verb, {"show", "list", "ls"})) {
            if (nargs > 1)
                throw UsageError("usage: viaductctl link show [NAME]");
            cmd.kind = Command::Kind::LinkShow;
            if (nargs == 1)
                cmd.name = words[2];
        } else {
            throw UsageError("unknown link command '" + verb + "': add, del or show");
        }
    } else if (is_word(object, {"dev", "device"})) {
        std::size_t first = 1;
        if (words.size() > 1 && is_word(words[1], {"show", "list", "ls"}))
            first = 2;
        if (words.size() > first + 1)
            throw UsageError("usage: viaductctl dev [show] [NAME]");
        cmd.kind = Command::Kind::DevShow;
        if (words.size() == first + 1)
            cmd.name = words[first];
    } else if (is_word(object, {"stats", "statistic", "statistics"})) {
        if (words.size() > 2 || (words.size() == 2 && !is_word(words[1], {"show", "list", "ls"})))
            throw UsageError("usage: viaductctl stats [show]");
        cmd.kind = Command::Kind::Stats;
    } else if (is_word(object, {"res", "resource"})) {
        std::size_t first = 1;
        if (words.size() > 1 && is_word(words[1], {"show", "list", "ls"}))
            first = 2;
        if (words.size() > first + 1)
            throw UsageError("usage: viaductctl res [show] [pd | mr | cq | qp]");
        cmd.kind = Command::Kind::Res;
        if (words.size() == first + 1) {
            cmd.res_type = res_type_from_name(words[first]);
            if (!cmd.res_type)
                throw UsageError("unknown resource type '" + words[first] + "': pd, mr, cq or qp");
        }
    } else {
        throw UsageError("unknown object '" + object + "': link, dev, stats or res");
    }
    if (!cmd.name.empty())
        check_name(cmd.name);
    return cmd;
}

} // namespace viaductctl
