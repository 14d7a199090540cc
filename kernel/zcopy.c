// SPDX-License-Identifier: GPL-2.0
/*
 * Zero-copy transmit: our struct ubuf_info and its completion, and the
 * per-stream context that outlives the stream for as long as TCP holds
 * pages of its messages. zcopy.h has the API, Documentation/transport.rst
 * ("Zero-copy transmit") the design; tx.c builds and sends the FPDUs.
 */
#include <linux/atomic.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "stats.h"
#include "transport.h"
#include "zcopy.h"

/*
 * Off by default: measured in the test VM (veth, which copies every
 * zero-copy fragment into the peer's namespace anyway), sending by
 * reference moved 1 MiB RDMA Writes at about 60 % of the rate of the
 * batched copy, because an FPDU then takes at least two skb fragments
 * (headers and payload) and skbs stay small. Where it pays (a NIC with
 * scatter/gather, a CPU-bound sender), 16384 is the value to start with:
 * below that, copying a few pages costs less than what zero copy adds
 * per message, and every WR's completion would wait for the peer's ACK.
 * See Documentation/transport.rst.
 */
static unsigned int zcopy_tx_min;
module_param(zcopy_tx_min, uint, 0644);
MODULE_PARM_DESC(zcopy_tx_min,
		 "Send messages of at least this many bytes from registered memory without copying them (0: never)");

/* Messages not yet freed, of every stream: module exit waits for none. */
static atomic_t vd_zc_live = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(vd_zc_wait);

u32 vd_zc_min(void)
{
	return READ_ONCE(zcopy_tx_min);
}

void vd_zc_release(struct vd_zc *zc)
{
	if (refcount_dec_and_test(&zc->ref))
		kfree(zc);
}

void vd_zc_msg_free(struct vd_zc_msg *zm)
{
	vd_stat_inc(tx_zcopy_msgs);
	if (zm->copied || !zm->used)
		vd_stat_inc(tx_zcopy_copied);
	vd_zc_release(zm->zc);
	kfree(zm);
	if (atomic_dec_and_test(&vd_zc_live))
		wake_up(&vd_zc_wait);
}

/*
 * The ubuf's completion: TCP calls it once per reference dropped, from
 * the skb destructor (softirq or process context, possibly long after the
 * stream or the QP are gone), and once more from our own put. @success is
 * false when the stack had to copy the pages of an skb after all (a veth
 * or loopback peer, a tap); the data is just as good. The last call hands
 * the message to the stream, if it still runs, for the transmit work to
 * retire the WR in order; it never touches the stream's state itself.
 *
 * Everything runs under rcu_read_lock(): vd_zc_drain() waits for a grace
 * period after the last message is freed, so the module's text outlives
 * every call of this function.
 */
static void vd_zc_complete(struct sk_buff *skb, struct ubuf_info *ubuf,
			   bool success)
{
	struct vd_zc_msg *zm = container_of(ubuf, struct vd_zc_msg, ubuf);
	struct vd_zc *zc = zm->zc;
	unsigned long flags;
	bool queued = false;

	if (!success)
		WRITE_ONCE(zm->copied, true);
	else if (skb)
		WRITE_ONCE(zm->used, true);
	if (!refcount_dec_and_test(&ubuf->refcnt))
		return;

	rcu_read_lock();
	spin_lock_irqsave(&zc->lock, flags);
	if (zc->tp) {
		list_add_tail(&zm->node, &zc->done);
		vd_tp_queue_tx(zc->tp);
		queued = true;
	}
	spin_unlock_irqrestore(&zc->lock, flags);
	if (!queued)
		vd_zc_msg_free(zm);
	rcu_read_unlock();
}

/*
 * Between 6.1 and 6.12 the ubuf's callback became an ops table; the
 * completion's signature stayed the same. Kbuild tells which.
 */
#ifdef VD_HAVE_UBUF_INFO_OPS
static const struct ubuf_info_ops vd_zc_ubuf_ops = {
	.complete = vd_zc_complete,
};

static void vd_zc_ubuf_init(struct ubuf_info *ubuf)
{
	ubuf->ops = &vd_zc_ubuf_ops;
}
#else
static void vd_zc_ubuf_init(struct ubuf_info *ubuf)
{
	ubuf->callback = vd_zc_complete;
}
#endif

struct vd_zc *vd_zc_create(struct vd_tp *tp)
{
	struct vd_zc *zc = kzalloc(sizeof(*zc), GFP_KERNEL);

	if (!zc)
		return NULL;
	refcount_set(&zc->ref, 1);
	spin_lock_init(&zc->lock);
	INIT_LIST_HEAD(&zc->done);
	zc->tp = tp;
	return zc;
}

void vd_zc_detach(struct vd_zc *zc)
{
	unsigned long flags;

	spin_lock_irqsave(&zc->lock, flags);
	zc->tp = NULL;
	spin_unlock_irqrestore(&zc->lock, flags);
}

void vd_zc_take_done(struct vd_zc *zc, struct list_head *done)
{
	unsigned long flags;

	spin_lock_irqsave(&zc->lock, flags);
	list_splice_tail_init(&zc->done, done);
	spin_unlock_irqrestore(&zc->lock, flags);
}

struct vd_zc_msg *vd_zc_msg_new(struct vd_zc *zc, bool wr, u32 seq, u32 len)
{
	struct vd_zc_msg *zm = kzalloc(sizeof(*zm), GFP_KERNEL);

	if (!zm)
		return NULL;
	vd_zc_ubuf_init(&zm->ubuf);
	/* as io_uring's and MSG_ZEROCOPY's: keep the frags when forwarded */
	zm->ubuf.flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	refcount_set(&zm->ubuf.refcnt, 1);
	refcount_inc(&zc->ref);
	zm->zc = zc;
	zm->wr = wr;
	zm->seq = seq;
	zm->len = len;
	INIT_LIST_HEAD(&zm->node);
	atomic_inc(&vd_zc_live);
	return zm;
}

void vd_zc_msg_put(struct vd_zc_msg *zm)
{
	vd_zc_complete(NULL, &zm->ubuf, true);
}

/*
 * Module exit: the streams are gone, but TCP may still hold skbs with our
 * ubufs (an orphaned socket finishing a graceful close, a packet in a
 * qdisc). They are freed within TCP's own timeouts at the latest.
 */
void vd_zc_drain(void)
{
	wait_event(vd_zc_wait, !atomic_read(&vd_zc_live));
	synchronize_rcu();
}
