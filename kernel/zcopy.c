// SPDX-License-Identifier: GPL-2.0
/*
 * Zero-copy transmit: our struct ubuf_info and its completion, and the
 * per-stream context that outlives the stream for as long as TCP holds
 * pages of its messages. zcopy.h has the lifetimes and the locking,
 * Documentation/transport.rst ("Zero-copy transmit") the design; each
 * function has kernel-doc at its definition. Also the FPDUs of a message built by
 * reference (the headers in a page of their own, the payload's pages
 * referenced), which tx.c sends; fpdu.c walks the payload for both ways.
 */
#include <linux/atomic.h>
#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/netdev_features.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <net/sock.h>

#include "mem.h"
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

/**
 * vd_zc_min() - the zero-copy threshold
 *
 * The module parameter zcopy_tx_min: messages of at least this many bytes
 * from registered memory are sent by reference.
 *
 * Context: Any context.
 * Return: the threshold in bytes; 0 (the default) turns zero copy off.
 */
u32 vd_zc_min(void)
{
	return READ_ONCE(zcopy_tx_min);
}

/**
 * vd_zc_release() - drop a reference to a stream's context
 * @zc: the context
 *
 * The stream drops its own once its work items are cancelled; each message
 * drops one when it is freed. The last frees the context.
 *
 * Context: Any context.
 */
void vd_zc_release(struct vd_zc *zc)
{
	if (refcount_dec_and_test(&zc->ref))
		kfree(zc);
}

/**
 * vd_zc_msg_free() - free a message TCP let go of
 * @zm: a message taken from a done list (or completed after its stream
 *      stopped)
 *
 * Counts it (tx_zcopy_msgs, and tx_zcopy_copied if its pages were copied
 * after all or never held by an skb) and drops its context reference.
 *
 * Context: Any context.
 */
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
		zc->ready(zc->tp);
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

/**
 * vd_zc_create() - a stream's zero-copy context
 * @tp: the stream, which holds the reference returned
 * @ready: called when a message moved to the done list, under the
 *         context's lock with interrupts off: it must only queue work
 *
 * Created when the stream starts.
 *
 * Context: Process context.
 * Return: the context, or NULL when out of memory (the stream then copies
 * every message).
 */
struct vd_zc *vd_zc_create(struct vd_tp *tp, void (*ready)(struct vd_tp *tp))
{
	struct vd_zc *zc = kzalloc(sizeof(*zc), GFP_KERNEL_ACCOUNT);

	if (!zc)
		return NULL;
	refcount_set(&zc->ref, 1);
	spin_lock_init(&zc->lock);
	INIT_LIST_HEAD(&zc->done);
	zc->tp = tp;
	zc->ready = ready;
	return zc;
}

/**
 * vd_zc_detach() - cut a stopping stream off its context
 * @zc: the context
 *
 * Called by the stream's stop before it cancels its work items: from then
 * on completions no longer reach the stream (nor queue its work); a message
 * completed later is freed at once.
 *
 * Context: Any context.
 */
void vd_zc_detach(struct vd_zc *zc)
{
	unsigned long flags;

	spin_lock_irqsave(&zc->lock, flags);
	zc->tp = NULL;
	spin_unlock_irqrestore(&zc->lock, flags);
}

/**
 * vd_zc_take_done() - take the messages completed so far
 * @zc: the context
 * @done: the list they are moved to, in the order they completed
 *
 * For the transmit work, which retires their WRs and frees them with
 * vd_zc_msg_free().
 *
 * Context: Any context.
 */
void vd_zc_take_done(struct vd_zc *zc, struct list_head *done)
{
	unsigned long flags;

	spin_lock_irqsave(&zc->lock, flags);
	list_splice_tail_init(&zc->done, done);
	spin_unlock_irqrestore(&zc->lock, flags);
}

/**
 * vd_zc_msg_new() - a message about to be sent by reference
 * @zc: the stream's context, which the message references
 * @wr: the message completes an SQ WR
 * @seq: that WR, if @wr
 * @len: its bytes
 *
 * Context: Process context.
 * Return: the message with the sender's reference, or NULL when out of
 * memory.
 */
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

/**
 * vd_zc_msg_put() - drop the sender's reference
 * @zm: the message
 *
 * Its last FPDU is in the socket, or it was abandoned. Once TCP has freed
 * every skb holding its pages too, the message moves to the stream's done
 * list and the transmit work is queued (if the stream still runs), or is
 * freed.
 *
 * Context: Any context.
 */
