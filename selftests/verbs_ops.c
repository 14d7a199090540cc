// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues and the memory operations through the verbs and
 * rdma_cm API, as rdma-core documents them. Built against rdma-core (-libverbs -lrdmacm) and run by
 * verbs_test.sh through libviaduct-verbs' drop-in directory.
 *
 *   verbs_ops local                 SRQ attributes, limits and errors
 *   verbs_ops server ADDR -p PORT   NQP connections whose QPs receive from
 *                                   one SRQ (rdma_create_srq() on the
 *                                   listener's device, rdma_post_recv() on
 *                                   an id with the SRQ): every message
 *                                   verified, the limit event, the last-WQE
 *                                   event, the destroy order
 *   verbs_ops client ADDR -p PORT   NQP connections, NMSG Sends on each
 *   verbs_ops inv ADDR -p PORT      against verbs_inv_peer: a first
 *                                   message, an RDMA Write through the STag
 *                                   the peer then offers, a Send with
 *                                   Invalidate of it (IBV_WR_SEND_WITH_INV),
 *                                   the peer's verdict
 *   verbs_ops inv+local ...         and then IBV_WR_LOCAL_INV of a plain
 *                                   MR: a local protection error
 *
 * The client uses no SRQ, so it may run on any iWARP device (siw).
 * Prints "ok"/"FAILED" lines for each check and exits non-zero if any failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/select.h>
#include <netdb.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "verbs_inv.h"

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (cond) {                                                    \
			printf("#   ok: ");                                        \
		} else {                                                       \
			printf("#   FAILED (errno %d %s): ", errno,                \
			       strerror(errno));                               \
			failures++;                                            \
		}                                                              \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
		fflush(stdout);                                                \
	} while (0)

#define NQP 3		/* connections receiving from the one SRQ */
#define NMSG 4		/* messages on each */
#define NRECV 16	/* receives posted to the SRQ */
#define LIMIT 6		/* armed: NRECV - NQP * NMSG = 4 left < 6 */
#define MSG 64

