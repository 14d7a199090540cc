// SPDX-License-Identifier: GPL-2.0
// The error model: each failure's errno and the sentence that goes with it.
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <viaduct/viaduct.hpp>

#include "syscall.hpp"

using viaduct::Device;
using viaduct::Error;
namespace detail = viaduct::detail;

namespace {

// Sets (or with nullptr unsets) an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char *name, const char *value) : name_(name) {
        if (const char *old = std::getenv(name))
            old_ = old;
        had_ = std::getenv(name) != nullptr;
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (had_)
            ::setenv(name_, old_.c_str(), 1);
        else
            ::unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
    const char *name_;
    std::string old_;
    bool had_ = false;
};

bool contains(const std::string &haystack, const std::string &needle) {
    return haystack.find(needle) != std::string::npos;
}

// Runs @fn, which must throw viaduct::Error, and returns it.
template <typename Fn> Error expect_error(Fn &&fn) {
    try {
        fn();
    } catch (const Error &e) {
        return e;
    }
    ADD_FAILURE() << "no viaduct::Error thrown";
    return Error(0, "");
}

const char *const missing = "/nonexistent/viaduct";

} // namespace

TEST(DevicePath, DefaultAndOverride) {
    {
        ScopedEnv env("VIADUCT_DEVICE", nullptr);
        EXPECT_EQ("/dev/viaduct", viaduct::device_path());
    }
    {
        ScopedEnv env("VIADUCT_DEVICE", "");
        EXPECT_EQ("/dev/viaduct", viaduct::device_path());
    }
    ScopedEnv env("VIADUCT_DEVICE", "/tmp/other");
    EXPECT_EQ("/tmp/other", viaduct::device_path());
}

TEST(ErrorModel, IsASystemErrorWithTheErrno) {
    Error e(ENODEV, "device vd0 was removed");
    const std::system_error &se = e;
    EXPECT_EQ(ENODEV, e.errnum());
    EXPECT_EQ(std::generic_category(), se.code().category());
    EXPECT_EQ(std::errc::no_such_device, se.code());
    EXPECT_TRUE(contains(e.what(), "device vd0 was removed")) << e.what();
}

TEST(DeviceOpen, MissingDeviceSaysModuleNotLoaded) {
    ScopedEnv env("VIADUCT_DEVICE", missing);
    Error e = expect_error([] { (void)Device::open("vd0"); });
    EXPECT_EQ(ENOENT, e.errnum());
    EXPECT_EQ(std::errc::no_such_file_or_directory, e.code());
    EXPECT_EQ(std::string(missing) + " not found: is viaduct.ko loaded?", e.what());

    e = expect_error([] { (void)Device::open(std::uint32_t{0}); });
    EXPECT_EQ(ENOENT, e.errnum());
    e = expect_error([] { (void)Device::list(); });
    EXPECT_EQ(ENOENT, e.errnum());
    EXPECT_TRUE(contains(e.what(), "is viaduct.ko loaded?")) << e.what();
}

TEST(DeviceOpen, PathParameterOverridesEnvironment) {
    ScopedEnv env("VIADUCT_DEVICE", "/dev/null");
    Error e = expect_error([] { (void)Device::list(missing); });
    EXPECT_EQ(ENOENT, e.errnum());
    EXPECT_TRUE(contains(e.what(), missing)) << e.what();
}

TEST(DeviceOpen, NotAViaductDevice) {
    Error e = expect_error([] { (void)Device::list("/dev/null"); });
    EXPECT_EQ(ENOTTY, e.errnum());
    EXPECT_EQ("/dev/null is not a viaduct device", std::string(e.what()));

    e = expect_error([] { (void)Device::open("vd0", "/dev/null"); });
    EXPECT_EQ(ENOTTY, e.errnum());
    EXPECT_TRUE(contains(e.what(), "not a viaduct device")) << e.what();
}

TEST(DeviceOpen, OtherOpenFailuresNameTheCause) {
    Error e = expect_error([] { (void)Device::list("/dev/null/viaduct"); });
    EXPECT_EQ(ENOTDIR, e.errnum());
    EXPECT_EQ("cannot open /dev/null/viaduct: Not a directory", std::string(e.what()));
}

