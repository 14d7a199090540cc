/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CM event channels: the file a process read()s whole struct
 * viaduct_cm_event records from, and polls readable while one is queued.
 * The connection manager (cm.c) queues events on a channel; ucm.c creates
 * channel files and finds channels by file. The functions are documented
 * at their definitions in cm_channel.c.
 *
 * An event stays on two lists: the channel's queue until it is read, and
 * its id's @unacked list until the id acknowledges it or goes away.
 *
 * Locking: the channel's spinlock protects its queue and every @unacked
 * list of the ids that report to the channel; it is a leaf, taken with
 * bottom halves disabled. One reader at a time; a read copies an event
 * before it consumes it, so a fault loses nothing.
 *
 * Lifetime: the file holds one reference, every id reporting to the
 * channel another; an event never outlives its id.
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

void vd_cm_channel_push(struct vd_cm_channel *ch, struct list_head *unacked,
			struct vd_cm_event *e);
int vd_cm_channel_ack(struct vd_cm_channel *ch, struct list_head *unacked,
		      u32 seq);
void vd_cm_channel_forget(struct vd_cm_channel *ch, struct list_head *unacked);
bool vd_cm_channel_busy(struct vd_cm_channel *ch, struct list_head *unacked);

#endif /* _VD_CM_CHANNEL_H */
