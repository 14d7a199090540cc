// SPDX-License-Identifier: GPL-2.0
#include "output.hpp"

#include <uapi/viaduct.h>

#include "json.hpp"

namespace viaductctl {

namespace {

// rdma(8)'s keys: "ifindex" and "ifname" are the RDMA device's, "netdev"
// and "netdev_index" the network interface's.
void link_fields(JsonWriter &j, const LinkInfo &l) {
    j.field("ifindex", l.index)
        .field("ifname", l.name)
        .field("state", link_state(l))
        .field("netdev", l.ifname)
        .field("netdev_index", l.ifindex);
}

void device_fields(JsonWriter &j, const LinkInfo &l) {
    link_fields(j, l);
    j.field("mtu", l.mtu).field("abi_version", l.abi_version).field("contexts", l.contexts);
    j.key("flags").begin_array();
    if (l.flags & VIADUCT_DEV_F_UP)
        j.value("UP");
    if (l.flags & VIADUCT_DEV_F_RUNNING)
        j.value("RUNNING");
    j.end_array();
    j.key("addresses").begin_array();
    for (const auto &a : l.addresses)
        j.value(a);
    j.end_array();
    j.key("limits").begin_object();
    for (const auto &[name, v] : l.limits)
        j.field(name, v);
    j.end_object();
}

template <typename Fields>
void print_json(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style,
                Fields fields) {
    JsonWriter j(style.pretty);
    j.begin_array();
    for (const auto &l : links) {
        j.begin_object();
        fields(j, l);
        j.end_object();
    }
    j.end_array();
    out << j.str() << '\n';
}

} // namespace

std::string link_state(const LinkInfo &l) {
    if (!(l.flags & VIADUCT_DEV_F_UP))
        return "DOWN";
    return (l.flags & VIADUCT_DEV_F_RUNNING) ? "ACTIVE" : "NO_CARRIER";
}

void print_links(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style) {
    if (style.json)
        return print_json(out, links, style, link_fields);
    for (const auto &l : links)
        out << "link " << l.name << " index " << l.index << " state " << link_state(l) << " netdev "
            << l.ifname << '\n';
}

void print_devices(std::ostream &out, const std::vector<LinkInfo> &links, OutputStyle style) {
    if (style.json)
        return print_json(out, links, style, device_fields);
    for (const auto &l : links) {
        out << l.index << ": " << l.name << ": netdev " << l.ifname << " ifindex " << l.ifindex
            << " mtu " << l.mtu << " state " << link_state(l) << " abi " << l.abi_version
            << " contexts " << l.contexts << '\n';
        for (const auto &a : l.addresses)
            out << "    " << (a.find(':') != std::string::npos ? "inet6 " : "inet ") << a << '\n';
        if (!l.limits.empty()) {
            out << "    limits";
            for (const auto &[name, v] : l.limits)
                out << ' ' << name << ' ' << v;
            out << '\n';
        }
    }
}

} // namespace viaductctl
