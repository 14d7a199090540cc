// SPDX-License-Identifier: GPL-2.0
//
// VIPL's name service over the system resolver (getaddrinfo: /etc/hosts,
// DNS, whatever nsswitch.conf says) or, if VipNSInit names one, a hosts file
// of its own; and system management information from the kernel's
// neighbour table.
#include <algorithm>
#include <arpa/inet.h>
#include <cstring>
#include <fstream>
#include <netdb.h>
#include <sstream>
#include <strings.h>

#include "vipl_api.hpp"

using namespace vipl;

namespace {

std::shared_ptr<Nic> nic_of(VIP_NIC_HANDLE h) {
    return std::static_pointer_cast<Nic>(registry().find(h, Kind::Nic));
}

// "ADDR NAME ALIAS..." lines of a hosts file, comments after '#'.
std::vector<std::pair<std::array<std::uint8_t, 4>, std::vector<std::string>>>
read_hosts(const std::string &path) {
    std::vector<std::pair<std::array<std::uint8_t, 4>, std::vector<std::string>>> out;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream in(line);
        std::string a, name;
        std::array<std::uint8_t, 4> addr{};
        if (!(in >> a) || inet_pton(AF_INET, a.c_str(), addr.data()) != 1)
            continue;
        std::vector<std::string> names;
        while (in >> name)
            names.push_back(name);
        if (!names.empty())
            out.push_back({addr, names});
    }
    return out;
}

} // namespace

namespace vipl {

// The IPv4 addresses of @name, in the resolver's order, without repeats.
std::vector<std::array<std::uint8_t, 4>> lookup(const std::string &file, const char *name) {
    std::vector<std::array<std::uint8_t, 4>> out;
    auto add = [&](const std::array<std::uint8_t, 4> &a) {
        if (std::find(out.begin(), out.end(), a) == out.end())
            out.push_back(a);
    };
    if (!file.empty()) {
        for (const auto &[addr, names] : read_hosts(file))
            for (const auto &n : names)
                if (strcasecmp(n.c_str(), name) == 0)
                    add(addr);
        return out;
    }
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (getaddrinfo(name, nullptr, &hints, &res) != 0)
        return out;
    for (addrinfo *ai = res; ai; ai = ai->ai_next) {
        std::array<std::uint8_t, 4> a;
        std::memcpy(a.data(), &reinterpret_cast<sockaddr_in *>(ai->ai_addr)->sin_addr, 4);
        add(a);
    }
    freeaddrinfo(res);
    return out;
}

} // namespace vipl

