/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause */
/*
 * viaduct: generic-netlink management ABI (family "viaduct").
 *
 * The family is network-namespace aware: every command acts on, and every
 * dump lists, the devices of the namespace of the netlink socket.
 * Commands that change state need CAP_NET_ADMIN in that namespace.
 *
 *   VIADUCT_CMD_LINK_ADD  (NLM_F_REQUEST | NLM_F_ACK)
 *       Creates a device. Required: VIADUCT_A_DEV_NAME and one of
 *       VIADUCT_A_IFINDEX or VIADUCT_A_IFNAME naming an interface of the
 *       caller's namespace. Errors: ENODEV (no such interface), EEXIST (name
 *       in use in this namespace), EBUSY (the interface already has a device),
 *       EINVAL (bad name: empty, too long, not [A-Za-z0-9_.-]), EPERM.
 *       On success the reply is a VIADUCT_CMD_LINK_GET message for the new
 *       device.
 *
 *   VIADUCT_CMD_LINK_DEL  (NLM_F_REQUEST | NLM_F_ACK)
 *       Removes the device named by VIADUCT_A_DEV_NAME or
 *       VIADUCT_A_DEV_INDEX. Contexts that selected it see ENODEV from then on.
 *
 *   VIADUCT_CMD_LINK_GET  (NLM_F_REQUEST [| NLM_F_DUMP])
 *       One device (by name or index) or, with NLM_F_DUMP, all devices of the
 *       namespace. Each reply carries: DEV_INDEX, DEV_NAME, IFINDEX, IFNAME,
 *       MTU, FLAGS, ABI_VERSION, a nested VIADUCT_A_ADDRS list of
 *       VIADUCT_A_ADDR entries (each a nest of ADDR_FAMILY, ADDR_PREFIXLEN,
 *       ADDR_DATA), a nested VIADUCT_A_LIMITS (VIADUCT_A_LIMIT_*),
 *       VIADUCT_A_CONTEXTS (open contexts that selected the device), and a
 *       nested VIADUCT_A_STATS with the device's objects not yet freed:
 *       PDS, MRS (regions, windows and fast registrations, as the module's
 *       "mrs"), CQS (a QP's private completion rings too), QPS, SRQS and
 *       PINNED_PAGES. An object counts until it is freed, which may be
 *       after its context was closed; the module-wide STATS_GET counts the
 *       same objects of every device.
 *
 *   VIADUCT_CMD_STATS_GET  (NLM_F_REQUEST [| NLM_F_DUMP])
 *       Without NLM_F_DUMP: one message with a nested VIADUCT_A_STATS of
 *       every VIADUCT_A_STAT_* counter (u64). These counters are module-wide,
 *       not per namespace: "pinned_pages" is every page pinned by every
 *       registration. With NLM_F_DUMP: that message first, then one message
 *       per open context (open file of /dev/viaduct) of the namespace, in
 *       context id order, carrying CTX_ID, PID (the opener's thread-group
 *       id in the reader's pid namespace, 0 if not visible there), COMM (the
 *       opener's name at open()), DEV_INDEX and DEV_NAME if the context
 *       selected a device, and VIADUCT_A_STATS with the context's own
 *       PDS, MRS, CQS, QPS, SRQS, PINNED_PAGES and DOORBELLS. A context
 *       belongs to the namespace its opener was in at open().
 *
 *   VIADUCT_CMD_RES_GET  (NLM_F_REQUEST | NLM_F_DUMP)
 *       One message per resource of the namespace's contexts: contexts in
 *       id order, within one context in handle order. An optional
 *       VIADUCT_A_RES_TYPE in the request restricts the dump to one type.
 *       Every message carries CTX_ID, PID, COMM, DEV_INDEX, DEV_NAME (as
 *       STATS_GET), RES_TYPE and RES_HANDLE (the owner's handle), then:
 *         PD: RES_PDN
 *         MR: RES_PD_HANDLE, RES_PDN, RES_LENGTH, RES_PINNED_PAGES,
 *             RES_ACCESS (VIADUCT_ACCESS_*), and RES_STAG only if the
 *             requester has CAP_NET_ADMIN in the namespace
 *         CQ: RES_CQE (ring entries)
 *         QP: RES_PD_HANDLE, RES_PDN, RES_QPN, RES_QP_STATE (VIADUCT_QPS_*),
 *             RES_QP_FLAGS (VIADUCT_QP_F_*: POLLED is the doorbell mode),
 *             RES_SQ_DEPTH, RES_RQ_DEPTH, and RES_SEND_CQ / RES_RECV_CQ
 *             (CQ handles; absent for a private completion ring), RES_SRQ
 *             (the SRQ's handle) for a QP on an SRQ (its RES_RQ_DEPTH is 0)
 *         SRQ: RES_PD_HANDLE, RES_PDN, RES_RQ_DEPTH (ring slots),
 *             RES_SRQ_LIMIT (the armed limit, 0 if none), RES_SRQ_QPS
 *             (QPs created on it)
 *       Objects created or destroyed while a dump runs may or may not be
 *       listed; none is listed twice.
 */
