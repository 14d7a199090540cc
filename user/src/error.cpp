// SPDX-License-Identifier: GPL-2.0
// The error model: one exception type carrying the errno, and the sentences
// each errno becomes at each step.
#include <cerrno>
#include <cstring>

#include "syscall.hpp"

namespace viaduct {

Error::Error(int err, const std::string &what)
    : std::system_error(err, std::generic_category(), what),
      what_(std::make_shared<const std::string>(what)) {}

const char *Error::what() const noexcept {
    return what_->c_str();
}

// Out of line, so that the vtable and type_info live in the library once and
// a catch in the program matches a throw in the library.
Error::~Error() = default;

namespace detail {

namespace {

std::string describe(int err) {
    return std::generic_category().message(err);
}

} // namespace

Error open_error(int err, const std::string &path) {
    switch (err) {
    case ENOENT:
        return Error(err, path + " not found: is viaduct.ko loaded?");
    case ENXIO:
    case ENODEV:
        // A stale device node whose driver is gone.
        return Error(err, path + " has no driver behind it: is viaduct.ko loaded?");
    case EACCES:
    case EPERM:
        return Error(err, path + ": permission denied");
    default:
        return Error(err, "cannot open " + path + ": " + describe(err));
    }
}

Error abi_error(int err, const std::string &path) {
    // ENOTTY is what every other driver says to an ioctl it does not know;
    // EINVAL is what some older ones say instead.
    if (err == ENOTTY || err == EINVAL)
        return Error(err, path + " is not a viaduct device");
    return Error(err, path + ": cannot read the viaduct ABI version: " + describe(err));
}

Error select_error(int err, const std::string &what) {
    switch (err) {
    case ENODEV:
        return Error(err, "no viaduct device " + what +
                              " in this network namespace (see 'viaductctl link show')");
    case EBUSY:
        return Error(err, "cannot select device " + what + ": this context already has one");
    default:
        return Error(err, "cannot select device " + what + ": " + describe(err));
    }
}

Error query_error(int err, const std::string &name) {
    if (err == ENODEV)
        return Error(err, "device " + name + " was removed");
    return Error(err, "cannot query device " + name + ": " + describe(err));
}

Error list_error(int err) {
    return Error(err, "cannot list viaduct devices: " + describe(err));
}

Error call_error(int err, const std::string &step) {
    if (err == ENODEV)
        return Error(err, "cannot " + step + ": the device was removed");
    return Error(err, "cannot " + step + ": " + describe(err));
}

} // namespace detail
} // namespace viaduct
