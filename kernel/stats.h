/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Module-wide counters, reported through the generic-netlink family.
 * Plain atomics: they are statistics, not synchronisation.
 */
#ifndef _VD_STATS_H
#define _VD_STATS_H

#include <linux/atomic.h>

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

#endif /* _VD_STATS_H */
