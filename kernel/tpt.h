/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Translation and Protection Table: STags, memory regions, and the one
 * access check that every data path calls before it touches registered
 * memory. One table per device, embedded in it.
 *
 * A region (struct vd_mr) is found under RCU and held by references: the
 * registration reference belongs to whoever registered it and is consumed
 * by vd_mr_deregister(); the data path holds references of its own, which
 * any context may drop. Every copy into or out of a region is bracketed by
 * vd_mr_use_begin() and vd_mr_use_end(), which deregistration and
 * vd_tpt_invalidate_sync() wait for. The check is the same for every type
 * of STag.
 *
 * Documentation/memory.rst has the rules and the design; the functions are
 * documented (kernel-doc) at their definitions in tpt.c and frmr.c, the
 * inline helpers below where they are defined.
 */
#ifndef _VD_TPT_H
#define _VD_TPT_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/rcupdate.h>
#include <linux/seqlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <viaduct/viaduct-abi.h>

#include "viaduct.h"

struct vd_pd;
struct vd_umem;

/* VD_STAG_INDEX_BITS comes from viaduct.h, next to the device limits. */
static_assert(VD_STAG_INDEX_BITS == 32 - VIADUCT_STAG_INDEX_SHIFT);
#define VD_STAG_INDEX_MAX	((1U << VD_STAG_INDEX_BITS) - 1)

/**
 * vd_stag_index() - the table index of an STag (its upper 24 bits)
 * @stag: the STag
 *
 * Return: the index; 0 is never allocated.
 */
static inline u32 vd_stag_index(u32 stag)
{
	return stag >> VIADUCT_STAG_INDEX_SHIFT;
}

/**
 * vd_stag_key() - the key of an STag (its low 8 bits)
 * @stag: the STag
 *
 * Return: the key, which the consumer chose at registration.
 */
static inline u8 vd_stag_key(u32 stag)
{
	return stag & VIADUCT_STAG_KEY_MASK;
}

/**
 * vd_stag_make() - the STag of an index and a key
 * @index: a table index, at most VD_STAG_INDEX_MAX
 * @key: the consumer's key
 *
 * Return: the STag.
 */
static inline u32 vd_stag_make(u32 index, u8 key)
{
	return index << VIADUCT_STAG_INDEX_SHIFT | key;
}

/* Rights a data path needs, and that a region grants. */
#define VD_RIGHT_LOCAL_READ	BIT(0)
#define VD_RIGHT_LOCAL_WRITE	BIT(1)
#define VD_RIGHT_REMOTE_READ	BIT(2)
#define VD_RIGHT_REMOTE_WRITE	BIT(3)
#define VD_RIGHT_MW_BIND	BIT(4)
#define VD_RIGHT_ALL		0x1fU

enum vd_mr_state {
	VD_MR_INVALID,
	VD_MR_VALID,
};

/* What an STag names (Documentation/memory.rst, "STag types"). */
enum vd_stag_type {
	VD_STAG_MR,		/* REG_MR: registered by a call */
	VD_STAG_FAST_REG,	/* ALLOC_MR: registered through the SQ */
	VD_STAG_MW1,		/* memory window type 1: bound by a call */
	VD_STAG_MW2,		/* memory window type 2: bound to one QP */
	VD_STAG_TYPE_NR
};

enum vd_access_status {
	VD_ACCESS_OK,
	VD_ACCESS_INVALID_STAG,
	VD_ACCESS_INVALID_STATE,
	VD_ACCESS_PD_MISMATCH,
	VD_ACCESS_RIGHTS,
	VD_ACCESS_WRAP,
	VD_ACCESS_BOUNDS,
	VD_ACCESS_QP_MISMATCH,		/* type-2 window of another QP */
	VD_ACCESS_INVALIDATE,		/* type cannot be invalidated */
	VD_ACCESS_NR
};

struct vd_tpt {
	struct xarray mrs;		/* index -> struct vd_mr, RCU lookups */
	u32 next;			/* xa_alloc_cyclic() cursor */
	u32 max_mr;
	atomic_t nr_mrs;		/* registered (not yet deregistered) */
	atomic_t nr_alive;		/* not yet freed */
	atomic64_t pinned_pages;	/* pinned by its registrations now */
	atomic_t tcp_holds;		/* vd_mr_tcp_hold()s not yet released */
	struct llist_head release_list;	/* last put outside process context */
	struct work_struct release_work;
};

