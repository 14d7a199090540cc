/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's API, in userspace, to compile the module's
 * pure sources (iwarp.c, terminate.c, mpa.c, qp_rules.c) into libFuzzer
 * targets. Every <linux/...>, <asm/...> and <kunit/...> header those
 * sources reach resolves to a file of this directory that includes this
 * one (<linux/types.h>, <linux/errno.h> and <linux/limits.h> also bring
 * in the system's uapi headers of those names, which the C library and the
 * ABI header need; <linux/ioctl.h> is the system's). Types that the pure code only
 * names (locks, lists, work items) are opaque placeholders: nothing here
 * may run them.
 */
#ifndef VD_KSHIM_H
#define VD_KSHIM_H

#include <asm/byteorder.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#ifndef __bitwise
#define __bitwise
#endif

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#define U8_MAX ((u8)~0U)
#define U16_MAX ((u16)~0U)
#define U32_MAX ((u32)~0U)
#define U64_MAX ((u64)~0ULL)

#define __packed __attribute__((packed))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define __must_check __attribute__((warn_unused_result))
#define __rcu
#define __user
#define __iomem
#define __acquires(x)
#define __releases(x)
#define __must_hold(x)

#define EXPORT_SYMBOL_IF_KUNIT(sym)
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)

#define BIT(n) (1UL << (n))
#define BIT_ULL(n) (1ULL << (n))
#define GENMASK(h, l) (((~0UL) << (l)) & (~0UL >> (63 - (h))))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BUILD_BUG_ON(c) _Static_assert(!(c), #c)
#ifndef static_assert
#define static_assert(...) _Static_assert(__VA_ARGS__, #__VA_ARGS__)
#endif

#define PAGE_SHIFT 12
#define PAGE_SIZE (1UL << PAGE_SHIFT)

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define clamp(v, lo, hi) min(max(v, lo), hi)
#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))
#define DIV_ROUND_UP_ULL(n, d) ((unsigned long long)DIV_ROUND_UP((unsigned long long)(n), (d)))
#define ALIGN(x, a) (((x) + (a)-1) & ~((typeof(x))(a)-1))

#define check_add_overflow(a, b, d) __builtin_add_overflow(a, b, d)
#define check_mul_overflow(a, b, d) __builtin_mul_overflow(a, b, d)

static inline bool is_power_of_2(unsigned long n) {
    return n && !(n & (n - 1));
}

static inline int ilog2(unsigned long long n) {
    return 63 - __builtin_clzll(n);
}

static inline unsigned long roundup_pow_of_two(unsigned long n) {
    return n <= 1 ? 1 : 1UL << (64 - __builtin_clzl(n - 1));
}

#define READ_ONCE(x) (*(const volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))
#define smp_load_acquire(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define smp_store_release(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)

#define pr_debug(...)                                                                              \
    do {                                                                                           \
    } while (0)
#define pr_warn(...)                                                                               \
    do {                                                                                           \
    } while (0)
#define pr_err(...)                                                                                \
    do {                                                                                           \
    } while (0)
#define WARN_ON(c)                                                                                 \
    ({                                                                                             \
        if (c)                                                                                     \
            abort();                                                                               \
        0;                                                                                         \
    })
#define WARN_ON_ONCE(c) WARN_ON(c)
#define BUG_ON(c)                                                                                  \
    do {                                                                                           \
        if (c)                                                                                     \
            abort();                                                                               \
    } while (0)

/* byte order: the wire fields are typed only for sparse in the kernel */
#define cpu_to_be16(x) ((__be16)htobe16(x))
#define cpu_to_be32(x) ((__be32)htobe32(x))
#define cpu_to_be64(x) ((__be64)htobe64(x))
#define be16_to_cpu(x) ((u16)be16toh(x))
#define be32_to_cpu(x) ((u32)be32toh(x))
#define be64_to_cpu(x) ((u64)be64toh(x))
#define cpu_to_le32(x) ((__le32)htole32(x))
#define le32_to_cpu(x) ((u32)le32toh(x))

/* CRC32c (Castagnoli), bitwise, reflected: what lib/crc32c computes */
static inline u32 crc32c(u32 crc, const void *buf, size_t len) {
    const u8 *p = buf;
    int k;

    while (len--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78U : crc >> 1;
    }
    return crc;
}

/* Opaque placeholders for what the pure code's headers only name. */
typedef struct {
    int counter;
} atomic_t;
typedef struct {
    long counter;
} atomic64_t;
struct kref {
    atomic_t refcount;
};
typedef struct {
    int lock;
} spinlock_t;
struct mutex {
    int lock;
};
struct list_head {
    struct list_head *next, *prev;
};
struct hlist_node {
    struct hlist_node *next, **pprev;
};
struct llist_head {
    void *first;
};
struct llist_node {
    struct llist_node *next;
};
struct rcu_head {
    void *next;
    void (*func)(struct rcu_head *);
};
struct work_struct {
    long data;
    struct list_head entry;
    void (*func)(struct work_struct *);
};
struct delayed_work {
    struct work_struct work;
};
struct xarray {
    spinlock_t xa_lock;
    unsigned int xa_flags;
    void *xa_head;
};
typedef struct {
    spinlock_t lock;
    struct list_head head;
} wait_queue_head_t;
/* A sequence count: the fuzzers run one thread, so a read never retries. */
typedef struct {
    unsigned int sequence;
} seqcount_t;
static inline unsigned int read_seqcount_begin(const seqcount_t *s) {
    return s->sequence;
}
static inline int read_seqcount_retry(const seqcount_t *s, unsigned int start) {
    return s->sequence != start;
}
struct socket;
struct sock;
struct page;
struct task_struct;

static inline void kref_get(struct kref *k) {
    k->refcount.counter++;
}

#endif /* VD_KSHIM_H */
