/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counters reported through the generic-netlink family: the module-wide
 * ones (STATS_GET) and each device's objects (LINK_GET). Plain atomics:
 * they are statistics, not synchronisation.
 */
#ifndef _VD_STATS_H
#define _VD_STATS_H

#include <linux/atomic.h>
#include <linux/refcount.h>
#include <linux/slab.h>

struct vd_stats {
	atomic64_t contexts;		/* open /dev/viaduct files */
	atomic64_t pds;
	atomic64_t mrs;
	atomic64_t cqs;
	atomic64_t qps;
	atomic64_t pinned_pages;	/* pages pinned by registrations now */
	atomic64_t doorbells;		/* DOORBELL system calls */
	atomic64_t worker_polls;	/* doorbell pages polled by the kernel worker */
	atomic64_t worker_wakeups;	/* times the worker was woken from sleep */
	atomic64_t wqes_consumed;	/* WQEs copied out of SQ and RQ rings */
	atomic64_t cqes_written;
	atomic64_t cq_overflows;
	atomic64_t tx_zcopy_msgs;	/* messages sent by reference */
	atomic64_t tx_zcopy_copied;	/* ... whose pages the stack copied */
	atomic64_t tx_zcopy_fallbacks;	/* over the threshold, but copied */
	atomic64_t tx_direct;		/* messages sent by the posting context */
	atomic64_t tx_deferred;		/* ... by the transmit work item */
	atomic64_t rx_upcall;		/* FPDUs handled in sk_data_ready */
	atomic64_t rx_deferred;		/* ... by the receive work item */
	atomic64_t tx_onecopy_bytes;	/* FPDU bytes sendmsg() took from pages */
	atomic64_t tx_buffered_bytes;	/* ... from the transmit buffer */
	atomic64_t rx_onecopy_bytes;	/* FPDU bytes placed from the skbs */
	atomic64_t rx_buffered_bytes;	/* ... through the receive buffer */
};

extern struct vd_stats vd_stats;

#define vd_stat_inc(name)	atomic64_inc(&vd_stats.name)
#define vd_stat_dec(name)	atomic64_dec(&vd_stats.name)
#define vd_stat_add(name, n)	atomic64_add((n), &vd_stats.name)
#define vd_stat_sub(name, n)	atomic64_sub((n), &vd_stats.name)
#define vd_stat_read(name)	atomic64_read(&vd_stats.name)

/* What struct vd_dev_counts counts */
enum vd_dev_count {
	VD_DEV_PDS,		/* protection domains */
	VD_DEV_CQS,		/* completion queues, a QP's private ones too */
	VD_DEV_QPS,		/* queue pairs; a QP counts in its PD's */
	VD_DEV_SRQS,		/* shared receive queues; as QPs */
	VD_DEV_NR
};

/**
 * struct vd_dev_counts - the objects a device's users hold now, for reports
 * @ref: the device's, and every PD's and CQ's made on it
 * @n: objects made on the device and not yet freed, by enum vd_dev_count
 *
 * What VIADUCT_CMD_LINK_GET reports per device, as STATS_GET reports the
 * whole module's. Kept apart from the device because an object may be
 * freed after its device (a QP's last reference held by a stream, say),
 * from any context: the last put is a kfree(), which the device's own
 * last put is not. Regions and pinned pages are counted by the device's
 * TPT, which every region leaves before the device goes.
 */
struct vd_dev_counts {
	refcount_t ref;
	atomic_t n[VD_DEV_NR];
};

/**
 * vd_dev_counts_get() - take a reference
 * @c: the counts, or NULL (objects made without a device: KUnit's)
 *
 * Context: Any context.
 * Return: @c.
 */
static inline struct vd_dev_counts *vd_dev_counts_get(struct vd_dev_counts *c)
{
	if (c)
		refcount_inc(&c->ref);
	return c;
}

/**
 * vd_dev_counts_put() - drop a reference
 * @c: the counts, or NULL (a no-op)
 *
 * Context: Any context; never sleeps.
 */
static inline void vd_dev_counts_put(struct vd_dev_counts *c)
{
	if (c && refcount_dec_and_test(&c->ref))
		kfree(c);
}

/* One object more of kind @i in @c, which may be NULL (not counted). */
static inline void vd_dev_count_inc(struct vd_dev_counts *c,
				    enum vd_dev_count i)
{
	if (c)
		atomic_inc(&c->n[i]);
}

/* One object less of kind @i in @c, which may be NULL. */
static inline void vd_dev_count_dec(struct vd_dev_counts *c,
				    enum vd_dev_count i)
{
	if (c)
		atomic_dec(&c->n[i]);
}

/* Objects of kind @i counted in @c now. */
static inline u32 vd_dev_count_read(const struct vd_dev_counts *c,
				    enum vd_dev_count i)
{
	return atomic_read(&c->n[i]);
}

#endif /* _VD_STATS_H */