static struct ibv_context *open_first(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;

	if (list && n > 0)
		ctx = ibv_open_device(list[0]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static int local_checks(void)
{
	static char buf[4096];
	struct ibv_context *ctx = open_first();
	struct ibv_device_attr da;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq_attr q;
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	int ret;

	CHECK(ctx != NULL, "a device opens");
	if (!ctx)
		return 1;
	CHECK(ibv_query_device(ctx, &da) == 0 && da.max_srq > 0 && da.max_srq_wr >= 8 &&
	      da.max_srq_sge >= 1, "ibv_query_device: max_srq %d, max_srq_wr %d, max_srq_sge %d",
	      da.max_srq, da.max_srq_wr, da.max_srq_sge);
	CHECK(da.max_mw > 0 && da.max_mw <= da.max_mr, "ibv_query_device: max_mw %d (max_mr %d)",
	      da.max_mw, da.max_mr);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	CHECK(pd && cq && mr, "PD, CQ, MR");
	if (!pd || !cq || !mr)
		return 1;

	errno = 0;
	sa.attr.max_wr = (uint32_t)da.max_srq_wr + 1;
	CHECK(ibv_create_srq(pd, &sa) == NULL && errno == EINVAL,
	      "ibv_create_srq beyond max_srq_wr: EINVAL");
	sa.attr.max_wr = 8;
	sa.attr.max_sge = (uint32_t)da.max_srq_sge + 1;
	errno = 0;
	CHECK(ibv_create_srq(pd, &sa) == NULL && errno == EINVAL,
	      "ibv_create_srq beyond max_srq_sge: EINVAL");
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(pd, &sa);
	CHECK(srq && sa.attr.max_wr >= 8 && sa.attr.max_sge >= 1 && srq->pd == pd,
	      "ibv_create_srq: %u WRs, %u SGEs", sa.attr.max_wr, sa.attr.max_sge);
	if (!srq)
		return 1;
	{
		struct ibv_srq_init_attr_ex ex = { .attr = { .max_wr = 4, .max_sge = 1 },
						   .comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
								IBV_SRQ_INIT_ATTR_PD,
						   .srq_type = IBV_SRQT_BASIC, .pd = pd };
		struct ibv_srq *s2 = ibv_create_srq_ex(ctx, &ex);

		CHECK(s2 && ibv_destroy_srq(s2) == 0, "ibv_create_srq_ex of a basic SRQ");
		ex.srq_type = IBV_SRQT_XRC;
		errno = 0;
		CHECK(ibv_create_srq_ex(ctx, &ex) == NULL && errno == EOPNOTSUPP,
		      "ibv_create_srq_ex of an XRC SRQ: EOPNOTSUPP");
	}
	q.srq_limit = sa.attr.max_wr + 1;
	CHECK(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT) == EINVAL,
	      "ibv_modify_srq: a limit beyond the depth is EINVAL");
	q.max_wr = 64;
	CHECK(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR) == EOPNOTSUPP,
	      "ibv_modify_srq: resizing is EOPNOTSUPP");
	q.srq_limit = 3;
	CHECK(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT) == 0, "ibv_modify_srq arms a limit of 3");
	memset(&q, 0, sizeof(q));
	CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == 3 && q.max_wr == sa.attr.max_wr &&
	      q.max_sge == sa.attr.max_sge, "ibv_query_srq: limit 3, the depth and SGEs");
	{
		struct ibv_sge sge[4];
		struct ibv_recv_wr r[2], *bad = NULL;
		int i;

		for (i = 0; i < 4; i++)
			sge[i] = (struct ibv_sge){ (uintptr_t)buf + 64 * i, 64, mr->lkey };
		r[0] = (struct ibv_recv_wr){ .wr_id = 1, .next = &r[1], .sg_list = sge,
					     .num_sge = 1 };
		r[1] = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = sge,
					     .num_sge = (int)sa.attr.max_sge + 1 };
		ret = ibv_post_srq_recv(srq, r, &bad);
		CHECK(ret == EINVAL && bad == &r[1],
		      "ibv_post_srq_recv: too many SGEs is EINVAL at bad_wr (%d)", ret);
		r[1].num_sge = 1;
		CHECK(ibv_post_srq_recv(srq, &r[1], &bad) == 0, "ibv_post_srq_recv");
	}
	{
		struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .srq = srq,
					       .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
							.max_send_sge = 1, .max_recv_sge = 1 } };
		struct ibv_qp_init_attr qi;
		struct ibv_qp_attr qa;
		struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 }, *bad;
		struct ibv_pd *pd2 = ibv_alloc_pd(ctx);

		qp = ibv_create_qp(pd, &ia);
		CHECK(qp && qp->srq == srq && ia.cap.max_recv_wr == 0,
		      "ibv_create_qp on the SRQ: no receive queue of its own");
		if (!qp)
			return 1;
		CHECK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi) == 0 && qi.srq == srq,
		      "ibv_query_qp names the SRQ");
		CHECK(ibv_post_recv(qp, &r, &bad) == EINVAL && bad == &r,
		      "ibv_post_recv on a QP with an SRQ: EINVAL");
		ia.srq = srq;
		errno = 0;
		CHECK(pd2 && ibv_create_qp(pd2, &ia) == NULL && errno == EINVAL,
		      "a QP on another PD's SRQ: EINVAL");
		ibv_dealloc_pd(pd2);
	}
	ret = ibv_destroy_srq(srq);
	CHECK(ret == EBUSY, "ibv_destroy_srq while a QP uses it: EBUSY (%d)", ret);
	CHECK(ibv_destroy_qp(qp) == 0 && ibv_dereg_mr(mr) == 0, "ibv_destroy_qp, ibv_dereg_mr");
	ret = ibv_dealloc_pd(pd);
	CHECK(ret == EBUSY, "ibv_dealloc_pd under the SRQ: EBUSY (%d)", ret);
	CHECK(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq once no QP uses it");
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0, "CQ, PD gone");
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	return 0;
}

/* --- two hosts ---------------------------------------------------------- */

