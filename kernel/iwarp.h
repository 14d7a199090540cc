/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iWARP on the wire: MPA (RFC 5044, enhanced by RFC 6581), DDP (RFC 5041)
 * and RDMAP (RFC 5040). Byte layouts, pure encode/decode/validate helpers,
 * FPDU segmentation arithmetic and the MPA CRC. Nothing here touches a QP,
 * a socket or registered memory; Documentation/iwarp.rst draws the layouts
 * and gives the validation order. The functions are documented at their
 * definitions in iwarp.c; all are pure functions of their arguments,
 * callable in any context.
 *
 * Every multi-byte field is big endian on the wire, except the MPA CRC,
 * whose four bytes are the CRC32c value least significant byte first (as in
 * iSCSI, and as Linux siw sends it).
 */
#ifndef _VD_IWARP_H
#define _VD_IWARP_H

#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/types.h>

/* ---- MPA connection setup (RFC 5044 section 7.1, RFC 6581 section 9) ---- */

#define VD_MPA_KEY_REQ		"MPA ID Req Frame"
#define VD_MPA_KEY_REP		"MPA ID Rep Frame"
#define VD_MPA_KEY_SIZE		16
#define VD_MPA_REV1		1
#define VD_MPA_REV2		2	/* enhanced connection setup */
#define VD_MPA_MAX_PD		512	/* PD_Length limit of RFC 5044 */

/* struct vd_mpa_rr.flags */
#define VD_MPA_FLAG_M		0x80	/* markers: we never set nor accept */
#define VD_MPA_FLAG_C		0x40	/* CRC wanted / in use */
#define VD_MPA_FLAG_R		0x20	/* reply only: connection rejected */
#define VD_MPA_FLAG_H		0x10	/* rev 2: IRD/ORD words present */
#define VD_MPA_FLAG_RSVD	0x0f	/* ignored; siw uses 0x08 privately */

struct vd_mpa_rr {
	u8 key[VD_MPA_KEY_SIZE];
	u8 flags;
	u8 rev;
	__be16 pd_len;		/* private data bytes that follow */
} __packed;
static_assert(sizeof(struct vd_mpa_rr) == 20);

/* RFC 6581: the first four bytes of the private data when H is set. */
struct vd_mpa_v2 {
	__be16 ird;
	__be16 ord;
} __packed;
static_assert(sizeof(struct vd_mpa_v2) == 4);

#define VD_MPA_V2_P2P		0x8000	/* ird: peer-to-peer mode */
#define VD_MPA_V2_SEND_RTR	0x4000	/* ird: zero-length Send RTR */
#define VD_MPA_V2_WRITE_RTR	0x8000	/* ord: zero-length RDMA Write RTR */
#define VD_MPA_V2_READ_RTR	0x4000	/* ord: zero-length RDMA Read RTR */
#define VD_MPA_V2_IRD_ORD_MASK	0x3fff

/* struct vd_mpa_info.rtr */
#define VD_MPA_RTR_SEND		BIT(0)
#define VD_MPA_RTR_WRITE	BIT(1)
#define VD_MPA_RTR_READ		BIT(2)

struct vd_mpa_info {
	bool reply;		/* "MPA ID Rep Frame" */
	bool crc;		/* C */
	bool reject;		/* R */
	bool enhanced;		/* rev 2 with H: IRD/ORD words present */
	u8 rev;
	u16 pd_len;		/* private data of the ULP, without IRD/ORD */
	/* enhanced only */
	bool p2p;
	u8 rtr;			/* VD_MPA_RTR_* */
	u16 ird;
	u16 ord;
};

/* ---- DDP and RDMAP headers (RFC 5041 section 5, RFC 5040 section 4) ---- */

/* First byte of a DDP header: DDP control. */
#define VD_DDP_T		0x80	/* tagged buffer model */
#define VD_DDP_L		0x40	/* last segment of the message */
#define VD_DDP_RSVD		0x3c	/* sent 0, not checked (RFC 5041) */
#define VD_DDP_DV_MASK		0x03
#define VD_DDP_VERSION		1

