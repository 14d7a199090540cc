// SPDX-License-Identifier: GPL-2.0
// The system calls on /dev/viaduct, and the errors they turn into.
#pragma once

#include <cstdint>
#include <string>

#include <viaduct/viaduct.hpp>

#include "file_descriptor.hpp"

namespace viaduct::detail {

// open(O_RDWR | O_CLOEXEC); throws the error of open_error().
FileDescriptor open_file(const std::string &path);

// ioctl(), retried on EINTR. Returns 0 or the errno; never throws.
int do_ioctl(int fd, unsigned long cmd, void *arg) noexcept;

// VIADUCT_IOCTL_GET_ABI_VERSION; a file that does not know it is not a
// viaduct device.
std::uint32_t read_abi_version(int fd, const std::string &path);

// Throws Error(EPROTO) unless @version is the one this library speaks.
void check_abi_version(std::uint32_t version, const std::string &path);

// open_file(), then the ABI version read and checked: a usable context.
FileDescriptor open_context(const std::string &path, std::uint32_t *abi_version = nullptr);

// What each errno means at each step, worded for the user.
Error open_error(int err, const std::string &path);
Error abi_error(int err, const std::string &path);
Error select_error(int err, const std::string &what);
Error query_error(int err, const std::string &name);
Error list_error(int err);
// "cannot <step>: <strerror>"; for ENODEV, that the device was removed.
Error call_error(int err, const std::string &step);

} // namespace viaduct::detail
