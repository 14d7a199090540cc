// SPDX-License-Identifier: GPL-2.0
/*
 * Pinning user memory for registration, memlock accounting, and byte access
 * to pinned regions for the data path. See mem.h for the ownership rules and
 * Documentation/memory.rst for the design; each function has kernel-doc at
 * its definition.
 */
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/highmem.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "mem.h"
#include "stats.h"

/*
 * Pages per pin_user_pages_fast() or unpin call. Between batches we may
 * reschedule, so a 256 MiB registration does not hog the CPU.
 */
#define VD_PIN_BATCH		1024UL

/*
 * pin_user_pages() fails with -EFAULT for every kind of refusal. Walking
 * the VMAs first lets us tell "not mapped" from "mapped without the needed
 * permission". The answer can go stale as soon as the lock is dropped;
 * that only changes which errno a racing caller sees, because the pin
 * itself checks again.
 */
static int vd_umem_check_vmas(struct mm_struct *mm, unsigned long start,
			      unsigned long end, bool writable)
{
	unsigned long need = VM_READ | (writable ? VM_WRITE : 0);
	struct vm_area_struct *vma;
	unsigned long cur = start;
	int ret = 0;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	while (cur < end) {
		vma = find_vma(mm, cur);
		if (!vma || vma->vm_start > cur) {
			ret = -EFAULT;
			break;
		}
		if ((vma->vm_flags & need) != need) {
			ret = -EACCES;
			break;
		}
		cur = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ret;
}

/*
 * Charge @npages to @mm's pinned_vm. Charge first and check afterwards, so
 * that concurrent registrations cannot both slip under the limit. Ask
 * about CAP_IPC_LOCK only past the limit: capable() audits.
 */
static int vd_umem_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

static void vd_umem_unpin(struct page **pages, unsigned long npages,
			  bool dirty)
{
	unsigned long batch;

	while (npages) {
		batch = min(npages, VD_PIN_BATCH);
		unpin_user_pages_dirty_lock(pages, batch, dirty);
		pages += batch;
		npages -= batch;
		cond_resched();
	}
}

/* All or nothing: on failure every page pinned so far is unpinned again. */
static int vd_umem_pin_pages(struct vd_umem *umem)
{
	unsigned int gup_flags = FOLL_LONGTERM;
	unsigned long start = umem->addr & PAGE_MASK;
	unsigned long done = 0;
	int ret;

	if (umem->writable)
		gup_flags |= FOLL_WRITE;

	while (done < umem->npages) {
		ret = pin_user_pages_fast(start + (done << PAGE_SHIFT),
					  min(umem->npages - done, VD_PIN_BATCH),
					  gup_flags, umem->pages + done);
		if (ret <= 0) {
			vd_umem_unpin(umem->pages, done, false);
			return ret ? ret : -EFAULT;
		}
		done += ret;
		cond_resched();
	}
	return 0;
}

/**
 * vd_umem_pin() - pin a range of the calling process
 * @addr: its first byte
 * @length: its bytes
 * @writable: pin for writing too
 *
 * Pins every page that [@addr, @addr + @length) touches in the calling
 * process, for as long as the umem lives, and charges them to the
 * process's RLIMIT_MEMLOCK (see Documentation/memory.rst).
 *
 * Context: Process context only; may sleep.
 * Return: the umem, or an ERR_PTR():
 * -EINVAL if @length is 0, larger than VD_MR_MAX_SIZE, or @addr + @length
 * wraps 2^64;
 * -EFAULT if part of the range is beyond the user address space, not
 * mapped, or cannot be pinned (I/O or PFN mappings, ...), or the caller
 * has no address space (a kernel thread);
 * -EACCES if the range is mapped, but without read permission, or without
 * write permission while @writable;
 * -EINTR if a fatal signal came while waiting for the mmap lock;
 * -ENOMEM if the charge would exceed RLIMIT_MEMLOCK and the caller lacks
 * CAP_IPC_LOCK, or out of memory.
 */
struct vd_umem *vd_umem_pin(unsigned long addr, u64 length, bool writable)
{
	struct mm_struct *mm = current->mm;
	struct vd_umem *umem;
	u64 end;
	int ret;

	if (!length || length > VD_MR_MAX_SIZE)
		return ERR_PTR(-EINVAL);
	if (check_add_overflow((u64)addr, length, &end))
		return ERR_PTR(-EINVAL);
	if (end > TASK_SIZE || !mm)
		return ERR_PTR(-EFAULT);

	ret = vd_umem_check_vmas(mm, addr, end, writable);
	if (ret)
		return ERR_PTR(ret);

	umem = kzalloc(sizeof(*umem), GFP_KERNEL_ACCOUNT);
	if (!umem)
		return ERR_PTR(-ENOMEM);
	umem->addr = addr;
	umem->length = length;
	umem->npages = vd_umem_num_pages(addr, length);
	umem->first_offset = addr & ~PAGE_MASK;
	umem->writable = writable;

	/*
	 * The charge is undone on this mm at release, which may come after
	 * the process exited (its file closed by the exit path) or from a
	 * worker: hold the mm_struct itself, not its address space.
	 */
	umem->mm = mm;
	mmgrab(mm);

	ret = vd_umem_charge(mm, umem->npages);
	if (ret)
		goto err_drop_mm;

	umem->pages = kvcalloc(umem->npages, sizeof(*umem->pages),
			       GFP_KERNEL_ACCOUNT);
	if (!umem->pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}

	ret = vd_umem_pin_pages(umem);
	if (ret)
		goto err_free_pages;

	vd_stat_add(pinned_pages, umem->npages);
	return umem;

err_free_pages:
	kvfree(umem->pages);
err_uncharge:
	atomic64_sub(umem->npages, &mm->pinned_vm);
err_drop_mm:
	mmdrop(mm);
	kfree(umem);
	return ERR_PTR(ret);
}

/**
 * vd_umem_release() - unpin, uncharge and free
 * @umem: the umem, or NULL (a no-op)
 *
 * Unpins (marking the pages dirty if the umem is writable), uncharges the
 * process that pinned them, even if it has exited, and frees. A view
 * (frmr.c, no mm) pins nothing of its own: only it is freed.
 *
 * Context: Process or worker context; may sleep.
 */
void vd_umem_release(struct vd_umem *umem)
{
	if (!umem)
		return;
	if (!umem->mm) {
		/* a view of pages other umems pin (frmr.c) */
		kvfree(umem->pages);
		kfree(umem);
		return;
	}
	vd_umem_unpin(umem->pages, umem->npages, umem->writable);
	atomic64_sub(umem->npages, &umem->mm->pinned_vm);
	vd_stat_sub(pinned_pages, umem->npages);
	mmdrop(umem->mm);
	kvfree(umem->pages);
	kfree(umem);
}

static bool vd_umem_range_ok(const struct vd_umem *umem, u64 offset,
			     size_t len)
{
	return offset <= umem->length && len <= umem->length - offset;
}

/**
 * vd_umem_copy_to() - copy kernel memory into the region
 * @umem: the region
 * @offset: where to start, from its first byte
 * @src: the bytes
 * @len: how many
 *
 * Crosses page boundaries. The caller has already checked the range
 * (through the TPT).
 *
 * Context: Any context.
 * Return: 0; -EFAULT, with a warning, for a range outside the region or a
 * umem not pinned writable, which is a bug.
 */
int vd_umem_copy_to(struct vd_umem *umem, u64 offset, const void *src,
		    size_t len)
{
	unsigned int page_off;
	struct page *page;
	size_t n;

	if (WARN_ON_ONCE(!umem->writable ||
			 !vd_umem_range_ok(umem, offset, len)))
		return -EFAULT;

	while (len) {
		page = vd_umem_page(umem, offset, &page_off);
		n = min_t(size_t, len, PAGE_SIZE - page_off);
		memcpy_to_page(page, page_off, src, n);
		src += n;
		offset += n;
		len -= n;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_umem_copy_to);

/**
 * vd_umem_copy_from() - copy bytes of the region into kernel memory
 * @umem: the region
 * @offset: where to start, from its first byte
 * @dst: where to copy to
 * @len: how many bytes
 *
 * Crosses page boundaries. The caller has already checked the range
 * (through the TPT).
 *
 * Context: Any context.
 * Return: 0; -EFAULT, with a warning, for a range outside the region,
 * which is a bug.
 */
int vd_umem_copy_from(const struct vd_umem *umem, u64 offset, void *dst,
		      size_t len)
{
	unsigned int page_off;
	struct page *page;
	size_t n;

	if (WARN_ON_ONCE(!vd_umem_range_ok(umem, offset, len)))
		return -EFAULT;

	while (len) {
		page = vd_umem_page(umem, offset, &page_off);
		n = min_t(size_t, len, PAGE_SIZE - page_off);
		memcpy_from_page(dst, page, page_off, n);
		dst += n;
		offset += n;
		len -= n;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_umem_copy_from);
