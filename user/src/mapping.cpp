// SPDX-License-Identifier: GPL-2.0
// Shared mappings of rings and doorbell pages.
#include <cerrno>
#include <sys/mman.h>
#include <utility>

#include "objects.hpp"
#include "syscall.hpp"

namespace viaduct::detail {

Mapping::Mapping(int fd, std::uint64_t key, std::size_t size, const std::string &what) {
    void *p =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(key));
    if (p == MAP_FAILED)
        throw Error(errno, "cannot map the " + what + " (" + std::to_string(size) +
                               " bytes): " + std::generic_category().message(errno));
    addr_ = p;
    size_ = size;
    generation_ = fork_generation();
}

Mapping::Mapping(Mapping &&other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)),
      generation_(other.generation_) {}

Mapping &Mapping::operator=(Mapping &&other) noexcept {
    if (this != &other) {
        reset();
        addr_ = std::exchange(other.addr_, nullptr);
        size_ = std::exchange(other.size_, 0);
        generation_ = other.generation_;
    }
    return *this;
}

Mapping::~Mapping() {
    reset();
}

void Mapping::reset() noexcept {
    if (addr_ && generation_ == fork_generation())
        ::munmap(addr_, size_);
    addr_ = nullptr;
    size_ = 0;
}

void destroy_handle(const Device::State *dev, unsigned long cmd, std::uint32_t handle) noexcept {
    if (!dev || !handle) // creation failed: nothing to destroy
        return;
    if (dev->inherited()) // the parent's, not this child's
        return;
    viaduct_handle h{};
    h.handle = handle;
    (void)do_ioctl(dev->fd.get(), cmd, &h);
}

} // namespace viaduct::detail
