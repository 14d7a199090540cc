// SPDX-License-Identifier: GPL-2.0
/*
 * The FPDUs of the message being sent: where its payload comes from (inline
 * data, the WR's SGEs checked against the TPT once more, a Read Response's
 * region), the headers of each segment, and FPDUs built either by copying
 * into the stream's transmit buffer or over the payload's own pages, which
 * the sendmsg() that follows copies (one copy). zcopy.c builds them by
 * reference from the same sources. transport.h has the structures and the
 * locking.
 */
#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <net/sock.h>

#include "device.h"
#include "mem.h"
#include "qp.h"
#include "tpt.h"
#include "transport.h"

/*
 * Hands the registered memory behind payload bytes [@off, @off + @len) of
 * the message to @fn, region by region: the Read Response's source region
 * (checked when the request came, and still referenced), or the WR's SGEs,
 * each checked against the TPT again (the region may have been
 * deregistered meanwhile). Not for inline data.
 */
int vd_fpdu_walk_payload(struct vd_tp *tp, u32 off, u32 len,
			 vd_fpdu_umem_fn fn, void *arg)
{
	struct vd_tx_msg *msg = &tp->msg;
	struct vd_mr *mr;
	u32 i, n;
	int ret;

	if (msg->mr) {
		/* what the check lets through has pages (memory.rst) */
		if (WARN_ON_ONCE(!msg->mr->umem))
			return -EFAULT;
		/* per batch: the source may have been invalidated or gone */
		if (!vd_mr_use_begin(msg->mr))
			return -ESTALE;
		ret = fn(tp, msg->mr, msg->mr->umem,
			 vd_mr_offset(msg->mr, msg->mr_addr + off), len, arg);
		vd_mr_use_end(msg->mr);
		return ret;
	}
	for (i = 0; i < msg->num_sge && len; i++) {
		const struct viaduct_sge *s = &msg->sge[i];

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		n = min(len, s->length - off);
		if (vd_tpt_check(&tp->dev->tpt, s->stag, tp->qp->pd,
				 tp->qp->qpn, VD_RIGHT_LOCAL_READ,
				 s->addr + off, n, &mr) != VD_ACCESS_OK)
			return -EACCES;
		ret = -EFAULT;
		if (!WARN_ON_ONCE(!mr->umem) && vd_mr_use_begin(mr)) {
			ret = fn(tp, mr, mr->umem,
				 vd_mr_offset(mr, s->addr + off), n, arg);
			vd_mr_use_end(mr);
		}
		vd_mr_put(mr);
		if (ret)
			return ret;
		len -= n;
		off = 0;
	}
	return len ? -EFAULT : 0;
}

/* vd_fpdu_walk_payload() for fpdu_copy(): @arg is where the bytes go next. */
static int fpdu_copy_umem(struct vd_tp *tp, struct vd_mr *mr,
			  const struct vd_umem *umem, u64 umem_off, u32 len,
			  void *arg)
{
	u8 **dst = arg;
	int ret = vd_umem_copy_from(umem, umem_off, *dst, len);

	*dst += len;
	return ret;
}

/* Payload bytes [@off, @off + @len) of the message into @dst. */
static int fpdu_copy(struct vd_tp *tp, u8 *dst, u32 off, u32 len)
{
	if (!len)
		return 0;
	if (tp->msg.inline_data) {
		memcpy(dst, tp->msg.inline_data + off, len);
		return 0;
	}
	return vd_fpdu_walk_payload(tp, off, len, fpdu_copy_umem, &dst);
}

/* The headers of segment @seg of the message. */
void vd_fpdu_seg_hdr(const struct vd_tx_msg *msg,
		     const struct vd_fpdu_seg *seg, struct vd_iw_hdr *hdr)
{
	*hdr = msg->hdr;
	hdr->last = seg->last;
	if (vd_iw_opcode_tagged(hdr->opcode))
		hdr->to = msg->base_to + seg->offset;
	else
		hdr->mo = seg->offset;
}

