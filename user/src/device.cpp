// SPDX-License-Identifier: GPL-2.0
// Listing, selecting and querying devices.
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>

#include "device_state.hpp"
#include "syscall.hpp"

namespace viaduct {

namespace {

std::atomic<std::uint64_t> fork_count{0};

void count_fork() noexcept {
    fork_count.fetch_add(1, std::memory_order_relaxed);
}

// Registered when the library is loaded, before any context exists.
[[maybe_unused]] const int fork_handler = ::pthread_atfork(nullptr, nullptr, count_fork);

// Rounds of LIST_DEVICES before giving up on a namespace whose device count
// keeps growing between the calls.
constexpr int list_attempts = 8;

DeviceAttributes query_selected(int fd, const std::string &name) {
    viaduct_device_attr a{};
    a.index = VIADUCT_INDEX_SELECTED;
    if (int err = detail::do_ioctl(fd, VIADUCT_IOCTL_QUERY_DEVICE, &a))
        throw detail::query_error(err, name);
    return to_attributes(a);
}

} // namespace

std::uint64_t detail::fork_generation() noexcept {
    return fork_count.load(std::memory_order_relaxed);
}

Error detail::inherited_error(const char *type) {
    return Error(EPERM, std::string("viaduct::") + type +
                            " belongs to the process that created it, not to this child of "
                            "fork(): open a Device of its own (libviaduct(3), FORK)");
}

std::string device_path() {
    const char *env = std::getenv("VIADUCT_DEVICE");
    return env && *env ? env : "/dev/" VIADUCT_DEVICE_NAME;
}

std::vector<DeviceEntry> Device::list(const std::string &path) {
    detail::FileDescriptor fd = detail::open_context(path);
    std::vector<viaduct_device_entry> buf;
    for (int attempt = 0; attempt < list_attempts; ++attempt) {
        viaduct_list_devices req{};
        req.entries = reinterpret_cast<std::uintptr_t>(buf.data());
        req.capacity = static_cast<std::uint32_t>(buf.size());
        if (int err = detail::do_ioctl(fd.get(), VIADUCT_IOCTL_LIST_DEVICES, &req))
            throw detail::list_error(err);
        if (req.count <= buf.size()) {
            std::vector<DeviceEntry> out;
            out.reserve(req.count);
            for (std::uint32_t i = 0; i < req.count; ++i)
                out.push_back(to_entry(buf[i]));
            return out;
        }
        // Leave room for devices added before the next call.
        buf.resize(std::size_t{req.count} + 4);
    }
    throw detail::list_error(EAGAIN);
}

Device Device::select(const viaduct_select_device &sel, const std::string &what,
                      const std::string &path) {
    auto state = std::make_shared<State>();
    state->path = path;
    state->fd = detail::open_context(path, &state->abi_version);
    viaduct_select_device arg = sel;
    if (int err = detail::do_ioctl(state->fd.get(), VIADUCT_IOCTL_SELECT_DEVICE, &arg))
        throw detail::select_error(err, what);
    state->attr = query_selected(state->fd.get(), what);
    // read() of asynchronous events must never block: read_event() waits
    // in poll() and another thread may take the event first. Only read()
    // looks at the flag.
    int flags = ::fcntl(state->fd.get(), F_GETFL);
    if (flags < 0 || ::fcntl(state->fd.get(), F_SETFL, flags | O_NONBLOCK) < 0)
        throw Error(errno, path + ": cannot make the context non-blocking: " +
                               std::generic_category().message(errno));
    return Device(std::move(state));
}

Device Device::open(std::string_view name, const std::string &path) {
    if (name.empty() || name.size() >= VIADUCT_NAME_SIZE || name.find('\0') != name.npos)
        throw Error(EINVAL, "invalid device name '" + std::string(name) + "': 1 to " +
                                std::to_string(VIADUCT_NAME_SIZE - 1) + " characters");
    viaduct_select_device sel{};
    std::memcpy(sel.name, name.data(), name.size());
    return select(sel, "'" + std::string(name) + "'", path);
}

Device Device::open(std::uint32_t index, const std::string &path) {
    viaduct_select_device sel{};
    sel.index = index;
    return select(sel, "with index " + std::to_string(index), path);
}

const Device::State &Device::checked() const {
    if (!state_)
        throw Error(EBADF, "viaduct::Device used after it was moved from");
    if (state_->inherited())
        throw detail::inherited_error("Device");
    return *state_;
}

const DeviceAttributes &Device::attributes() const {
    return checked().attr;
}

DeviceAttributes Device::query() const {
    const State &s = checked();
    return query_selected(s.fd.get(), s.attr.name);
}

std::uint32_t Device::abi_version() const {
    return checked().abi_version;
}

const std::string &Device::name() const {
    return checked().attr.name;
}

std::uint32_t Device::index() const {
    return checked().attr.index;
}

const std::string &Device::path() const {
    return checked().path;
}

int Device::fd() const {
    return checked().fd.get();
}

std::shared_ptr<Device::State> Device::state() const {
    checked();
    return state_;
}

} // namespace viaduct
