// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows: an STag of their own onto part of a registered region,
 * with remote rights of their own. Documentation/memory.rst, "Memory
 * windows", has the rules.
 *
 * The table slot. ALLOC_MW enters an INVALID window of type 1 or 2 and
 * length 0 (the slot) under a new index; it is the object DEALLOC_MW
 * releases. Each bind builds a new region (an instance) of the window's
 * type with the new key, range, rights and, for type 2, the QP, and
 * publishes it in the slot's index with xa_cmpxchg(), as a Fast-Register
 * does (frmr.c): fields of a published region never change, so the data
 * path and the access check need nothing new. The instance references its
 * region and borrows the region's pinned pages (@umem, @umem_off).
 *
 * Bound. An instance counts in its region's @mw_bound from the bind until
 * it is invalidated (vd_tpt_invalidate_sync()), replaced by the next bind
 * or erased by DEALLOC_MW (vd_mw_unlink(), once). DEREG_MR refuses a
 * region with windows bound (vd_mr_refuse_binds(), the verbs' "Immediate
 * Error"), and once it has begun no bind takes the region any more.
 */
#include <linux/err.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "mem.h"
#include "pd.h"
#include "stats.h"
#include "tpt.h"

/* What a bind may ask for. */
#define VD_MW_ACCESS_REMOTE	(VIADUCT_ACCESS_REMOTE_READ | \
				 VIADUCT_ACCESS_REMOTE_WRITE)
#define VD_MW_ACCESS_ALL	(VD_MW_ACCESS_REMOTE | VIADUCT_ACCESS_ZERO_BASED)

static bool vd_mw_type(u8 type)
{
	return type == VD_STAG_MW1 || type == VD_STAG_MW2;
}

/**
 * vd_mw_alloc() - an unbound window (ALLOC_MW)
 * @tpt: the table
 * @pd: the PD it belongs to
 * @type: VD_STAG_MW1 or VD_STAG_MW2
 * @key: the key of the STag
 *
 * Released with vd_mr_deregister(), which also ends its binding.
 *
 * Context: Process context.
 * Return: the slot with the registration reference; ERR_PTR(-EINVAL) for
 * another @type; the errors of vd_stag_insert().
 */
struct vd_mr *vd_mw_alloc(struct vd_tpt *tpt, struct vd_pd *pd,
			  enum vd_stag_type type, u8 key)
{
	if (!vd_mw_type(type))
		return ERR_PTR(-EINVAL);
	return vd_stag_insert(tpt, pd, NULL, 0, 0, 0, key, type, 0, false);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mw_alloc);

/**
 * vd_mw_unlink() - end a binding's count in its region
 * @mr: any region; only a window's binding that still counts does anything
 *
 * Idempotent: the first call for a binding drops its region's @mw_bound,
 * later ones (and calls for anything else) do nothing.
 *
 * Context: Any context.
 */
void vd_mw_unlink(struct vd_mr *mr)
{
	if (atomic_xchg(&mr->mw_linked, 0) && !WARN_ON_ONCE(!mr->nr_srcs))
		atomic_dec(&mr->srcs[0]->mw_bound);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mw_unlink);

/**
 * vd_mr_refuse_binds() - DEREG_MR's part: refuse while windows are bound
 * @mr: the region about to be deregistered
 *
 * Context: Any context.
 * Return: 0, after which no window binds to @mr any more; -EBUSY while
 * windows are bound to it (nothing changes).
 */
int vd_mr_refuse_binds(struct vd_mr *mr)
{
	int bound = atomic_cmpxchg(&mr->mw_bound, 0, -1);

	return bound == 0 || bound == -1 ? 0 : -EBUSY;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_refuse_binds);

/* Serializes binds of one slot against each other. */
static DEFINE_MUTEX(vd_mw_lock);

/*
 * Publishes @inst in its slot if the slot holds a window of @inst's type
 * and PD that may be bound now: a type-2 window only while INVALID. The
 * binding it replaces ends: no copy runs through it when this returns.
 */
static int vd_mw_publish(struct vd_tpt *tpt, struct vd_mr *inst)
{
	u32 index = vd_stag_index(inst->stag);
	struct vd_mr *cur, *old = NULL;
	int ret = -EPERM;

	mutex_lock(&vd_mw_lock);
	cur = xa_load(&tpt->mrs, index);
	if (!cur || cur->type != inst->type || cur->pd != inst->pd)
		goto out;
	if (cur->type == VD_STAG_MW2 && READ_ONCE(cur->state) != VD_MR_INVALID)
		goto out;
	inst->slot = cur->fr_instance ? cur->slot : cur;
	old = xa_cmpxchg(&tpt->mrs, index, cur, inst, GFP_KERNEL);
	if (old != cur) {
		old = NULL;
		goto out;
	}
	ret = 0;
out:
	mutex_unlock(&vd_mw_lock);
	/* the table's reference to the binding it replaced */
	if (old && old->fr_instance)
		vd_mr_instance_end(old);
	return ret;
}

