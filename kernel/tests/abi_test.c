// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_abi: the layout of every uapi structure (offsets,
 * sizes, no implicit padding, 64-bit fields on 8-byte boundaries, sizes a
 * multiple of 8 so 32- and 64-bit userspace agree), the encoding of the
 * ioctl numbers, the relations between the device limits, and the device
 * name rules.
 *
 * The module information of viaduct_test.ko lives here.
 */
#include <kunit/test.h>
#include <linux/if.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/socket.h>
#include <linux/stddef.h>

#include <viaduct/viaduct-abi.h>

#include "../device.h"
#include "../viaduct.h"

struct field {
	const char *name;
	size_t end;		/* actual offset of the first byte after it */
	size_t off;		/* the ABI's offset and size */
	size_t size;
};

#define FIELD(type, f, want_off, want_size) {				\
	.name = #f,							\
	.end = offsetofend(type, f),					\
	.off = (want_off),						\
	.size = (want_size),						\
}

/*
 * @fields, in declaration order, with the offsets and sizes the ABI
 * specifies: the specification itself has no holes and puts 64-bit fields
 * on 8-byte boundaries, and every field ends where it says, so none moved
 * or changed size; the last one ends the structure, so there is no tail
 * padding either.
 */
static void check_layout(struct kunit *test, const char *sname, size_t size,
			 size_t want_size, const struct field *fields,
			 size_t n)
{
	size_t end = 0, i;

	KUNIT_EXPECT_EQ_MSG(test, size, want_size, "sizeof(struct %s)", sname);
	KUNIT_EXPECT_EQ_MSG(test, size % 8, 0, "struct %s size", sname);
	for (i = 0; i < n; i++) {
		const struct field *f = &fields[i];

		KUNIT_EXPECT_EQ_MSG(test, f->off, end, "hole before %s.%s",
				    sname, f->name);
		if (f->size == 8)
			KUNIT_EXPECT_EQ_MSG(test, f->off % 8, 0,
					    "%s.%s misaligned", sname, f->name);
		KUNIT_EXPECT_EQ_MSG(test, f->end, f->off + f->size,
				    "%s.%s moved or changed size", sname,
				    f->name);
		end = f->off + f->size;
	}
	KUNIT_EXPECT_EQ_MSG(test, end, size, "tail padding in struct %s",
			    sname);
}

#define CHECK_LAYOUT(test, type, want_size, ...) do {			\
	static const struct field __f[] = { __VA_ARGS__ };	\
									\
	check_layout(test, #type, sizeof(struct type), want_size,	\
		     __f, ARRAY_SIZE(__f));				\
} while (0)

