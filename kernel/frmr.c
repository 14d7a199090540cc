// SPDX-License-Identifier: GPL-2.0
/*
 * Fast registration: an STag allocated empty by ALLOC_MR and filled by a
 * Fast-Register work request with pages of the caller's own registered
 * memory. Documentation/memory.rst, "Fast registration", has the rules.
 *
 * The table slot. ALLOC_MR enters an INVALID VD_STAG_FAST_REG region of
 * length 0 (the slot) under a new index; it is the object DEREG_MR
 * releases. Each Fast-Register builds a new region (an instance) with the
 * new key, address, length, rights and page list, and publishes it in the
 * slot's index in place of what was there, with xa_cmpxchg(): fields of a
 * published region never change, so the data path needs nothing new. The
 * table holds one reference to the instance in the index; the instance
 * replaced, or the one DEREG_MR erases, is put.
 *
 * Where the pages come from. A user never hands the kernel a page or a
 * physical address: the page list is a list of SGEs, each checked by the
 * TPT like any SGE of the QP (STag, key, state, PD, local rights, bounds).
 * The instance references the MRs they name, which keeps their pages
 * pinned for as long as it lives, and takes their page pointers into a
 * view (a vd_umem without an mm, which unpins nothing).
 */
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "mem.h"
#include "pd.h"
#include "stats.h"
#include "tpt.h"

/**
 * vd_frmr_alloc() - an empty fast-register STag (ALLOC_MR)
 * @tpt: the table
 * @pd: the PD it belongs to
 * @max_pages: the most pages a Fast-Register WR may put in it
 * @key: the key of the STag
 *
 * A VD_STAG_FAST_REG STag, INVALID and empty (the slot), that a
 * Fast-Register WR can fill with up to @max_pages pages. Released with
 * vd_mr_deregister().
 *
 * Context: Process context.
 * Return: the slot with the registration reference; ERR_PTR(-EINVAL) for
 * 0 or more than VD_UMEM_MAX_PAGES - 1 pages; the other errors of
 * vd_stag_insert().
 */
struct vd_mr *vd_frmr_alloc(struct vd_tpt *tpt, struct vd_pd *pd,
			    u32 max_pages, u8 key)
{
	struct vd_mr *mr;

	if (!max_pages || max_pages > VD_UMEM_MAX_PAGES - 1)
		return ERR_PTR(-EINVAL);
	mr = vd_stag_insert(tpt, pd, NULL, 0, 0, 0, key, VD_STAG_FAST_REG, 0,
			    false);
	if (!IS_ERR(mr))
		mr->max_pages = max_pages;
	return mr;
}

/* The source regions of a page list, referenced, and its pages. */
struct vd_frmr_list {
	struct vd_mr **srcs;
	u32 nr_srcs;
	struct page **pages;
	unsigned long npages;
	unsigned int first_offset;
	u64 length;
};

static void vd_frmr_list_drop(struct vd_frmr_list *l)
{
	u32 i;

	for (i = 0; i < l->nr_srcs; i++)
		vd_mr_put(l->srcs[i]);
	kfree(l->srcs);
	kvfree(l->pages);
}

/*
 * Checks the SGEs through the TPT and collects their pages. Every SGE but
 * the first starts on a page boundary and every one but the last ends on
 * one, so that the pages, in order, hold the bytes without a gap.
 *
 * The page array is sized by what the SGEs can span, not by the slot's
 * capacity: a slot of a million pages registering one page costs one
 * entry, not 8 MiB. It is charged to the active memory cgroup (the QP
 * creator's: tx_local_op() sets it) and stays with the registration.
 */
static u8 vd_frmr_list_build(struct vd_tpt *tpt, struct vd_pd *pd, u32 qpn,
			     u32 rights, u32 max_pages,
			     const struct viaduct_sge *sge, u32 num_sge,
			     struct vd_frmr_list *l)
{
	unsigned long n = 0, room = 0;
	u32 i;