struct vd_mr {
	struct kref ref;
	struct vd_tpt *tpt;
	struct vd_pd *pd;		/* referenced */
	u32 stag;
	/*
	 * @pd, @access and @rights change together under @attr_seq
	 * (vd_mr_modify(), a REG_MR region only); the check reads them
	 * inside it. READ_ONCE/WRITE_ONCE.
	 */
	seqcount_t attr_seq;
	u32 access;			/* VIADUCT_ACCESS_* */
	u32 rights;			/* VD_RIGHT_*, derived from @access */
	u8 state;			/* enum vd_mr_state, READ_ONCE/WRITE_ONCE */
	u8 type;			/* enum vd_stag_type */
	u32 qpn;			/* VD_STAG_MW2: the QP bound to, else 0 */
	u32 max_pages;			/* VD_STAG_FAST_REG: page list capacity */
	/*
	 * A registration by a Fast-Register WR (frmr.c) or a window's
	 * binding (mw.c): the MRs its pages come from, referenced, and it
	 * occupies the table slot of ALLOC_MR or ALLOC_MW (an instance).
	 */
	struct vd_mr **srcs;
	u32 nr_srcs;
	bool fr_instance;
	/*
	 * A window's binding: @umem is its region's (srcs[0]), not owned,
	 * and the window's first byte is @umem_off bytes into it. While
	 * @mw_linked is 1 the binding counts in the region's @mw_bound.
	 */
	bool borrowed_umem;
	struct vd_mr *slot;		/* its ALLOC_MW slot; not referenced */
	atomic_t mw_linked;
	u64 umem_off;
	/* VD_STAG_MR: windows bound to it; -1 once DEREG_MR began */
	atomic_t mw_bound;
	/* access ends: vd_mr_use_begin()/end() against deregistration */
	bool dead;			/* deregistered; READ_ONCE/WRITE_ONCE */
	atomic_t users;			/* copies in progress */
	atomic_t tcp_held;		/* zero-copy messages TCP still holds */
	u64 addr;			/* base: the address of the first byte */
	u64 length;			/* bytes, > 0 */
	struct vd_umem *umem;		/* owned; NULL for table-only tests */
	struct llist_node release_node;
	struct rcu_head rcu;
};

void vd_tpt_init(struct vd_tpt *tpt, u32 max_mr);
void vd_tpt_uninit(struct vd_tpt *tpt);

int vd_mr_access_rights(u32 access);
struct vd_mr *vd_mr_register(struct vd_tpt *tpt, struct vd_pd *pd, u64 addr,
			     u64 length, u32 access, u8 key);
struct vd_mr *vd_mr_insert(struct vd_tpt *tpt, struct vd_pd *pd,
			   struct vd_umem *umem, u64 addr, u64 length,
			   u32 access, u8 key);
struct vd_mr *vd_stag_insert(struct vd_tpt *tpt, struct vd_pd *pd,
			     struct vd_umem *umem, u64 addr, u64 length,
			     u32 access, u8 key, enum vd_stag_type type,
			     u32 qpn, bool valid);
void vd_mr_deregister(struct vd_mr *mr);
int vd_mr_modify(struct vd_mr *mr, struct vd_pd *pd, u32 access);
void vd_mr_wait_uses(struct vd_mr *mr);
void vd_mr_instance_end(struct vd_mr *inst);
void vd_mr_put(struct vd_mr *mr);

/**
 * vd_mr_get() - take a reference
 * @mr: the region, on which the caller holds a reference
 *
 * For the data path, which drops it with vd_mr_put().
 *
 * Context: Any context.
 * Return: @mr.
 */
static inline struct vd_mr *vd_mr_get(struct vd_mr *mr)
{
	kref_get(&mr->ref);
	return mr;
}

/**
 * vd_mr_attrs() - the PD and rights of a region, of one moment
 * @mr: the region
 * @pd: set to its PD (compare it, do not dereference it without a
 *      reference of your own)
 * @rights: set to its VD_RIGHT_*
 *
 * vd_mr_modify() changes both together; read them through this, never one
 * by one.
 *
 * Context: Any context; does not sleep.
 */
