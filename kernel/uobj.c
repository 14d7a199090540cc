// SPDX-License-Identifier: GPL-2.0
/*
 * The resource commands of a user context: handle table, mmap keys and the
 * asynchronous event queue. The commands of the CQs and QPs are in ucq.c
 * and uqp.c, over the helpers uobj_priv.h shares. See uobj.h for the
 * locking and the lifetimes; the functions other than the commands have
 * kernel-doc at their definitions.
 *
 * A create command reserves its handle, builds the object, enters its
 * rings as mmap keys and copies the reply out before the handle is
 * published; if the reply cannot be written, the object is destroyed again
 * while nobody else can have named it.
 */
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include <viaduct/viaduct-nl.h>

#include "cm.h"
#include "cq.h"
#include "device.h"
#include "event.h"
#include "limits.h"
#include "mem.h"
#include "pd.h"
#include "qp.h"
#include "ring.h"
#include "srq.h"
#include "tpt.h"
#include "uctx.h"
#include "uobj_priv.h"

/* reports name the types VIADUCT_RES_* = enum vd_uobj_type + 1 */
static_assert(VD_UOBJ_PD + 1 == VIADUCT_RES_PD);
static_assert(VD_UOBJ_QP + 1 == VIADUCT_RES_QP);
static_assert(VD_UOBJ_SRQ + 1 == VIADUCT_RES_SRQ);
static_assert(VD_UOBJ_SRQ + 1 == VD_UOBJ_NR_TYPES);

/**
 * vd_uobj_table_init() - an empty table and the context's async queue
 * @t: the table, embedded in the context
 *
 * Context: Process context, at open().
 * Return: 0 or -ENOMEM.
 */
int vd_uobj_table_init(struct vd_uobj_table *t)
{
	t->aq = vd_async_queue_create();
	if (IS_ERR(t->aq))
		return PTR_ERR(t->aq);
	mutex_init(&t->lock);
	xa_init_flags(&t->handles, XA_FLAGS_ALLOC1);
	xa_init_flags(&t->mmap_keys, XA_FLAGS_ALLOC1);
	return 0;
}

/**
 * vd_uobj_pinned_pages() - the pages an entry's object pins
 * @u: the entry
 *
 * Return: the pages of an MR's user memory, else 0.
 */
unsigned long vd_uobj_pinned_pages(const struct vd_uobj *u)
{
	if (u->type != VD_UOBJ_MR || !u->mr->umem)
		return 0;
	return u->mr->umem->npages;
}

/* Counts @u in (@sign 1) or out (-1) of the reported numbers. */
static void uobj_account(struct vd_uobj_table *t, const struct vd_uobj *u,
			 long sign)
{
	lockdep_assert_held(&t->lock);
	/* a window counts from its reservation on (vd_uobj_create()) */
	if (u->type == VD_UOBJ_MW && sign < 0)
		atomic_long_dec(&t->nr_mws);
	if (u->type >= VD_UOBJ_NR_TYPES)
		return;
	atomic_long_add(sign, &t->nr_objs[u->type]);
	atomic_long_add(sign * (long)vd_uobj_pinned_pages(u), &t->pinned_pages);
}

/**
 * vd_uobj_add_key() - enter a ring as a new mmap key of an entry
 * @t: the table, locked
 * @u: the entry
 * @mem: the ring; the key takes a reference of its own
 * @key: set to the key (the mmap offset)
 *
 * Return: 0; -EINVAL if @u has all its keys; -ENOSPC; -ENOMEM.
 */
int vd_uobj_add_key(struct vd_uobj_table *t, struct vd_uobj *u,
		    struct vd_ring_mem *mem, __u64 *key)
{
	u32 idx;
	int ret;

