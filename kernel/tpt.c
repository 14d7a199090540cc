// SPDX-License-Identifier: GPL-2.0
/*
 * The Translation and Protection Table: STag allocation and memory region
 * lifetime; the access check is tpt_check.c's. See tpt.h for the rules,
 * Documentation/memory.rst for the design; each function has kernel-doc
 * at its definition.
 *
 * Lifetime. A region is found through the xarray under RCU and pinned by
 * kref_get_unless_zero(). Deregistration erases the index first, so once
 * it returns no new lookup can find the region; lookups that raced with it
 * either took their reference before the count reached zero (and keep the
 * region, with its pages, alive until they put it) or fail. The structure
 * is freed with kfree_rcu(), so a racing reader never touches freed memory.
 * Fields other than @state never change after the region is published,
 * but for the PD and rights of a REG_MR region, which vd_mr_modify()
 * changes together under the region's @attr_seq.
 */
#include <linux/bug.h>
#include <linux/err.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>
#include <kunit/visibility.h>

#include "mem.h"
#include "pd.h"
#include "stats.h"
#include "tpt.h"

static void vd_mr_free(struct vd_mr *mr)
{
	struct vd_tpt *tpt = mr->tpt;
	u32 i;

	if (!mr->borrowed_umem) {
		atomic64_sub(vd_umem_pinned(mr->umem), &tpt->pinned_pages);
		vd_umem_release(mr->umem);
	}
	vd_mw_unlink(mr);
	for (i = 0; i < mr->nr_srcs; i++)
		vd_mr_put(mr->srcs[i]);
	kfree(mr->srcs);
	vd_pd_put(mr->pd);
	vd_stat_dec(mrs);
	kfree_rcu(mr, rcu);
	atomic_dec(&tpt->nr_alive);
}

/*
 * A release may drop the last reference to another region (a window's
 * binding puts its region, a fast registration its sources), which adds
 * that one to the list again: this run takes those too, and the work item
 * does not queue itself for them (vd_mr_release_later()), so that a
 * flush_work() that waited for this run sees every chained release done
 * and nothing of the table's still queued.
 */
static void vd_tpt_release_work(struct work_struct *work)
{
	struct vd_tpt *tpt = container_of(work, struct vd_tpt, release_work);
	struct llist_node *list;
	struct vd_mr *mr, *next;

	while ((list = llist_del_all(&tpt->release_list))) {
		llist_for_each_entry_safe(mr, next, list, release_node)
			vd_mr_free(mr);
	}
}

/**
 * vd_tpt_init() - set up a device's table
 * @tpt: the table, embedded in the device
 * @max_mr: the most STags registered at a time; 0 or more than
 *          VD_STAG_INDEX_MAX means VD_STAG_INDEX_MAX
 *
 * Context: Any context.
 */
void vd_tpt_init(struct vd_tpt *tpt, u32 max_mr)
{
	xa_init_flags(&tpt->mrs, XA_FLAGS_ALLOC);
	tpt->next = 1;
	tpt->max_mr = max_mr && max_mr < VD_STAG_INDEX_MAX ?
		      max_mr : VD_STAG_INDEX_MAX;
	atomic_set(&tpt->nr_mrs, 0);
	atomic_set(&tpt->nr_alive, 0);
	atomic64_set(&tpt->pinned_pages, 0);
	atomic_set(&tpt->tcp_holds, 0);
	init_llist_head(&tpt->release_list);
	INIT_WORK(&tpt->release_work, vd_tpt_release_work);
}
EXPORT_SYMBOL_IF_KUNIT(vd_tpt_init);

/**
 * vd_tpt_uninit() - tear down a device's table
 * @tpt: the table
 *
 * Runs after every STag of the device was deregistered and every reference
 * to them dropped, but for the messages TCP may still hold by reference
 * (zero copy) after their regions' deregistration gave up waiting: waits
 * for those (TCP frees them within its own timeouts), then for the
 * releases still queued on the table's work item, and warns if a region
 * is left.
 *
 * Context: Process context (sleeps).
 */
