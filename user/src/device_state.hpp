// SPDX-License-Identifier: GPL-2.0
// What a Device shares with the objects created on it.
#pragma once

#include <cstdint>
#include <string>

#include <viaduct/viaduct.hpp>

#include "file_descriptor.hpp"

namespace viaduct {

// One open context with a selected device. It is reached only through a
// shared_ptr: the Device and every child hold one, and the descriptor is
// closed (and the kernel frees the context) when the last of them goes.
struct __attribute__((visibility("hidden"))) Device::State {
    detail::FileDescriptor fd;
    std::string path;
    std::uint32_t abi_version = 0;
    DeviceAttributes attr; // as read at open time
};

} // namespace viaduct
