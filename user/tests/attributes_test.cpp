// SPDX-License-Identifier: GPL-2.0
// From the kernel's structures to DeviceAttributes and DeviceEntry.
#include <arpa/inet.h>
#include <cstring>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <viaduct/viaduct.hpp>

namespace {

void set_addr(viaduct_addr &a, int family, const char *text, unsigned prefixlen) {
    a.family = static_cast<__u16>(family == AF_INET ? VIADUCT_AF_INET : VIADUCT_AF_INET6);
    a.prefixlen = static_cast<__u8>(prefixlen);
    ASSERT_EQ(1, ::inet_pton(family, text, a.addr)) << text;
}

} // namespace

TEST(Attributes, ConvertsScalarsAndLimits) {
    viaduct_device_attr a{};
    a.index = 3;
    a.abi_version = VIADUCT_ABI_VERSION;
    std::strcpy(a.name, "vd0");
    std::strcpy(a.ifname, "eth0");
    a.ifindex = 2;
    a.mtu = 1500;
    a.flags = VIADUCT_DEV_F_UP | VIADUCT_DEV_F_RUNNING;
    const __u8 mac[8] = {0x02, 0x00, 0x5e, 0x10, 0xab, 0xff, 0xee, 0xee};
    std::memcpy(a.hw_addr, mac, sizeof(mac));
    a.max_pd = 1;
    a.max_mr = 2;
    a.max_cq = 3;
    a.max_cqe = 4;
    a.max_qp = 5;
    a.max_qp_wr = 6;
    a.max_sge = 7;
    a.max_inline = 8;
    a.max_ord = 9;
    a.max_ird = 10;
    a.max_msg_size = 1ULL << 31;
    a.max_mr_size = 1ULL << 40;
    a.page_size = 4096;
    a.max_mw = 11;
    a.caps = VIADUCT_DEV_CAP_MW;

    auto r = viaduct::to_attributes(a);
    EXPECT_EQ(3u, r.index);
    EXPECT_EQ(static_cast<unsigned>(VIADUCT_ABI_VERSION), r.abi_version);
    EXPECT_EQ("vd0", r.name);
    EXPECT_EQ("eth0", r.ifname);
    EXPECT_EQ(2u, r.ifindex);
    EXPECT_EQ(1500u, r.mtu);
    EXPECT_TRUE(r.up());
    EXPECT_TRUE(r.running());
    EXPECT_EQ("02:00:5e:10:ab:ff", r.hw_address());
    EXPECT_TRUE(r.addresses.empty());
    const auto &l = r.limits;
    EXPECT_EQ(1u, l.max_pd);
    EXPECT_EQ(2u, l.max_mr);
    EXPECT_EQ(3u, l.max_cq);
    EXPECT_EQ(4u, l.max_cqe);
    EXPECT_EQ(5u, l.max_qp);
    EXPECT_EQ(6u, l.max_qp_wr);
    EXPECT_EQ(7u, l.max_sge);
    EXPECT_EQ(8u, l.max_inline);
    EXPECT_EQ(9u, l.max_ord);
    EXPECT_EQ(10u, l.max_ird);
    EXPECT_EQ(1ULL << 31, l.max_msg_size);
    EXPECT_EQ(1ULL << 40, l.max_mr_size);
    EXPECT_EQ(4096u, l.page_size);
    EXPECT_EQ(11u, l.max_mw);

    // A module without memory windows has none to give.
    a.caps = 0;
    EXPECT_EQ(0u, viaduct::to_attributes(a).limits.max_mw);
}

TEST(Attributes, Flags) {
    viaduct_device_attr a{};
    a.flags = VIADUCT_DEV_F_UP;
    auto r = viaduct::to_attributes(a);
    EXPECT_TRUE(r.up());
    EXPECT_FALSE(r.running());
    EXPECT_EQ(static_cast<unsigned>(VIADUCT_DEV_F_UP), r.flags);
    a.flags = 0;
    EXPECT_FALSE(viaduct::to_attributes(a).up());
}

TEST(Attributes, FormatsIPv4AndIPv6) {
    viaduct_device_attr a{};
    set_addr(a.addrs[0], AF_INET, "192.0.2.1", 24);
    set_addr(a.addrs[1], AF_INET6, "2001:db8::1", 64);
    set_addr(a.addrs[2], AF_INET, "10.255.0.254", 32);
    set_addr(a.addrs[3], AF_INET6, "fe80::200:5eff:fe10:abff", 64);
    set_addr(a.addrs[4], AF_INET6, "::ffff:198.51.100.7", 128);
    set_addr(a.addrs[5], AF_INET6, "::", 0);
    a.num_addrs = 6;
    auto r = viaduct::to_attributes(a);
    ASSERT_EQ(6u, r.addresses.size());
    EXPECT_EQ("192.0.2.1/24", r.addresses[0].to_string());
    EXPECT_EQ("192.0.2.1", r.addresses[0].address);
    EXPECT_EQ(24u, r.addresses[0].prefixlen);
    EXPECT_EQ(AF_INET, r.addresses[0].family);
    EXPECT_EQ("2001:db8::1/64", r.addresses[1].to_string());
    EXPECT_EQ(AF_INET6, r.addresses[1].family);
    EXPECT_EQ("10.255.0.254/32", r.addresses[2].to_string());
    EXPECT_EQ("fe80::200:5eff:fe10:abff/64", r.addresses[3].to_string());
    EXPECT_EQ("::ffff:198.51.100.7/128", r.addresses[4].to_string());
    EXPECT_EQ("::/0", r.addresses[5].to_string());
}

