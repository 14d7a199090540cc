// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/viaduct: one context per open file, and the ioctl dispatch. uctx.h
 * has what a context holds; each exported function has kernel-doc at its
 * definition.
 *
 * Arguments are copied in whole before anything is looked at and copied
 * out only after the work is done; nothing is copied to or from user
 * memory with a lock of the device table held.
 */
#include <linux/atomic.h>
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "device.h"
#include "event.h"
#include "stats.h"
#include "uctx.h"
#include "zcopy.h"

/*
 * Every open context by id, for reports. Entries are added at the end of
 * open() and removed at the start of release(); a report takes a reference
 * on what it finds under RCU (vd_uctx_walk()). No lock here is ever held
 * while a context is visited.
 */
static DEFINE_XARRAY_ALLOC1(vd_uctxs);
static u32 vd_uctx_next_id;	/* under the xarray's lock */

static void vd_uctx_free(struct vd_uctx *ctx)
{
	if (ctx->dev)
		vd_device_put(ctx->dev);
	put_pid(ctx->owner);
	put_net_track(ctx->net, &ctx->net_tracker);
	mutex_destroy(&ctx->lock);
	/* a report may still be looking at it under RCU */
	kfree_rcu(ctx, rcu);
}

static void vd_uctx_put(struct vd_uctx *ctx)
{
	if (refcount_dec_and_test(&ctx->ref))
		vd_uctx_free(ctx);
}

/* The selected device if it is still there, else NULL; no reference taken. */
static struct vd_device *vd_uctx_device(struct vd_uctx *ctx)
{
	/* pairs with smp_store_release() in ioctl_select_device() */
	struct vd_device *vd = smp_load_acquire(&ctx->dev);

	if (unlikely(!vd || !vd_device_alive(vd)))
		return NULL;
	return vd;
}

static VD_IOCTL_HANDLER(ioctl_get_abi_version)
{
	struct viaduct_abi_version *v = karg;

	memset(v, 0, sizeof(*v));
	v->abi_version = VIADUCT_ABI_VERSION;
	return vd_uarg_reply(uarg, v, sizeof(*v));
}

static VD_IOCTL_HANDLER(ioctl_list_devices)
{
	struct viaduct_list_devices __user *ulist = uarg->ptr;
	struct viaduct_list_devices *list = karg;
	struct viaduct_device_entry *ents;
	long ret;
	u32 n;

	ret = vd_device_list(ctx->net, list->capacity, &ents, &n);
	if (ret < 0)
		return ret;
	list->count = ret;

	ret = 0;
	if (n && copy_to_user(u64_to_user_ptr(list->entries), ents,
			      array_size(n, sizeof(*ents))))
		ret = -EFAULT;
	else if (put_user(list->count, &ulist->count))
		ret = -EFAULT;
	kvfree(ents);
	return ret;
}

static VD_IOCTL_HANDLER(ioctl_select_device)
{
	struct viaduct_select_device *sel = karg;
	long ret;

	if (sel->reserved)
		return -EINVAL;
	if (strnlen(sel->name, sizeof(sel->name)) == sizeof(sel->name))
		return -EINVAL;

	mutex_lock(&ctx->lock);
	ret = -EBUSY;
	if (ctx->dev)
		goto out_unlock;
	if (sel->name[0])
		vd = vd_device_get_by_name(ctx->net, sel->name);
	else
		vd = vd_device_get_by_index(ctx->net, sel->index);
	ret = -ENODEV;
	if (!vd)
		goto out_unlock;
	/* removal stops what the context does on the device */
	ret = vd_device_client_add(vd, &ctx->dev_client);
	if (ret) {
		vd_device_put(vd);
		goto out_unlock;
	}
	/* The context's reference, dropped in release(). */
	vd_device_ctx_attach(vd);
	/* publishes the device; pairs with smp_load_acquire() in vd_uctx_device() */
	smp_store_release(&ctx->dev, vd);
	vd_dbg_ctx(ctx, "selected %s(%u)\n", vd->name, vd->index);
	ret = 0;
out_unlock:
	mutex_unlock(&ctx->lock);
	return ret;
}

