// SPDX-License-Identifier: GPL-2.0
//
// libviaduct: the C++ core API.
//
// A Device is an open context on /dev/viaduct bound to one viaduct device
// (vd0, vd1, ...). Every failure is reported as viaduct::Error, a
// std::system_error whose code() is the errno (std::generic_category) and
// whose what() says what went wrong and, where there is one, what to do.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <uapi/viaduct.h>

namespace viaduct {

class Error : public std::system_error {
public:
    Error(int err, const std::string &what);
    int errnum() const noexcept { return code().value(); }
};

// Owns one file descriptor; closes it once.
class FileDescriptor {
public:
    FileDescriptor() = default;
    explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
    FileDescriptor(const FileDescriptor &) = delete;
    FileDescriptor &operator=(const FileDescriptor &) = delete;
    FileDescriptor(FileDescriptor &&other) noexcept;
    FileDescriptor &operator=(FileDescriptor &&other) noexcept;
    ~FileDescriptor();

    int get() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }
    int release() noexcept;
    void reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

struct DeviceEntry {
    std::uint32_t index = 0;
    std::uint32_t ifindex = 0;
    std::string name;
    std::string ifname;
};

struct Address {
    int family = 0; // AF_INET or AF_INET6
    std::string address;
    unsigned prefixlen = 0;

    std::string to_string() const; // "192.0.2.1/24"
};

struct DeviceLimits {
    std::uint32_t max_pd = 0;
    std::uint32_t max_mr = 0;
    std::uint32_t max_cq = 0;
    std::uint32_t max_cqe = 0;
    std::uint32_t max_qp = 0;
    std::uint32_t max_qp_wr = 0;
    std::uint32_t max_sge = 0;
    std::uint32_t max_inline = 0;
    std::uint32_t max_ord = 0;
    std::uint32_t max_ird = 0;
    std::uint64_t max_msg_size = 0;
    std::uint64_t max_mr_size = 0;
    std::uint32_t page_size = 0;
};

struct DeviceAttributes {
    std::uint32_t index = 0;
    std::uint32_t abi_version = 0;
    std::string name;
    std::string ifname;
    std::uint32_t ifindex = 0;
    std::uint32_t mtu = 0;
    bool up = false;
    bool running = false;
    std::array<std::uint8_t, 6> hw_addr{};
    std::vector<Address> addresses;
    DeviceLimits limits;
};

// Converts the kernel's reply, never reading past a field even when a name
// fills its buffer without a terminating NUL.
DeviceAttributes to_attributes(const viaduct_device_attr &attr);
DeviceEntry to_entry(const viaduct_device_entry &entry);

// The character device path: $VIADUCT_DEVICE if set, else /dev/viaduct.
std::string device_path();

class Device {
public:
    // Devices visible in the caller's network namespace.
    static std::vector<DeviceEntry> list(const std::string &path = device_path());
    // Opens a context and selects the device by name or index.
    static Device open(std::string_view name, const std::string &path = device_path());
    static Device open(std::uint32_t index, const std::string &path = device_path());

    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;
    Device(Device &&) noexcept = default;
    Device &operator=(Device &&) noexcept = default;
    ~Device() = default;

    // Attributes read at open time; query() asks the kernel again.
    const DeviceAttributes &attributes() const;
    DeviceAttributes query() const;
    std::uint32_t abi_version() const;
    const std::string &name() const;
    int fd() const;

    // Shared state that child objects (protection domains, queues) keep
    // alive so that the context outlives them.
    struct State;
    std::shared_ptr<State> state() const { return state_; }

private:
    explicit Device(std::shared_ptr<State> state) : state_(std::move(state)) {}
    static Device select(viaduct_select_device &sel, const std::string &what,
                         const std::string &path);
    std::shared_ptr<State> state_;
};

} // namespace viaduct
