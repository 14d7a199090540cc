// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <viaduct/viaduct.hpp>

namespace viaduct {

struct Device::State {
    FileDescriptor fd;
    std::string path;
    DeviceAttributes attr;
};

namespace {

template <std::size_t N> std::string bounded_string(const char (&buf)[N]) {
    std::size_t len = 0;
    while (len < N && buf[len] != '\0')
        ++len;
    return std::string(buf, len);
}

FileDescriptor open_device(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        switch (err) {
        case ENOENT:
            throw Error(err, path + " not found: is viaduct.ko loaded?");
        case EACCES:
        case EPERM:
            throw Error(err, path + ": permission denied");
        default:
            throw Error(err, "cannot open " + path + ": " + std::strerror(err));
        }
    }
    FileDescriptor owned(fd);
    viaduct_abi_version v{};
    if (::ioctl(fd, VIADUCT_IOCTL_GET_ABI_VERSION, &v) != 0) {
        int err = errno;
        if (err == ENOTTY || err == EINVAL)
            throw Error(err, path + " is not a viaduct device");
        throw Error(err, path + ": cannot read the ABI version: " + std::strerror(err));
    }
    if (v.abi_version != VIADUCT_ABI_VERSION)
        throw Error(EPROTO, path + " speaks viaduct ABI " + std::to_string(v.abi_version) +
                                ", this library ABI " + std::to_string(VIADUCT_ABI_VERSION) +
                                ": rebuild the library or the module");
    return owned;
}

void xioctl(int fd, unsigned long cmd, void *arg, const char *what) {
    if (::ioctl(fd, cmd, arg) != 0) {
        int err = errno;
        throw Error(err, std::string(what) + ": " + std::strerror(err));
    }
}

DeviceAttributes query_fd(int fd, std::uint32_t index, const std::string &name) {
    viaduct_device_attr a{};
    a.index = index;
    if (::ioctl(fd, VIADUCT_IOCTL_QUERY_DEVICE, &a) != 0) {
        int err = errno;
        if (err == ENODEV)
            throw Error(err,
                        "device " + (name.empty() ? std::string("(none)") : name) + " was removed");
        throw Error(err, "cannot query device " + name + ": " + std::strerror(err));
    }
    return to_attributes(a);
}

} // namespace

std::string Address::to_string() const {
    return address + "/" + std::to_string(prefixlen);
}

DeviceEntry to_entry(const viaduct_device_entry &e) {
    return DeviceEntry{e.index, e.ifindex, bounded_string(e.name), bounded_string(e.ifname)};
}

DeviceAttributes to_attributes(const viaduct_device_attr &a) {
    DeviceAttributes r;
    r.index = a.index;
    r.abi_version = a.abi_version;
    r.name = bounded_string(a.name);
    r.ifname = bounded_string(a.ifname);
    r.ifindex = a.ifindex;
    r.mtu = a.mtu;
    r.up = (a.flags & VIADUCT_DEV_F_UP) != 0;
    r.running = (a.flags & VIADUCT_DEV_F_RUNNING) != 0;
    for (std::size_t i = 0; i < r.hw_addr.size(); ++i)
        r.hw_addr[i] = a.hw_addr[i];
    std::uint32_t n = a.num_addrs < VIADUCT_MAX_ADDRS ? a.num_addrs : VIADUCT_MAX_ADDRS;
    for (std::uint32_t i = 0; i < n; ++i) {
        const viaduct_addr &in = a.addrs[i];
        int family;
        if (in.family == VIADUCT_AF_INET)
            family = AF_INET;
        else if (in.family == VIADUCT_AF_INET6)
            family = AF_INET6;
        else
            continue;
        char buf[INET6_ADDRSTRLEN] = {};
        if (!::inet_ntop(family, in.addr, buf, sizeof(buf)))
            continue;
        r.addresses.push_back(Address{family, buf, in.prefixlen});
    }
    DeviceLimits &l = r.limits;
    l.max_pd = a.max_pd;
    l.max_mr = a.max_mr;
    l.max_cq = a.max_cq;
    l.max_cqe = a.max_cqe;
    l.max_qp = a.max_qp;
    l.max_qp_wr = a.max_qp_wr;
    l.max_sge = a.max_sge;
    l.max_inline = a.max_inline;
    l.max_ord = a.max_ord;
    l.max_ird = a.max_ird;
    l.max_msg_size = a.max_msg_size;
    l.max_mr_size = a.max_mr_size;
    l.page_size = a.page_size;
    return r;
}

std::string device_path() {
    const char *env = std::getenv("VIADUCT_DEVICE");
    return env && *env ? env : "/dev/" VIADUCT_DEVICE_NAME;
}

std::vector<DeviceEntry> Device::list(const std::string &path) {
    FileDescriptor fd = open_device(path);
    std::vector<viaduct_device_entry> buf;
    for (;;) {
        viaduct_list_devices req{};
        req.entries = reinterpret_cast<std::uintptr_t>(buf.data());
        req.capacity = static_cast<std::uint32_t>(buf.size());
        xioctl(fd.get(), VIADUCT_IOCTL_LIST_DEVICES, &req, "cannot list devices");
        if (req.count <= buf.size()) {
            std::vector<DeviceEntry> out;
            for (std::uint32_t i = 0; i < req.count; ++i)
                out.push_back(to_entry(buf[i]));
            return out;
        }
        buf.resize(req.count + 4); // devices may appear between the calls
    }
}

Device Device::select(viaduct_select_device &sel, const std::string &what,
                      const std::string &path) {
    auto state = std::make_shared<State>();
    state->fd = open_device(path);
    state->path = path;
    if (::ioctl(state->fd.get(), VIADUCT_IOCTL_SELECT_DEVICE, &sel) != 0) {
        int err = errno;
        if (err == ENODEV)
            throw Error(err, "no viaduct device " + what +
                                 " in this network namespace (see 'viaductctl link show')");
        throw Error(err, "cannot select device " + what + ": " + std::strerror(err));
    }
    state->attr = query_fd(state->fd.get(), VIADUCT_INDEX_SELECTED, what);
    return Device(std::move(state));
}

Device Device::open(std::string_view name, const std::string &path) {
    if (name.empty() || name.size() >= VIADUCT_NAME_SIZE)
        throw Error(EINVAL, "invalid device name '" + std::string(name) + "'");
    viaduct_select_device sel{};
    std::memcpy(sel.name, name.data(), name.size());
    return select(sel, "'" + std::string(name) + "'", path);
}

Device Device::open(std::uint32_t index, const std::string &path) {
    viaduct_select_device sel{};
    sel.index = index;
    return select(sel, "with index " + std::to_string(index), path);
}

const DeviceAttributes &Device::attributes() const {
    return state_->attr;
}

DeviceAttributes Device::query() const {
    return query_fd(state_->fd.get(), VIADUCT_INDEX_SELECTED, state_->attr.name);
}

std::uint32_t Device::abi_version() const {
    return state_->attr.abi_version;
}

const std::string &Device::name() const {
    return state_->attr.name;
}

int Device::fd() const {
    return state_->fd.get();
}

} // namespace viaduct
