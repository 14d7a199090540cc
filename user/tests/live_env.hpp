// SPDX-License-Identifier: GPL-2.0
// What the Live* suites run against, and what they do without it.
//
// Where the module or a device is missing, as on a development host, they
// skip. Where VIADUCT_TEST_REQUIRE_DEVICE=1 (the test VM sets it, having
// loaded the module and made the device named by VIADUCT_TEST_DEVICE),
// the same is a failure: the setup that should have provided them failed,
// and skipping would let a broken run pass.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include <viaduct/viaduct.hpp>

namespace viaduct::test {

inline bool device_required() {
    const char *v = std::getenv("VIADUCT_TEST_REQUIRE_DEVICE");
    return v && std::string(v) == "1";
}

inline bool have_module() {
    return ::access(viaduct::device_path().c_str(), F_OK) == 0;
}

// The device to test: $VIADUCT_TEST_DEVICE, which must then be listed, or
// else the first one listed. Empty, with the reason in @why, if there is
// none; @must_fail then says whether that is a failure even where a skip
// would do (a named device that is not there).
inline std::string live_device(std::string *why, bool *must_fail) {
    *must_fail = false;
    if (!have_module()) {
        *why = "no " + viaduct::device_path() + ": viaduct.ko not loaded";
        return {};
    }
    const char *want = std::getenv("VIADUCT_TEST_DEVICE");
    auto devs = Device::list();
    if (want && *want) {
        auto it = std::find_if(devs.begin(), devs.end(),
                               [&](const DeviceEntry &d) { return d.name == want; });
        if (it != devs.end())
            return want;
        *why = std::string("VIADUCT_TEST_DEVICE=") + want + " is not listed";
        *must_fail = true;
        return {};
    }
    if (device_required()) {
        *why = "VIADUCT_TEST_DEVICE is not set";
        return {};
    }
    if (devs.empty()) {
        *why = "no viaduct device in this namespace and no VIADUCT_TEST_DEVICE";
        return {};
    }
    return devs.front().name;
}

} // namespace viaduct::test

// In a test or SetUp(): skip for @msg, or fail where the device is required.
#define VIADUCT_LIVE_UNAVAILABLE(msg)                                                              \
    do {                                                                                           \
        if (viaduct::test::device_required())                                                      \
            GTEST_FAIL() << msg                                                                    \
                         << " (VIADUCT_TEST_REQUIRE_DEVICE=1: the test setup did not provide it)"; \
        GTEST_SKIP() << msg;                                                                       \
    } while (0)

// In SetUp(): the device to test into @name, or skip/fail.
#define VIADUCT_LIVE_DEVICE(name)                                                                  \
    do {                                                                                           \
        std::string why_;                                                                          \
        bool must_fail_ = false;                                                                   \
        (name) = viaduct::test::live_device(&why_, &must_fail_);                                   \
        if ((name).empty()) {                                                                      \
            if (must_fail_)                                                                        \
                GTEST_FAIL() << why_;                                                              \
            VIADUCT_LIVE_UNAVAILABLE(why_);                                                        \
        }                                                                                          \
    } while (0)
