// SPDX-License-Identifier: GPL-2.0
// Tests against the real module; skipped where /dev/viaduct does not exist.
// In the test VM, VIADUCT_TEST_DEVICE names a device created for them.
#include <cstdlib>
#include <gtest/gtest.h>
#include <unistd.h>

#include <viaduct/viaduct.hpp>

using viaduct::Device;

namespace {

bool have_module() {
    return ::access(viaduct::device_path().c_str(), F_OK) == 0;
}

const char *test_device() {
    const char *name = std::getenv("VIADUCT_TEST_DEVICE");
    return name && *name ? name : nullptr;
}

} // namespace

TEST(Live, ListDevices) {
    if (!have_module())
        GTEST_SKIP() << "no " << viaduct::device_path();
    auto devs = Device::list();
    for (const auto &d : devs) {
        EXPECT_FALSE(d.name.empty());
        EXPECT_GT(d.ifindex, 0u);
    }
    if (const char *name = test_device()) {
        bool found = false;
        for (const auto &d : devs)
            found |= d.name == name;
        EXPECT_TRUE(found) << name << " not listed";
    }
}

TEST(Live, OpenQueryDevice) {
    if (!have_module() || !test_device())
        GTEST_SKIP() << "no module or VIADUCT_TEST_DEVICE";
    Device dev = Device::open(test_device());
    EXPECT_EQ(static_cast<unsigned>(VIADUCT_ABI_VERSION), dev.abi_version());
    const auto &a = dev.attributes();
    EXPECT_EQ(test_device(), a.name);
    EXPECT_FALSE(a.ifname.empty());
    EXPECT_GT(a.limits.max_qp, 0u);
    EXPECT_GT(a.limits.max_cqe, 0u);
    EXPECT_GT(a.limits.max_sge, 0u);
    EXPECT_LE(a.limits.max_msg_size, a.limits.max_mr_size);
    EXPECT_EQ(static_cast<unsigned>(::getpagesize()), a.limits.page_size);
    auto again = dev.query();
    EXPECT_EQ(a.index, again.index);
    Device by_index = Device::open(a.index);
    EXPECT_EQ(a.name, by_index.name());
}

TEST(Live, UnknownDeviceError) {
    if (!have_module())
        GTEST_SKIP() << "no " << viaduct::device_path();
    try {
        (void)Device::open("nosuchvd9");
        FAIL() << "opened a device that does not exist";
    } catch (const viaduct::Error &e) {
        EXPECT_EQ(ENODEV, e.errnum());
        EXPECT_NE(std::string::npos, std::string(e.what()).find("viaductctl link show"));
    }
}