void vd_tpt_uninit(struct vd_tpt *tpt)
{
	wait_var_event(&tpt->tcp_holds, !atomic_read(&tpt->tcp_holds));
	/*
	 * Regions whose last reference went away outside process context
	 * are queued on release_work; once it is flushed, nothing of ours
	 * can run any more.
	 */
	flush_work(&tpt->release_work);
	WARN_ON(!xa_empty(&tpt->mrs));
	WARN_ON(atomic_read(&tpt->nr_alive));
	WARN_ON(atomic64_read(&tpt->pinned_pages));
	xa_destroy(&tpt->mrs);
}
EXPORT_SYMBOL_IF_KUNIT(vd_tpt_uninit);

/**
 * vd_tpt_regions() - the table's regions not yet freed, for reports
 * @tpt: the table
 *
 * Context: Any context.
 * Return: regions, windows and fast registrations made in @tpt and not
 * yet freed.
 */
u32 vd_tpt_regions(const struct vd_tpt *tpt)
{
	return atomic_read(&tpt->nr_alive);
}

/**
 * vd_tpt_pinned_pages() - pages the table's registrations pin, for reports
 * @tpt: the table
 *
 * Context: Any context.
 * Return: the pages vd_mr_register() pinned for regions of @tpt not yet
 * freed.
 */
u64 vd_tpt_pinned_pages(const struct vd_tpt *tpt)
{
	return atomic64_read(&tpt->pinned_pages);
}

/**
 * vd_mr_access_rights() - the rights an access mask grants
 * @access: VIADUCT_ACCESS_* as the user gave them
 *
 * Local read is always granted; remote write needs local write (remote
 * read needs local read, which is implied).
 *
 * Context: Any context.
 * Return: the VD_RIGHT_* bits, or -EINVAL for unknown bits or for remote
 * write without local write.
 */
int vd_mr_access_rights(u32 access)
{
	u32 rights = VD_RIGHT_LOCAL_READ;

	if (access & ~VIADUCT_ACCESS_ALL)
		return -EINVAL;
	if ((access & VIADUCT_ACCESS_REMOTE_WRITE) &&
	    !(access & VIADUCT_ACCESS_LOCAL_WRITE))
		return -EINVAL;

	if (access & VIADUCT_ACCESS_LOCAL_WRITE)
		rights |= VD_RIGHT_LOCAL_WRITE;
	if (access & VIADUCT_ACCESS_REMOTE_WRITE)
		rights |= VD_RIGHT_REMOTE_WRITE;
	if (access & VIADUCT_ACCESS_REMOTE_READ)
		rights |= VD_RIGHT_REMOTE_READ;
	if (access & VIADUCT_ACCESS_MW_BIND)
		rights |= VD_RIGHT_MW_BIND;
	return rights;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_access_rights);

/* Nothing local is reached through a window: it grants remote rights only. */
#define VD_RIGHTS_MW	(VD_RIGHT_REMOTE_READ | VD_RIGHT_REMOTE_WRITE)

static bool vd_stag_is_mw(enum vd_stag_type type)
{
	return type == VD_STAG_MW1 || type == VD_STAG_MW2;
}

/**
 * vd_stag_insert() - enter an STag of any type in the table
 * @tpt: the table
 * @pd: the PD the STag belongs to; it is counted as a user of it
 * @umem: the pages, or NULL (a region without pages, for tests of the
 *        table, or an empty fast-register MR)
 * @addr: the address of the first byte
 * @length: bytes; 0 only for an INVALID fast-register MR or window
 * @access: VIADUCT_ACCESS_*
 * @key: the key of the STag
 * @type: what the STag names (enum vd_stag_type)
 * @qpn: the QP a type-2 window is bound to; 0 for every other type
 * @valid: enter the STag VALID, else INVALID
 *
 * On success the STag owns @umem; on failure the caller still does. A
 * fast-register MR that has not been registered yet, and a window not
 * bound yet, have no pages and a length of 0; every other STag covers at
 * least one byte. A window grants
 * only the remote rights of @access: nothing reaches local memory through
 * it.
 *
 * Context: Process context (allocates with GFP_KERNEL).
 * Return: the region with one reference, the registration reference, which
 * belongs to the caller; ERR_PTR(-EINVAL) for bad access bits, a bad type,
 * a @qpn for a type other than VD_STAG_MW2, a length of 0 or a range that
 * wraps; ERR_PTR(-ENOENT) if @pd was destroyed; ERR_PTR(-ENOMEM) for no
 * memory or when the table already holds its @max_mr STags.
 */
