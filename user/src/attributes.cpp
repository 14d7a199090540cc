// SPDX-License-Identifier: GPL-2.0
// From the kernel's fixed-size structures to C++ values.
#include <arpa/inet.h>
#include <cstdio>
#include <sys/socket.h>

#include <viaduct/viaduct.hpp>

namespace viaduct {

namespace {

// The kernel NUL-terminates names, but a full buffer must still not be read
// past its end.
template <std::size_t N> std::string bounded_string(const char (&buf)[N]) {
    std::size_t len = 0;
    while (len < N && buf[len] != '\0')
        ++len;
    return std::string(buf, len);
}

bool to_address(const viaduct_addr &in, Address &out) {
    int family;
    switch (in.family) {
    case VIADUCT_AF_INET:
        family = AF_INET;
        break;
    case VIADUCT_AF_INET6:
        family = AF_INET6;
        break;
    default:
        return false;
    }
    char buf[INET6_ADDRSTRLEN] = {};
    if (!::inet_ntop(family, in.addr, buf, sizeof(buf)))
        return false;
    out.family = family;
    out.address = buf;
    out.prefixlen = in.prefixlen;
    return true;
}

} // namespace

std::string Address::to_string() const {
    return address + "/" + std::to_string(prefixlen);
}

std::string DeviceAttributes::hw_address() const {
    char buf[3 * 6] = {};
    std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", hw_addr[0], hw_addr[1],
                  hw_addr[2], hw_addr[3], hw_addr[4], hw_addr[5]);
    return buf;
}

DeviceEntry to_entry(const viaduct_device_entry &e) {
    return DeviceEntry{e.index, e.ifindex, bounded_string(e.name), bounded_string(e.ifname)};
}

DeviceAttributes to_attributes(const viaduct_device_attr &a) {
    DeviceAttributes r;
    r.index = a.index;
    r.abi_version = a.abi_version;
    r.name = bounded_string(a.name);
    r.ifname = bounded_string(a.ifname);
    r.ifindex = a.ifindex;
    r.mtu = a.mtu;
    r.flags = a.flags;
    r.caps = a.caps;
    for (std::size_t i = 0; i < r.hw_addr.size(); ++i)
        r.hw_addr[i] = a.hw_addr[i];

    std::uint32_t n = a.num_addrs < VIADUCT_MAX_ADDRS ? a.num_addrs : VIADUCT_MAX_ADDRS;
    for (std::uint32_t i = 0; i < n; ++i) {
        Address addr;
        if (to_address(a.addrs[i], addr))
            r.addresses.push_back(std::move(addr));
    }

    DeviceLimits &l = r.limits;
    l.max_pd = a.max_pd;
    l.max_mr = a.max_mr;
    l.max_cq = a.max_cq;
    l.max_cqe = a.max_cqe;
    l.max_qp = a.max_qp;
    l.max_qp_wr = a.max_qp_wr;
    l.max_sge = a.max_sge;
    l.max_inline = a.max_inline;
    l.max_ord = a.max_ord;
    l.max_ird = a.max_ird;
    l.max_msg_size = a.max_msg_size;
    l.max_mr_size = a.max_mr_size;
    l.page_size = a.page_size;
    l.max_mw = (a.caps & VIADUCT_DEV_CAP_MW) ? a.max_mw : 0;
    return r;
}

} // namespace viaduct