static void abi_device_structs(struct kunit *test)
{
	CHECK_LAYOUT(test, viaduct_abi_version, 8,
		     FIELD(struct viaduct_abi_version, abi_version, 0, 4),
		     FIELD(struct viaduct_abi_version, reserved, 4, 4));
	CHECK_LAYOUT(test, viaduct_device_entry, 40,
		     FIELD(struct viaduct_device_entry, index, 0, 4),
		     FIELD(struct viaduct_device_entry, ifindex, 4, 4),
		     FIELD(struct viaduct_device_entry, name, 8, 16),
		     FIELD(struct viaduct_device_entry, ifname, 24, 16));
	CHECK_LAYOUT(test, viaduct_list_devices, 16,
		     FIELD(struct viaduct_list_devices, entries, 0, 8),
		     FIELD(struct viaduct_list_devices, capacity, 8, 4),
		     FIELD(struct viaduct_list_devices, count, 12, 4));
	CHECK_LAYOUT(test, viaduct_select_device, 24,
		     FIELD(struct viaduct_select_device, index, 0, 4),
		     FIELD(struct viaduct_select_device, reserved, 4, 4),
		     FIELD(struct viaduct_select_device, name, 8, 16));
	CHECK_LAYOUT(test, viaduct_addr, 24,
		     FIELD(struct viaduct_addr, family, 0, 2),
		     FIELD(struct viaduct_addr, prefixlen, 2, 1),
		     FIELD(struct viaduct_addr, reserved, 3, 5),
		     FIELD(struct viaduct_addr, addr, 8, 16));
	CHECK_LAYOUT(test, viaduct_device_attr, VIADUCT_DEVICE_ATTR_SIZE_VER1,
		     FIELD(struct viaduct_device_attr, index, 0, 4),
		     FIELD(struct viaduct_device_attr, abi_version, 4, 4),
		     FIELD(struct viaduct_device_attr, name, 8, 16),
		     FIELD(struct viaduct_device_attr, ifname, 24, 16),
		     FIELD(struct viaduct_device_attr, ifindex, 40, 4),
		     FIELD(struct viaduct_device_attr, mtu, 44, 4),
		     FIELD(struct viaduct_device_attr, flags, 48, 4),
		     FIELD(struct viaduct_device_attr, num_addrs, 52, 4),
		     FIELD(struct viaduct_device_attr, hw_addr, 56, 8),
		     FIELD(struct viaduct_device_attr, max_pd, 64, 4),
		     FIELD(struct viaduct_device_attr, max_mr, 68, 4),
		     FIELD(struct viaduct_device_attr, max_cq, 72, 4),
		     FIELD(struct viaduct_device_attr, max_cqe, 76, 4),
		     FIELD(struct viaduct_device_attr, max_qp, 80, 4),
		     FIELD(struct viaduct_device_attr, max_qp_wr, 84, 4),
		     FIELD(struct viaduct_device_attr, max_sge, 88, 4),
		     FIELD(struct viaduct_device_attr, max_inline, 92, 4),
		     FIELD(struct viaduct_device_attr, max_ord, 96, 4),
		     FIELD(struct viaduct_device_attr, max_ird, 100, 4),
		     FIELD(struct viaduct_device_attr, max_msg_size, 104, 8),
		     FIELD(struct viaduct_device_attr, max_mr_size, 112, 8),
		     FIELD(struct viaduct_device_attr, page_size, 120, 4),
		     FIELD(struct viaduct_device_attr, caps, 124, 4),
		     FIELD(struct viaduct_device_attr, addrs, 128, 384),
		     FIELD(struct viaduct_device_attr, max_mw, 512, 4),
		     FIELD(struct viaduct_device_attr, reserved, 516, 4));
	KUNIT_EXPECT_EQ(test, VIADUCT_DEVICE_ATTR_SIZE_VER0,
			offsetof(struct viaduct_device_attr, max_mw));

	KUNIT_EXPECT_EQ(test, sizeof_field(struct viaduct_device_attr, addrs),
			VIADUCT_MAX_ADDRS * sizeof(struct viaduct_addr));
	/* interface names are copied whole */
	KUNIT_EXPECT_EQ(test, VIADUCT_NAME_SIZE, IFNAMSIZ);
	KUNIT_EXPECT_EQ(test, VIADUCT_AF_INET, AF_INET);
	KUNIT_EXPECT_EQ(test, VIADUCT_AF_INET6, AF_INET6);
	KUNIT_EXPECT_EQ(test, VIADUCT_INDEX_SELECTED, U32_MAX);
}

/*
 * One flat table of every resource command's layout: long, but each line is
 * one field's offset and size, and splitting it would only scatter the ABI.
 */
