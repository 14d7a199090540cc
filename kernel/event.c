// SPDX-License-Identifier: GPL-2.0
/*
 * The asynchronous event queue of a context and the completion channels:
 * two users of one bounded record ring that producers fill from any
 * context and a reader drains through read()/poll(). See event.h.
 */
#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "event.h"

/* Records moved to user space per round trip through the spinlock. */
#define VD_EVENT_BATCH_BYTES	192

static_assert(sizeof(struct viaduct_async_event) <= VD_EVENT_BATCH_BYTES);
static_assert(sizeof(struct viaduct_cq_event) <= VD_EVENT_BATCH_BYTES);
static_assert((VD_ASYNC_QUEUE_LEN & (VD_ASYNC_QUEUE_LEN - 1)) == 0);
static_assert((VD_COMP_CHANNEL_LEN & (VD_COMP_CHANNEL_LEN - 1)) == 0);

static int vd_event_ring_init(struct vd_event_ring *r, u32 len, u32 rec_size)
{
	r->recs = kvcalloc(len, rec_size, GFP_KERNEL_ACCOUNT);
	if (!r->recs)
		return -ENOMEM;
	spin_lock_init(&r->lock);
	mutex_init(&r->read_lock);
	init_waitqueue_head(&r->wait);
	r->len = len;
	r->rec_size = rec_size;
	return 0;
}

static void vd_event_ring_uninit(struct vd_event_ring *r)
{
	mutex_destroy(&r->read_lock);
	kvfree(r->recs);
}

static void *vd_event_rec(struct vd_event_ring *r, u32 idx)
{
	return r->recs + (size_t)(idx & (r->len - 1)) * r->rec_size;
}

static bool vd_event_ring_empty(struct vd_event_ring *r)
{
	return READ_ONCE(r->head) == READ_ONCE(r->tail);
}

/*
 * Only called on a full ring: an equal record already queued says all that
 * @rec would say (records carry no sequence number), so @rec merges into
 * it. Bounded by the ring length, and only paid when the reader has
 * fallen a whole ring behind.
 */
static bool vd_event_ring_has(struct vd_event_ring *r, const void *rec)
{
	u32 i;

	lockdep_assert_held(&r->lock);
	for (i = r->head; i != r->tail; i++)
		if (!memcmp(vd_event_rec(r, i), rec, r->rec_size))
			return true;
	return false;
}

static int vd_event_ring_push(struct vd_event_ring *r, const void *rec,
			      const char *what)
{
	unsigned long flags;
	bool warn = false;
	int ret = 0;

	spin_lock_irqsave(&r->lock, flags);
	if (likely(r->tail - r->head < r->len)) {
		memcpy(vd_event_rec(r, r->tail), rec, r->rec_size);
		/* Pairs with the lockless emptiness checks of readers. */
		WRITE_ONCE(r->tail, r->tail + 1);
	} else if (!vd_event_ring_has(r, rec)) {
		r->dropped++;
		warn = !r->warned;
		r->warned = true;
		ret = -ENOSPC;
	}
	spin_unlock_irqrestore(&r->lock, flags);

	if (unlikely(warn))
		pr_warn("%s full: events are being dropped\n", what);
	if (!ret)
		wake_up_interruptible_poll(&r->wait, EPOLLIN | EPOLLRDNORM);
	return ret;
}

static int vd_event_ring_pop(struct vd_event_ring *r, void *rec)
{
	unsigned long flags;
	int ret = -EAGAIN;

	spin_lock_irqsave(&r->lock, flags);
	if (r->head != r->tail) {
		memcpy(rec, vd_event_rec(r, r->head), r->rec_size);
		WRITE_ONCE(r->head, r->head + 1);
		ret = 0;
	}
	spin_unlock_irqrestore(&r->lock, flags);
	return ret;
}

