// SPDX-License-Identifier: GPL-2.0
// Ownership: file descriptors close exactly once, handles move but never copy.
#include <cerrno>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <type_traits>
#include <unistd.h>

#include <viaduct/viaduct.hpp>

#include "file_descriptor.hpp"
#include "syscall.hpp"

using viaduct::detail::FileDescriptor;

namespace {

bool is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1;
}

int open_null() {
    return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

} // namespace

static_assert(!std::is_copy_constructible_v<viaduct::Device>);
static_assert(!std::is_copy_assignable_v<viaduct::Device>);
static_assert(std::is_nothrow_move_constructible_v<viaduct::Device>);
static_assert(std::is_nothrow_move_assignable_v<viaduct::Device>);
static_assert(!std::is_copy_constructible_v<FileDescriptor>);
static_assert(!std::is_copy_assignable_v<FileDescriptor>);
static_assert(std::is_nothrow_move_constructible_v<FileDescriptor>);
static_assert(std::is_nothrow_move_assignable_v<FileDescriptor>);
static_assert(std::is_base_of_v<std::system_error, viaduct::Error>);

// Every fast-path object is a handle on shared state: movable without
// throwing, never copyable.
template <class T>
constexpr bool is_handle_v =
    !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
    std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T> &&
    std::is_nothrow_destructible_v<T>;
static_assert(is_handle_v<viaduct::ProtectionDomain>);
static_assert(is_handle_v<viaduct::MemoryRegion>);
static_assert(is_handle_v<viaduct::CompletionChannel>);
static_assert(is_handle_v<viaduct::CompletionQueue>);
static_assert(is_handle_v<viaduct::QueuePair>);
// Same layout as the kernel's SGE, so that a span of them could be copied.
static_assert(sizeof(viaduct::Sge) == sizeof(viaduct_sge));

TEST(FileDescriptor, ClosesOnDestruction) {
    int raw = open_null();
    ASSERT_GE(raw, 0);
    {
        FileDescriptor fd(raw);
        EXPECT_TRUE(fd.valid());
        EXPECT_EQ(raw, fd.get());
        EXPECT_TRUE(is_open(raw));
    }
    errno = 0;
    EXPECT_FALSE(is_open(raw));
    EXPECT_EQ(EBADF, errno);
}

TEST(FileDescriptor, MoveTransfersOwnership) {
    int raw = open_null();
    ASSERT_GE(raw, 0);
    {
        FileDescriptor a(raw);
        FileDescriptor b(std::move(a));
        EXPECT_FALSE(a.valid()); // NOLINT(bugprone-use-after-move)
        EXPECT_EQ(-1, a.get());  // NOLINT(bugprone-use-after-move)
        EXPECT_EQ(raw, b.get());
        FileDescriptor c;
        EXPECT_FALSE(c);
        c = std::move(b);
        EXPECT_EQ(raw, c.get());
        EXPECT_TRUE(is_open(raw));
        FileDescriptor &alias = c;
        c = std::move(alias); // self-move keeps the descriptor
        EXPECT_TRUE(is_open(raw));
    }
    EXPECT_FALSE(is_open(raw));
}

TEST(FileDescriptor, MoveAssignClosesThePrevious) {
    int first = open_null();
    int second = open_null();
    ASSERT_GE(first, 0);
    ASSERT_GE(second, 0);
    FileDescriptor a(first);
    a = FileDescriptor(second);
    EXPECT_FALSE(is_open(first));
    EXPECT_TRUE(is_open(second));
    EXPECT_EQ(second, a.get());
}

TEST(FileDescriptor, ReleaseAndReset) {
    int raw = open_null();
    ASSERT_GE(raw, 0);
    FileDescriptor fd(raw);
    EXPECT_EQ(raw, fd.release());
    EXPECT_FALSE(fd.valid());
    EXPECT_TRUE(is_open(raw)); // released, not closed
    fd.reset(raw);
    EXPECT_TRUE(fd.valid());
    fd.reset();
    EXPECT_FALSE(fd.valid());
    EXPECT_FALSE(is_open(raw));
}

TEST(FileDescriptor, OpenFileIsCloseOnExec) {
    FileDescriptor fd = viaduct::detail::open_file("/dev/null");
    ASSERT_TRUE(fd.valid());
    int flags = ::fcntl(fd.get(), F_GETFD);
    ASSERT_NE(-1, flags);
    EXPECT_TRUE(flags & FD_CLOEXEC);
    EXPECT_EQ(O_RDWR, ::fcntl(fd.get(), F_GETFL) & O_ACCMODE);
}

TEST(FileDescriptor, FailedOpenLeaksNothing) {
    // The probe of a non-viaduct file must close what it opened.
    int before = open_null();
    ASSERT_GE(before, 0);
    ::close(before);
    EXPECT_THROW((void)viaduct::Device::list("/dev/null"), viaduct::Error);
    EXPECT_THROW((void)viaduct::Device::open("vd0", "/dev/null"), viaduct::Error);
    int after = open_null();
    ASSERT_GE(after, 0);
    ::close(after);
    EXPECT_EQ(before, after); // the lowest free number is free again
}