struct vd_mr *vd_stag_insert(struct vd_tpt *tpt, struct vd_pd *pd,
			     struct vd_umem *umem, u64 addr, u64 length,
			     u32 access, u8 key, enum vd_stag_type type,
			     u32 qpn, bool valid)
{
	int rights = vd_mr_access_rights(access);
	struct vd_mr *mr;
	u64 last;
	u32 index;
	int ret;

	if (rights < 0)
		return ERR_PTR(rights);
	if (type >= VD_STAG_TYPE_NR || (qpn && type != VD_STAG_MW2))
		return ERR_PTR(-EINVAL);
	if (vd_stag_is_mw(type))
		rights &= VD_RIGHTS_MW;
	/* empty: a fast-register MR or a window, neither registered yet */
	if (!length && (valid || type == VD_STAG_MR))
		return ERR_PTR(-EINVAL);
	if (length && check_add_overflow(addr, length - 1, &last))
		return ERR_PTR(-EINVAL);

	if (atomic_inc_return(&tpt->nr_mrs) > tpt->max_mr) {
		ret = -ENOMEM;
		goto err_uncount;
	}
	ret = vd_pd_attach(pd);
	if (ret)
		goto err_uncount;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr) {
		ret = -ENOMEM;
		goto err_detach;
	}
	kref_init(&mr->ref);
	seqcount_init(&mr->attr_seq);
	mr->tpt = tpt;
	mr->pd = vd_pd_get(pd);
	mr->access = access;
	mr->rights = rights;
	mr->state = valid ? VD_MR_VALID : VD_MR_INVALID;
	mr->type = type;
	mr->qpn = qpn;
	mr->addr = addr;
	mr->length = length;
	mr->umem = umem;

	/*
	 * Reserve an index, then publish the finished region in it: a reader
	 * that guesses the STag sees either nothing or the whole region,
	 * never one whose @stag is still being written.
	 */
	ret = xa_alloc_cyclic(&tpt->mrs, &index, NULL,
			      XA_LIMIT(1, VD_STAG_INDEX_MAX), &tpt->next,
			      GFP_KERNEL);
	if (ret < 0) {
		ret = ret == -EBUSY ? -ENOMEM : ret;
		goto err_free;
	}
	mr->stag = vd_stag_make(index, key);
	WARN_ON(xa_is_err(xa_store(&tpt->mrs, index, mr, GFP_KERNEL)));

	atomic_inc(&tpt->nr_alive);
	vd_stat_inc(mrs);
	return mr;

err_free:
	vd_pd_put(pd);
	kfree(mr);
err_detach:
	vd_pd_detach(pd);
err_uncount:
	atomic_dec(&tpt->nr_mrs);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_KUNIT(vd_stag_insert);

/**
 * vd_mr_insert() - enter a region without pinning
 * @tpt: the table
 * @pd: the PD it belongs to
 * @umem: the pages, taken over on success; or NULL, a region without
 *        pages for tests of the table only
 * @addr: the address of the first byte
 * @length: bytes, at least one
 * @access: VIADUCT_ACCESS_*
 * @key: the key of the STag
 *
 * vd_stag_insert() for a VALID VD_STAG_MR.
 *
 * Context: Process context.
 * Return: as vd_stag_insert().
 */
struct vd_mr *vd_mr_insert(struct vd_tpt *tpt, struct vd_pd *pd,
			   struct vd_umem *umem, u64 addr, u64 length,
			   u32 access, u8 key)
{
	return vd_stag_insert(tpt, pd, umem, addr, length, access, key,
			      VD_STAG_MR, 0, true);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_insert);

