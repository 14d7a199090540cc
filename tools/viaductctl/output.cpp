// SPDX-License-Identifier: GPL-2.0
#include "output.hpp"

#include <viaduct/viaduct-abi.h>

namespace viaductctl {

Printer::Printer(std::ostream &out, OutputStyle style)
    : out_(out), style_(style), j_(style.pretty) {}

Printer::~Printer() {
    if (style_.json && j_.complete())
        out_ << j_.str() << '\n';
}

void Printer::begin_list() {
    if (style_.json)
        j_.begin_array();
}

void Printer::end_list() {
    if (style_.json)
        j_.end_array();
}

void Printer::begin_top_object() {
    if (style_.json)
        j_.begin_object();
}

void Printer::end_top_object() {
    if (style_.json)
        j_.end_object();
}

void Printer::begin_record(const char *key) {
    if (style_.json) {
        if (key)
            j_.key(key);
        j_.begin_object();
    }
    line_.clear();
}

void Printer::end_record() {
    if (style_.json)
        j_.end_object();
    else
        out_ << line_ << '\n';
    line_.clear();
}

void Printer::text_word(const std::string &w) {
    if (!line_.empty() && line_.back() != ' ')
        line_ += ' ';
    line_ += w;
}

void Printer::any(const char *key, const char *label, std::uint64_t v, const char *suffix) {
    if (style_.json)
        j_.field(key, v);
    else
        any(key, label, std::to_string(v), suffix);
}

void Printer::any(const char *key, const char *label, const std::string &v, const char *suffix) {
    if (style_.json) {
        j_.field(key, v);
        return;
    }
    if (*label)
        text_word(label);
    text_word(v + suffix);
}

void Printer::any(const char *key, const char *label, const std::string &json_value,
                  const std::string &text_value) {
    if (style_.json)
        j_.field(key, json_value);
    else
        any(key, label, text_value);
}

void Printer::json(const char *key, std::uint64_t v) {
    if (style_.json)
        j_.field(key, v);
}

void Printer::json(const char *key, const std::string &v) {
    if (style_.json)
        j_.field(key, v);
}

void Printer::text(const std::string &s) {
    if (!style_.json)
        text_word(s);
}

void Printer::text_newline() {
    if (!style_.json)
        line_ += "\n    ";
}

void Printer::begin_json_array(const char *key) {
    if (style_.json)
        j_.key(key).begin_array();
}

void Printer::end_json_array() {
    if (style_.json)
        j_.end_array();
}

void Printer::json_value(const std::string &v) {
    if (style_.json)
        j_.value(v);
}

void Printer::begin_json_object(const char *key) {
    if (style_.json)
        j_.key(key).begin_object();
}

void Printer::end_json_object() {
    if (style_.json)
        j_.end_object();
}

std::string link_state(const LinkInfo &l) {
    if (!(l.flags & VIADUCT_DEV_F_UP))
        return "DOWN";
    return (l.flags & VIADUCT_DEV_F_RUNNING) ? "ACTIVE" : "NO_CARRIER";
}

// rdma(8)'s keys: "ifindex" and "ifname" are the RDMA device's, "netdev"
// and "netdev_index" the network interface's.
void print_links(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style) {
    Printer p(out, style);
    p.begin_list();
    for (const auto &l : links) {
        p.begin_record();
        p.text("link");
        p.any("ifname", "", l.name);
        p.any("ifindex", "index", l.index);
        p.any("state", "state", link_state(l));
        p.any("netdev", "netdev", l.ifname);
        p.json("netdev_index", l.ifindex);
        p.end_record();
    }
    p.end_list();
}

namespace {

// Named numbers: a JSON object @key, in text a line that begins with @key.
void named_numbers(Printer &p, const char *key,
                   const std::vector<std::pair<std::string, std::uint64_t>> &v) {
    p.begin_json_object(key);
    if (!v.empty()) {
        p.text_newline();
        p.text(key);
    }
    for (const auto &[name, n] : v)
        p.any(name.c_str(), name.c_str(), n);
    p.end_json_object();
}

} // namespace

void print_devices(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style) {
    Printer p(out, style);
    p.begin_list();
    for (const auto &l : links) {
        p.begin_record();
        p.any("ifindex", "", l.index, ":");
        p.any("ifname", "", l.name, ":");
        p.any("netdev", "netdev", l.ifname);
        p.any("netdev_index", "ifindex", l.ifindex);
        p.any("mtu", "mtu", l.mtu);
        p.any("state", "state", link_state(l));
        p.any("abi_version", "abi", l.abi_version);
        p.any("contexts", "contexts", l.contexts);
        p.begin_json_array("flags");
        if (l.flags & VIADUCT_DEV_F_UP)
            p.json_value("UP");
        if (l.flags & VIADUCT_DEV_F_RUNNING)
            p.json_value("RUNNING");
        p.end_json_array();
        p.begin_json_array("addresses");
        for (const auto &a : l.addresses) {
            p.json_value(a);
            p.text_newline();
            p.text((a.find(':') != std::string::npos ? "inet6 " : "inet ") + a);
        }
        p.end_json_array();
        named_numbers(p, "limits", l.limits);
        // as rdma(8)'s "resource show" summarises a device
        named_numbers(p, "resources", l.resources);
        p.end_record();
    }
    p.end_list();
}

} // namespace viaductctl
