/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause */
/*
 * viaduct: the VI Kernel Agent and software RNIC -- character device ABI.
 *
 * Included as <viaduct/viaduct-abi.h> by the module, the library and
 * installed programs alike: a directory of its own, so that nothing here
 * can collide with the kernel's uapi headers.
 *
 * Objects
 * -------
 * A *device* (vd0, vd1, ...) is a software RNIC bound to one network
 * interface. It lives in that interface's network namespace and its
 * addresses are the interface's IP addresses. Devices are created and
 * removed over the generic-netlink family described in viaduct-nl.h; a
 * device disappears when its interface is deleted or leaves its namespace.
 * Every device has a global index (never reused while the module is loaded)
 * and a name that is unique within its network namespace.
 *
 * A *context* is created by each open() of /dev/viaduct and destroyed, with
 * every resource it holds, on the last close() of that file (including when
 * the process exits or is killed). A context sees only the devices of the
 * network namespace its opener was in at open() time. Before a context can
 * create resources it selects one device with VIADUCT_IOCTL_SELECT_DEVICE;
 * the selection cannot be changed afterwards.
 *
 * If the selected device is removed while the context is open, every later
 * ioctl that needs the device fails with ENODEV; close() still works and
 * releases everything.
 *
 * Commands
 * --------
 * All commands are ioctl()s on the /dev/viaduct file descriptor. Every
 * argument structure uses fixed-width types with explicit padding; padding
 * and reserved fields must be zero on input (EINVAL otherwise) and are zero
 * on output. Pointers are passed as __u64. Unknown commands fail with ENOTTY,
 * unreadable or unwritable argument pointers with EFAULT.
 *
 *   VIADUCT_IOCTL_GET_ABI_VERSION  -> struct viaduct_abi_version
 *       The ABI version implemented by the module. Never fails.
 *
 *   VIADUCT_IOCTL_LIST_DEVICES  <-> struct viaduct_list_devices
 *       Copies up to @capacity entries (struct viaduct_device_entry) into
 *       the user array at @entries and returns in @count the number of
 *       devices visible to this context (which may exceed @capacity: call
 *       again with a larger array). @capacity may be 0 to ask the count.
 *
 *   VIADUCT_IOCTL_SELECT_DEVICE  -> struct viaduct_select_device
 *       Binds the context to one device, named by @name (if @name[0] is not
 *       zero) or by @index. ENODEV: no such device in this namespace.
 *       EBUSY: a device is already selected.
 *
 *   VIADUCT_IOCTL_QUERY_DEVICE  <-> struct viaduct_device_attr
 *       Attributes and limits of the device whose index is given in @index
 *       on input, or of the selected device if @index is
 *       VIADUCT_INDEX_SELECTED. ENODEV: no such device (or none selected).
 *       @caps (VIADUCT_DEV_CAP_*) says what the device does; a feature
 *       whose bit is clear is refused with EOPNOTSUPP wherever the ABI
 *       names it.
 *
 * Growing the ABI
 * ---------------
 * The size of a command's argument is part of its command number, as
 * _IOW()/_IOR()/_IOWR() encode it, and a structure may grow at its end.
 * The module matches a command by number and direction and takes the
 * caller's size from the command (the rule of the kernel's
 * copy_struct_from_user()):
 *  - a caller built against an older, smaller structure is served as if
 *    the fields it does not know were zero, and gets back only the
 *    fields it knows, so every new field's zero value keeps the old
 *    behaviour;
 *  - a caller built against a newer, larger structure works on an older
 *    module as long as the fields that module does not know are zero;
 *    if one is not, the command fails with E2BIG and does nothing, never
 *    a request silently half done;
 *  - a size smaller than the structure's first published size is not
 *    the command (ENOTTY).
 * Fields are only ever added at the end; existing fields never move or
 * change meaning; a structure that grows gets a
 * VIADUCT_<NAME>_SIZE_VER<n> constant for each published size. Reserved
 * fields and unused flag bits inside a structure are checked to be zero
 * on input (EINVAL) and may take a meaning later the same way. Whatever
 * cannot grow so comes as a new command, and the old one stays. What the
 * ABI names but the module does not do is refused with EOPNOTSUPP and
 * has a VIADUCT_DEV_CAP_* bit that is clear, so that a program can ask
 * before it tries. Ring records keep their layout and grow only into
 * their reserved fields and flag bits; a queue's slot size is the one
 * CREATE_QP reports. VIADUCT_ABI_VERSION is bumped only for incompatible
 * changes.
 */
#ifndef _VIADUCT_ABI_H
#define _VIADUCT_ABI_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define VIADUCT_ABI_VERSION		1
#define VIADUCT_DEVICE_NAME		"viaduct"	/* /dev/viaduct */

#define VIADUCT_NAME_SIZE		16	/* device and interface names, NUL-terminated */
#define VIADUCT_MAX_ADDRS		16	/* addresses reported by QUERY_DEVICE */
#define VIADUCT_INDEX_SELECTED		0xffffffffU

/* struct viaduct_addr.family: the AF_* values of <sys/socket.h> */
#define VIADUCT_AF_INET			2
#define VIADUCT_AF_INET6		10

struct viaduct_abi_version {
	__u32 abi_version;
	__u32 reserved;
};

struct viaduct_device_entry {
	__u32 index;
	__u32 ifindex;
	char name[VIADUCT_NAME_SIZE];
	char ifname[VIADUCT_NAME_SIZE];
};

struct viaduct_list_devices {
	__aligned_u64 entries;	/* user pointer to struct viaduct_device_entry[] */
	__u32 capacity;		/* in: entries the array holds */
	__u32 count;		/* out: devices visible to this context */
};

struct viaduct_select_device {
	__u32 index;
	__u32 reserved;
	char name[VIADUCT_NAME_SIZE];
};

struct viaduct_addr {
	__u16 family;		/* VIADUCT_AF_INET or VIADUCT_AF_INET6 */
	__u8 prefixlen;
	__u8 reserved[5];
	__u8 addr[16];		/* network byte order; IPv4 in the first 4 bytes */
};

/* struct viaduct_device_attr.flags */
#define VIADUCT_DEV_F_UP		(1U << 0)	/* interface is administratively up */
#define VIADUCT_DEV_F_RUNNING		(1U << 1)	/* and has carrier */

/*
 * struct viaduct_device_attr.caps: what the device does. A clear bit is a
 * feature the ABI names and the module refuses (EOPNOTSUPP).
 */
#define VIADUCT_DEV_CAP_POLLED_DOORBELL	(1U << 0)	/* VIADUCT_QP_F_POLLED */
#define VIADUCT_DEV_CAP_IMM_DATA	(1U << 1)	/* with immediate, where negotiated */
#define VIADUCT_DEV_CAP_ZERO_COPY	(1U << 2)	/* large sends by reference */
#define VIADUCT_DEV_CAP_CONVERT_SOCKET	(1U << 3)	/* CM_CONVERT_SOCKET */
#define VIADUCT_DEV_CAP_P2P		(1U << 4)	/* RFC 6581 peer-to-peer RTR */
#define VIADUCT_DEV_CAP_MW		(1U << 5)	/* memory windows: ALLOC_MW, BIND_MW */
#define VIADUCT_DEV_CAP_SRQ		(1U << 6)	/* shared receive queues */
#define VIADUCT_DEV_CAP_FAST_REG	(1U << 7)	/* ALLOC_MR, OP_FAST_REG, LOCAL_INV */
#define VIADUCT_DEV_CAP_RELIABLE_RECEPTION (1U << 8)	/* VIPL Reliable Reception */
#define VIADUCT_DEV_CAP_SEND_INV	(1U << 9)	/* VIADUCT_OP_SEND_INV, WC_F_INVALIDATED */
#define VIADUCT_DEV_CAP_LOCAL_FENCE	(1U << 10)	/* VIADUCT_SQE_LOCAL_FENCE */
#define VIADUCT_DEV_CAP_CM_HANDOFF	(1U << 11)	/* CM_HANDOFF */
#define VIADUCT_DEV_CAP_CONVERT_DATA	(1U << 12)	/* CONVERT_SOCKET: data, takes the fd */
#define VIADUCT_DEV_CAP_MODIFY_MR	(1U << 13)	/* MODIFY_MR: rights, PD in place */
#define VIADUCT_DEV_CAP_CQ_THRESHOLD	(1U << 14)	/* ARM_CQ @threshold */
#define VIADUCT_DEV_CAP_RING_DEPTH	(1U << 15)	/* CREATE_QP's *_ring_depth */

