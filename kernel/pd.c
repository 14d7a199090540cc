// SPDX-License-Identifier: GPL-2.0
/*
 * Protection domains: a number, a reference count and a user count.
 * See pd.h for the rules.
 */
#include <linux/bug.h>
#include <linux/err.h>
#include <linux/idr.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "pd.h"
#include "stats.h"

#define VD_PD_DESTROYED		(-1)
#define VD_PDN_MAX		((1U << 24) - 1)

/*
 * One number space for the whole module. The IDA frees its memory as it
 * empties, and every PD is gone before the module can be unloaded, so no
 * teardown is needed.
 */
static DEFINE_IDA(vd_pdn_ida);

/**
 * vd_pd_create() - a new protection domain
 * @dev: the device it belongs to (not dereferenced; it outlives the PD)
 * @counts: @dev's counts, which count the PD and take a reference of it;
 *          or NULL
 *
 * Context: Process context; allocates with GFP_KERNEL.
 * Return: the PD with one reference (the creator's) and no user, or
 * ERR_PTR(-ENOMEM), or ERR_PTR(-ENOSPC) when the PD numbers are exhausted.
 */
struct vd_pd *vd_pd_create(struct vd_device *dev, struct vd_dev_counts *counts)
{
	struct vd_pd *pd;
	int pdn;

	pd = kzalloc(sizeof(*pd), GFP_KERNEL_ACCOUNT);
	if (!pd)
		return ERR_PTR(-ENOMEM);

	pdn = ida_alloc_range(&vd_pdn_ida, 1, VD_PDN_MAX, GFP_KERNEL);
	if (pdn < 0) {
		kfree(pd);
		return ERR_PTR(pdn);
	}

	kref_init(&pd->ref);
	pd->dev = dev;
	pd->counts = vd_dev_counts_get(counts);
	pd->pdn = pdn;
	atomic_set(&pd->users, 0);
	vd_stat_inc(pds);
	vd_dev_count_inc(pd->counts, VD_DEV_PDS);
	return pd;
}
EXPORT_SYMBOL_IF_KUNIT(vd_pd_create);

static void vd_pd_free(struct kref *ref)
{
	struct vd_pd *pd = container_of(ref, struct vd_pd, ref);

	/* A PD freed while counted as used means a user leaked its count. */
	WARN_ON_ONCE(atomic_read(&pd->users) > 0);
	ida_free(&vd_pdn_ida, pd->pdn);
	vd_stat_dec(pds);
	vd_dev_count_dec(pd->counts, VD_DEV_PDS);
	vd_dev_counts_put(pd->counts);
	kfree(pd);
}

/**
 * vd_pd_put() - drop a reference
 * @pd: the PD, or NULL (a no-op)
 *
 * The last put frees the PD and its number. Never sleeps.
 */
void vd_pd_put(struct vd_pd *pd)
{
	if (pd)
		kref_put(&pd->ref, vd_pd_free);
}
EXPORT_SYMBOL_IF_KUNIT(vd_pd_put);

/**
 * vd_pd_attach() - count one more user (an MR or a QP) of a live PD
 * @pd: the PD, referenced by the caller
 *
 * Context: Any context.
 * Return: 0, or -ENOENT once vd_pd_try_destroy() succeeded.
 */
int vd_pd_attach(struct vd_pd *pd)
{
	return atomic_inc_unless_negative(&pd->users) ? 0 : -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(vd_pd_attach);

/**
 * vd_pd_detach() - uncount a user counted by vd_pd_attach()
 * @pd: the PD, referenced by the caller
 *
 * Context: Any context.
 */
void vd_pd_detach(struct vd_pd *pd)
{
	WARN_ON_ONCE(atomic_dec_return(&pd->users) < 0);
}
EXPORT_SYMBOL_IF_KUNIT(vd_pd_detach);

/**
 * vd_pd_try_destroy() - mark the PD destroyed unless it has users
 * @pd: the PD, referenced by the caller
 *
 * On success no user can attach any more; the caller then forgets its
 * handle and drops its reference with vd_pd_put().
 *
 * Context: Any context.
 * Return: 0, -EBUSY while the PD has users, -ENOENT if it was already
 * destroyed.
 */
int vd_pd_try_destroy(struct vd_pd *pd)
{
	int old = atomic_cmpxchg(&pd->users, 0, VD_PD_DESTROYED);

	if (old == VD_PD_DESTROYED)
		return -ENOENT;
	return old ? -EBUSY : 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_pd_try_destroy);
