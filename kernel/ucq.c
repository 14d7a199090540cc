// SPDX-License-Identifier: GPL-2.0
/*
 * The completion queue commands of a user context: CREATE_CQ, RESIZE_CQ
 * and ARM_CQ (include/uapi/viaduct/viaduct-abi.h); DESTROY_CQ is uobj.c's,
 * with the other destroy commands. The handle table is uobj.c's, the CQ
 * itself cq.c's.
 */
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/xarray.h>

#include "cq.h"
#include "device.h"
#include "event.h"
#include "ring.h"
#include "uctx.h"
#include "uobj_priv.h"

/* What build_cq() needs besides the request */
struct cq_init {
	struct vd_comp_channel *ch;	/* or NULL */
	struct vd_device *vd;		/* whose counts count the CQ */
};

static int build_cq(struct vd_uobj_table *t, struct vd_uobj *u, void *reply,
		    void *arg)
{
	const struct cq_init *init = arg;
	struct viaduct_create_cq *c = reply;
	struct vd_cq *cq;
	int ret;

	cq = vd_cq_create(c->entries, c->handle, c->user_data, t->aq, init->ch,
			  init->vd->counts);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	u->cq = cq;
	ret = vd_uobj_add_key(t, u, vd_cq_mem(cq), &c->mmap_key);
	if (ret)
		return ret;
	c->entries = vd_cq_entries(cq);
	c->mmap_size = vd_cq_mem(cq)->size;
	return 0;
}

long vd_uobj_create_cq(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		       const struct vd_uarg *uarg)
{
	struct cq_init init = { .vd = vd };
	struct viaduct_create_cq *c = karg;
	long ret;

	if (c->flags)
		return -EINVAL;
	if (c->channel_fd != -1) {
		init.ch = vd_comp_channel_fdget(c->channel_fd);
		if (IS_ERR(init.ch))
			return PTR_ERR(init.ch);
	}
	ret = vd_uobj_create(&ctx->objs, VD_UOBJ_CQ, build_cq, &init, c,
			     &c->handle, sizeof(*c), uarg);
	/* the CQ holds a reference of its own */
	if (init.ch)
		vd_comp_channel_put(init.ch);
	return ret;
}

long vd_uobj_resize_cq(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		       const struct vd_uarg *uarg)
{
	struct vd_uobj_table *t = &ctx->objs;
	struct viaduct_resize_cq *r = karg;
	struct vd_ring_mem *mem;
	struct vd_uobj *u;
	long ret;
	u32 idx;

	mutex_lock(&t->lock);
	ret = -ENOENT;
	u = vd_uobj_find(t, r->handle, VD_UOBJ_CQ);
	if (!u)
		goto out;
	if (WARN_ON_ONCE(u->nkeys != 1)) {
		ret = -EINVAL;
		goto out;
	}
	/* the key first: the resize cannot be undone */
	ret = xa_alloc(&t->mmap_keys, &idx, NULL, VD_MMAP_KEY_LIMIT,
		       GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto out;
	}
	ret = vd_cq_resize(u->cq, r->entries, &mem);
	if (ret) {
		xa_erase(&t->mmap_keys, idx);
		goto out;
	}
	/* the key takes over the caller's reference on the new ring */
	WARN_ON_ONCE(xa_is_err(xa_store(&t->mmap_keys, idx, mem, GFP_KERNEL)));
	vd_uobj_drop_key(t, u->keys[0]);
	u->keys[0] = idx;

	r->entries = vd_cq_entries(u->cq);
	r->mmap_key = (u64)idx << PAGE_SHIFT;
	r->mmap_size = mem->size;
	mutex_unlock(&t->lock);
	/* never with the lock: the reply may fault as long as it likes */
	return vd_uarg_reply(uarg, r, sizeof(*r));
out:
	mutex_unlock(&t->lock);
	return ret;
}

long vd_uobj_arm_cq(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		    const struct vd_uarg *uarg)
{
	struct viaduct_arm_cq *a = karg;
	struct vd_cq *cq;
	long ret;

	if (a->reserved)
		return -EINVAL;
	cq = vd_uobj_get(&ctx->objs, a->handle, VD_UOBJ_CQ);
	if (!cq)
		return -ENOENT;
	ret = vd_cq_arm(cq, a->flags, a->threshold);
	vd_cq_put(cq);
	return ret;
}