struct viaduct_device_attr {
	__u32 index;		/* in: device index or VIADUCT_INDEX_SELECTED */
	__u32 abi_version;
	char name[VIADUCT_NAME_SIZE];
	char ifname[VIADUCT_NAME_SIZE];
	__u32 ifindex;
	__u32 mtu;
	__u32 flags;		/* VIADUCT_DEV_F_* */
	__u32 num_addrs;	/* entries valid in @addrs */
	__u8 hw_addr[8];	/* interface MAC, 6 bytes used for Ethernet */

	/* limits */
	__u32 max_pd;
	__u32 max_mr;
	__u32 max_cq;
	__u32 max_cqe;		/* entries per CQ */
	__u32 max_qp;
	__u32 max_qp_wr;	/* work requests per send or receive queue */
	__u32 max_sge;		/* scatter/gather elements per work request */
	__u32 max_inline;	/* bytes of inline data per send */
	__u32 max_ord;		/* outstanding RDMA reads as initiator */
	__u32 max_ird;		/* outstanding RDMA reads as responder */
	__aligned_u64 max_msg_size;	/* bytes per message */
	__aligned_u64 max_mr_size;	/* bytes per registered region */
	__u32 page_size;	/* registration granule */
	__u32 caps;		/* out: VIADUCT_DEV_CAP_*; ignored on input */

	struct viaduct_addr addrs[VIADUCT_MAX_ADDRS];

	/* VIADUCT_DEVICE_ATTR_SIZE_VER1 */
	__u32 max_mw;		/* memory windows; 0 without VIADUCT_DEV_CAP_MW */
	__u32 reserved;
};

#define VIADUCT_DEVICE_ATTR_SIZE_VER0	512	/* up to @addrs */
#define VIADUCT_DEVICE_ATTR_SIZE_VER1	520

#define VIADUCT_IOCTL_MAGIC		0xD6

#define VIADUCT_IOCTL_GET_ABI_VERSION	_IOR(VIADUCT_IOCTL_MAGIC, 0x00, struct viaduct_abi_version)
#define VIADUCT_IOCTL_LIST_DEVICES \
	_IOWR(VIADUCT_IOCTL_MAGIC, 0x01, struct viaduct_list_devices)
#define VIADUCT_IOCTL_SELECT_DEVICE \
	_IOW(VIADUCT_IOCTL_MAGIC, 0x02, struct viaduct_select_device)
#define VIADUCT_IOCTL_QUERY_DEVICE	_IOWR(VIADUCT_IOCTL_MAGIC, 0x03, struct viaduct_device_attr)

/*
 * Resources (ABI v1)
 * ------------------
 * Every resource belongs to the context that created it and is named by a
 * handle: a __u32, never 0, meaningful only on the file it came from. A
 * handle from another file (another process) names nothing there: ENOENT.
 * Creating any resource needs a selected device.
 *
 *   CREATE_PD / DESTROY_PD: a protection domain (VIPL protection tag).
 *     Destroying one still used by an MR or QP fails with EBUSY.
 *
 *   REG_MR / DEREG_MR: registers [addr, addr + length) of the caller's
 *     address space (any alignment; pinned page-granular, charged to
 *     RLIMIT_MEMLOCK unless CAP_IPC_LOCK) and returns its handle and STag
 *     (24-bit index << 8 | the caller's 8-bit key). Local read is always
 *     granted. VIADUCT_ACCESS_REMOTE_WRITE requires LOCAL_WRITE (as in
 *     libibverbs). A write right on memory the caller cannot write fails
 *     with EACCES; unmapped memory with EFAULT; past the memlock limit with
 *     ENOMEM.
 *
 *   ALLOC_MR: an STag for fast registration on a PD (VIADUCT_DEV_CAP_FAST_REG):
 *     empty and INVALID until a VIADUCT_OP_FAST_REG work request registers
 *     pages of the caller's own MRs in it; released with DEREG_MR. Once
 *     DEREG_MR or an invalidation (Local Invalidate, a peer's Send with
 *     Invalidate, RDMA Read with invalidate) has completed, no byte is read
 *     from or placed into the region any more (Documentation/memory.rst).
 *
 *   CREATE_CQ / RESIZE_CQ / DESTROY_CQ: a completion ring of at least
 *     @entries CQEs (rounded up to a power of two). The reply gives the mmap
 *     key of the ring (struct viaduct_ring + CQEs). A CQ attached to a
 *     completion channel (an fd from CREATE_COMP_CHANNEL) reports armed
 *     completions there. RESIZE_CQ moves unread CQEs to a new ring with a
 *     new key; the old mapping stays valid but is no longer written.
 *     RESIZE_CQ fails with EBUSY if the CQ was polled during the call.
 *     Destroying a CQ used by a QP fails with EBUSY.
 *
 *   ARM_CQ: one-shot request for an event on the CQ's channel at the next
 *     completion (NEXT) or the next solicited or error completion
 *     (SOLICITED). CQEs already in the ring do not fire. With a @threshold
 *     (VIADUCT_DEV_CAP_CQ_THRESHOLD) the arm is moderated instead: one
 *     event once the ring holds at least @threshold unread CQEs, see
 *     struct viaduct_arm_cq.
 *
 *   CREATE_QP / MODIFY_QP / QUERY_QP / DESTROY_QP: a queue pair (a VIPL VI).
 *     Send and receive completions go to @send_cq and @recv_cq; a handle of
 *     0 gives that queue a private completion ring of its own (mapped with
 *     its own key), which is how a VI without a CQ completes. The reply gives
 *     the mmap keys of the doorbell page (struct viaduct_doorbell), the SQ
 *     and RQ rings (arrays of fixed-size WQE slots, no header) and the
 *     private completion rings, if any. A queue's depth is how many WRs it
 *     holds in flight (taken, not yet completed); its ring holds the WRs
 *     posted and not yet taken. The kernel takes WRs at each doorbell,
 *     while fewer than the depth are in flight, and frees their slots (the
 *     consumer index in the doorbell page). The ring has as many slots as
 *     the depth unless @sq_ring_depth (@rq_ring_depth) asks for fewer
 *     (VIADUCT_DEV_CAP_RING_DEPTH): a power of two from 1 to the depth,
 *     so that a queue of large slots keeps its depth in flight in a ring
 *     of few pages.
 *
 *   DOORBELL: tells the kernel that the SQ and/or RQ producer index in the
 *     doorbell page moved. With VIADUCT_QP_F_POLLED the kernel polls the
 *     doorbell page itself and the call is needed only while
 *     VIADUCT_DB_F_NEED_WAKEUP is set (see Documentation/rings.rst).
 *
 *   CREATE_COMP_CHANNEL: returns a new file descriptor (O_CLOEXEC) that is
 *     pollable and read()s struct viaduct_cq_event records.
 *
 *   Asynchronous events (CQ overflow, QP errors) are read() from the
 *     /dev/viaduct descriptor itself as struct viaduct_async_event records;
 *     it polls readable while events are pending. Handles are reused: the
 *     unread events of a QP, CQ or SRQ go when DESTROY_* returns, before
 *     another object can get its handle.
 *
 * mmap: call mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, key)
 * with a key and size from a create reply. Mappings are not inherited by a
 * child across fork().
 */