/* Builds the FPDU of @seg at @fpdu (copying the payload); its length. */
static int fpdu_copy_one(struct vd_tp *tp, u8 *fpdu,
			 const struct vd_fpdu_seg *seg)
{
	struct vd_tx_msg *msg = &tp->msg;
	u8 *ulpdu = fpdu + VD_MPA_LEN_SIZE;
	struct vd_iw_hdr hdr;
	int ret;

	vd_fpdu_seg_hdr(msg, seg, &hdr);
	ret = vd_iw_build(ulpdu, VD_MPA_ULPDU_MAX, &hdr);
	if (ret < 0)
		return ret;
	ret = fpdu_copy(tp, ulpdu + msg->hdr_len, seg->offset, seg->len);
	if (ret)
		return ret;
	return vd_mpa_fpdu_seal(fpdu, seg->fpdu_len, seg->ulpdu_len,
				tp->crc_tx);
}

/*
 * Copies the next FPDUs of the message into @tp->tx_buf, as many as fit:
 * one sendmsg() then carries them all.
 */
int vd_fpdu_build_copy(struct vd_tp *tp)
{
	struct vd_tx_msg *msg = &tp->msg;
	struct vd_fpdu_seg seg;
	int ret;

	do {
		vd_fpdu_segment(msg->len, msg->max_payload, msg->hdr_len,
				msg->index, &seg);
		if (tp->tx_left && tp->tx_left + seg.fpdu_len > VD_TP_BUF_SIZE)
			break;
		ret = fpdu_copy_one(tp, tp->tx_buf + tp->tx_left, &seg);
		if (ret < 0)
			return ret;
		tp->tx_left += ret;
		msg->index++;
		msg->finished = seg.last;
	} while (!msg->finished);
	return 0;
}

/* --- One copy: FPDUs over the payload's own pages -------------------- */

/* Messages with more SGEs are copied: an FPDU could need too many pieces. */
#define VD_FPDU_PAGES_MAX_SGE	(VD_TP_ZC_SEGS / 4)

static bool tx_onecopy_on = true;
module_param(tx_onecopy_on, bool, 0644);
MODULE_PARM_DESC(tx_onecopy_on,
		 "Send payload from its own pages, copied once by sendmsg() (else copied into the stream's buffer first)");

/**
 * vd_fpdu_pages_ok() - whether the current message goes out in one copy
 * @tp: the stream
 *
 * Every message with payload (inline data, the WR's SGEs, a Read
 * Response's region) does, unless the stream lacks the memory for it or
 * the WR has so many SGEs that one FPDU could need more pieces than a
 * batch holds, or the module parameter tx_onecopy_on is off; headers-only
 * messages and the Terminate are copied into @tp->tx_buf.
 *
 * Context: The transmitter of the stream.
 * Return: true if vd_fpdu_build_pages() builds its FPDUs.
 */
bool vd_fpdu_pages_ok(const struct vd_tp *tp)
{
	const struct vd_tx_msg *msg = &tp->msg;

	if (!READ_ONCE(tx_onecopy_on) || !tp->tx_hdr || !tp->tx_mrs ||
	    !tp->tx_bvec || !msg->len)
		return false;
	return msg->inline_data || msg->mr ||
	       (msg->sge && msg->num_sge <= VD_FPDU_PAGES_MAX_SGE);
}

/*
 * Appends @len bytes of @page at @off to the batch. No page reference:
 * the sendmsg() of this turn copies them while the region's use bracket
 * is open (or they are the stream's own).
 */
static int fpdu_pages_add(struct vd_tp *tp, struct page *page, u32 off,
			  u32 len)
{
	struct bio_vec *bv = &tp->tx_bvec[tp->tx_npages];

	if (tp->tx_npages && bv[-1].bv_page == page &&
	    bv[-1].bv_offset + bv[-1].bv_len == off) {
		bv[-1].bv_len += len;
		return 0;
	}
	if (WARN_ON_ONCE(tp->tx_npages >= VD_TP_ZC_SEGS))
		return -ENOSPC;
	bv->bv_page = page;
	bv->bv_offset = off;
	bv->bv_len = len;
	tp->tx_npages++;
	return 0;
}

/*
 * Keeps a use bracket of @mr open, with a reference, until the batch was
 * copied (vd_fpdu_pages_settle()): nothing reads a region once its access
 * ended, as when the payload is copied at build time.
 */
static int fpdu_pages_hold(struct vd_tp *tp, struct vd_mr *mr)
{
	if (tp->tx_nmrs && tp->tx_mrs[tp->tx_nmrs - 1] == mr)
		return 0;
	if (WARN_ON_ONCE(tp->tx_nmrs >= VD_TP_ZC_SEGS))
		return -ENOSPC;
	/* inside the walk's own bracket: fails only if access ended since */
	if (!vd_mr_use_begin(mr))
		return -ESTALE;
	tp->tx_mrs[tp->tx_nmrs++] = vd_mr_get(mr);
	return 0;
}

