// SPDX-License-Identifier: GPL-2.0
/*
 * The life of a queue pair (qp.h): creation, with its work queues' rings
 * and private copies, its QP number and its attachments to the PD, the
 * SRQ and the CQs; destruction; and the last reference. The state machine
 * and the consumption of the rings are in qp.c.
 */
#include <linux/err.h>
#include <linux/idr.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "conn.h"
#include "cq.h"
#include "doorbell.h"
#include "event.h"
#include "pd.h"
#include "qp.h"
#include "ring.h"
#include "srq.h"
#include "stats.h"
#include "viaduct.h"

/*
 * QP numbers come from one IDA for the whole module, so they are unique
 * module-wide, across devices. The IDA frees its memory as it empties
 * and every QP is gone before the module can be unloaded.
 */
static DEFINE_IDA(vd_qpn_ida);

/* --- Work queues ---------------------------------------------------- */

/*
 * A work queue of @depth in-flight copies whose ring has @ring_depth
 * slots (at most @depth) of @size bytes.
 */
static int wq_init(struct vd_wq *wq, bool is_rq, u32 depth, u32 ring_depth,
		   u32 size, const struct vd_wqe_limits *lim, u32 *producer,
		   u32 *consumer_pub)
{
	struct vd_ring_mem *mem;

	wq->is_rq = is_rq;
	wq->depth = depth;
	wq->ring_depth = ring_depth;
	wq->wqe_size = size;
	wq->lim = *lim;
	wq->producer = producer;
	wq->consumer_pub = consumer_pub;

	mem = vd_ring_mem_alloc((size_t)ring_depth * size);
	if (IS_ERR(mem))
		return PTR_ERR(mem);
	wq->mem = mem;
	wq->copies = kvcalloc(depth, size, GFP_KERNEL_ACCOUNT);
	wq->meta = kvcalloc(depth, sizeof(*wq->meta), GFP_KERNEL_ACCOUNT);
	if (!wq->copies || !wq->meta)
		return -ENOMEM;
	return 0;
}

/*
 * The RQ side of a QP on an SRQ: no ring, and a FIFO of one, which holds
 * the receive of the message arriving (vd_qp_take_srq()). The doorbell
 * page's RQ indices stay unused.
 */
static int wq_init_shared(struct vd_wq *wq, const struct vd_srq *srq,
			  u32 *producer, u32 *consumer_pub)
{
	wq->is_rq = true;
	wq->depth = 1;
	wq->ring_depth = 0;
	wq->wqe_size = srq->wqe_size;
	wq->lim = srq->lim;
	wq->producer = producer;
	wq->consumer_pub = consumer_pub;
	wq->copies = kvcalloc(1, srq->wqe_size, GFP_KERNEL_ACCOUNT);
	wq->meta = kvcalloc(1, sizeof(*wq->meta), GFP_KERNEL_ACCOUNT);
	if (!wq->copies || !wq->meta)
		return -ENOMEM;
	return 0;
}

static void wq_free(struct vd_wq *wq)
{
	kvfree(wq->meta);
	kvfree(wq->copies);
	vd_ring_mem_put(wq->mem);
	vd_cq_put(wq->cq);
}

static int wq_attach_cq(struct vd_qp *qp, struct vd_wq *wq,
			struct vd_cq *cq)
{
	int err;

	if (cq) {
		err = vd_cq_attach(cq);
		if (err)
			return err;
		wq->cq = vd_cq_get(cq);
		return 0;
	}
	cq = vd_cq_create_private(wq->depth, qp->handle, qp->user_data,
				  qp->aq, vd_pd_counts(qp->pd));
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	wq->cq = cq;
	wq->private_cq = true;
	return 0;
}

static void wq_detach_cq(struct vd_wq *wq)
{
	if (!wq->private_cq)
		vd_cq_detach(wq->cq);
}

/* --- Life ----------------------------------------------------------- */

static void vd_qp_free(struct kref *ref)
{
	struct vd_qp *qp = container_of(ref, struct vd_qp, ref);

	wq_free(&qp->sq);
	wq_free(&qp->rq);
	vd_srq_put(qp->srq);
	vd_ring_mem_put(qp->db_mem);
	vd_dev_count_dec(vd_pd_counts(qp->pd), VD_DEV_QPS);
	vd_pd_put(qp->pd);
	vd_async_queue_put(qp->aq);
	mem_cgroup_put(qp->memcg);
	ida_free(&vd_qpn_ida, qp->qpn);
	vd_stat_dec(qps);
	kfree(qp);
}

/**
 * vd_qp_put() - drop a reference
 * @qp: the QP, or NULL (a no-op)
 *
 * The last put frees the QP number, the private copies, and the
 * references to PD, SRQ, CQs, async queue and ring memory (mappings hold
 * their own).
 *
 * Context: Process or softirq context, no spinlock held (the rules of
 * vd_cq_put()).
 */