static void abi_resource_structs(struct kunit *test)
{
	CHECK_LAYOUT(test, viaduct_handle, 8,
		     FIELD(struct viaduct_handle, handle, 0, 4),
		     FIELD(struct viaduct_handle, reserved, 4, 4));
	CHECK_LAYOUT(test, viaduct_alloc_mw, 24,
		     FIELD(struct viaduct_alloc_mw, pd_handle, 0, 4),
		     FIELD(struct viaduct_alloc_mw, type, 4, 4),
		     FIELD(struct viaduct_alloc_mw, key, 8, 1),
		     FIELD(struct viaduct_alloc_mw, reserved, 9, 3),
		     FIELD(struct viaduct_alloc_mw, handle, 12, 4),
		     FIELD(struct viaduct_alloc_mw, stag, 16, 4),
		     FIELD(struct viaduct_alloc_mw, reserved2, 20, 4));
	CHECK_LAYOUT(test, viaduct_bind_mw, 40,
		     FIELD(struct viaduct_bind_mw, mw_handle, 0, 4),
		     FIELD(struct viaduct_bind_mw, mr_stag, 4, 4),
		     FIELD(struct viaduct_bind_mw, addr, 8, 8),
		     FIELD(struct viaduct_bind_mw, length, 16, 8),
		     FIELD(struct viaduct_bind_mw, access, 24, 4),
		     FIELD(struct viaduct_bind_mw, key, 28, 1),
		     FIELD(struct viaduct_bind_mw, reserved, 29, 3),
		     FIELD(struct viaduct_bind_mw, stag, 32, 4),
		     FIELD(struct viaduct_bind_mw, reserved2, 36, 4));
	CHECK_LAYOUT(test, viaduct_reg_mr, 40,
		     FIELD(struct viaduct_reg_mr, addr, 0, 8),
		     FIELD(struct viaduct_reg_mr, length, 8, 8),
		     FIELD(struct viaduct_reg_mr, pd_handle, 16, 4),
		     FIELD(struct viaduct_reg_mr, access, 20, 4),
		     FIELD(struct viaduct_reg_mr, key, 24, 1),
		     FIELD(struct viaduct_reg_mr, reserved, 25, 3),
		     FIELD(struct viaduct_reg_mr, handle, 28, 4),
		     FIELD(struct viaduct_reg_mr, stag, 32, 4),
		     FIELD(struct viaduct_reg_mr, reserved2, 36, 4));
	CHECK_LAYOUT(test, viaduct_modify_mr, 16,
		     FIELD(struct viaduct_modify_mr, handle, 0, 4),
		     FIELD(struct viaduct_modify_mr, flags, 4, 4),
		     FIELD(struct viaduct_modify_mr, access, 8, 4),
		     FIELD(struct viaduct_modify_mr, pd_handle, 12, 4));
	CHECK_LAYOUT(test, viaduct_create_cq, 40,
		     FIELD(struct viaduct_create_cq, user_data, 0, 8),
		     FIELD(struct viaduct_create_cq, entries, 8, 4),
		     FIELD(struct viaduct_create_cq, channel_fd, 12, 4),
		     FIELD(struct viaduct_create_cq, flags, 16, 4),
		     FIELD(struct viaduct_create_cq, handle, 20, 4),
		     FIELD(struct viaduct_create_cq, mmap_key, 24, 8),
		     FIELD(struct viaduct_create_cq, mmap_size, 32, 8));
	CHECK_LAYOUT(test, viaduct_resize_cq, 24,
		     FIELD(struct viaduct_resize_cq, handle, 0, 4),
		     FIELD(struct viaduct_resize_cq, entries, 4, 4),
		     FIELD(struct viaduct_resize_cq, mmap_key, 8, 8),
		     FIELD(struct viaduct_resize_cq, mmap_size, 16, 8));
	CHECK_LAYOUT(test, viaduct_arm_cq, VIADUCT_ARM_CQ_SIZE_VER1,
		     FIELD(struct viaduct_arm_cq, handle, 0, 4),
		     FIELD(struct viaduct_arm_cq, flags, 4, 4),
		     FIELD(struct viaduct_arm_cq, threshold, 8, 4),
		     FIELD(struct viaduct_arm_cq, reserved, 12, 4));
	KUNIT_EXPECT_EQ(test, VIADUCT_ARM_CQ_SIZE_VER0,
			offsetof(struct viaduct_arm_cq, threshold));
	CHECK_LAYOUT(test, viaduct_create_qp, VIADUCT_CREATE_QP_SIZE_VER1,
		     FIELD(struct viaduct_create_qp, user_data, 0, 8),
		     FIELD(struct viaduct_create_qp, pd_handle, 8, 4),
		     FIELD(struct viaduct_create_qp, send_cq, 12, 4),
		     FIELD(struct viaduct_create_qp, recv_cq, 16, 4),
		     FIELD(struct viaduct_create_qp, flags, 20, 4),
		     FIELD(struct viaduct_create_qp, reliability, 24, 4),
		     FIELD(struct viaduct_create_qp, access, 28, 4),
		     FIELD(struct viaduct_create_qp, sq_depth, 32, 4),
		     FIELD(struct viaduct_create_qp, rq_depth, 36, 4),
		     FIELD(struct viaduct_create_qp, max_send_sge, 40, 4),
		     FIELD(struct viaduct_create_qp, max_recv_sge, 44, 4),
		     FIELD(struct viaduct_create_qp, max_inline, 48, 4),
		     FIELD(struct viaduct_create_qp, ord, 52, 4),
		     FIELD(struct viaduct_create_qp, ird, 56, 4),
		     FIELD(struct viaduct_create_qp, max_msg_size, 60, 4),
		     FIELD(struct viaduct_create_qp, handle, 64, 4),
		     FIELD(struct viaduct_create_qp, qpn, 68, 4),
		     FIELD(struct viaduct_create_qp, sq_wqe_size, 72, 4),
		     FIELD(struct viaduct_create_qp, rq_wqe_size, 76, 4),
		     FIELD(struct viaduct_create_qp, db_key, 80, 8),
		     FIELD(struct viaduct_create_qp, sq_key, 88, 8),
		     FIELD(struct viaduct_create_qp, rq_key, 96, 8),
		     FIELD(struct viaduct_create_qp, scq_key, 104, 8),
		     FIELD(struct viaduct_create_qp, rcq_key, 112, 8),
		     FIELD(struct viaduct_create_qp, db_size, 120, 4),
		     FIELD(struct viaduct_create_qp, sq_size, 124, 4),
		     FIELD(struct viaduct_create_qp, rq_size, 128, 4),
		     FIELD(struct viaduct_create_qp, scq_size, 132, 4),
		     FIELD(struct viaduct_create_qp, rcq_size, 136, 4),
		     FIELD(struct viaduct_create_qp, scq_entries, 140, 4),
		     FIELD(struct viaduct_create_qp, rcq_entries, 144, 4),
		     FIELD(struct viaduct_create_qp, srq_handle, 148, 4),
		     FIELD(struct viaduct_create_qp, sq_ring_depth, 152, 4),
		     FIELD(struct viaduct_create_qp, rq_ring_depth, 156, 4));
	KUNIT_EXPECT_EQ(test, VIADUCT_CREATE_QP_SIZE_VER0,
			offsetof(struct viaduct_create_qp, sq_ring_depth));
	CHECK_LAYOUT(test, viaduct_create_srq, 48,
		     FIELD(struct viaduct_create_srq, user_data, 0, 8),
		     FIELD(struct viaduct_create_srq, pd_handle, 8, 4),
		     FIELD(struct viaduct_create_srq, depth, 12, 4),
		     FIELD(struct viaduct_create_srq, max_sge, 16, 4),
		     FIELD(struct viaduct_create_srq, max_msg_size, 20, 4),
		     FIELD(struct viaduct_create_srq, flags, 24, 4),
		     FIELD(struct viaduct_create_srq, handle, 28, 4),
		     FIELD(struct viaduct_create_srq, wqe_size, 32, 4),
		     FIELD(struct viaduct_create_srq, mmap_size, 36, 4),
		     FIELD(struct viaduct_create_srq, mmap_key, 40, 8));
	CHECK_LAYOUT(test, viaduct_modify_srq, 16,
		     FIELD(struct viaduct_modify_srq, handle, 0, 4),
		     FIELD(struct viaduct_modify_srq, mask, 4, 4),
		     FIELD(struct viaduct_modify_srq, limit, 8, 4),
		     FIELD(struct viaduct_modify_srq, reserved, 12, 4));
	CHECK_LAYOUT(test, viaduct_query_srq, 32,
		     FIELD(struct viaduct_query_srq, handle, 0, 4),
		     FIELD(struct viaduct_query_srq, depth, 4, 4),
		     FIELD(struct viaduct_query_srq, max_sge, 8, 4),
		     FIELD(struct viaduct_query_srq, limit, 12, 4),
		     FIELD(struct viaduct_query_srq, outstanding, 16, 4),
		     FIELD(struct viaduct_query_srq, num_qps, 20, 4),
		     FIELD(struct viaduct_query_srq, broken, 24, 4),
		     FIELD(struct viaduct_query_srq, reserved, 28, 4));
	CHECK_LAYOUT(test, viaduct_srq_ring, VIADUCT_RING_HDR_SIZE,
		     FIELD(struct viaduct_srq_ring, producer, 0, 4),
		     FIELD(struct viaduct_srq_ring, pad0, 4, 60),
		     FIELD(struct viaduct_srq_ring, consumer, 64, 4),
		     FIELD(struct viaduct_srq_ring, pad1, 68, 60),
		     FIELD(struct viaduct_srq_ring, reserved, 128, 128));
	CHECK_LAYOUT(test, viaduct_modify_qp, 24,
		     FIELD(struct viaduct_modify_qp, handle, 0, 4),
		     FIELD(struct viaduct_modify_qp, mask, 4, 4),
		     FIELD(struct viaduct_modify_qp, state, 8, 4),
		     FIELD(struct viaduct_modify_qp, access, 12, 4),
		     FIELD(struct viaduct_modify_qp, ord, 16, 4),
		     FIELD(struct viaduct_modify_qp, ird, 20, 4));
	CHECK_LAYOUT(test, viaduct_query_qp, 48,
		     FIELD(struct viaduct_query_qp, handle, 0, 4),
		     FIELD(struct viaduct_query_qp, state, 4, 4),
		     FIELD(struct viaduct_query_qp, access, 8, 4),
		     FIELD(struct viaduct_query_qp, ord, 12, 4),
		     FIELD(struct viaduct_query_qp, ird, 16, 4),
		     FIELD(struct viaduct_query_qp, qpn, 20, 4),
		     FIELD(struct viaduct_query_qp, sq_depth, 24, 4),
		     FIELD(struct viaduct_query_qp, rq_depth, 28, 4),
		     FIELD(struct viaduct_query_qp, sq_outstanding, 32, 4),
		     FIELD(struct viaduct_query_qp, rq_outstanding, 36, 4),
		     FIELD(struct viaduct_query_qp, terminate, 40, 4),
		     FIELD(struct viaduct_query_qp, reserved, 44, 4));
	CHECK_LAYOUT(test, viaduct_doorbell_req, 8,
		     FIELD(struct viaduct_doorbell_req, handle, 0, 4),
		     FIELD(struct viaduct_doorbell_req, flags, 4, 4));
	CHECK_LAYOUT(test, viaduct_comp_channel, 8,
		     FIELD(struct viaduct_comp_channel, fd, 0, 4),
		     FIELD(struct viaduct_comp_channel, reserved, 4, 4));
	CHECK_LAYOUT(test, viaduct_cq_event, 16,
		     FIELD(struct viaduct_cq_event, user_data, 0, 8),
		     FIELD(struct viaduct_cq_event, cq_handle, 8, 4),
		     FIELD(struct viaduct_cq_event, reserved, 12, 4));
	CHECK_LAYOUT(test, viaduct_async_event, 24,
		     FIELD(struct viaduct_async_event, user_data, 0, 8),
		     FIELD(struct viaduct_async_event, type, 8, 4),
		     FIELD(struct viaduct_async_event, handle, 12, 4),
		     FIELD(struct viaduct_async_event, detail, 16, 4),
		     FIELD(struct viaduct_async_event, reserved, 20, 4));
}