	memset(l, 0, sizeof(*l));
	if (!num_sge)
		return VIADUCT_WC_LOC_LEN_ERR;
	/* at most length / PAGE_SIZE + 2 pages per SGE; lengths are u32 */
	for (i = 0; i < num_sge; i++)
		room += sge[i].length / PAGE_SIZE + 2;
	room = min_t(unsigned long, room, max_pages);
	l->srcs = kcalloc(num_sge, sizeof(*l->srcs), GFP_KERNEL_ACCOUNT);
	l->pages = kvcalloc(room, sizeof(*l->pages), GFP_KERNEL_ACCOUNT);
	if (!l->srcs || !l->pages)
		return VIADUCT_WC_GENERAL_ERR;

	for (i = 0; i < num_sge; i++) {
		enum vd_access_status st;
		unsigned int off, end;
		unsigned long k, np;
		struct vd_mr *mr;
		u64 base;

		if (!sge[i].length)
			return VIADUCT_WC_LOC_LEN_ERR;
		st = vd_tpt_check(tpt, sge[i].stag, pd, qpn, rights,
				  sge[i].addr, sge[i].length, &mr);
		if (st != VD_ACCESS_OK)
			return vd_access_wc_status(st, false);
		l->srcs[l->nr_srcs++] = mr;
		/* an empty fast-register MR is INVALID: the check stops it */
		if (WARN_ON_ONCE(!mr->umem))
			return VIADUCT_WC_LOC_PROT_ERR;

		base = vd_mr_offset(mr, sge[i].addr);
		off = vd_umem_page_offset(mr->umem->first_offset, base);
		end = (off + sge[i].length) & ~PAGE_MASK;
		if ((i && off) || (i + 1 < num_sge && end))
			return VIADUCT_WC_LOC_PROT_ERR;
		if (!i)
			l->first_offset = off;
		np = vd_umem_num_pages(off, sge[i].length);
		if (np > max_pages - n)
			return VIADUCT_WC_LOC_LEN_ERR;
		if (WARN_ON_ONCE(np > room - n))
			return VIADUCT_WC_GENERAL_ERR;
		for (k = 0; k < np; k++)
			l->pages[n + k] = mr->umem->pages
				[vd_umem_page_index(mr->umem->first_offset,
						    base) + k];
		n += np;
		l->length += sge[i].length;
	}
	l->npages = n;
	return VIADUCT_WC_SUCCESS;
}

/* Serializes Fast-Registers of one slot against each other. */
static DEFINE_MUTEX(vd_frmr_lock);

/*
 * Publishes @inst in its slot if the slot still holds an INVALID region
 * of the fast-register type of @pd: the slot's own, or an invalidated
 * registration. DEREG_MR may have emptied it meanwhile.
 */
static u8 vd_frmr_publish(struct vd_tpt *tpt, struct vd_mr *inst,
			  u32 max_pages_needed)
{
	u32 index = vd_stag_index(inst->stag);
	struct vd_mr *cur, *old;
	u8 status = VIADUCT_WC_SUCCESS;

	mutex_lock(&vd_frmr_lock);
	cur = xa_load(&tpt->mrs, index);
	if (!cur || cur->type != VD_STAG_FAST_REG || cur->pd != inst->pd ||
	    READ_ONCE(cur->state) != VD_MR_INVALID) {
		status = VIADUCT_WC_LOC_PROT_ERR;
		goto out;
	}
	if (cur->max_pages < max_pages_needed) {
		status = VIADUCT_WC_LOC_LEN_ERR;
		goto out;
	}
	inst->max_pages = cur->max_pages;
	old = xa_cmpxchg(&tpt->mrs, index, cur, inst, GFP_KERNEL);
	if (old != cur) {
		status = VIADUCT_WC_LOC_PROT_ERR;
		goto out;
	}
	/* the table's reference to a previous registration */
	if (cur->fr_instance)
		vd_mr_put(cur);
out:
	mutex_unlock(&vd_frmr_lock);
	return status;
}

/* The capacity of the slot of @stag, if it is one of @pd's; else 0. */
static u32 vd_frmr_capacity(struct vd_tpt *tpt, struct vd_pd *pd, u32 stag)
{
	struct vd_mr *cur;
	u32 cap = 0;

	rcu_read_lock();
	cur = xa_load(&tpt->mrs, vd_stag_index(stag));
	if (cur && cur->type == VD_STAG_FAST_REG && cur->pd == pd)
		cap = cur->max_pages;
	rcu_read_unlock();
	return cap;
}