static VD_IOCTL_HANDLER(ioctl_query_device)
{
	struct viaduct_device_attr *attr = karg;
	long ret;

	if (attr->index == VIADUCT_INDEX_SELECTED) {
		/* the context's own reference keeps it */
		vd = vd_uctx_device(ctx);
		if (!vd)
			return -ENODEV;
		ret = vd_device_query(vd, attr);
	} else {
		vd = vd_device_get_by_index(ctx->net, attr->index);
		if (!vd)
			return -ENODEV;
		ret = vd_device_query(vd, attr);
		vd_device_put(vd);
	}
	if (ret)
		return ret;
	attr->caps = VIADUCT_DEV_CAP_POLLED_DOORBELL | VIADUCT_DEV_CAP_IMM_DATA |
		     VIADUCT_DEV_CAP_CONVERT_SOCKET | VIADUCT_DEV_CAP_P2P |
		     VIADUCT_DEV_CAP_SEND_INV | VIADUCT_DEV_CAP_FAST_REG |
		     VIADUCT_DEV_CAP_LOCAL_FENCE | VIADUCT_DEV_CAP_SRQ |
		     VIADUCT_DEV_CAP_MW | VIADUCT_DEV_CAP_MODIFY_MR |
		     VIADUCT_DEV_CAP_CM_HANDOFF | VIADUCT_DEV_CAP_CONVERT_DATA |
		     VIADUCT_DEV_CAP_CQ_THRESHOLD | VIADUCT_DEV_CAP_RING_DEPTH;
	if (vd_zc_min())
		attr->caps |= VIADUCT_DEV_CAP_ZERO_COPY;
	return vd_uarg_reply(uarg, attr, sizeof(*attr));
}

/* The command needs the selected device, live: -ENODEV otherwise. */
#define VD_IOCTL_DEV		BIT(0)
/*
 * With VD_IOCTL_DEV: the command also works once the selected device was
 * removed (destroying, acknowledging, querying), so that a program can
 * tear down what it built without closing the file.
 */
#define VD_IOCTL_GONE		BIT(1)
#define VD_IOCTL_DEV_GONE	(VD_IOCTL_DEV | VD_IOCTL_GONE)

struct vd_ioctl {
	unsigned int cmd;	/* the module's command: its size is ours */
	u16 min_size;		/* the smallest size a caller may pass */
	u32 flags;		/* VD_IOCTL_* */
	long (*fn)(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		   const struct vd_uarg *uarg);
};

/*
 * VD_IOCTL(NAME, ...) is VIADUCT_IOCTL_NAME, whose structure has never
 * grown: callers pass its size, or a larger one with a zero tail (a newer
 * binary on an older module). When a structure grows, its entry becomes
 * VD_IOCTL_GROWN(NAME, VIADUCT_<STRUCT>_SIZE_VER0, ...) so that binaries
 * built against the older size keep working.
 */
