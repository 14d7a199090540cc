// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/viaduct: one context per open file, and the ioctl dispatch.
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
#include "stats.h"
#include "uctx.h"

/*
 * Every open context by id, for reports. Entries are added at the end of
 * open() and removed under vd_uctxs_lock at the start of release(), so
 * whoever holds the lock and finds a context may use it (vd_uctx_walk()).
 */
static DEFINE_XARRAY_ALLOC1(vd_uctxs);
static DEFINE_MUTEX(vd_uctxs_lock);
static u32 vd_uctx_next_id;

/* The selected device if it is still there, else NULL; no reference taken. */
static struct vd_device *vd_uctx_device(struct vd_uctx *ctx)
{
	/* pairs with smp_store_release() in ioctl_select_device() */
	struct vd_device *vd = smp_load_acquire(&ctx->dev);

	if (unlikely(!vd || !vd_device_alive(vd)))
		return NULL;
	return vd;
}

static long ioctl_get_abi_version(struct vd_uctx *ctx, void __user *uarg)
{
	struct viaduct_abi_version v = { .abi_version = VIADUCT_ABI_VERSION };

	return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
}

static long ioctl_list_devices(struct vd_uctx *ctx, void __user *uarg)
{
	struct viaduct_list_devices __user *ulist = uarg;
	struct viaduct_device_entry *ents;
	struct viaduct_list_devices list;
	long ret;
	u32 n;

	if (copy_from_user(&list, uarg, sizeof(list)))
		return -EFAULT;
	ret = vd_device_list(ctx->net, list.capacity, &ents, &n);
	if (ret < 0)
		return ret;
	list.count = ret;

	ret = 0;
	if (n && copy_to_user(u64_to_user_ptr(list.entries), ents,
			      array_size(n, sizeof(*ents))))
		ret = -EFAULT;
	else if (put_user(list.count, &ulist->count))
		ret = -EFAULT;
	kvfree(ents);
	return ret;
}

static long ioctl_select_device(struct vd_uctx *ctx, void __user *uarg)
{
	struct viaduct_select_device sel;
	struct vd_device *vd;
	long ret;

	if (copy_from_user(&sel, uarg, sizeof(sel)))
		return -EFAULT;
	if (sel.reserved)
		return -EINVAL;
	if (strnlen(sel.name, sizeof(sel.name)) == sizeof(sel.name))
		return -EINVAL;

	mutex_lock(&ctx->lock);
	ret = -EBUSY;
	if (ctx->dev)
		goto out_unlock;
	if (sel.name[0])
		vd = vd_device_get_by_name(ctx->net, sel.name);
	else
		vd = vd_device_get_by_index(ctx->net, sel.index);
	ret = -ENODEV;
	if (!vd)
		goto out_unlock;
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

static long ioctl_query_device(struct vd_uctx *ctx, void __user *uarg)
{
	struct viaduct_device_attr *attr;
	struct vd_device *vd;
	long ret;

	attr = kmalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	ret = -EFAULT;
	if (copy_from_user(attr, uarg, sizeof(*attr)))
		goto out;
	ret = -EINVAL;
	if (attr->reserved)
		goto out;

	ret = -ENODEV;
	if (attr->index == VIADUCT_INDEX_SELECTED) {
		/* the context's own reference keeps it */
		vd = vd_uctx_device(ctx);
		if (!vd)
			goto out;
		ret = vd_device_query(vd, attr);
	} else {
		vd = vd_device_get_by_index(ctx->net, attr->index);
		if (!vd)
			goto out;
		ret = vd_device_query(vd, attr);
		vd_device_put(vd);
	}
	if (!ret && copy_to_user(uarg, attr, sizeof(*attr)))
		ret = -EFAULT;
out:
	kfree(attr);
	return ret;
}

struct vd_uctx_ioctl {
	unsigned int cmd;
	long (*fn)(struct vd_uctx *ctx, void __user *uarg);
};

/* By command number; a command matches only with its exact size and direction. */
static const struct vd_uctx_ioctl vd_uctx_ioctls[] = {
	[_IOC_NR(VIADUCT_IOCTL_GET_ABI_VERSION)] = {
		VIADUCT_IOCTL_GET_ABI_VERSION, ioctl_get_abi_version
	},
	[_IOC_NR(VIADUCT_IOCTL_LIST_DEVICES)] = {
		VIADUCT_IOCTL_LIST_DEVICES, ioctl_list_devices
	},
	[_IOC_NR(VIADUCT_IOCTL_SELECT_DEVICE)] = {
		VIADUCT_IOCTL_SELECT_DEVICE, ioctl_select_device
	},
	[_IOC_NR(VIADUCT_IOCTL_QUERY_DEVICE)] = {
		VIADUCT_IOCTL_QUERY_DEVICE, ioctl_query_device
	},
};

static long vd_uctx_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct vd_uctx *ctx = file->private_data;
	const struct vd_uctx_ioctl *ioc;
	unsigned int nr = _IOC_NR(cmd);

	if (unlikely(_IOC_TYPE(cmd) != VIADUCT_IOCTL_MAGIC))
		return -ENOTTY;
	if (nr >= ARRAY_SIZE(vd_uctx_ioctls))
		return vd_uobj_ioctl(ctx, cmd, arg);
	ioc = &vd_uctx_ioctls[array_index_nospec(nr, ARRAY_SIZE(vd_uctx_ioctls))];
	if (!ioc->fn || ioc->cmd != cmd)
		return vd_uobj_ioctl(ctx, cmd, arg);
	return ioc->fn(ctx, (void __user *)arg);
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
	/* last: the context is complete once reports can find it */
	ret = xa_alloc_cyclic(&vd_uctxs, &ctx->id, ctx, xa_limit_32b,
			      &vd_uctx_next_id, GFP_KERNEL);
	if (ret < 0) {
		vd_uobj_table_destroy(&ctx->objs);
		put_pid(ctx->owner);
		put_net_track(ctx->net, &ctx->net_tracker);
		mutex_destroy(&ctx->lock);
		kfree(ctx);
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
	/* waits for a report that is looking at the context */
	mutex_lock(&vd_uctxs_lock);
	xa_erase(&vd_uctxs, ctx->id);
	mutex_unlock(&vd_uctxs_lock);
	vd_uobj_table_destroy(&ctx->objs);
	if (ctx->dev) {
		vd_device_ctx_detach(ctx->dev);
		vd_device_put(ctx->dev);
	}
	put_pid(ctx->owner);
	put_net_track(ctx->net, &ctx->net_tracker);
	mutex_destroy(&ctx->lock);
	kfree(ctx);
	vd_stat_dec(contexts);
	return 0;
}

int vd_uctx_walk(struct net *net, u32 *id,
		 int (*fn)(struct vd_uctx *ctx, void *arg), void *arg)
{
	unsigned long idx = *id;
	struct vd_uctx *ctx;
	int ret = 0;

	mutex_lock(&vd_uctxs_lock);
	xa_for_each_start(&vd_uctxs, idx, ctx, *id) {
		if (!net_eq(ctx->net, net))
			continue;
		ret = fn(ctx, arg);
		if (ret) {
			*id = ctx->id;
			break;
		}
	}
	mutex_unlock(&vd_uctxs_lock);
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

int __init vd_uctx_init(void)
{
	return misc_register(&vd_uctx_misc);
}

void vd_uctx_uninit(void)
{
	misc_deregister(&vd_uctx_misc);
}
