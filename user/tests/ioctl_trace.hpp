// SPDX-License-Identifier: GPL-2.0
// A record of the ioctl() calls this process makes. The test binary defines
// ioctl() itself, in front of the C library's, so that it sees every call
// libviaduct (linked statically) makes, with its result.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace viaduct::test {

struct IoctlCall {
    int fd = -1;
    unsigned long cmd = 0;
    std::uint32_t handle = 0; // the first __u32 of the argument, for DESTROY_*
    int ret = 0;
    int err = 0; // errno if ret < 0
};

// Records the calls made between its construction and its destruction (one
// recorder at a time).
class IoctlTrace {
public:
    IoctlTrace();
    ~IoctlTrace();
    IoctlTrace(const IoctlTrace &) = delete;
    IoctlTrace &operator=(const IoctlTrace &) = delete;

    std::vector<IoctlCall> calls() const;
    std::size_t count(unsigned long cmd) const;
};

// While it lives, every ioctl() of @cmd sleeps @delay after the real call
// returns, before its caller sees the result: it widens the window between
// a command and what the library does next, for tests of races.
class IoctlDelay {
public:
    IoctlDelay(unsigned long cmd, std::chrono::microseconds delay);
    ~IoctlDelay();
    IoctlDelay(const IoctlDelay &) = delete;
    IoctlDelay &operator=(const IoctlDelay &) = delete;
};

} // namespace viaduct::test