/**
 * vd_mr_register() - pin user memory and register it (REG_MR)
 * @tpt: the table
 * @pd: the PD the region belongs to
 * @addr: the first byte, in the calling process
 * @length: bytes
 * @access: VIADUCT_ACCESS_*
 * @key: the key of the STag
 *
 * Pins [@addr, @addr + @length) of the calling process, writable iff
 * @access has LOCAL_WRITE (which REMOTE_WRITE requires), and enters the
 * region in the table as VALID.
 *
 * Context: Process context; may sleep.
 * Return: the region with one reference, the registration reference, which
 * belongs to the caller; or ERR_PTR() of -EINVAL (bad access bits,
 * REMOTE_WRITE without LOCAL_WRITE, length 0 or too large, @addr +
 * @length wraps), -EFAULT (@addr does not fit an unsigned long), -ENOENT
 * (the PD was destroyed), -ENOMEM (memlock limit, memory, or the table's
 * @max_mr STags already registered), or the other errors of vd_umem_pin()
 * (-EFAULT, -EACCES, -EINTR).
 */
struct vd_mr *vd_mr_register(struct vd_tpt *tpt, struct vd_pd *pd, u64 addr,
			     u64 length, u32 access, u8 key)
{
	int rights = vd_mr_access_rights(access);
	struct vd_umem *umem;
	struct vd_mr *mr;

	if (rights < 0)
		return ERR_PTR(rights);
	if (addr != (unsigned long)addr)
		return ERR_PTR(-EFAULT);

	umem = vd_umem_pin(addr, length, rights & VD_RIGHT_LOCAL_WRITE);
	if (IS_ERR(umem))
		return ERR_CAST(umem);

	mr = vd_mr_insert(tpt, pd, umem, addr, length, access, key);
	if (IS_ERR(mr))
		vd_umem_release(umem);
	else
		atomic64_add(vd_umem_pinned(umem), &tpt->pinned_pages);
	return mr;
}

static void vd_mr_release_now(struct kref *ref)
{
	vd_mr_free(container_of(ref, struct vd_mr, ref));
}

/*
 * The last put may come from the data path in atomic context, while
 * unpinning sleeps: hand the region to the table's work item.
 */
static void vd_mr_release_later(struct kref *ref)
{
	struct vd_mr *mr = container_of(ref, struct vd_mr, ref);
	struct vd_tpt *tpt = mr->tpt;

	/*
	 * A chained release, from the work item's own run, is taken by that
	 * run: queued again, the work item could still be waiting to run
	 * when vd_tpt_uninit()'s flush_work() returned, and then run on a
	 * freed table.
	 */
	if (llist_add(&mr->release_node, &tpt->release_list) &&
	    current_work() != &tpt->release_work)
		schedule_work(&tpt->release_work);
}

/**
 * vd_mr_put() - drop a reference
 * @mr: the region, or NULL (a no-op)
 *
 * If this drops the last reference, the release (unpinning and uncharging,
 * which sleep) runs later from a work item of the table.
 *
 * Context: Any context, including softirq.
 */
void vd_mr_put(struct vd_mr *mr)
{
	if (mr)
		kref_put(&mr->ref, vd_mr_release_later);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_put);

/**
 * vd_mr_use_begin() - open the bracket around a copy into or out of a region
 * @mr: the region, referenced by the caller
 *
 * Every copy into or out of a referenced region is bracketed by this and
 * vd_mr_use_end(); between the two the region's pages may be touched.
 * Deregistration and vd_tpt_invalidate_sync() wait until no bracket is
 * open: "access ends when the application ends it"
 * (Documentation/memory.rst).
 *
 * A Dekker pair with vd_mr_quiesce(): the copy counts itself in, then
 * looks at the region's state; the ending side changes the state, then
 * looks at the count. With a full barrier on both sides, either the copy
 * sees the new state and backs out, or the ending side sees the copy and
 * waits for it.
 *
 * Context: Any context; does not sleep.
 * Return: true if the bracket is open; false, with nothing to end, if the
 * region was invalidated or deregistered since the check.
 */