void vd_zc_msg_put(struct vd_zc_msg *zm)
{
	vd_zc_complete(NULL, &zm->ubuf, true);
}

/**
 * vd_zc_drain() - wait until no message is left in any socket
 *
 * Module exit: the streams are gone, but TCP may still hold skbs with our
 * ubufs (an orphaned socket finishing a graceful close, a packet in a
 * qdisc). They are freed within TCP's own timeouts at the latest. Then
 * waits for a grace period, so that no completion still runs.
 *
 * Context: Module exit, process context; sleeps.
 */
void vd_zc_drain(void)
{
	wait_event(vd_zc_wait, !atomic_read(&vd_zc_live));
	synchronize_rcu();
}

/* --- FPDUs by reference ---------------------------------------------- */

/**
 * vd_zc_release_batch() - drop our page references of the batch
 * @tp: the stream, whose @tx_bvec holds the batch; emptied
 *
 * Context: Any context.
 */
void vd_zc_release_batch(struct vd_tp *tp)
{
	u32 i;

	for (i = 0; i < tp->tx_nbvec; i++)
		put_page(tp->tx_bvec[i].bv_page);
	tp->tx_nbvec = 0;
}

/* Appends @len bytes of @page at @off to the batch, with a page reference. */
static int zc_add(struct vd_tp *tp, struct page *page, u32 off, u32 len)
{
	struct bio_vec *bv = &tp->tx_bvec[tp->tx_nbvec];

	if (tp->tx_nbvec && bv[-1].bv_page == page &&
	    bv[-1].bv_offset + bv[-1].bv_len == off) {
		bv[-1].bv_len += len;
		return 0;
	}
	if (WARN_ON_ONCE(tp->tx_nbvec >= VD_TP_ZC_SEGS))
		return -ENOSPC;
	get_page(page);
	bv->bv_page = page;
	bv->bv_offset = off;
	bv->bv_len = len;
	tp->tx_nbvec++;
	return 0;
}

