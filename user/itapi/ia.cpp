// SPDX-License-Identifier: GPL-2.0
//
// Interfaces and Interface Adapters: it_interface_list, it_ia_create,
// it_ia_query, it_ia_free, the IA's progress thread (asynchronous events of
// the device and the connection side's descriptors), protection zones,
// it_get_pathinfo and it_convert_net_addr.
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <new>
#include <set>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm.hpp"
#include "internal.hpp"

namespace itapi {

namespace {

// it_ia_query's answers: the it_ia_info_t first, then what it points to.
struct InfoBlock {
    it_ia_info_t info{};
    Ia *ia = nullptr;
    std::string name;
    it_spigot_info_t spigot{};
    std::vector<it_net_addr_t> addrs;
};

std::mutex infos_lock; // every IA's it_ia_info_t blocks
std::set<it_ia_info_t *> live_infos;

it_status_t status_of(const std::exception &e, it_status_t fallback) {
    if (const auto *err = dynamic_cast<const viaduct::Error *>(&e))
        return status_of_errno(err->errnum(), fallback);
    if (dynamic_cast<const std::bad_alloc *>(&e) != nullptr)
        return IT_ERR_RESOURCES;
    return fallback;
}

bool to_net_addr(const viaduct::Address &a, it_net_addr_t &out) {
    out = {};
    if (a.family == AF_INET && inet_pton(AF_INET, a.address.c_str(), &out.addr.ipv4) == 1) {
        out.addr_type = IT_IPV4;
        return true;
    }
    if (a.family == AF_INET6 && inet_pton(AF_INET6, a.address.c_str(), &out.addr.ipv6) == 1) {
        out.addr_type = IT_IPV6;
        return true;
    }
    return false;
}

} // namespace

it_status_t status_of_exception(const std::exception &e, it_status_t fallback) noexcept {
    return status_of(e, fallback);
}

Ia::Ia(viaduct::Device device, std::string ia_name)
    : Object(kind, this), dev(std::move(device)), name(std::move(ia_name)), attr(dev.attributes()) {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_fd_ < 0 || wake_fd_ < 0) {
        int err = errno;
        if (epoll_fd_ >= 0)
            ::close(epoll_fd_);
        if (wake_fd_ >= 0)
            ::close(wake_fd_);
        throw viaduct::Error(err, "cannot make the IA's progress descriptors");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_fd_;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    ev.data.fd = dev.fd();
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, dev.fd(), &ev);
    progress_ = std::thread([this] { progress_loop(); });
}

Ia::~Ia() {
    stop_progress();
    ::close(epoll_fd_);
    ::close(wake_fd_);
}

bool Ia::adopt(Object *obj) {
    if (HandleTable::instance().insert(obj) == nullptr)
        return false;
    std::lock_guard guard(lock);
    try {
        objects.push_back(obj);
    } catch (...) {
        HandleTable::instance().erase(obj->handle);
        return false;
    }
    obj->pos = std::prev(objects.end());
    return true;
}

void Ia::unlink(Object *obj) noexcept {
    // under @lock: the progress thread looks objects up under it
    std::lock_guard guard(lock);
    HandleTable::instance().erase(obj->handle);
    objects.erase(obj->pos);
}

void Ia::add_source(int fd, std::function<void()> handler) {
    auto src = std::make_shared<Source>(Source{fd, std::move(handler)});
    {
        std::lock_guard guard(sources_lock_);
        sources_.push_back(src);
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int err = errno;
        std::lock_guard guard(sources_lock_);
        sources_.pop_back();
        throw viaduct::Error(err, "cannot watch a descriptor of the IA");
    }
}

void Ia::remove_source(int fd) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    std::unique_lock guard(sources_lock_);
    std::erase_if(sources_, [fd](const auto &s) { return s->fd == fd; });
    // a handler running now holds sources_lock_ (see progress_loop), so
    // taking it above waited for it to return
}

void Ia::stop_progress() noexcept {
    if (!progress_.joinable())
        return;
    stopping_.store(true);
    std::uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) < 0) {
        // the eventfd cannot be full: one write of 1 per IA
    }
    if (std::this_thread::get_id() != progress_.get_id())
        progress_.join();
    else
        progress_.detach();
}

