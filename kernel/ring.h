/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared rings: the memory userspace maps (struct vd_ring_mem, in ring.c),
 * and the index protocol both sides follow (the inline helpers below).
 * Documentation/rings.rst has the whole protocol, the barrier pairs and the
 * lost-wakeup arguments; this header holds the pieces every ring user
 * (cq.c, qp.c, doorbell.c) shares.
 *
 * Ring memory has a kref; every VMA that maps it holds a reference, so
 * memory whose owner (CQ, QP) is destroyed while still mapped stays valid
 * for the process until munmap() or exit. The last put sleeps (vfree()),
 * so a reference is never dropped with interrupts disabled or under a plain
 * spinlock.
 *
 * Index discipline
 * ----------------
 * Indices are free-running u32 counters: slot = idx & (entries - 1),
 * used = prod - cons, and unsigned wrap-around at 2^32 needs no special
 * case because @entries is a power of two that divides 2^32. Each shared
 * index has exactly one writer.
 *
 * The kernel keeps a private copy of every index it owns and publishes it
 * with vd_ring_publish() (store-release, after writing the slots it
 * covers); it never reads its own index back from shared memory. An index
 * written by userspace is read once with an acquire load and checked
 * against the kernel's private copy of the opposite index
 * (vd_ring_load_user_index(), vd_ring_load_user_consumer()). A value out of
 * range means userspace wrote garbage, and the owner treats the ring as
 * broken (CQ overflow, QP to Error). A valid value is still only a hint:
 * userspace may change it the moment after it was read.
 *
 * Slots that userspace fills are copied out once, with
 * vd_ring_copy_part(), into kernel memory before any field is looked at;
 * checks run on the copy only, so a concurrent rewrite of the slot can at
 * worst produce a torn copy that fails validation, never a
 * time-of-check/time-of-use gap. A slot may be copied in parts (a WQE's
 * header, then the SGEs it declares), but each byte is copied at most
 * once, and a length that decides a later part is read from the copy.
 */
#ifndef _VD_RING_H
#define _VD_RING_H

#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/kref.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <linux/types.h>
#include <asm/barrier.h>

struct vm_area_struct;

struct vd_ring_mem {
	struct kref ref;
	void *va;		/* vmalloc memory, charged to a memcg */
	size_t size;		/* page-rounded */
};

struct vd_ring_mem *vd_ring_mem_alloc(size_t size);
void vd_ring_mem_put(struct vd_ring_mem *mem);
int vd_ring_mem_mmap(struct vd_ring_mem *mem, struct vm_area_struct *vma);

/**
 * vd_ring_mem_get() - take a reference
 * @mem: the memory, on which the caller holds a reference (or which it
 *       borrows under its owner's rules, as vd_cq_mem() says)
 *
 * Context: Any context.
 * Return: @mem.
 */
static inline struct vd_ring_mem *vd_ring_mem_get(struct vd_ring_mem *mem)
{
	kref_get(&mem->ref);
	return mem;
}

/**
 * vd_ring_slot() - the slot of a free-running index
 * @idx: the index
 * @entries: the ring's slots, a power of two
 *
 * Return: @idx modulo @entries.
 */
static inline u32 vd_ring_slot(u32 idx, u32 entries)
{
	return idx & (entries - 1);
}

/**
 * vd_ring_used() - elements between consumer and producer
 * @prod: the producer index
 * @cons: the consumer index
 *
 * Return: @prod - @cons; meaningful for a pair vd_ring_valid() accepts.
 */
static inline u32 vd_ring_used(u32 prod, u32 cons)
{
	return prod - cons;
}

/**
 * vd_ring_valid() - whether two indices can belong to one ring
 * @prod: the producer index
 * @cons: the consumer index
 * @entries: the ring's slots
 *
 * Return: true if 0 <= @prod - @cons <= @entries.
 */
static inline bool vd_ring_valid(u32 prod, u32 cons, u32 entries)
{
	return prod - cons <= entries;
}

/**
 * vd_ring_free() - free slots
 * @prod: the producer index
 * @cons: the consumer index
 * @entries: the ring's slots
 *
 * Return: @entries - (@prod - @cons); only for a validated pair.
 */
static inline u32 vd_ring_free(u32 prod, u32 cons, u32 entries)
{
	return entries - (prod - cons);
}

/**
 * vd_ring_full() - whether no slot is free
 * @prod: the producer index
 * @cons: the consumer index
 * @entries: the ring's slots
 *
 * Return: true if @prod - @cons >= @entries (also for an invalid pair).
 */