bool vd_mr_use_begin(struct vd_mr *mr)
{
	atomic_inc(&mr->users);
	/* @users written before, the state read after */
	smp_mb__after_atomic();
	if (likely(READ_ONCE(mr->state) == VD_MR_VALID &&
		   !READ_ONCE(mr->dead)))
		return true;
	vd_mr_use_end(mr);
	return false;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_use_begin);

/**
 * vd_mr_use_end() - close a bracket vd_mr_use_begin() opened
 * @mr: the region
 *
 * Context: Any context; does not sleep.
 */
void vd_mr_use_end(struct vd_mr *mr)
{
	/* atomic_dec_and_test() is a full barrier for wake_up_var() */
	if (atomic_dec_and_test(&mr->users))
		wake_up_var(&mr->users);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_use_end);

/**
 * vd_mr_tcp_hold() - TCP is about to hold pages of the region by reference
 * @mr: the region, inside a use bracket (vd_mr_use_begin())
 *
 * For a message sent by reference (zcopy.c): its pages stay in TCP's
 * queues until the peer acknowledged them, and TCP may send them again
 * until then. Takes a reference and counts the message; deregistration
 * waits until every such message let go (vd_mr_tcp_release()). Taken
 * inside the bracket, so deregistration, which waits for the brackets
 * first, sees every hold taken before the region died, and none after.
 *
 * Context: Any context; does not sleep.
 */
void vd_mr_tcp_hold(struct vd_mr *mr)
{
	atomic_inc(&mr->tpt->tcp_holds);
	vd_mr_get(mr);
	atomic_inc(&mr->tcp_held);
}

/**
 * vd_mr_tcp_release() - TCP let go of the pages of a message
 * @mr: a region vd_mr_tcp_hold() counted the message in
 *
 * The table outlives the hold: vd_tpt_uninit() waits for every one, so
 * a region TCP still held when its deregistration stopped waiting is
 * released through the table's work item, not after the table is gone.
 *
 * Context: Any context (the skb destructor's, softirq included); does not
 * sleep.
 */
void vd_mr_tcp_release(struct vd_mr *mr)
{
	struct vd_tpt *tpt = mr->tpt;

	/* atomic_dec_and_test() is a full barrier for wake_up_var() */
	if (atomic_dec_and_test(&mr->tcp_held))
		wake_up_var(&mr->tcp_held);
	vd_mr_put(mr);
	/* last: the table may go once this is zero (only the address hashes) */
	if (atomic_dec_and_test(&tpt->tcp_holds))
		wake_up_var(&tpt->tcp_holds);
}

/*
 * TCP lets go of a message once the peer acknowledged its bytes: a round
 * trip on a live connection. The bound is for a peer that stopped
 * acknowledging (TCP itself gives up only after minutes); then the pages
 * stay pinned by TCP's own references (Documentation/memory.rst).
 */
#define VD_MR_TCP_TIMEOUT	(30 * HZ)

static void vd_mr_wait_tcp(struct vd_mr *mr)
{
	if (!wait_var_event_timeout(&mr->tcp_held, !atomic_read(&mr->tcp_held),
				    VD_MR_TCP_TIMEOUT))
		pr_warn_ratelimited("viaduct: STag 0x%08x: TCP still holds %d messages of it by reference\n",
				    mr->stag, atomic_read(&mr->tcp_held));
}

/*
 * A bracket covers one batch of a copy (at most a transmit buffer, up to
 * its sendmsg(MSG_DONTWAIT), or one FPDU) and waits for nothing but the
 * socket lock, so this is short; the bound is for a bug.
 */
#define VD_MR_QUIESCE_TIMEOUT	(10 * HZ)