/* Second byte: RDMAP control (DDP's RsvdULP). */
#define VD_RDMAP_RV_SHIFT	6
#define VD_RDMAP_RV_MASK	0xc0
#define VD_RDMAP_RSVD		0x30	/* sent 0, not checked (RFC 5040) */
#define VD_RDMAP_OP_MASK	0x0f
#define VD_RDMAP_VERSION	1

enum vd_rdmap_opcode {
	VD_OP_WRITE		= 0x0,
	VD_OP_READ_REQ		= 0x1,
	VD_OP_READ_RESP		= 0x2,
	VD_OP_SEND		= 0x3,
	VD_OP_SEND_INV		= 0x4,
	VD_OP_SEND_SE		= 0x5,
	VD_OP_SEND_SE_INV	= 0x6,
	VD_OP_TERMINATE		= 0x7,
	/* RFC 7306; its atomics (0xa, 0xb) are not supported */
	VD_OP_IMM		= 0x8,	/* Immediate Data */
	VD_OP_IMM_SE		= 0x9,	/* Immediate Data with SE */
	/*
	 * viaduct's own, in opcodes RFC 7306 leaves reserved: a Send whose
	 * 32-bit immediate data rides where Send with Invalidate carries the
	 * STag (Documentation/iwarp.rst, "Immediate data").
	 */
	VD_OP_SEND_IMM		= 0xc,
	VD_OP_SEND_SE_IMM	= 0xd,
	VD_OP_NR
};

/* Untagged queue numbers (RFC 5040 section 5.1). */
#define VD_QN_SEND		0
#define VD_QN_READ_REQ		1
#define VD_QN_TERMINATE		2
#define VD_QN_NR		3

/* Every untagged queue's first message carries MSN 1 (RFC 5041 5.1). */
#define VD_MSN_INITIAL		1

struct vd_ddp_tagged {
	u8 ddp_ctrl;
	u8 rdmap_ctrl;
	__be32 stag;
	__be64 to;
} __packed;
static_assert(sizeof(struct vd_ddp_tagged) == 14);

struct vd_ddp_untagged {
	u8 ddp_ctrl;
	u8 rdmap_ctrl;
	__be32 ulp;		/* Send with Invalidate: the STag; with */
				/* immediate data: the data; else 0 */
	__be32 qn;
	__be32 msn;
	__be32 mo;
} __packed;
static_assert(sizeof(struct vd_ddp_untagged) == 18);

/* RDMA Read Request: the payload of its untagged DDP segment. */
struct vd_rdmap_rreq {
	__be32 sink_stag;
	__be64 sink_to;
	__be32 size;
	__be32 src_stag;
	__be64 src_to;
} __packed;
static_assert(sizeof(struct vd_rdmap_rreq) == 28);

/*
 * Immediate Data (RFC 7306): the payload of its single untagged
 * segment is 8 bytes; viaduct's immediate data is 32 bits, in the first 4
 * (big endian), and the other 4 are sent as zero and ignored.
 */
struct vd_rdmap_imm {
	__be32 data;
	__be32 reserved;
} __packed;
static_assert(sizeof(struct vd_rdmap_imm) == 8);

/*
 * Terminate: the payload of its untagged DDP segment opens with this
 * control word: Layer(4) EType(4) ErrorCode(8) M D R Reserved(13).
 * The optional parts (terminate.h) follow.
 */
struct vd_rdmap_term {
	__be32 ctrl;
} __packed;
static_assert(sizeof(struct vd_rdmap_term) == 4);

#define VD_TERM_LAYER_SHIFT	28
#define VD_TERM_ETYPE_SHIFT	24
#define VD_TERM_ECODE_SHIFT	16
#define VD_TERM_HDR_M		0x00008000U	/* DDP Segment Length valid */
#define VD_TERM_HDR_D		0x00004000U	/* DDP header included */
#define VD_TERM_HDR_R		0x00002000U	/* RDMA Read Request included */
#define VD_TERM_HDR_MASK	0x0000e000U
/*
 * Where Linux siw puts M, D and R on little-endian hosts: its Terminate
 * header is a bitfield, which the compiler lays out from the least
 * significant bit of each byte. The same layout swaps the Layer and EType
 * nibbles. Received only; we send the RFC layout.
 */
