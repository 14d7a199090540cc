// SPDX-License-Identifier: GPL-2.0
//
// Memory: LMRs (registered regions, with an implicit rmr_context when they
// grant remote access), RMRs (memory windows: narrow = type 2, bound to the
// EP whose WR links it; wide = type 1, usable through every EP of the PZ),
// and the RDMA address helpers.
//
// A relative LMR that grants remote access is reached by its peer through
// a type-1 window bound zero-based over the whole region: its rmr_context
// is that window's STag, and RDMA addresses are offsets into the region.
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

#include "internal.hpp"

namespace itapi {

namespace {

constexpr std::uint32_t all_privs = IT_PRIV_ALL;

std::uint32_t mr_access(it_mem_priv_t privs, bool mw) noexcept {
    std::uint32_t acc = 0;
    if ((privs & IT_PRIV_LOCAL_WRITE) != 0)
        acc |= viaduct::access::local_write;
    if ((privs & IT_PRIV_REMOTE_WRITE) != 0)
        acc |= viaduct::access::remote_write;
    if ((privs & IT_PRIV_REMOTE_READ) != 0)
        acc |= viaduct::access::remote_read;
    if (mw)
        acc |= viaduct::access::mw_bind; // RMRs may be linked to it
    return acc;
}

bool has_mw(const Ia &ia) noexcept {
    return (ia.attr.caps & VIADUCT_DEV_CAP_MW) != 0;
}

std::uint8_t next_key(Ia &ia) noexcept {
    return static_cast<std::uint8_t>(ia.key_counter.fetch_add(1) & 0xff);
}

void map_mr(Ia &ia, std::uint32_t stag, Object *obj) {
    std::lock_guard guard(ia.map_lock);
    ia.mr_by_index[stag >> 8] = obj;
}

void unmap_mr(Ia &ia, std::uint32_t stag, const Object *obj) noexcept {
    std::lock_guard guard(ia.map_lock);
    auto it = ia.mr_by_index.find(stag >> 8);
    if (it != ia.mr_by_index.end() && it->second == obj)
        ia.mr_by_index.erase(it);
}

// Registers @lmr's range with @privs in @pz (and its zero-based window for
// a relative LMR with remote rights); the old registration, if any, stays
// until this succeeds.
it_status_t register_lmr(Lmr &lmr, Pz &pz, it_mem_priv_t privs) {
    Ia &ia = *lmr.ia;
    bool remote = (privs & IT_PRIV_REMOTE) != 0;
    bool relative = lmr.addr_mode == IT_ADDR_MODE_RELATIVE;
    try {
        viaduct::MemoryRegion mr(pz.pd, lmr.addr, static_cast<std::size_t>(lmr.length),
                                 mr_access(privs, has_mw(ia)), next_key(ia));
        std::optional<viaduct::MemoryWindow> mw;
        std::uint32_t context_stag = mr.stag();
        if (relative && remote) {
            mw.emplace(pz.pd, viaduct::MwType::Type1, next_key(ia));
            std::uint32_t acc = viaduct::access::zero_based;
            if ((privs & IT_PRIV_REMOTE_READ) != 0)
                acc |= viaduct::access::remote_read;
            if ((privs & IT_PRIV_REMOTE_WRITE) != 0)
                acc |= viaduct::access::remote_write;
            context_stag = mw->bind(mr, mr.addr(), mr.length(), acc, next_key(ia));
        }
        // the new one in place; the old window goes before the old region
        if (lmr.mr)
            unmap_mr(ia, lmr.mr->stag(), &lmr);
        if (lmr.rel_mw)
            unmap_mr(ia, lmr.context_stag, &lmr);
        lmr.rel_mw = std::move(mw);
        lmr.mr = std::move(mr);
        lmr.lkey.store(lmr.mr->lkey(), std::memory_order_relaxed);
        lmr.context_stag = context_stag;
        lmr.privs = privs;
        map_mr(ia, lmr.mr->stag(), &lmr);
        if (lmr.rel_mw)
            map_mr(ia, context_stag, &lmr);
    } catch (const viaduct::Error &e) {
        switch (e.errnum()) {
        case EFAULT:
            return IT_ERR_FAULT;
        case EACCES:
        case EPERM:
            return IT_ERR_ACCESS;
        case ENOMEM:
            return IT_ERR_RESOURCES;
        case EINVAL:
            return IT_ERR_INVALID_LENGTH;
        default:
            return status_of_errno(e.errnum(), IT_ERR_RESOURCES);
        }
    } catch (const std::exception &) {
        return IT_ERR_RESOURCES;
    }
    return IT_SUCCESS;
}

it_status_t lmr_create(it_pz_handle_t pz_handle, void *addr, it_iobl_t *iobl, it_length_t length,
                       it_addr_mode_t addr_mode, it_mem_priv_t privs, it_lmr_flag_t flags,
                       uint32_t shared_id, it_lmr_handle_t *lmr_handle,
                       it_rmr_context_t *rmr_context) {
    Pz *pz = lookup<Pz>(pz_handle);
    if (pz == nullptr)
        return IT_ERR_INVALID_PZ;
    Ia *ia = pz->ia;
    if (ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    if (lmr_handle == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (iobl != nullptr)
        return IT_ERR_PRIV_OPS_UNAVAILABLE; // IOBLs are for privileged consumers
    // 0x1, the document header's IT_LMR_FLAG_NONE, means no flag as 0 does
    if ((flags &
         ~(0x1 | IT_LMR_FLAG_SHARED | IT_LMR_FLAG_NONCOHERENT | IT_LMR_FLAG_NON_SHAREABLE)) != 0)
        return IT_ERR_INVALID_FLAGS;
    if ((flags & IT_LMR_FLAG_NONCOHERENT) != 0)
        return IT_ERR_INVALID_FLAGS; // memory is coherent: no such LMR
    if (privs == 0 || (static_cast<std::uint32_t>(privs) & ~all_privs) != 0)
        return IT_ERR_INVALID_PRIVS;
    if ((privs & IT_PRIV_REMOTE_WRITE) != 0 && (privs & IT_PRIV_LOCAL_WRITE) == 0)
        return IT_ERR_INVALID_PRIVS;
    if (addr_mode != IT_ADDR_MODE_ABSOLUTE && addr_mode != IT_ADDR_MODE_RELATIVE)
        return IT_ERR_INVALID_ADDR_MODE;
    if (addr_mode == IT_ADDR_MODE_RELATIVE && (privs & IT_PRIV_REMOTE) != 0 && !has_mw(*ia))
        return IT_ERR_INVALID_ADDR_MODE;
    if (addr == nullptr)
        return IT_ERR_FAULT;
    if (length == 0)
        return IT_ERR_INVALID_LENGTH;
    if (length > ia->attr.limits.max_mr_size)
        return IT_ERR_RESOURCE_LMR_LENGTH;
    if ((privs & IT_PRIV_REMOTE) != 0 && rmr_context == nullptr)
        return IT_ERR_INVALID_HANDLE;

    auto *lmr = new (std::nothrow) Lmr(ia, pz);
    if (lmr == nullptr)
        return IT_ERR_RESOURCES;
    lmr->addr = addr;
    lmr->length = length;
    lmr->addr_mode = addr_mode;
    lmr->flags = static_cast<it_lmr_flag_t>(flags & ~0x1);
    lmr->shared_id = shared_id;
    pz->refs++; // the destructor gives it back
    if (it_status_t st = register_lmr(*lmr, *pz, privs); st != IT_SUCCESS) {
        delete lmr;
        return st;
    }
    if (!ia->adopt(lmr)) {
        delete lmr;
        return IT_ERR_RESOURCES;
    }
    *lmr_handle = handle_of<it_lmr_handle_t>(lmr);
    if ((privs & IT_PRIV_REMOTE) != 0)
        *rmr_context = htonl(lmr->context_stag);
    return IT_SUCCESS;
}

} // namespace

Lmr::~Lmr() {
    if (mr)
        unmap_mr(*ia, mr->stag(), this);
    if (rel_mw)
        unmap_mr(*ia, context_stag, this);
    rel_mw.reset(); // the window before its region
    mr.reset();
    pz->refs--;
}

Rmr::~Rmr() {
    if (mw)
        unmap_mr(*ia, mw->stag(), this);
    mw.reset();
    pz->refs--;
}

} // namespace itapi

using namespace itapi;

extern "C" {

it_status_t it_lmr_create21(it_pz_handle_t pz_handle, void *addr, it_iobl_t *iobl,
                            it_length_t length, it_addr_mode_t addr_mode, it_mem_priv_t privs,
                            it_lmr_flag_t flags, uint32_t shared_id, it_lmr_handle_t *lmr_handle,
                            it_rmr_context_t *rmr_context) {
    return lmr_create(pz_handle, addr, iobl, length, addr_mode, privs, flags, shared_id, lmr_handle,
                      rmr_context);
}

it_status_t it_lmr_create20(it_pz_handle_t pz_handle, void *addr, it_length_t length,
                            it_addr_mode_t addr_mode, it_mem_priv_t privs, it_lmr_flag_t flags,
                            uint32_t shared_id, it_lmr_handle_t *lmr_handle,
                            it_rmr_context_t *rmr_context) {
    return lmr_create(pz_handle, addr, nullptr, length, addr_mode, privs, flags, shared_id,
                      lmr_handle, rmr_context);
}

it_status_t it_lmr_create10(it_pz_handle_t pz_handle, void *addr, it_length_t length,
                            it_mem_priv_t privs, it_lmr_flag_t flags, uint32_t shared_id,
                            it_lmr_handle_t *lmr_handle, it_rmr_context_t *rmr_context) {
    // 1.0: IT_PRIV_NONE granted the default, local read and write
    if (privs == IT_PRIV_NONE)
        privs = IT_PRIV_LOCAL;
    return lmr_create(pz_handle, addr, nullptr, length, IT_ADDR_MODE_ABSOLUTE, privs, flags,
                      shared_id, lmr_handle, rmr_context);
}

it_status_t it_lmr_create_unlinked(it_pz_handle_t pz_handle, size_t, it_lmr_flag_t, uint32_t,
                                   it_lmr_handle_t *) {
    // lmr_link_support is false: LMR link is for privileged consumers
    return lookup<Pz>(pz_handle) == nullptr ? IT_ERR_INVALID_PZ : IT_ERR_PRIV_OPS_UNAVAILABLE;
}

it_status_t it_lmr_link(it_lmr_handle_t lmr_handle, const void *, const it_iobl_t *, it_length_t,
                        it_addr_mode_t, it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t,
                        it_dto_flags_t, it_rmr_context_t *) {
    return lookup<Lmr>(lmr_handle) == nullptr ? IT_ERR_INVALID_LMR : IT_ERR_PRIV_OPS_UNAVAILABLE;
}

it_status_t it_lmr_unlink(it_lmr_handle_t lmr_handle, it_ep_handle_t, it_dto_cookie_t,
                          it_dto_flags_t) {
    return lookup<Lmr>(lmr_handle) == nullptr ? IT_ERR_INVALID_LMR : IT_ERR_PRIV_OPS_UNAVAILABLE;
}

it_status_t it_lmr_free(it_lmr_handle_t lmr_handle) {
    Lmr *lmr = lookup<Lmr>(lmr_handle);
    if (lmr == nullptr)
        return IT_ERR_INVALID_LMR;
    if (lmr->links.load() != 0)
        return IT_ERR_LMR_BUSY;
    lmr->ia->unlink(lmr);
    delete lmr;
    return IT_SUCCESS;
}

it_status_t it_lmr_query(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask,
                         it_lmr_param_t *params) {
    Lmr *lmr = lookup<Lmr>(lmr_handle);
    if (lmr == nullptr)
        return IT_ERR_INVALID_LMR;
    if ((mask & ~0x7fff) != 0)
        return IT_ERR_INVALID_MASK;
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    params->ia = handle_of<it_ia_handle_t>(lmr->ia);
    params->pz = handle_of<it_pz_handle_t>(lmr->pz);
    params->addr = lmr->addr;
    params->length = lmr->length;
    params->privs = lmr->privs;
    params->flags = lmr->flags;
    params->shared_id = lmr->shared_id;
    params->rmr_context = (lmr->privs & IT_PRIV_REMOTE) != 0 ? htonl(lmr->context_stag) : 0;
    // registered as given: pinning is page-granular, the STag's bounds are not
    params->actual_addr = lmr->addr;
    params->actual_length = lmr->length;
    params->addr_mode = lmr->addr_mode;
    params->linked = IT_TRUE;
    params->iobl_num_elts = 0;
    params->iobl_type = static_cast<it_iobl_type_t>(0);
    return IT_SUCCESS;
}

// New rights or a new PZ. Remote rights that change make a new registration
// (a new rmr_context; the old one is revoked when it is deregistered);
// otherwise the region is modified in place and keeps its context.
it_status_t it_lmr_modify(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask,
                          const it_lmr_param_t *params) {
    Lmr *lmr = lookup<Lmr>(lmr_handle);
    if (lmr == nullptr)
        return IT_ERR_INVALID_LMR;
    if (mask == 0 || (mask & ~(IT_LMR_PARAM_PZ | IT_LMR_PARAM_MEM_PRIV)) != 0)
        return IT_ERR_INVALID_MASK;
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    Ia &ia = *lmr->ia;
    if (ia.catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    if (lmr->links.load() != 0)
        return IT_ERR_LMR_BUSY;
    Pz *pz = lmr->pz;
    if ((mask & IT_LMR_PARAM_PZ) != 0) {
        pz = lookup<Pz>(params->pz);
        if (pz == nullptr || pz->ia != &ia)
            return IT_ERR_INVALID_PZ;
    }
    it_mem_priv_t privs = (mask & IT_LMR_PARAM_MEM_PRIV) != 0 ? params->privs : lmr->privs;
    if (privs == 0 || (static_cast<std::uint32_t>(privs) & ~all_privs) != 0 ||
        ((privs & IT_PRIV_REMOTE_WRITE) != 0 && (privs & IT_PRIV_LOCAL_WRITE) == 0))
        return IT_ERR_INVALID_PRIVS;
    if (lmr->addr_mode == IT_ADDR_MODE_RELATIVE && (privs & IT_PRIV_REMOTE) != 0 && !has_mw(ia))
        return IT_ERR_INVALID_ADDR_MODE;
    bool remote_changed = (privs & IT_PRIV_REMOTE) != (lmr->privs & IT_PRIV_REMOTE);
    bool in_place =
        !remote_changed && !lmr->rel_mw && (ia.attr.caps & VIADUCT_DEV_CAP_MODIFY_MR) != 0;
    if (in_place) {
        try {
            lmr->mr->modify(pz->pd, mr_access(privs, has_mw(ia)));
            lmr->lkey.store(lmr->mr->lkey(), std::memory_order_relaxed);
        } catch (const viaduct::Error &e) {
            return e.errnum() == EACCES ? IT_ERR_ACCESS
                                        : status_of_errno(e.errnum(), IT_ERR_INVALID_PRIVS);
        }
        lmr->privs = privs;
    } else if (it_status_t st = register_lmr(*lmr, *pz, privs); st != IT_SUCCESS) {
        return st; // the LMR is as it was
    }
    if (pz != lmr->pz) {
        pz->refs++;
        lmr->pz->refs--;
        lmr->pz = pz;
    }
    return IT_SUCCESS;
}

// Memory is coherent: nothing to do, but the segments must be LMRs.
it_status_t it_lmr_flush_to_mem(const it_lmr_triplet_t *local_segments, size_t num_segments) {
    for (size_t i = 0; i < num_segments; i++)
        if (local_segments == nullptr || lookup<Lmr>(local_segments[i].lmr) == nullptr)
            return IT_ERR_INVALID_LMR;
    return IT_SUCCESS;
}

it_status_t it_lmr_refresh_from_mem(const it_lmr_triplet_t *local_segments, size_t num_segments) {
    return it_lmr_flush_to_mem(local_segments, num_segments);
}

it_status_t it_mem_map(it_ia_handle_t ia_handle, void *, uint64_t, size_t, it_io_addr_t *,
                       size_t *) {
    return lookup<Ia>(ia_handle) == nullptr ? IT_ERR_INVALID_IA : IT_ERR_PRIV_OPS_UNAVAILABLE;
}

it_status_t it_mem_unmap(it_ia_handle_t ia_handle, it_io_addr_t, size_t) {
    return lookup<Ia>(ia_handle) == nullptr ? IT_ERR_INVALID_IA : IT_ERR_PRIV_OPS_UNAVAILABLE;
}

it_rdma_addr_t it_make_rdma_addr_absolute(void *addr) {
    return it_hton64(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(addr)));
}

it_rdma_addr_t it_make_rdma_addr_relative(it_length_t offset) {
    return it_hton64(static_cast<std::uint64_t>(offset));
}

it_status_t it_rmr_create20(it_pz_handle_t pz_handle, it_rmr_type_t rmr_type,
                            it_rmr_handle_t *rmr_handle) {
    Pz *pz = lookup<Pz>(pz_handle);
    if (pz == nullptr)
        return IT_ERR_INVALID_PZ;
    Ia *ia = pz->ia;
    if (ia->catastrophe.load())
        return IT_ERR_IA_CATASTROPHE;
    if (rmr_handle == nullptr)
        return IT_ERR_INVALID_HANDLE;
    // iWARP implementations support narrow RMRs at least: the default
    if (rmr_type == IT_RMR_TYPE_DEFAULT)
        rmr_type = IT_RMR_TYPE_NARROW;
    if (rmr_type != IT_RMR_TYPE_NARROW && rmr_type != IT_RMR_TYPE_WIDE)
        return IT_ERR_INVALID_RMR_TYPE;
    if (!has_mw(*ia))
        return IT_ERR_OP_NOT_SUPPORTED;
    auto *rmr = new (std::nothrow) Rmr(ia, pz, rmr_type);
    if (rmr == nullptr)
        return IT_ERR_RESOURCES;
    pz->refs++;
    try {
        rmr->mw.emplace(pz->pd,
                        rmr_type == IT_RMR_TYPE_NARROW ? viaduct::MwType::Type2
                                                       : viaduct::MwType::Type1,
                        next_key(*ia));
        rmr->context = htonl(rmr->mw->stag());
        map_mr(*ia, rmr->mw->stag(), rmr);
    } catch (const std::exception &e) {
        delete rmr;
        return status_of_exception(e, IT_ERR_RESOURCES);
    }
    if (!ia->adopt(rmr)) {
        delete rmr;
        return IT_ERR_RESOURCES;
    }
    *rmr_handle = handle_of<it_rmr_handle_t>(rmr);
    return IT_SUCCESS;
}

it_status_t it_rmr_create10(it_pz_handle_t pz_handle, it_rmr_handle_t *rmr_handle) {
    return it_rmr_create20(pz_handle, IT_RMR_TYPE_DEFAULT, rmr_handle);
}

it_status_t it_rmr_free(it_rmr_handle_t rmr_handle) {
    Rmr *rmr = lookup<Rmr>(rmr_handle);
    if (rmr == nullptr)
        return IT_ERR_INVALID_RMR;
    {
        // a linked RMR lets go of its LMR and EP: the window is destroyed,
        // which ends the binding in the kernel
        std::lock_guard guard(rmr->lock);
        if (rmr->linked) {
            if (rmr->lmr != nullptr && lookup<Lmr>(rmr->lmr_handle) == rmr->lmr)
                rmr->lmr->links--;
            if (rmr->ep != nullptr && lookup<Ep>(rmr->ep_handle) == rmr->ep)
                rmr->ep->narrow_rmrs--;
            rmr->linked = false;
        }
    }
    rmr->ia->unlink(rmr);
    delete rmr;
    return IT_SUCCESS;
}

it_status_t it_rmr_query(it_rmr_handle_t rmr_handle, it_rmr_param_mask_t mask,
                         it_rmr_param_t *params) {
    Rmr *rmr = lookup<Rmr>(rmr_handle);
    if (rmr == nullptr)
        return IT_ERR_INVALID_RMR;
    if ((mask & ~0x7ff) != 0)
        return IT_ERR_INVALID_MASK;
    if (params == nullptr)
        return IT_ERR_INVALID_HANDLE;
    std::lock_guard guard(rmr->lock);
    params->ia = handle_of<it_ia_handle_t>(rmr->ia);
    params->pz = handle_of<it_pz_handle_t>(rmr->pz);
#ifdef ITAPI_ENABLE_V10_BINDINGS
    params->bound = rmr->linked ? IT_TRUE : IT_FALSE;
#else
    params->linked = rmr->linked ? IT_TRUE : IT_FALSE;
#endif
    params->lmr = rmr->linked ? rmr->lmr_handle : nullptr;
    params->addr = rmr->addr;
    params->length = rmr->length;
    params->privs = rmr->privs;
    params->rmr_context = rmr->context;
    params->type = rmr->rmr_type;
    params->addr_mode = rmr->addr_mode;
    return IT_SUCCESS;
}

} // extern "C"