	if (WARN_ON_ONCE(u->nkeys >= VD_UOBJ_MAX_KEYS))
		return -EINVAL;
	ret = xa_alloc(&t->mmap_keys, &idx, mem, VD_MMAP_KEY_LIMIT,
		       GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -ENOSPC : ret;
	vd_ring_mem_get(mem);
	u->keys[u->nkeys++] = idx;
	*key = (u64)idx << PAGE_SHIFT;
	return 0;
}

/**
 * vd_uobj_drop_key() - forget an mmap key
 * @t: the table, locked
 * @idx: the key's index in @t->mmap_keys
 */
void vd_uobj_drop_key(struct vd_uobj_table *t, u32 idx)
{
	/* existing mappings hold references of their own */
	vd_ring_mem_put(xa_erase(&t->mmap_keys, idx));
}

static void uobj_drop_keys(struct vd_uobj_table *t, struct vd_uobj *u)
{
	while (u->nkeys)
		vd_uobj_drop_key(t, u->keys[--u->nkeys]);
}

/*
 * Destroys a QP and invalidates the type-2 windows bound to it, so that
 * none opens to a later QP that gets its number: before, so that no
 * window is usable while the QP goes, and after, for a bind the QP's
 * transmit work was still executing.
 */
static void uobj_destroy_qp(struct vd_qp *qp)
{
	struct vd_tpt *tpt = &qp->dev->tpt;
	u32 qpn = qp->qpn;

	vd_mw_qp_gone(tpt, qpn);
	vd_qp_destroy(qp);
	vd_mw_qp_gone(tpt, qpn);
}

/*
 * Releases the object of @u, whose handle is no longer in the table and
 * whose PD or CQ was marked destroyed, and frees @u. Process context.
 */
static void uobj_release(struct vd_uobj_table *t, struct vd_uobj *u)
{
	uobj_drop_keys(t, u);
	switch (u->type) {
	case VD_UOBJ_PD:
		vd_pd_put(u->pd);
		break;
	case VD_UOBJ_MR:
	case VD_UOBJ_MW:
		vd_mr_deregister(u->mr);
		break;
	case VD_UOBJ_CQ:
		vd_cq_put(u->cq);
		break;
	case VD_UOBJ_QP:
		uobj_destroy_qp(u->qp);
		break;
	case VD_UOBJ_CM_ID:
		/* never with @t->lock held: the id's lock comes first */
		vd_cm_id_destroy(u->cm_id);
		break;
	case VD_UOBJ_SRQ:
		vd_srq_destroy(u->srq);
		break;
	}
	kfree(u);
}

/*
 * Marks a PD or CQ destroyed: -EBUSY while it has users; an MR: -EBUSY
 * while windows are bound to it.
 */
static int uobj_try_destroy(struct vd_uobj *u)
{
	switch (u->type) {
	case VD_UOBJ_PD:
		return vd_pd_try_destroy(u->pd);
	case VD_UOBJ_MR:
		return vd_mr_refuse_binds(u->mr);
	case VD_UOBJ_CQ:
		return vd_cq_try_destroy(u->cq);
	case VD_UOBJ_SRQ:
		return vd_srq_try_destroy(u->srq);
	default:
		return 0;
	}
}

/*
 * Destroys the object of an entry that nobody else can name any more: its
 * users (MRs and QPs for a PD, QPs for a CQ) were destroyed before it.
 */
static void uobj_destroy(struct vd_uobj_table *t, struct vd_uobj *u)
{
	WARN_ON_ONCE(uobj_try_destroy(u));
	uobj_release(t, u);
}

static void uobj_destroy_type(struct vd_uobj_table *t, enum vd_uobj_type type)
{
	struct vd_uobj *u;
	unsigned long h;

	xa_for_each(&t->handles, h, u) {
		if (u->type != type)
			continue;
		xa_erase(&t->handles, h);
		uobj_destroy(t, u);
	}
}

/**
 * vd_uobj_table_destroy() - destroy everything a table still names
 * @t: the table
 *
 * At release(), while the device is still referenced: stops publishing CM
 * ids, destroys the CM ids, QPs, SRQs, CQs, MRs and PDs still named by
 * handles, in that order (users before what they use), then forgets the
 * mmap keys and drops the async queue.
 *
 * Context: Process context.
 */
void vd_uobj_table_destroy(struct vd_uobj_table *t)
{
	struct vd_ring_mem *mem;
	unsigned long idx;

	/*
	 * No CM id is published any more (a listener's new child fails and
	 * goes away); then the ids close their connections and let go of
	 * their QPs. Users before what they use.
	 */
	mutex_lock(&t->lock);
	t->cm_closed = true;
	mutex_unlock(&t->lock);
	uobj_destroy_type(t, VD_UOBJ_CM_ID);
	uobj_destroy_type(t, VD_UOBJ_QP);
	uobj_destroy_type(t, VD_UOBJ_SRQ);
	uobj_destroy_type(t, VD_UOBJ_CQ);
	/* windows before the regions they are bound to */
	uobj_destroy_type(t, VD_UOBJ_MW);
	uobj_destroy_type(t, VD_UOBJ_MR);
	uobj_destroy_type(t, VD_UOBJ_PD);
	WARN_ON_ONCE(!xa_empty(&t->handles));
	xa_destroy(&t->handles);

	/* every key belongs to an object, so this finds none */
	xa_for_each(&t->mmap_keys, idx, mem)
		vd_ring_mem_put(mem);
	xa_destroy(&t->mmap_keys);

	vd_async_queue_put(t->aq);
	mutex_destroy(&t->lock);
}

/**
 * vd_uobj_device_removed() - stop what a table's objects do on a removed device
 * @t: the table of a context whose selected device was removed
 *
 * Every CM id ends what it does and reports DEVICE_REMOVED
 * (vd_cm_id_device_removed()), then every QP enters Error, its WRs
 * flushed. The objects stay for their owner to destroy. The QPs are walked
 * under @lock, so that none is half created meanwhile.
 *
 * Context: Process context, no lock of the table held (an id's lock comes
 * before @lock).
 */
void vd_uobj_device_removed(struct vd_uobj_table *t)
{
	struct vd_cm_id *id;
	struct vd_uobj *u;
	unsigned long h;

	xa_for_each(&t->handles, h, u) {
		/* by handle, referenced: the id may be destroyed meanwhile */
		id = vd_uobj_get(t, h, VD_UOBJ_CM_ID);
		if (!id)
			continue;
		vd_cm_id_device_removed(id);
		vd_cm_id_put(id);
	}
	mutex_lock(&t->lock);
	xa_for_each(&t->handles, h, u)
		if (u->type == VD_UOBJ_QP)
			vd_qp_enter_error(u->qp, 0, 0);
	mutex_unlock(&t->lock);
}

/**
 * vd_uobj_find() - the entry a handle names
 * @t: the table, locked
 * @handle: the handle
 * @type: the type the entry must have
 *
 * Return: the entry of @handle if it has @type, else NULL.
 */
struct vd_uobj *vd_uobj_find(struct vd_uobj_table *t, u32 handle,
			     enum vd_uobj_type type)
{
	struct vd_uobj *u;

