// SPDX-License-Identifier: GPL-2.0
/*
 * The per-device doorbell polling worker with its NEED_WAKEUP protocol.
 * doorbell.h has the locking, Documentation/qp.rst the protocol and why it
 * loses no wakeup; each function has kernel-doc at its definition. The
 * worker knows its clients only by the doorbell page and the poll function
 * they registered (qp.c's QPs).
 */
#include <linux/compiler.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/processor.h>
#include <linux/sched.h>
#include <kunit/visibility.h>
#include <viaduct/viaduct-abi.h>

#include "doorbell.h"
#include "stats.h"

static unsigned int poll_idle_us = 2000;
module_param(poll_idle_us, uint, 0644);
MODULE_PARM_DESC(poll_idle_us,
		 "Doorbell worker: microseconds of polling without work before it sleeps");

/**
 * vd_doorbell_kick() - wake the worker
 * @w: the worker
 *
 * Wakes the worker, or keeps it from falling asleep.
 *
 * Context: Any context.
 */
void vd_doorbell_kick(struct vd_doorbell_worker *w)
{
	/* The wait queue's lock orders this store before the waiter's check. */
	atomic_set(&w->kick, 1);
	wake_up(&w->wait);
}
EXPORT_SYMBOL_IF_KUNIT(vd_doorbell_kick);

/* Only the kernel writes the flags word; whatever the user put there goes. */
static void set_need_wakeup(struct vd_db_client *c, bool on)
{
	WRITE_ONCE(c->db->flags, on ? VIADUCT_DB_F_NEED_WAKEUP : 0);
}

static void worker_flag_all(struct vd_doorbell_worker *w, bool on)
{
	struct vd_db_client *c;
	unsigned long idx;

	mutex_lock(&w->lock);
	xa_for_each(&w->clients, idx, c)
		set_need_wakeup(c, on);
	mutex_unlock(&w->lock);
}

/*
 * One look at every registered doorbell page, in turn, each QP taking at
 * most VD_DB_POLL_BUDGET WQEs per queue. Returns whether any WQE was taken
 * to be executed: a producer index that moved but whose WQEs cannot be
 * taken (no room, Closing, a stopped queue) is not work, or the worker
 * would spin on it; nor are WQEs flushed into a QP in Error, or one user
 * posting to a dead QP would keep the thread spinning (their owner sees
 * NEED_WAKEUP once the worker sleeps, and rings). Whoever makes WQEs
 * takeable again kicks the worker. @budget: the most WQEs per queue and QP.
 */
static bool worker_pass(struct vd_doorbell_worker *w, unsigned int budget)
{
	struct vd_db_client *c;
	unsigned long idx;
	bool work = false;

	mutex_lock(&w->lock);
	xa_for_each(&w->clients, idx, c) {
		vd_stat_inc(worker_polls);
		if (c->poll(c, budget))
			work = true;
		if (need_resched()) {
			/* xa_for_each() resumes after @idx: entries may go. */
			mutex_unlock(&w->lock);
			cond_resched();
			mutex_lock(&w->lock);
		}
	}
	mutex_unlock(&w->lock);
	return work;
}

static int worker_fn(void *data)
{
	struct vd_doorbell_worker *w = data;
	u64 last_work = ktime_get_ns();

	while (!kthread_should_stop()) {
		u64 idle_ns;

		if (atomic_read(&w->kick) && atomic_xchg(&w->kick, 0)) {
			/* Awake (again): users need not ring any more. */
			worker_flag_all(w, false);
			last_work = ktime_get_ns();
		}

		if (worker_pass(w, VD_DB_POLL_BUDGET)) {
			last_work = ktime_get_ns();
			cond_resched();
			continue;
		}

		idle_ns = (u64)(READ_ONCE(w->idle_us) ?:
				READ_ONCE(poll_idle_us)) * NSEC_PER_USEC;
		if (ktime_get_ns() - last_work < idle_ns) {
			cpu_relax();
			cond_resched();
			continue;
		}

		/* Going to sleep: announce it in every page, then look again. */
		worker_flag_all(w, true);
		/*
		 * Orders the flag stores before the producer loads of the next
		 * pass. Pairs with the user's full fence between its producer
		 * store and its flags load: either this pass sees the new
		 * producer index, or the user sees NEED_WAKEUP and rings
		 * DOORBELL, which kicks us.
		 */
		smp_mb();
		/*
		 * This look takes everything: a WQE posted before the flags
		 * were set and left in the ring by a budget would wait for a
		 * DOORBELL its poster has no reason to ring (WQEs flushed
		 * into a QP in Error are not work, so nothing else comes back
		 * for them).
		 */
		if (worker_pass(w, UINT_MAX)) {
			worker_flag_all(w, false);
			last_work = ktime_get_ns();
			continue;
		}

		wait_event_idle(w->wait,
				atomic_read(&w->kick) || kthread_should_stop());
		vd_stat_inc(worker_wakeups);
	}
	return 0;
}

