/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CM event channels: the file a process read()s whole struct
 * viaduct_cm_event records from, and polls readable while one is queued.
 * The connection manager (cm.c) queues events on a channel; ucm.c creates
 * channel files and finds channels by file.
 *
 * API
 * ---
 *   vd_cm_channel_create_file()
 *       A new anon-inode channel file, ERR_PTR(-ENOMEM) and the like. The
 *       caller installs it (vd_uobj_give_fd()).
 *   vd_cm_channel_from_file(file)
 *       The channel of @file, referenced; ERR_PTR(-EINVAL) if @file is not
 *       a CM channel. The caller holds the file.
 *   vd_cm_channel_get(ch), vd_cm_channel_put(ch)
 *
 *   vd_cm_channel_push(ch, unacked, e)
 *       Queues @e on @ch and on @unacked (the list of events its id has not
 *       acknowledged yet) and gives it the channel's next sequence number.
 *       Never drops it: an id whose event got lost would wait for it
 *       forever. Any context but hard irq.
 *   vd_cm_channel_full(ch)
 *       Whether @ch holds cm_channel_events unread events or more (module
 *       parameter). Listeners take no new connection while theirs is: the
 *       events a remote peer can add are bounded by that and the backlog,
 *       those of existing ids by the ids the owner made.
 *   vd_cm_channel_ack(ch, unacked, seq)
 *       Frees the event @seq of @unacked, read or not: 0, or -EINVAL if
 *       @unacked holds no such event.
 *   vd_cm_channel_forget(ch, unacked)
 *       Frees every event of @unacked (the id goes away).
 *   vd_cm_channel_busy(ch, unacked)
 *       Whether @unacked holds events.
 *
 * Locking: @lock protects the channel's queue and every @unacked list of
 * the ids that report to the channel; it is a leaf, taken with bottom
 * halves disabled. One reader at a time; a read copies an event before it
 * consumes it, so a fault loses nothing.
 */
#ifndef _VD_CM_CHANNEL_H
#define _VD_CM_CHANNEL_H

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/types.h>
#include <viaduct/viaduct-abi.h>

struct vd_cm_channel;

struct vd_cm_event {
	struct list_head id_node;	/* on the id's @unacked until acked */
	struct list_head ch_node;	/* on the channel's @queue until read */
	struct viaduct_cm_event ev;
};

struct file *vd_cm_channel_create_file(void);
struct vd_cm_channel *vd_cm_channel_from_file(struct file *file);
struct vd_cm_channel *vd_cm_channel_get(struct vd_cm_channel *ch);
void vd_cm_channel_put(struct vd_cm_channel *ch);

bool vd_cm_channel_full(struct vd_cm_channel *ch);
void vd_cm_channel_push(struct vd_cm_channel *ch, struct list_head *unacked,
			struct vd_cm_event *e);
int vd_cm_channel_ack(struct vd_cm_channel *ch, struct list_head *unacked,
		      u32 seq);
void vd_cm_channel_forget(struct vd_cm_channel *ch, struct list_head *unacked);
bool vd_cm_channel_busy(struct vd_cm_channel *ch, struct list_head *unacked);

#endif /* _VD_CM_CHANNEL_H */
