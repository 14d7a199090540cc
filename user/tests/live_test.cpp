// SPDX-License-Identifier: GPL-2.0
//
// Live tests: against the real module, in the test VM. Every suite here is
// named Live* and skips where the character device ($VIADUCT_DEVICE, else
// /dev/viaduct) does not exist, or fails with VIADUCT_TEST_REQUIRE_DEVICE=1
// (live_env.hpp).
//
// LiveContext needs only the module. LiveDevice needs a device: the one
// named by $VIADUCT_TEST_DEVICE, which must then exist, or else the first
// device listed; with neither it skips.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <set>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <viaduct/viaduct.hpp>

#include "live_env.hpp"
#include "syscall.hpp"

using viaduct::Device;
using viaduct::DeviceEntry;

namespace {

using viaduct::test::have_module;

const char *requested_device() {
    const char *name = std::getenv("VIADUCT_TEST_DEVICE");
    return name && *name ? name : nullptr;
}

#define SKIP_WITHOUT_MODULE()                                                                      \
    do {                                                                                           \
        if (!have_module())                                                                        \
            VIADUCT_LIVE_UNAVAILABLE("no " << viaduct::device_path()                               \
                                           << ": viaduct.ko not loaded");                          \
    } while (0)

class LiveDevice : public ::testing::Test {
protected:
    void SetUp() override {
        std::string name;
        VIADUCT_LIVE_DEVICE(name);
        for (const DeviceEntry &d : Device::list())
            if (d.name == name)
                entry_ = d;
        ASSERT_EQ(name, entry_.name);
    }

    DeviceEntry entry_;
};

bool is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1;
}

} // namespace

TEST(LiveContext, AbiVersion) {
    SKIP_WITHOUT_MODULE();
    auto fd = viaduct::detail::open_file(viaduct::device_path());
    EXPECT_EQ(static_cast<std::uint32_t>(VIADUCT_ABI_VERSION),
              viaduct::detail::read_abi_version(fd.get(), viaduct::device_path()));
}

TEST(LiveContext, ListDevices) {
    SKIP_WITHOUT_MODULE();
    auto devs = Device::list();
    std::set<std::string> names;
    std::set<std::uint32_t> indices;
    for (const auto &d : devs) {
        EXPECT_FALSE(d.name.empty());
        EXPECT_LT(d.name.size(), static_cast<std::size_t>(VIADUCT_NAME_SIZE));
        EXPECT_FALSE(d.ifname.empty()) << d.name;
        EXPECT_GT(d.ifindex, 0u) << d.name;
        EXPECT_NE(VIADUCT_INDEX_SELECTED, d.index) << d.name;
        EXPECT_TRUE(names.insert(d.name).second) << "name listed twice: " << d.name;
        EXPECT_TRUE(indices.insert(d.index).second) << "index listed twice: " << d.index;
    }
    if (const char *want = requested_device()) {
        EXPECT_EQ(1u, names.count(want)) << want << " not listed";
    }
    // A second context sees the same devices.
    EXPECT_EQ(devs.size(), Device::list().size());
}

TEST(LiveContext, UnknownDeviceName) {
    SKIP_WITHOUT_MODULE();
    try {
        (void)Device::open("nosuchvd9");
        FAIL() << "opened a device that does not exist";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(ENODEV, e.errnum());
        EXPECT_STREQ("no viaduct device 'nosuchvd9' in this network namespace "
                     "(see 'viaductctl link show')",
                     e.what());
    }
}

TEST(LiveContext, UnknownDeviceIndex) {
    SKIP_WITHOUT_MODULE();
    try {
        (void)Device::open(std::uint32_t{0x7ffffff0});
        FAIL() << "opened a device index that does not exist";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(ENODEV, e.errnum());
        EXPECT_NE(std::string::npos, std::string(e.what()).find("with index 2147483632"))
            << e.what();
    }
}

TEST_F(LiveDevice, OpenByNameAndQuery) {
    Device dev = Device::open(entry_.name);
    EXPECT_EQ(static_cast<std::uint32_t>(VIADUCT_ABI_VERSION), dev.abi_version());
    EXPECT_EQ(entry_.name, dev.name());
    EXPECT_EQ(entry_.index, dev.index());
    EXPECT_EQ(viaduct::device_path(), dev.path());

    const auto &a = dev.attributes();
    EXPECT_EQ(static_cast<std::uint32_t>(VIADUCT_ABI_VERSION), a.abi_version);
    EXPECT_EQ(entry_.name, a.name);
    EXPECT_EQ(entry_.index, a.index);
    EXPECT_EQ(entry_.ifname, a.ifname);
    EXPECT_EQ(entry_.ifindex, a.ifindex);
    EXPECT_GE(a.mtu, 68u); // the IPv4 minimum
    if (a.running()) {
        EXPECT_TRUE(a.up()) << "RUNNING without UP";
    }
    for (const auto &addr : a.addresses) {
        EXPECT_TRUE(addr.family == AF_INET || addr.family == AF_INET6) << addr.family;
        EXPECT_LE(addr.prefixlen, addr.family == AF_INET ? 32u : 128u) << addr.to_string();
    }

    auto again = dev.query();
    EXPECT_EQ(a.index, again.index);
    EXPECT_EQ(a.name, again.name);
    EXPECT_EQ(a.ifindex, again.ifindex);
}