#define VD_IOCTL(_name, _fn, _flags) \
	VD_IOCTL_GROWN(_name, _IOC_SIZE(VIADUCT_IOCTL_##_name), _fn, _flags)
#define VD_IOCTL_GROWN(_name, _min, _fn, _flags)			\
	[_IOC_NR(VIADUCT_IOCTL_##_name)] = {				\
		.cmd = VIADUCT_IOCTL_##_name, .min_size = (_min),	\
		.fn = (_fn), .flags = (_flags),				\
	}

/*
 * Every command of /dev/viaduct, by command number: the command, its
 * handler and whether it needs the selected device. A command matches by
 * number and direction; its size may differ from ours (see "Growing the
 * ABI" in viaduct-abi.h). The dispatcher copies the argument in (for
 * _IOC_WRITE commands), zero-extended or checked to have a zero tail,
 * then checks the device, then calls the handler, which copies its reply
 * out itself with vd_uarg_reply() (a create command must know the copy
 * succeeded before it publishes the handle).
 */
static const struct vd_ioctl vd_ioctls[] = {
	VD_IOCTL(GET_ABI_VERSION, ioctl_get_abi_version, 0),
	VD_IOCTL(LIST_DEVICES, ioctl_list_devices, 0),
	VD_IOCTL(SELECT_DEVICE, ioctl_select_device, 0),
	VD_IOCTL_GROWN(QUERY_DEVICE, VIADUCT_DEVICE_ATTR_SIZE_VER0,
		       ioctl_query_device, 0),
	VD_IOCTL(CREATE_PD, vd_uobj_create_pd, VD_IOCTL_DEV),
	VD_IOCTL(DESTROY_PD, vd_uobj_destroy_pd, VD_IOCTL_DEV_GONE),
	VD_IOCTL(REG_MR, vd_umr_reg_mr, VD_IOCTL_DEV),
	VD_IOCTL(DEREG_MR, vd_uobj_dereg_mr, VD_IOCTL_DEV_GONE),
	VD_IOCTL(CREATE_CQ, vd_uobj_create_cq, VD_IOCTL_DEV),
	VD_IOCTL(RESIZE_CQ, vd_uobj_resize_cq, VD_IOCTL_DEV),
	VD_IOCTL(DESTROY_CQ, vd_uobj_destroy_cq, VD_IOCTL_DEV_GONE),
	VD_IOCTL_GROWN(ARM_CQ, VIADUCT_ARM_CQ_SIZE_VER0, vd_uobj_arm_cq,
		       VD_IOCTL_DEV),
	VD_IOCTL_GROWN(CREATE_QP, VIADUCT_CREATE_QP_SIZE_VER0,
		       vd_uobj_create_qp, VD_IOCTL_DEV),
	VD_IOCTL(MODIFY_QP, vd_uobj_modify_qp, VD_IOCTL_DEV),
	VD_IOCTL(QUERY_QP, vd_uobj_query_qp, VD_IOCTL_DEV_GONE),
	VD_IOCTL(DESTROY_QP, vd_uobj_destroy_qp, VD_IOCTL_DEV_GONE),
	VD_IOCTL(DOORBELL, vd_uobj_doorbell, VD_IOCTL_DEV),
	VD_IOCTL(CREATE_COMP_CHANNEL, vd_uobj_create_comp_channel, VD_IOCTL_DEV),
	VD_IOCTL(CREATE_CM_CHANNEL, vd_ucm_create_channel, VD_IOCTL_DEV),
	VD_IOCTL(CM_CREATE_ID, vd_ucm_create_id, VD_IOCTL_DEV),
	VD_IOCTL(CM_DESTROY_ID, vd_ucm_destroy_id, VD_IOCTL_DEV_GONE),
	VD_IOCTL(CM_LISTEN, vd_ucm_listen, VD_IOCTL_DEV),
	VD_IOCTL(CM_CONNECT, vd_ucm_connect, VD_IOCTL_DEV),
	VD_IOCTL(CM_ACCEPT, vd_ucm_accept, VD_IOCTL_DEV),
	VD_IOCTL(CM_REJECT, vd_ucm_reject, VD_IOCTL_DEV),
	VD_IOCTL(CM_DISCONNECT, vd_ucm_disconnect, VD_IOCTL_DEV),
	VD_IOCTL_GROWN(CM_CONVERT_SOCKET, VIADUCT_CM_CONVERT_SOCKET_SIZE_VER0,
		       vd_ucm_convert, VD_IOCTL_DEV),
	VD_IOCTL(CM_ACK_EVENT, vd_ucm_ack, VD_IOCTL_DEV_GONE),
	VD_IOCTL(ALLOC_MR, vd_umr_alloc_mr, VD_IOCTL_DEV),
	VD_IOCTL(ALLOC_MW, vd_umw_alloc_mw, VD_IOCTL_DEV),
	VD_IOCTL(DEALLOC_MW, vd_uobj_dealloc_mw, VD_IOCTL_DEV_GONE),
	VD_IOCTL(BIND_MW, vd_umw_bind_mw, VD_IOCTL_DEV),
	VD_IOCTL(MODIFY_MR, vd_umr_modify_mr, VD_IOCTL_DEV),
	VD_IOCTL(CREATE_SRQ, vd_usrq_create, VD_IOCTL_DEV),
	VD_IOCTL(MODIFY_SRQ, vd_usrq_modify, VD_IOCTL_DEV),
	VD_IOCTL(QUERY_SRQ, vd_usrq_query, VD_IOCTL_DEV),
	VD_IOCTL(DESTROY_SRQ, vd_usrq_destroy, VD_IOCTL_DEV_GONE),
	VD_IOCTL(CM_HANDOFF, vd_ucm_handoff, VD_IOCTL_DEV),
};

/* Arguments up to this size live on the stack, larger ones are allocated. */
#define VD_IOCTL_STACK_ARG	128

static long vd_uctx_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct vd_uctx *ctx = file->private_data;
	u64 stack[VD_IOCTL_STACK_ARG / sizeof(u64)];
	const struct vd_ioctl *ioc;
	struct vd_uarg uarg;
	unsigned int nr = _IOC_NR(cmd);
	struct vd_device *vd = NULL;
	void *karg = stack;
	size_t size;
	long ret;

	if (unlikely(_IOC_TYPE(cmd) != VIADUCT_IOCTL_MAGIC))
		return -ENOTTY;
	if (nr >= ARRAY_SIZE(vd_ioctls))
		return -ENOTTY;
	ioc = &vd_ioctls[array_index_nospec(nr, ARRAY_SIZE(vd_ioctls))];
	/* the same command, whatever its size */
	if (!ioc->fn || ((ioc->cmd ^ cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)))
		return -ENOTTY;
	uarg.ptr = (void __user *)arg;
	uarg.size = _IOC_SIZE(cmd);
	if (uarg.size < ioc->min_size)
		return -ENOTTY;

	size = _IOC_SIZE(ioc->cmd);
	if (size > sizeof(stack)) {
		karg = kmalloc(size, GFP_KERNEL);
		if (!karg)
			return -ENOMEM;
	}
	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		/* zero-extends a shorter one; E2BIG if a longer one's tail is not zero */
		ret = copy_struct_from_user(karg, size, uarg.ptr, uarg.size);
		if (ret)
			goto out;
	} else {
		/* a handler that fills part of it never copies out the stack */
		memset(karg, 0, size);
	}
	if (ioc->flags & VD_IOCTL_DEV) {
		ret = -ENODEV;
		if (ioc->flags & VD_IOCTL_GONE)
			/* pairs with smp_store_release() in ioctl_select_device() */
			vd = smp_load_acquire(&ctx->dev);
		else
			vd = vd_uctx_device(ctx);
		if (!vd)
			goto out;
	}
	ret = ioc->fn(ctx, vd, karg, &uarg);
out:
	if (karg != stack)
		kfree(karg);
	return ret;
}

/*
 * struct vd_device_client.removed: the selected device is gone. Every
 * connection ends, every QP enters Error with its WRs flushed (uobj.c),
 * then the context learns it from VIADUCT_EVENT_DEVICE_FATAL, after the
 * completions are in place. The context stays usable for destroying.
 */
static void vd_uctx_device_removed(struct vd_device_client *c)
{
	struct vd_uctx *ctx = container_of(c, struct vd_uctx, dev_client);

	vd_dbg_ctx(ctx, "device removed: stopping\n");
	vd_uobj_device_removed(&ctx->objs);
	vd_async_queue_push(ctx->objs.aq, VIADUCT_EVENT_DEVICE_FATAL, 0, 0, 0);
}

static int vd_uctx_open(struct inode *inode, struct file *file)
{
	struct vd_uctx *ctx;
	int ret;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return -ENOMEM;
	ret = vd_uobj_table_init(&ctx->objs);
	if (ret) {
		kfree(ctx);
		return ret;
	}
	ctx->net = get_net_track(current->nsproxy->net_ns, &ctx->net_tracker,
				 GFP_KERNEL);
	ctx->owner = get_task_pid(current, PIDTYPE_TGID);
	get_task_comm(ctx->comm, current);
	mutex_init(&ctx->lock);
	refcount_set(&ctx->ref, 1);
	INIT_LIST_HEAD(&ctx->dev_client.node);
	ctx->dev_client.removed = vd_uctx_device_removed;
	/* last: the context is complete once reports can find it */
	ret = xa_alloc_cyclic(&vd_uctxs, &ctx->id, ctx, xa_limit_32b,
			      &vd_uctx_next_id, GFP_KERNEL);
	if (ret < 0) {
		vd_uobj_table_destroy(&ctx->objs);
		put_pid(ctx->owner);
		put_net_track(ctx->net, &ctx->net_tracker);
		mutex_destroy(&ctx->lock);
		kfree(ctx);	/* never published */
		return ret;
	}
	file->private_data = ctx;
	vd_stat_inc(contexts);
	vd_dbg_ctx(ctx, "opened\n");
	return nonseekable_open(inode, file);
}

/* The last close of the file: nothing else can reach the context any more. */
static int vd_uctx_release(struct inode *inode, struct file *file)
{
	struct vd_uctx *ctx = file->private_data;

	vd_dbg_ctx(ctx, "released\n");
	xa_erase(&vd_uctxs, ctx->id);
	/*
	 * Waits only for a report visiting this context, which waits for
	 * nothing but this context's table lock, which nobody holds: no
	 * command of this file runs any more.
	 */
	mutex_lock(&ctx->lock);
	ctx->closed = true;
	mutex_unlock(&ctx->lock);
	/* waits for the device's removal if it is stopping this context */
	if (ctx->dev)
		vd_device_client_del(ctx->dev, &ctx->dev_client);
	vd_uobj_table_destroy(&ctx->objs);
	if (ctx->dev)
		vd_device_ctx_detach(ctx->dev);
	vd_stat_dec(contexts);
	/* reports may still hold it: they read the owner and device only */
	vd_uctx_put(ctx);
	return 0;
}

/**
 * vd_uctx_walk() - visit the open contexts of a namespace, for reports
 * @net: the namespace
 * @id: the lowest id to visit; set to the id of the context that stopped
 *      the walk
 * @fn: called for each context, in id order; non-zero stops the walk
 * @arg: passed to @fn
 *
 * @fn runs with a reference on the context and its @lock held, and only
 * while the context is not closed: release() marks it closed under that
 * lock before it tears the resources down, so @fn may read the context and
 * walk its table (vd_uobj_table_walk()). No lock shared between contexts
 * is held, so a context whose table lock is taken for long delays only
 * this walk. @fn must not open or close a context. Ids come from one
 * cyclic allocator, so a resumed walk visits contexts opened meanwhile
 * only if their ids are higher.
 *
 * Context: Process context.
 * Return: the non-zero value of @fn that stopped the walk, leaving the
 * context's id in *@id; 0 once every context was visited.
 */
int vd_uctx_walk(struct net *net, u32 *id,
		 int (*fn)(struct vd_uctx *ctx, void *arg), void *arg)
{
	unsigned long idx = *id;
	struct vd_uctx *ctx;
	int ret = 0;

	for (;; idx++) {
		rcu_read_lock();
		for (;;) {
			ctx = xa_find(&vd_uctxs, &idx, U32_MAX, XA_PRESENT);
			if (!ctx || refcount_inc_not_zero(&ctx->ref))
				break;
			/* its last reference went: it is being freed */
			idx++;
		}
		rcu_read_unlock();
		if (!ctx)
			break;
		if (net_eq(ctx->net, net)) {
			mutex_lock(&ctx->lock);
			if (!ctx->closed)
				ret = fn(ctx, arg);
			mutex_unlock(&ctx->lock);
		}
		vd_uctx_put(ctx);
		if (ret) {
			*id = idx;
			break;
		}
		if (idx == U32_MAX)
			break;
		cond_resched();
	}
	return ret;
}

static int vd_uctx_mmap(struct file *file, struct vm_area_struct *vma)
{
	return vd_uobj_mmap(file->private_data, vma);
}

static ssize_t vd_uctx_read(struct file *file, char __user *buf, size_t len,
			    loff_t *ppos)
{
	return vd_uobj_read(file->private_data, buf, len,
			    file->f_flags & O_NONBLOCK);
}

static __poll_t vd_uctx_poll(struct file *file, poll_table *wait)
{
	return vd_uobj_poll(file->private_data, file, wait);
}

static const struct file_operations vd_uctx_fops = {
	.owner = THIS_MODULE,
	.open = vd_uctx_open,
	.release = vd_uctx_release,
	.unlocked_ioctl = vd_uctx_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = vd_uctx_mmap,
	.read = vd_uctx_read,
	.poll = vd_uctx_poll,
};

static struct miscdevice vd_uctx_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = VIADUCT_DEVICE_NAME,
	.fops = &vd_uctx_fops,
	.mode = 0666,
};

/**
 * vd_uctx_init() - register the character device
 *
 * Context: Module init, process context.
 * Return: 0 or the error of misc_register().
 */
int __init vd_uctx_init(void)
{
	return misc_register(&vd_uctx_misc);
}

/**
 * vd_uctx_uninit() - unregister the character device
 *
 * The file operations hold a module reference while any file is open, so
 * this never meets a live context.
 *
 * Context: Module exit, process context.
 */
void vd_uctx_uninit(void)
{
	misc_deregister(&vd_uctx_misc);
}
