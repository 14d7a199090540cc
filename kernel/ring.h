/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared rings: the memory userspace maps, and the index protocol both
 * sides follow. Documentation/rings.rst has the whole protocol, the
 * barrier pairs and the lost-wakeup arguments; this header holds the
 * pieces every ring user (cq.c, qp.c, doorbell.c) shares.
 *
 * Ring memory
 * -----------
 *   vd_ring_mem_alloc(size)
 *       Zeroed, page-rounded vmalloc_user() memory with one reference, or
 *       ERR_PTR(-EINVAL) for size 0 (or too large) and ERR_PTR(-ENOMEM).
 *       Process context. @va and @size are fixed for the object's life.
 *   vd_ring_mem_get(mem), vd_ring_mem_put(mem)
 *       The last put frees the memory with vfree(), which sleeps unless
 *       in_interrupt() (softirq, hardirq, or bottom halves disabled, as
 *       under spin_lock_bh(); vfree() then defers the work). So never put
 *       with interrupts disabled or under a plain spinlock; every put
 *       checks this with might_sleep_if(). put(NULL) is a no-op.
 *   vd_ring_mem_mmap(mem, vma)
 *       Maps the memory, from its start, into @vma (a MAP_SHARED mapping
 *       no larger than @size; @vma->vm_pgoff is the caller's mmap key and
 *       is ignored here). -EINVAL for a private or oversized mapping. The
 *       mapping is never inherited across fork() (VM_DONTCOPY) and cannot
 *       grow (VM_DONTEXPAND). Every VMA of it holds a reference on @mem,
 *       so memory whose owner (CQ, QP) is destroyed while still mapped
 *       stays valid for the process until munmap() or exit. Called from
 *       the file's ->mmap() with mmap_lock held for writing.
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
 * against the kernel's private copy of the opposite index:
 *
 *   vd_ring_load_user_index(shared, cons, entries, &prod)
 *       for a ring userspace produces into (SQ, RQ): the user's producer
 *       must satisfy 0 <= prod - cons <= entries;
 *   vd_ring_load_user_consumer(shared, prod, entries, &cons)
 *       for a ring the kernel produces into (CQ): the user's consumer must
 *       satisfy 0 <= prod - cons <= entries.
 *
 * Both return -EINVAL and leave the output alone when the shared word is
 * out of range; that means userspace wrote garbage, and the owner treats
 * the ring as broken (CQ overflow, QP to Error). A valid value is still
 * only a hint: userspace may change it the moment after it was read.
 *
 * Slots that userspace fills are copied out once, with
 * vd_ring_copy_slot(), into kernel memory before any field is looked at;
 * checks run on the copy only, so a concurrent rewrite of the slot can at
 * worst produce a torn copy that fails validation, never a
 * time-of-check/time-of-use gap.
 */
#ifndef _VD_RING_H
#define _VD_RING_H

#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/kref.h>
#include <linux/string.h>
#include <linux/types.h>
#include <asm/barrier.h>

struct vm_area_struct;

struct vd_ring_mem {
	struct kref ref;
	void *va;		/* vmalloc_user() memory */
	size_t size;		/* page-rounded */
};

struct vd_ring_mem *vd_ring_mem_alloc(size_t size);
void vd_ring_mem_put(struct vd_ring_mem *mem);
int vd_ring_mem_mmap(struct vd_ring_mem *mem, struct vm_area_struct *vma);

static inline struct vd_ring_mem *vd_ring_mem_get(struct vd_ring_mem *mem)
{
	kref_get(&mem->ref);
	return mem;
}

/* Slot of a free-running index; @entries is a power of two. */
static inline u32 vd_ring_slot(u32 idx, u32 entries)
{
	return idx & (entries - 1);
}

/* Elements between consumer and producer (meaningful when validated). */
static inline u32 vd_ring_used(u32 prod, u32 cons)
{
	return prod - cons;
}

/* True if @prod and @cons can belong to a ring of @entries slots. */
static inline bool vd_ring_valid(u32 prod, u32 cons, u32 entries)
{
	return prod - cons <= entries;
}

/* Free slots; only for a validated pair. */
static inline u32 vd_ring_free(u32 prod, u32 cons, u32 entries)
{
	return entries - (prod - cons);
}

static inline bool vd_ring_full(u32 prod, u32 cons, u32 entries)
{
	return prod - cons >= entries;
}

/*
 * Acquire-loads a producer index that userspace writes and checks it
 * against the kernel's private consumer index @cons. The acquire pairs with
 * userspace's store-release of the index after it filled the slots, so the
 * slots up to the returned index may be copied out afterwards.
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

/*
 * Acquire-loads a consumer index that userspace writes and checks it
 * against the kernel's private producer index @prod. The acquire pairs with
 * userspace's store-release of the index after it read the slots, so the
 * slots before the returned index may be overwritten afterwards.
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

/*
 * Publishes an index the kernel owns: every slot write (or, for a consumer
 * index, every slot read) before it is visible before the new value.
 */
static inline void vd_ring_publish(u32 *shared, u32 idx)
{
	/* Pairs with the user's load-acquire of the index. */
	smp_store_release(shared, idx);
}

/* Address of the slot of @idx in an array of @slot_size-byte slots. */
static inline void *vd_ring_slot_ptr(void *slots, u32 idx, u32 entries,
				     size_t slot_size)
{
	return slots + (size_t)vd_ring_slot(idx, entries) * slot_size;
}

/*
 * Copies the slot of @idx into private memory. The copy is the only read
 * of the shared slot: look at @dst, never at the ring, from here on.
 */
static inline void vd_ring_copy_slot(void *dst, const void *slots, u32 idx,
				     u32 entries, size_t slot_size)
{
	memcpy(dst, slots + (size_t)vd_ring_slot(idx, entries) * slot_size,
	       slot_size);
}

#endif /* _VD_RING_H */