static void abi_shared_memory(struct kunit *test)
{
	/* every index on a cache line of its own */
	CHECK_LAYOUT(test, viaduct_doorbell, 5 * VIADUCT_CACHELINE,
		     FIELD(struct viaduct_doorbell, sq_producer, 0, 4),
		     FIELD(struct viaduct_doorbell, pad0, 4, 60),
		     FIELD(struct viaduct_doorbell, rq_producer, 64, 4),
		     FIELD(struct viaduct_doorbell, pad1, 68, 60),
		     FIELD(struct viaduct_doorbell, sq_consumer, 128, 4),
		     FIELD(struct viaduct_doorbell, pad2, 132, 60),
		     FIELD(struct viaduct_doorbell, rq_consumer, 192, 4),
		     FIELD(struct viaduct_doorbell, pad3, 196, 60),
		     FIELD(struct viaduct_doorbell, flags, 256, 4),
		     FIELD(struct viaduct_doorbell, rq_on_demand, 260, 4),
		     FIELD(struct viaduct_doorbell, pad4, 264, 56));
	CHECK_LAYOUT(test, viaduct_ring, VIADUCT_RING_HDR_SIZE,
		     FIELD(struct viaduct_ring, producer, 0, 4),
		     FIELD(struct viaduct_ring, pad0, 4, 60),
		     FIELD(struct viaduct_ring, consumer, 64, 4),
		     FIELD(struct viaduct_ring, pad1, 68, 60),
		     FIELD(struct viaduct_ring, flags, 128, 4),
		     FIELD(struct viaduct_ring, entries, 132, 4),
		     FIELD(struct viaduct_ring, pad2, 136, 56),
		     FIELD(struct viaduct_ring, reserved, 192, 64));
	CHECK_LAYOUT(test, viaduct_sge, 16,
		     FIELD(struct viaduct_sge, addr, 0, 8),
		     FIELD(struct viaduct_sge, length, 8, 4),
		     FIELD(struct viaduct_sge, stag, 12, 4));
	CHECK_LAYOUT(test, viaduct_sqe, 32,
		     FIELD(struct viaduct_sqe, wr_id, 0, 8),
		     FIELD(struct viaduct_sqe, opcode, 8, 1),
		     FIELD(struct viaduct_sqe, flags, 9, 1),
		     FIELD(struct viaduct_sqe, num_sge, 10, 2),
		     FIELD(struct viaduct_sqe, length, 12, 4),
		     FIELD(struct viaduct_sqe, imm_data, 16, 4),
		     FIELD(struct viaduct_sqe, remote_stag, 20, 4),
		     FIELD(struct viaduct_sqe, remote_addr, 24, 8));
	CHECK_LAYOUT(test, viaduct_rqe, 16,
		     FIELD(struct viaduct_rqe, wr_id, 0, 8),
		     FIELD(struct viaduct_rqe, num_sge, 8, 2),
		     FIELD(struct viaduct_rqe, reserved0, 10, 2),
		     FIELD(struct viaduct_rqe, reserved1, 12, 4));
	CHECK_LAYOUT(test, viaduct_cqe, 32,
		     FIELD(struct viaduct_cqe, wr_id, 0, 8),
		     FIELD(struct viaduct_cqe, qp_handle, 8, 4),
		     FIELD(struct viaduct_cqe, byte_len, 12, 4),
		     FIELD(struct viaduct_cqe, opcode, 16, 1),
		     FIELD(struct viaduct_cqe, status, 17, 1),
		     FIELD(struct viaduct_cqe, flags, 18, 1),
		     FIELD(struct viaduct_cqe, reserved, 19, 1),
		     FIELD(struct viaduct_cqe, imm_data, 20, 4),
		     FIELD(struct viaduct_cqe, vendor_err, 24, 4),
		     FIELD(struct viaduct_cqe, invalidated_stag, 28, 4));

	KUNIT_EXPECT_LE(test, sizeof(struct viaduct_doorbell), PAGE_SIZE);
	/* CQEs after the header stay naturally aligned */
	KUNIT_EXPECT_EQ(test, VIADUCT_RING_HDR_SIZE % sizeof(struct viaduct_cqe), 0);
	KUNIT_EXPECT_EQ(test, VIADUCT_STAG_KEY_MASK,
			(1U << VIADUCT_STAG_INDEX_SHIFT) - 1);
	KUNIT_EXPECT_EQ(test, VIADUCT_ACCESS_ALL,
			VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE |
			VIADUCT_ACCESS_REMOTE_READ | VIADUCT_ACCESS_MW_BIND);
	KUNIT_EXPECT_EQ(test, VIADUCT_QP_ATTR_ALL,
			VIADUCT_QP_ATTR_STATE | VIADUCT_QP_ATTR_ACCESS |
			VIADUCT_QP_ATTR_ORD | VIADUCT_QP_ATTR_IRD);
	/* struct viaduct_sqe.flags is a __u8 */
	KUNIT_EXPECT_LE(test, VIADUCT_SQE_FLAGS_ALL, 0xffU);
}

