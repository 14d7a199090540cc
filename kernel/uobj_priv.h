/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the handle table (uobj.h): the entry that tags an object with its
 * type, and the table's helpers for the files that hold the commands of
 * one object type (ucq.c, uqp.c, umr.c) and for the reports (uobj_report.c).
 * uobj.c owns the table; the functions are documented (kernel-doc) at
 * their definitions there. Nothing outside the handle table's files
 * includes this header.
 */
#ifndef _VD_UOBJ_PRIV_H
#define _VD_UOBJ_PRIV_H

#include <linux/types.h>
#include <linux/xarray.h>

#include "uobj.h"

struct vd_cq;
struct vd_mr;
struct vd_pd;
struct vd_ring_mem;

enum vd_uobj_type {
	VD_UOBJ_PD,
	VD_UOBJ_MR,
	VD_UOBJ_CQ,
	VD_UOBJ_QP,
	VD_UOBJ_SRQ,
	VD_UOBJ_CM_ID,		/* not reported: no VIADUCT_RES_* type */
	VD_UOBJ_MW,		/* a memory window (umw.c); not reported */
};

/* A QP's rings: doorbell page, SQ, RQ, two private completion rings. */
#define VD_UOBJ_MAX_KEYS	5

/*
 * mmap keys stay below 2^31 so that 32-bit processes can pass them as an
 * off_t; index 0 is not used, so an mmap at offset 0 maps nothing.
 */
#define VD_MMAP_KEY_LIMIT	XA_LIMIT(1, (1U << (31 - PAGE_SHIFT)) - 1)

struct vd_uobj {
	enum vd_uobj_type type;
	u32 nkeys;
	u32 keys[VD_UOBJ_MAX_KEYS];	/* indices in the table's @mmap_keys */
	u32 pd_handle;			/* MR, QP: for reports only */
	union {
		struct vd_pd *pd;
		struct vd_mr *mr;		/* MR and MW */
		struct vd_cq *cq;
		struct vd_qp *qp;
		struct vd_cm_id *cm_id;
		struct vd_srq *srq;
		void *obj;		/* NULL until the object exists */
	};
};

struct vd_uobj *vd_uobj_find(struct vd_uobj_table *t, u32 handle,
			     enum vd_uobj_type type);
void *vd_uobj_get(struct vd_uobj_table *t, u32 handle, enum vd_uobj_type type);
void *vd_uobj_hold(struct vd_uobj_table *t, u32 handle, enum vd_uobj_type type);
int vd_uobj_add_key(struct vd_uobj_table *t, struct vd_uobj *u,
		    struct vd_ring_mem *mem, __u64 *key);
void vd_uobj_drop_key(struct vd_uobj_table *t, u32 idx);
unsigned long vd_uobj_pinned_pages(const struct vd_uobj *u);
long vd_uobj_create(struct vd_uobj_table *t, enum vd_uobj_type type,
		    int (*build)(struct vd_uobj_table *t, struct vd_uobj *u,
				 void *reply, void *arg),
		    void *arg, void *reply, u32 *handle, size_t size,
		    const struct vd_uarg *uarg);

#endif /* _VD_UOBJ_PRIV_H */
