// SPDX-License-Identifier: GPL-2.0
#include "mmap_fault.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>

namespace viaduct::test {

namespace {

std::atomic<int> fault_errno{0};
std::atomic<int> faults_left{0};
std::atomic<int> faults_done{0};

using MmapFn = void *(*)(void *, std::size_t, int, int, int, off_t);

MmapFn real_mmap() {
    static MmapFn fn = [] {
        void *sym = ::dlsym(RTLD_NEXT, "mmap");
        MmapFn f = nullptr;
        static_assert(sizeof(f) == sizeof(sym));
        std::memcpy(&f, &sym, sizeof(f));
        return f;
    }();
    return fn;
}

} // namespace

MmapFault::MmapFault(int err, int count) {
    faults_done.store(0);
    fault_errno.store(err);
    faults_left.store(count);
}

MmapFault::~MmapFault() {
    faults_left.store(0);
}

int MmapFault::failed() const {
    return faults_done.load();
}

} // namespace viaduct::test

extern "C" void *mmap(void *addr, std::size_t length, int prot, int flags, int fd,
                      off_t offset) noexcept {
    using namespace viaduct::test;
    if (fd >= 0 && (flags & MAP_SHARED)) {
        int left = faults_left.load();
        while (left > 0 && !faults_left.compare_exchange_weak(left, left - 1)) {
        }
        if (left > 0) {
            faults_done.fetch_add(1);
            errno = fault_errno.load();
            return MAP_FAILED;
        }
    }
    return real_mmap()(addr, length, prot, flags, fd, offset);
}
