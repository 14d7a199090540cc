// SPDX-License-Identifier: GPL-2.0
#include "syscall.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>

namespace viaduct::detail {

FileDescriptor open_file(const std::string &path) {
    int fd;
    do {
        fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        throw open_error(errno, path);
    return FileDescriptor(fd);
}

int do_ioctl(int fd, unsigned long cmd, void *arg) noexcept {
    int ret;
    do {
        ret = ::ioctl(fd, cmd, arg);
    } while (ret < 0 && errno == EINTR);
    return ret < 0 ? errno : 0;
}

std::uint32_t read_abi_version(int fd, const std::string &path) {
    viaduct_abi_version v{};
    if (int err = do_ioctl(fd, VIADUCT_IOCTL_GET_ABI_VERSION, &v))
        throw abi_error(err, path);
    return v.abi_version;
}

void check_abi_version(std::uint32_t version, const std::string &path) {
    if (version == VIADUCT_ABI_VERSION)
        return;
    throw Error(EPROTO, path + ": the module speaks viaduct ABI " + std::to_string(version) +
                            ", this library ABI " + std::to_string(VIADUCT_ABI_VERSION) +
                            ": install a libviaduct and viaduct.ko that match");
}

FileDescriptor open_context(const std::string &path, std::uint32_t *abi_version) {
    FileDescriptor fd = open_file(path);
    std::uint32_t version = read_abi_version(fd.get(), path);
    check_abi_version(version, path);
    if (abi_version)
        *abi_version = version;
    return fd;
}

} // namespace viaduct::detail