/*
 * vd_fpdu_walk_payload() for the one-copy batch: bytes [@off, @off + @len)
 * of @umem (@mr's) into the batch and, with CRC, into the CRC at @arg.
 */
static int fpdu_pages_umem(struct vd_tp *tp, struct vd_mr *mr,
			   const struct vd_umem *umem, u64 off, u32 len,
			   void *arg)
{
	u32 *crc = arg;
	unsigned int poff;
	struct page *page;
	u32 n;
	int ret;

	if (off > umem->length || len > umem->length - off)
		return -EFAULT;
	ret = fpdu_pages_hold(tp, mr);
	if (ret)
		return ret;
	while (len) {
		page = vd_umem_page(umem, off, &poff);
		n = min_t(u32, len, PAGE_SIZE - poff);
		if (tp->crc_tx) {
			u8 *p = kmap_local_page(page);

			*crc = vd_mpa_crc(*crc, p + poff, n);
			kunmap_local(p);
		}
		ret = fpdu_pages_add(tp, page, poff, n);
		if (ret)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

/* Inline data, in the stream's copy of the WR (kmalloc()ed: linear). */
static int fpdu_pages_virt(struct vd_tp *tp, const u8 *p, u32 len, u32 *crc)
{
	u32 n;
	int ret;

	if (tp->crc_tx)
		*crc = vd_mpa_crc(*crc, p, len);
	while (len) {
		n = min_t(u32, len, PAGE_SIZE - offset_in_page(p));
		ret = fpdu_pages_add(tp, virt_to_page(p), offset_in_page(p), n);
		if (ret)
			return ret;
		p += n;
		len -= n;
	}
	return 0;
}

/* How many SGEs payload bytes [@off, @off + @len) of the message touch. */
static u32 fpdu_pieces(const struct vd_tx_msg *msg, u32 off, u32 len)
{
	u32 i, n = 0;

	if (!msg->sge)
		return 1;
	for (i = 0; i < msg->num_sge && len; i++) {
		const struct viaduct_sge *s = &msg->sge[i];

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		n++;
		len -= min(len, s->length - off);
		off = 0;
	}
	return n;
}

/* At most how many batch entries, and regions, the FPDU of @seg adds. */
static u32 fpdu_pages_need(const struct vd_tx_msg *msg,
			   const struct vd_fpdu_seg *seg)
{
	return 2 + DIV_ROUND_UP(seg->len, PAGE_SIZE) +
	       fpdu_pieces(msg, seg->offset, seg->len);
}

/*
 * Appends the FPDU of @seg to the batch: length field and headers, and
 * after the payload pad and CRC, each written into @tp->tx_hdr (a
 * trailer and the next header are adjacent there and make one piece);
 * the payload's own pages between them. With CRC, the CRC is computed
 * over the pages in the same walk.
 */
static int fpdu_pages_one(struct vd_tp *tp, const struct vd_fpdu_seg *seg)
{
	struct vd_tx_msg *msg = &tp->msg;
	u8 *base = page_address(tp->tx_hdr);
	u32 hlen = VD_MPA_LEN_SIZE + msg->hdr_len;
	u32 tlen = seg->pad + VD_MPA_CRC_SIZE;
	u32 crc = VD_MPA_CRC_SEED;
	struct vd_iw_hdr hdr;
	__be16 ulpdu_len;
	__le32 crc_le;
	u8 *p;
	int ret;

	p = base + tp->tx_hdr_off;
	ulpdu_len = cpu_to_be16(seg->ulpdu_len);
	memcpy(p, &ulpdu_len, VD_MPA_LEN_SIZE);
	vd_fpdu_seg_hdr(msg, seg, &hdr);
	ret = vd_iw_build(p + VD_MPA_LEN_SIZE, msg->hdr_len, &hdr);
	if (ret < 0)
		return ret;
	if (tp->crc_tx)
		crc = vd_mpa_crc(crc, p, hlen);
	ret = fpdu_pages_add(tp, tp->tx_hdr, tp->tx_hdr_off, hlen);
	if (ret)
		return ret;
	tp->tx_hdr_off += hlen;

	if (msg->inline_data)
		ret = fpdu_pages_virt(tp, msg->inline_data + seg->offset,
				      seg->len, &crc);
	else if (seg->len)
		ret = vd_fpdu_walk_payload(tp, seg->offset, seg->len,
					   fpdu_pages_umem, &crc);
	if (ret)
		return ret;

	p = base + tp->tx_hdr_off;
	memset(p, 0, seg->pad);
	crc_le = cpu_to_le32(tp->crc_tx ? ~vd_mpa_crc(crc, p, seg->pad) : 0);
	memcpy(p + seg->pad, &crc_le, VD_MPA_CRC_SIZE);
	ret = fpdu_pages_add(tp, tp->tx_hdr, tp->tx_hdr_off, tlen);
	if (ret)
		return ret;
	tp->tx_hdr_off += tlen;
	return 0;
}

/**
 * vd_fpdu_build_pages() - the next FPDUs of the message, for one copy
 * @tp: the stream; vd_fpdu_pages_ok() said yes to its current message
 *
 * Builds into @tp->tx_bvec as many FPDUs as fit one batch: at most
 * VD_TP_BUF_SIZE bytes (what @tp->tx_buf takes if the socket does not),
 * and no more than the socket has room for now, beyond the first FPDU;
 * VD_TP_ZC_SEGS pieces and regions; the headers and trailers one page.
 * On return the regions of the payload are held (use bracket and
 * reference) until vd_fpdu_pages_settle().
 *
 * Context: The transmitter of the stream: process context, @tx_mutex held.
 * Return: 0, or an error if the payload's memory went away (what was
 * built is then the caller's to drop with vd_fpdu_pages_settle()).
 */
int vd_fpdu_build_pages(struct vd_tp *tp)
{
	u32 room = clamp_t(int, sk_stream_wspace(tp->sk), 0, VD_TP_BUF_SIZE);
	struct vd_tx_msg *msg = &tp->msg;
	struct vd_fpdu_seg seg;
	u32 need, hbytes;
	int ret;

	tp->tx_hdr_off = 0;
	do {
		vd_fpdu_segment(msg->len, msg->max_payload, msg->hdr_len,
				msg->index, &seg);
		need = fpdu_pages_need(msg, &seg);
		hbytes = VD_MPA_LEN_SIZE + msg->hdr_len + seg.pad +
			 VD_MPA_CRC_SIZE;
		if (tp->tx_npages &&
		    (tp->tx_left + seg.fpdu_len > room ||
		     tp->tx_npages + need > VD_TP_ZC_SEGS ||
		     tp->tx_nmrs + need > VD_TP_ZC_SEGS ||
		     tp->tx_hdr_off + hbytes > PAGE_SIZE))
			break;
		ret = fpdu_pages_one(tp, &seg);
		if (ret)
			return ret;
		tp->tx_left += seg.fpdu_len;
		msg->index++;
		msg->finished = seg.last;
	} while (!msg->finished);
	return 0;
}

/**
 * vd_fpdu_pages_settle() - the one-copy batch is done with the pages
 * @tp: the stream
 * @keep: copy what the socket did not take (@tp->tx_off, @tp->tx_left of
 *        the batch) into @tp->tx_buf, from where it is sent later
 *
 * Called when the socket took the batch, when it took part of it and has
 * no room (the rest waits in @tp->tx_buf, so that no region stays held
 * while the peer does not read), and when the batch is dropped (@keep
 * false: the caller clears @tp->tx_left). Then ends the regions' use
 * brackets and drops their references. Nothing if the batch is not one.
 *
 * Context: The transmitter of the stream.
 */
void vd_fpdu_pages_settle(struct vd_tp *tp, bool keep)
{
	u32 i;

	if (!tp->tx_npages)
		return;
	if (keep && tp->tx_left) {
		struct iov_iter it;
		size_t n;

		iov_iter_bvec(&it, ITER_SOURCE, tp->tx_bvec, tp->tx_npages,
			      tp->tx_off + tp->tx_left);
		iov_iter_advance(&it, tp->tx_off);
		n = copy_from_iter(tp->tx_buf, tp->tx_left, &it);
		WARN_ON_ONCE(n != tp->tx_left);
		tp->tx_off = 0;
	}
	for (i = 0; i < tp->tx_nmrs; i++) {
		vd_mr_use_end(tp->tx_mrs[i]);
		vd_mr_put(tp->tx_mrs[i]);
	}
	tp->tx_nmrs = 0;
	tp->tx_npages = 0;
}