#ifndef _VIADUCT_NL_H
#define _VIADUCT_NL_H

#define VIADUCT_GENL_NAME		"viaduct"
#define VIADUCT_GENL_VERSION		1

enum viaduct_cmd {
	VIADUCT_CMD_UNSPEC,
	VIADUCT_CMD_LINK_ADD,
	VIADUCT_CMD_LINK_DEL,
	VIADUCT_CMD_LINK_GET,
	VIADUCT_CMD_STATS_GET,
	VIADUCT_CMD_RES_GET,
	__VIADUCT_CMD_MAX,
};

#define VIADUCT_CMD_MAX (__VIADUCT_CMD_MAX - 1)

enum viaduct_attr {
	VIADUCT_A_UNSPEC,
	VIADUCT_A_DEV_INDEX,		/* u32 */
	VIADUCT_A_DEV_NAME,		/* string, < VIADUCT_NAME_SIZE */
	VIADUCT_A_IFINDEX,		/* u32 */
	VIADUCT_A_IFNAME,		/* string */
	VIADUCT_A_MTU,			/* u32 */
	VIADUCT_A_FLAGS,		/* u32, VIADUCT_DEV_F_* */
	VIADUCT_A_ABI_VERSION,		/* u32 */
	VIADUCT_A_ADDRS,		/* nest of VIADUCT_A_ADDR */
	VIADUCT_A_LIMITS,		/* nest of VIADUCT_A_LIMIT_* */
	VIADUCT_A_CONTEXTS,		/* u32 */
	VIADUCT_A_PAD,
	VIADUCT_A_STATS,		/* nest of VIADUCT_A_STAT_* */
	VIADUCT_A_CTX_ID,		/* u32, module-wide, for display */
	VIADUCT_A_PID,			/* u32 */
	VIADUCT_A_COMM,			/* string */
	VIADUCT_A_RES_TYPE,		/* u32, VIADUCT_RES_* */
	VIADUCT_A_RES_HANDLE,		/* u32 */
	VIADUCT_A_RES_PD_HANDLE,	/* u32 */
	VIADUCT_A_RES_PDN,		/* u32 */
	VIADUCT_A_RES_STAG,		/* u32 */
	VIADUCT_A_RES_LENGTH,		/* u64 */
	VIADUCT_A_RES_PINNED_PAGES,	/* u64 */
	VIADUCT_A_RES_ACCESS,		/* u32 */
	VIADUCT_A_RES_CQE,		/* u32 */
	VIADUCT_A_RES_QPN,		/* u32 */
	VIADUCT_A_RES_QP_STATE,		/* u32 */
	VIADUCT_A_RES_QP_FLAGS,		/* u32 */
	VIADUCT_A_RES_SQ_DEPTH,		/* u32 */
	VIADUCT_A_RES_RQ_DEPTH,		/* u32 */
	VIADUCT_A_RES_SEND_CQ,		/* u32 */
	VIADUCT_A_RES_RECV_CQ,		/* u32 */
	VIADUCT_A_RES_SRQ,		/* u32, an SRQ handle */
	VIADUCT_A_RES_SRQ_LIMIT,	/* u32 */
	VIADUCT_A_RES_SRQ_QPS,		/* u32 */
	__VIADUCT_A_MAX,
};

#define VIADUCT_A_MAX (__VIADUCT_A_MAX - 1)

enum viaduct_addr_attr {
	VIADUCT_A_ADDR_UNSPEC,
	VIADUCT_A_ADDR,			/* nest, inside VIADUCT_A_ADDRS */
	VIADUCT_A_ADDR_FAMILY,		/* u16, AF_INET or AF_INET6 */
	VIADUCT_A_ADDR_PREFIXLEN,	/* u8 */
	VIADUCT_A_ADDR_DATA,		/* binary, 4 or 16 bytes */
	__VIADUCT_A_ADDR_MAX,
};

