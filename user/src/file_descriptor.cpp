// SPDX-License-Identifier: GPL-2.0
#include "file_descriptor.hpp"

#include <unistd.h>
#include <utility>

namespace viaduct::detail {

FileDescriptor::FileDescriptor(FileDescriptor &&other) noexcept : fd_(other.release()) {}

FileDescriptor &FileDescriptor::operator=(FileDescriptor &&other) noexcept {
    if (this != &other)
        reset(other.release());
    return *this;
}

FileDescriptor::~FileDescriptor() {
    reset();
}

int FileDescriptor::release() noexcept {
    return std::exchange(fd_, -1);
}

void FileDescriptor::reset(int fd) noexcept {
    int old = std::exchange(fd_, fd);
    // close() releases the descriptor even when it reports an error (EINTR
    // included, on Linux), so it must not be retried.
    if (old >= 0)
        ::close(old);
}

} // namespace viaduct::detail
