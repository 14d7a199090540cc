// SPDX-License-Identifier: GPL-2.0
// What a Device shares with the objects created on it.
#pragma once

#include <cstdint>
#include <string>

#include <viaduct/viaduct.hpp>

#include "file_descriptor.hpp"

namespace viaduct {

namespace detail {

// The number of fork()s between the process that loaded the library and
// this one (a pthread_atfork() handler counts them): 0 in the original
// process, more in its children.
std::uint64_t fork_generation() noexcept;

// Error(EPERM) for an object a child of fork() inherited from its parent.
Error inherited_error(const char *type);

} // namespace detail

// One open context with a selected device. It is reached only through a
// shared_ptr: the Device and every child hold one, and the descriptor is
// closed (and the kernel frees the context) when the last of them goes.
struct __attribute__((visibility("hidden"))) Device::State {
    detail::FileDescriptor fd;
    std::string path;
    std::uint32_t abi_version = 0;
    DeviceAttributes attr; // as read at open time
    std::uint64_t generation = detail::fork_generation();

    // The context is the parent's: this process is a child of fork() and
    // shares its descriptor, but not its rings (VM_DONTCOPY). It must not
    // touch the context, not even to destroy what the parent made.
    bool inherited() const noexcept { return generation != detail::fork_generation(); }
};

} // namespace viaduct