TEST(DeviceOpen, PermissionDenied) {
    if (::geteuid() == 0)
        GTEST_SKIP() << "root is not refused by file modes";
    char dir[] = "/tmp/viaduct-test-XXXXXX";
    ASSERT_NE(nullptr, ::mkdtemp(dir));
    std::string path = std::string(dir) + "/viaduct";
    int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0);
    ASSERT_GE(fd, 0);
    ::close(fd);
    Error e = expect_error([&] { (void)Device::list(path); });
    ::unlink(path.c_str());
    ::rmdir(dir);
    EXPECT_EQ(EACCES, e.errnum());
    EXPECT_EQ(path + ": permission denied", e.what());
}

TEST(DeviceOpen, InvalidNames) {
    ScopedEnv env("VIADUCT_DEVICE", missing);
    using namespace std::string_view_literals;
    for (std::string_view bad :
         {""sv, "a-name-that-is-far-too-long"sv, "0123456789abcdef"sv, "vd\0x"sv}) {
        Error e = expect_error([&] { (void)Device::open(bad); });
        EXPECT_EQ(EINVAL, e.errnum()) << bad;
        EXPECT_TRUE(contains(e.what(), "invalid device name")) << e.what();
    }
    // 15 characters fit, so the failure is the missing device, not the name.
    Error e = expect_error([] { (void)Device::open("0123456789abcde"); });
    EXPECT_EQ(ENOENT, e.errnum());
}

TEST(ErrorMessages, Open) {
    EXPECT_STREQ("/dev/viaduct: permission denied",
                 detail::open_error(EACCES, "/dev/viaduct").what());
    EXPECT_EQ(EPERM, detail::open_error(EPERM, "/dev/viaduct").errnum());
    Error e = detail::open_error(ENXIO, "/dev/viaduct");
    EXPECT_EQ(ENXIO, e.errnum());
    EXPECT_TRUE(contains(e.what(), "is viaduct.ko loaded?")) << e.what();
    EXPECT_TRUE(contains(detail::open_error(ENODEV, "/x").what(), "is viaduct.ko loaded?"));
}

TEST(ErrorMessages, Select) {
    Error e = detail::select_error(ENODEV, "'vd7'");
    EXPECT_EQ(ENODEV, e.errnum());
    EXPECT_STREQ("no viaduct device 'vd7' in this network namespace (see 'viaductctl link show')",
                 e.what());
    e = detail::select_error(EBUSY, "'vd7'");
    EXPECT_EQ(EBUSY, e.errnum());
    EXPECT_TRUE(contains(e.what(), "already")) << e.what();
}

TEST(ErrorMessages, DeviceRemoved) {
    Error e = detail::query_error(ENODEV, "vd0");
    EXPECT_EQ(ENODEV, e.errnum());
    EXPECT_STREQ("device vd0 was removed", e.what());
    e = detail::query_error(EFAULT, "vd0");
    EXPECT_EQ(EFAULT, e.errnum());
    EXPECT_STREQ("cannot query device vd0: Bad address", e.what());
}

TEST(ErrorMessages, AbiVersion) {
    EXPECT_NO_THROW(detail::check_abi_version(VIADUCT_ABI_VERSION, "/dev/viaduct"));
    Error e =
        expect_error([] { detail::check_abi_version(VIADUCT_ABI_VERSION + 1, "/dev/viaduct"); });
    EXPECT_EQ(EPROTO, e.errnum());
    std::string want = "ABI " + std::to_string(VIADUCT_ABI_VERSION + 1);
    EXPECT_TRUE(contains(e.what(), want)) << e.what();
    EXPECT_TRUE(contains(e.what(), "library ABI " + std::to_string(VIADUCT_ABI_VERSION)))
        << e.what();

    e = detail::abi_error(EINVAL, "/dev/foo");
    EXPECT_STREQ("/dev/foo is not a viaduct device", e.what());
    e = detail::abi_error(EIO, "/dev/foo");
    EXPECT_EQ(EIO, e.errnum());
    EXPECT_TRUE(contains(e.what(), "cannot read the viaduct ABI version")) << e.what();
}