	lockdep_assert_held(&t->lock);
	u = xa_load(&t->handles, handle);
	return u && u->type == type ? u : NULL;
}

/**
 * vd_uobj_hold() - a PD, CQ or SRQ for a create command's build
 * @t: the table, not locked
 * @handle: the handle
 * @type: VD_UOBJ_PD, VD_UOBJ_CQ or VD_UOBJ_SRQ
 *
 * A build runs without the table's lock (vd_uobj_create()): it holds what
 * the new object will use by reference, memory only. The new object
 * attaches to it (vd_pd_attach() and the like), which fails if it was
 * destroyed meanwhile.
 *
 * Context: Process context; takes the table's lock.
 * Return: the object, referenced (the caller puts it), or NULL.
 */
void *vd_uobj_hold(struct vd_uobj_table *t, u32 handle, enum vd_uobj_type type)
{
	struct vd_uobj *u;
	void *obj = NULL;

	mutex_lock(&t->lock);
	u = vd_uobj_find(t, handle, type);
	if (u && type == VD_UOBJ_PD)
		obj = vd_pd_get(u->pd);
	else if (u && type == VD_UOBJ_CQ)
		obj = vd_cq_get(u->cq);
	else if (u && type == VD_UOBJ_SRQ)
		obj = vd_srq_get(u->srq);
	mutex_unlock(&t->lock);
	return obj;
}

/*
 * Reserves a handle for a new entry of @type; lookups do not find it until
 * uobj_publish().
 */
static struct vd_uobj *uobj_reserve(struct vd_uobj_table *t,
				    enum vd_uobj_type type, u32 *handle)
{
	struct vd_uobj *u;
	int ret;

