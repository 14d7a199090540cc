/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Event queues that userspace read()s: the per-context asynchronous event
 * queue and the completion channels.
 *
 * Asynchronous event queue
 * ------------------------
 *   vd_async_queue_create()
 *       An empty queue with one reference, or ERR_PTR(-ENOMEM). Process
 *       context.
 *   vd_async_queue_get(aq), vd_async_queue_put(aq)
 *       Memory lifetime; the last put frees the queue and any unread
 *       events. put(NULL) is a no-op. The last put may free vmalloc
 *       memory, which sleeps unless in_interrupt() (softirq, hardirq, or
 *       bottom halves disabled, as under spin_lock_bh()): never drop a
 *       reference with interrupts disabled or under a plain spinlock.
 *   vd_async_queue_push(aq, type, handle, user_data, detail)
 *       Queues one struct viaduct_async_event and wakes readers. Any
 *       context (takes a spinlock with interrupts disabled, never sleeps,
 *       never allocates). The queue is a preallocated ring of
 *       VD_ASYNC_QUEUE_LEN records. When it is full, an event equal to
 *       one already queued is merged into it (the reader could not tell
 *       the two apart); any other event is dropped, counted
 *       (vd_async_queue_dropped()) and reported once per queue in the
 *       kernel log. Returns 0 (queued or merged) or -ENOSPC (dropped).
 *   vd_async_queue_read(aq, buf, len, nonblock)
 *       The ->read() of the context file: copies whole records only
 *       (-EINVAL if @len is smaller than one), at most as many as fit and
 *       as are queued; blocks (interruptibly: -ERESTARTSYS) while the
 *       queue is empty unless @nonblock (-EAGAIN). A fault copying to the
 *       user returns what was copied before it, or -EFAULT, and loses no
 *       event. Process context.
 *   vd_async_queue_poll(aq, file, wait)
 *       The ->poll() of the context file: EPOLLIN | EPOLLRDNORM while an
 *       event is queued.
 *   vd_async_queue_pop(aq, &ev)
 *       Takes one event without copying to user space: 0 or -EAGAIN.
 *       For in-kernel users and tests. Any context.
 *
 * Completion channels
 * -------------------
 *   vd_comp_channel_create()
 *       A channel with one reference, or ERR_PTR(-ENOMEM).
 *   vd_comp_channel_create_file()
 *       A channel behind a new anonymous-inode file (O_RDWR), or an
 *       ERR_PTR. The caller installs it as a descriptor once nothing can
 *       fail any more (vd_uobj_give_fd()). The file owns the channel's
 *       only reference until its last fput(). The file read()s struct
 *       viaduct_cq_event records with the rules of vd_async_queue_read(),
 *       and polls readable while one is queued.
 *   vd_comp_channel_fdget(fd)
 *       The channel behind a descriptor of the calling process, with a
 *       new reference: ERR_PTR(-EBADF) if @fd is not open, -EINVAL if it
 *       is not a completion channel.
 *   vd_comp_channel_get(ch), vd_comp_channel_put(ch)
 *       Memory lifetime: a CQ holds a reference on its channel, so the
 *       channel outlives its descriptor while CQs still report to it (the
 *       events then go unread). Same rules as vd_async_queue_put().
 *   vd_comp_channel_push(ch, cq_handle, user_data)
 *       Queues one struct viaduct_cq_event and wakes readers. Any
 *       context, never sleeps. A CQ queues at most one event per arm;
 *       the queue holds VD_COMP_CHANNEL_LEN records and, when full,
 *       merges and drops like vd_async_queue_push(): only an event for a
 *       CQ (handle and user data) without one already queued can be lost,
 *       and then it is counted (vd_comp_channel_dropped()) and logged.
 *   vd_comp_channel_pop(ch, &ev)
 *       Like vd_async_queue_pop().
 *
 * Locking: each queue has one spinlock taken with interrupts disabled
 * (producers may run in any context) that protects its ring indices, and
 * one mutex that serialises readers so that a reader can copy records to
 * user space without the spinlock and consume them only once copied. Both
 * spinlocks are leaves: the CQ pushes under its own lock.
 */
#ifndef _VD_EVENT_H
#define _VD_EVENT_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <viaduct/viaduct-abi.h>

#define VD_ASYNC_QUEUE_LEN	1024U	/* power of two */
#define VD_COMP_CHANNEL_LEN	1024U	/* power of two */

/*
 * A bounded ring of fixed-size records, shared by both kinds of queue.
 * Indices are free-running; only producers advance @tail and only the
 * reader holding @read_lock advances @head, both under @lock.
 */
struct vd_event_ring {
	spinlock_t lock;		/* @head, @tail, @dropped */
	struct mutex read_lock;		/* one reader at a time */
	wait_queue_head_t wait;
	u32 head;
	u32 tail;
	u32 len;		/* records, power of two */
	u32 rec_size;
	u64 dropped;
	bool warned;
	void *recs;
};

struct vd_async_queue {
	struct kref ref;
	struct vd_event_ring ring;
};

struct vd_comp_channel {
	struct kref ref;
	struct vd_event_ring ring;
};

struct vd_async_queue *vd_async_queue_create(void);
void vd_async_queue_put(struct vd_async_queue *aq);
int vd_async_queue_push(struct vd_async_queue *aq, u32 type, u32 handle,
			u64 user_data, u32 detail);
ssize_t vd_async_queue_read(struct vd_async_queue *aq, char __user *buf,
			    size_t len, bool nonblock);
__poll_t vd_async_queue_poll(struct vd_async_queue *aq, struct file *file,
			     poll_table *wait);
int vd_async_queue_pop(struct vd_async_queue *aq,
		       struct viaduct_async_event *ev);
u64 vd_async_queue_dropped(struct vd_async_queue *aq);

static inline struct vd_async_queue *
vd_async_queue_get(struct vd_async_queue *aq)
{
	kref_get(&aq->ref);
	return aq;
}

struct vd_comp_channel *vd_comp_channel_create(void);
struct file *vd_comp_channel_create_file(void);
struct vd_comp_channel *vd_comp_channel_fdget(int fd);
void vd_comp_channel_put(struct vd_comp_channel *ch);
int vd_comp_channel_push(struct vd_comp_channel *ch, u32 cq_handle,
			 u64 user_data);
int vd_comp_channel_pop(struct vd_comp_channel *ch,
			struct viaduct_cq_event *ev);
u64 vd_comp_channel_dropped(struct vd_comp_channel *ch);

static inline struct vd_comp_channel *
vd_comp_channel_get(struct vd_comp_channel *ch)
{
	kref_get(&ch->ref);
	return ch;
}

#endif /* _VD_EVENT_H */