static void vd_mr_quiesce(struct vd_mr *mr)
{
	might_sleep();
	/* the state or @dead written before, @users read after */
	smp_mb();
	if (!wait_var_event_timeout(&mr->users, !atomic_read(&mr->users),
				    VD_MR_QUIESCE_TIMEOUT))
		WARN_ONCE(1, "viaduct: STag 0x%08x still in use\n", mr->stag);
}

/**
 * vd_mr_instance_end() - end an instance taken out of its slot
 * @inst: a Fast-Register's registration or a window's binding that its
 *        slot no longer holds; the table's reference is consumed
 *
 * No copy starts in it any more and none is in progress when this
 * returns; a window's binding lets go of its region (vd_mw_unlink()).
 *
 * Context: Process context; may sleep (the wait is bounded).
 */
void vd_mr_instance_end(struct vd_mr *inst)
{
	WRITE_ONCE(inst->dead, true);
	vd_mr_quiesce(inst);
	vd_mw_unlink(inst);
	vd_mr_put(inst);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_instance_end);

/**
 * vd_mr_deregister() - remove an STag from the table (DEREG_MR)
 * @mr: the region; the caller's registration reference is consumed
 *
 * Removes the STag from the table (no later lookup finds it), stops
 * counting as a user of its PD, waits until no copy is in progress in it
 * (none starts after) and until TCP holds none of its pages by reference
 * (zero copy; bounded, see vd_mr_wait_tcp()), and drops the reference.
 * For a fast-register MR the
 * registration its slot holds ends the same way. If nobody else holds the
 * region, it is released (unpinned, uncharged) before this returns.
 *
 * Context: Process context; may sleep (the wait is bounded).
 */
void vd_mr_deregister(struct vd_mr *mr)
{
	struct vd_tpt *tpt = mr->tpt;
	struct vd_mr *cur;

	might_sleep();
	/*
	 * The state is left alone: a lookup that found the region just
	 * before the erase then gets either a reference or, once the count
	 * is zero, VD_ACCESS_INVALID_STAG, never a third answer.
	 */
	/* a fast-register MR's slot may hold its current registration */
	cur = xa_erase(&tpt->mrs, vd_stag_index(mr->stag));
	atomic_dec(&tpt->nr_mrs);
	/*
	 * Stop counting as a user of the PD now, so that DESTROY_PD right
	 * after DEREG_MR succeeds even while a transfer still holds the
	 * region; the PD reference itself goes with the region.
	 */
	vd_pd_detach(mr->pd);
	/* no copy is in progress when DEREG_MR returns, none starts after */
	WRITE_ONCE(mr->dead, true);
	if (cur && cur != mr)
		WRITE_ONCE(cur->dead, true);
	vd_mr_quiesce(mr);
	if (cur && cur != mr) {
		/* kept until TCP let go of it too */
		vd_mr_get(cur);
		vd_mr_instance_end(cur);
		vd_mr_wait_tcp(cur);
		vd_mr_put(cur);
	}
	/* ... and TCP holds none of its pages by reference (zero copy) */
	vd_mr_wait_tcp(mr);
	kref_put(&mr->ref, vd_mr_release_now);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_deregister);

/**
 * vd_mr_modify() - change the PD and rights of a region in place (MODIFY_MR)
 * @mr: a VD_STAG_MR region, registered; the caller holds a reference and
 *      serialises the changes of one region (the handle table's lock)
 * @pd: the PD to move it to, referenced by the caller; or @mr's own
 * @access: the VIADUCT_ACCESS_* it grants from now on
 *
 * The STag, address and pages stay. The PD and the rights change in one
 * step against vd_tpt_check(): a check sees the old pair or the new one.
 * A copy that passed its check before goes on to its vd_mr_use_end(); if
 * the change took a right away or moved the region, the caller waits for
 * such copies with vd_mr_wait_uses() (outside its lock) before it reports
 * the change done.
 *
 * Context: Process context.
 * Return: 1 if the change narrowed what the region allows (wait), 0 if
 * not; or, with nothing changed, -EINVAL (a region of another type, bad
 * access bits, REMOTE_WRITE without LOCAL_WRITE), -EACCES (a write right
 * on pages pinned for reading only), -ENOENT (@pd is being destroyed).
 */
