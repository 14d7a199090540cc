// SPDX-License-Identifier: GPL-2.0
//
// The handle table, consumer contexts, handle types and the byte-order
// helpers of IT-API.
#include <bit>
#include <cerrno>
#include <new>

#include "internal.hpp"

namespace itapi {

Object::~Object() = default;

namespace {

it_handle_t encode(std::uint32_t index, std::uint32_t gen) noexcept {
    auto v = (std::uint64_t{gen} << HandleTable::index_bits) | (std::uint64_t{index} + 1);
    return reinterpret_cast<it_handle_t>(static_cast<std::uintptr_t>(v));
}
} // namespace

it_handle_t HandleTable::insert(Object *obj) {
    std::lock_guard guard(lock_);
    std::uint32_t index;
    if (!free_.empty()) {
        index = free_.back();
        free_.pop_back();
    } else {
        if (used_ >= (std::size_t{1} << index_bits) - 1)
            return nullptr;
        index = static_cast<std::uint32_t>(used_);
        std::size_t chunk = index >> chunk_bits;
        if (chunks_[chunk].load(std::memory_order_relaxed) == nullptr)
            chunks_[chunk].store(new (std::nothrow) Slot[chunk_size], std::memory_order_release);
        if (chunks_[chunk].load(std::memory_order_relaxed) == nullptr)
            return nullptr;
        used_++;
    }
    Slot &slot = chunks_[index >> chunk_bits].load(std::memory_order_relaxed)[index % chunk_size];
    slot.obj.store(obj, std::memory_order_release);
    it_handle_t h = encode(index, slot.gen.load(std::memory_order_relaxed));
    obj->handle = h;
    return h;
}

void HandleTable::erase(it_handle_t h) noexcept {
    auto v = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(h));
    auto index = static_cast<std::uint32_t>((v & index_mask) - 1);
    std::lock_guard guard(lock_);
    Slot *chunk = chunks_[index >> chunk_bits].load(std::memory_order_relaxed);
    Slot &slot = chunk[index % chunk_size];
    // a new generation first: a concurrent find() fails its second check
    std::uint32_t gen = slot.gen.load(std::memory_order_relaxed) + 1;
    slot.gen.store(gen == 0 ? 1 : gen, std::memory_order_release);
    slot.obj.store(nullptr, std::memory_order_release);
    try {
        free_.push_back(index);
    } catch (...) {
        // the slot is lost to reuse, nothing else
    }
}

it_status_t status_of_errno(int err, it_status_t fallback) noexcept {
    switch (err) {
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
        return IT_ERR_RESOURCES;
    case EFAULT:
        return IT_ERR_FAULT;
    case EACCES:
    case EPERM:
        return IT_ERR_ACCESS;
    case EOPNOTSUPP:
        return IT_ERR_OP_NOT_SUPPORTED;
    case ENODEV:
    case EIO:
        return IT_ERR_IA_CATASTROPHE;
    default:
        return fallback;
    }
}

} // namespace itapi

using namespace itapi;

extern "C" {

it_status_t it_get_consumer_context(it_handle_t handle, it_context_t *context) {
    Object *o = HandleTable::instance().find(handle);
    if (o == nullptr)
        return IT_ERR_INVALID_HANDLE;
    if (context == nullptr)
        return IT_ERR_INVALID_HANDLE;
    std::lock_guard guard(o->context_lock);
    if (!o->context_set)
        return IT_ERR_NO_CONTEXT;
    *context = o->context;
    return IT_SUCCESS;
}

it_status_t it_set_consumer_context(it_handle_t handle, it_context_t context) {
    Object *o = HandleTable::instance().find(handle);
    if (o == nullptr)
        return IT_ERR_INVALID_HANDLE;
    std::lock_guard guard(o->context_lock);
    o->context = context;
    o->context_set = true;
    return IT_SUCCESS;
}

it_status_t it_get_handle_type(it_handle_t handle, it_handle_type_enum_t *type_of_handle) {
    Object *o = HandleTable::instance().find(handle);
    if (o == nullptr || type_of_handle == nullptr)
        return IT_ERR_INVALID_HANDLE;
    *type_of_handle = static_cast<it_handle_type_enum_t>(o->type);
    return IT_SUCCESS;
}

uint64_t it_hton64(uint64_t hostint) {
    if constexpr (std::endian::native == std::endian::little)
        return __builtin_bswap64(hostint);
    else
        return hostint;
}

uint64_t it_ntoh64(uint64_t netint) {
    return it_hton64(netint);
}

} // extern "C"
