/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User contexts: one per open() of /dev/viaduct.
 *
 *   vd_uctx_init(), vd_uctx_uninit()
 *       Register and unregister the character device. The file operations
 *       hold a module reference while any file is open, so uninit never
 *       meets a live context.
 *
 * A context remembers the network namespace of its opener (referenced),
 * sees only that namespace's devices, and selects at most one device, once;
 * it then holds a reference on that device and counts as one of its
 * contexts until release. A selected device that is removed stays
 * referenced (memory only) and the context answers -ENODEV for everything
 * that needs it. release() undoes everything the context did.
 */
#ifndef _VD_UCTX_H
#define _VD_UCTX_H

#include <linux/mutex.h>
#include <net/net_namespace.h>

#include "device.h"

struct vd_uctx {
	u32 id;				/* for messages only */
	struct net *net;
	netns_tracker net_tracker;
	/*
	 * Serialises changes to the context: selection now; creation and
	 * destruction of resources (handle tables) next.
	 */
	struct mutex lock;
	/* Set once under @lock, read locklessly with smp_load_acquire(). */
	struct vd_device *dev;
	/*
	 * Handle tables (PDs, MRs, CQs, QPs) and the mmap keys of their rings
	 * join here; release() tears them down before dropping @dev.
	 */
};

int vd_uctx_init(void);
void vd_uctx_uninit(void);

#define vd_dbg_ctx(ctx, fmt, ...)					\
	pr_debug("ctx%u %s: " fmt, (ctx)->id, __func__, ##__VA_ARGS__)

#endif /* _VD_UCTX_H */
