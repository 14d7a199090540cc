/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Protection domains: a number, a reference count and a user count. The
 * functions are documented (kernel-doc) at their definitions in pd.c;
 * Documentation/memory.rst has what PDs protect.
 *
 * A user holds a reference of its own (vd_pd_get) for as long as it keeps
 * the pointer, and is counted as a user (vd_pd_attach) for as long as it
 * should keep the PD from being destroyed. The two are separate because a
 * deregistered MR stops counting as a user at once, while an in-flight data
 * transfer may keep the MR, and so its PD pointer, alive a little longer.
 *
 * The user count is an atomic with a "destroyed" value of -1: attaching is
 * an increment that refuses negative values and destroying is a 0 -> -1
 * cmpxchg, so attach and destroy need no common lock and cannot both win.
 *
 * PD numbers (@pdn) are unique among all live PDs of the module (so also
 * within each device), start at 1, and may be reused after a PD is freed.
 * They are for reporting; access checks compare PD pointers.
 *
 * @dev is never dereferenced here: the caller guarantees that the device
 * outlives its PDs. The device's counts (@counts, which may outlive the
 * device) count the PD, and the QPs and SRQs made on it (vd_pd_counts()).
 */
#ifndef _VD_PD_H
#define _VD_PD_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/types.h>

struct vd_dev_counts;
struct vd_device;

struct vd_pd {
	struct kref ref;
	struct vd_device *dev;
	struct vd_dev_counts *counts;	/* @dev's, referenced; may be NULL */
	u32 pdn;
	atomic_t users;		/* MRs and QPs attached; -1 once destroyed */
};

struct vd_pd *vd_pd_create(struct vd_device *dev, struct vd_dev_counts *counts);
int vd_pd_try_destroy(struct vd_pd *pd);
int vd_pd_attach(struct vd_pd *pd);
void vd_pd_detach(struct vd_pd *pd);
void vd_pd_put(struct vd_pd *pd);

/**
 * vd_pd_counts() - the device counts of the objects made on a PD
 * @pd: the PD, referenced by the caller, or NULL
 *
 * For an object that holds a reference to @pd until it is freed, and so
 * can count itself in the PD's device's counts from creation to free.
 *
 * Return: the counts, or NULL (no PD, or a PD made without a device).
 */
static inline struct vd_dev_counts *vd_pd_counts(const struct vd_pd *pd)
{
	return pd ? pd->counts : NULL;
}

/**
 * vd_pd_get() - take a reference
 * @pd: the PD, on which the caller holds a reference
 *
 * Context: Any context.
 * Return: @pd.
 */
static inline struct vd_pd *vd_pd_get(struct vd_pd *pd)
{
	kref_get(&pd->ref);
	return pd;
}

#endif /* _VD_PD_H */
