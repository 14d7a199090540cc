/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Event queues that userspace read()s: the per-context asynchronous event
 * queue (struct viaduct_async_event, read from the context file) and the
 * completion channels (struct viaduct_cq_event, read from a channel file).
 * Both are a bounded ring of fixed-size records (struct vd_event_ring):
 * producers in any context append, one reader at a time drains through
 * read() and poll(). When a ring is full an event equal to one already
 * queued merges into it and any other is dropped, counted and logged once.
 * Documentation/rings.rst has the arming and the bounds; the functions are
 * documented at their definitions in event.c.
 *
 * Locking: each queue has one spinlock taken with interrupts disabled
 * (producers may run in any context) that protects its ring indices, and
 * one mutex that serialises readers so that a reader can copy records to
 * user space without the spinlock and consume them only once copied. Both
 * spinlocks are leaves: the CQ pushes under its own lock.
 *
 * Lifetime: a kref each. The last put may free vmalloc memory, which sleeps
 * unless in_interrupt() (softirq, hardirq, or bottom halves disabled, as
 * under spin_lock_bh()): never drop a reference with interrupts disabled or
 * under a plain spinlock.
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
void vd_async_queue_forget(struct vd_async_queue *aq, u32 handle);
ssize_t vd_async_queue_read(struct vd_async_queue *aq, char __user *buf,
			    size_t len, bool nonblock);
__poll_t vd_async_queue_poll(struct vd_async_queue *aq, struct file *file,
			     poll_table *wait);
int vd_async_queue_pop(struct vd_async_queue *aq,
		       struct viaduct_async_event *ev);
u64 vd_async_queue_dropped(struct vd_async_queue *aq);

/**
 * vd_async_queue_get() - take a reference
 * @aq: the queue, on which the caller holds a reference
 *
 * Context: Any context.
 * Return: @aq.
 */
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

/**
 * vd_comp_channel_get() - take a reference
 * @ch: the channel, on which the caller holds a reference
 *
 * Context: Any context.
 * Return: @ch.
 */
static inline struct vd_comp_channel *
vd_comp_channel_get(struct vd_comp_channel *ch)
{
	kref_get(&ch->ref);
	return ch;
}

#endif /* _VD_EVENT_H */