static struct rdma_cm_event *expect_event(struct rdma_event_channel *ec,
					  enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ec, &ev)) {
		CHECK(0, "rdma_get_cm_event");
		return NULL;
	}
	CHECK(ev->event == want, "event %s (want %s, status %d)", rdma_event_str(ev->event),
	      rdma_event_str(want), ev->status);
	return ev;
}

static int resolve(const char *addr, const char *port, int passive, struct sockaddr_storage *ss)
{
	struct rdma_addrinfo hints = { .ai_flags = passive ? RAI_PASSIVE : 0,
				       .ai_port_space = RDMA_PS_TCP }, *res;

	if (rdma_getaddrinfo(addr, port, &hints, &res))
		return -1;
	memcpy(ss, passive ? res->ai_src_addr : res->ai_dst_addr,
	       passive ? res->ai_src_len : res->ai_dst_len);
	rdma_freeaddrinfo(res);
	return 0;
}

/* What message @m of connection @c carries. */
static void pattern(char *p, int c, int m)
{
	int i;

	for (i = 0; i < MSG; i++)
		p[i] = (char)(c * 64 + m * 16 + i);
}

/* Waits up to 10 s for an async event of type @want, acknowledging others. */
static int next_async(struct ibv_context *ctx, enum ibv_event_type want,
		      struct ibv_async_event *ae)
{
	for (;;) {
		struct timeval tv = { 10, 0 };
		fd_set fds;

		FD_ZERO(&fds);
		FD_SET(ctx->async_fd, &fds);
		if (select(ctx->async_fd + 1, &fds, NULL, NULL, &tv) != 1 ||
		    ibv_get_async_event(ctx, ae))
			return -1;
		if (ae->event_type == want)
			return 0;
		printf("#   (async event %s)\n", ibv_event_type_str(ae->event_type));
		ibv_ack_async_event(ae);
	}
}