/* Copies up to @max records from the head into @dst without consuming. */
static u32 vd_event_ring_peek(struct vd_event_ring *r, void *dst, u32 max)
{
	unsigned long flags;
	u32 n, i;

	spin_lock_irqsave(&r->lock, flags);
	n = min(r->tail - r->head, max);
	for (i = 0; i < n; i++)
		memcpy(dst + i * r->rec_size, vd_event_rec(r, r->head + i),
		       r->rec_size);
	spin_unlock_irqrestore(&r->lock, flags);
	return n;
}

static void vd_event_ring_consume(struct vd_event_ring *r, u32 n)
{
	unsigned long flags;

	spin_lock_irqsave(&r->lock, flags);
	WRITE_ONCE(r->head, r->head + n);
	spin_unlock_irqrestore(&r->lock, flags);
}

/*
 * Removes the queued records @match picks, keeping the others in their
 * order. Under @read_lock: a reader between its peek and its consume counts
 * on the records it copied staying at the head. A fatal signal while
 * waiting for a reader leaves the records: the process is going.
 */
static void vd_event_ring_forget(struct vd_event_ring *r,
				 bool (*match)(const void *rec, u32 arg),
				 u32 arg)
{
	unsigned long flags;
	u32 i, kept;

	if (mutex_lock_killable(&r->read_lock))
		return;
	spin_lock_irqsave(&r->lock, flags);
	kept = r->head;
	for (i = r->head; i != r->tail; i++) {
		void *rec = vd_event_rec(r, i);

		if (match(rec, arg))
			continue;
		if (kept != i)
			memcpy(vd_event_rec(r, kept), rec, r->rec_size);
		kept++;
	}
	WRITE_ONCE(r->tail, kept);
	spin_unlock_irqrestore(&r->lock, flags);
	mutex_unlock(&r->read_lock);
}

/*
 * Readers are serialised by @read_lock, so the records a reader peeked are
 * still at the head when it consumes them: producers only append. A record
 * is consumed only once it reached user space, so a fault loses nothing.
 */
static ssize_t vd_event_ring_read(struct vd_event_ring *r, char __user *buf,
				  size_t len, bool nonblock)
{
	u8 batch[VD_EVENT_BATCH_BYTES];
	u32 per_batch = sizeof(batch) / r->rec_size;
	size_t done = 0;
	int ret;

	if (len < r->rec_size)
		return -EINVAL;

	for (;;) {
		if (mutex_lock_interruptible(&r->read_lock))
			return -ERESTARTSYS;
		if (!vd_event_ring_empty(r))
			break;
		mutex_unlock(&r->read_lock);
		if (nonblock)
			return -EAGAIN;
		ret = wait_event_interruptible(r->wait,
					       !vd_event_ring_empty(r));
		if (ret)
			return ret;
	}

	ret = 0;
	while (len - done >= r->rec_size) {
		u32 want = min_t(size_t, per_batch, (len - done) / r->rec_size);
		u32 n = vd_event_ring_peek(r, batch, want);

		if (!n)
			break;
		if (copy_to_user(buf + done, batch, n * r->rec_size)) {
			ret = -EFAULT;
			break;
		}
		vd_event_ring_consume(r, n);
		done += n * r->rec_size;
	}
	mutex_unlock(&r->read_lock);
	return done ? done : ret;
}

static __poll_t vd_event_ring_poll(struct vd_event_ring *r, struct file *file,
				   poll_table *wait)
{
	poll_wait(file, &r->wait, wait);
	return vd_event_ring_empty(r) ? 0 : EPOLLIN | EPOLLRDNORM;
}

/* Asynchronous event queue */

/**
 * vd_async_queue_create() - a new, empty asynchronous event queue
 *
 * A preallocated ring of VD_ASYNC_QUEUE_LEN records.
 *
 * Context: Process context.
 * Return: the queue with one reference, or ERR_PTR(-ENOMEM).
 */
struct vd_async_queue *vd_async_queue_create(void)
{
	struct vd_async_queue *aq;

	aq = kzalloc(sizeof(*aq), GFP_KERNEL_ACCOUNT);
	if (!aq)
		return ERR_PTR(-ENOMEM);
	if (vd_event_ring_init(&aq->ring, VD_ASYNC_QUEUE_LEN,
			       sizeof(struct viaduct_async_event))) {
		kfree(aq);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&aq->ref);
	return aq;
}
EXPORT_SYMBOL_IF_KUNIT(vd_async_queue_create);