/* Bytes [@off, @off + @len) of @umem into the batch, and into the CRC. */
static int zc_umem(struct vd_tp *tp, const struct vd_umem *umem, u64 off,
		   u32 len, void *arg)
{
	u32 *crc = arg;
	unsigned int poff;
	struct page *page;
	u32 n;
	int ret;

	if (off > umem->length || len > umem->length - off)
		return -EFAULT;
	while (len) {
		page = vd_umem_page(umem, off, &poff);
		n = min_t(u32, len, PAGE_SIZE - poff);
		if (tp->crc_tx) {
			u8 *p = kmap_local_page(page);

			*crc = vd_mpa_crc(*crc, p + poff, n);
			kunmap_local(p);
		}
		ret = zc_add(tp, page, poff, n);
		if (ret)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * Payload bytes [@off, @off + @len) of the message, by reference: the
 * same sources and checks as fpdu.c. The page references taken here
 * keep the pages for the sendmsg(), whatever happens to the region; TCP
 * takes its own.
 */
static int zc_payload(struct vd_tp *tp, u32 off, u32 len, u32 *crc)
{
	return len ? vd_fpdu_walk_payload(tp, off, len, zc_umem, crc) : 0;
}

/* At most how many entries the FPDU of @seg adds to the batch. */
static u32 zc_segs(const struct vd_tx_msg *msg,
		   const struct vd_fpdu_seg *seg)
{
	/* header, trailer, the pages, and a split at every SGE boundary */
	return 2 + DIV_ROUND_UP(seg->len, PAGE_SIZE) + 1 +
	       (msg->mr ? 0 : msg->num_sge);
}

/*
 * Appends the FPDU of @seg to the batch: the length field and headers,
 * then the payload's pages, then pad and CRC. Headers and trailers go
 * into @tp->hdr_page, which only ever fills up: TCP references those
 * bytes until the peer ACKs them, and they are never written again; a
 * trailer and the next FPDU's header are adjacent there and become one
 * fragment. -ENOMEM (no page for the headers) before anything changed.
 */
static int zc_fpdu(struct vd_tp *tp, const struct vd_fpdu_seg *seg)
{
	struct vd_tx_msg *msg = &tp->msg;
	u32 hlen = VD_MPA_LEN_SIZE + msg->hdr_len;
	u32 tlen = seg->pad + VD_MPA_CRC_SIZE;
	u32 crc = VD_MPA_CRC_SEED;
	struct vd_iw_hdr hdr;
	__be16 ulpdu_len;
	__le32 crc_le;
	u8 *p;
	int ret;

	if (!tp->hdr_page || tp->hdr_off + hlen + tlen > PAGE_SIZE) {
		struct page *page = alloc_page(GFP_KERNEL);

		if (!page)
			return -ENOMEM;
		if (tp->hdr_page)
			put_page(tp->hdr_page);
		tp->hdr_page = page;
		tp->hdr_off = 0;
	}

	p = page_address(tp->hdr_page) + tp->hdr_off;
	ulpdu_len = cpu_to_be16(seg->ulpdu_len);
	memcpy(p, &ulpdu_len, VD_MPA_LEN_SIZE);
	vd_fpdu_seg_hdr(msg, seg, &hdr);
	ret = vd_iw_build(p + VD_MPA_LEN_SIZE, msg->hdr_len, &hdr);
	if (ret < 0)
		return ret;
	if (tp->crc_tx)
		crc = vd_mpa_crc(crc, p, hlen);
	ret = zc_add(tp, tp->hdr_page, tp->hdr_off, hlen);
	if (ret)
		return ret;
	tp->hdr_off += hlen;

	ret = zc_payload(tp, seg->offset, seg->len, &crc);
	if (ret)
		return ret;

	p = page_address(tp->hdr_page) + tp->hdr_off;
	memset(p, 0, seg->pad);
	crc_le = cpu_to_le32(tp->crc_tx ? ~vd_mpa_crc(crc, p, seg->pad) : 0);
	memcpy(p + seg->pad, &crc_le, VD_MPA_CRC_SIZE);
	ret = zc_add(tp, tp->hdr_page, tp->hdr_off, tlen);
	if (ret)
		return ret;
	tp->hdr_off += tlen;
	return 0;
}

/**
 * vd_zc_build() - the next FPDUs of a message by reference
 * @tp: the stream, whose current message vd_zc_begin() chose to send by
 *      reference
 *
 * Builds into @tp->tx_bvec as many FPDUs as fit one batch of at most
 * VD_TP_BUF_SIZE bytes and VD_TP_ZC_SEGS pieces.
 *
 * Context: The transmitter of the stream: process context, @tx_mutex held.
 * Return: 0; -ENOMEM if not even one FPDU could be built that way (the
 * caller copies them instead); another error if the payload's memory went
 * away.
 */
int vd_zc_build(struct vd_tp *tp)
{
	struct vd_tx_msg *msg = &tp->msg;
	struct vd_fpdu_seg seg;
	int ret;

	do {
		vd_fpdu_segment(msg->len, msg->max_payload, msg->hdr_len,
				msg->index, &seg);
		if (tp->tx_nbvec &&
		    (tp->tx_left + seg.fpdu_len > VD_TP_BUF_SIZE ||
		     tp->tx_nbvec + zc_segs(msg, &seg) > VD_TP_ZC_SEGS))
			break;
		ret = zc_fpdu(tp, &seg);
		if (ret == -ENOMEM && tp->tx_nbvec)
			break;
		if (ret)
			return ret;
		tp->tx_left += seg.fpdu_len;
		msg->index++;
		msg->finished = seg.last;
	} while (!msg->finished);
	return 0;
}

/**
 * vd_zc_begin() - decide whether a new message is sent by reference
 * @tp: the stream; @tp->zmsg is set if the message is
 *
 * Only payload from registered memory of at least zcopy_tx_min bytes,
 * without immediate data to follow, and only over a route that can take
 * page fragments (TCP would copy anyway). Otherwise it is copied, which
 * never fails a WR.
 *
 * Context: The transmitter of the stream: process context, @tx_mutex held.
 */
void vd_zc_begin(struct vd_tp *tp)
{
	struct vd_tx_msg *msg = &tp->msg;
	u32 min = vd_zc_min();

	/*
	 * A Write with immediate data completes behind its Immediate Data
	 * message, which only a copied Write leaves in charge of the WR.
	 */
	if (!min || msg->len < min || msg->inline_data || msg->imm_follows ||
	    (!msg->sge && !msg->mr))
		return;
	if (tp->zc && (READ_ONCE(tp->sk->sk_route_caps) & NETIF_F_SG))
		tp->zmsg = vd_zc_msg_new(tp->zc, msg->wr &&
					 msg->hdr.opcode != VD_OP_READ_REQ,
					 msg->seq, msg->len);
	if (!tp->zmsg)
		vd_stat_inc(tx_zcopy_fallbacks);
}
