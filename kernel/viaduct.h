/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Definitions shared by every part of the module: the device limits that
 * QUERY_DEVICE and LINK_GET report (and that the resource code enforces),
 * and kernel-version glue.
 *
 * The limits are properties of the implementation, not of the interface a
 * device is bound to, so they are the same for every device. Rings are
 * sized in powers of two, so the per-ring maxima must be powers of two too;
 * the KUnit suite viaduct_abi checks these relations.
 */
#ifndef _VD_VIADUCT_H
#define _VD_VIADUCT_H

#include <linux/bits.h>
#include <linux/build_bug.h>
#include <asm/page.h>

#define VD_MAX_PD		16384U
#define VD_MAX_MR		65536U
#define VD_MAX_CQ		16384U
#define VD_MAX_CQE		65536U		/* entries per CQ */
#define VD_MAX_QP		16384U
#define VD_MAX_SRQ		16384U		/* per context (limits.c) */
#define VD_MAX_QP_WR		16384U		/* WQEs per SQ or RQ */
/*
 * SGEs per WQE: the VI Architecture's 252 data segments per descriptor
 * (VIPL guide 5.4). A queue's slots are sized for what its creator asks,
 * so a QP of few SGEs pays nothing for the limit; 252 fit a 4 KiB slot.
 */
#define VD_MAX_SGE		252U
#define VD_MAX_INLINE		256U		/* bytes */
#define VD_MAX_ORD		32U
#define VD_MAX_IRD		32U
#define VD_MAX_MSG_SIZE		BIT_ULL(31)	/* must fit create_qp's __u32 */
#define VD_MAX_MR_SIZE		BIT_ULL(40)
#define VD_PAGE_SIZE		((u32)PAGE_SIZE)

/* The STag index is 24 bits wide and index 0 is never used. */
#define VD_STAG_INDEX_BITS	24

static_assert((VD_MAX_CQE & (VD_MAX_CQE - 1)) == 0);
static_assert((VD_MAX_QP_WR & (VD_MAX_QP_WR - 1)) == 0);
static_assert(VD_MAX_MSG_SIZE <= VD_MAX_MR_SIZE);
static_assert(VD_MAX_MR < (1U << VD_STAG_INDEX_BITS));

/*
 * The KUnit suites import the namespace of EXPORT_SYMBOL_IF_KUNIT().
 * MODULE_IMPORT_NS() takes a bare identifier up to 6.12 and a string literal
 * from 6.13 on; both expand to this modinfo entry, which is what modpost
 * and the module loader read.
 */
#define VD_IMPORT_KUNIT_NS()	MODULE_INFO(import_ns, "EXPORTED_FOR_KUNIT_TESTING")

#endif /* _VD_VIADUCT_H */