extern "C" {

VIP_RETURN VipNSInit(VIP_NIC_HANDLE NicHandle, VIP_PVOID NSInitInfo) {
    auto nic = nic_of(NicHandle);
    if (!nic)
        return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(nic->mu);
    if (nic->ns_up)
        return VIP_ERROR_NAMESERVICE;
    std::string file;
    if (NSInitInfo) {
        file = static_cast<const char *>(NSInitInfo);
        if (!std::ifstream(file))
            return VIP_ERROR_NAMESERVICE;
    }
    nic->ns_file = file;
    nic->ns_up = true;
    return VIP_SUCCESS;
}

VIP_RETURN VipNSShutdown(VIP_NIC_HANDLE NicHandle) {
    auto nic = nic_of(NicHandle);
    if (!nic)
        return VIP_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(nic->mu);
    if (!nic->ns_up)
        return VIP_ERROR_NAMESERVICE;
    nic->ns_up = false;
    nic->ns_file.clear();
    return VIP_SUCCESS;
}

VIP_RETURN VipNSGetHostByName(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name, VIP_NET_ADDRESS *Address,
                              VIP_ULONG NameIndex) {
    auto nic = nic_of(NicHandle);
    if (!nic || !Name || !*Name || !Address)
        return VIP_INVALID_PARAMETER;
    // the caller may say how much host address it has room for
    if (Address->HostAddressLen != 0 && Address->HostAddressLen < 4)
        return VIP_INVALID_PARAMETER;
    std::string file;
    {
        std::lock_guard<std::mutex> g(nic->mu);
        if (!nic->ns_up)
            return VIP_ERROR_NAMESERVICE;
        file = nic->ns_file;
    }
    auto addrs = lookup(file, Name);
    if (NameIndex >= addrs.size())
        return VIP_ERROR_NAMESERVICE;
    Address->HostAddressLen = 4;
    Address->DiscriminatorLen = 0;
    std::memcpy(Address->HostAddress, addrs[NameIndex].data(), 4);
    return VIP_SUCCESS;
}

VIP_RETURN VipNSGetHostByAddr(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *Address, VIP_CHAR *Name,
                              VIP_ULONG *NameLen) {
    auto nic = nic_of(NicHandle);
    if (!nic || !Address || !Name || !NameLen || Address->HostAddressLen != 4)
        return VIP_INVALID_PARAMETER;
    std::string file;
    {
        std::lock_guard<std::mutex> g(nic->mu);
        if (!nic->ns_up)
            return VIP_ERROR_NAMESERVICE;
        file = nic->ns_file;
    }
    std::string name;
    if (!file.empty()) {
        for (const auto &[addr, names] : read_hosts(file))
            if (name.empty() && std::memcmp(addr.data(), Address->HostAddress, 4) == 0)
                name = names.front();
    } else {
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        std::memcpy(&sin.sin_addr, Address->HostAddress, 4);
        char host[NI_MAXHOST];
        if (getnameinfo(reinterpret_cast<sockaddr *>(&sin), sizeof(sin), host, sizeof(host),
                        nullptr, 0, NI_NAMEREQD) == 0)
            name = host;
    }
    if (name.empty())
        return VIP_ERROR_NAMESERVICE;
    if (*NameLen < name.size() + 1) {
        *NameLen = name.size(); // without the NUL, as the guide says
        return VIP_INVALID_PARAMETER;
    }
    std::memcpy(Name, name.c_str(), name.size() + 1);
    *NameLen = name.size();
    return VIP_SUCCESS;
}

// Autodiscovery: the nodes one hop away are the IPv4 neighbours the kernel
// knows on the NIC's interface (reachable or recently so); more hops are
// not known to a NIC without routing of its own.
VIP_RETURN VipQuerySystemManagementInfo(VIP_NIC_HANDLE NicHandle, VIP_ULONG InfoType,
                                        VIP_PVOID SysManInfo) {
    auto nic = nic_of(NicHandle);
    if (!nic || !SysManInfo || InfoType != VIP_SMI_AUTODISCOVERY)
        return VIP_INVALID_PARAMETER;
    auto *list = static_cast<VIP_AUTODISCOVERY_LIST *>(SysManInfo);
    if (list->NumberOfHops == 0)
        return VIP_INVALID_PARAMETER;
    std::vector<std::array<std::uint8_t, 4>> found;
    std::ifstream arp("/proc/net/arp");
    std::string line;
    std::getline(arp, line); // header
    while (std::getline(arp, line)) {
        std::istringstream in(line);
        std::string ip, hw, flags, mac, mask, dev;
        if (!(in >> ip >> hw >> flags >> mac >> mask >> dev) || dev != nic->attr.ifname)
            continue;
        std::array<std::uint8_t, 4> a;
        if (std::stoul(flags, nullptr, 16) & 0x2 /* ATF_COM */ &&
            inet_pton(AF_INET, ip.c_str(), a.data()) == 1)
            found.push_back(a);
    }
    const VIP_ULONG room = list->NumAdAddrs;
    list->NumAdAddrs = found.size();
    if (room < found.size())
        return VIP_ERROR_RESOURCE;
    if (!found.empty() && !list->ADAddrArray)
        return VIP_INVALID_PARAMETER;
    for (std::size_t i = 0; i < found.size(); i++) {
        VIP_NET_ADDRESS *a = list->ADAddrArray[i];
        if (!a || (a->HostAddressLen != 0 && a->HostAddressLen < 4))
            return VIP_INVALID_PARAMETER;
        a->HostAddressLen = 4;
        a->DiscriminatorLen = 0;
        std::memcpy(a->HostAddress, found[i].data(), 4);
    }
    return VIP_SUCCESS;
}

} // extern "C"