#define VD_TERM_SIW_M		0x00000100U
#define VD_TERM_SIW_D		0x00000200U
#define VD_TERM_SIW_R		0x00000400U
#define VD_TERM_SIW_MASK	0x00000700U

/* ULPDU bytes of the headers of each message (the MPA length excluded). */
#define VD_HDR_TAGGED		sizeof(struct vd_ddp_tagged)
#define VD_HDR_UNTAGGED		sizeof(struct vd_ddp_untagged)
#define VD_HDR_READ_REQ		(VD_HDR_UNTAGGED + sizeof(struct vd_rdmap_rreq))
#define VD_HDR_TERMINATE	(VD_HDR_UNTAGGED + sizeof(struct vd_rdmap_term))
#define VD_HDR_IMM		(VD_HDR_UNTAGGED + sizeof(struct vd_rdmap_imm))
#define VD_HDR_MIN		VD_HDR_TAGGED

/* ---- MPA FPDU framing (RFC 5044 section 4) ---- */

#define VD_MPA_LEN_SIZE		2	/* ULPDU_Length */
#define VD_MPA_CRC_SIZE		4	/* always sent; zero without CRC */
#define VD_MPA_ULPDU_MAX	0xffffU
#define VD_MPA_CRC_SEED		(~0U)

/* Errors of received frames; terminate.c maps each to a Terminate code. */
enum vd_iw_err {
	VD_IW_OK = 0,
	/* LLP (MPA), RFC 5044 section 8 and RFC 6581 */
	VD_IW_LLP_LOST,			/* TCP connection lost */
	VD_IW_MPA_CRC,			/* CRC mismatch */
	VD_IW_MPA_FPDU,			/* ULPDU_Length inconsistent */
	VD_IW_MPA_REQREP,		/* invalid Request/Reply frame */
	VD_IW_MPA_MARKERS,		/* markers asked for: unsupported */
	VD_IW_MPA_CATASTROPHIC,		/* local catastrophic */
	VD_IW_MPA_NO_IRD,		/* insufficient IRD resources */
	VD_IW_MPA_NO_RTR,		/* no matching RTR */
	/* DDP, RFC 5041 section 7.2 */
	VD_IW_DDP_CATASTROPHIC,
	VD_IW_DDP_T_STAG,		/* tagged: invalid STag */
	VD_IW_DDP_T_BOUNDS,		/* tagged: base or bounds */
	VD_IW_DDP_T_NOT_ASSOC,		/* tagged: STag not of this stream */
	VD_IW_DDP_T_TO_WRAP,		/* tagged: TO wraps 2^64 */
	VD_IW_DDP_T_VERSION,		/* tagged: DDP version not 1 */
	VD_IW_DDP_UT_QN,		/* untagged: invalid queue number */
	VD_IW_DDP_UT_MSN_NOBUF,		/* untagged: no buffer for MSN */
	VD_IW_DDP_UT_MSN_RANGE,		/* untagged: MSN out of range */
	VD_IW_DDP_UT_MO,		/* untagged: invalid MO */
	VD_IW_DDP_UT_TOO_LONG,		/* untagged: too long for buffer */
	VD_IW_DDP_UT_VERSION,		/* untagged: DDP version not 1 */
	/* RDMAP, RFC 5040 section 7.4 */
	VD_IW_RDMAP_CATASTROPHIC,	/* local catastrophic */
	VD_IW_RDMAP_P_STAG,		/* protection: invalid STag */
	VD_IW_RDMAP_P_BOUNDS,		/* protection: base or bounds */
	VD_IW_RDMAP_P_RIGHTS,		/* protection: access rights */
	VD_IW_RDMAP_P_NOT_ASSOC,	/* protection: STag not of stream */
	VD_IW_RDMAP_P_TO_WRAP,		/* protection: TO wraps */
	VD_IW_RDMAP_P_INVALIDATE,	/* protection: cannot invalidate */
	VD_IW_RDMAP_P_UNSPEC,		/* protection: unspecified */
	VD_IW_RDMAP_VERSION,		/* operation: RDMAP version not 1 */
	VD_IW_RDMAP_OPCODE,		/* operation: unexpected opcode */
	VD_IW_RDMAP_STREAM,		/* operation: catastrophic, stream */
	VD_IW_RDMAP_GLOBAL,		/* operation: catastrophic, global */
	VD_IW_RDMAP_INVALIDATE,		/* operation: cannot invalidate */
	VD_IW_RDMAP_UNSPEC,		/* operation: unspecified */
	VD_IW_NR
};