static int server(const char *addr, const char *port)
{
	static char buf[NRECV][MSG];
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct rdma_cm_id *listen, *id[NQP];
	struct rdma_cm_event *ev;
	struct sockaddr_storage ss;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = NRECV, .max_sge = 1 } };
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_send_sge = 1 } };
	struct ibv_srq_attr q;
	struct ibv_async_event ae;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc[NRECV];
	int seen[NQP] = { 0 }, i, c, est, got = 0, bad = 0, tries, ret;

	CHECK(ec && resolve(addr, port, 1, &ss) == 0, "event channel, address");
	CHECK(rdma_create_id(ec, &listen, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	CHECK(rdma_bind_addr(listen, (struct sockaddr *)&ss) == 0 && listen->verbs,
	      "rdma_bind_addr picks the device");
	CHECK(rdma_listen(listen, NQP) == 0, "rdma_listen");
	/* the SRQ on the listener: its PD, its QPs' default */
	CHECK(rdma_create_srq(listen, NULL, &sa) == 0 && listen->srq && listen->pd &&
	      sa.attr.max_wr >= NRECV, "rdma_create_srq on the listening id (%u WRs)",
	      sa.attr.max_wr);
	if (!listen->srq)
		return 1;
	cq = ibv_create_cq(listen->verbs, 2 * NRECV, NULL, NULL, 0);
	mr = ibv_reg_mr(listen->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(cq && mr, "the receive CQ, the MR on the SRQ's PD");
	if (!cq || !mr)
		return 1;
	/* rdma_post_recv() goes to id->srq when the id has one */
	for (i = 0; i < NRECV; i++)
		CHECK(rdma_post_recv(listen, (void *)(uintptr_t)i, buf[i], MSG, mr) == 0,
		      "receive %d posted to the SRQ with rdma_post_recv", i);
	q.srq_limit = LIMIT;
	CHECK(ibv_modify_srq(listen->srq, &q, IBV_SRQ_LIMIT) == 0, "limit %d armed", LIMIT);

	ia.send_cq = ia.recv_cq = cq;
	ia.srq = listen->srq;
	/*
	 * The client connects one id after the other, but its ESTABLISHED
	 * does not order ours: a request may come before the previous
	 * connection's ESTABLISHED here. Each kind is counted, in any order.
	 */
	for (c = 0, est = 0; c < NQP || est < NQP;) {
		if (rdma_get_cm_event(ec, &ev)) {
			CHECK(0, "rdma_get_cm_event");
			return 1;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && c < NQP) {
			id[c] = ev->id;
			rdma_ack_cm_event(ev);
			ret = rdma_create_qp(id[c], listen->pd, &ia);
			CHECK(ret == 0 && id[c]->qp->srq == listen->srq,
			      "connection %d: rdma_create_qp on the SRQ", c);
			CHECK(rdma_accept(id[c], NULL) == 0, "rdma_accept %d", c);
			c++;
		} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED && est < c) {
			rdma_ack_cm_event(ev);
			CHECK(1, "connection established (%d of %d)", ++est, NQP);
		} else {
			CHECK(0, "event %s (want CONNECT_REQUEST or ESTABLISHED, status %d)",
			      rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			return 1;
		}
	}
	/* every message once, on the QP it was sent on, in order per QP */
	for (tries = 0; tries < 2000 && got < NQP * NMSG; tries++) {
		int n = ibv_poll_cq(cq, NRECV, wc);

		for (i = 0; i < n; i++, got++) {
			char want[MSG];
			int k = (int)wc[i].wr_id, who = -1;

			for (c = 0; c < NQP; c++)
				if (wc[i].qp_num == id[c]->qp->qp_num)
					who = c;
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV ||
			    wc[i].byte_len != MSG || who < 0 || k < 0 || k >= NRECV) {
				printf("#   completion %d: status %s, opcode %d, %u bytes, qp %u\n",
				       got, ibv_wc_status_str(wc[i].status), wc[i].opcode,
				       wc[i].byte_len, wc[i].qp_num);
				bad++;
				continue;
			}
			pattern(want, who, seen[who]);
			if (memcmp(buf[k], want, MSG)) {
				printf("#   connection %d message %d: wrong data in receive %d\n", who,
				       seen[who], k);
				bad++;
			}
			seen[who]++;
		}
		if (n == 0)
			usleep(10000);
	}
	CHECK(got == NQP * NMSG && !bad, "%d messages on %d QPs through one SRQ, data verified",
	      got, NQP);
	for (c = 0; c < NQP; c++)
		CHECK(seen[c] == NMSG, "connection %d: %d messages", c, seen[c]);

	ret = next_async(listen->verbs, IBV_EVENT_SRQ_LIMIT_REACHED, &ae);
	CHECK(ret == 0 && ae.element.srq == listen->srq, "async event: SRQ limit reached");
	if (ret == 0)
		ibv_ack_async_event(&ae);
	memset(&q, 0xff, sizeof(q));
	CHECK(ibv_query_srq(listen->srq, &q) == 0 && q.srq_limit == 0,
	      "the limit is disarmed once reached (%u)", q.srq_limit);

	ret = ibv_destroy_srq(listen->srq);
	CHECK(ret == EBUSY, "ibv_destroy_srq while QPs use it: EBUSY (%d)", ret);

	/* a QP on an SRQ that enters Error reports its last WQE */
	{
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		CHECK(ibv_modify_qp(id[0]->qp, &qa, IBV_QP_STATE) == 0, "connection 0 to ERR");
		ret = next_async(listen->verbs, IBV_EVENT_QP_LAST_WQE_REACHED, &ae);
		CHECK(ret == 0 && ae.element.qp == id[0]->qp, "async event: last WQE reached");
		if (ret == 0)
			ibv_ack_async_event(&ae);
	}
	for (c = 0; c < NQP; c++) {
		rdma_disconnect(id[c]);
		rdma_destroy_qp(id[c]);
		rdma_destroy_id(id[c]);
	}
	/* the receives not taken are still on the SRQ until it goes */
	rdma_destroy_srq(listen);
	CHECK(listen->srq == NULL, "rdma_destroy_srq once no QP uses it");
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(ec);
	return 0;
}

static int client(const char *addr, const char *port)
{
	static char msg[NQP][NMSG][MSG];
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct rdma_cm_id *id[NQP];
	struct rdma_cm_event *ev;
	struct sockaddr_storage ss;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = NMSG, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_mr *mr[NQP];
	struct ibv_wc wc;
	int c, m, n, tries;

	CHECK(ec && resolve(addr, port, 0, &ss) == 0, "event channel, address");
	for (c = 0; c < NQP; c++) {
		CHECK(rdma_create_id(ec, &id[c], NULL, RDMA_PS_TCP) == 0, "rdma_create_id %d", c);
		CHECK(rdma_resolve_addr(id[c], NULL, (struct sockaddr *)&ss, 2000) == 0,
		      "rdma_resolve_addr");
		ev = expect_event(ec, RDMA_CM_EVENT_ADDR_RESOLVED);
		if (!ev)
			return 1;
		rdma_ack_cm_event(ev);
		CHECK(rdma_resolve_route(id[c], 2000) == 0, "rdma_resolve_route");
		ev = expect_event(ec, RDMA_CM_EVENT_ROUTE_RESOLVED);
		if (!ev)
			return 1;
		rdma_ack_cm_event(ev);
		/* rdma_create_qp fills in the CQs it made: each id its own */
		ia.send_cq = ia.recv_cq = NULL;
		CHECK(rdma_create_qp(id[c], NULL, &ia) == 0, "rdma_create_qp %d", c);
		mr[c] = ibv_reg_mr(id[c]->pd, msg[c], sizeof(msg[c]), 0);
		CHECK(mr[c] != NULL, "ibv_reg_mr");
		if (!mr[c])
			return 1;
		CHECK(rdma_connect(id[c], NULL) == 0, "rdma_connect %d", c);
		ev = expect_event(ec, RDMA_CM_EVENT_ESTABLISHED);
		if (!ev)
			return 1;
		rdma_ack_cm_event(ev);
	}
	for (c = 0; c < NQP; c++) {
		for (m = 0; m < NMSG; m++) {
			pattern(msg[c][m], c, m);
			CHECK(rdma_post_send(id[c], NULL, msg[c][m], MSG, mr[c],
					     IBV_SEND_SIGNALED) == 0,
			      "connection %d message %d posted", c, m);
		}
	}
	for (c = 0; c < NQP; c++) {
		for (m = 0; m < NMSG;) {
			n = 0;
			for (tries = 0; tries < 1000 && n == 0; tries++) {
				n = ibv_poll_cq(id[c]->send_cq, 1, &wc);
				if (n == 0)
					usleep(10000);
			}
			CHECK(n == 1 && wc.status == IBV_WC_SUCCESS,
			      "connection %d message %d completed", c, m);
			if (n != 1)
				return 1;
			m++;
		}
	}
	/* the server disconnects once it has checked everything */
	for (c = 0; c < NQP; c++) {
		ev = expect_event(ec, RDMA_CM_EVENT_DISCONNECTED);
		if (ev)
			rdma_ack_cm_event(ev);
	}
	for (c = 0; c < NQP; c++) {
		rdma_destroy_qp(id[c]);
		ibv_dereg_mr(mr[c]);
		rdma_destroy_id(id[c]);
	}
	rdma_destroy_event_channel(ec);
	return 0;
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n = 0, tries;

	for (tries = 0; tries < 2000 && n == 0; tries++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n == 0)
			usleep(10000);
	}
	return n;
}

