// SPDX-License-Identifier: GPL-2.0
// viaductctl: manage viaduct devices over generic netlink (see viaductctl(8)).
// Exit status as ip(8)'s: 0 success, 1 a syntax error, 2 an error the
// kernel (or the system) reported.
#include <iostream>

#include <viaduct/viaduct-abi.h>
#include <viaduct/viaduct-nl.h>

#include "args.hpp"
#include "errors.hpp"
#include "limits.hpp"
#include "netlink.hpp"
#include "output.hpp"
#include "res.hpp"

using namespace viaductctl;

namespace {

constexpr int exit_ok = 0;
constexpr int exit_usage = 1;
constexpr int exit_failed = 2;

void run(const Command &cmd) {
    OutputStyle style{cmd.json, cmd.pretty};
    if (cmd.kind == Command::Kind::Limits) {
        print_limits(std::cout, read_limits(module_params_dir), style);
        return;
    }
    Genl nl;
    switch (cmd.kind) {
    case Command::Kind::LinkAdd: {
        LinkInfo l = nl.link_add(cmd.name, cmd.netdev);
        // Quiet on success, as ip(8) is; JSON callers get the new device.
        if (cmd.json)
            print_links(std::cout, {l}, style);
        break;
    }
    case Command::Kind::LinkDel:
        nl.link_del(cmd.name);
        break;
    case Command::Kind::LinkShow:
        if (cmd.details)
            print_devices(std::cout, nl.link_get(cmd.name), style);
        else
            print_links(std::cout, nl.link_get(cmd.name), style);
        break;
    case Command::Kind::DevShow:
        print_devices(std::cout, nl.link_get(cmd.name), style);
        break;
    case Command::Kind::Stats:
        print_stats(std::cout, nl.stats(), style);
        break;
    case Command::Kind::Res: {
        std::vector<ResInfo> all = nl.res(cmd.res_type), shown;
        for (ResInfo &r : all)
            if (res_matches(r, cmd.filters))
                shown.push_back(std::move(r));
        print_res(std::cout, shown, style);
        break;
    }
    case Command::Kind::Help:
    case Command::Kind::Version:
    case Command::Kind::Limits:
        break;
    }
}

} // namespace

int main(int argc, char **argv) {
    Command cmd;
    try {
        cmd = parse_args(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const UsageError &e) {
        std::cerr << "viaductctl: " << e.what() << '\n'
                  << usage_text << "Try 'viaductctl help' for more information.\n";
        return exit_usage;
    }
    switch (cmd.kind) {
    case Command::Kind::Help:
        std::cout << usage_of(cmd.help_object);
        return exit_ok;
    case Command::Kind::Version:
        std::cout << "viaductctl " VIADUCT_VERSION " (viaduct ABI " << VIADUCT_ABI_VERSION
                  << ", generic netlink family version " << VIADUCT_GENL_VERSION << ")\n";
        return exit_ok;
    default:
        break;
    }
    try {
        run(cmd);
    } catch (const NetlinkError &e) {
        std::cerr << "viaductctl: " << explain(e, cmd) << '\n';
        return exit_failed;
    } catch (const std::exception &e) {
        std::cerr << "viaductctl: " << e.what() << '\n';
        return exit_failed;
    }
    std::cout.flush();
    if (!std::cout) {
        std::cerr << "viaductctl: cannot write the output\n";
        return exit_failed;
    }
    return exit_ok;
}