int vd_mr_modify(struct vd_mr *mr, struct vd_pd *pd, u32 access)
{
	int rights = vd_mr_access_rights(access);
	struct vd_pd *old = mr->pd;
	unsigned long flags;
	bool narrower;

	if (mr->type != VD_STAG_MR)
		return -EINVAL;
	if (rights < 0)
		return rights;
	if ((rights & (VD_RIGHT_LOCAL_WRITE | VD_RIGHT_REMOTE_WRITE)) &&
	    mr->umem && !mr->umem->writable)
		return -EACCES;
	if (pd != old) {
		if (vd_pd_attach(pd))
			return -ENOENT;
		vd_pd_get(pd);
	}

	narrower = pd != old || (mr->rights & ~rights);
	/* a reader in any context spins on an odd count: keep it short */
	local_irq_save(flags);
	write_seqcount_begin(&mr->attr_seq);
	WRITE_ONCE(mr->pd, pd);
	WRITE_ONCE(mr->access, access);
	WRITE_ONCE(mr->rights, rights);
	write_seqcount_end(&mr->attr_seq);
	local_irq_restore(flags);

	/*
	 * A copy checked against the old PD is in the region's pages, which
	 * stay; the old PD may go as soon as nothing else uses it.
	 */
	if (pd != old) {
		vd_pd_detach(old);
		vd_pd_put(old);
	}
	return narrower;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_modify);

/**
 * vd_mr_wait_uses() - wait for the copies open at a change to end
 * @mr: the region, referenced by the caller
 *
 * After vd_mr_modify() narrowed the region: waits (bounded, as
 * deregistration) until no vd_mr_use_begin() bracket is open, so that
 * nothing only the old rights or PD allowed is still in progress. New
 * brackets may open meanwhile under the new rights, so this is not a
 * quiesce and never warns.
 *
 * Context: Process context; may sleep.
 */
void vd_mr_wait_uses(struct vd_mr *mr)
{
	might_sleep();
	/* the new pair written before, @users read after */
	smp_mb();
	wait_var_event_timeout(&mr->users, !atomic_read(&mr->users),
			       VD_MR_QUIESCE_TIMEOUT);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mr_wait_uses);

/**
 * vd_tpt_invalidate_sync() - invalidate an STag and wait for its copies
 * @tpt: the table
 * @stag: the STag to invalidate
 * @pd: as for vd_tpt_invalidate()
 * @qpn: as for vd_tpt_invalidate()
 * @remote: as for vd_tpt_invalidate()
 *
 * vd_tpt_invalidate(), and when it returns VD_ACCESS_OK no copy into or
 * out of the region (the data path's) is in progress any more, so none
 * touches it after. An invalidated window is then unbound from its region
 * (it no longer holds up the region's DEREG_MR).
 *
 * Context: Process context; it may wait, bounded.
 * Return: as vd_tpt_invalidate().
 */
enum vd_access_status vd_tpt_invalidate_sync(struct vd_tpt *tpt, u32 stag,
					     const struct vd_pd *pd, u32 qpn,
					     bool remote)
{
	enum vd_access_status status;
	struct vd_mr *mr = NULL;

	rcu_read_lock();
	status = vd_tpt_invalidate(tpt, stag, pd, qpn, remote);
	if (status == VD_ACCESS_OK) {
		mr = vd_tpt_lookup(tpt, stag);
		if (mr && !kref_get_unless_zero(&mr->ref))
			mr = NULL;
	}
	rcu_read_unlock();
	if (mr) {
		vd_mr_quiesce(mr);
		/*
		 * An invalidated window is no longer bound to its region
		 * (verbs 7.10.4), which DEREG_MR may now end: no copy through
		 * the window is in progress any more.
		 */
		vd_mw_unlink(mr);
		vd_mr_put(mr);
	}
	return status;
}
EXPORT_SYMBOL_IF_KUNIT(vd_tpt_invalidate_sync);
