/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The resources of a user context: handle table, mmap keys, async events.
 * The table is set up at open() and torn down at release(); the resource
 * commands of include/uapi/viaduct/viaduct-abi.h run here, called by
 * uctx.c's dispatcher with the argument copied in (see VD_IOCTL_HANDLER).
 * The functions are documented (kernel-doc) at their definitions in
 * uobj.c (uobj_report.c for the reports), the inline helpers below where
 * they are defined.
 *
 * Handles
 * -------
 * A handle is an index of @handles (1 to U32_MAX), whose entry is a
 * struct vd_uobj that tags the object with its type. Looking a handle up
 * with the wrong type finds nothing (-ENOENT); a handle of another file
 * cannot be named, since every file has its own table.
 *
 * Locking and lifetimes
 * ---------------------
 * @lock (a mutex) serialises creation, destruction and resizing, so that
 * a handle is named by exactly one destroy and an object's keys change
 * under it only. A handle is reserved before its object is created (CQs
 * and QPs report their handle in events) and published afterwards.
 * Every create command goes through one helper (vd_uobj_create()), which
 * reserves, lets the type's build function make the object, copies the
 * reply out and publishes. @lock is held to reserve and to publish, never
 * across the build or the copy: a registration pins pages, which may wait
 * for a page fault that never completes, and no command may hold up the
 * context's others or a report that way. A build holds what it uses by
 * reference (vd_uobj_hold()); a destroy releases its object after it has
 * dropped @lock. Commands that use an object without changing
 * the table (ARM_CQ, MODIFY_QP, QUERY_QP, DOORBELL, the CM's) take an
 * object reference under the xarray's spinlock (vd_uobj_get()) and run
 * without @lock; a concurrent destroy makes them fail through the
 * object's own checks.
 *
 * @mmap_keys holds one referenced struct vd_ring_mem per key (index <<
 * PAGE_SHIFT). ->mmap() runs with mmap_lock held and never takes @lock:
 * it takes a ring reference under the xarray's spinlock instead. A key disappears
 * when its object is destroyed (or its CQ resized); mappings made before
 * hold references of their own.
 *
 * CM ids
 * ------
 * Connection identifiers (cm.h) are entries of the table too, but not
 * reported; ucm.c adds, looks up and removes them (vd_uobj_cm_id_add() and
 * friends). An id may be added from the owner callback the CM runs in its
 * work item with the id's lock held: the id's lock comes before @lock,
 * never the other way round. vd_uobj_table_destroy() stops publication
 * first, then destroys the ids before the QPs they use.
 *
 * Reports (the netlink family's RES_GET and STATS_GET) read the table with
 * vd_uobj_table_walk() and vd_uobj_table_counts().
 */
#ifndef _VD_UOBJ_H
#define _VD_UOBJ_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/types.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

struct vd_async_queue;
struct vd_cm_id;
struct vd_device;
struct vd_qp;
struct vd_srq;
struct viaduct_create_srq;
struct vd_uctx;

/* Published objects of a table, by VIADUCT_RES_* - 1. */
#define VD_UOBJ_NR_TYPES	5

struct vd_uobj_table {
	struct mutex lock;		/* create, destroy, resize */
	struct xarray handles;		/* handle -> struct vd_uobj */
	struct xarray mmap_keys;	/* key >> PAGE_SHIFT -> vd_ring_mem */
	struct vd_async_queue *aq;
	bool cm_closed;			/* under @lock: no CM id is added */
	/* under @lock: handles reserved, objects not yet published */
	u32 creating[VD_UOBJ_NR_TYPES];
	/* for reports only: changed under @lock, read without it */
	atomic_long_t nr_objs[VD_UOBJ_NR_TYPES];
	atomic_long_t nr_mws;		/* memory windows, for their limit */
	atomic_long_t pinned_pages;
	atomic64_t doorbells;
};

/* One object as vd_uobj_table_walk() describes it. */
struct vd_uobj_info {
	u32 type;			/* VIADUCT_RES_* */
	u32 handle;
	u32 pd_handle;			/* MR, QP */
	u32 pdn;			/* PD, MR, QP */
	union {
		struct {
			u32 stag;
			u32 access;
			u64 length;
			u64 pinned_pages;
		} mr;
		struct {
			u32 entries;
		} cq;
		struct {
			u32 qpn;
			u32 state;
			u32 flags;
			u32 sq_depth;
			u32 rq_depth;
			u32 send_cq;	/* 0: private completion ring */
			u32 recv_cq;
			u32 srq;	/* 0: an RQ of its own */
		} qp;
		struct {
			u32 depth;
			u32 limit;	/* armed limit, 0: none */
			u32 qps;	/* QPs attached */
		} srq;
	};
};

struct vd_uobj_counts {
	u64 objs[VD_UOBJ_NR_TYPES];	/* by VIADUCT_RES_* - 1 */
	u64 pinned_pages;
	u64 doorbells;
};

int vd_uobj_table_init(struct vd_uobj_table *t);
void vd_uobj_table_destroy(struct vd_uobj_table *t);
void vd_uobj_device_removed(struct vd_uobj_table *t);

int vd_uobj_table_walk(struct vd_uobj_table *t, u32 *handle, u32 type,
		       int (*fn)(const struct vd_uobj_info *info, void *arg),
		       void *arg);
void vd_uobj_table_counts(struct vd_uobj_table *t,
			  struct vd_uobj_counts *counts);

/**
 * struct vd_uarg - a command's argument as the caller passed it
 * @ptr: the argument in user memory
 * @size: its size as the caller compiled it (the command number's size
 *        field); at least the command's first published size, and may be
 *        smaller or larger than the module's (see "Growing the ABI" in
 *        viaduct-abi.h)
 */
struct vd_uarg {
	void __user *ptr;
	size_t size;
};

/**
 * vd_uarg_reply() - copy a command's reply out to its caller
 * @ua: the caller's argument
 * @reply: the reply, @size bytes, the module's size of the structure
 * @size: sizeof() the reply structure
 *
 * Copies as much of the reply as the caller's structure holds: an older
 * binary gets the fields it knows, a newer one keeps the zero tail it
 * passed in.
 *
 * Return: 0, or -EFAULT.
 */
static inline int vd_uarg_reply(const struct vd_uarg *ua, const void *reply,
				size_t size)
{
	return copy_to_user(ua->ptr, reply, min(size, ua->size)) ? -EFAULT : 0;
}

long vd_uobj_give_fd(struct file *file, const struct vd_uarg *uarg,
		     void *karg, size_t size, s32 *fd);

/*
 * The commands, as uctx.c's table calls them (struct vd_ioctl, uctx.h):
 * resources here, the connection manager's in ucm.c.
 */
#define VD_IOCTL_HANDLER(name)						\
	long name(struct vd_uctx *ctx, struct vd_device *vd, void *karg,	\
		  const struct vd_uarg *uarg)

VD_IOCTL_HANDLER(vd_uobj_create_pd);
VD_IOCTL_HANDLER(vd_uobj_destroy_pd);
VD_IOCTL_HANDLER(vd_uobj_dereg_mr);

/* umr.c: the memory commands that create MRs (REG_MR, ALLOC_MR). */
struct vd_mr;
struct vd_pd;

struct vd_uobj_mr_req {
	struct vd_device *vd;
	u32 pd_handle;
	u32 *stag;		/* in the reply */
	struct vd_mr *(*make)(struct vd_device *vd, struct vd_pd *pd,
			      void *reply);
	bool window;		/* ALLOC_MW: a window's handle, not an MR's */
};

long vd_uobj_create_mr(struct vd_uctx *ctx, const struct vd_uobj_mr_req *req,
		       void *reply, u32 *handle, size_t size,
		       const struct vd_uarg *uarg);
VD_IOCTL_HANDLER(vd_umr_reg_mr);
VD_IOCTL_HANDLER(vd_umr_alloc_mr);
VD_IOCTL_HANDLER(vd_umr_modify_mr);
/* umw.c: memory windows (ALLOC_MW, BIND_MW); DEALLOC_MW is uobj.c's. */
VD_IOCTL_HANDLER(vd_umw_alloc_mw);
VD_IOCTL_HANDLER(vd_umw_bind_mw);
VD_IOCTL_HANDLER(vd_uobj_dealloc_mw);
struct vd_mr *vd_uobj_get_mw(struct vd_uobj_table *t, u32 handle);
VD_IOCTL_HANDLER(vd_uobj_create_cq);
VD_IOCTL_HANDLER(vd_uobj_resize_cq);
VD_IOCTL_HANDLER(vd_uobj_destroy_cq);
VD_IOCTL_HANDLER(vd_uobj_arm_cq);
VD_IOCTL_HANDLER(vd_uobj_create_qp);
VD_IOCTL_HANDLER(vd_uobj_modify_qp);
VD_IOCTL_HANDLER(vd_uobj_query_qp);
VD_IOCTL_HANDLER(vd_uobj_destroy_qp);
VD_IOCTL_HANDLER(vd_uobj_doorbell);
VD_IOCTL_HANDLER(vd_uobj_create_comp_channel);
/* The SRQ commands, in usrq.c. */
VD_IOCTL_HANDLER(vd_usrq_create);
VD_IOCTL_HANDLER(vd_usrq_modify);
VD_IOCTL_HANDLER(vd_usrq_query);
VD_IOCTL_HANDLER(vd_usrq_destroy);
VD_IOCTL_HANDLER(vd_ucm_create_channel);
VD_IOCTL_HANDLER(vd_ucm_create_id);
VD_IOCTL_HANDLER(vd_ucm_destroy_id);
VD_IOCTL_HANDLER(vd_ucm_listen);
VD_IOCTL_HANDLER(vd_ucm_connect);
VD_IOCTL_HANDLER(vd_ucm_accept);
VD_IOCTL_HANDLER(vd_ucm_reject);
VD_IOCTL_HANDLER(vd_ucm_disconnect);
VD_IOCTL_HANDLER(vd_ucm_convert);
VD_IOCTL_HANDLER(vd_ucm_ack);
VD_IOCTL_HANDLER(vd_ucm_handoff);

/* For ucm.c (see "CM ids" above). */
struct vd_qp *vd_uobj_get_qp(struct vd_uobj_table *t, u32 handle);
/* For usrq.c: CREATE_SRQ's and DESTROY_SRQ's table work, and lookup. */
long vd_uobj_add_srq(struct vd_uobj_table *t, struct viaduct_create_srq *a,
		     const struct vd_uarg *uarg);
struct vd_srq *vd_uobj_get_srq(struct vd_uobj_table *t, u32 handle);
int vd_uobj_remove_srq(struct vd_uobj_table *t, u32 handle);
int vd_uobj_cm_id_add(struct vd_uobj_table *t, struct vd_cm_id *id,
		      u32 *handle);
struct vd_cm_id *vd_uobj_cm_id_get(struct vd_uobj_table *t, u32 handle);
struct vd_cm_id *vd_uobj_cm_id_remove(struct vd_uobj_table *t, u32 handle,
				      bool force);
int vd_uobj_mmap(struct vd_uctx *ctx, struct vm_area_struct *vma);
ssize_t vd_uobj_read(struct vd_uctx *ctx, char __user *buf, size_t len,
		     bool nonblock);
__poll_t vd_uobj_poll(struct vd_uctx *ctx, struct file *file,
		      poll_table *wait);

#endif /* _VD_UOBJ_H */
