/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pinned user memory.
 *
 * API
 * ---
 *   vd_umem_pin(addr, length, writable)
 *       Pins every page that [addr, addr + length) touches in the calling
 *       process, for as long as the umem lives, and charges them to the
 *       process's RLIMIT_MEMLOCK (see Documentation/memory.rst). Process
 *       context only; may sleep. Returns the umem or an ERR_PTR:
 *         -EINVAL  length is 0, larger than VD_MR_MAX_SIZE, or
 *                  addr + length wraps 2^64;
 *         -EFAULT  part of the range is beyond the user address space, not
 *                  mapped, or cannot be pinned (I/O or PFN mappings, ...);
 *         -EACCES  the range is mapped, but without read permission, or
 *                  without write permission while @writable;
 *         -EINTR   a fatal signal came while waiting for the mmap lock;
 *         -ENOMEM  the charge would exceed RLIMIT_MEMLOCK and the caller
 *                  lacks CAP_IPC_LOCK, or out of memory.
 *   vd_umem_release(umem)
 *       Unpins (marking the pages dirty if the umem is writable), uncharges
 *       the process that pinned them, even if it has exited, and frees.
 *       Process or worker context; may sleep.
 *   vd_umem_page(umem, offset, &page_off)
 *       The page holding byte @offset of the region (offset 0 is @addr)
 *       and the byte's offset in it. O(1).
 *   vd_umem_copy_to(umem, offset, src, len), vd_umem_copy_from(...)
 *       Copy between kernel memory and the region, across page boundaries.
 *       Any context. The caller has already checked the range (through the
 *       TPT); a range outside the region, or a write into a umem that was
 *       not pinned writable, is a bug: it warns and returns -EFAULT.
 *
 * A umem is owned by exactly one object (an MR) and is not reference
 * counted. It is immutable after vd_umem_pin() returns, so lookups and
 * copies need no lock; the owner guarantees that no copy runs concurrently
 * with, or after, vd_umem_release().
 */
#ifndef _VD_MEM_H
#define _VD_MEM_H

#include <linux/limits.h>
#include <linux/mm_types.h>
#include <linux/types.h>

/*
 * The page array is one kvcalloc(), which must stay below INT_MAX bytes.
 * A region of VD_MR_MAX_SIZE bytes fits at any alignment (it touches at
 * most one page more than its length in pages).
 */
#define VD_UMEM_MAX_PAGES	(INT_MAX / sizeof(struct page *))
#define VD_MR_MAX_SIZE		((u64)(VD_UMEM_MAX_PAGES - 1) << PAGE_SHIFT)

struct vd_umem {
	/* charged with npages, mmgrab()ed; NULL: a view (frmr.c) */
	struct mm_struct *mm;
	unsigned long addr;		/* first registered byte */
	u64 length;			/* registered bytes */
	unsigned long npages;		/* pinned pages */
	unsigned int first_offset;	/* offset of @addr in pages[0] */
	bool writable;
	struct page **pages;
};

struct vd_umem *vd_umem_pin(unsigned long addr, u64 length, bool writable);
void vd_umem_release(struct vd_umem *umem);
int vd_umem_copy_to(struct vd_umem *umem, u64 offset, const void *src,
		    size_t len);
int vd_umem_copy_from(const struct vd_umem *umem, u64 offset, void *dst,
		      size_t len);

/* Pure address arithmetic, shared by the pin path, the data path and tests. */
static inline unsigned long vd_umem_num_pages(unsigned long addr, u64 length)
{
	return ((addr & ~PAGE_MASK) + length + PAGE_SIZE - 1) >> PAGE_SHIFT;
}

static inline unsigned long vd_umem_page_index(unsigned int first_offset,
					       u64 offset)
{
	return (first_offset + offset) >> PAGE_SHIFT;
}

static inline unsigned int vd_umem_page_offset(unsigned int first_offset,
					       u64 offset)
{
	return (first_offset + offset) & ~PAGE_MASK;
}

static inline struct page *vd_umem_page(const struct vd_umem *umem, u64 offset,
					unsigned int *page_off)
{
	*page_off = vd_umem_page_offset(umem->first_offset, offset);
	return umem->pages[vd_umem_page_index(umem->first_offset, offset)];
}

#endif /* _VD_MEM_H */
