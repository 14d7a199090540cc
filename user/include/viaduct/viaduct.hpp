// SPDX-License-Identifier: GPL-2.0
//
// libviaduct: the C++ core API.
//
// A Device is an open context on /dev/viaduct bound to one viaduct device
// (vd0, vd1, ...). The context, and everything created on it, lives as long
// as the Device or any object that shares its state (protection domains,
// queues) is alive; the last one to go closes the file descriptor, and the
// kernel then releases every resource of the context.
//
// Every failure is reported as viaduct::Error, a std::system_error whose
// code() is the errno in std::generic_category() and whose what() says what
// went wrong and, where there is one, what to do about it. See libviaduct(3)
// and Documentation/library.rst.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <uapi/viaduct.h>

#define VIADUCT_API __attribute__((visibility("default")))

namespace viaduct {

class VIADUCT_API Error : public std::system_error {
public:
    Error(int err, const std::string &what);
    ~Error() override;

    Error(const Error &) noexcept = default;
    Error &operator=(const Error &) noexcept = default;

    // The message alone: unlike std::system_error's, it does not end in
    // strerror(), since it already says what went wrong in its own words.
    const char *what() const noexcept override;

    // The errno, the same as code().value().
    int errnum() const noexcept { return code().value(); }

private:
    std::shared_ptr<const std::string> what_; // shared: copies must not throw
};

// One device as listed by Device::list().
struct DeviceEntry {
    std::uint32_t index = 0;
    std::uint32_t ifindex = 0;
    std::string name;
    std::string ifname;
};

// An IP address of the device's interface.
struct VIADUCT_API Address {
    int family = 0;      // AF_INET or AF_INET6
    std::string address; // inet_ntop() form: "192.0.2.1", "2001:db8::1"
    unsigned prefixlen = 0;

    std::string to_string() const; // "192.0.2.1/24"
};

struct DeviceLimits {
    std::uint32_t max_pd = 0;
    std::uint32_t max_mr = 0;
    std::uint32_t max_cq = 0;
    std::uint32_t max_cqe = 0; // entries per CQ
    std::uint32_t max_qp = 0;
    std::uint32_t max_qp_wr = 0;  // work requests per send or receive queue
    std::uint32_t max_sge = 0;    // scatter/gather elements per work request
    std::uint32_t max_inline = 0; // bytes of inline data per send
    std::uint32_t max_ord = 0;    // outstanding RDMA reads as initiator
    std::uint32_t max_ird = 0;    // outstanding RDMA reads as responder
    std::uint64_t max_msg_size = 0;
    std::uint64_t max_mr_size = 0;
    std::uint32_t page_size = 0; // registration granule
};

struct VIADUCT_API DeviceAttributes {
    std::uint32_t index = 0;
    std::uint32_t abi_version = 0;
    std::string name;
    std::string ifname;
    std::uint32_t ifindex = 0;
    std::uint32_t mtu = 0;
    std::uint32_t flags = 0; // VIADUCT_DEV_F_*
    std::array<std::uint8_t, 6> hw_addr{};
    std::vector<Address> addresses;
    DeviceLimits limits;

    bool up() const noexcept { return (flags & VIADUCT_DEV_F_UP) != 0; }
    bool running() const noexcept { return (flags & VIADUCT_DEV_F_RUNNING) != 0; }
    std::string hw_address() const; // "02:00:00:00:00:01"
};

// Convert the kernel's replies. Names are read up to their NUL or the end of
// their buffer, whichever comes first; addresses of an unknown family are
// skipped and num_addrs is clamped to the array.
VIADUCT_API DeviceAttributes to_attributes(const viaduct_device_attr &attr);
VIADUCT_API DeviceEntry to_entry(const viaduct_device_entry &entry);

// The character device: $VIADUCT_DEVICE if set and not empty, else /dev/viaduct.
VIADUCT_API std::string device_path();

class VIADUCT_API Device {
public:
    // The devices visible in the caller's network namespace.
    static std::vector<DeviceEntry> list(const std::string &path = device_path());

    // Open a context, check the ABI version, select the device by name or
    // index and read its attributes.
    static Device open(std::string_view name, const std::string &path = device_path());
    static Device open(std::uint32_t index, const std::string &path = device_path());

    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;
    Device(Device &&) noexcept = default;
    Device &operator=(Device &&) noexcept = default;
    ~Device() = default;

    // False only for a moved-from Device; every other member then throws
    // Error(EBADF).
    explicit operator bool() const noexcept { return state_ != nullptr; }

    // The attributes read at open time; query() asks the kernel again and
    // throws Error(ENODEV, "device NAME was removed") once it is gone.
    const DeviceAttributes &attributes() const;
    DeviceAttributes query() const;

    std::uint32_t abi_version() const; // from VIADUCT_IOCTL_GET_ABI_VERSION
    const std::string &name() const;
    std::uint32_t index() const;
    const std::string &path() const;
    int fd() const; // owned by the Device: do not close

    // The context itself. Child objects hold a reference so that the file
    // descriptor outlives them, whatever order they are destroyed in.
    struct State;
    std::shared_ptr<State> state() const;

private:
    explicit Device(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
    static Device select(const viaduct_select_device &sel, const std::string &what,
                         const std::string &path);
    const State &checked() const;

    std::shared_ptr<State> state_;
};

} // namespace viaduct