static inline bool vd_ring_full(u32 prod, u32 cons, u32 entries)
{
	return prod - cons >= entries;
}

/**
 * vd_ring_load_user_index() - read a producer index that userspace writes
 * @shared: the index in the shared ring header
 * @cons: the kernel's private consumer index
 * @entries: the ring's slots
 * @prod: set to the index if it is valid; left alone otherwise
 *
 * For a ring userspace produces into (SQ, RQ). The acquire load pairs with
 * userspace's store-release of the index after it filled the slots, so the
 * slots up to the returned index may be copied out afterwards.
 *
 * Context: Any context.
 * Return: 0, or -EINVAL if the index does not satisfy
 * 0 <= prod - @cons <= @entries: userspace wrote garbage.
 */
static inline int vd_ring_load_user_index(const u32 *shared, u32 cons,
					  u32 entries, u32 *prod)
{
	/* Pairs with the user's store-release after filling the slots. */
	u32 idx = smp_load_acquire(shared);

	if (unlikely(!vd_ring_valid(idx, cons, entries)))
		return -EINVAL;
	*prod = idx;
	return 0;
}

/**
 * vd_ring_load_user_consumer() - read a consumer index that userspace writes
 * @shared: the index in the shared ring header
 * @prod: the kernel's private producer index
 * @entries: the ring's slots
 * @cons: set to the index if it is valid; left alone otherwise
 *
 * For a ring the kernel produces into (CQ). The acquire load pairs with
 * userspace's store-release of the index after it read the slots, so the
 * slots before the returned index may be overwritten afterwards.
 *
 * Context: Any context.
 * Return: 0, or -EINVAL if the index does not satisfy
 * 0 <= @prod - cons <= @entries: userspace wrote garbage.
 */
static inline int vd_ring_load_user_consumer(const u32 *shared, u32 prod,
					     u32 entries, u32 *cons)
{
	/* Pairs with the user's store-release after reading the slots. */
	u32 idx = smp_load_acquire(shared);

	if (unlikely(!vd_ring_valid(prod, idx, entries)))
		return -EINVAL;
	*cons = idx;
	return 0;
}

/**
 * vd_ring_publish() - publish an index the kernel owns
 * @shared: the index in the shared ring header
 * @idx: the kernel's private copy, the new value
 *
 * A store-release: every slot write (or, for a consumer index, every slot
 * read) before it is visible before the new value. Pairs with userspace's
 * load-acquire of the index.
 *
 * Context: Any context.
 */
static inline void vd_ring_publish(u32 *shared, u32 idx)
{
	/* Pairs with the user's load-acquire of the index. */
	smp_store_release(shared, idx);
}

/**
 * vd_ring_slot_ptr() - the address of a slot
 * @slots: the array of slots
 * @idx: a free-running index
 * @entries: the ring's slots, a power of two
 * @slot_size: bytes per slot
 *
 * Return: the address of the slot of @idx.
 */
static inline void *vd_ring_slot_ptr(void *slots, u32 idx, u32 entries,
				     size_t slot_size)
{
	return slots + (size_t)vd_ring_slot(idx, entries) * slot_size;
}

/**
 * vd_ring_copy_part() - copy part of a slot userspace fills
 * @dst: the private copy of the whole slot
 * @slots: the array of slots
 * @idx: a free-running index
 * @entries: the ring's slots, a power of two
 * @slot_size: bytes per slot
 * @off: the first byte of the slot to copy, at most @slot_size
 * @len: how many bytes; a range that would leave the slot is cut at its
 *       end, so a length taken from a slot's contents never reads
 *       another slot
 *
 * Copies bytes [@off, @off + @len) of the slot of @idx to the same offset
 * of @dst. A slot whose size depends on what it holds is copied in two
 * steps: its header (from @off 0), then as much of the rest as the copied
 * header declares, bounded by the caller's limits. The copy is the only
 * read of the shared slot: look at @dst, never at the ring, from here on.
 *
 * Context: Any context.
 */
static inline void vd_ring_copy_part(void *dst, const void *slots, u32 idx,
				     u32 entries, size_t slot_size,
				     size_t off, size_t len)
{
	const void *slot = slots + (size_t)vd_ring_slot(idx, entries) *
			   slot_size;

	len = min(len, slot_size - off);
	memcpy(dst + off, slot + off, len);
}

#endif /* _VD_RING_H */
