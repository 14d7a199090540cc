// SPDX-License-Identifier: GPL-2.0
/*
 * CM event channels: a queue of struct viaduct_cm_event records behind an
 * anon-inode file. See cm_channel.h.
 */
#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "cm_channel.h"

#define VD_CM_CHANNEL_MAX	4096	/* events queued per channel */

struct vd_cm_channel {
	struct kref ref;
	spinlock_t lock;		/* @queue, @queued, ids' @unacked */
	struct mutex read_lock;		/* one reader at a time */
	wait_queue_head_t wait;
	struct list_head queue;		/* struct vd_cm_event, unread */
	u32 queued;
	u32 next_seq;
	bool warned;
};

static void vd_cm_channel_free(struct kref *ref)
{
	struct vd_cm_channel *ch = container_of(ref, struct vd_cm_channel, ref);

	/* events belong to ids, and every id holds a channel reference */
	WARN_ON_ONCE(!list_empty(&ch->queue));
	mutex_destroy(&ch->read_lock);
	kfree(ch);
}

/**
 * vd_cm_channel_put() - drop a reference
 * @ch: the channel, or NULL (a no-op)
 *
 * The last put frees the channel; its queue is empty by then, because
 * every event belongs to an id and every id holds a channel reference.
 *
 * Context: Any context but hard irq.
 */
void vd_cm_channel_put(struct vd_cm_channel *ch)
{
	if (ch)
		kref_put(&ch->ref, vd_cm_channel_free);
}

/**
 * vd_cm_channel_get() - take a reference
 * @ch: the channel, on which the caller holds a reference
 *
 * Return: @ch.
 */
struct vd_cm_channel *vd_cm_channel_get(struct vd_cm_channel *ch)
{
	kref_get(&ch->ref);
	return ch;
}

static bool channel_empty(struct vd_cm_channel *ch)
{
	return !READ_ONCE(ch->queued);
}

/**
 * vd_cm_channel_push() - queue a CM event
 * @ch: the channel the event's id reports to
 * @unacked: the id's list of events it has not acknowledged yet
 * @e: the event, allocated by the caller; the channel takes it over
 *
 * Queues @e on @ch and on @unacked and gives it the channel's next sequence
 * number, then wakes readers. A full channel (VD_CM_CHANNEL_MAX events)
 * drops and frees the event instead, with one warning per channel.
 *
 * Context: Any context but hard irq; takes the channel lock with bottom
 * halves disabled.
 */
void vd_cm_channel_push(struct vd_cm_channel *ch, struct list_head *unacked,
			struct vd_cm_event *e)
{
	bool warn = false;

	spin_lock_bh(&ch->lock);
	if (ch->queued >= VD_CM_CHANNEL_MAX) {
		warn = !ch->warned;
		ch->warned = true;
		spin_unlock_bh(&ch->lock);
		kfree(e);
		if (warn)
			pr_warn("CM channel full: events are being dropped\n");
		return;
	}
	e->ev.seq = ++ch->next_seq;
	list_add_tail(&e->ch_node, &ch->queue);
	list_add_tail(&e->id_node, unacked);
	WRITE_ONCE(ch->queued, ch->queued + 1);
	spin_unlock_bh(&ch->lock);
	wake_up_interruptible_poll(&ch->wait, EPOLLIN | EPOLLRDNORM);
}

static void event_unlink(struct vd_cm_channel *ch, struct vd_cm_event *e)
{
	lockdep_assert_held(&ch->lock);
	if (!list_empty(&e->ch_node)) {
		list_del_init(&e->ch_node);
		WRITE_ONCE(ch->queued, ch->queued - 1);
	}
	list_del(&e->id_node);
}

/**
 * vd_cm_channel_ack() - acknowledge an event, read or not
 * @ch: the channel the id reports to
 * @unacked: the id's list of unacknowledged events
 * @seq: the event's sequence number
 *
 * Frees the event, taking it off the channel's queue if it was not read.
 *
 * Context: Any context but hard irq.
 * Return: 0, or -EINVAL if @unacked holds no event @seq.
 */
int vd_cm_channel_ack(struct vd_cm_channel *ch, struct list_head *unacked,
		      u32 seq)
{
	struct vd_cm_event *e, *found = NULL;

	spin_lock_bh(&ch->lock);
	list_for_each_entry(e, unacked, id_node) {
		if (e->ev.seq == seq) {
			found = e;
			event_unlink(ch, e);
			break;
		}
	}
	spin_unlock_bh(&ch->lock);
	kfree(found);
	return found ? 0 : -EINVAL;
}

/**
 * vd_cm_channel_forget() - free every unacknowledged event of an id
 * @ch: the channel the id reports to
 * @unacked: the id's list of unacknowledged events
 *
 * For an id that goes away: its events leave the channel's queue too, read
 * or not.
 *
 * Context: Any context but hard irq.
 */
void vd_cm_channel_forget(struct vd_cm_channel *ch, struct list_head *unacked)
{
	struct vd_cm_event *e, *tmp;
	LIST_HEAD(gone);

	spin_lock_bh(&ch->lock);
	list_for_each_entry_safe(e, tmp, unacked, id_node) {
		event_unlink(ch, e);
		list_add(&e->id_node, &gone);
	}
	spin_unlock_bh(&ch->lock);
	list_for_each_entry_safe(e, tmp, &gone, id_node)
		kfree(e);
}

