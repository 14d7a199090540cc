/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zero-copy transmit: the ubuf_info the transport hands to TCP with
 * MSG_ZEROCOPY, and the per-stream context its completion reports to.
 * Documentation/transport.rst ("Zero-copy transmit") has the design.
 *
 * API
 * ---
 *   vd_zc_min()
 *       The threshold (module parameter zcopy_tx_min, bytes): messages of
 *       at least this many bytes from registered memory are sent by
 *       reference; 0 (the default) turns zero copy off.
 *   vd_zc_create(tp, ready), vd_zc_detach(zc), vd_zc_release(zc)
 *       A stream's context, created by start(); @ready(tp) is called
 *       (under the context's lock, interrupts off: it must only queue
 *       work) when a message moved to the done list. detach() is stop()'s
 *       first step: from then on completions no longer reach the stream
 *       (nor queue its work); release() drops the stream's reference once
 *       its work items are cancelled. Messages still in TCP keep the
 *       context alive and free themselves when TCP lets go.
 *   vd_zc_msg_new(zc, wr, seq, len)
 *       A message about to be sent by reference, with the sender's
 *       reference. Process context. NULL when out of memory.
 *   vd_zc_msg_put(zm)
 *       Drops the sender's reference: its last FPDU is in the socket, or it
 *       was abandoned. Once TCP has freed every skb holding its pages too,
 *       the message moves to the stream's done list and the transmit work
 *       is queued (if the stream still runs), or is freed.
 *   vd_zc_take_done(zc, done)
 *       The transmit work takes the messages completed so far.
 *   vd_zc_msg_free(zm)
 *       Frees a message taken from a done list (and counts it).
 *   vd_zc_drain()
 *       Module exit: waits until no message is left in any socket.
 *
 * Building FPDUs by reference, for the transmit work of the stream:
 *   vd_zc_begin(tp)
 *       A new message: decides whether it is sent by reference (sets
 *       @tp->zmsg) or copied.
 *   vd_zc_build(tp)
 *       The next FPDUs of the message by reference into @tp->tx_bvec, as
 *       many as fit one batch. -ENOMEM if not even one could be built that
 *       way (the caller copies them instead), another error if the
 *       payload's memory went away.
 *   vd_zc_release_batch(tp)
 *       Drops our page references of the batch.
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

struct vd_tp;

struct vd_zc {
	refcount_t ref;		/* the stream's, and one per message */
	spinlock_t lock;
	struct vd_tp *tp;	/* NULL once the stream stopped */
	void (*ready)(struct vd_tp *tp);
	struct list_head done;	/* vd_zc_msg that TCP let go of */
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
};

u32 vd_zc_min(void);
struct vd_zc *vd_zc_create(struct vd_tp *tp, void (*ready)(struct vd_tp *tp));
void vd_zc_detach(struct vd_zc *zc);
void vd_zc_release(struct vd_zc *zc);
struct vd_zc_msg *vd_zc_msg_new(struct vd_zc *zc, bool wr, u32 seq, u32 len);
void vd_zc_msg_put(struct vd_zc_msg *zm);
void vd_zc_take_done(struct vd_zc *zc, struct list_head *done);
void vd_zc_msg_free(struct vd_zc_msg *zm);
void vd_zc_drain(void);

void vd_zc_begin(struct vd_tp *tp);
int vd_zc_build(struct vd_tp *tp);
void vd_zc_release_batch(struct vd_tp *tp);

#endif /* _VD_ZCOPY_H */