	lockdep_assert_held(&t->lock);
	u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
	if (!u)
		return ERR_PTR(-ENOMEM);
	u->type = type;
	ret = xa_alloc(&t->handles, handle, NULL, XA_LIMIT(1, U32_MAX),
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		kfree(u);
		return ERR_PTR(ret == -EBUSY ? -ENOSPC : ret);
	}
	return u;
}

static void uobj_publish(struct vd_uobj_table *t, struct vd_uobj *u,
			 u32 handle)
{
	/* the slot exists since the reservation: this cannot fail */
	WARN_ON_ONCE(xa_is_err(xa_store(&t->handles, handle, u, GFP_KERNEL)));
	uobj_account(t, u, 1);
}

/* DESTROY_PD, DEREG_MR, DESTROY_CQ, DESTROY_QP, DEALLOC_MW */
static int uobj_remove(struct vd_uobj_table *t, u32 handle,
		       enum vd_uobj_type type)
{
	struct vd_uobj *u;
	bool events;
	int ret;

	mutex_lock(&t->lock);
	ret = -ENOENT;
	u = vd_uobj_find(t, handle, type);
	if (!u)
		goto out;
	ret = uobj_try_destroy(u);
	if (ret)
		goto out;
	/*
	 * The handle names nothing (a NULL entry) but stays reserved until
	 * the object's unread events are gone: read later, they would be
	 * taken for events of the next object that gets the handle.
	 */
	xa_store(&t->handles, handle, NULL, GFP_KERNEL);
	uobj_account(t, u, -1);
out:
	mutex_unlock(&t->lock);
	if (ret)
		return ret;
	/* nobody can name it any more: released without the lock */
	events = u->type == VD_UOBJ_QP || u->type == VD_UOBJ_CQ ||
		 u->type == VD_UOBJ_SRQ;
	uobj_release(t, u);
	/* it raises no more events: forget those not read yet */
	if (events)
		vd_async_queue_forget(t->aq, handle);
	xa_erase(&t->handles, handle);
	return 0;
}

/**
 * vd_uobj_create() - the create commands' one helper
 * @t: the table
 * @type: the type of the new object
 * @build: creates the object (and enters its mmap keys) without the
 *         table's lock, taking what it uses with vd_uobj_hold(); sets the
 *         entry's object only once it exists
 * @arg: passed to @build
 * @reply: the reply, passed to @build
 * @handle: a field of @reply, set to the new handle
 * @size: bytes of @reply
 * @uarg: the caller's argument
 *
 * Reserves a handle for an object of @type, lets @build make the object,
 * copies the reply to @uarg and publishes the handle only then; whatever
 * @build did is undone if it or the copy fails. The lock is held only to
 * reserve and to publish: a registration pins pages, which may wait for a
 * page fault as long as the file behind the mapping pleases (a FUSE
 * daemon that does not answer), and the reply may fault the same way;
 * neither may hold up the context's other commands or a report.
 *
 * Context: Process context.
 * Return: 0; the limit's error; -ENOSPC or -ENOMEM for the handle; the
 * error of @build; -EFAULT.
 */
long vd_uobj_create(struct vd_uobj_table *t, enum vd_uobj_type type,
		    int (*build)(struct vd_uobj_table *t, struct vd_uobj *u,
				 void *reply, void *arg),
		    void *arg, void *reply, u32 *handle, size_t size,
		    const struct vd_uarg *uarg)
{
	struct vd_uobj *u;
	long ret;

	mutex_lock(&t->lock);
	/*
	 * The limits are per reported type (limits.c; CM ids have none) and
	 * count the creations in progress, which run without the lock.
	 */
	if (type < VD_UOBJ_NR_TYPES) {
		ret = vd_limit_objs(type + 1,
				    atomic_long_read(&t->nr_objs[type]) +
				    t->creating[type]);
		if (ret)
			goto out_unlock;
	}
	/* windows count from their reservation, creations in progress too */
	if (type == VD_UOBJ_MW) {
		ret = vd_limit_mws(atomic_long_read(&t->nr_mws));
		if (ret)
			goto out_unlock;
	}
	u = uobj_reserve(t, type, handle);
	if (IS_ERR(u)) {
		ret = PTR_ERR(u);
		goto out_unlock;
	}
	if (type < VD_UOBJ_NR_TYPES)
		t->creating[type]++;
	if (type == VD_UOBJ_MW)
		atomic_long_inc(&t->nr_mws);
	mutex_unlock(&t->lock);

	/* nobody can name the handle yet */
	ret = build(t, u, reply, arg);
	if (!ret && vd_uarg_reply(uarg, reply, size))
		ret = -EFAULT;

	mutex_lock(&t->lock);
	if (type < VD_UOBJ_NR_TYPES)
		t->creating[type]--;
	if (ret && type == VD_UOBJ_MW)
		atomic_long_dec(&t->nr_mws);
	if (!ret)
		uobj_publish(t, u, *handle);
	else
		xa_erase(&t->handles, *handle);
	mutex_unlock(&t->lock);
	/* a failed one's object, which nobody could name, goes now */
	if (ret && u->obj)
		uobj_destroy(t, u);
	else if (ret)
		kfree(u);
	return ret;

out_unlock:
	mutex_unlock(&t->lock);
	return ret;
}

/**
 * vd_uobj_get() - the object a handle names, referenced
 * @t: the table
 * @handle: the handle
 * @type: VD_UOBJ_CQ, VD_UOBJ_QP, VD_UOBJ_CM_ID, VD_UOBJ_SRQ or VD_UOBJ_MW
 *
 * For the commands that do not change the table.
 *
 * Context: Any context; takes the xarray's spinlock.
 * Return: the object with a reference of the caller's, or NULL.
 */
void *vd_uobj_get(struct vd_uobj_table *t, u32 handle, enum vd_uobj_type type)
{
	void *obj = NULL;
	struct vd_uobj *u;

	xa_lock(&t->handles);
	u = xa_load(&t->handles, handle);
	if (u && u->type == type) {
		if (type == VD_UOBJ_CQ)
			obj = vd_cq_get(u->cq);
		else if (type == VD_UOBJ_QP)
			obj = vd_qp_get(u->qp);
		else if (type == VD_UOBJ_CM_ID)
			obj = vd_cm_id_get(u->cm_id);
		else if (type == VD_UOBJ_SRQ)
			obj = vd_srq_get(u->srq);
		else if (type == VD_UOBJ_MW)
			obj = vd_mr_get(u->mr);
	}
	xa_unlock(&t->handles);
	return obj;
}

/* DESTROY_PD, DEREG_MR, DESTROY_CQ, DESTROY_QP, DEALLOC_MW */
static long uobj_destroy_cmd(struct vd_uctx *ctx, void *karg,
			     enum vd_uobj_type type)
{
	struct viaduct_handle *h = karg;