TEST_F(LiveDevice, LimitsAreSane) {
    Device dev = Device::open(entry_.name);
    const auto &l = dev.attributes().limits;
    EXPECT_GT(l.max_pd, 0u);
    EXPECT_GT(l.max_mr, 0u);
    EXPECT_GT(l.max_cq, 0u);
    EXPECT_GT(l.max_cqe, 0u);
    EXPECT_GT(l.max_qp, 0u);
    EXPECT_GT(l.max_qp_wr, 0u);
    EXPECT_GT(l.max_sge, 0u);
    EXPECT_GT(l.max_msg_size, 0u);
    // create_qp carries the message size in a __u32.
    EXPECT_LE(l.max_msg_size, std::uint64_t{UINT32_MAX});
    EXPECT_LE(l.max_msg_size, l.max_mr_size);
    EXPECT_EQ(static_cast<std::uint32_t>(::sysconf(_SC_PAGESIZE)), l.page_size);
}

TEST_F(LiveDevice, OpenByIndex) {
    Device dev = Device::open(entry_.index);
    EXPECT_EQ(entry_.name, dev.name());
    EXPECT_EQ(entry_.index, dev.index());
}

TEST_F(LiveDevice, ContextsAreIndependent) {
    Device a = Device::open(entry_.name);
    Device b = Device::open(entry_.name);
    EXPECT_NE(a.fd(), b.fd());
    EXPECT_EQ(a.attributes().index, b.attributes().index);
    EXPECT_NO_THROW((void)a.query());
    EXPECT_NO_THROW((void)b.query());
}

TEST_F(LiveDevice, MoveAndSharedStateKeepTheContextOpen) {
    Device a = Device::open(entry_.name);
    const int fd = a.fd();
    int flags = ::fcntl(fd, F_GETFD);
    ASSERT_NE(-1, flags);
    EXPECT_TRUE(flags & FD_CLOEXEC);

    Device b = std::move(a);
    EXPECT_FALSE(a); // NOLINT(bugprone-use-after-move)
    try {
        (void)a.attributes(); // NOLINT(bugprone-use-after-move)
        ADD_FAILURE() << "a moved-from Device answered";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(EBADF, e.errnum());
    }
    EXPECT_TRUE(b);
    EXPECT_EQ(fd, b.fd());
    EXPECT_NO_THROW((void)b.query());

    // What a child object will do: hold the state past its Device.
    auto state = b.state();
    { Device gone = std::move(b); }
    EXPECT_TRUE(is_open(fd)) << "closed while shared state was still held";
    state.reset();
    EXPECT_FALSE(is_open(fd)) << "the last reference did not close the context";
}

// MODIFY_MR through MemoryRegion::modify(): rights and PD change in place,
// the STag stays; a refused change changes nothing.
TEST_F(LiveDevice, MemoryRegionModifyKeepsTheStag) {
    namespace access = viaduct::access;
    Device dev = Device::open(entry_.name);
    viaduct::ProtectionDomain pd(dev), pd2(dev);
    std::vector<std::byte> buf(8192);
    viaduct::MemoryRegion mr(pd, std::span(buf), access::local_write, 0x42);
    const std::uint32_t stag = mr.stag();

    mr.modify(access::local_write | access::remote_write | access::remote_read);
    EXPECT_EQ(stag, mr.stag());
    EXPECT_EQ(access::local_write | access::remote_write | access::remote_read, mr.access());
    try {
        mr.modify(access::remote_write);
        FAIL() << "remote write without local write was accepted";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(EINVAL, e.errnum());
    }
    EXPECT_EQ(access::local_write | access::remote_write | access::remote_read, mr.access());

    mr.modify(pd2, access::local_write);
    EXPECT_EQ(stag, mr.stag());
    EXPECT_EQ(pd2.handle(), mr.pd_handle());
    EXPECT_EQ(access::local_write, mr.access());

    // read-only pages take no write right
    void *ro = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, ro);
    {
        viaduct::MemoryRegion rmr(pd, ro, 4096, access::remote_read);
        try {
            rmr.modify(access::local_write);
            FAIL() << "a write right on read-only pages was accepted";
        } catch (const viaduct::Error &e) {
            EXPECT_EQ(EACCES, e.errnum());
        }
        EXPECT_EQ(access::remote_read, rmr.access());
    }
    ::munmap(ro, 4096);
}