TEST(Attributes, IPv4UsesOnlyTheFirstFourBytes) {
    viaduct_device_attr a{};
    std::memset(a.addrs[0].addr, 0xff, sizeof(a.addrs[0].addr));
    set_addr(a.addrs[0], AF_INET, "198.51.100.1", 24);
    a.num_addrs = 1;
    auto r = viaduct::to_attributes(a);
    ASSERT_EQ(1u, r.addresses.size());
    EXPECT_EQ("198.51.100.1/24", r.addresses[0].to_string());
}

TEST(Attributes, SkipsUnknownFamiliesAndHonoursCount) {
    viaduct_device_attr a{};
    set_addr(a.addrs[0], AF_INET, "192.0.2.1", 24);
    a.addrs[1].family = 99;
    set_addr(a.addrs[2], AF_INET6, "2001:db8::2", 48);
    set_addr(a.addrs[3], AF_INET, "192.0.2.9", 24); // past num_addrs
    a.num_addrs = 3;
    auto r = viaduct::to_attributes(a);
    ASSERT_EQ(2u, r.addresses.size());
    EXPECT_EQ("192.0.2.1/24", r.addresses[0].to_string());
    EXPECT_EQ("2001:db8::2/48", r.addresses[1].to_string());
}

TEST(Attributes, ClampsAddressCount) {
    viaduct_device_attr a{};
    for (auto &addr : a.addrs)
        set_addr(addr, AF_INET, "192.0.2.1", 24);
    a.num_addrs = 1000; // more than the array holds
    EXPECT_EQ(static_cast<std::size_t>(VIADUCT_MAX_ADDRS),
              viaduct::to_attributes(a).addresses.size());
}

TEST(Attributes, UnterminatedNamesStayInBounds) {
    // Each full name is followed by bytes of another letter: a read past
    // the end of its buffer would pick them up.
    struct {
        viaduct_device_attr a;
        char guard[32];
    } buf;
    std::memset(&buf, 'g', sizeof(buf));
    std::memset(buf.a.name, 'n', sizeof(buf.a.name));
    std::memset(buf.a.ifname, 'i', sizeof(buf.a.ifname));
    buf.a.num_addrs = 0;
    auto r = viaduct::to_attributes(buf.a);
    EXPECT_EQ(std::string(VIADUCT_NAME_SIZE, 'n'), r.name);
    EXPECT_EQ(std::string(VIADUCT_NAME_SIZE, 'i'), r.ifname);

    viaduct_device_entry e{};
    std::memset(e.name, 'x', sizeof(e.name));
    std::memset(e.ifname, 'y', sizeof(e.ifname));
    auto entry = viaduct::to_entry(e);
    EXPECT_EQ(std::string(VIADUCT_NAME_SIZE, 'x'), entry.name);
    EXPECT_EQ(std::string(VIADUCT_NAME_SIZE, 'y'), entry.ifname);
}

TEST(Attributes, NamesStopAtTheFirstNul) {
    viaduct_device_entry e{};
    std::memcpy(e.name, "vd1\0garbage", 11);
    std::strcpy(e.ifname, "veth-h1");
    e.index = 7;
    e.ifindex = 12;
    auto entry = viaduct::to_entry(e);
    EXPECT_EQ("vd1", entry.name);
    EXPECT_EQ("veth-h1", entry.ifname);
    EXPECT_EQ(7u, entry.index);
    EXPECT_EQ(12u, entry.ifindex);
}

TEST(Abi, StructLayout) {
    EXPECT_EQ(8u, sizeof(viaduct_abi_version));
    EXPECT_EQ(40u, sizeof(viaduct_device_entry));
    EXPECT_EQ(16u, sizeof(viaduct_list_devices));
    EXPECT_EQ(24u, sizeof(viaduct_select_device));
    EXPECT_EQ(24u, sizeof(viaduct_addr));
    EXPECT_EQ(0u, sizeof(viaduct_device_attr) % 8);
    EXPECT_EQ(sizeof(viaduct_device_attr), _IOC_SIZE(VIADUCT_IOCTL_QUERY_DEVICE));
    EXPECT_EQ(sizeof(viaduct_list_devices), _IOC_SIZE(VIADUCT_IOCTL_LIST_DEVICES));
    EXPECT_EQ(static_cast<unsigned>(VIADUCT_IOCTL_MAGIC), _IOC_TYPE(VIADUCT_IOCTL_SELECT_DEVICE));
}
