/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The doorbell polling worker: how the kernel learns, without a system
 * call, that the producer indices of a POLLED QP moved. The DOORBELL
 * command itself is vd_qp_doorbell() (qp.c). Documentation/qp.rst
 * describes both modes and the NEED_WAKEUP protocol; the functions are
 * documented (kernel-doc) at their definitions in doorbell.c.
 *
 * One worker per device, embedded in struct vd_device: a device's QPs are
 * polled by one thread that dies with the device, one busy device does
 * not delay another's, and the idle cost is one sleeping thread per device.
 * Each pass visits every QP once, in turn, taking at most
 * VD_DB_POLL_BUDGET WQEs per queue, so no QP can make a pass long; and
 * only WRs to execute keep the thread awake: a user who floods a QP in
 * Error gets its WRs flushed, not the thread spinning for it.
 *
 * Locking: @lock (a mutex) serialises changes to the registry with the
 * worker's use of each entry: the worker holds it while it polls a QP and
 * drops it between QPs when it should reschedule. @kick is the wakeup
 * condition; the wait queue provides the ordering between setting it and
 * the worker's check.
 */
#ifndef _VD_DOORBELL_H
#define _VD_DOORBELL_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>

struct task_struct;
struct viaduct_doorbell;

/*
 * What a POLLED QP registers, embedded in it: @db is the page whose flags
 * word the worker writes, @poll() takes at most @budget of what the user
 * posted to each queue and says whether that was work (WRs to execute; WRs
 * flushed into a QP in Error are not), @id (the QPN) is unique per worker.
 */
struct vd_db_client {
	struct viaduct_doorbell *db;
	bool (*poll)(struct vd_db_client *c, unsigned int budget);
	u32 id;
};

/*
 * WQEs the worker takes from one queue of one QP per pass: every QP of the
 * device gets its turn in each pass, whatever another one posts.
 */
#define VD_DB_POLL_BUDGET	64

struct vd_doorbell_worker {
	struct mutex lock;		/* registry vs. poll passes */
	struct xarray clients;		/* id -> struct vd_db_client */
	struct task_struct *task;	/* NULL once stopped */
	wait_queue_head_t wait;
	atomic_t kick;
	/* polling without work before sleeping; 0: the module's poll_idle_us */
	unsigned int idle_us;
};

int vd_doorbell_worker_start(struct vd_doorbell_worker *w, const char *name);
void vd_doorbell_worker_stop(struct vd_doorbell_worker *w);
int vd_doorbell_register(struct vd_doorbell_worker *w,
			 struct vd_db_client *c);
void vd_doorbell_unregister(struct vd_doorbell_worker *w,
			    struct vd_db_client *c);
void vd_doorbell_kick(struct vd_doorbell_worker *w);

#endif /* _VD_DOORBELL_H */