	if (h->reserved)
		return -EINVAL;
	return uobj_remove(&ctx->objs, h->handle, type);
}

long vd_uobj_destroy_pd(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
			const struct vd_uarg *uarg)
{
	return uobj_destroy_cmd(ctx, karg, VD_UOBJ_PD);
}

long vd_uobj_dereg_mr(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		      const struct vd_uarg *uarg)
{
	return uobj_destroy_cmd(ctx, karg, VD_UOBJ_MR);
}

long vd_uobj_dealloc_mw(struct vd_uctx *ctx, struct vd_device *vd,
			void *karg, const struct vd_uarg *uarg)
{
	return uobj_destroy_cmd(ctx, karg, VD_UOBJ_MW);
}

/**
 * vd_uobj_get_mw() - the window a handle names, referenced
 * @t: the table
 * @handle: the window's handle (ALLOC_MW)
 *
 * For BIND_MW (umw.c), which binds without the table's lock.
 *
 * Context: Any context.
 * Return: the window's slot with a reference (vd_mr_put()), or NULL.
 */
struct vd_mr *vd_uobj_get_mw(struct vd_uobj_table *t, u32 handle)
{
	return vd_uobj_get(t, handle, VD_UOBJ_MW);
}

long vd_uobj_destroy_cq(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
			const struct vd_uarg *uarg)
{
	return uobj_destroy_cmd(ctx, karg, VD_UOBJ_CQ);
}

long vd_uobj_destroy_qp(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
			const struct vd_uarg *uarg)
{
	return uobj_destroy_cmd(ctx, karg, VD_UOBJ_QP);
}

static int build_pd(struct vd_uobj_table *t, struct vd_uobj *u, void *reply,
		    void *arg)
{
	struct vd_device *vd = arg;
	struct vd_pd *pd = vd_pd_create(vd, vd->counts);

	if (IS_ERR(pd))
		return PTR_ERR(pd);
	u->pd = pd;
	return 0;
}

long vd_uobj_create_pd(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		       const struct vd_uarg *uarg)
{
	struct viaduct_handle *h = karg;

	memset(h, 0, sizeof(*h));
	return vd_uobj_create(&ctx->objs, VD_UOBJ_PD, build_pd, vd, h,
			      &h->handle, sizeof(*h), uarg);
}

/**
 * vd_uobj_remove_srq() - DESTROY_SRQ's table work, for usrq.c
 * @t: the table
 * @handle: the SRQ's handle
 *
 * Context: Process context.
 * Return: 0; -ENOENT if @handle names no SRQ; -EBUSY while QPs use it.
 */
int vd_uobj_remove_srq(struct vd_uobj_table *t, u32 handle)
{
	return uobj_remove(t, handle, VD_UOBJ_SRQ);
}

/**
 * vd_uobj_give_fd() - hand a new file to the process with a reply
 * @file: the file, or its ERR_PTR(); consumed
 * @uarg: the caller's argument
 * @karg: the reply
 * @size: the module's size of the reply
 * @fd: a field of @karg, set to the descriptor
 *
 * Reserves a descriptor (O_CLOEXEC), stores it in *@fd, copies the reply
 * to @uarg and only then installs the file, so that a faulting copy leaves
 * no descriptor behind.
 *
 * Context: Process context.
 * Return: 0; the error of @file; the error of reserving a descriptor;
 * -EFAULT.
 */
long vd_uobj_give_fd(struct file *file, const struct vd_uarg *uarg,
		     void *karg, size_t size, s32 *fd)
{
	int nr;

	if (IS_ERR(file))
		return PTR_ERR(file);
	nr = get_unused_fd_flags(O_CLOEXEC);
	if (nr < 0) {
		fput(file);
		return nr;
	}
	*fd = nr;
	if (vd_uarg_reply(uarg, karg, size)) {
		put_unused_fd(nr);
		fput(file);
		return -EFAULT;
	}
	/* visible to the process only now: nothing can fail any more */
	fd_install(nr, file);
	return 0;
}

long vd_uobj_create_comp_channel(struct vd_uctx *ctx, struct vd_device *vd,
				 void *karg, const struct vd_uarg *uarg)
{
	struct viaduct_comp_channel *c = karg;

	memset(c, 0, sizeof(*c));
	return vd_uobj_give_fd(vd_comp_channel_create_file(), uarg, c,
			       sizeof(*c), &c->fd);
}

/* --- CM ids (ucm.c) ------------------------------------------------ */

/**
 * vd_uobj_get_qp() - the QP a handle names, for ucm.c
 * @t: the table
 * @handle: the handle
 *
 * Context: Any context; takes the xarray's spinlock.
 * Return: the QP, referenced, or NULL.
 */
struct vd_qp *vd_uobj_get_qp(struct vd_uobj_table *t, u32 handle)
{
	return vd_uobj_get(t, handle, VD_UOBJ_QP);
}

/* Enters @id under a new handle, taking over the caller's reference. */
static int uobj_cm_id_add(struct vd_uobj_table *t, struct vd_cm_id *id,
			  u32 *handle)
{
	struct vd_uobj *u;

	lockdep_assert_held(&t->lock);
	if (t->cm_closed)
		return -ENODEV;
	u = uobj_reserve(t, VD_UOBJ_CM_ID, handle);
	if (IS_ERR(u))
		return PTR_ERR(u);
	u->cm_id = id;
	vd_cm_id_set_handle(id, *handle);
	uobj_publish(t, u, *handle);
	return 0;
}

/**
 * vd_uobj_cm_id_add() - publish a CM id under a new handle
 * @t: the table
 * @id: the id; the table takes over the caller's reference on success
 * @handle: set to the new handle, which the id also learns
 *
 * For ucm.c's CM_CREATE_ID, and for the owner callback it gives the CM
 * for a listener's new connection, which runs in the CM's work item with
 * the id's lock held (the id's lock comes before @lock).
 *
 * Context: Process context.
 * Return: 0; -ENODEV once vd_uobj_table_destroy() began; -ENOSPC when the
 * handles are exhausted; -ENOMEM.
 */
int vd_uobj_cm_id_add(struct vd_uobj_table *t, struct vd_cm_id *id,
		      u32 *handle)
{
	int ret;

	mutex_lock(&t->lock);
	ret = uobj_cm_id_add(t, id, handle);
	mutex_unlock(&t->lock);
	return ret;
}

/**
 * vd_uobj_cm_id_get() - the CM id a handle names
 * @t: the table
 * @handle: the handle
 *
 * Context: Any context; takes the xarray's spinlock.
 * Return: the id, referenced, or NULL.
 */
struct vd_cm_id *vd_uobj_cm_id_get(struct vd_uobj_table *t, u32 handle)
{
	return vd_uobj_get(t, handle, VD_UOBJ_CM_ID);
}

/**
 * vd_uobj_cm_id_remove() - erase a CM id's handle
 * @t: the table
 * @handle: the handle
 * @force: erase it even while it has unacknowledged events
 *
 * Hands the table's reference to the caller, which destroys the id after
 * @lock is dropped.
 *
 * Context: Process context.
 * Return: the id; ERR_PTR(-ENOENT) if @handle names no CM id;
 * ERR_PTR(-EBUSY) while it has unacknowledged events, unless @force.
 */
struct vd_cm_id *vd_uobj_cm_id_remove(struct vd_uobj_table *t, u32 handle,
				      bool force)
{
	struct vd_cm_id *id;
	struct vd_uobj *u;

	mutex_lock(&t->lock);
	u = vd_uobj_find(t, handle, VD_UOBJ_CM_ID);
	if (!u) {
		id = ERR_PTR(-ENOENT);
		goto out;
	}
	id = u->cm_id;
	if (!force && vd_cm_id_busy(id)) {
		id = ERR_PTR(-EBUSY);
		goto out;
	}
	xa_erase(&t->handles, handle);
	kfree(u);
out:
	mutex_unlock(&t->lock);
	return id;
}

/**
 * vd_uobj_mmap() - the ->mmap() of the context file
 * @ctx: the context
 * @vma: the mapping; its offset is an mmap key
 *
 * Runs with mmap_lock held and never takes @lock: it takes a ring
 * reference under the xarray's spinlock instead.
 *
 * Context: Process context, mmap_lock held.
 * Return: 0; -EINVAL for an unknown key or a mapping larger than the ring;
 * the error of vd_ring_mem_mmap().
 */
int vd_uobj_mmap(struct vd_uctx *ctx, struct vm_area_struct *vma)
{
	struct vd_uobj_table *t = &ctx->objs;
	struct vd_ring_mem *mem;
	int ret;

	/* a ring reference of our own, without @t->lock */
	xa_lock(&t->mmap_keys);
	mem = xa_load(&t->mmap_keys, vma->vm_pgoff);
	if (mem)
		vd_ring_mem_get(mem);
	xa_unlock(&t->mmap_keys);
	if (!mem)
		return -EINVAL;

	ret = -EINVAL;
	if (vma->vm_end - vma->vm_start <= mem->size)
		ret = vd_ring_mem_mmap(mem, vma);
	vd_ring_mem_put(mem);
	return ret;
}

/**
 * vd_uobj_read() - the ->read() of the context file: its async events
 * @ctx: the context
 * @buf: the user's buffer
 * @len: its size
 * @nonblock: the file is O_NONBLOCK
 *
 * Context: Process context.
 * Return: as vd_async_queue_read().
 */
ssize_t vd_uobj_read(struct vd_uctx *ctx, char __user *buf, size_t len,
		     bool nonblock)
{
	return vd_async_queue_read(ctx->objs.aq, buf, len, nonblock);
}

/**
 * vd_uobj_poll() - the ->poll() of the context file: its async events
 * @ctx: the context
 * @file: the file
 * @wait: the poll table
 *
 * Context: Process context.
 * Return: as vd_async_queue_poll().
 */
__poll_t vd_uobj_poll(struct vd_uctx *ctx, struct file *file,
		      poll_table *wait)
{
	return vd_async_queue_poll(ctx->objs.aq, file, wait);
}
