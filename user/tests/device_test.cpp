// SPDX-License-Identifier: GPL-2.0
// Host unit tests: error reporting, RAII, attribute conversion.
#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <viaduct/viaduct.hpp>

using viaduct::Device;
using viaduct::Error;

namespace {

// Sets an environment variable for the life of the object.
class ScopedEnv {
public:
    ScopedEnv(const char *name, const char *value) : name_(name) {
        if (const char *old = std::getenv(name))
            old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_.empty())
            ::unsetenv(name_);
        else
            ::setenv(name_, old_.c_str(), 1);
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
    const char *name_;
    std::string old_;
};

} // namespace

TEST(DevicePath, DefaultAndOverride) {
    ::unsetenv("VIADUCT_DEVICE");
    EXPECT_EQ("/dev/viaduct", viaduct::device_path());
    ScopedEnv env("VIADUCT_DEVICE", "/tmp/other");
    EXPECT_EQ("/tmp/other", viaduct::device_path());
}

TEST(DeviceOpen, MissingDeviceSaysModuleNotLoaded) {
    ScopedEnv env("VIADUCT_DEVICE", "/nonexistent/viaduct");
    try {
        (void)Device::open("vd0");
        FAIL() << "open succeeded";
    } catch (const Error &e) {
        EXPECT_EQ(ENOENT, e.errnum());
        EXPECT_EQ(std::errc::no_such_file_or_directory, e.code());
        EXPECT_NE(nullptr, std::strstr(e.what(), "is viaduct.ko loaded?")) << e.what();
        EXPECT_NE(nullptr, std::strstr(e.what(), "/nonexistent/viaduct")) << e.what();
    }
    EXPECT_THROW((void)Device::list(), Error);
}

TEST(DeviceOpen, NotAViaductDevice) {
    try {
        (void)Device::list("/dev/null");
        FAIL() << "list succeeded on /dev/null";
    } catch (const Error &e) {
        EXPECT_EQ(ENOTTY, e.errnum());
        EXPECT_NE(nullptr, std::strstr(e.what(), "not a viaduct device")) << e.what();
    }
}

TEST(DeviceOpen, InvalidNames) {
    ScopedEnv env("VIADUCT_DEVICE", "/nonexistent/viaduct");
    for (const char *bad : {"", "a-name-that-is-far-too-long"}) {
        try {
            (void)Device::open(std::string_view(bad));
            FAIL() << "accepted '" << bad << "'";
        } catch (const Error &e) {
            EXPECT_EQ(EINVAL, e.errnum()) << bad;
        }
    }
}

TEST(FileDescriptor, ClosesOnceAndMoves) {
    int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(raw, 0);
    {
        viaduct::FileDescriptor a(raw);
        viaduct::FileDescriptor b(std::move(a));
        EXPECT_FALSE(a.valid()); // NOLINT(bugprone-use-after-move)
        EXPECT_EQ(raw, b.get());
        viaduct::FileDescriptor c;
        c = std::move(b);
        EXPECT_EQ(raw, c.get());
        EXPECT_EQ(0, ::fcntl(raw, F_GETFD) < 0 ? errno : 0);
    }
    errno = 0;
    EXPECT_EQ(-1, ::fcntl(raw, F_GETFD));
    EXPECT_EQ(EBADF, errno);
}

TEST(Attributes, ConvertsAddressesAndLimits) {
    viaduct_device_attr a{};
    a.index = 3;
    a.abi_version = VIADUCT_ABI_VERSION;
    std::strcpy(a.name, "vd0");
    std::strcpy(a.ifname, "eth0");
    a.ifindex = 2;
    a.mtu = 1500;
    a.flags = VIADUCT_DEV_F_UP;
    a.num_addrs = 3;
    a.addrs[0].family = VIADUCT_AF_INET;
    a.addrs[0].prefixlen = 24;
    ASSERT_EQ(1, ::inet_pton(AF_INET, "192.0.2.1", a.addrs[0].addr));
    a.addrs[1].family = VIADUCT_AF_INET6;
    a.addrs[1].prefixlen = 64;
    ASSERT_EQ(1, ::inet_pton(AF_INET6, "2001:db8::1", a.addrs[1].addr));
    a.addrs[2].family = 99; // unknown families are skipped
    a.max_qp = 16384;
    a.max_msg_size = 1ULL << 31;
    auto r = viaduct::to_attributes(a);
    EXPECT_EQ(3u, r.index);
    EXPECT_EQ("vd0", r.name);
    EXPECT_EQ("eth0", r.ifname);
    EXPECT_TRUE(r.up);
    EXPECT_FALSE(r.running);
    ASSERT_EQ(2u, r.addresses.size());
    EXPECT_EQ("192.0.2.1/24", r.addresses[0].to_string());
    EXPECT_EQ(AF_INET, r.addresses[0].family);
    EXPECT_EQ("2001:db8::1/64", r.addresses[1].to_string());
    EXPECT_EQ(16384u, r.limits.max_qp);
    EXPECT_EQ(1ULL << 31, r.limits.max_msg_size);
}

TEST(Attributes, UnterminatedNamesStayInBounds) {
    viaduct_device_attr a{};
    std::memset(a.name, 'n', sizeof(a.name));
    std::memset(a.ifname, 'i', sizeof(a.ifname));
    a.num_addrs = 1000; // more than the array holds
    auto r = viaduct::to_attributes(a);
    EXPECT_EQ(std::string(VIADUCT_NAME_SIZE, 'n'), r.name);
    EXPECT_EQ(std::string(VIADUCT_NAME_SIZE, 'i'), r.ifname);
    EXPECT_TRUE(r.addresses.empty()); // all-zero entries have no family

    viaduct_device_entry e{};
    std::memset(e.name, 'x', sizeof(e.name));
    EXPECT_EQ(std::string(VIADUCT_NAME_SIZE, 'x'), viaduct::to_entry(e).name);
}

TEST(Abi, StructLayout) {
    static_assert(sizeof(viaduct_device_attr) % 8 == 0);
    EXPECT_EQ(512u, sizeof(viaduct_device_attr));
    EXPECT_EQ(24u, sizeof(viaduct_addr));
    EXPECT_EQ(40u, sizeof(viaduct_device_entry));
    EXPECT_EQ(sizeof(viaduct_device_attr), _IOC_SIZE(VIADUCT_IOCTL_QUERY_DEVICE));
}