/* REG_MR access rights (local read is implied) */
#define VIADUCT_ACCESS_LOCAL_WRITE	(1U << 0)
#define VIADUCT_ACCESS_REMOTE_WRITE	(1U << 1)
#define VIADUCT_ACCESS_REMOTE_READ	(1U << 2)
#define VIADUCT_ACCESS_MW_BIND		(1U << 3)	/* windows may be bound to it */
#define VIADUCT_ACCESS_ALL		0xfU
/*
 * Binding a window only (never REG_MR): the window is addressed from 0
 * (its first byte is address 0), not by the region's addresses.
 */
#define VIADUCT_ACCESS_ZERO_BASED	(1U << 4)

#define VIADUCT_STAG_KEY_MASK		0xffU
#define VIADUCT_STAG_INDEX_SHIFT	8

struct viaduct_handle {
	__u32 handle;		/* in (destroy) or out (create PD) */
	__u32 reserved;
};

struct viaduct_reg_mr {
	__aligned_u64 addr;	/* in */
	__aligned_u64 length;	/* in */
	__u32 pd_handle;	/* in */
	__u32 access;		/* in: VIADUCT_ACCESS_* */
	__u8 key;		/* in: low 8 bits of the STag */
	__u8 reserved[3];
	__u32 handle;		/* out */
	__u32 stag;		/* out */
	__u32 reserved2;
};

/*
 * ALLOC_MR (VIADUCT_DEV_CAP_FAST_REG): an STag for fast registration on a
 * PD, INVALID and without pages until a VIADUCT_OP_FAST_REG WR registers
 * at most @max_pages pages (1 .. the device's max_mr_size / page_size) in
 * it. Its handle is released with DEREG_MR like any MR.
 */
struct viaduct_alloc_mr {
	__u32 pd_handle;	/* in */
	__u32 max_pages;	/* in */
	__u8 key;		/* in: low 8 bits of the first STag */
	__u8 reserved[3];
	__u32 handle;		/* out */
	__u32 stag;		/* out */
	__u32 reserved2;
};

struct viaduct_create_cq {
	__aligned_u64 user_data;	/* in: returned in events */
	__u32 entries;		/* in: minimum; out: actual */
	__s32 channel_fd;	/* in: completion channel or -1 */
	__u32 flags;		/* in: 0 */
	__u32 handle;		/* out */
	__aligned_u64 mmap_key;	/* out */
	__aligned_u64 mmap_size;	/* out */
};

struct viaduct_resize_cq {
	__u32 handle;		/* in */
	__u32 entries;		/* in: minimum; out: actual */
	__aligned_u64 mmap_key;	/* out */
	__aligned_u64 mmap_size;	/* out */
};

#define VIADUCT_ARM_NEXT		(1U << 0)
#define VIADUCT_ARM_SOLICITED		(1U << 1)

/*
 * ARM_CQ: @threshold 0 is the one-shot arm above. A @threshold of N
 * (1 .. the CQ's entries, VIADUCT_DEV_CAP_CQ_THRESHOLD) moderates it, so
 * that a thread waiting for N completions is woken once, not N times: the
 * arm fires as soon as the ring holds at least N unread CQEs (the
 * producer index minus the consumer index in the ring header, so the
 * consumer must have stored its index before it arms). That is checked
 * when the CQ is armed, counting the CQEs already in the ring (an arm
 * that finds N fires at once, so a completion racing the arm is never
 * lost), and again at every CQE written after it. An unsuccessful CQE
 * fires it at once, whatever the count, and so does a solicited one if
 * the flags include VIADUCT_ARM_SOLICITED; @flags still needs at least
 * one bit. Arming a CQ already armed makes one arm that fires when either
 * would: a plain NEXT arm fires at the next CQE, a plain SOLICITED arm
 * joined with a threshold fires at a solicited CQE or the count, two
 * thresholds keep the lower. A threshold above the CQ's entries is
 * EINVAL, and so is a non-zero @reserved.
 */
struct viaduct_arm_cq {
	__u32 handle;
	__u32 flags;		/* VIADUCT_ARM_* */
	__u32 threshold;	/* unread CQEs that fire the arm; 0: the next CQE */
	__u32 reserved;		/* 0 */
};

#define VIADUCT_ARM_CQ_SIZE_VER0	8	/* without @threshold */
#define VIADUCT_ARM_CQ_SIZE_VER1	16

/* QP states: verbs names, VIPL states in brackets */
#define VIADUCT_QPS_IDLE		0	/* [Idle] */
#define VIADUCT_QPS_RTS			1	/* [Connected] */
#define VIADUCT_QPS_CLOSING		2	/* graceful close under way */
#define VIADUCT_QPS_TERMINATE		3	/* Terminate sent or received */
#define VIADUCT_QPS_ERROR		4	/* [Error]; outstanding WRs flushed */
#define VIADUCT_QPS_MAX			4
/* VIPL's Pending Connect is an Idle QP with a connection request under way. */

/*
 * VIPL reliability levels (struct viaduct_create_qp.reliability). A send
 * completes when its last FPDU is in the TCP stream, so the module gives
 * Reliable Delivery, which also serves an Unreliable VI; Reliable
 * Reception (completion once placed at the peer) is refused with
 * EOPNOTSUPP (VIADUCT_DEV_CAP_RELIABLE_RECEPTION is clear).
 */
#define VIADUCT_RELIABILITY_UNRELIABLE		(1U << 0)
#define VIADUCT_RELIABILITY_RELIABLE_DELIVERY	(1U << 1)
#define VIADUCT_RELIABILITY_RELIABLE_RECEPTION	(1U << 2)

/* struct viaduct_create_qp.flags */
#define VIADUCT_QP_F_POLLED		(1U << 0)	/* kernel polls the doorbell page */

/* QP access: what the peer may do to this QP's memory */
#define VIADUCT_QP_ACCESS_REMOTE_WRITE	(1U << 0)
#define VIADUCT_QP_ACCESS_REMOTE_READ	(1U << 1)

struct viaduct_create_qp {
	__aligned_u64 user_data;	/* in: returned in events */
	__u32 pd_handle;	/* in */
	__u32 send_cq;		/* in: CQ handle or 0 for a private ring */
	__u32 recv_cq;		/* in: CQ handle or 0 for a private ring */
	__u32 flags;		/* in: VIADUCT_QP_F_* */
	__u32 reliability;	/* in: one VIADUCT_RELIABILITY_* */
	__u32 access;		/* in: VIADUCT_QP_ACCESS_* */
	__u32 sq_depth;		/* in: minimum; out: actual (power of two) */
	__u32 rq_depth;		/* in/out, likewise */
	__u32 max_send_sge;	/* in/out */
	__u32 max_recv_sge;	/* in/out */
	__u32 max_inline;	/* in/out */
	__u32 ord;		/* in: outstanding RDMA reads as initiator */
	__u32 ird;		/* in: as responder */
	__u32 max_msg_size;	/* in: VIPL MaxTransferSize, 0 for the device limit; out */
	__u32 handle;		/* out */
	__u32 qpn;		/* out: QP number, unique in the module */
	__u32 sq_wqe_size;	/* out: bytes per SQ slot */
	__u32 rq_wqe_size;	/* out: bytes per RQ slot */
	__aligned_u64 db_key;	/* out: doorbell page */
	__aligned_u64 sq_key;	/* out */
	__aligned_u64 rq_key;	/* out */
	__aligned_u64 scq_key;	/* out: private send completion ring, if send_cq == 0 */
	__aligned_u64 rcq_key;	/* out: private receive completion ring, if recv_cq == 0 */
	__u32 db_size;		/* out */
	__u32 sq_size;		/* out */
	__u32 rq_size;		/* out */
	__u32 scq_size;		/* out */
	__u32 rcq_size;		/* out */
	__u32 scq_entries;	/* out */
	__u32 rcq_entries;	/* out */
	__u32 srq_handle;	/* in: an SRQ to receive from, or 0 (see CREATE_SRQ) */
	/* VIADUCT_CREATE_QP_SIZE_VER0 ends here */
	__u32 sq_ring_depth;	/* in: SQ ring slots, 0 for @sq_depth; out: actual */
	__u32 rq_ring_depth;	/* in/out, likewise for the RQ (0 on an SRQ) */
};

