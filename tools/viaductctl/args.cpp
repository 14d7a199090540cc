// SPDX-License-Identifier: GPL-2.0
#include "args.hpp"

#include <getopt.h>

#include <viaduct/viaduct-abi.h>
#include <viaduct/viaduct-nl.h>

#include "res.hpp"

namespace viaductctl {

namespace {

const char *const link_usage = "       viaductctl link add NAME type viaduct netdev IFNAME\n"
                               "       viaductctl link del NAME\n"
                               "       viaductctl link show [NAME]\n"
                               "       viaductctl link help\n";
const char *const dev_usage = "       viaductctl dev [show] [NAME]\n"
                              "       viaductctl dev help\n";
const char *const stats_usage = "       viaductctl stats [show]\n"
                                "       viaductctl stats help\n";
const char *const res_usage =
    "       viaductctl res [show] [pd | mr | cq | qp | srq] [FILTER VALUE]...\n"
    "       viaductctl res help\n"
    "FILTER := { ifname | pid | comm | ctxn | handle | lqpn }\n";
const char *const limits_usage = "       viaductctl limits [show]\n"
                                 "       viaductctl limits help\n";
const char *const options_usage = "Options:\n"
                                  "  -j, --json     print JSON\n"
                                  "  -p, --pretty   indent the JSON of --json\n"
                                  "  -d, --details  more details (link show: as dev show)\n"
                                  "  -h, --help     show this help\n"
                                  "  -V, --version  show the version\n"
                                  "Keywords may be abbreviated: 'viaductctl dev sh'.\n";

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

// iproute2's matches(): @word is a non-empty prefix of @keyword.
bool matches(const std::string &word, const char *keyword) {
    return !word.empty() && std::string_view(keyword).starts_with(word);
}

bool matches_any(const std::string &word, std::initializer_list<const char *> keywords) {
    for (const char *k : keywords)
        if (matches(word, k))
            return true;
    return false;
}

bool is_show(const std::string &w) {
    return matches_any(w, {"show", "list"}) || w == "ls";
}

// A decimal number for a numeric filter.
void check_number(const std::string &key, const std::string &value) {
    bool ok = !value.empty() && value.size() <= 10 &&
              value.find_first_not_of("0123456789") == std::string::npos &&
              std::stoull(value) <= UINT32_MAX;
    if (!ok)
        throw UsageError("invalid " + key + " '" + value + "': a number");
}

Command parse_link(const std::vector<std::string> &w, Command cmd) {
    const std::string verb = w.size() > 1 ? w[1] : "show";
    const std::size_t nargs = w.size() > 2 ? w.size() - 2 : 0;
    if (matches(verb, "add")) {
        if (nargs < 1)
            throw UsageError("link add needs a NAME");
        cmd.kind = Command::Kind::LinkAdd;
        cmd.name = w[2];
        bool type_given = false;
        for (std::size_t i = 3; i < w.size(); i += 2) {
            const std::string &key = w[i];
            if (i + 1 >= w.size())
                throw UsageError("'" + key + "' needs a value");
            const std::string &value = w[i + 1];
            if (matches(key, "type")) {
                if (value != "viaduct")
                    throw UsageError("unknown link type '" + value +
                                     "': viaductctl adds viaduct links (rdma(8) adds siw and rxe)");
                type_given = true;
            } else if (matches(key, "netdev")) {
                cmd.netdev = value;
            } else {
                throw UsageError("unknown link add argument '" + key + "': type or netdev");
            }
        }
        (void)type_given; // "type viaduct" is the default, as the only type
        if (cmd.netdev.empty())
            throw UsageError("link add needs 'netdev IFNAME'");
        check_netdev(cmd.netdev);
    } else if (matches_any(verb, {"delete"}) || verb == "del") {
        if (nargs != 1)
            throw UsageError("link del takes one NAME");
        cmd.kind = Command::Kind::LinkDel;
        cmd.name = w[2];
    } else if (is_show(verb)) {
        if (nargs > 1)
            throw UsageError("link show takes at most one NAME");
        cmd.kind = Command::Kind::LinkShow;
        if (nargs == 1)
            cmd.name = w[2];
    } else if (matches(verb, "help")) {
        cmd.kind = Command::Kind::Help;
        cmd.help_object = "link";
    } else {
        throw UsageError("unknown link command '" + verb + "': add, del, show or help");
    }
    return cmd;
}

// OBJECT [show] [ARG]: "dev", "stats"; true if it was "help".
bool show_or_help(const std::vector<std::string> &w, std::size_t *first, const char *object,
                  Command &cmd) {
    *first = 1;
    if (w.size() > 1 && matches(w[1], "help")) {
        if (w.size() > 2)
            throw UsageError(std::string(object) + " help takes no argument");
        cmd.kind = Command::Kind::Help;
        cmd.help_object = object;
        return true;
    }
    if (w.size() > 1 && is_show(w[1]))
        *first = 2;
    return false;
}

Command parse_res(const std::vector<std::string> &w, Command cmd) {
    std::size_t i = 0;
    if (show_or_help(w, &i, "res", cmd))
        return cmd;
    cmd.kind = Command::Kind::Res;
    // A type, unless the word is a filter key.
    static const char *const keys[] = {"ifname", "pid", "comm", "ctxn", "handle", "lqpn"};
    auto filter_key = [](const std::string &word) -> const char * {
        for (const char *k : keys)
            if (matches(word, k))
                return k;
        if (word == "dev" || word == "link") // rdma's "res show qp link DEV"
            return "ifname";
        if (word == "ctx")
            return "ctxn";
        if (word == "qpn")
            return "lqpn";
        return nullptr;
    };
    if (i < w.size() && !filter_key(w[i])) {
        cmd.res_type = res_type_from_name(w[i]);
        if (!cmd.res_type)
            throw UsageError("unknown resource type '" + w[i] + "': pd, mr, cq, qp or srq");
        ++i;
    }
    for (; i < w.size(); i += 2) {
        const char *key = filter_key(w[i]);
        if (!key)
            throw UsageError("unknown filter '" + w[i] +
                             "': ifname, pid, comm, ctxn, handle or lqpn");
        if (i + 1 >= w.size())
            throw UsageError(std::string("filter ") + key + " needs a value");
        const std::string &value = w[i + 1];
        if (std::string_view(key) == "ifname")
            check_name(value);
        else if (std::string_view(key) != "comm")
            check_number(key, value);
        if (std::string_view(key) == "lqpn" && cmd.res_type && cmd.res_type != VIADUCT_RES_QP)
            throw UsageError("filter lqpn is for qp");
        cmd.filters.push_back({key, value});
    }
    return cmd;
}

} // namespace

const char *const usage_text = "Usage: viaductctl [OPTIONS] OBJECT { COMMAND | help }\n"
                               "OBJECT := { link | dev | stats | res | limits }\n";

std::string usage_of(const std::string &object) {
    std::string u = "Usage: viaductctl [OPTIONS] OBJECT { COMMAND | help }\n";
    if (object.empty() || object == "link")
        u += link_usage;
    if (object.empty() || object == "dev")
        u += dev_usage;
    if (object.empty() || object == "stats")
        u += stats_usage;
    if (object.empty() || object == "res")
        u += res_usage;
    if (object.empty() || object == "limits")
        u += limits_usage;
    return u + options_usage;
}

bool valid_device_name(const std::string &name) {
    if (name.empty() || name.size() >= VIADUCT_NAME_SIZE)
        return false;
    for (char c : name)
        if (!name_char(c))
            return false;
    return true;
}

Command parse_args(const std::vector<std::string> &args) {
    static const option longs[] = {
        {"json", no_argument, nullptr, 'j'},    {"pretty", no_argument, nullptr, 'p'},
        {"details", no_argument, nullptr, 'd'}, {"help", no_argument, nullptr, 'h'},
        {"version", no_argument, nullptr, 'V'}, {nullptr, 0, nullptr, 0},
    };
    std::vector<std::string> copy(args);
    std::vector<char *> argv;
    static char prog[] = "viaductctl";
    argv.push_back(prog);
    for (auto &a : copy)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    Command cmd;
    bool help = false, version = false;
    opterr = 0;
    optind = 0; // a fresh scan on each call
    int c;
    while ((c = ::getopt_long(static_cast<int>(argv.size() - 1), argv.data(), "jpdhV", longs,
                              nullptr)) != -1) {
        switch (c) {
        case 'j':
            cmd.json = true;
            break;
        case 'p':
            cmd.pretty = true;
            break;
        case 'd':
            cmd.details = true;
            break;
        case 'h':
            help = true;
            break;
        case 'V':
            version = true;
            break;
        default:
            if (optopt > 0 && optopt < 256)
                throw UsageError("unknown option '-" + std::string(1, static_cast<char>(optopt)) +
                                 "'");
            throw UsageError("unknown option '" +
                             std::string(argv[static_cast<std::size_t>(optind - 1)]) + "'");
        }
    }
    std::vector<std::string> w(argv.begin() + optind, argv.end() - 1);
    for (std::string &word : w)
        word = std::string(word.c_str()); // from the copy getopt_long() permuted
    if (help || (!w.empty() && matches(w[0], "help"))) {
        cmd.kind = Command::Kind::Help;
        return cmd;
    }
    if (version) {
        cmd.kind = Command::Kind::Version;
        return cmd;
    }
    if (w.empty())
        throw UsageError("missing OBJECT: link, dev, stats, res or limits");

    const std::string &object = w[0];
    std::size_t first = 0;
    // In the order of the usage: "d" is dev, "s" stats, "r" res, "l" link.
    if (matches(object, "link")) {
        cmd = parse_link(w, cmd);
    } else if (matches_any(object, {"dev", "device"})) {
        if (show_or_help(w, &first, "dev", cmd))
            return cmd;
        if (w.size() > first + 1)
            throw UsageError("dev show takes at most one NAME");
        cmd.kind = Command::Kind::DevShow;
        if (w.size() == first + 1)
            cmd.name = w[first];
    } else if (matches_any(object, {"stats", "statistic", "statistics"})) {
        if (show_or_help(w, &first, "stats", cmd))
            return cmd;
        if (w.size() > first)
            throw UsageError("stats show takes no argument");
        cmd.kind = Command::Kind::Stats;
    } else if (matches_any(object, {"res", "resource"})) {
        cmd = parse_res(w, cmd);
    } else if (matches(object, "limits")) {
        if (show_or_help(w, &first, "limits", cmd))
            return cmd;
        if (w.size() > first)
            throw UsageError("limits show takes no argument");
        cmd.kind = Command::Kind::Limits;
    } else {
        throw UsageError("unknown object '" + object + "': link, dev, stats, res or limits");
    }
    if (!cmd.name.empty())
        check_name(cmd.name);
    return cmd;
}

} // namespace viaductctl