void vd_qp_put(struct vd_qp *qp)
{
	if (qp)
		kref_put(&qp->ref, vd_qp_free);
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_put);

static void fill_reply(struct vd_qp *qp, const struct vd_qp_caps *c,
		       struct viaduct_create_qp *a)
{
	a->sq_depth = c->sq_depth;
	a->rq_depth = c->rq_depth;
	a->sq_ring_depth = c->sq_ring_depth;
	a->rq_ring_depth = c->rq_ring_depth;
	a->max_send_sge = c->sq.max_sge;
	a->max_recv_sge = c->rq.max_sge;
	a->max_inline = c->sq.max_inline;
	a->max_msg_size = c->sq.max_msg_size;
	a->handle = qp->handle;
	a->qpn = qp->qpn;
	a->sq_wqe_size = c->sq_wqe_size;
	a->rq_wqe_size = c->rq_wqe_size;
	a->db_key = 0;
	a->sq_key = 0;
	a->rq_key = 0;
	a->scq_key = 0;
	a->rcq_key = 0;
	a->db_size = qp->db_mem->size;
	a->sq_size = qp->sq.mem->size;
	a->rq_size = qp->rq.mem ? qp->rq.mem->size : 0;
	a->scq_size = 0;
	a->scq_entries = 0;
	a->rcq_size = 0;
	a->rcq_entries = 0;
	if (qp->sq.private_cq) {
		a->scq_size = vd_cq_mem(qp->sq.cq)->size;
		a->scq_entries = vd_cq_entries(qp->sq.cq);
	}
	if (qp->rq.private_cq) {
		a->rcq_size = vd_cq_mem(qp->rq.cq)->size;
		a->rcq_entries = vd_cq_entries(qp->rq.cq);
	}
}

/**
 * vd_qp_create() - a new queue pair
 * @init: what it is made of; @init->attr (struct viaduct_create_qp) is the
 *        request in and the reply out
 *
 * Validates @init->attr, allocates the doorbell page, the SQ and RQ rings
 * and the private in-flight copies, attaches to the PD, the SRQ and the
 * CQs (creating private CQs for the queues whose CQ is NULL), registers
 * with the polling worker if the QP is VIADUCT_QP_F_POLLED, and fills the
 * reply fields of @init->attr (everything but the mmap keys, which the
 * caller owns). The QP number comes from one IDA for the whole module.
 *
 * Context: Process context.
 * Return: the QP in Idle with one reference, the creator's; or ERR_PTR()
 * of -EINVAL (bad attributes, an SRQ of another PD or without a receive
 * CQ), -ENOENT (the PD, the SRQ or a CQ was destroyed), -EOPNOTSUPP
 * (POLLED without a worker, or Reliable Reception, which the module does
 * not give), -ENODEV (the worker was stopped), -ENOSPC (QP numbers),
 * -ENOMEM.
 */
struct vd_qp *vd_qp_create(const struct vd_qp_init *init)
{
	struct viaduct_create_qp *a = init->attr;
	struct vd_ring_mem *db_mem;
	struct vd_qp_caps caps;
	struct vd_qp *qp;
	int qpn, err;

	err = vd_qp_caps(a, &caps);
	if (err)
		return ERR_PTR(err);
	if (a->flags & VIADUCT_QP_F_POLLED && !init->worker)
		return ERR_PTR(-EOPNOTSUPP);
	/* an SRQ of the QP's PD, and receive completions in a CQ */
	if (init->srq && (init->srq->pd != init->pd || !init->recv_cq))
		return ERR_PTR(-EINVAL);