#define VIADUCT_CREATE_QP_SIZE_VER0	152	/* up to @srq_handle */
#define VIADUCT_CREATE_QP_SIZE_VER1	160

/* struct viaduct_modify_qp.mask: which fields to apply */
#define VIADUCT_QP_ATTR_STATE		(1U << 0)
#define VIADUCT_QP_ATTR_ACCESS		(1U << 1)
#define VIADUCT_QP_ATTR_ORD		(1U << 2)
#define VIADUCT_QP_ATTR_IRD		(1U << 3)
#define VIADUCT_QP_ATTR_ALL		0xfU

struct viaduct_modify_qp {
	__u32 handle;
	__u32 mask;		/* VIADUCT_QP_ATTR_* */
	__u32 state;		/* VIADUCT_QPS_* */
	__u32 access;
	__u32 ord;
	__u32 ird;
};

struct viaduct_query_qp {
	__u32 handle;		/* in */
	__u32 state;		/* out */
	__u32 access;
	__u32 ord;
	__u32 ird;
	__u32 qpn;
	__u32 sq_depth;
	__u32 rq_depth;
	__u32 sq_outstanding;	/* WRs the kernel holds for the SQ */
	__u32 rq_outstanding;
	__u32 terminate;	/* last Terminate: layer << 12 | etype << 8 | code */
	__u32 reserved;
};

#define VIADUCT_DOORBELL_SQ		(1U << 0)
#define VIADUCT_DOORBELL_RQ		(1U << 1)

struct viaduct_doorbell_req {
	__u32 handle;
	__u32 flags;		/* VIADUCT_DOORBELL_* */
};

struct viaduct_comp_channel {
	__s32 fd;		/* out */
	__u32 reserved;
};

/*
 * Shared memory layouts.
 *
 * Indices are free-running __u32 counters; slot = index & (entries - 1).
 * Each index has one writer and sits on its own cache line. The writer
 * publishes with a store-release after filling the slots; the reader loads
 * with load-acquire before reading them. The kernel keeps a private copy of
 * every index it owns, copies each element out of the ring before looking
 * at it, and never trusts an index written by userspace beyond using it as
 * a hint bounded by the ring size.
 */
#define VIADUCT_CACHELINE		64

struct viaduct_doorbell {
	__u32 sq_producer;	/* user writes: SQ slots filled */
	__u32 pad0[15];
	__u32 rq_producer;	/* user writes: RQ slots filled */
	__u32 pad1[15];
	__u32 sq_consumer;	/* kernel writes: SQ slots taken (free again) */
	__u32 pad2[15];
	__u32 rq_consumer;	/* kernel writes: RQ slots taken */
	__u32 pad3[15];
	__u32 flags;		/* kernel writes: VIADUCT_DB_F_* */
	/*
	 * kernel writes: nonzero while the QP is in RTS with an RQ of its
	 * own, when a message that needs a receive takes it from the ring
	 * itself: new RQ WQEs need no DOORBELL then (Documentation/rings.rst,
	 * "Receives without a doorbell"). 0 (also from a module that does
	 * not know it): ring as always.
	 */
	__u32 rq_on_demand;
	__u32 pad4[14];
};

#define VIADUCT_DB_F_NEED_WAKEUP	(1U << 0)	/* polling worker asleep: ring DOORBELL */

/* The header of a completion ring; CQEs follow at VIADUCT_RING_HDR_SIZE. */
struct viaduct_ring {
	__u32 producer;		/* kernel writes */
	__u32 pad0[15];
	__u32 consumer;		/* user writes */
	__u32 pad1[15];
	__u32 flags;		/* kernel writes: VIADUCT_RING_F_* */
	__u32 entries;		/* informational */
	__u32 pad2[14];
	__u32 reserved[16];
};

#define VIADUCT_RING_HDR_SIZE		256
#define VIADUCT_RING_F_OVERFLOW		(1U << 0)	/* a completion did not fit: CQ in error */

struct viaduct_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 stag;
};

/*
 * SQ opcodes. VIADUCT_OP_SEND_INV (VIADUCT_DEV_CAP_SEND_INV): a Send with
 * Invalidate (with VIADUCT_SQE_SOLICITED: with SE and Invalidate); the
 * peer invalidates @remote_stag, which must be one of its fast-register
 * MRs or memory windows of the PD of the receiving QP, else the peer
 * answers with a Terminate and the connection ends (Documentation/
 * memory.rst). It takes no immediate data and completes as
 * VIADUCT_WC_SEND.
 *
 * The local memory operations (VIADUCT_DEV_CAP_FAST_REG) take effect when
 * the WR executes, in order: every later WR of the SQ sees the result.
 *   VIADUCT_OP_LOCAL_INV: invalidates @remote_stag, a fast-register MR of
 *     the QP's PD (not a plain MR: LOC_PROT_ERR). No SGE, no payload.
 *   VIADUCT_OP_FAST_REG: registers in the fast-register MR whose index
 *     @remote_stag has (from ALLOC_MR) the page list its SGEs describe,
 *     under the STag @remote_stag (the caller's new key in its low 8 bits),
 *     at the address @remote_addr, with the VIADUCT_ACCESS_* rights in
 *     @imm_data (no MW_BIND; VIADUCT_SQE_IMMEDIATE stays clear). The
 *     SGEs name memory of the caller's own MRs of the QP's PD, checked like
 *     any SGE (with local write if the new rights write), and together
 *     form a page list: every SGE but the first starts on a page boundary,
 *     every SGE but the last ends on one. The MR must be INVALID (new or
 *     invalidated) and hold that many pages (ALLOC_MR's @max_pages), else
 *     LOC_PROT_ERR or LOC_LEN_ERR. The pages stay pinned by the MRs they
 *     came from for as long as the registration lasts, even past those
 *     MRs' DEREG_MR.
 *   VIADUCT_OP_RDMA_READ_INV: an RDMA Read whose sink STag (a fast-register
 *     MR) is invalidated once the response is placed, before it completes
 *     (as VIADUCT_WC_RDMA_READ).
 *
 * VIADUCT_OP_BIND_MW (VIADUCT_DEV_CAP_MW): binds the window whose index
 *   @remote_stag has (from ALLOC_MW) under the STag @remote_stag (the new
 *   key in its low 8 bits) to exactly one SGE: the region's STag and the
 *   range [addr, addr + length) of it the window covers. @imm_data holds
 *   the window's rights (VIADUCT_ACCESS_REMOTE_READ and/or REMOTE_WRITE,
 *   optionally VIADUCT_ACCESS_ZERO_BASED; VIADUCT_SQE_IMMEDIATE stays
 *   clear); @remote_addr is 0. A type-2 window must be INVALID (new or
 *   invalidated) and is bound to this QP: only this QP reaches memory
 *   through it, and a Local Invalidate on it or a peer's Send with
 *   Invalidate arriving on it unbinds it. A type-1 window is bound as by
 *   BIND_MW (usable by every QP of the PD; a bound one is bound again;
 *   an SGE of length 0 unbinds it). The bind takes effect in SQ order
 *   before any later WR starts (the implicit fence of IT-API's link) and
 *   completes as VIADUCT_WC_BIND_MW. Statuses: LOC_QP_OP_ERR (malformed:
 *   not one SGE, bad rights bits, a @remote_addr), LOC_PROT_ERR (the
 *   window is no window of the QP's PD or a bound type-2 one; the region
 *   fails the check as for BIND_MW), LOC_LEN_ERR (a type-2 bind of
 *   length 0); the QP then enters Error as for any failed WR.
 */
#define VIADUCT_OP_SEND			0
#define VIADUCT_OP_RDMA_WRITE		1
#define VIADUCT_OP_RDMA_READ		2
#define VIADUCT_OP_SEND_INV		3
#define VIADUCT_OP_LOCAL_INV		4
#define VIADUCT_OP_FAST_REG		5
#define VIADUCT_OP_RDMA_READ_INV	6
#define VIADUCT_OP_BIND_MW		7
#define VIADUCT_OP_MAX			7