static int inv_client(const char *addr, const char *port, int local_inv)
{
	static char buf[VI_PAGES * 4096];
	static char verdict[64];
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_storage ss;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 2,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct vi_offer offer;
	struct ibv_mr *mr, *vmr;
	struct ibv_wc wc;
	uint32_t i;

	CHECK(ec && resolve(addr, port, 0, &ss) == 0, "event channel, address");
	CHECK(rdma_create_id(ec, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000) == 0, "rdma_resolve_addr");
	ev = expect_event(ec, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!ev)
		return 1;
	rdma_ack_cm_event(ev);
	CHECK(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route");
	ev = expect_event(ec, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!ev)
		return 1;
	rdma_ack_cm_event(ev);
	CHECK(rdma_create_qp(id, NULL, &ia) == 0, "rdma_create_qp");
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	vmr = ibv_reg_mr(id->pd, verdict, sizeof(verdict), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr && vmr, "the MRs");
	if (!mr || !vmr)
		return 1;
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)vi_pattern(i);
	CHECK(rdma_post_recv(id, NULL, verdict, sizeof(verdict), vmr) == 0,
	      "a receive for the peer's offer");
	CHECK(rdma_connect(id, &cp) == 0, "rdma_connect");
	ev = expect_event(ec, RDMA_CM_EVENT_ESTABLISHED);
	if (!ev || ev->event != RDMA_CM_EVENT_ESTABLISHED)
		return 1;
	rdma_ack_cm_event(ev);
	/* the responder sends nothing before the initiator's first FPDU */
	CHECK(rdma_post_send(id, (void *)5, buf, 1, mr, IBV_SEND_SIGNALED) == 0,
	      "the first message");
	CHECK(poll_one(id->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 5, "completed");
	CHECK(poll_one(id->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
	      wc.byte_len == sizeof(offer), "the peer offers an STag");
	if (wc.byte_len != sizeof(offer))
		return 1;
	memcpy(&offer, verdict, sizeof(offer));
	CHECK(rdma_post_recv(id, NULL, verdict, sizeof(verdict), vmr) == 0,
	      "a receive for the verdict");
	CHECK(offer.len == sizeof(buf), "of %u bytes", offer.len);
	CHECK(rdma_post_write(id, (void *)1, buf, sizeof(buf), mr, IBV_SEND_SIGNALED,
			      offer.iova, offer.stag) == 0, "an RDMA Write through it");
	CHECK(poll_one(id->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RDMA_WRITE, "completed");
	{
		struct ibv_send_wr wr = { .wr_id = 2, .opcode = IBV_WR_SEND_WITH_INV,
					  .send_flags = IBV_SEND_SIGNALED,
					  .invalidate_rkey = offer.stag }, *bad;

		/* rdma-core's libsiw takes the STag from wr.rdma.rkey instead */
		wr.wr.rdma.rkey = offer.stag;

		CHECK(ibv_post_send(id->qp, &wr, &bad) == 0, "IBV_WR_SEND_WITH_INV of the STag");
		CHECK(poll_one(id->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
		      wc.wr_id == 2 && wc.opcode == IBV_WC_SEND,
		      "completed as IBV_WC_SEND (%s)", ibv_wc_status_str(wc.status));
	}
	CHECK(poll_one(id->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS && verdict[0] == 1,
	      "the peer saw the invalidation and every byte (verdict %d)", verdict[0]);
	if (local_inv) {
		/* a plain MR cannot be invalidated: a local protection error */
		struct ibv_send_wr wr = { .wr_id = 3, .opcode = IBV_WR_LOCAL_INV,
					  .send_flags = IBV_SEND_SIGNALED,
					  .invalidate_rkey = mr->rkey }, *bad;

		CHECK(ibv_post_send(id->qp, &wr, &bad) == 0, "IBV_WR_LOCAL_INV of a plain MR");
		CHECK(poll_one(id->send_cq, &wc) == 1 && wc.wr_id == 3 &&
		      wc.status == IBV_WC_LOC_PROT_ERR,
		      "completes with a local protection error (%s)", ibv_wc_status_str(wc.status));
	}
	rdma_disconnect(id);
	rdma_destroy_qp(id);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(vmr);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ec);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "local"))
		local_checks();
	else if (argc == 5 && !strcmp(argv[1], "server") && !strcmp(argv[3], "-p"))
		server(argv[2], argv[4]);
	else if (argc == 5 && !strcmp(argv[1], "client") && !strcmp(argv[3], "-p"))
		client(argv[2], argv[4]);
	else if (argc == 5 && !strcmp(argv[1], "inv") && !strcmp(argv[3], "-p"))
		inv_client(argv[2], argv[4], 0);
	else if (argc == 5 && !strcmp(argv[1], "inv+local") && !strcmp(argv[3], "-p"))
		inv_client(argv[2], argv[4], 1);
	else {
		fprintf(stderr, "usage: %s local | {server|client|inv|inv+local} ADDR -p PORT\n",
			argv[0]);
		return 2;
	}
	return failures ? 1 : 0;
}
