// SPDX-License-Identifier: GPL-2.0
/*
 * libmlx5.so.1 and libefa.so.1 for the drop-in directory: the vendor
 * direct-verbs entry points that rdma-core-linked programs such as
 * perftest import, answering as rdma-core's libraries answer for a device
 * that is not theirs (which every viaduct device is): NULL with errno
 * EOPNOTSUPP, or EOPNOTSUPP. Built twice, once per library name, with the
 * vendor's symbol versions.
 */
#include <cerrno>
#include <cstddef>
#include <cstdint>

#define EXPORT extern "C" __attribute__((visibility("default")))

#ifdef VD_MLX5
EXPORT void *mlx5dv_open_device(void *, void *) {
    errno = EOPNOTSUPP;
    return nullptr;
}

EXPORT void *mlx5dv_create_qp(void *, void *, void *) {
    errno = EOPNOTSUPP;
    return nullptr;
}

/* No ibv_qp_ex exists on viaduct (ibv_qp_to_qp_ex() answers NULL). */
EXPORT void *mlx5dv_qp_ex_from_ibv_qp_ex(void *) {
    errno = EOPNOTSUPP;
    return nullptr;
}

EXPORT void *mlx5dv_create_mkey(void *) {
    errno = EOPNOTSUPP;
    return nullptr;
}

EXPORT int mlx5dv_destroy_mkey(void *) {
    return EOPNOTSUPP;
}

EXPORT int mlx5dv_devx_general_cmd(void *, const void *, size_t, void *, size_t) {
    return EOPNOTSUPP;
}

EXPORT void *mlx5dv_dek_create(void *, void *) {
    errno = EOPNOTSUPP;
    return nullptr;
}

EXPORT int mlx5dv_dek_destroy(void *) {
    return EOPNOTSUPP;
}

EXPORT int mlx5dv_crypto_login(void *, void *) {
    return EOPNOTSUPP;
}
#endif

#ifdef VD_EFA
EXPORT int efadv_query_device(void *, void *, uint32_t) {
    return EOPNOTSUPP;
}

EXPORT void *efadv_create_qp_ex(void *, void *, void *, uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
#endif