/* struct viaduct_sqe.flags */
#define VIADUCT_SQE_SIGNALED		(1U << 0)	/* write a CQE on success */
#define VIADUCT_SQE_SOLICITED		(1U << 1)	/* Send (or Write with IMMEDIATE) with SE */
#define VIADUCT_SQE_READ_FENCE		(1U << 2)	/* wait for earlier RDMA Reads */
#define VIADUCT_SQE_INLINE		(1U << 3)	/* payload in the slot, @length bytes */
#define VIADUCT_SQE_IMMEDIATE		(1U << 4)	/* @imm_data valid; VIADUCT_CM_F_IMM_DATA */
#define VIADUCT_SQE_LOCAL_FENCE		(1U << 5)	/* wait for every earlier WR */
#define VIADUCT_SQE_FLAGS_ALL		0x3fU

/*
 * A send-queue slot (sq_wqe_size bytes): this header, then @num_sge
 * struct viaduct_sge, or with VIADUCT_SQE_INLINE @length bytes of payload.
 * RDMA Read: exactly one local SGE receives the data from
 * (@remote_addr, @remote_stag).
 */
struct viaduct_sqe {
	__aligned_u64 wr_id;
	__u8 opcode;		/* VIADUCT_OP_* */
	__u8 flags;		/* VIADUCT_SQE_* */
	__u16 num_sge;
	__u32 length;		/* inline bytes, or 0 */
	__u32 imm_data;
	__u32 remote_stag;
	__aligned_u64 remote_addr;
	/* struct viaduct_sge sge[] or inline data */
};

/* A receive-queue slot (rq_wqe_size bytes): this header, then SGEs. */
struct viaduct_rqe {
	__aligned_u64 wr_id;
	__u16 num_sge;
	__u16 reserved0;
	__u32 reserved1;
	/* struct viaduct_sge sge[] */
};

/* CQE opcodes */
#define VIADUCT_WC_SEND			0
#define VIADUCT_WC_RDMA_WRITE		1
#define VIADUCT_WC_RDMA_READ		2
#define VIADUCT_WC_RECV			3
#define VIADUCT_WC_RECV_RDMA_WITH_IMM	4	/* RQ: the peer's RDMA Write with immediate data */
#define VIADUCT_WC_LOCAL_INV		5
#define VIADUCT_WC_FAST_REG		6
#define VIADUCT_WC_BIND_MW		7

/* CQE status */
#define VIADUCT_WC_SUCCESS		0
#define VIADUCT_WC_FLUSHED		1	/* QP in Error, WR not executed */
#define VIADUCT_WC_LOC_LEN_ERR		2	/* length or SGE count out of range */
#define VIADUCT_WC_LOC_QP_OP_ERR	3	/* malformed WQE (bad opcode, flags) */
#define VIADUCT_WC_LOC_PROT_ERR		4	/* local STag check failed */
#define VIADUCT_WC_REM_ACCESS_ERR	5	/* remote STag check failed */
#define VIADUCT_WC_REM_OP_ERR		6	/* remote operation error */
#define VIADUCT_WC_REM_INV_REQ_ERR	7	/* no receive posted at the peer, etc. */
#define VIADUCT_WC_TRANSPORT_ERR	8	/* connection lost */
#define VIADUCT_WC_REM_TERMINATED	9	/* a Terminate arrived for this WR */
#define VIADUCT_WC_GENERAL_ERR		10

/* struct viaduct_cqe.flags */
#define VIADUCT_WC_F_RECV		(1U << 0)	/* from the RQ (else the SQ) */
#define VIADUCT_WC_F_IMMEDIATE		(1U << 1)	/* @imm_data is valid */
#define VIADUCT_WC_F_SOLICITED		(1U << 2)	/* received Send with SE */
#define VIADUCT_WC_F_INVALIDATED	(1U << 3)	/* @invalidated_stag is valid */

struct viaduct_cqe {
	__aligned_u64 wr_id;
	__u32 qp_handle;
	__u32 byte_len;
	__u8 opcode;		/* VIADUCT_WC_* */
	__u8 status;		/* VIADUCT_WC_SUCCESS, ... */
	__u8 flags;		/* VIADUCT_WC_F_* */
	__u8 reserved;
	__u32 imm_data;
	__u32 vendor_err;	/* for errors from the wire: the Terminate code */
	__u32 invalidated_stag;	/* the STag a received Send with Invalidate ended */
};

struct viaduct_cq_event {
	__aligned_u64 user_data;	/* the CQ's */
	__u32 cq_handle;
	__u32 reserved;
};

/* struct viaduct_async_event.type */
#define VIADUCT_EVENT_CQ_ERROR		1	/* CQ overflow: the CQ is in error */
#define VIADUCT_EVENT_QP_FATAL		2	/* QP entered Error on its own */
#define VIADUCT_EVENT_QP_REQ_ERR	3	/* bad WQE posted */
#define VIADUCT_EVENT_QP_ACCESS_ERR	4	/* remote access violation */
/* The verbs face's numbering has room for these two; the module raises neither. */
#define VIADUCT_EVENT_COMM_EST		5
#define VIADUCT_EVENT_SQ_DRAINED	6
#define VIADUCT_EVENT_QP_LAST_WQE	7	/* a QP on an SRQ takes no more */
/*
 * The selected device was removed (@handle 0): every QP is in Error with its
 * WRs flushed by then, every CM id got VIADUCT_CM_EVENT_DEVICE_REMOVED; only
 * destroying, CM_ACK_EVENT and QUERY_QP work any more.
 */
#define VIADUCT_EVENT_DEVICE_FATAL	8
/* SRQs (@handle is the SRQ's, @user_data the SRQ's) */
#define VIADUCT_EVENT_SRQ_LIMIT		9	/* fewer WRs than the armed limit */
#define VIADUCT_EVENT_SRQ_ERR		10	/* garbage producer index: SRQ broken */

struct viaduct_async_event {
	__aligned_u64 user_data;	/* the object's, 0 for device events */
	__u32 type;
	__u32 handle;		/* CQ or QP handle */
	__u32 detail;		/* e.g. the Terminate code */
	__u32 reserved;
};

#define VIADUCT_IOCTL_CREATE_PD		_IOR(VIADUCT_IOCTL_MAGIC, 0x10, struct viaduct_handle)
#define VIADUCT_IOCTL_DESTROY_PD	_IOW(VIADUCT_IOCTL_MAGIC, 0x11, struct viaduct_handle)
#define VIADUCT_IOCTL_REG_MR		_IOWR(VIADUCT_IOCTL_MAGIC, 0x12, struct viaduct_reg_mr)
#define VIADUCT_IOCTL_DEREG_MR		_IOW(VIADUCT_IOCTL_MAGIC, 0x13, struct viaduct_handle)
#define VIADUCT_IOCTL_CREATE_CQ		_IOWR(VIADUCT_IOCTL_MAGIC, 0x14, struct viaduct_create_cq)
#define VIADUCT_IOCTL_RESIZE_CQ		_IOWR(VIADUCT_IOCTL_MAGIC, 0x15, struct viaduct_resize_cq)
#define VIADUCT_IOCTL_DESTROY_CQ	_IOW(VIADUCT_IOCTL_MAGIC, 0x16, struct viaduct_handle)
#define VIADUCT_IOCTL_ARM_CQ		_IOW(VIADUCT_IOCTL_MAGIC, 0x17, struct viaduct_arm_cq)
#define VIADUCT_IOCTL_CREATE_QP		_IOWR(VIADUCT_IOCTL_MAGIC, 0x18, struct viaduct_create_qp)
#define VIADUCT_IOCTL_MODIFY_QP		_IOW(VIADUCT_IOCTL_MAGIC, 0x19, struct viaduct_modify_qp)
#define VIADUCT_IOCTL_QUERY_QP		_IOWR(VIADUCT_IOCTL_MAGIC, 0x1a, struct viaduct_query_qp)
#define VIADUCT_IOCTL_DESTROY_QP	_IOW(VIADUCT_IOCTL_MAGIC, 0x1b, struct viaduct_handle)
#define VIADUCT_IOCTL_DOORBELL		_IOW(VIADUCT_IOCTL_MAGIC, 0x1c, struct viaduct_doorbell_req)
#define VIADUCT_IOCTL_CREATE_COMP_CHANNEL \
	_IOR(VIADUCT_IOCTL_MAGIC, 0x1d, struct viaduct_comp_channel)