/**
 * vd_cm_channel_busy() - whether an id has unacknowledged events
 * @ch: the channel the id reports to
 * @unacked: the id's list of unacknowledged events
 *
 * Context: Any context but hard irq.
 * Return: true if @unacked holds events.
 */
bool vd_cm_channel_busy(struct vd_cm_channel *ch, struct list_head *unacked)
{
	bool busy;

	spin_lock_bh(&ch->lock);
	busy = !list_empty(unacked);
	spin_unlock_bh(&ch->lock);
	return busy;
}

static ssize_t vd_cm_channel_read(struct file *file, char __user *buf,
				  size_t len, loff_t *ppos)
{
	struct vd_cm_channel *ch = file->private_data;
	struct viaduct_cm_event *ev;
	struct vd_cm_event *e;
	size_t done = 0;
	int ret;

	if (len < sizeof(*ev))
		return -EINVAL;
	for (;;) {
		if (mutex_lock_interruptible(&ch->read_lock))
			return -ERESTARTSYS;
		if (!channel_empty(ch))
			break;
		mutex_unlock(&ch->read_lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(ch->wait, !channel_empty(ch));
		if (ret)
			return ret;
	}

	ret = -ENOMEM;
	ev = kmalloc(sizeof(*ev), GFP_KERNEL);
	if (!ev)
		goto out;
	ret = 0;
	while (len - done >= sizeof(*ev)) {
		/* peek, copy, then consume: a fault loses nothing */
		spin_lock_bh(&ch->lock);
		e = list_first_entry_or_null(&ch->queue, struct vd_cm_event,
					     ch_node);
		if (e)
			*ev = e->ev;
		spin_unlock_bh(&ch->lock);
		if (!e)
			break;
		if (copy_to_user(buf + done, ev, sizeof(*ev))) {
			ret = -EFAULT;
			break;
		}
		done += sizeof(*ev);
		/*
		 * The event may have been acked or its id destroyed meanwhile;
		 * sequence numbers are unique per channel, so comparing them
		 * finds out whether it is still the head.
		 */
		spin_lock_bh(&ch->lock);
		e = list_first_entry_or_null(&ch->queue, struct vd_cm_event,
					     ch_node);
		if (e && e->ev.seq == ev->seq) {
			list_del_init(&e->ch_node);
			WRITE_ONCE(ch->queued, ch->queued - 1);
		}
		spin_unlock_bh(&ch->lock);
	}
	kfree(ev);
out:
	mutex_unlock(&ch->read_lock);
	return done ? done : ret;
}

static __poll_t vd_cm_channel_poll(struct file *file, poll_table *wait)
{
	struct vd_cm_channel *ch = file->private_data;

	poll_wait(file, &ch->wait, wait);
	return channel_empty(ch) ? 0 : EPOLLIN | EPOLLRDNORM;
}

static int vd_cm_channel_release(struct inode *inode, struct file *file)
{
	vd_cm_channel_put(file->private_data);
	return 0;
}

static const struct file_operations vd_cm_channel_fops = {
	.owner = THIS_MODULE,
	.read = vd_cm_channel_read,
	.poll = vd_cm_channel_poll,
	.release = vd_cm_channel_release,
	.llseek = noop_llseek,
};

/**
 * vd_cm_channel_create_file() - a new channel behind an anonymous-inode file
 *
 * The file (O_RDWR) owns the channel's only reference. Its read() returns
 * whole records only (-EINVAL for a buffer smaller than one), as many as fit
 * and are queued, blocking while none is (-EAGAIN with O_NONBLOCK); a fault
 * returns what was copied before it, or -EFAULT, and loses no event.
 *
 * Context: Process context. The caller installs the file as a descriptor
 * (vd_uobj_give_fd()).
 * Return: the file, or ERR_PTR(-ENOMEM) and the like.
 */
struct file *vd_cm_channel_create_file(void)
{
	struct vd_cm_channel *ch;
	struct file *file;

	ch = kzalloc(sizeof(*ch), GFP_KERNEL_ACCOUNT);
	if (!ch)
		return ERR_PTR(-ENOMEM);
	kref_init(&ch->ref);
	spin_lock_init(&ch->lock);
	mutex_init(&ch->read_lock);
	init_waitqueue_head(&ch->wait);
	INIT_LIST_HEAD(&ch->queue);
	/* on success the file owns the only reference */
	file = anon_inode_getfile("[viaduct-cm-channel]", &vd_cm_channel_fops,
				  ch, O_RDWR);
	if (IS_ERR(file))
		vd_cm_channel_put(ch);
	return file;
}

/**
 * vd_cm_channel_from_file() - the channel behind a file
 * @file: a file the caller holds
 *
 * Return: the channel with a new reference, or ERR_PTR(-EINVAL) if @file is
 * not a CM channel.
 */
struct vd_cm_channel *vd_cm_channel_from_file(struct file *file)
{
	if (file->f_op != &vd_cm_channel_fops)
		return ERR_PTR(-EINVAL);
	return vd_cm_channel_get(file->private_data);
}
