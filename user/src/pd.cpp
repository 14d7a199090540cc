// SPDX-License-Identifier: GPL-2.0
// Protection domains and memory regions.
#include <cerrno>

#include "objects.hpp"
#include "syscall.hpp"

namespace viaduct {

namespace {

Error reg_error(int err, std::uint64_t length) {
    const std::string what = "cannot register " + std::to_string(length) + " bytes";
    switch (err) {
    case ENOMEM:
        return Error(err, what + ": over the locked-memory limit (see 'ulimit -l') "
                                 "or out of memory");
    case EACCES:
        return Error(err, what + ": write access asked for memory that is not writable");
    case EFAULT:
        return Error(err, what + ": the range is not mapped");
    case EINVAL:
        return Error(err, what + ": bad access rights (remote write needs local write), "
                                 "empty or too long a range");
    default:
        return detail::call_error(err, "register " + std::to_string(length) + " bytes");
    }
}

Error modify_error(int err) {
    switch (err) {
    case EACCES:
        return Error(err, "cannot change the region's rights: a write right on memory "
                          "registered without local write (register it again)");
    case EINVAL:
        return Error(err, "cannot change the region's rights: bad access rights (remote "
                          "write needs local write), or a fast-register region");
    case EOPNOTSUPP:
    case ENOTTY:
        return Error(EOPNOTSUPP, "the module cannot change a registered region in place "
                                 "(no VIADUCT_DEV_CAP_MODIFY_MR: an older module)");
    default:
        return detail::call_error(err, "change a registered region");
    }
}

} // namespace

ProtectionDomain::State::~State() {
    detail::destroy_handle(dev.get(), VIADUCT_IOCTL_DESTROY_PD, handle);
}

ProtectionDomain::ProtectionDomain(const Device &dev) {
    auto s = std::make_shared<State>();
    s->dev = dev.state();
    viaduct_handle h{};
    if (int err = detail::do_ioctl(s->dev->fd.get(), VIADUCT_IOCTL_CREATE_PD, &h))
        throw detail::call_error(err, "create a protection domain on " + s->dev->attr.name);
    s->handle = h.handle;
    state_ = std::move(s);
}

std::uint32_t ProtectionDomain::handle() const {
    return state()->handle;
}

std::shared_ptr<ProtectionDomain::State> ProtectionDomain::state() const {
    detail::checked(state_, "ProtectionDomain");
    return state_;
}

MemoryRegion::State::~State() {
    detail::destroy_handle(pd ? pd->dev.get() : nullptr, VIADUCT_IOCTL_DEREG_MR, handle);
}

MemoryRegion::MemoryRegion(const ProtectionDomain &pd, void *addr, std::size_t length,
                           std::uint32_t access, std::uint8_t key) {
    auto s = std::make_shared<State>();
    s->pd = pd.state();
    viaduct_reg_mr r{};
    r.addr = reinterpret_cast<std::uintptr_t>(addr);
    r.length = length;
    r.pd_handle = s->pd->handle;
    r.access = access;
    r.key = key;
    if (int err = detail::do_ioctl(s->pd->dev->fd.get(), VIADUCT_IOCTL_REG_MR, &r))
        throw reg_error(err, length);
    s->handle = r.handle;
    s->stag = r.stag;
    s->addr = r.addr;
    s->length = length;
    s->access = access;
    state_ = std::move(s);
}

namespace {

const MemoryRegion::State &checked(const std::shared_ptr<MemoryRegion::State> &s) {
    return detail::checked(s, "MemoryRegion");
}

} // namespace

std::uint32_t MemoryRegion::handle() const {
    return checked(state_).handle;
}

std::uint32_t MemoryRegion::stag() const {
    return checked(state_).stag;
}

std::uint64_t MemoryRegion::addr() const {
    return checked(state_).addr;
}

std::uint64_t MemoryRegion::length() const {
    return checked(state_).length;
}

std::uint32_t MemoryRegion::access() const {
    return checked(state_).access;
}

std::uint32_t MemoryRegion::pd_handle() const {
    return checked(state_).pd->handle;
}

void MemoryRegion::modify(std::uint32_t access) {
    const State &s = checked(state_);
    viaduct_modify_mr m{};
    m.handle = s.handle;
    m.flags = VIADUCT_MODIFY_MR_ACCESS;
    m.access = access;
    if (int err = detail::do_ioctl(s.pd->dev->fd.get(), VIADUCT_IOCTL_MODIFY_MR, &m))
        throw modify_error(err);
    state_->access = access;
}

void MemoryRegion::modify(const ProtectionDomain &pd, std::uint32_t access) {
    const State &s = checked(state_);
    auto pds = pd.state();
    if (pds->dev != s.pd->dev)
        throw Error(EINVAL, "cannot move a region to a protection domain of another device");
    viaduct_modify_mr m{};
    m.handle = s.handle;
    m.flags = VIADUCT_MODIFY_MR_ACCESS | VIADUCT_MODIFY_MR_PD;
    m.access = access;
    m.pd_handle = pds->handle;
    if (int err = detail::do_ioctl(s.pd->dev->fd.get(), VIADUCT_IOCTL_MODIFY_MR, &m))
        throw modify_error(err);
    state_->access = access;
    state_->pd = std::move(pds);
}

Sge MemoryRegion::sge() const {
    const State &s = checked(state_);
    if (s.length > UINT32_MAX)
        throw Error(ERANGE, "a region of " + std::to_string(s.length) +
                                " bytes does not fit one SGE: give an offset and a length");
    return Sge{s.addr, static_cast<std::uint32_t>(s.length), s.stag};
}

Sge MemoryRegion::sge(std::uint64_t offset, std::uint32_t length) const {
    const State &s = checked(state_);
    if (offset > s.length || length > s.length - offset)
        throw Error(ERANGE, std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                                " are outside a region of " + std::to_string(s.length) + " bytes");
    return Sge{s.addr + offset, length, s.stag};
}

FastRegRegion::FastRegRegion(const ProtectionDomain &pd, std::uint32_t max_pages,
                             std::uint8_t key) {
    auto s = std::make_shared<MemoryRegion::State>();
    s->pd = pd.state();
    viaduct_alloc_mr r{};
    r.pd_handle = s->pd->handle;
    r.max_pages = max_pages;
    r.key = key;
    if (int err = detail::do_ioctl(s->pd->dev->fd.get(), VIADUCT_IOCTL_ALLOC_MR, &r)) {
        const std::string what =
            "cannot allocate a fast-register region of " + std::to_string(max_pages) + " pages";
        if (err == EINVAL)
            throw Error(err, what + ": 0 or too many pages");
        throw detail::call_error(err, what);
    }
    s->handle = r.handle;
    s->stag = r.stag;
    state_ = std::move(s);
    max_pages_ = max_pages;
}

std::uint32_t FastRegRegion::handle() const {
    return detail::checked(state_, "FastRegRegion").handle;
}

std::uint32_t FastRegRegion::stag() const {
    return detail::checked(state_, "FastRegRegion").stag;
}

std::uint32_t FastRegRegion::max_pages() const {
    detail::checked(state_, "FastRegRegion");
    return max_pages_;
}

MemoryWindow::State::~State() {
    detail::destroy_handle(pd ? pd->dev.get() : nullptr, VIADUCT_IOCTL_DEALLOC_MW, handle);
    region.reset(); // after the window: its region may go now
}

MemoryWindow::MemoryWindow(const ProtectionDomain &pd, MwType type, std::uint8_t key) {
    auto s = std::make_shared<State>();
    s->pd = pd.state();
    viaduct_alloc_mw r{};
    r.pd_handle = s->pd->handle;
    r.type = static_cast<std::uint32_t>(type);
    r.key = key;
    if (int err = detail::do_ioctl(s->pd->dev->fd.get(), VIADUCT_IOCTL_ALLOC_MW, &r)) {
        const std::string what = "cannot allocate a memory window of type " +
                                 std::to_string(static_cast<std::uint32_t>(type));
        if (err == EINVAL)
            throw Error(err, what + ": no such type");
        if (err == EOPNOTSUPP || err == ENOTTY)
            throw Error(EOPNOTSUPP, what + ": the module has no memory windows");
        throw detail::call_error(err, what);
    }
    s->handle = r.handle;
    s->stag = r.stag;
    s->type = type;
    state_ = std::move(s);
}

std::uint32_t MemoryWindow::handle() const {
    return detail::checked(state_, "MemoryWindow").handle;
}

std::uint32_t MemoryWindow::stag() const {
    return detail::checked(state_, "MemoryWindow").stag;
}

MwType MemoryWindow::type() const {
    return detail::checked(state_, "MemoryWindow").type;
}

namespace {

std::uint32_t bind_call(MemoryWindow::State &s, std::uint32_t mr_stag, std::uint64_t addr,
                        std::uint64_t length, std::uint32_t access, std::uint8_t key) {
    viaduct_bind_mw b{};
    b.mw_handle = s.handle;
    b.mr_stag = mr_stag;
    b.addr = addr;
    b.length = length;
    b.access = access;
    b.key = key;
    if (int err = detail::do_ioctl(s.pd->dev->fd.get(), VIADUCT_IOCTL_BIND_MW, &b)) {
        const std::string what = length ? "cannot bind a memory window to " +
                                              std::to_string(length) + " bytes of a region"
                                        : std::string("cannot unbind a memory window");
        switch (err) {
        case EACCES:
            throw Error(err, what + ": the region refuses (not registered with mw_bind, "
                                    "the range is outside it, or remote write without "
                                    "its local write)");
        case EINVAL:
            throw Error(err, what + ": a type-2 window is bound through the send queue, "
                                    "and the rights are remote_read and/or remote_write");
        default:
            throw detail::call_error(err, what);
        }
    }
    s.stag = b.stag;
    return b.stag;
}

} // namespace

std::uint32_t MemoryWindow::bind(const MemoryRegion &mr, std::uint64_t addr, std::uint64_t length,
                                 std::uint32_t access, std::uint8_t key) {
    State &s = detail::checked(state_, "MemoryWindow");
    if (!length)
        throw Error(EINVAL, "a memory window's bind needs a length; unbind() ends a binding");
    const std::uint32_t stag = bind_call(s, mr.stag(), addr, length, access, key);
    s.region = mr.state_;
    return stag;
}

void MemoryWindow::unbind() {
    State &s = detail::checked(state_, "MemoryWindow");
    bind_call(s, 0, 0, 0, 0, static_cast<std::uint8_t>(s.stag & VIADUCT_STAG_KEY_MASK));
    s.region.reset();
}

} // namespace viaduct