void Ia::progress_loop() {
    epoll_event evs[8];
    while (!stopping_.load()) {
        int n = ::epoll_wait(epoll_fd_, evs, 8, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < n && !stopping_.load(); i++) {
            int fd = evs[i].data.fd;
            if (fd == wake_fd_)
                continue;
            if (fd == dev.fd()) {
                try {
                    while (auto ev = dev.read_event(std::chrono::milliseconds(0)))
                        on_async_event(*ev);
                } catch (const std::exception &) {
                    // the device is gone: every later call says so
                    catastrophe.store(true);
                    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, dev.fd(), nullptr);
                }
                continue;
            }
            // held while the handler runs: remove_source() waits for it
            std::lock_guard guard(sources_lock_);
            for (auto &s : sources_) {
                if (s->fd == fd) {
                    s->handler();
                    break;
                }
            }
        }
    }
}

void Ia::on_async_event(const viaduct::AsyncEvent &ev) {
    using T = viaduct::AsyncEventType;
    switch (ev.type) {
    case T::QpFatal:
    case T::QpRequestError:
    case T::QpAccessError: {
        // map_lock is held across: it_ep_free takes it to remove the EP
        std::lock_guard guard(map_lock);
        auto it = eps_by_qp.find(ev.handle);
        if (it == eps_by_qp.end())
            return;
        Ep &ep = *it->second;
        it_event_type_t aff = ev.type == T::QpAccessError    ? IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION
                              : ev.type == T::QpRequestError ? IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR
                                                             : IT_ASYNC_AFF_EP_FAILURE;
        raise_affiliated(*this, aff, &ep, nullptr, nullptr);
        ep_break(ep);
        return;
    }
    case T::CqError: {
        // user_data of a CQ is its EVD's handle; under @lock it stays
        std::lock_guard guard(lock);
        auto *evd =
            lookup<Evd>(reinterpret_cast<void *>(static_cast<std::uintptr_t>(ev.user_data)));
        if (evd != nullptr && evd->ia == this && evd->cq) {
            std::lock_guard g(evd->lock);
            evd_dto_overflow(*evd);
        }
        return;
    }
    case T::SrqLimit:
    case T::SrqError: {
        std::lock_guard guard(map_lock);
        auto it = srqs_by_handle.find(ev.handle);
        if (it == srqs_by_handle.end())
            return;
        if (ev.type == T::SrqLimit) {
            it->second->low_watermark = 0; // one-shot: disarmed by the kernel
            raise_affiliated(*this, IT_ASYNC_AFF_SRQ_LOW_WATERMARK, nullptr, it->second, nullptr);
        } else {
            raise_affiliated(*this, IT_ASYNC_AFF_EP_FAILURE, nullptr, it->second, nullptr);
        }
        return;
    }
    case T::DeviceFatal: {
        catastrophe.store(true);
        std::lock_guard guard(async_lock);
        if (unaff_evd != nullptr) {
            it_event_t e{};
            e.unaff_async.event_number = IT_ASYNC_UNAFF_SPIGOT_OFFLINE;
            e.unaff_async.ia = handle_of<it_ia_handle_t>(this);
            e.unaff_async.spigot_id = 0;
            evd_enqueue(*unaff_evd, e);
        }
        return;
    }
    case T::CommunicationEstablished:
    case T::SqDrained:
    case T::QpLastWqe:
        return;
    }
}

} // namespace itapi

using namespace itapi;

