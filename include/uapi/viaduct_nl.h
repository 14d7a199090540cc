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
 *       ADDR_DATA), a nested VIADUCT_A_LIMITS (VIADUCT_A_LIMIT_*), and
 *       VIADUCT_A_CONTEXTS (open contexts that selected the device).
 */
#ifndef _UAPI_VIADUCT_NL_H
#define _UAPI_VIADUCT_NL_H

#define VIADUCT_GENL_NAME		"viaduct"
#define VIADUCT_GENL_VERSION		1

enum viaduct_cmd {
	VIADUCT_CMD_UNSPEC,
	VIADUCT_CMD_LINK_ADD,
	VIADUCT_CMD_LINK_DEL,
	VIADUCT_CMD_LINK_GET,
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
	__VIADUCT_A_LIMIT_MAX,
};

#define VIADUCT_A_LIMIT_MAX (__VIADUCT_A_LIMIT_MAX - 1)

#endif /* _UAPI_VIADUCT_NL_H */