static void vd_async_queue_free(struct kref *ref)
{
	struct vd_async_queue *aq = container_of(ref, struct vd_async_queue,
						 ref);

	vd_event_ring_uninit(&aq->ring);
	kfree(aq);
}

/**
 * vd_async_queue_put() - drop a reference
 * @aq: the queue, or NULL (a no-op)
 *
 * The last put frees the queue and any unread events.
 *
 * Context: May free vmalloc memory: not with interrupts disabled nor under
 * a plain spinlock (see event.h).
 */
void vd_async_queue_put(struct vd_async_queue *aq)
{
	if (aq)
		kref_put(&aq->ref, vd_async_queue_free);
}
EXPORT_SYMBOL_IF_KUNIT(vd_async_queue_put);

/**
 * vd_async_queue_push() - queue one asynchronous event and wake readers
 * @aq: the queue
 * @type: VIADUCT_EVENT_*
 * @handle: the handle of the object the event is about
 * @user_data: that object's user data
 * @detail: the event's detail word
 *
 * When the queue is full, an event equal to one already queued is merged
 * into it (the reader could not tell the two apart); any other event is
 * dropped, counted (vd_async_queue_dropped()) and reported once per queue
 * in the kernel log.
 *
 * Context: Any context; takes a spinlock with interrupts disabled, never
 * sleeps, never allocates.
 * Return: 0 (queued or merged) or -ENOSPC (dropped).
 */
int vd_async_queue_push(struct vd_async_queue *aq, u32 type, u32 handle,
			u64 user_data, u32 detail)
{
	struct viaduct_async_event ev = {
		.user_data = user_data,
		.type = type,
		.handle = handle,
		.detail = detail,
	};

	return vd_event_ring_push(&aq->ring, &ev, "async event queue");
}
EXPORT_SYMBOL_IF_KUNIT(vd_async_queue_push);

static bool async_event_of(const void *rec, u32 handle)
{
	return ((const struct viaduct_async_event *)rec)->handle == handle;
}

/**
 * vd_async_queue_forget() - drop the unread events of a destroyed object
 * @aq: the queue
 * @handle: the object's handle (not 0, the device's)
 *
 * Handles are reused: an event still queued when its object is destroyed
 * would be read as one of the next object that gets the handle. The caller
 * makes sure that the object raises no more events and that @handle names
 * nothing else yet.
 *
 * Context: Process context; sleeps while a reader copies records out.
 */
void vd_async_queue_forget(struct vd_async_queue *aq, u32 handle)
{
	vd_event_ring_forget(&aq->ring, async_event_of, handle);
}
EXPORT_SYMBOL_IF_KUNIT(vd_async_queue_forget);

/**
 * vd_async_queue_read() - the read() of the context file
 * @aq: the queue
 * @buf: the user's buffer
 * @len: its size in bytes
 * @nonblock: the file is O_NONBLOCK
 *
 * Copies whole records only, at most as many as fit and as are queued, and
 * consumes a record only once it reached user space: a fault loses no
 * event.
 *
 * Context: Process context; sleeps.
 * Return: the bytes copied; -EINVAL if @len is smaller than one record;
 * -EAGAIN if the queue is empty and @nonblock; -ERESTARTSYS if a signal
 * came while waiting; -EFAULT if nothing could be copied.
 */
ssize_t vd_async_queue_read(struct vd_async_queue *aq, char __user *buf,
			    size_t len, bool nonblock)
{
	return vd_event_ring_read(&aq->ring, buf, len, nonblock);
}
EXPORT_SYMBOL_IF_KUNIT(vd_async_queue_read);

/**
 * vd_async_queue_poll() - the poll() of the context file
 * @aq: the queue
 * @file: the context file
 * @wait: the poll table
 *
 * Return: EPOLLIN | EPOLLRDNORM while an event is queued, else 0.
 */
