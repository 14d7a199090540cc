// SPDX-License-Identifier: GPL-2.0
// viaductctl: manage viaduct devices (see viaductctl(8)).
#include <cerrno>
#include <cstdio>
#include <iostream>

#include "args.hpp"
#include "json.hpp"
#include "netlink.hpp"

#include <uapi/viaduct.h>

using namespace viaductctl;

namespace {

std::string state_of(const LinkInfo &l) {
    if (l.flags & VIADUCT_DEV_F_RUNNING)
        return "ACTIVE";
    return (l.flags & VIADUCT_DEV_F_UP) ? "DOWN" : "DISABLED";
}

void link_json(JsonWriter &j, const LinkInfo &l) {
    j.field("index", std::uint64_t{l.index})
        .field("name", l.name)
        .field("netdev", l.ifname)
        .field("ifindex", std::uint64_t{l.ifindex})
        .field("state", state_of(l));
}

void print_links(const std::vector<LinkInfo> &links, const Command &cmd) {
    if (cmd.json) {
        JsonWriter j(cmd.pretty);
        j.begin_array();
        for (const auto &l : links) {
            j.begin_object();
            link_json(j, l);
            j.end_object();
        }
        j.end_array();
        std::cout << j.str() << '\n';
        return;
    }
    for (const auto &l : links)
        std::cout << "link " << l.name << "/" << l.index << " state " << state_of(l) << " netdev "
                  << l.ifname << '\n';
}

void print_devs(const std::vector<LinkInfo> &links, const Command &cmd) {
    if (cmd.json) {
        JsonWriter j(cmd.pretty);
        j.begin_array();
        for (const auto &l : links) {
            j.begin_object();
            link_json(j, l);
            j.field("mtu", std::uint64_t{l.mtu})
                .field("abi_version", std::uint64_t{l.abi_version})
                .field("contexts", std::uint64_t{l.contexts});
            j.key("addresses").begin_array();
            for (const auto &a : l.addresses)
                j.value(a);
            j.end_array();
            j.key("limits").begin_object();
            for (const auto &[k, v] : l.limits)
                j.field(k, v);
            j.end_object();
            j.end_object();
        }
        j.end_array();
        std::cout << j.str() << '\n';
        return;
    }
    for (const auto &l : links) {
        std::cout << l.index << ": " << l.name << ": netdev " << l.ifname << " ifindex "
                  << l.ifindex << " mtu " << l.mtu << " state " << state_of(l) << " abi "
                  << l.abi_version << " contexts " << l.contexts << '\n';
        for (const auto &a : l.addresses)
            std::cout << "    " << (a.find(':') != std::string::npos ? "inet6 " : "inet ") << a
                      << '\n';
        std::cout << "    limits";
        for (const auto &[k, v] : l.limits)
            std::cout << ' ' << k << ' ' << v;
        std::cout << '\n';
    }
}

// Turns a kernel error into a sentence about the user's request.
std::string explain(const NetlinkError &e, const Command &cmd) {
    std::string msg;
    switch (e.err) {
    case ENODEV:
        msg = cmd.kind == Command::Kind::LinkAdd
                  ? "interface '" + cmd.netdev + "' not found in this network namespace"
                  : "no viaduct device '" + cmd.name + "' in this network namespace";
        break;
    case EEXIST:
        msg = "device name '" + cmd.name + "' already exists in this network namespace";
        break;
    case EBUSY:
        msg = "interface '" + cmd.netdev + "' already has a viaduct device";
        break;
    case EPERM:
    case EACCES:
        msg = "permission denied: CAP_NET_ADMIN is needed";
        break;
    default:
        msg = e.what();
    }
    if (!e.extack.empty() && e.extack != msg)
        msg += " (" + e.extack + ")";
    return msg;
}

} // namespace

int main(int argc, char **argv) {
    Command cmd;
    try {
        cmd = parse_args(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const UsageError &e) {
        std::cerr << "viaductctl: " << e.what() << '\n' << usage_text;
        return 2;
    }
    switch (cmd.kind) {
    case Command::Kind::Help:
        std::cout << usage_text;
        return 0;
    case Command::Kind::Version:
        std::cout << "viaductctl 0.1.0 (ABI " << VIADUCT_ABI_VERSION << ")\n";
        return 0;
    default:
        break;
    }
    try {
        Genl nl;
        switch (cmd.kind) {
        case Command::Kind::LinkAdd: {
            LinkInfo l = nl.link_add(cmd.name, cmd.netdev);
            if (cmd.json)
                print_links({l}, cmd);
            break;
        }
        case Command::Kind::LinkDel:
            nl.link_del(cmd.name);
            break;
        case Command::Kind::LinkShow:
            print_links(nl.link_get(cmd.name), cmd);
            break;
        case Command::Kind::DevShow:
            print_devs(nl.link_get(cmd.name), cmd);
            break;
        default:
            break;
        }
    } catch (const NetlinkError &e) {
        std::cerr << "viaductctl: " << explain(e, cmd) << '\n';
        return 1;
    }
    return 0;
}
