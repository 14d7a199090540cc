/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Soft RNIC devices: one per bound net_device, living in its namespace,
 * each with its TPT and its doorbell worker. Documentation/architecture.rst
 * places them; the functions are documented (kernel-doc) at their
 * definitions in device.c, the inline helpers below where they are
 * defined.
 *
 * Locking and lifetimes
 * ---------------------
 * vd_devices_lock (a mutex) protects the table of live devices and each
 * device's binding (@netdev, @removed). RTNL, where both are needed, is
 * taken first: creation holds RTNL so that the interface cannot start to
 * unregister between the check of its state and the device joining the
 * table, and the notifier is called with RTNL held.
 *
 * The table holds one reference on every live device; removal drops it.
 * The netdev reference is dropped at removal, not at the last put, so a
 * context that keeps a removed device open never delays the interface's
 * unregistration. A device's namespace is the interface's, and a device
 * leaves with its interface (NETDEV_UNREGISTER is also sent when the
 * interface moves to another namespace), so @net is valid while the
 * device is live and needs no reference of its own.
 *
 * Removal stops the users
 * -----------------------
 * Whoever uses a device for something that must end with it (a user
 * context with its QPs, CM ids and streams) registers a struct
 * vd_device_client. Removal queues the device's @remove_work, which calls
 * every client's @removed once, in process context, outside RTNL and
 * vd_devices_lock, with @clients_lock held: a client that unregisters
 * waits for its call to finish. Clients are called once, in registration
 * order; a client registered after removal began is refused (-ENODEV).
 */

#ifndef _VD_DEVICE_H
#define _VD_DEVICE_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/workqueue.h>
#include <linux/types.h>
#include <net/net_namespace.h>

#include <viaduct/viaduct-abi.h>

#include "doorbell.h"
#include "tpt.h"
#include "viaduct.h"

/**
 * struct vd_device_client - a user of a device that removal must stop
 * @node: in the device's @clients
 * @removed: called once when the device was removed; process context,
 *	the device's @clients_lock held (so never register or unregister
 *	from it), may sleep
 */
struct vd_device_client {
	struct list_head node;
	void (*removed)(struct vd_device_client *c);
};

struct vd_dev_counts;

struct vd_device {
	struct kref ref;
	u32 index;			/* global, never reused while loaded */
	char name[VIADUCT_NAME_SIZE];
	possible_net_t net;		/* the interface's, while live */
	struct net_device *netdev;	/* NULL once removed */
	netdevice_tracker netdev_tracker;
	bool removed;
	atomic_t contexts;
	struct vd_dev_counts *counts;	/* referenced */
	struct vd_tpt tpt;			/* until the last put */
	struct vd_doorbell_worker db_worker;	/* stopped at removal */
	struct mutex clients_lock;	/* @clients, the calls of @removed */
	struct list_head clients;	/* struct vd_device_client */
	struct work_struct remove_work;	/* stops the clients */
};

int vd_device_init(void);
void vd_device_uninit(void);

bool vd_device_name_valid(const char *name);

struct vd_device *vd_device_create(struct net_device *netdev, const char *name);
int vd_device_remove(struct vd_device *vd);
int vd_device_client_add(struct vd_device *vd, struct vd_device_client *c);
void vd_device_client_del(struct vd_device *vd, struct vd_device_client *c);

struct vd_device *vd_device_get_by_index(struct net *net, u32 index);
struct vd_device *vd_device_get_by_name(struct net *net, const char *name);
struct vd_device *vd_device_get_next(struct net *net, u32 *index);
void vd_device_put(struct vd_device *vd);

int vd_device_query(struct vd_device *vd, struct viaduct_device_attr *attr);
int vd_device_list(struct net *net, u32 capacity,
		   struct viaduct_device_entry **entries, u32 *filled);

/**
 * vd_device_get() - take a reference
 * @vd: the device, on which the caller holds a reference (or which it
 *      found under vd_devices_lock)
 *
 * Memory lifetime only: a removed device stays allocated, unbound.
 *
 * Context: Any context.
 * Return: @vd.
 */
static inline struct vd_device *vd_device_get(struct vd_device *vd)
{
	kref_get(&vd->ref);
	return vd;
}

/**
 * vd_device_alive() - whether the device was not removed yet
 * @vd: the device
 *
 * A hint without locks: the answer can change right after it is given, so
 * callers that act on the bound netdev go through vd_device_query() and
 * friends, which check under the lock.
 *
 * Context: Any context.
 * Return: false once the device was removed.
 */
static inline bool vd_device_alive(const struct vd_device *vd)
{
	return !READ_ONCE(vd->removed);
}

/**
 * vd_device_ctx_attach() - count a user context that selected the device
 * @vd: the device
 *
 * The count is for reporting only.
 *
 * Context: Any context.
 */
static inline void vd_device_ctx_attach(struct vd_device *vd)
{
	atomic_inc(&vd->contexts);
}

/**
 * vd_device_ctx_detach() - uncount a context counted by vd_device_ctx_attach()
 * @vd: the device
 *
 * Context: Any context.
 */
static inline void vd_device_ctx_detach(struct vd_device *vd)
{
	atomic_dec(&vd->contexts);
}

/**
 * vd_device_contexts() - the user contexts that selected the device
 * @vd: the device
 *
 * Context: Any context.
 * Return: the count of vd_device_ctx_attach() less vd_device_ctx_detach().
 */
static inline u32 vd_device_contexts(const struct vd_device *vd)
{
	return atomic_read(&vd->contexts);
}

#define vd_dbg_dev(vd, fmt, ...) do {					\
	const struct vd_device *__vd = (vd);				\
									\
	pr_debug("%s(%u) %s: " fmt, __vd->name, __vd->index, __func__,	\
		 ##__VA_ARGS__);					\
} while (0)

#endif /* _VD_DEVICE_H */