#define VIADUCT_IOCTL_ALLOC_MR		_IOWR(VIADUCT_IOCTL_MAGIC, 0x30, struct viaduct_alloc_mr)

/*
 * MODIFY_MR (VIADUCT_DEV_CAP_MODIFY_MR): changes the access rights
 * (VIADUCT_MODIFY_MR_ACCESS, to @access) and/or the PD
 * (VIADUCT_MODIFY_MR_PD, to @pd_handle) of a region REG_MR registered,
 * in place: its handle, STag, address and pages stay. Both change at
 * once or neither does: every access check after the command returns
 * sees the new rights and PD together, none sees half of the change. A
 * copy into or out of the region that passed its check before the change
 * finishes; the command waits for such copies (bounded, as DEREG_MR
 * does) when it takes a right away or moves the region, so that when it
 * returns nothing the old rights allowed and the new ones do not is in
 * progress. A fast registration already made from the region's pages
 * keeps the PD and rights it was made with.
 *
 * Errors, with nothing changed: EINVAL for no or unknown @flags, nonzero
 * reserved fields, bad access bits (REMOTE_WRITE needs LOCAL_WRITE, as
 * at REG_MR) or a region ALLOC_MR made; EACCES for a write right on a
 * region whose
 * pages were pinned for reading only (registered without LOCAL_WRITE:
 * register it again); ENOENT for an MR or PD handle that names nothing
 * (or a PD being destroyed).
 */
#define VIADUCT_MODIFY_MR_ACCESS	(1U << 0)
#define VIADUCT_MODIFY_MR_PD		(1U << 1)

struct viaduct_modify_mr {
	__u32 handle;		/* in: the MR */
	__u32 flags;		/* in: VIADUCT_MODIFY_MR_* */
	__u32 access;		/* in: VIADUCT_ACCESS_*, with _ACCESS */
	__u32 pd_handle;	/* in: the new PD, with _PD */
};

#define VIADUCT_IOCTL_MODIFY_MR		_IOW(VIADUCT_IOCTL_MAGIC, 0x38, struct viaduct_modify_mr)

/*
 * Memory windows (VIADUCT_DEV_CAP_MW)
 * -----------------------------------
 * A window is an STag of its own onto part of a registered region, with
 * remote rights of its own: it grants remote read and/or remote write of
 * [addr, addr + length) of the region, and nothing local. Documentation/
 * memory.rst, "Memory windows", has the rules.
 *
 *   ALLOC_MW: a window on a PD, of type 1 or 2 (@type), INVALID (unbound).
 *     The STag's index is fixed for its life; each bind gives it a new key.
 *
 *   DEALLOC_MW (struct viaduct_handle): ends the window, bound or not; no
 *     byte is reached through it once this returns.
 *
 *   BIND_MW: binds a type-1 window by a call: @mr_stag names a region of
 *     the window's PD registered with VIADUCT_ACCESS_MW_BIND, [@addr,
 *     @addr + @length) lies inside it, @access is VIADUCT_ACCESS_REMOTE_READ
 *     and/or REMOTE_WRITE (remote read needs the region's local read,
 *     which every region has; remote write its local write), optionally
 *     with VIADUCT_ACCESS_ZERO_BASED. The window's STag becomes its index
 *     with @key, returned in @stag. A type-1 window may be bound again
 *     while bound (the old binding ends); @length 0 unbinds it. A type-1
 *     window is usable through every QP of its PD and is never
 *     invalidated (Local Invalidate, Send with Invalidate): it is unbound
 *     by a bind. Errors: ENOENT (no such window), EINVAL (a type-2 window,
 *     bad @access, reserved fields), EACCES (@mr_stag fails the check:
 *     unknown STag or key, another PD, no MW_BIND right, not a registered
 *     region, the rights or the range do not fit).
 *
 *   The same bind as a work request: VIADUCT_OP_BIND_MW, for both types
 *   (a type-2 window is bound to the QP that executes it). See the SQ
 *   opcodes below.
 *
 *   DEREG_MR of a region that windows are bound to fails with EBUSY: the
 *   windows are invalidated, unbound or deallocated first (the verbs'
 *   rule). A window keeps the region's pages pinned until it is bound
 *   again or deallocated.
 */
#define VIADUCT_MW_TYPE_1		1
#define VIADUCT_MW_TYPE_2		2

struct viaduct_alloc_mw {
	__u32 pd_handle;	/* in */
	__u32 type;		/* in: VIADUCT_MW_TYPE_* */
	__u8 key;		/* in: low 8 bits of the first STag */
	__u8 reserved[3];
	__u32 handle;		/* out */
	__u32 stag;		/* out: INVALID until bound */
	__u32 reserved2;
};

struct viaduct_bind_mw {
	__u32 mw_handle;	/* in: a type-1 window */
	__u32 mr_stag;		/* in: the region (its STag, with its key) */
	__aligned_u64 addr;	/* in: the window's first byte in the region */
	__aligned_u64 length;	/* in: bytes; 0 unbinds */
	__u32 access;		/* in: VIADUCT_ACCESS_REMOTE_*, _ZERO_BASED */
	__u8 key;		/* in: the key of the new binding */
	__u8 reserved[3];
	__u32 stag;		/* out: the window's STag, key @key */
	__u32 reserved2;
};

#define VIADUCT_IOCTL_ALLOC_MW		_IOWR(VIADUCT_IOCTL_MAGIC, 0x34, struct viaduct_alloc_mw)
#define VIADUCT_IOCTL_DEALLOC_MW	_IOW(VIADUCT_IOCTL_MAGIC, 0x35, struct viaduct_handle)
#define VIADUCT_IOCTL_BIND_MW		_IOWR(VIADUCT_IOCTL_MAGIC, 0x36, struct viaduct_bind_mw)

/*
 * Shared receive queues (VIADUCT_DEV_CAP_SRQ)
 * -------------------------------------------
 *   CREATE_SRQ / MODIFY_SRQ / QUERY_SRQ / DESTROY_SRQ: a receive queue on a
 *     PD that QPs of the same PD share: CREATE_QP with @srq_handle gives a
 *     QP without a receive queue of its own (@rq_depth and @max_recv_sge
 *     must be 0, @recv_cq a CQ; rq_key, rq_size and rq_depth come back 0).
 *     The SRQ is one mapping (mmap_key, mmap_size): struct viaduct_srq_ring
 *     (the indices) and then @depth slots of @wqe_size bytes, each a
 *     struct viaduct_rqe with its SGEs as on an RQ. Posting needs no
 *     system call: the kernel reads the producer index when a message
 *     arrives and takes the oldest WR for whichever QP needs one first
 *     (FIFO by arrival, across QPs). A WR a QP took is that QP's: it
 *     completes on the QP's receive CQ, or flushed when the QP enters
 *     Error; WRs not taken stay on the SRQ, and a QP entering Error raises
 *     VIADUCT_EVENT_QP_LAST_WQE once it will take no more.
 *     MODIFY_SRQ with VIADUCT_SRQ_ATTR_LIMIT arms the limit: the first
 *     take that leaves fewer than @limit WRs in the SRQ raises
 *     VIADUCT_EVENT_SRQ_LIMIT once and disarms it (QUERY_SRQ then reports
 *     0); 0 disarms, a limit above the depth is EINVAL. A producer index
 *     more than a ring ahead breaks the SRQ (VIADUCT_EVENT_SRQ_ERR, no
 *     more takes). DESTROY_SRQ fails with EBUSY while QPs use it.
 */
