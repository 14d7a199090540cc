// SPDX-License-Identifier: GPL-2.0
/*
 * The FPDUs of the message being sent: where its payload comes from (inline
 * data, the WR's SGEs checked against the TPT once more, a Read Response's
 * region), the headers of each segment, and FPDUs built by copying into the
 * stream's transmit buffer. zcopy.c builds them by reference from the same
 * sources. transport.h has the structures and the locking.
 */
#include <linux/minmax.h>
#include <linux/string.h>

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