static inline void vd_mr_attrs(const struct vd_mr *mr,
			       const struct vd_pd **pd, u32 *rights)
{
	unsigned int seq;

	do {
		seq = read_seqcount_begin(&mr->attr_seq);
		*pd = READ_ONCE(mr->pd);
		*rights = READ_ONCE(mr->rights);
	} while (read_seqcount_retry(&mr->attr_seq, seq));
}

bool vd_mr_use_begin(struct vd_mr *mr);
void vd_mr_use_end(struct vd_mr *mr);
void vd_mr_tcp_hold(struct vd_mr *mr);
void vd_mr_tcp_release(struct vd_mr *mr);
enum vd_access_status vd_tpt_invalidate_sync(struct vd_tpt *tpt, u32 stag,
					     const struct vd_pd *pd, u32 qpn,
					     bool remote);
u32 vd_tpt_regions(const struct vd_tpt *tpt);
u64 vd_tpt_pinned_pages(const struct vd_tpt *tpt);

/**
 * vd_mr_offset() - the byte offset of an address in the region
 * @mr: the region
 * @addr: an address vd_tpt_check() accepted for @mr
 *
 * Return: @addr less the region's base, the offset in its umem (for a
 * window, plus where the window starts in its region's umem).
 */
static inline u64 vd_mr_offset(const struct vd_mr *mr, u64 addr)
{
	return addr - mr->addr + mr->umem_off;
}

/* tpt_check.c; vd_tpt_lookup() for tpt.c's invalidation only */
struct vd_mr *vd_tpt_lookup(struct vd_tpt *tpt, u32 stag);
enum vd_access_status vd_tpt_check(struct vd_tpt *tpt, u32 stag,
				   const struct vd_pd *pd, u32 qpn, u32 rights,
				   u64 addr, u64 length, struct vd_mr **mrp);
enum vd_access_status vd_tpt_invalidate(struct vd_tpt *tpt, u32 stag,
					const struct vd_pd *pd, u32 qpn,
					bool remote);

/*
 * Terminate codes (RFC 5040 section 7.2), as 16 bits: layer << 12 |
 * error type << 8 | error code, the layout of struct
 * viaduct_query_qp.terminate.
 */
#define VD_TERM_LAYER_RDMAP		0x0
#define VD_TERM_LAYER_DDP		0x1
#define VD_TERM_RDMAP_REMOTE_PROT	0x1	/* RDMAP: remote protection error */
#define VD_TERM_RDMAP_REMOTE_OP		0x2	/* RDMAP: remote operation error */
#define VD_TERM_RDMAP_CANNOT_INV	0x9	/* both: STag cannot be invalidated */
#define VD_TERM_DDP_TAGGED		0x1	/* DDP: tagged buffer error */
#define VD_TERM_CODE(layer, etype, code) \
	((u16)((layer) << 12 | (etype) << 8 | (code)))

u16 vd_access_term_rdmap(enum vd_access_status status);
u16 vd_access_term_ddp(enum vd_access_status status);
u16 vd_access_term_invalidate(enum vd_access_status status);
u8 vd_access_wc_status(enum vd_access_status status, bool remote);

/* frmr.c: fast registration through the send queue. */
struct viaduct_sge;

struct vd_mr *vd_frmr_alloc(struct vd_tpt *tpt, struct vd_pd *pd,
			    u32 max_pages, u8 key);
u8 vd_frmr_register(struct vd_tpt *tpt, struct vd_pd *pd, u32 qpn, u32 stag,
		    u64 iova, u32 access, const struct viaduct_sge *sge,
		    u32 num_sge);

/* mw.c: memory windows. */
struct vd_mr *vd_mw_alloc(struct vd_tpt *tpt, struct vd_pd *pd,
			  enum vd_stag_type type, u8 key);
int vd_mw_bind(struct vd_tpt *tpt, struct vd_pd *pd, u32 qpn, u32 mw_stag,
	       u32 mr_stag, u64 addr, u64 length, u32 access);
u8 vd_mw_bind_status(int err);
void vd_mw_unlink(struct vd_mr *mr);
void vd_mw_qp_gone(struct vd_tpt *tpt, u32 qpn);
int vd_mr_refuse_binds(struct vd_mr *mr);

#endif /* _VD_TPT_H */
