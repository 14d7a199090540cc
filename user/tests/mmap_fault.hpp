// SPDX-License-Identifier: GPL-2.0
// Failing shared mappings on purpose. The test binary defines mmap() in
// front of the C library's, as it does ioctl() (ioctl_trace.hpp), so that
// the paths of libviaduct (linked statically) that handle a failed mmap of
// a ring run against the real module.
#pragma once

namespace viaduct::test {

// While it lives, the next @count shared mappings of a descriptor fail
// with @err (one fault at a time). Private and anonymous mappings, which
// the C library and the tests' own buffers make, are not touched.
class MmapFault {
public:
    MmapFault(int err, int count);
    ~MmapFault();
    MmapFault(const MmapFault &) = delete;
    MmapFault &operator=(const MmapFault &) = delete;

    int failed() const; // how many mappings it failed so far
};

} // namespace viaduct::test