/*
 * 64-bit fields are __aligned_u64, so that i386 (where a plain __u64 is
 * 4-byte aligned) lays the structures out as x86_64 does.
 */
#define EXPECT_ALIGNED_U64(test, type, f)				\
	KUNIT_EXPECT_EQ_MSG(test, __alignof__(typeof_member(struct type, f)), 8, \
			    #type "." #f)

static void abi_u64_alignment(struct kunit *test)
{
	EXPECT_ALIGNED_U64(test, viaduct_list_devices, entries);
	EXPECT_ALIGNED_U64(test, viaduct_device_attr, max_msg_size);
	EXPECT_ALIGNED_U64(test, viaduct_device_attr, max_mr_size);
	EXPECT_ALIGNED_U64(test, viaduct_reg_mr, addr);
	EXPECT_ALIGNED_U64(test, viaduct_reg_mr, length);
	EXPECT_ALIGNED_U64(test, viaduct_create_cq, user_data);
	EXPECT_ALIGNED_U64(test, viaduct_create_cq, mmap_key);
	EXPECT_ALIGNED_U64(test, viaduct_create_cq, mmap_size);
	EXPECT_ALIGNED_U64(test, viaduct_resize_cq, mmap_key);
	EXPECT_ALIGNED_U64(test, viaduct_resize_cq, mmap_size);
	EXPECT_ALIGNED_U64(test, viaduct_create_qp, user_data);
	EXPECT_ALIGNED_U64(test, viaduct_create_qp, db_key);
	EXPECT_ALIGNED_U64(test, viaduct_create_qp, sq_key);
	EXPECT_ALIGNED_U64(test, viaduct_create_qp, rq_key);
	EXPECT_ALIGNED_U64(test, viaduct_create_qp, scq_key);
	EXPECT_ALIGNED_U64(test, viaduct_create_qp, rcq_key);
	EXPECT_ALIGNED_U64(test, viaduct_sge, addr);
	EXPECT_ALIGNED_U64(test, viaduct_sqe, wr_id);
	EXPECT_ALIGNED_U64(test, viaduct_sqe, remote_addr);
	EXPECT_ALIGNED_U64(test, viaduct_rqe, wr_id);
	EXPECT_ALIGNED_U64(test, viaduct_cqe, wr_id);
	EXPECT_ALIGNED_U64(test, viaduct_cq_event, user_data);
	EXPECT_ALIGNED_U64(test, viaduct_async_event, user_data);
}

struct ioctl_case {
	const char *name;
	unsigned int cmd;
	unsigned int dir;
	unsigned int nr;
	size_t size;
};

#define IOCTL_CASE(c, d, n, type) {					\
	.name = #c, .cmd = (c), .dir = (d), .nr = (n),			\
	.size = sizeof(struct type),					\
}

