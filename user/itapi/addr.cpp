// SPDX-License-Identifier: GPL-2.0
//
// it_convert_net_addr: IPv4, IPv6 (an IPv4 address is the IPv4-mapped IPv6
// address ::ffff:a.b.c.d) and VIA host addresses, which over IP are the
// address's bytes (4 for IPv4, 16 for IPv6). An InfiniBand GID is not an
// address of this transport.
#include <cstring>

#include "internal.hpp"

extern "C" {

it_status_t it_convert_net_addr(const it_net_addr_t *source_addr, it_net_addr_type_t addr_type,
                                it_net_addr_t *destination_addr) {
    if (source_addr == nullptr || destination_addr == nullptr)
        return IT_ERR_INVALID_ADDRESS;
    // the source as 16 bytes of IPv6 and whether it is an IPv4 address
    unsigned char v6[16] = {};
    bool is_v4 = false;
    switch (source_addr->addr_type) {
    case IT_IPV4:
        v6[10] = v6[11] = 0xff;
        std::memcpy(v6 + 12, &source_addr->addr.ipv4, 4);
        is_v4 = true;
        break;
    case IT_IPV6:
        std::memcpy(v6, &source_addr->addr.ipv6, 16);
        is_v4 = IN6_IS_ADDR_V4MAPPED(&source_addr->addr.ipv6);
        break;
    case IT_VIA_HOSTADDR:
        if (source_addr->addr.via.len == 4) {
            v6[10] = v6[11] = 0xff;
            std::memcpy(v6 + 12, source_addr->addr.via.hostaddr, 4);
            is_v4 = true;
        } else if (source_addr->addr.via.len == 16) {
            std::memcpy(v6, source_addr->addr.via.hostaddr, 16);
            is_v4 = IN6_IS_ADDR_V4MAPPED(reinterpret_cast<const in6_addr *>(v6));
        } else {
            return IT_ERR_INVALID_ADDRESS;
        }
        break;
    case IT_IB_GID:
        return IT_ERR_INVALID_CONVERSION;
    default:
        return IT_ERR_INVALID_NETADDR;
    }
    it_net_addr_t out{};
    out.addr_type = addr_type;
    switch (addr_type) {
    case IT_IPV4:
        if (!is_v4)
            return IT_ERR_INVALID_CONVERSION;
        std::memcpy(&out.addr.ipv4, v6 + 12, 4);
        break;
    case IT_IPV6:
        std::memcpy(&out.addr.ipv6, v6, 16);
        break;
    case IT_VIA_HOSTADDR:
        if (is_v4) {
            out.addr.via.len = 4;
            std::memcpy(out.addr.via.hostaddr, v6 + 12, 4);
        } else {
            out.addr.via.len = 16;
            std::memcpy(out.addr.via.hostaddr, v6, 16);
        }
        break;
    default:
        return IT_ERR_INVALID_CONVERSION;
    }
    *destination_addr = out;
    return IT_SUCCESS;
}

} // extern "C"