/**
 * vd_doorbell_worker_start() - initialise a device's worker and start it
 * @w: the worker, embedded in the device
 * @name: the device's name; the kernel thread is "vd_db/<name>"
 *
 * Context: Process context.
 * Return: 0, or the error of kthread_run() (-ENOMEM and the like).
 */
int vd_doorbell_worker_start(struct vd_doorbell_worker *w, const char *name)
{
	struct task_struct *task;

	mutex_init(&w->lock);
	xa_init(&w->clients);
	init_waitqueue_head(&w->wait);
	atomic_set(&w->kick, 0);
	w->idle_us = 0;
	w->task = NULL;

	task = kthread_run(worker_fn, w, "vd_db/%s", name);
	if (IS_ERR(task))
		return PTR_ERR(task);
	mutex_lock(&w->lock);
	w->task = task;
	mutex_unlock(&w->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_doorbell_worker_start);

/**
 * vd_doorbell_worker_stop() - stop the worker of a device being removed
 * @w: the worker
 *
 * Stops the thread (kthread_stop) and waits for it. QPs still registered
 * stay registered (vd_doorbell_unregister() still works) with
 * VIADUCT_DB_F_NEED_WAKEUP set, so that their users stop relying on the
 * worker and ring DOORBELL, which answers ENODEV on a removed device. New
 * registrations fail with -ENODEV. The structure must stay allocated until
 * the last QP is unregistered; it needs no other teardown (the registry
 * frees its memory as it empties). A second stop does nothing.
 *
 * Context: Process context.
 */
void vd_doorbell_worker_stop(struct vd_doorbell_worker *w)
{
	struct task_struct *task;

	mutex_lock(&w->lock);
	task = w->task;
	w->task = NULL;
	mutex_unlock(&w->lock);
	if (!task)
		return;
	kthread_stop(task);

	/* Nobody polls any more: whoever is left must ring DOORBELL. */
	worker_flag_all(w, true);
}
EXPORT_SYMBOL_IF_KUNIT(vd_doorbell_worker_stop);

/**
 * vd_doorbell_register() - have the worker poll a QP
 * @w: the worker of the QP's device
 * @c: the client the QP embeds (struct vd_db_client)
 *
 * Called by vd_qp_create() for POLLED QPs, last, since from then on the
 * worker may consume from the rings. NEED_WAKEUP is set until the worker
 * has noticed the page.
 *
 * Context: Process context (takes a mutex).
 * Return: 0; -ENODEV once the worker was stopped; -EBUSY if @c's id is
 * registered already; -ENOMEM.
 */
int vd_doorbell_register(struct vd_doorbell_worker *w,
			 struct vd_db_client *c)
{
	int err = -ENODEV;

	mutex_lock(&w->lock);
	if (w->task) {
		/*
		 * Ring until the worker has noticed this page: it clears the
		 * flag when the kick below reaches it.
		 */
		set_need_wakeup(c, true);
		err = xa_insert(&w->clients, c->id, c, GFP_KERNEL);
	}
	mutex_unlock(&w->lock);
	if (!err)
		vd_doorbell_kick(w);
	return err;
}

/**
 * vd_doorbell_unregister() - stop polling a QP
 * @w: the worker @c was registered with
 * @c: the client
 *
 * Called by vd_qp_destroy(), first. When it returns, the worker no longer
 * uses @c, which stays allocated until then. Works after the worker was
 * stopped, and for a client that is not registered.
 *
 * Context: Process context (takes a mutex).
 */
void vd_doorbell_unregister(struct vd_doorbell_worker *w,
			    struct vd_db_client *c)
{
	struct vd_db_client *old;

	/* The worker polls a client only while holding @lock. */
	mutex_lock(&w->lock);
	old = xa_erase(&w->clients, c->id);
	mutex_unlock(&w->lock);
	WARN_ON_ONCE(old && old != c);
}
