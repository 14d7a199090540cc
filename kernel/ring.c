// SPDX-License-Identifier: GPL-2.0
/*
 * Memory for shared rings and doorbell pages, and its mapping into user
 * space. See ring.h for the rules.
 */
#include <linux/err.h>
#include <linux/limits.h>
#include <linux/mm.h>
#include <linux/preempt.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <kunit/visibility.h>

#include "ring.h"

/* Far above any ring the module sizes; keeps the rounding from wrapping. */
#define VD_RING_MEM_MAX		SZ_1G

/**
 * vd_ring_mem_alloc() - memory for a ring or a doorbell page
 * @size: bytes wanted; rounded up to whole pages
 *
 * Zeroed vmalloc_user() memory. @va and @size are fixed for the object's
 * life.
 *
 * Context: Process context.
 * Return: the memory with one reference; ERR_PTR(-EINVAL) for size 0 or
 * more than 1 GiB; ERR_PTR(-ENOMEM).
 */
struct vd_ring_mem *vd_ring_mem_alloc(size_t size)
{
	struct vd_ring_mem *mem;

	if (!size || size > VD_RING_MEM_MAX)
		return ERR_PTR(-EINVAL);

	mem = kzalloc(sizeof(*mem), GFP_KERNEL_ACCOUNT);
	if (!mem)
		return ERR_PTR(-ENOMEM);

	mem->size = PAGE_ALIGN(size);
	/* Zeroed and marked VM_USERMAP, as remap_vmalloc_range() wants. */
	mem->va = vmalloc_user(mem->size);
	if (!mem->va) {
		kfree(mem);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&mem->ref);
	return mem;
}
EXPORT_SYMBOL_IF_KUNIT(vd_ring_mem_alloc);

static void vd_ring_mem_free(struct kref *ref)
{
	struct vd_ring_mem *mem = container_of(ref, struct vd_ring_mem, ref);

	/*
	 * No mapping is left (each VMA holds a reference), so nobody can
	 * reach the pages any more. vfree() defers by itself when called in
	 * interrupt context.
	 */
	vfree(mem->va);
	kfree(mem);
}

/**
 * vd_ring_mem_put() - drop a reference
 * @mem: the memory, or NULL (a no-op)
 *
 * The last put frees the memory with vfree(), which sleeps unless
 * in_interrupt() (softirq, hardirq, or bottom halves disabled, as under
 * spin_lock_bh(); vfree() then defers the work).
 *
 * Context: Never with interrupts disabled or under a plain spinlock; every
 * put checks this with might_sleep_if(), not only the last.
 */
void vd_ring_mem_put(struct vd_ring_mem *mem)
{
	/*
	 * The last put frees vmalloc memory, which may sleep outside
	 * interrupt context: complain on every put from an atomic section,
	 * not only on the (rare) last one.
	 */
	might_sleep_if(!in_interrupt());
	if (mem)
		kref_put(&mem->ref, vd_ring_mem_free);
}
EXPORT_SYMBOL_IF_KUNIT(vd_ring_mem_put);

/*
 * Each VMA holds one reference: taken in vd_ring_mem_mmap() for the first,
 * in ->open() for every copy the mm makes (split by a partial munmap or
 * mprotect, move by mremap), and dropped in ->close(). fork() makes no
 * copy: the VMA is VM_DONTCOPY.
 */
static void vd_ring_vm_open(struct vm_area_struct *vma)
{
	vd_ring_mem_get(vma->vm_private_data);
}

static void vd_ring_vm_close(struct vm_area_struct *vma)
{
	vd_ring_mem_put(vma->vm_private_data);
}

static const struct vm_operations_struct vd_ring_vm_ops = {
	.open = vd_ring_vm_open,
	.close = vd_ring_vm_close,
};

/*
 * vm_flags became read-only behind vm_flags_set() in 6.3 (Kbuild detects
 * it as VD_HAVE_VM_FLAGS_SET); the 6.1 kernels
 * the module also builds for have only the plain field.
 */
static void vd_vma_set_flags(struct vm_area_struct *vma, vm_flags_t flags)
{
#ifdef VD_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/**
 * vd_ring_mem_mmap() - map ring memory into a process
 * @mem: the memory
 * @vma: a MAP_SHARED mapping no larger than @mem->size; its @vm_pgoff is
 *       the caller's mmap key and is ignored here
 *
 * Maps @mem from its start. The mapping is never inherited across fork()
 * (VM_DONTCOPY) and cannot grow (VM_DONTEXPAND). Every VMA of it, including
 * the pieces a partial munmap() or mprotect() leaves and the moves of
 * mremap(), holds a reference on @mem.
 *
 * Context: The file's ->mmap(), with mmap_lock held for writing.
 * Return: 0; -EINVAL for a private or oversized mapping; an error of
 * remap_vmalloc_range().
 */
int vd_ring_mem_mmap(struct vd_ring_mem *mem, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	int ret;

	/*
	 * A private mapping would turn into a copy at the first write and
	 * silently stop being shared with the kernel.
	 */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (len > mem->size)
		return -EINVAL;

	/*
	 * vm_pgoff carries the caller's mmap key; the mapping always starts
	 * at the beginning of @mem (page offset 0 of the vmalloc area).
	 * remap_vmalloc_range() inserts every page now and adds
	 * VM_DONTEXPAND | VM_DONTDUMP.
	 */
	ret = remap_vmalloc_range(vma, mem->va, 0);
	if (ret)
		return ret;

	vd_vma_set_flags(vma, VM_DONTCOPY | VM_DONTEXPAND);
	vma->vm_ops = &vd_ring_vm_ops;
	vma->vm_private_data = vd_ring_mem_get(mem);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_ring_mem_mmap);