__poll_t vd_async_queue_poll(struct vd_async_queue *aq, struct file *file,
			     poll_table *wait)
{
	return vd_event_ring_poll(&aq->ring, file, wait);
}
EXPORT_SYMBOL_IF_KUNIT(vd_async_queue_poll);

/**
 * vd_async_queue_pop() - take one event without copying to user space
 * @aq: the queue
 * @ev: filled with the event at the head
 *
 * For in-kernel users and tests.
 *
 * Context: Any context.
 * Return: 0, or -EAGAIN if the queue is empty.
 */
int vd_async_queue_pop(struct vd_async_queue *aq,
		       struct viaduct_async_event *ev)
{
	return vd_event_ring_pop(&aq->ring, ev);
}
EXPORT_SYMBOL_IF_KUNIT(vd_async_queue_pop);

/**
 * vd_async_queue_dropped() - how many events the queue dropped
 * @aq: the queue
 *
 * Context: Any context.
 * Return: the events dropped because the queue was full (merged ones do not
 * count).
 */
u64 vd_async_queue_dropped(struct vd_async_queue *aq)
{
	unsigned long flags;
	u64 n;

	spin_lock_irqsave(&aq->ring.lock, flags);
	n = aq->ring.dropped;
	spin_unlock_irqrestore(&aq->ring.lock, flags);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(vd_async_queue_dropped);

/* Completion channels */

/**
 * vd_comp_channel_create() - a new, empty completion channel
 *
 * A preallocated ring of VD_COMP_CHANNEL_LEN records.
 *
 * Context: Process context.
 * Return: the channel with one reference, or ERR_PTR(-ENOMEM).
 */
struct vd_comp_channel *vd_comp_channel_create(void)
{
	struct vd_comp_channel *ch;

	ch = kzalloc(sizeof(*ch), GFP_KERNEL_ACCOUNT);
	if (!ch)
		return ERR_PTR(-ENOMEM);
	if (vd_event_ring_init(&ch->ring, VD_COMP_CHANNEL_LEN,
			       sizeof(struct viaduct_cq_event))) {
		kfree(ch);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&ch->ref);
	return ch;
}
EXPORT_SYMBOL_IF_KUNIT(vd_comp_channel_create);

static void vd_comp_channel_free(struct kref *ref)
{
	struct vd_comp_channel *ch = container_of(ref, struct vd_comp_channel,
						  ref);

	vd_event_ring_uninit(&ch->ring);
	kfree(ch);
}

/**
 * vd_comp_channel_put() - drop a reference
 * @ch: the channel, or NULL (a no-op)
 *
 * A CQ holds a reference on its channel, so the channel outlives its
 * descriptor while CQs still report to it (the events then go unread).
 *
 * Context: As vd_async_queue_put().
 */
void vd_comp_channel_put(struct vd_comp_channel *ch)
{
	if (ch)
		kref_put(&ch->ref, vd_comp_channel_free);
}
EXPORT_SYMBOL_IF_KUNIT(vd_comp_channel_put);

/**
 * vd_comp_channel_push() - queue one completion event and wake readers
 * @ch: the channel
 * @cq_handle: the handle of the CQ that fired
 * @user_data: the CQ's user data
 *
 * A CQ queues at most one event per arm. When the channel is full it
 * merges and drops like vd_async_queue_push(): only an event for a CQ
 * (handle and user data) without one already queued can be lost, and then
 * it is counted (vd_comp_channel_dropped()) and logged.
 *
 * Context: Any context; never sleeps, never allocates.
 * Return: 0 (queued or merged) or -ENOSPC (dropped).
 */
int vd_comp_channel_push(struct vd_comp_channel *ch, u32 cq_handle,
			 u64 user_data)
{
	struct viaduct_cq_event ev = {
		.user_data = user_data,
		.cq_handle = cq_handle,
	};

	return vd_event_ring_push(&ch->ring, &ev, "completion channel");
}
EXPORT_SYMBOL_IF_KUNIT(vd_comp_channel_push);

/**
 * vd_comp_channel_pop() - take one event without copying to user space
 * @ch: the channel
 * @ev: filled with the event at the head
 *
 * Context: Any context.
 * Return: 0, or -EAGAIN if the channel is empty.
 */
int vd_comp_channel_pop(struct vd_comp_channel *ch,
			struct viaduct_cq_event *ev)
{
	return vd_event_ring_pop(&ch->ring, ev);
}
EXPORT_SYMBOL_IF_KUNIT(vd_comp_channel_pop);

/**
 * vd_comp_channel_dropped() - how many events the channel dropped
 * @ch: the channel
 *
 * Context: Any context.
 * Return: the events dropped because the channel was full.
 */
u64 vd_comp_channel_dropped(struct vd_comp_channel *ch)
{
	unsigned long flags;
	u64 n;

	spin_lock_irqsave(&ch->ring.lock, flags);
	n = ch->ring.dropped;
	spin_unlock_irqrestore(&ch->ring.lock, flags);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(vd_comp_channel_dropped);

static ssize_t vd_comp_channel_fop_read(struct file *file, char __user *buf,
					size_t len, loff_t *ppos)
{
	struct vd_comp_channel *ch = file->private_data;

	return vd_event_ring_read(&ch->ring, buf, len,
				  file->f_flags & O_NONBLOCK);
}

static __poll_t vd_comp_channel_fop_poll(struct file *file, poll_table *wait)
{
	struct vd_comp_channel *ch = file->private_data;

	return vd_event_ring_poll(&ch->ring, file, wait);
}

static int vd_comp_channel_fop_release(struct inode *inode, struct file *file)
{
	vd_comp_channel_put(file->private_data);
	return 0;
}

/* Identifies our files in vd_comp_channel_fdget(). */
static const struct file_operations vd_comp_channel_fops = {
	.owner = THIS_MODULE,
	.read = vd_comp_channel_fop_read,
	.poll = vd_comp_channel_fop_poll,
	.release = vd_comp_channel_fop_release,
	.llseek = noop_llseek,
};

/**
 * vd_comp_channel_create_file() - a completion channel behind a new anonymous-inode file
 *
 * The file (O_RDWR) owns the channel's only reference until its last
 * fput(). It read()s struct viaduct_cq_event records with the rules of
 * vd_async_queue_read(), and polls readable while one is queued.
 *
 * Context: Process context. The caller installs the file as a descriptor
 * once nothing can fail any more (vd_uobj_give_fd()).
 * Return: the file, or an ERR_PTR.
 */
struct file *vd_comp_channel_create_file(void)
{
	struct vd_comp_channel *ch;
	struct file *file;

	ch = vd_comp_channel_create();
	if (IS_ERR(ch))
		return ERR_CAST(ch);

	/* On success the file owns the reference; release() drops it. */
	file = anon_inode_getfile("[viaduct-comp-channel]",
				  &vd_comp_channel_fops, ch, O_RDWR);
	if (IS_ERR(file))
		vd_comp_channel_put(ch);
	return file;
}
EXPORT_SYMBOL_IF_KUNIT(vd_comp_channel_create_file);

/**
 * vd_comp_channel_fdget() - the completion channel behind a descriptor
 * @fd: a descriptor of the calling process
 *
 * Context: Process context.
 * Return: the channel with a new reference; ERR_PTR(-EBADF) if @fd is not
 * open, ERR_PTR(-EINVAL) if it is not a completion channel.
 */
struct vd_comp_channel *vd_comp_channel_fdget(int fd)
{
	struct vd_comp_channel *ch;
	struct file *file;

	file = fget(fd);
	if (!file)
		return ERR_PTR(-EBADF);
	/*
	 * The file holds a channel reference until release(), which cannot
	 * run while we hold the file.
	 */
	if (file->f_op == &vd_comp_channel_fops)
		ch = vd_comp_channel_get(file->private_data);
	else
		ch = ERR_PTR(-EINVAL);
	fput(file);
	return ch;
}
EXPORT_SYMBOL_IF_KUNIT(vd_comp_channel_fdget);