extern "C" {

void it_interface_list(it_interface_t *interfaces, size_t *num_interfaces,
                       size_t *total_interfaces) {
    std::vector<viaduct::DeviceEntry> devs;
    try {
        devs = viaduct::Device::list();
    } catch (const std::exception &) {
        // no /dev/viaduct, no module: no interfaces
    }
    size_t room = num_interfaces != nullptr ? *num_interfaces : 0;
    size_t n = 0;
    for (const auto &d : devs) {
        if (n == room || interfaces == nullptr)
            break;
        it_interface_t &it = interfaces[n++];
        it = {};
        it.major_version = api_major;
        it.minor_version = api_minor;
        it.transport_type = IT_IWARP_TCP_TRANSPORT;
        std::snprintf(it.name, sizeof(it.name), "%s", d.name.c_str());
    }
    if (num_interfaces != nullptr)
        *num_interfaces = n;
    if (total_interfaces != nullptr)
        *total_interfaces = devs.size();
}

it_status_t it_ia_create(const char *name, uint32_t major_version, uint32_t minor_version,
                         it_ia_handle_t *ia_handle) {
    if (ia_handle == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (name == nullptr || name[0] == '\0' || std::strlen(name) >= IT_INTERFACE_NAME_SIZE)
        return IT_ERR_INVALID_NAME;
    // every minor version up to ours of our major, and 1.0's calls
    if (major_version != api_major && major_version != 1)
        return IT_ERR_INVALID_MAJOR_VERSION;
    if ((major_version == api_major && minor_version > api_minor) ||
        (major_version == 1 && minor_version > 0))
        return IT_ERR_INVALID_MINOR_VERSION;
    std::optional<viaduct::Device> dev;
    try {
        dev.emplace(viaduct::Device::open(std::string_view(name)));
    } catch (const viaduct::Error &e) {
        return e.errnum() == ENOMEM ? IT_ERR_RESOURCES : IT_ERR_INVALID_NAME;
    } catch (const std::exception &) {
        return IT_ERR_RESOURCES;
    }
    Ia *ia;
    try {
        ia = new Ia(std::move(*dev), name);
    } catch (const std::exception &e) {
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
    if (!ia->adopt(ia)) {
        delete ia;
        return IT_ERR_RESOURCES;
    }
    *ia_handle = handle_of<it_ia_handle_t>(ia);
    return IT_SUCCESS;
}

it_status_t it_ia_free(it_ia_handle_t ia_handle) {
    Ia *ia = lookup<Ia>(ia_handle);
    if (ia == nullptr)
        return IT_ERR_INVALID_IA;
    // no more asynchronous events or connection-side handlers
    ia->stop_progress();
    // listen points, unanswered requests and connections go first
    cm_ia_free(*ia);
    // waiters return IT_ERR_ABORT before their EVD goes
    std::vector<Evd *> evds;
    {
        std::lock_guard guard(ia->lock);
        for (Object *o : ia->objects)
            if (o->type == Kind::Evd)
                evds.push_back(static_cast<Evd *>(o));
    }
    for (Evd *e : evds)
        evd_abort_waiters(*e);
    // children in reverse order of creation, the IA last
    for (;;) {
        Object *o;
        {
            std::lock_guard guard(ia->lock);
            if (ia->objects.size() <= 1)
                break;
            o = ia->objects.back();
            if (o == ia)
                o = *std::prev(ia->objects.end(), 2);
        }
        ia->unlink(o);
        delete o;
    }
    {
        std::lock_guard guard(infos_lock);
        for (it_ia_info_t *i : ia->infos) {
            live_infos.erase(i);
            delete reinterpret_cast<InfoBlock *>(i);
        }
        ia->infos.clear();
    }
    ia->unlink(ia);
    delete ia;
    return IT_SUCCESS;
}

it_status_t it_ia_query(it_ia_handle_t ia_handle, it_ia_info_t **ia_info) {
    Ia *ia = lookup<Ia>(ia_handle);
    if (ia == nullptr)
        return IT_ERR_INVALID_IA;
    if (ia_info == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    auto *b = new (std::nothrow) InfoBlock;
    if (b == nullptr)
        return IT_ERR_RESOURCES;
    try {
        viaduct::DeviceAttributes a = ia->dev.query();
        b->ia = ia;
        b->name = ia->name;
        for (const auto &addr : a.addresses) {
            it_net_addr_t n;
            if (to_net_addr(addr, n))
                b->addrs.push_back(n);
        }
        it_ia_info_t &i = b->info;
        i.ia_name = b->name.data();
        i.api_major_version = api_major;
        i.api_minor_version = api_minor;
        i.sw_major_version = 1;
        i.sw_minor_version = 0;
        i.vendor.iwarp.valid_vid = IT_FALSE;
        i.dto_alignment_hint = 64;
        i.transport_type = IT_IWARP_TCP_TRANSPORT;
        i.supported_service_types = IT_RC_SERVICE;
        i.ep_work_queues_resizable = IT_FALSE;
        i.three_way_handshake_support = IT_FALSE;
        i.private_data_support = IT_TRUE;
        i.max_message_size_support = IT_FALSE;
        i.ird_ord_ia_support = IT_TRUE;
        i.ird_ord_suppressible = IT_TRUE;
        i.spigot_online_support = IT_FALSE;
        i.spigot_offline_support = IT_TRUE;
        i.connect_private_data_len = IT_MAX_PRIV_DATA;
        i.accept_private_data_len = IT_MAX_PRIV_DATA;
        i.reject_private_data_len = IT_MAX_PRIV_DATA;
        i.disconnect_private_data_len = 0;
        i.ud_req_private_data_len = 0;
        i.ud_rep_private_data_len = 0;
        b->spigot.spigot_id = 0;
        b->spigot.max_rc_send_len = a.limits.max_msg_size;
        b->spigot.max_rc_rdma_len = a.limits.max_msg_size;
        b->spigot.max_ud_send_len = 0;
        b->spigot.spigot_online = a.running() ? IT_TRUE : IT_FALSE;
        b->spigot.active_side_conn_qual = IT_IANA_PORT;
        b->spigot.passive_side_conn_qual = IT_IANA_PORT;
        b->spigot.num_net_addr = b->addrs.size();
        b->spigot.net_addr = b->addrs.empty() ? nullptr : b->addrs.data();
        i.num_spigots = 1;
        i.spigot_info = &b->spigot;
        {
            std::lock_guard guard(ia->async_lock);
            i.affiliated_err_evd = handle_of<it_evd_handle_t>(ia->aff_evd);
            i.unaffiliated_err_evd = handle_of<it_evd_handle_t>(ia->unaff_evd);
        }
        bool srq = (a.caps & VIADUCT_DEV_CAP_SRQ) != 0;
        bool mw = (a.caps & VIADUCT_DEV_CAP_MW) != 0;
        i.srq_support = srq ? IT_TRUE : IT_FALSE;
        i.hard_hi_watermark_support = IT_FALSE;
        i.soft_hi_watermark_support = IT_FALSE;
        i.srq_resizable = IT_FALSE;
        i.extended_iwarp_qp_states = IT_FALSE;
        i.socket_conversion_support =
            (a.caps & VIADUCT_DEV_CAP_CONVERT_SOCKET) != 0 ? IT_TRUE : IT_FALSE;
        i.rdma_read_ord_increasable = IT_FALSE;
        i.rdma_read_ird_modifiable = IT_TRUE;
        // narrow and wide: the document's "both" as the two bits together
        i.rmr_types_supported =
            mw ? static_cast<it_rmr_type_t>(IT_RMR_TYPE_NARROW | IT_RMR_TYPE_WIDE)
               : IT_RMR_TYPE_DEFAULT;
        i.addr_mode_relative_support = mw ? IT_TRUE : IT_FALSE;
        i.rdma_read_requires_remote_write = IT_FALSE;
        i.ep_rdma_enables_modifiable = IT_TRUE;
        i.rdma_read_local_extensions = IT_FALSE;
        i.dto_evd_overflow_detection = IT_TRUE;
        i.atomic_support = IT_FALSE;
        i.lmr_link_support = IT_FALSE;
        i.direct_lmr_handle_support = IT_FALSE;
        i.direct_lmr_handle = nullptr;
        i.post_send_unlink_remote_support =
            (a.caps & VIADUCT_DEV_CAP_SEND_INV) != 0 ? IT_TRUE : IT_FALSE;
        i.narrow_rmr_unlink_support = mw ? IT_TRUE : IT_FALSE;
        i.wide_rmr_unlink_support = mw ? IT_TRUE : IT_FALSE;
        i.unlink_fence_support = (a.caps & VIADUCT_DEV_CAP_LOCAL_FENCE) != 0 ? IT_TRUE : IT_FALSE;
        i.iobl_types_supported = static_cast<it_iobl_type_t>(0);
        std::lock_guard guard(infos_lock);
        ia->infos.push_back(&b->info);
        live_infos.insert(&b->info);
    } catch (const std::exception &e) {
        std::lock_guard guard(infos_lock);
        std::erase(ia->infos, &b->info);
        live_infos.erase(&b->info);
        delete b;
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
    *ia_info = &b->info;
    return IT_SUCCESS;
}

void it_ia_info_free(it_ia_info_t *ia_info) {
    std::lock_guard guard(infos_lock);
    if (ia_info == nullptr || live_infos.erase(ia_info) == 0)
        return; // not one of ours, or freed already
    auto *b = reinterpret_cast<InfoBlock *>(ia_info);
    std::erase(b->ia->infos, ia_info);
    delete b;
}

it_status_t it_pz_create(it_ia_handle_t ia_handle, it_pz_handle_t *pz_handle) {
    Ia *ia = lookup<Ia>(ia_handle);
    if (ia == nullptr)
        return IT_ERR_INVALID_IA;
    if (pz_handle == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    Pz *pz;
    try {
        pz = new Pz(ia, viaduct::ProtectionDomain(ia->dev));
    } catch (const std::exception &e) {
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
    if (!ia->adopt(pz)) {
        delete pz;
        return IT_ERR_RESOURCES;
    }
    *pz_handle = handle_of<it_pz_handle_t>(pz);
    return IT_SUCCESS;
}

it_status_t it_pz_free(it_pz_handle_t pz_handle) {
    Pz *pz = lookup<Pz>(pz_handle);
    if (pz == nullptr)
        return IT_ERR_INVALID_PZ;
    if (pz->refs.load() != 0)
        return IT_ERR_PZ_BUSY;
    pz->ia->unlink(pz);
    delete pz;
    return IT_SUCCESS;
}

it_status_t it_pz_query(it_pz_handle_t pz_handle, it_pz_param_mask_t mask, it_pz_param_t *params) {
    Pz *pz = lookup<Pz>(pz_handle);
    if (pz == nullptr)
        return IT_ERR_INVALID_PZ;
    if ((mask & ~(IT_PZ_PARAM_ALL | IT_PZ_PARAM_IA)) != 0)
        return IT_ERR_INVALID_MASK;
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if ((mask & (IT_PZ_PARAM_ALL | IT_PZ_PARAM_IA)) != 0)
        params->ia = handle_of<it_ia_handle_t>(pz->ia);
    return IT_SUCCESS;
}

// The paths to @net_addr: the kernel's routing table picks the local
// address (a UDP socket's connect() does the lookup, nothing is sent); the
// path is there if that address is one of the spigot's.
it_status_t it_get_pathinfo(it_ia_handle_t ia_handle, size_t spigot_id,
                            const it_net_addr_t *net_addr, size_t *num_paths, size_t *total_paths,
                            it_path_t *paths) {
    Ia *ia = lookup<Ia>(ia_handle);
    if (ia == nullptr)
        return IT_ERR_INVALID_IA;
    if (spigot_id != 0)
        return IT_ERR_INVALID_SPIGOT;
    if (net_addr == nullptr || num_paths == nullptr || total_paths == nullptr)
        return IT_ERR_INVALID_NETADDR;
    if (ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    sockaddr_storage ss{};
    socklen_t len;
    int family;
    if (net_addr->addr_type == IT_IPV4) {
        auto *sin = reinterpret_cast<sockaddr_in *>(&ss);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(9);
        sin->sin_addr = net_addr->addr.ipv4;
        len = sizeof(*sin);
        family = AF_INET;
    } else if (net_addr->addr_type == IT_IPV6) {
        auto *sin6 = reinterpret_cast<sockaddr_in6 *>(&ss);
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(9);
        sin6->sin6_addr = net_addr->addr.ipv6;
        len = sizeof(*sin6);
        family = AF_INET6;
    } else {
        return IT_ERR_INVALID_NETADDR;
    }
    int s = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return IT_ERR_RESOURCES;
    sockaddr_storage local{};
    socklen_t llen = sizeof(local);
    bool routed = ::connect(s, reinterpret_cast<sockaddr *>(&ss), len) == 0 &&
                  ::getsockname(s, reinterpret_cast<sockaddr *>(&local), &llen) == 0;
    ::close(s);
    size_t found = 0;
    it_path_t path{};
    if (routed) {
        viaduct::DeviceAttributes a;
        try {
            a = ia->dev.query();
        } catch (const std::exception &e) {
            return status_of_exception(e, IT_ERR_RESOURCES);
        }
        char buf[INET6_ADDRSTRLEN] = "";
        const void *src =
            family == AF_INET
                ? static_cast<const void *>(&reinterpret_cast<sockaddr_in *>(&local)->sin_addr)
                : static_cast<const void *>(&reinterpret_cast<sockaddr_in6 *>(&local)->sin6_addr);
        inet_ntop(family, src, buf, sizeof(buf));
        bool ours = std::any_of(a.addresses.begin(), a.addresses.end(), [&](const auto &x) {
            return x.family == family && x.address == buf;
        });
        if (ours) {
            found = 1;
            path.spigot_id = 0;
            path.timeout = 0;
            if (family == AF_INET) {
                path.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
                path.remote.iwarp.laddr.ipv4 = reinterpret_cast<sockaddr_in *>(&local)->sin_addr;
                path.remote.iwarp.raddr.ipv4 = net_addr->addr.ipv4;
            } else {
                path.remote.iwarp.ip_vers = IT_IP_VERS_IPV6;
                path.remote.iwarp.laddr.ipv6 = reinterpret_cast<sockaddr_in6 *>(&local)->sin6_addr;
                path.remote.iwarp.raddr.ipv6 = net_addr->addr.ipv6;
            }
        }
    }
    *total_paths = found;
    size_t n = std::min(found, *num_paths);
    if (n > 0 && paths != nullptr)
        paths[0] = path;
    *num_paths = paths != nullptr ? n : 0;
    return IT_SUCCESS;
}

} // extern "C"