static const struct ioctl_case ioctl_cases[] = {
	IOCTL_CASE(VIADUCT_IOCTL_GET_ABI_VERSION, _IOC_READ, 0x00, viaduct_abi_version),
	IOCTL_CASE(VIADUCT_IOCTL_LIST_DEVICES, _IOC_READ | _IOC_WRITE, 0x01,
		   viaduct_list_devices),
	IOCTL_CASE(VIADUCT_IOCTL_SELECT_DEVICE, _IOC_WRITE, 0x02, viaduct_select_device),
	IOCTL_CASE(VIADUCT_IOCTL_QUERY_DEVICE, _IOC_READ | _IOC_WRITE, 0x03,
		   viaduct_device_attr),
	IOCTL_CASE(VIADUCT_IOCTL_CREATE_PD, _IOC_READ, 0x10, viaduct_handle),
	IOCTL_CASE(VIADUCT_IOCTL_DESTROY_PD, _IOC_WRITE, 0x11, viaduct_handle),
	IOCTL_CASE(VIADUCT_IOCTL_REG_MR, _IOC_READ | _IOC_WRITE, 0x12, viaduct_reg_mr),
	IOCTL_CASE(VIADUCT_IOCTL_DEREG_MR, _IOC_WRITE, 0x13, viaduct_handle),
	IOCTL_CASE(VIADUCT_IOCTL_CREATE_CQ, _IOC_READ | _IOC_WRITE, 0x14, viaduct_create_cq),
	IOCTL_CASE(VIADUCT_IOCTL_RESIZE_CQ, _IOC_READ | _IOC_WRITE, 0x15, viaduct_resize_cq),
	IOCTL_CASE(VIADUCT_IOCTL_DESTROY_CQ, _IOC_WRITE, 0x16, viaduct_handle),
	IOCTL_CASE(VIADUCT_IOCTL_ARM_CQ, _IOC_WRITE, 0x17, viaduct_arm_cq),
	IOCTL_CASE(VIADUCT_IOCTL_CREATE_QP, _IOC_READ | _IOC_WRITE, 0x18, viaduct_create_qp),
	IOCTL_CASE(VIADUCT_IOCTL_MODIFY_QP, _IOC_WRITE, 0x19, viaduct_modify_qp),
	IOCTL_CASE(VIADUCT_IOCTL_QUERY_QP, _IOC_READ | _IOC_WRITE, 0x1a, viaduct_query_qp),
	IOCTL_CASE(VIADUCT_IOCTL_DESTROY_QP, _IOC_WRITE, 0x1b, viaduct_handle),
	IOCTL_CASE(VIADUCT_IOCTL_DOORBELL, _IOC_WRITE, 0x1c, viaduct_doorbell_req),
	IOCTL_CASE(VIADUCT_IOCTL_CREATE_COMP_CHANNEL, _IOC_READ, 0x1d,
		   viaduct_comp_channel),
	IOCTL_CASE(VIADUCT_IOCTL_ALLOC_MW, _IOC_READ | _IOC_WRITE, 0x34, viaduct_alloc_mw),
	IOCTL_CASE(VIADUCT_IOCTL_DEALLOC_MW, _IOC_WRITE, 0x35, viaduct_handle),
	IOCTL_CASE(VIADUCT_IOCTL_BIND_MW, _IOC_READ | _IOC_WRITE, 0x36, viaduct_bind_mw),
	IOCTL_CASE(VIADUCT_IOCTL_MODIFY_MR, _IOC_WRITE, 0x38, viaduct_modify_mr),
	IOCTL_CASE(VIADUCT_IOCTL_CREATE_SRQ, _IOC_READ | _IOC_WRITE, 0x40, viaduct_create_srq),
	IOCTL_CASE(VIADUCT_IOCTL_MODIFY_SRQ, _IOC_WRITE, 0x41, viaduct_modify_srq),
	IOCTL_CASE(VIADUCT_IOCTL_QUERY_SRQ, _IOC_READ | _IOC_WRITE, 0x42, viaduct_query_srq),
	IOCTL_CASE(VIADUCT_IOCTL_DESTROY_SRQ, _IOC_WRITE, 0x43, viaduct_handle),
};

