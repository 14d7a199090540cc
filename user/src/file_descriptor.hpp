// SPDX-License-Identifier: GPL-2.0
// An owned file descriptor, closed exactly once.
#pragma once

namespace viaduct::detail {

class FileDescriptor {
public:
    FileDescriptor() noexcept = default;
    explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
    FileDescriptor(const FileDescriptor &) = delete;
    FileDescriptor &operator=(const FileDescriptor &) = delete;
    FileDescriptor(FileDescriptor &&other) noexcept;
    FileDescriptor &operator=(FileDescriptor &&other) noexcept;
    ~FileDescriptor();

    int get() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }
    explicit operator bool() const noexcept { return valid(); }

    // Gives up ownership without closing.
    int release() noexcept;
    // Closes the current descriptor, if any, and owns @fd instead.
    void reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

} // namespace viaduct::detail
