/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User contexts: one per open() of /dev/viaduct, with the ioctl dispatch.
 * The functions are documented (kernel-doc) at their definitions in
 * uctx.c; Documentation/architecture.rst places the file.
 *
 * A context remembers the network namespace of its opener (referenced),
 * sees only that namespace's devices, and selects at most one device, once;
 * it then holds a reference on that device and counts as one of its
 * contexts until release. A selected device that is removed stays
 * referenced (memory only); its removal stops the context's connections
 * and moves its QPs to Error (a struct vd_device_client), and the context
 * then answers -ENODEV for everything that needs the device but destroying,
 * acknowledging CM events and QUERY_QP. release() undoes everything the
 * context did.
 *
 * Reports (netlink) walk the open contexts with vd_uctx_walk(), which
 * holds no lock shared between contexts while it visits one: it takes a
 * reference on the context (found under RCU) and then the context's own
 * @lock, under which release() marks it @closed before it tears the
 * resources down. So a context whose owner is stuck (a registration
 * waiting for a page fault that never completes) delays at most the
 * reports that visit it, never another process's open() or close().
 */
#ifndef _VD_UCTX_H
#define _VD_UCTX_H

#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <net/net_namespace.h>

#include "device.h"
#include "uobj.h"

struct vd_uctx {
	u32 id;				/* messages and reports */
	/* the open file's and each visiting report's; freed after RCU */
	refcount_t ref;
	struct rcu_head rcu;
	struct net *net;
	struct pid *owner;		/* opener's thread group, referenced */
	char comm[TASK_COMM_LEN];	/* opener's name at open() */
	netns_tracker net_tracker;
	/*
	 * Serialises selection, and a report's visit against release();
	 * resources have their own lock in @objs.
	 */
	struct mutex lock;
	bool closed;			/* under @lock: @objs is going away */
	/*
	 * Set once under @lock, read locklessly with smp_load_acquire();
	 * referenced until the context is freed, so reports may name it.
	 */
	struct vd_device *dev;
	/* registered with @dev while selected: its removal stops us */
	struct vd_device_client dev_client;
	/* Resources and their mmap keys; torn down before @dev is dropped. */
	struct vd_uobj_table objs;
};

int vd_uctx_init(void);
void vd_uctx_uninit(void);

int vd_uctx_walk(struct net *net, u32 *id,
		 int (*fn)(struct vd_uctx *ctx, void *arg), void *arg);

#define vd_dbg_ctx(ctx, fmt, ...)					\
	pr_debug("ctx%u %s: " fmt, (ctx)->id, __func__, ##__VA_ARGS__)

#endif /* _VD_UCTX_H */