static void abi_ioctl_numbers(struct kunit *test)
{
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(ioctl_cases); i++) {
		const struct ioctl_case *c = &ioctl_cases[i];

		KUNIT_EXPECT_EQ_MSG(test, _IOC_TYPE(c->cmd), VIADUCT_IOCTL_MAGIC,
				    "%s type", c->name);
		KUNIT_EXPECT_EQ_MSG(test, _IOC_NR(c->cmd), c->nr, "%s nr",
				    c->name);
		KUNIT_EXPECT_EQ_MSG(test, _IOC_DIR(c->cmd), c->dir, "%s dir",
				    c->name);
		KUNIT_EXPECT_EQ_MSG(test, (size_t)_IOC_SIZE(c->cmd), c->size,
				    "%s size", c->name);
		/* the size field is 14 bits wide */
		KUNIT_EXPECT_LT_MSG(test, c->size, (size_t)1 << _IOC_SIZEBITS,
				    "%s too large to encode", c->name);
		for (j = 0; j < i; j++)
			KUNIT_EXPECT_NE_MSG(test, _IOC_NR(c->cmd),
					    _IOC_NR(ioctl_cases[j].cmd),
					    "%s and %s share a number", c->name,
					    ioctl_cases[j].name);
	}
}

static void abi_limits(struct kunit *test)
{
	const u64 pow2[] = { VD_MAX_CQE, VD_MAX_QP_WR };
	size_t i;

	/* rings are powers of two, so their maxima must be */
	for (i = 0; i < ARRAY_SIZE(pow2); i++)
		KUNIT_EXPECT_TRUE(test, is_power_of_2(pow2[i]));
	KUNIT_EXPECT_LE(test, VD_MAX_MSG_SIZE, VD_MAX_MR_SIZE);
	/* create_qp.max_msg_size is a __u32 */
	KUNIT_EXPECT_LE(test, VD_MAX_MSG_SIZE, (u64)U32_MAX);
	KUNIT_EXPECT_EQ(test, VD_MAX_MR_SIZE % PAGE_SIZE, 0);
	/* STag index: 24 bits, 0 unused */
	KUNIT_EXPECT_LT(test, VD_MAX_MR, 1U << (32 - VIADUCT_STAG_INDEX_SHIFT));
	/* MPA v2 carries IRD and ORD in 14 bits */
	KUNIT_EXPECT_LE(test, VD_MAX_ORD, 0x3fffU);
	KUNIT_EXPECT_LE(test, VD_MAX_IRD, 0x3fffU);
	KUNIT_EXPECT_GT(test, VD_MAX_ORD, 0U);
	KUNIT_EXPECT_GT(test, VD_MAX_IRD, 0U);
	/* create_qp.max_send_sge and struct viaduct_sqe.num_sge */
	KUNIT_EXPECT_LE(test, VD_MAX_SGE, (u32)U16_MAX);
	KUNIT_EXPECT_GT(test, VD_MAX_SGE, 0U);
	KUNIT_EXPECT_LE(test, VD_MAX_QP_WR, VD_MAX_CQE);
	KUNIT_EXPECT_GT(test, VD_MAX_PD, 0U);
	KUNIT_EXPECT_GT(test, VD_MAX_CQ, 0U);
	KUNIT_EXPECT_GT(test, VD_MAX_QP, 0U);
	KUNIT_EXPECT_EQ(test, VD_PAGE_SIZE, (u32)PAGE_SIZE);
	KUNIT_EXPECT_TRUE(test, is_power_of_2(VD_PAGE_SIZE));
}