/*
 * A type-1 window's unbind: the slot gets its empty self back, as after
 * ALLOC_MW, and the binding ends.
 */
static int vd_mw_unbind(struct vd_tpt *tpt, struct vd_pd *pd, u32 mw_stag)
{
	u32 index = vd_stag_index(mw_stag);
	struct vd_mr *cur, *done = NULL;
	int ret = -EPERM;

	mutex_lock(&vd_mw_lock);
	cur = xa_load(&tpt->mrs, index);
	if (!cur || cur->type != VD_STAG_MW1 || cur->pd != pd)
		goto out;
	ret = 0;
	if (!cur->fr_instance)
		goto out;	/* not bound: nothing to do */
	if (xa_cmpxchg(&tpt->mrs, index, cur, cur->slot, GFP_KERNEL) == cur)
		done = cur;
	else
		ret = -EPERM;
out:
	mutex_unlock(&vd_mw_lock);
	if (done)
		vd_mr_instance_end(done);
	return ret;
}

/* The rights a window's access bits grant, and what its region needs. */
static int vd_mw_rights(u32 access, u32 *need)
{
	int rights = 0;

	if (access & ~VD_MW_ACCESS_ALL || !(access & VD_MW_ACCESS_REMOTE))
		return -EINVAL;
	/* verbs figure 20: remote read needs local read, write local write */
	*need = VD_RIGHT_MW_BIND;
	if (access & VIADUCT_ACCESS_REMOTE_READ) {
		rights |= VD_RIGHT_REMOTE_READ;
		*need |= VD_RIGHT_LOCAL_READ;
	}
	if (access & VIADUCT_ACCESS_REMOTE_WRITE) {
		rights |= VD_RIGHT_REMOTE_WRITE;
		*need |= VD_RIGHT_LOCAL_WRITE;
	}
	return rights;
}

/* The window slot of @mw_stag, if it is one of @pd's: its type, else 0. */
static u8 vd_mw_slot_type(struct vd_tpt *tpt, struct vd_pd *pd, u32 mw_stag)
{
	struct vd_mr *cur;
	u8 type = 0;

	rcu_read_lock();
	cur = xa_load(&tpt->mrs, vd_stag_index(mw_stag));
	if (cur && vd_mw_type(cur->type) && cur->pd == pd)
		type = cur->type;
	rcu_read_unlock();
	return type;
}

/**
 * vd_mw_bind() - bind a window to part of a region
 * @tpt: the table
 * @pd: the PD of the window, the region and (for a WR) the QP
 * @qpn: the QP executing a bind WR; 0 for BIND_MW, the call, which binds
 *       type-1 windows only
 * @mw_stag: the window's index with the key of the new binding
 * @mr_stag: the region's STag
 * @addr: the window's first byte, an address of the region
 * @length: its bytes; 0 unbinds a type-1 window (@mr_stag, @addr and
 *          @access are then not looked at)
 * @access: VIADUCT_ACCESS_REMOTE_READ and/or _REMOTE_WRITE, and
 *          optionally VIADUCT_ACCESS_ZERO_BASED
 *
 * The region must pass the access check for [@addr, @addr + @length)
 * through @pd and @qpn with the MW_BIND right and the local right each
 * remote right needs (verbs 7.10.6.1), and be a region registered by a
 * call. A type-2 window must be INVALID and is bound to @qpn; a type-1
 * window's previous binding ends. The new binding is published only once
 * it is whole; the window's STag is then @mw_stag.
 *
 * Context: Process context (it allocates and takes a mutex).
 * Return: 0; -EINVAL for bad @access or a type-2 window bound by a call;
 * -ERANGE for a type-2 window and @length 0; -EPERM if @mw_stag is no
 * window of @pd that may be bound now; -EACCES if the region fails (not a
 * registered region, unknown, another PD, no MW_BIND, rights, range,
 * being deregistered); -ENOMEM.
 */
