/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Terminate messages (RFC 5040 section 4.8): the error code table of
 * RDMAP, DDP and MPA, the map from our errors to it and to CQE statuses,
 * and building and parsing the message. Documentation/iwarp.rst has the
 * table and the header-inclusion rules; the functions are documented at
 * their definitions in terminate.c. All are pure functions of their
 * arguments, callable in any context.
 *
 * A code is 16 bits, layer << 12 | error type << 8 | error code (the
 * layout of VD_TERM_CODE() in tpt.h and of viaduct_query_qp.terminate).
 *
 * A received Terminate is never answered with one: the caller checks the
 * opcode before it calls vd_term_build().
 */
#ifndef _VD_TERMINATE_H
#define _VD_TERMINATE_H

#include <linux/types.h>

#include "iwarp.h"
#include "tpt.h"

/* Layers and error types beyond the ones tpt.h names. */
#define VD_TERM_LAYER_LLP		0x2
#define VD_TERM_RDMAP_CATASTROPHIC	0x0
#define VD_TERM_RDMAP_REMOTE_OP		0x2
#define VD_TERM_DDP_CATASTROPHIC	0x0
#define VD_TERM_DDP_UNTAGGED		0x2
#define VD_TERM_LLP_MPA			0x0

/**
 * vd_term_layer() - the layer of a code
 * @code: a Terminate code
 *
 * Return: bits 15-12.
 */
static inline u8 vd_term_layer(u16 code)
{
	return code >> 12;
}

/**
 * vd_term_etype() - the error type of a code
 * @code: a Terminate code
 *
 * Return: bits 11-8.
 */
static inline u8 vd_term_etype(u16 code)
{
	return (code >> 8) & 0xf;
}

/**
 * vd_term_ecode() - the error code of a code
 * @code: a Terminate code
 *
 * Return: bits 7-0.
 */
static inline u8 vd_term_ecode(u16 code)
{
	return code & 0xff;
}

/*
 * Biggest Terminate ULPDU: DDP header, control word, DDP Segment Length,
 * an untagged DDP header and an RDMA Read Request header.
 */
#define VD_TERM_ULPDU_MAX	(VD_HDR_TERMINATE + 2 + VD_HDR_READ_REQ)

struct vd_term_msg {
	u16 wire;		/* the code as sent */
	u16 code;		/* the code, nibbles put right if they can be */
	bool m, d, r;		/* header control bits as sent */
	bool siw;		/* M, D, R where siw puts them (VD_TERM_SIW_M) */
	u16 seg_len;		/* DDP Segment Length, if @m */
	u8 ddp_len;		/* bytes in @ddp: 0, 14 or 18 */
	u8 ddp[VD_HDR_UNTAGGED];
	bool have_rreq;
	u8 rreq[sizeof(struct vd_rdmap_rreq)];
};

u16 vd_term_code(enum vd_iw_err err);
enum vd_iw_err vd_term_err(u16 code);
u16 vd_term_access_code(enum vd_access_status status, bool tagged);
const char *vd_term_name(u16 code);
u8 vd_term_wc_status(enum vd_iw_err err);
u8 vd_term_remote_wc_status(const struct vd_term_msg *msg);
u32 vd_term_hdrct(u16 code, const void *bad, u32 bad_len);
u16 vd_term_fix_nibbles(u16 wire);

int vd_term_build(void *ulpdu, size_t size, u16 code, u32 msn,
		  const void *bad, u32 bad_len, u32 seg_len);
enum vd_iw_err vd_term_parse(const void *payload, u32 len,
			     struct vd_term_msg *msg);

#endif /* _VD_TERMINATE_H */
