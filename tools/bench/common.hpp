// SPDX-License-Identifier: GPL-2.0
// Small things every part of the benchmark uses: errors, owned file
// descriptors and mappings, the clock and medians.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace vdbench {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const std::string &what, int err = errno) {
    throw Error(what + ": " + std::strerror(err));
}

class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd &operator=(Fd &&o) noexcept {
        std::swap(fd_, o.fd_);
        return *this;
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() {
        if (fd_ >= 0)
            ::close(fd_);
    }
    int get() const { return fd_; }

private:
    int fd_ = -1;
};

class Mapping {
public:
    Mapping() = default;
    Mapping(void *addr, size_t len) : addr_(addr), len_(len) {}
    Mapping(Mapping &&o) noexcept
        : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
    Mapping &operator=(Mapping &&o) noexcept {
        std::swap(addr_, o.addr_);
        std::swap(len_, o.len_);
        return *this;
    }
    Mapping(const Mapping &) = delete;
    Mapping &operator=(const Mapping &) = delete;
    ~Mapping() {
        if (addr_)
            ::munmap(addr_, len_);
    }
    template <typename T = void> T *as() const { return static_cast<T *>(addr_); }
    size_t size() const { return len_; }

    // Anonymous private memory, every page written once so that it is
    // present before anything registers it.
    static Mapping anonymous_populated(size_t len) {
        void *p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
            fail("mmap " + std::to_string(len) + " bytes");
        const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
        auto *bytes = static_cast<unsigned char *>(p);
        for (size_t off = 0; off < len; off += page)
            bytes[off] = 1;
        return Mapping(p, len);
    }

private:
    void *addr_ = nullptr;
    size_t len_ = 0;
};

inline uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

// The q-quantile (0..1) of the samples, by nearest rank; 0 for none.
inline double quantile(std::vector<uint64_t> v, double q) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    auto rank = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
    return static_cast<double>(v[std::min(rank, v.size() - 1)]);
}

inline double median(const std::vector<uint64_t> &v) {
    return quantile(v, 0.5);
}

// A spin loop that gives up: a completion that never comes is a bug in
// what is measured, and the benchmark must end rather than hang the VM.
class SpinDeadline {
public:
    explicit SpinDeadline(uint64_t limit_ns = 10'000'000'000ULL) : end_(now_ns() + limit_ns) {}
    void check(const char *what) {
        if ((++spins_ & 0xfff) == 0 && now_ns() > end_)
            throw Error(std::string("timed out waiting for ") + what);
    }

private:
    uint64_t end_;
    uint64_t spins_ = 0;
};

} // namespace vdbench
