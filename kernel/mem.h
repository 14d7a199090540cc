/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pinned user memory: the pages of a registered range, pinned and charged
 * to the process's RLIMIT_MEMLOCK for as long as the umem lives, and byte
 * copies into and out of them for the data path.
 *
 * A umem is owned by exactly one object (an MR) and is not reference
 * counted. It is immutable after vd_umem_pin() returns, so lookups and
 * copies need no lock; the owner guarantees that no copy runs concurrently
 * with, or after, vd_umem_release(). Documentation/memory.rst has the
 * rules; the functions are documented (kernel-doc) at their definitions in
 * mem.c, the inline helpers below where they are defined.
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

/* Pages @umem pinned (and vd_umem_release() unpins): 0 for a view, or NULL. */
static inline unsigned long vd_umem_pinned(const struct vd_umem *umem)
{
	return umem && umem->mm ? umem->npages : 0;
}

/*
 * Pure address arithmetic, shared by the pin path, the data path and tests.
 */

/**
 * vd_umem_num_pages() - the pages a range touches
 * @addr: its first byte
 * @length: its bytes
 *
 * Return: the number of pages [@addr, @addr + @length) touches.
 */
static inline unsigned long vd_umem_num_pages(unsigned long addr, u64 length)
{
	return ((addr & ~PAGE_MASK) + length + PAGE_SIZE - 1) >> PAGE_SHIFT;
}

/**
 * vd_umem_page_index() - the page of a byte of a region
 * @first_offset: the offset of the region's first byte in its first page
 * @offset: the byte's offset in the region
 *
 * Return: the index of the page holding the byte.
 */
static inline unsigned long vd_umem_page_index(unsigned int first_offset,
					       u64 offset)
{
	return (first_offset + offset) >> PAGE_SHIFT;
}

/**
 * vd_umem_page_offset() - the offset of a byte of a region in its page
 * @first_offset: the offset of the region's first byte in its first page
 * @offset: the byte's offset in the region
 *
 * Return: the byte's offset in the page vd_umem_page_index() names.
 */
static inline unsigned int vd_umem_page_offset(unsigned int first_offset,
					       u64 offset)
{
	return (first_offset + offset) & ~PAGE_MASK;
}

/**
 * vd_umem_page() - the page holding a byte of the region
 * @umem: the region
 * @offset: the byte's offset in it (offset 0 is its first byte), inside
 *          the region
 * @page_off: set to the byte's offset in the page
 *
 * O(1).
 *
 * Context: Any context.
 * Return: the page.
 */
static inline struct page *vd_umem_page(const struct vd_umem *umem, u64 offset,
					unsigned int *page_off)
{
	*page_off = vd_umem_page_offset(umem->first_offset, offset);
	return umem->pages[vd_umem_page_index(umem->first_offset, offset)];
}

#endif /* _VD_MEM_H */