struct viaduct_create_srq {
	__aligned_u64 user_data;	/* in: returned in events */
	__u32 pd_handle;	/* in */
	__u32 depth;		/* in: minimum; out: actual (power of two) */
	__u32 max_sge;		/* in/out */
	__u32 max_msg_size;	/* in: 0 for the device limit; out */
	__u32 flags;		/* in: 0 */
	__u32 handle;		/* out */
	__u32 wqe_size;		/* out: bytes per slot */
	__u32 mmap_size;	/* out */
	__aligned_u64 mmap_key;	/* out */
};

/* struct viaduct_modify_srq.mask */
#define VIADUCT_SRQ_ATTR_LIMIT		(1U << 0)

struct viaduct_modify_srq {
	__u32 handle;
	__u32 mask;		/* VIADUCT_SRQ_ATTR_* */
	__u32 limit;		/* WRs; 0 disarms */
	__u32 reserved;
};

struct viaduct_query_srq {
	__u32 handle;		/* in */
	__u32 depth;		/* out */
	__u32 max_sge;
	__u32 limit;		/* armed limit, 0 if none */
	__u32 outstanding;	/* WRs posted and not taken yet */
	__u32 num_qps;		/* QPs receiving from it */
	__u32 broken;		/* 1 after VIADUCT_EVENT_SRQ_ERR */
	__u32 reserved;
};

/* The head of an SRQ mapping; the slots follow at VIADUCT_RING_HDR_SIZE. */
struct viaduct_srq_ring {
	__u32 producer;		/* user writes: slots filled */
	__u32 pad0[15];
	__u32 consumer;		/* kernel writes: slots taken (free again) */
	__u32 pad1[15];
	__u32 reserved[32];
};

#define VIADUCT_IOCTL_CREATE_SRQ	_IOWR(VIADUCT_IOCTL_MAGIC, 0x40, struct viaduct_create_srq)
#define VIADUCT_IOCTL_MODIFY_SRQ	_IOW(VIADUCT_IOCTL_MAGIC, 0x41, struct viaduct_modify_srq)
#define VIADUCT_IOCTL_QUERY_SRQ		_IOWR(VIADUCT_IOCTL_MAGIC, 0x42, struct viaduct_query_srq)
#define VIADUCT_IOCTL_DESTROY_SRQ	_IOW(VIADUCT_IOCTL_MAGIC, 0x43, struct viaduct_handle)

/*
 * Connection manager (ABI v1)
 * ---------------------------
 * Connections are iWARP streams: TCP, then an MPA request/reply exchange
 * (RFC 5044, with the RFC 6581 enhanced form carrying IRD/ORD and the
 * peer-to-peer ready-to-receive message), then RDMAP/DDP over MPA FPDUs.
 * Sockets live in the network namespace of the context's opener. The
 * device is chosen by address, as rdma_cm does: a listener on an address of
 * vd0 belongs to vd0; an outgoing connection uses the device whose
 * interface routes to the peer. Either must be the context's selected
 * device (EADDRNOTAVAIL otherwise).
 *
 *   CREATE_CM_CHANNEL: returns a new file descriptor (O_CLOEXEC), pollable,
 *     that read()s struct viaduct_cm_event records.
 *
 *   CM_CREATE_ID / CM_DESTROY_ID: a connection identifier (a handle in the
 *     context's handle table) reporting to a CM channel.
 *
 *   CM_LISTEN: binds the id to an address and port (address all zero: every
 *     address of the selected device) and listens; each incoming connection
 *     whose MPA request is valid arrives as a CONNECT_REQUEST event carrying
 *     a NEW id, to be answered with CM_ACCEPT or CM_REJECT.
 *
 *   CM_CONNECT: connects the id with its QP (which must be Idle) to a peer:
 *     TCP connect, MPA request with the private data, reply. Events:
 *     ESTABLISHED (the QP is in RTS), REJECTED (with the peer's private
 *     data), UNREACHABLE, TIMEOUT.
 *
 *   CM_ACCEPT / CM_REJECT: answers a CONNECT_REQUEST. ACCEPT binds a QP
 *     (Idle) and sends the MPA reply; ESTABLISHED follows.
 *
 *   CM_DISCONNECT: graceful (FIN; the QP goes Closing, then Idle) or, with
 *     VIADUCT_CM_DISC_ABORT, abortive (RST; the QP goes to Error). The peer
 *     sees DISCONNECTED.
 *
 *   CM_CONVERT_SOCKET: turns an already connected TCP socket (a file
 *     descriptor of the caller's, IT-API it_socket_convert) into an RDMA
 *     connection of the id and its QP; the MPA exchange runs on it, in the
 *     role given by VIADUCT_CM_F_ACTIVE (initiator) or not (responder).
 *     The socket is taken away from the caller for good
 *     (VIADUCT_DEV_CAP_CONVERT_DATA): on success @sockfd is closed, and
 *     no other descriptor or process may share the socket's file (EBUSY:
 *     dup()ed, inherited by fork(), in flight in SCM_RIGHTS, or in use by
 *     another thread's system call at that moment). ENOTSOCK: not a
 *     socket; EINVAL: not a TCP socket of the namespace; ENOTCONN: not
 *     established; EBUSY also for a socket with an upper layer protocol
 *     (kTLS, ...) or another kernel user (a BPF sockmap). Any refusal
 *     leaves the descriptor as it was, except EBADF and EBUSY from a race
 *     with another thread of the caller that closes, replaces or dup()s
 *     @sockfd during the call (Documentation/cm.rst, "Socket
 *     conversion"). Two optional buffers (zero lengths: none):
 *     @send_data is the last streaming-mode message (IT-API's, sent by the
 *     conversion initiator): sent on the socket before the MPA exchange,
 *     at most VIADUCT_CM_CONVERT_SEND_MAX bytes, and EAGAIN (nothing
 *     taken, nothing sent) if the socket's send buffer has no room for it
 *     now; @recv_data are bytes the caller already read from the socket
 *     that belong to the MPA exchange (the peer's MPA request, or its
 *     start: responder only, EINVAL with VIADUCT_CM_F_ACTIVE), consumed
 *     before anything is read from the socket, at most
 *     VIADUCT_CM_CONVERT_RECV_MAX bytes (one MPA frame; bytes beyond the
 *     frame fail the exchange: CONNECT_ERROR, -EPROTO).
 *
 *   CM_HANDOFF (VIADUCT_DEV_CAP_CM_HANDOFF): moves an unanswered
 *     CONNECT_REQUEST (the id of the event, neither accepted nor rejected)
 *     to another listener of the same device, named by its port and its
 *     address (family 0, address all zero: any) (IT-API it_handoff): the
 *     other listener's channel gets a CONNECT_REQUEST with a new id (in
 *     the other listener's context, which may be another process's), the
 *     same private data, addresses and MPA parameters; the caller's id is
 *     destroyed (its handle and unacknowledged events are gone). The
 *     target listener must have been created by a process with the
 *     caller's effective uid, or the caller needs CAP_NET_ADMIN in the
 *     namespace (EPERM). ENOENT: no such id, or no such listener (the
 *     request stays where it was); EINVAL: the id has no unanswered
 *     request (or the peer left: ECONNRESET); EBUSY: the target's backlog
 *     or channel is full (the request stays).
 *
 *   CM_ACK_EVENT: every event read from a channel must be acknowledged once
 *     by its sequence number; an id cannot be destroyed while it has
 *     unacknowledged events (EBUSY).
 */

struct viaduct_sockaddr {
	__u16 family;		/* VIADUCT_AF_INET or VIADUCT_AF_INET6 */
	__be16 port;
	__u32 scope_id;		/* IPv6 link-local scope, else 0 */
	__u8 addr[16];		/* network byte order; IPv4 in the first 4 bytes */
};

/*
 * Bytes of MPA private data an MPA frame carries. An application may send
 * at most 512 with VIADUCT_CM_F_MPA_V1 and 508 in the enhanced form, whose
 * IRD/ORD words take the first 4 (EINVAL beyond). Received private data
 * is at most 512 bytes in either form.
 */