static void abi_device_names(struct kunit *test)
{
	static const char * const good[] = {
		"vd0", "a", "A-b_c.9", "0123456789abcde", "..", "-",
	};
	static const char * const bad[] = {
		"", "0123456789abcdef", "vd 0", "vd/0", "vd:0", "vd0\n",
		"\xc3\xa9t\xc3\xa9", "vd\x7f", "tab\t", "a*",
	};
	char unterminated[VIADUCT_NAME_SIZE + 1];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(good); i++)
		KUNIT_EXPECT_TRUE_MSG(test, vd_device_name_valid(good[i]),
				      "\"%s\"", good[i]);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_FALSE_MSG(test, vd_device_name_valid(bad[i]),
				       "\"%s\"", bad[i]);
	/* only VIADUCT_NAME_SIZE bytes are ever read */
	memset(unterminated, 'x', sizeof(unterminated));
	KUNIT_EXPECT_FALSE(test, vd_device_name_valid(unterminated));
}

static struct kunit_case abi_test_cases[] = {
	KUNIT_CASE(abi_device_structs),
	KUNIT_CASE(abi_resource_structs),
	KUNIT_CASE(abi_shared_memory),
	KUNIT_CASE(abi_u64_alignment),
	KUNIT_CASE(abi_ioctl_numbers),
	KUNIT_CASE(abi_limits),
	KUNIT_CASE(abi_device_names),
	{}
};

static struct kunit_suite abi_test_suite = {
	.name = "viaduct_abi",
	.test_cases = abi_test_cases,
};

kunit_test_suite(abi_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit suites for viaduct");
VD_IMPORT_KUNIT_NS();