/* Decoded headers of one DDP segment. */
struct vd_iw_hdr {
	u8 opcode;		/* enum vd_rdmap_opcode */
	bool last;		/* L */
	/* tagged (RDMA Write, Read Response) */
	u32 stag;
	u64 to;
	/* untagged */
	u32 qn;			/* from the wire; derived from @opcode on build */
	u32 msn;
	u32 mo;
	u32 inv_stag;		/* Send with Invalidate (+SE) */
	u32 imm;		/* Immediate Data, Send with Immediate (+SE) */
	/* RDMA Read Request */
	u32 sink_stag;
	u64 sink_to;
	u32 size;
	u32 src_stag;
	u64 src_to;
	/* set by vd_iw_parse() */
	u32 hdr_len;		/* ULPDU bytes the headers take */
	u32 payload_len;	/* ULPDU bytes after them */
};

/* One FPDU of a segmented message. */
struct vd_fpdu_seg {
	u32 offset;		/* MO (untagged) or TO - base TO (tagged) */
	u32 len;		/* payload bytes */
	bool last;		/* L */
	u32 ulpdu_len;		/* headers + payload: the MPA ULPDU_Length */
	u32 pad;
	u32 fpdu_len;		/* bytes on the wire, CRC included */
};

/* Below this many payload bytes per FPDU, FPDUs stop following the MSS. */
#define VD_FPDU_MIN_PAYLOAD	64U

bool vd_iw_opcode_valid(u8 opcode);
bool vd_iw_opcode_tagged(u8 opcode);
u32 vd_iw_opcode_qn(u8 opcode);
u32 vd_iw_opcode_hdr_len(u8 opcode);
const char *vd_iw_opcode_name(u8 opcode);

int vd_mpa_rr_build(void *buf, size_t size, const struct vd_mpa_info *info);
enum vd_iw_err vd_mpa_rr_parse(const struct vd_mpa_rr *hdr, bool reply,
			       struct vd_mpa_info *info);
void vd_mpa_v2_parse(const struct vd_mpa_v2 *v2, struct vd_mpa_info *info);

int vd_iw_build(void *ulpdu, size_t size, const struct vd_iw_hdr *hdr);
enum vd_iw_err vd_iw_parse(const void *ulpdu, u32 len, struct vd_iw_hdr *hdr);

enum vd_iw_err vd_ddp_msn_check(u32 msn, u32 expected, u32 posted);
enum vd_iw_err vd_ddp_mo_check(u32 mo, u32 expected);
enum vd_iw_err vd_ddp_fits(u32 mo, u32 len, u64 buf_len);

u32 vd_mpa_crc(u32 crc, const void *buf, size_t len);
u32 vd_mpa_pad(u32 ulpdu_len);
u32 vd_mpa_fpdu_len(u32 ulpdu_len);
u32 vd_mpa_fpdu_crc(const void *fpdu, u32 ulpdu_len);
int vd_mpa_fpdu_seal(void *fpdu, size_t size, u32 ulpdu_len, bool crc);
enum vd_iw_err vd_mpa_fpdu_verify(const void *fpdu, size_t len, bool crc);

u32 vd_mpa_mulpdu(u32 emss);
u32 vd_fpdu_max_payload(u32 emss, u32 hdr_len);
u32 vd_fpdu_count(u64 msg_len, u32 max_payload);
void vd_fpdu_segment(u64 msg_len, u32 max_payload, u32 hdr_len, u32 index,
		     struct vd_fpdu_seg *seg);

#endif /* _VD_IWARP_H */