/**
 * vd_frmr_register() - the Fast-Register WR of a QP
 * @tpt: the table
 * @pd: the QP's PD
 * @qpn: the QP's number
 * @stag: the new STag: the slot's index with the key to register under
 * @iova: the address of the first byte of the new registration
 * @access: VIADUCT_ACCESS_* it grants (MW_BIND refused)
 * @sge: the page list: SGEs of the QP's own registered memory, each checked
 *       by vd_tpt_check() like any SGE of the QP; every one but the first
 *       starts on a page boundary, every one but the last ends on one
 * @num_sge: the number of SGEs
 *
 * Builds a new registration (an instance) and publishes it in the slot of
 * @stag if that slot is @pd's and INVALID (its own empty state or an
 * invalidated registration); the table's reference to the registration it
 * replaces is dropped.
 *
 * Context: Process context (it allocates and takes a mutex). What it
 * allocates is charged to the active memory cgroup.
 * Return: the CQE status: VIADUCT_WC_SUCCESS; VIADUCT_WC_LOC_QP_OP_ERR for
 * bad access bits; VIADUCT_WC_LOC_PROT_ERR if @stag is not an INVALID slot
 * of @pd or the SGEs leave a gap; VIADUCT_WC_LOC_LEN_ERR for no SGE, an
 * empty one, more pages than the slot holds or an @iova range that wraps;
 * the status of a failed SGE check; VIADUCT_WC_GENERAL_ERR for no memory.
 */
u8 vd_frmr_register(struct vd_tpt *tpt, struct vd_pd *pd, u32 qpn, u32 stag,
		    u64 iova, u32 access, const struct viaduct_sge *sge,
		    u32 num_sge)
{
	int rights = vd_mr_access_rights(access);
	struct vd_frmr_list l;
	struct vd_umem *view;
	struct vd_mr *inst;
	u32 max_pages;
	u64 last;
	u8 status;

	if (rights < 0 || (rights & VD_RIGHT_MW_BIND))
		return VIADUCT_WC_LOC_QP_OP_ERR;
	max_pages = vd_frmr_capacity(tpt, pd, stag);
	if (!max_pages)
		return VIADUCT_WC_LOC_PROT_ERR;

	/* the pages are written through it only if it grants a write */
	status = vd_frmr_list_build(tpt, pd, qpn,
				    rights & (VD_RIGHT_LOCAL_WRITE |
					      VD_RIGHT_REMOTE_WRITE) ?
				    VD_RIGHT_LOCAL_WRITE : VD_RIGHT_LOCAL_READ,
				    max_pages, sge, num_sge, &l);
	if (status)
		goto err_list;
	if (check_add_overflow(iova, l.length - 1, &last)) {
		status = VIADUCT_WC_LOC_LEN_ERR;
		goto err_list;
	}

	view = kzalloc(sizeof(*view), GFP_KERNEL_ACCOUNT);
	inst = kzalloc(sizeof(*inst), GFP_KERNEL_ACCOUNT);
	if (!view || !inst) {
		kfree(view);
		kfree(inst);
		status = VIADUCT_WC_GENERAL_ERR;
		goto err_list;
	}
	view->addr = (unsigned long)iova;
	view->length = l.length;
	view->npages = l.npages;
	view->first_offset = l.first_offset;
	view->writable = rights & VD_RIGHT_LOCAL_WRITE;
	view->pages = l.pages;

	kref_init(&inst->ref);
	seqcount_init(&inst->attr_seq);
	inst->tpt = tpt;
	inst->pd = vd_pd_get(pd);
	inst->stag = stag;
	inst->access = access;
	inst->rights = rights;
	inst->state = VD_MR_VALID;
	inst->type = VD_STAG_FAST_REG;
	inst->addr = iova;
	inst->length = l.length;
	inst->umem = view;
	inst->srcs = l.srcs;
	inst->nr_srcs = l.nr_srcs;
	inst->fr_instance = true;
	atomic_inc(&tpt->nr_alive);
	vd_stat_inc(mrs);

	status = vd_frmr_publish(tpt, inst, l.npages);
	if (status)
		vd_mr_put(inst);
	return status;

err_list:
	vd_frmr_list_drop(&l);
	return status;
}
