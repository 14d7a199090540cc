// SPDX-License-Identifier: GPL-2.0
// What "link show" and "dev show" print, and the error sentences.
#include <cerrno>
#include <gtest/gtest.h>
#include <sstream>

#include <viaduct/viaduct-abi.h>

#include "errors.hpp"
#include "output.hpp"

using namespace viaductctl;

namespace {

LinkInfo sample() {
    LinkInfo l;
    l.index = 1;
    l.name = "vd0";
    l.ifindex = 2;
    l.ifname = "eth0";
    l.mtu = 1500;
    l.flags = VIADUCT_DEV_F_UP | VIADUCT_DEV_F_RUNNING;
    l.abi_version = 1;
    l.contexts = 3;
    l.addresses = {"192.0.2.1/24", "2001:db8::1/64"};
    l.limits = {{"max_pd", 1024}, {"max_msg_size", 1ULL << 31}};
    l.resources = {{"pds", 2}, {"qps", 1}, {"pinned_pages", 256}};
    return l;
}

std::string links(const std::vector<LinkInfo> &v, OutputStyle s) {
    std::ostringstream out;
    print_links(out, v, s);
    return out.str();
}

std::string devices(const std::vector<LinkInfo> &v, OutputStyle s) {
    std::ostringstream out;
    print_devices(out, v, s);
    return out.str();
}

Command command(Command::Kind kind, std::string name, std::string netdev = {}) {
    Command c;
    c.kind = kind;
    c.name = std::move(name);
    c.netdev = std::move(netdev);
    return c;
}

NetlinkError kernel(int err, std::string extack = {}) {
    return NetlinkError(NetlinkError::Source::Kernel, err, "kernel error", std::move(extack));
}

} // namespace

TEST(Output, LinkState) {
    LinkInfo l;
    EXPECT_EQ("DOWN", link_state(l));
    l.flags = VIADUCT_DEV_F_UP;
    EXPECT_EQ("NO_CARRIER", link_state(l));
    l.flags |= VIADUCT_DEV_F_RUNNING;
    EXPECT_EQ("ACTIVE", link_state(l));
}

TEST(Output, LinkText) {
    EXPECT_EQ("link vd0 index 1 state ACTIVE netdev eth0\n", links({sample()}, {}));
    EXPECT_EQ("", links({}, {}));
}

TEST(Output, LinkJson) {
    EXPECT_EQ(R"([{"ifname":"vd0","ifindex":1,"state":"ACTIVE","netdev":"eth0","netdev_index":2}])"
              "\n",
              links({sample()}, {true, false}));
    EXPECT_EQ("[]\n", links({}, {true, false}));
}

TEST(Output, DeviceText) {
    EXPECT_EQ("1: vd0: netdev eth0 ifindex 2 mtu 1500 state ACTIVE abi 1 contexts 3\n"
              "    inet 192.0.2.1/24\n"
              "    inet6 2001:db8::1/64\n"
              "    limits max_pd 1024 max_msg_size 2147483648\n"
              "    resources pds 2 qps 1 pinned_pages 256\n",
              devices({sample()}, {}));
}

TEST(Output, DeviceJson) {
    EXPECT_EQ(R"([{"ifindex":1,"ifname":"vd0","netdev":"eth0","netdev_index":2,"mtu":1500,)"
              R"("state":"ACTIVE","abi_version":1,"contexts":3,"flags":["UP","RUNNING"],)"
              R"("addresses":["192.0.2.1/24","2001:db8::1/64"],)"
              R"("limits":{"max_pd":1024,"max_msg_size":2147483648},)"
              R"("resources":{"pds":2,"qps":1,"pinned_pages":256}}])"
              "\n",
              devices({sample()}, {true, false}));
}

TEST(Output, JsonEscapesNames) {
    LinkInfo l = sample();
    l.ifname = "we\"ird\\";
    EXPECT_NE(std::string::npos, links({l}, {true, false}).find(R"("netdev":"we\"ird\\")"));
}

TEST(Errors, ModuleMissingAndLocalFailuresPassThrough) {
    NetlinkError e(NetlinkError::Source::FamilyMissing, ENOENT,
                   "viaduct generic netlink family not found: is viaduct.ko loaded?");
    EXPECT_EQ("viaduct generic netlink family not found: is viaduct.ko loaded?",
              explain(e, command(Command::Kind::LinkShow, "")));
    NetlinkError local(NetlinkError::Source::Local, EIO, "netlink receive: boom");
    EXPECT_EQ("netlink receive: boom", explain(local, command(Command::Kind::DevShow, "")));
}

TEST(Errors, KernelErrorsInTheCommandsTerms) {
    auto add = command(Command::Kind::LinkAdd, "vd0", "eth9");
    EXPECT_EQ("interface 'eth9' not found in this network namespace (kernel: no such interface)",
              explain(kernel(ENODEV, "no such interface"), add));
    EXPECT_EQ("device name 'vd0' already exists in this network namespace (kernel: name in use)",
              explain(kernel(EEXIST, "name in use"), add));
    EXPECT_EQ("interface 'eth9' already has a viaduct device", explain(kernel(EBUSY), add));
    EXPECT_EQ("permission denied: adding and removing devices needs CAP_NET_ADMIN",
              explain(kernel(EPERM), add));

    auto del = command(Command::Kind::LinkDel, "vd7");
    EXPECT_EQ("no viaduct device 'vd7' in this network namespace", explain(kernel(ENODEV), del));
    EXPECT_EQ("Operation not supported (kernel: nope)", explain(kernel(EOPNOTSUPP, "nope"), del));
}

TEST(Errors, ExtackNotRepeated) {
    auto del = command(Command::Kind::LinkDel, "vd7");
    EXPECT_EQ("Input/output error", explain(kernel(EIO, "Input/output error"), del));
}