#define VIADUCT_CM_PRIVATE_DATA_MAX	512

/* struct viaduct_cm_conn_param.flags */
#define VIADUCT_CM_F_MPA_V1		(1U << 0)	/* plain RFC 5044, no IRD/ORD exchange */
#define VIADUCT_CM_F_CRC		(1U << 1)	/* ask for MPA CRC (the peer may insist) */
#define VIADUCT_CM_F_P2P		(1U << 2)	/* RFC 6581 peer-to-peer RTR */
#define VIADUCT_CM_F_ACTIVE		(1U << 3)	/* CONVERT_SOCKET: we send the request */
#define VIADUCT_CM_F_ALL		0xfU
/*
 * Events only (never accepted in a command): immediate data offered by
 * the initiator (CONNECT_REQUEST) or in use on the connection (the rest).
 * Send with Immediate and RDMA Write with Immediate use opcodes of
 * viaduct's (and RFC 7306's) that other RNICs, siw among them, do not
 * know: a connection uses them only when both ends said so in the MPA
 * exchange (Documentation/cm.rst, "Immediate data"). Elsewhere such a WR
 * completes with VIADUCT_WC_LOC_QP_OP_ERR, sends nothing, and the QP
 * enters Error, as for any WR the connection cannot carry.
 */
#define VIADUCT_CM_F_IMM_DATA		(1U << 4)

struct viaduct_cm_conn_param {
	__aligned_u64 private_data;	/* user pointer or 0 */
	__u32 private_data_len;		/* <= VIADUCT_CM_PRIVATE_DATA_MAX */
	__u32 qp_handle;		/* CONNECT, ACCEPT, CONVERT_SOCKET */
	__u32 ird;			/* 0: the QP's */
	__u32 ord;
	__u32 flags;			/* VIADUCT_CM_F_* */
	__u32 timeout_ms;		/* CONNECT: whole connect, 0 for 30000 */
};

struct viaduct_cm_channel {
	__s32 fd;			/* out */
	__u32 reserved;
};

struct viaduct_cm_create_id {
	__aligned_u64 user_data;	/* in: returned in events */
	__s32 channel_fd;		/* in: a CM channel */
	__u32 handle;			/* out */
};

struct viaduct_cm_listen {
	__u32 handle;
	__u32 backlog;			/* 0 for a default */
	struct viaduct_sockaddr addr;	/* in; port 0 picks one: out */
};

struct viaduct_cm_connect {
	__u32 handle;
	__u32 reserved;
	struct viaduct_sockaddr dst;
	struct viaduct_cm_conn_param param;
};

struct viaduct_cm_accept {
	__u32 handle;			/* the id of the CONNECT_REQUEST event */
	__u32 reserved;
	struct viaduct_cm_conn_param param;
};

struct viaduct_cm_reject {
	__u32 handle;
	__u32 private_data_len;
	__aligned_u64 private_data;
};

#define VIADUCT_CM_DISC_ABORT		(1U << 0)

struct viaduct_cm_disconnect {
	__u32 handle;
	__u32 flags;			/* VIADUCT_CM_DISC_* */
};

struct viaduct_cm_convert_socket {
	__s32 sockfd;			/* a connected TCP socket of the caller */
	__u32 handle;			/* the id to bind it to */
	struct viaduct_cm_conn_param param;
	/* VIADUCT_CM_CONVERT_SOCKET_SIZE_VER0 ends here */
	__aligned_u64 send_data;	/* user pointer: sent before MPA */
	__aligned_u64 recv_data;	/* user pointer: already read */
	__u32 send_len;			/* <= VIADUCT_CM_CONVERT_SEND_MAX */
	__u32 recv_len;			/* <= VIADUCT_CM_CONVERT_RECV_MAX */
};

#define VIADUCT_CM_CONVERT_SOCKET_SIZE_VER0	40
#define VIADUCT_CM_CONVERT_SOCKET_SIZE_VER1	64
#define VIADUCT_CM_CONVERT_SEND_MAX		4096
/* an MPA frame: its 20-byte header and 512 bytes of private data */
#define VIADUCT_CM_CONVERT_RECV_MAX		(20 + VIADUCT_CM_PRIVATE_DATA_MAX)

struct viaduct_cm_handoff {
	__u32 handle;			/* the id of a CONNECT_REQUEST */
	__u32 reserved;
	/* the target listener's port, and address; family 0: any address */
	struct viaduct_sockaddr addr;
};

struct viaduct_cm_ack {
	__u32 handle;
	__u32 seq;			/* struct viaduct_cm_event.seq */
};

/* struct viaduct_cm_event.type */
#define VIADUCT_CM_EVENT_CONNECT_REQUEST	1
#define VIADUCT_CM_EVENT_ESTABLISHED		2
#define VIADUCT_CM_EVENT_REJECTED		3
#define VIADUCT_CM_EVENT_UNREACHABLE		4
#define VIADUCT_CM_EVENT_DISCONNECTED		5
#define VIADUCT_CM_EVENT_TIMEOUT		6
#define VIADUCT_CM_EVENT_CONNECT_ERROR		7	/* MPA negotiation failed */
#define VIADUCT_CM_EVENT_DEVICE_REMOVED		8

struct viaduct_cm_event {
	__aligned_u64 user_data;	/* the id's (the listener's for a request) */
	__u32 type;			/* VIADUCT_CM_EVENT_* */
	__u32 handle;			/* the id; for CONNECT_REQUEST the new one */
	__u32 listen_handle;		/* CONNECT_REQUEST: the listening id */
	__u32 seq;			/* acknowledge with CM_ACK_EVENT */
	__s32 status;			/* 0 or a negative errno */
	__u32 ird;			/* the peer's (enhanced MPA) */
	__u32 ord;
	__u32 flags;			/* VIADUCT_CM_F_* in effect (CRC, MPA v1) */
	struct viaduct_sockaddr local;
	struct viaduct_sockaddr peer;
	__u32 private_data_len;
	__u32 reserved;
	__u8 private_data[VIADUCT_CM_PRIVATE_DATA_MAX];
};

#define VIADUCT_IOCTL_CREATE_CM_CHANNEL \
	_IOR(VIADUCT_IOCTL_MAGIC, 0x20, struct viaduct_cm_channel)
#define VIADUCT_IOCTL_CM_CREATE_ID \
	_IOWR(VIADUCT_IOCTL_MAGIC, 0x21, struct viaduct_cm_create_id)
#define VIADUCT_IOCTL_CM_DESTROY_ID	_IOW(VIADUCT_IOCTL_MAGIC, 0x22, struct viaduct_handle)
#define VIADUCT_IOCTL_CM_LISTEN		_IOWR(VIADUCT_IOCTL_MAGIC, 0x23, struct viaduct_cm_listen)
#define VIADUCT_IOCTL_CM_CONNECT	_IOW(VIADUCT_IOCTL_MAGIC, 0x24, struct viaduct_cm_connect)
#define VIADUCT_IOCTL_CM_ACCEPT		_IOW(VIADUCT_IOCTL_MAGIC, 0x25, struct viaduct_cm_accept)
#define VIADUCT_IOCTL_CM_REJECT		_IOW(VIADUCT_IOCTL_MAGIC, 0x26, struct viaduct_cm_reject)
#define VIADUCT_IOCTL_CM_DISCONNECT \
	_IOW(VIADUCT_IOCTL_MAGIC, 0x27, struct viaduct_cm_disconnect)
#define VIADUCT_IOCTL_CM_CONVERT_SOCKET \
	_IOW(VIADUCT_IOCTL_MAGIC, 0x28, struct viaduct_cm_convert_socket)
#define VIADUCT_IOCTL_CM_ACK_EVENT	_IOW(VIADUCT_IOCTL_MAGIC, 0x29, struct viaduct_cm_ack)
#define VIADUCT_IOCTL_CM_HANDOFF	_IOW(VIADUCT_IOCTL_MAGIC, 0x44, struct viaduct_cm_handoff)

#endif /* _VIADUCT_ABI_H */