#define VIADUCT_A_ADDR_MAX (__VIADUCT_A_ADDR_MAX - 1)

enum viaduct_limit_attr {
	VIADUCT_A_LIMIT_UNSPEC,
	VIADUCT_A_LIMIT_MAX_PD,		/* u32 */
	VIADUCT_A_LIMIT_MAX_MR,		/* u32 */
	VIADUCT_A_LIMIT_MAX_CQ,		/* u32 */
	VIADUCT_A_LIMIT_MAX_CQE,	/* u32 */
	VIADUCT_A_LIMIT_MAX_QP,		/* u32 */
	VIADUCT_A_LIMIT_MAX_QP_WR,	/* u32 */
	VIADUCT_A_LIMIT_MAX_SGE,	/* u32 */
	VIADUCT_A_LIMIT_MAX_INLINE,	/* u32 */
	VIADUCT_A_LIMIT_MAX_ORD,	/* u32 */
	VIADUCT_A_LIMIT_MAX_IRD,	/* u32 */
	VIADUCT_A_LIMIT_MAX_MSG_SIZE,	/* u64 */
	VIADUCT_A_LIMIT_MAX_MR_SIZE,	/* u64 */
	VIADUCT_A_LIMIT_PAD,
	VIADUCT_A_LIMIT_MAX_MW,		/* u32 */
	__VIADUCT_A_LIMIT_MAX,
};

#define VIADUCT_A_LIMIT_MAX (__VIADUCT_A_LIMIT_MAX - 1)

/*
 * Inside VIADUCT_A_STATS; all u64. A context reports PDS to DOORBELLS and
 * SRQS, a device PDS to PINNED_PAGES and SRQS.
 */
enum viaduct_stat_attr {
	VIADUCT_A_STAT_UNSPEC,
	VIADUCT_A_STAT_PAD,
	VIADUCT_A_STAT_CONTEXTS,	/* open /dev/viaduct files */
	VIADUCT_A_STAT_PDS,
	VIADUCT_A_STAT_MRS,
	VIADUCT_A_STAT_CQS,
	VIADUCT_A_STAT_QPS,
	VIADUCT_A_STAT_PINNED_PAGES,	/* pinned by registrations now */
	VIADUCT_A_STAT_DOORBELLS,	/* DOORBELL system calls */
	VIADUCT_A_STAT_WORKER_POLLS,	/* doorbell pages polled by the worker */
	VIADUCT_A_STAT_WORKER_WAKEUPS,	/* times the worker was woken */
	VIADUCT_A_STAT_WQES_CONSUMED,	/* WQEs taken from SQ and RQ rings */
	VIADUCT_A_STAT_CQES_WRITTEN,
	VIADUCT_A_STAT_CQ_OVERFLOWS,
	VIADUCT_A_STAT_TX_ZCOPY_MSGS,	/* messages sent by reference */
	VIADUCT_A_STAT_TX_ZCOPY_COPIED,	/* of those: the stack copied pages */
	VIADUCT_A_STAT_TX_ZCOPY_FALLBACKS, /* zero copy unavailable: copied */
	VIADUCT_A_STAT_TX_DIRECT,	/* messages sent by the posting context */
	VIADUCT_A_STAT_TX_DEFERRED,	/* messages sent by the transmit work */
	VIADUCT_A_STAT_RX_UPCALL,	/* FPDUs handled in the data_ready upcall */
	VIADUCT_A_STAT_RX_DEFERRED,	/* FPDUs handled by the receive work */
	VIADUCT_A_STAT_SRQS,		/* SRQs of a context or a device */
	VIADUCT_A_STAT_TX_ONECOPY_BYTES, /* FPDU bytes sent from the pages */
	VIADUCT_A_STAT_TX_BUFFERED_BYTES, /* ... from the transmit buffer */
	VIADUCT_A_STAT_RX_ONECOPY_BYTES, /* FPDU bytes placed from the skbs */
	VIADUCT_A_STAT_RX_BUFFERED_BYTES, /* ... through the receive buffer */
	__VIADUCT_A_STAT_MAX,
};

#define VIADUCT_A_STAT_MAX (__VIADUCT_A_STAT_MAX - 1)

/* VIADUCT_A_RES_TYPE */
#define VIADUCT_RES_PD			1
#define VIADUCT_RES_MR			2
#define VIADUCT_RES_CQ			3
#define VIADUCT_RES_QP			4
#define VIADUCT_RES_SRQ			5

#endif /* _VIADUCT_NL_H */
