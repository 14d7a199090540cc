/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zero-copy transmit: the ubuf_info the transport hands to TCP with
 * MSG_ZEROCOPY, and the per-stream context its completion reports to.
 * Documentation/transport.rst ("Zero-copy transmit") has the design.
 *
 * A stream's context (struct vd_zc) is referenced by the stream and by
 * each of its messages: messages still in TCP keep it alive after the
 * stream stopped, and free themselves when TCP lets go. A message (struct
 * vd_zc_msg) is referenced by its sender and by every skb holding its
 * pages; when the last lets go it moves to the stream's done list for the
 * transmit work to retire its WR in order, or is freed if the stream is
 * gone. The functions are documented (kernel-doc) at their definitions in
 * zcopy.c.
 *
 * Locking: @lock is a leaf, taken with interrupts disabled, because TCP
 * frees skbs (and runs the completion) in softirq or process context.
 */
#ifndef _VD_ZCOPY_H
#define _VD_ZCOPY_H

#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/types.h>

struct vd_mr;
struct vd_tp;

struct vd_zc {
	refcount_t ref;		/* the stream's, and one per message */
	spinlock_t lock;
	struct vd_tp *tp;	/* NULL once the stream stopped */
	void (*ready)(struct vd_tp *tp);
	struct list_head done;	/* vd_zc_msg that TCP let go of */
	atomic_t in_tcp;	/* messages TCP (or their sender) holds */
};

struct vd_zc_msg {
	struct ubuf_info ubuf;	/* msg_ubuf of every sendmsg of the message */
	struct vd_zc *zc;	/* referenced */
	struct list_head node;	/* on zc->done */
	u32 seq;		/* the SQ WR it completes, if @wr */
	u32 len;
	bool wr;
	bool used;		/* an skb held its pages until it was freed */
	bool copied;		/* the stack copied the pages of an skb */
	/* the regions whose pages TCP holds, vd_mr_tcp_hold() each */
	u32 nr_mrs, max_mrs;
	struct vd_mr *mrs[];
};

u32 vd_zc_min(void);
struct vd_zc *vd_zc_create(struct vd_tp *tp, void (*ready)(struct vd_tp *tp));
void vd_zc_detach(struct vd_zc *zc);
void vd_zc_release(struct vd_zc *zc);
struct vd_zc_msg *vd_zc_msg_new(struct vd_zc *zc, bool wr, u32 seq, u32 len,
				u32 max_mrs);
int vd_zc_msg_hold(struct vd_zc_msg *zm, struct vd_mr *mr);
bool vd_zc_wait_idle(struct vd_zc *zc, int held, unsigned long timeout);
void vd_zc_msg_put(struct vd_zc_msg *zm);
void vd_zc_take_done(struct vd_zc *zc, struct list_head *done);
void vd_zc_msg_free(struct vd_zc_msg *zm);
void vd_zc_drain(void);

void vd_zc_begin(struct vd_tp *tp);
int vd_zc_build(struct vd_tp *tp);
void vd_zc_release_batch(struct vd_tp *tp);

#endif /* _VD_ZCOPY_H */