int vd_mw_bind(struct vd_tpt *tpt, struct vd_pd *pd, u32 qpn, u32 mw_stag,
	       u32 mr_stag, u64 addr, u64 length, u32 access)
{
	enum vd_access_status st;
	struct vd_mr *mr, *inst;
	u32 need;
	int rights = vd_mw_rights(access, &need);
	u8 type;
	int ret;

	type = vd_mw_slot_type(tpt, pd, mw_stag);
	if (!type)
		return -EPERM;
	if (type == VD_STAG_MW2 && !qpn)
		return -EINVAL;
	/* a type-1 window's unbind names no region and no rights */
	if (type == VD_STAG_MW1 && !length)
		return vd_mw_unbind(tpt, pd, mw_stag);
	if (rights < 0)
		return rights;
	if (!length)
		return -ERANGE;

	st = vd_tpt_check(tpt, mr_stag, pd, qpn, need, addr, length, &mr);
	if (st != VD_ACCESS_OK)
		return -EACCES;
	/* windows bind to regions registered by a call, with pages */
	if (mr->type != VD_STAG_MR || !mr->umem) {
		ret = -EACCES;
		goto err_mr;
	}

	inst = kzalloc(sizeof(*inst), GFP_KERNEL_ACCOUNT);
	if (!inst) {
		ret = -ENOMEM;
		goto err_mr;
	}
	inst->srcs = kcalloc(1, sizeof(*inst->srcs), GFP_KERNEL_ACCOUNT);
	if (!inst->srcs) {
		kfree(inst);
		ret = -ENOMEM;
		goto err_mr;
	}
	/* the region is bound from here on, unless DEREG_MR began */
	if (!atomic_inc_unless_negative(&mr->mw_bound)) {
		kfree(inst->srcs);
		kfree(inst);
		ret = -EACCES;
		goto err_mr;
	}
	kref_init(&inst->ref);
	seqcount_init(&inst->attr_seq);
	inst->tpt = tpt;
	inst->pd = vd_pd_get(pd);
	inst->stag = mw_stag;
	inst->access = access;
	inst->rights = rights;
	inst->state = VD_MR_VALID;
	inst->type = type;
	inst->qpn = type == VD_STAG_MW2 ? qpn : 0;
	inst->addr = access & VIADUCT_ACCESS_ZERO_BASED ? 0 : addr;
	inst->length = length;
	inst->umem = mr->umem;
	inst->borrowed_umem = true;
	inst->umem_off = vd_mr_offset(mr, addr);
	inst->srcs[0] = mr;		/* the check's reference */
	inst->nr_srcs = 1;
	inst->fr_instance = true;
	atomic_set(&inst->mw_linked, 1);
	atomic_inc(&tpt->nr_alive);
	vd_stat_inc(mrs);

	ret = vd_mw_publish(tpt, inst);
	if (ret) {
		/* not bound after all: the region counts it out now */
		vd_mw_unlink(inst);
		vd_mr_put(inst);
	}
	return ret;

err_mr:
	vd_mr_put(mr);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mw_bind);

/**
 * vd_mw_qp_gone() - invalidate the type-2 windows bound to a destroyed QP
 * @tpt: the table
 * @qpn: the QP's number, which a new QP may get once it is freed
 *
 * Called once the QP executes and receives nothing any more, before its
 * number can be reused: a window bound to it must not open to the next QP
 * that gets the number. Nothing copies through such a window any more
 * (only its QP could), so this needs no wait. The windows' regions may
 * then be deregistered.
 *
 * Context: Process context (walks the whole table).
 */
void vd_mw_qp_gone(struct vd_tpt *tpt, u32 qpn)
{
	unsigned long index;
	struct vd_mr *mr;

	rcu_read_lock();
	xa_for_each(&tpt->mrs, index, mr) {
		if (mr->type != VD_STAG_MW2 || mr->qpn != qpn)
			continue;
		WRITE_ONCE(mr->state, VD_MR_INVALID);
		vd_mw_unlink(mr);
	}
	rcu_read_unlock();
}
EXPORT_SYMBOL_IF_KUNIT(vd_mw_qp_gone);

/**
 * vd_mw_bind_status() - the CQE status of a bind WR
 * @err: what vd_mw_bind() returned
 *
 * A pure map.
 *
 * Return: VIADUCT_WC_SUCCESS, LOC_QP_OP_ERR (bad rights bits),
 * LOC_LEN_ERR (a type-2 bind of length 0), LOC_PROT_ERR (the window or
 * the region), GENERAL_ERR (no memory).
 */
u8 vd_mw_bind_status(int err)
{
	switch (err) {
	case 0:
		return VIADUCT_WC_SUCCESS;
	case -EINVAL:
		return VIADUCT_WC_LOC_QP_OP_ERR;
	case -ERANGE:
		return VIADUCT_WC_LOC_LEN_ERR;
	case -ENOMEM:
		return VIADUCT_WC_GENERAL_ERR;
	default:
		return VIADUCT_WC_LOC_PROT_ERR;
	}
}
EXPORT_SYMBOL_IF_KUNIT(vd_mw_bind_status);