	qp = kzalloc(sizeof(*qp), GFP_KERNEL_ACCOUNT);
	if (!qp)
		return ERR_PTR(-ENOMEM);
	qpn = ida_alloc_range(&vd_qpn_ida, 1, VD_QPN_MAX, GFP_KERNEL);
	if (qpn < 0) {
		kfree(qp);
		return ERR_PTR(qpn);
	}
	/* From here on vd_qp_put() undoes whatever was done. */
	kref_init(&qp->ref);
	/* its stream's buffers are charged here, whoever allocates them */
	qp->memcg = get_mem_cgroup_from_mm(current->mm);
	vd_stat_inc(qps);
	/* Three init sites: three lock classes, so lockdep sees the order. */
	spin_lock_init(&qp->lock);
	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);
	qp->qpn = qpn;
	qp->dev = init->dev;
	qp->handle = init->handle;
	qp->user_data = a->user_data;
	qp->flags = a->flags;
	qp->reliability = a->reliability;
	qp->access = a->access;
	qp->ord = a->ord;
	qp->ird = a->ird;
	qp->state = VIADUCT_QPS_IDLE;
	if (init->aq)
		qp->aq = vd_async_queue_get(init->aq);

	db_mem = vd_ring_mem_alloc(PAGE_SIZE);
	if (IS_ERR(db_mem)) {
		err = PTR_ERR(db_mem);
		goto put;
	}
	qp->db_mem = db_mem;
	qp->db = db_mem->va;

	err = wq_init(&qp->sq, false, caps.sq_depth, caps.sq_ring_depth,
		      caps.sq_wqe_size, &caps.sq, &qp->db->sq_producer,
		      &qp->db->sq_consumer);
	if (err)
		goto put;
	if (init->srq)
		err = wq_init_shared(&qp->rq, init->srq, &qp->db->rq_producer,
				     &qp->db->rq_consumer);
	else
		err = wq_init(&qp->rq, true, caps.rq_depth, caps.rq_ring_depth,
			      caps.rq_wqe_size, &caps.rq, &qp->db->rq_producer,
			      &qp->db->rq_consumer);
	if (err)
		goto put;

	err = vd_pd_attach(init->pd);
	if (err)
		goto put;
	qp->pd = vd_pd_get(init->pd);
	vd_dev_count_inc(vd_pd_counts(qp->pd), VD_DEV_QPS);
	if (init->srq) {
		err = vd_srq_attach(init->srq);
		if (err)
			goto detach_pd;
		qp->srq = vd_srq_get(init->srq);
	}
	err = wq_attach_cq(qp, &qp->sq, init->send_cq);
	if (err)
		goto detach_srq;
	err = wq_attach_cq(qp, &qp->rq, init->recv_cq);
	if (err)
		goto detach_scq;

	/* Last: once registered, the worker may consume from the rings. */
	if (a->flags & VIADUCT_QP_F_POLLED) {
		qp->worker = init->worker;
		qp->db_client.db = qp->db;
		qp->db_client.poll = vd_qp_db_poll;
		qp->db_client.id = qp->qpn;
		err = vd_doorbell_register(qp->worker, &qp->db_client);
		if (err)
			goto detach_rcq;
	}

	fill_reply(qp, &caps, a);
	vd_dbg_qp(qp, "created: sq %u (ring %u) x %u, rq %u (ring %u) x %u\n",
		  caps.sq_depth, caps.sq_ring_depth, caps.sq_wqe_size,
		  caps.rq_depth, caps.rq_ring_depth, caps.rq_wqe_size);
	return qp;

detach_rcq:
	wq_detach_cq(&qp->rq);
detach_scq:
	wq_detach_cq(&qp->sq);
detach_srq:
	if (qp->srq)
		vd_srq_detach(qp->srq);
detach_pd:
	vd_pd_detach(qp->pd);
put:
	vd_qp_put(qp);
	return ERR_PTR(err);
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_create);

/**
 * vd_qp_destroy() - destroy a QP
 * @qp: the QP; the creator's reference is consumed
 *
 * Unregisters from the worker (after that the worker no longer looks at
 * the QP), asks the CM to end a stream still bound with a Terminate
 * (struct vd_conn.end), discards every outstanding WR without writing CQEs, stops
 * raising events, detaches from the PD, the SRQ and the CQs, and drops the
 * reference. Later calls on the QP by holders of other references fail or
 * do nothing. Cannot fail.
 *
 * Context: Process context.
 */
void vd_qp_destroy(struct vd_qp *qp)
{
	struct vd_async_queue *aq;

	/* First the worker: once this returns it no longer polls the QP. */
	if (qp->worker)
		vd_doorbell_unregister(qp->worker, &qp->db_client);

	/*
	 * Outstanding WRs are dropped without CQEs: the CQs may be destroyed
	 * right after (contexts tear down QPs before CQs), and the consumer
	 * that destroys a QP no longer waits for its completions. Nothing
	 * writes to the CQs or raises events for this QP after this.
	 */
	vd_qp_lock_all(qp);
	/* a stream still bound ends with a Terminate: the peer learns */
	if (qp->conn)
		qp->conn->end(qp->conn, VD_CONN_END_TERMINATE);
	WRITE_ONCE(qp->destroyed, true);
	qp->sq.head = qp->sq.tail;
	qp->rq.head = qp->rq.tail;
	aq = qp->aq;
	qp->aq = NULL;
	vd_qp_unlock_all(qp);
	vd_async_queue_put(aq);
	vd_qp_sq_work(qp);

	wq_detach_cq(&qp->sq);
	wq_detach_cq(&qp->rq);
	if (qp->srq)
		vd_srq_detach(qp->srq);
	vd_pd_detach(qp->pd);
	vd_dbg_qp(qp, "destroyed\n");
	vd_qp_put(qp);
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_destroy);
