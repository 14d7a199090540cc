// SPDX-License-Identifier: GPL-2.0
/*
 * Error paths of the verbs and rdma_cm API, as rdma-core documents them.
 * Built against rdma-core (-libverbs -lrdmacm) and run by verbs_test.sh
 * through libviaduct-verbs' drop-in directory, so the binary is the same
 * one that would run on any rdma-core device.
 *
 *   verbs_err local            destroy order, access rules, bad WRs,
 *                              unsupported objects, event acknowledgement
 *   verbs_err post             posting and polling on QPs in Error (viaduct
 *                              only: its QPs take WRs before the CM): a full
 *                              queue, lists past the face's batch, inline
 *                              data, bad WRs in lists at bad_wr, qp_num of
 *                              each completion, across QPs destroyed and
 *                              their handles given to new ones
 *   verbs_err server ADDR -p PORT  accepts, posts receives, expects the peer's
 *                              disconnect: DISCONNECTED and flushed receives
 *   verbs_err client ADDR -p PORT  connects, sends one message, disconnects
 *   verbs_err refused ADDR -p PORT perftest's client retry: refused
 *                              connects, QPs and ids destroyed and made anew
 *   verbs_err stale ADDR -p PORT   perftest 4.5-0.17's client retry: after a
 *                              refused connect, calls on the destroyed id,
 *                              channel and event get EINVAL (viaduct only:
 *                              rdma-core reads through them); synchronous
 *                              ids and rdma_create_ep() refused too
 *
 * Prints "ok"/"not ok" lines for each check (TAP-style comments for the
 * caller) and exits non-zero if any failed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <fcntl.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

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
	static char buf[65536];
	struct ibv_context *ctx = open_first();
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	int ret;

	CHECK(ctx != NULL, "a device opens");
	if (!ctx)
		return 1;
	CHECK(ctx->device->node_type == IBV_NODE_RNIC &&
	      ctx->device->transport_type == IBV_TRANSPORT_IWARP,
	      "the device is an iWARP RNIC");
	CHECK(ibv_query_device(ctx, &da) == 0 && da.max_qp > 0 && da.max_cqe > 0 &&
	      da.phys_port_cnt == 1 && da.atomic_cap == IBV_ATOMIC_NONE,
	      "ibv_query_device: limits, one port, no atomics");
	CHECK(ibv_query_port(ctx, 1, &pa) == 0 && pa.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "ibv_query_port (the header's inline): Ethernet link layer");
	errno = 0;
	CHECK(ibv_query_port(ctx, 2, &pa) != 0, "ibv_query_port of port 2 fails");
	{
		union ibv_gid gid;
		__be64 guid = da.node_guid;

		/* iWARP: the GID is the MAC, the GUID the MAC and two zero bytes */
		CHECK(ibv_query_gid(ctx, 1, 0, &gid) == 0 && memcmp(gid.raw, &guid, 6) == 0 &&
		      ibv_get_device_guid(ctx->device) == guid,
		      "ibv_query_gid: the MAC, as in the node GUID");
		CHECK(ibv_query_gid(ctx, 1, 1, &gid) != 0, "ibv_query_gid of index 1 fails");
	}

	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "ibv_alloc_pd");
	errno = 0;
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr == NULL && errno == EINVAL, "remote write without local write: EINVAL");
	errno = 0;
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(mr == NULL && errno == EOPNOTSUPP, "remote atomic access: EOPNOTSUPP");
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(mr != NULL && mr->lkey == mr->rkey && mr->addr == buf,
	      "ibv_reg_mr: one STag as lkey and rkey");
	ret = ibv_dealloc_pd(pd);
	CHECK(ret == EBUSY, "ibv_dealloc_pd with a live MR: EBUSY (%d)", ret);

	ch = ibv_create_comp_channel(ctx);
	CHECK(ch != NULL, "ibv_create_comp_channel");
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	CHECK(cq != NULL && cq->cqe >= 16, "ibv_create_cq: at least 16 entries");
	errno = 0;
	CHECK(ibv_create_cq(ctx, 16, NULL, ch, 5) == NULL && errno == EINVAL,
	      "ibv_create_cq on a vector the device does not have: EINVAL");
	CHECK(ibv_resize_cq(cq, 64) == 0 && cq->cqe >= 64, "ibv_resize_cq to 64");

	/* a non-blocking channel with no event answers EAGAIN */
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	{
		struct ibv_cq *ecq;
		void *ectx;

		errno = 0;
		CHECK(ibv_get_cq_event(ch, &ecq, &ectx) == -1 && errno == EAGAIN,
		      "ibv_get_cq_event on an empty non-blocking channel: EAGAIN");
	}
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "ibv_req_notify_cq (the header's inline)");

	{
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		errno = 0;
		CHECK(ibv_create_qp(pd, &ia) == NULL && errno == EOPNOTSUPP,
		      "a UD QP: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_alloc_mw(pd, IBV_MW_TYPE_1) == NULL, "a memory window: refused");
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_sge = 2;
		ia.cap.max_inline_data = 0;
		qp = ibv_create_qp(pd, &ia);
		CHECK(qp != NULL && ia.cap.max_send_wr >= 4 && qp->state == IBV_QPS_RESET,
		      "an RC QP, in RESET");
	}
	if (qp) {
		struct ibv_sge sge[8];
		struct ibv_recv_wr r[2], *rbad = NULL;
		struct ibv_send_wr s[2], *sbad = NULL;
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;
		int i;

		for (i = 0; i < 8; i++)
			sge[i] = (struct ibv_sge){ (uintptr_t)buf + 64 * i, 64, mr->lkey };
		memset(r, 0, sizeof(r));
		r[0] = (struct ibv_recv_wr){ .wr_id = 1, .next = &r[1], .sg_list = sge, .num_sge = 1 };
		r[1] = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = sge, .num_sge = 8 };
		ret = ibv_post_recv(qp, r, &rbad);
		CHECK(ret == EINVAL && rbad == &r[1],
		      "ibv_post_recv: a WR with more SGEs than the QP takes is EINVAL at bad_wr (%d)", ret);

		memset(s, 0, sizeof(s));
		s[0] = (struct ibv_send_wr){ .wr_id = 3, .next = &s[1], .sg_list = sge, .num_sge = 1,
					     .opcode = IBV_WR_SEND };
		s[1] = (struct ibv_send_wr){ .wr_id = 4, .sg_list = sge, .num_sge = 1,
					     .opcode = IBV_WR_ATOMIC_CMP_AND_SWP };
		ret = ibv_post_send(qp, &s[1], &sbad);
		CHECK(ret == EINVAL && sbad == &s[1], "ibv_post_send of an atomic: EINVAL at bad_wr");
		s[1].opcode = IBV_WR_SEND;
		s[1].send_flags = IBV_SEND_INLINE;
		s[1].num_sge = 1;
		ret = ibv_post_send(qp, &s[1], &sbad);
		CHECK(ret == EINVAL && sbad == &s[1],
		      "ibv_post_send inline beyond max_inline_data: EINVAL at bad_wr");

		CHECK(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_RESET &&
		      qi.send_cq == cq, "ibv_query_qp: RESET, its CQ");
		qa.qp_state = IBV_QPS_INIT;
		qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) == 0 &&
		      qp->state == IBV_QPS_INIT, "ibv_modify_qp to INIT with remote access");

		ret = ibv_destroy_cq(cq);
		CHECK(ret == EBUSY, "ibv_destroy_cq under a QP: EBUSY (%d)", ret);
		CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp");
	}
	errno = 0;
	CHECK(ibv_destroy_comp_channel(ch) != 0 && errno == EBUSY,
	      "ibv_destroy_comp_channel under a CQ: EBUSY");
	CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel");
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd once its MR is gone");
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");

	CHECK(strcmp(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error") == 0 &&
	      strcmp(ibv_node_type_str(IBV_NODE_RNIC), "iWARP NIC") == 0,
	      "the *_str helpers");
	return 0;
}

/* --- two hosts ---------------------------------------------------------- */

struct destroy_arg {
	struct rdma_cm_id *id;
	volatile int done;
};

static void *destroy_thread(void *p)
{
	struct destroy_arg *a = p;

	rdma_destroy_id(a->id);
	a->done = 1;
	return NULL;
}

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

#define NRECV 4
#define NTAIL 2 /* messages the client sends right before it disconnects */

static int server(const char *addr, const char *port)
{
	static char buf[NRECV][256];
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct rdma_cm_id *listen, *id;
	struct rdma_cm_event *ev;
	struct sockaddr_storage ss;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = NRECV,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc[NRECV + 1];
	int i, n = 0, flushed = 0, got = 0, tries, tail = 0;
	struct destroy_arg da;
	pthread_t t;

	CHECK(ec && resolve(addr, port, 1, &ss) == 0, "event channel, address");
	CHECK(rdma_create_id(ec, &listen, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	CHECK(rdma_bind_addr(listen, (struct sockaddr *)&ss) == 0 && listen->verbs,
	      "rdma_bind_addr picks the device that has the address");
	CHECK(rdma_listen(listen, 1) == 0, "rdma_listen");
	ev = expect_event(ec, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		return 1;
	CHECK(ev->param.conn.private_data_len >= 5 &&
	      memcmp(ev->param.conn.private_data, "hello", 5) == 0,
	      "the request carries the client's private data");
	id = ev->id;
	rdma_ack_cm_event(ev);

	pd = ibv_alloc_pd(id->verbs);
	cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = ia.recv_cq = cq;
	CHECK(pd && cq && mr && rdma_create_qp(id, pd, &ia) == 0, "PD, CQ, MR, rdma_create_qp");
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { (uintptr_t)buf[i], sizeof(buf[i]), mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		CHECK(ibv_post_recv(id->qp, &wr, &bad) == 0, "receive %d posted", i);
	}
	CHECK(rdma_accept(id, NULL) == 0, "rdma_accept");
	ev = expect_event(ec, RDMA_CM_EVENT_ESTABLISHED);
	if (ev)
		rdma_ack_cm_event(ev);
	/* the client sends one message; the reply tells it that it arrived */
	for (tries = 0; tries < 1000 && !got; tries++) {
		int k = ibv_poll_cq(cq, 1, wc);

		if (k == 1)
			got = wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV &&
			      wc[0].byte_len == 64 && !strcmp(buf[0], "one message") ? 1 : -1;
		else
			usleep(10000);
	}
	CHECK(got == 1, "the client's message arrived in the first receive");
	{
		struct ibv_sge sge = { (uintptr_t)buf[0], 8, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 100, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		CHECK(ibv_post_send(id->qp, &wr, &bad) == 0, "the reply posted");
	}
	/*
	 * then the client sends NTAIL messages and disconnects as soon as they
	 * completed on its side: they must complete here before the receives
	 * still posted are flushed, the close behind them notwithstanding
	 */
	ev = expect_event(ec, RDMA_CM_EVENT_DISCONNECTED);
	/* destroy_id waits until the DISCONNECTED event is acknowledged */
	da.id = id;
	da.done = 0;
	if (ev) {
		/* reap first: the QP goes with the id's owner, not the id */
		int send_ok = 0, others = 0;

		for (tries = 0; tries < 500 && n < NRECV; tries++) {
			int k = ibv_poll_cq(cq, NRECV + 1, wc);

			for (i = 0; i < k; i++) {
				if (wc[i].wr_id == 100)
					send_ok = wc[i].status == IBV_WC_SUCCESS;
				else if (wc[i].status == IBV_WC_SUCCESS && !flushed &&
					 wc[i].byte_len == 64 && !strcmp(buf[wc[i].wr_id], "tail"))
					tail++, n++;
				else if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
					flushed++, n++;
				else
					others++, n++;
			}
			if (n < NRECV - 1)
				usleep(10000);
			else
				break;
		}
		CHECK(send_ok && tail == NTAIL && flushed == NRECV - 1 - NTAIL && !others,
		      "the reply completed, the %d messages sent right before the close arrived, "
		      "the other %d receives flushed (arrived %d, flushed %d, others %d)",
		      NTAIL, NRECV - 1 - NTAIL, tail, flushed, others);
		rdma_destroy_qp(id);
		pthread_create(&t, NULL, destroy_thread, &da);
		usleep(200000);
		CHECK(!da.done, "rdma_destroy_id waits while an event is unacknowledged");
		rdma_ack_cm_event(ev);
		pthread_join(t, NULL);
		CHECK(da.done, "and returns once it is acknowledged");
	}
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(ec);
	return 0;
}

static int client(const char *addr, const char *port)
{
	static char msg[64] = "one message";
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_storage ss;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1,
						.max_inline_data = 64 } };
	struct rdma_conn_param cp = { .private_data = "hello", .private_data_len = 5,
				      .responder_resources = 1, .initiator_depth = 1 };
	struct ibv_send_wr wr = { .wr_id = 7, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE }, *bad;
	struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), 0 };
	struct ibv_wc wc;
	static char reply[64];
	struct ibv_sge rsge;
	struct ibv_recv_wr rwr = { .wr_id = 8, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_mr *mr;
	int tries, n = 0;

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
	{
		uint8_t timeout = 14;

		/* accepted on every iWARP device, used only by IB and RoCE */
		CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout,
				      sizeof(timeout)) == 0,
		      "rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)");
	}
	CHECK(rdma_create_qp(id, NULL, &ia) == 0 && id->send_cq && id->recv_cq,
	      "rdma_create_qp without CQs makes them on the id");
	mr = ibv_reg_mr(id->pd, reply, sizeof(reply), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL, "ibv_reg_mr on the PD rdma_create_qp made");
	if (!mr)
		return 1;
	rsge = (struct ibv_sge){ (uintptr_t)reply, sizeof(reply), mr->lkey };
	CHECK(ibv_post_recv(id->qp, &rwr, &rbad) == 0, "a receive for the reply");
	CHECK(rdma_connect(id, &cp) == 0, "rdma_connect with private data");
	ev = expect_event(ec, RDMA_CM_EVENT_ESTABLISHED);
	if (!ev)
		return 1;
	rdma_ack_cm_event(ev);
	CHECK(rdma_get_dst_port(id) == htons(atoi(port)), "rdma_get_dst_port");
	wr.sg_list = &sge;
	wr.num_sge = 1;
	CHECK(ibv_post_send(id->qp, &wr, &bad) == 0, "an inline Send posted");
	for (tries = 0; tries < 500 && n == 0; tries++) {
		n = ibv_poll_cq(id->send_cq, 1, &wc);
		if (n == 0)
			usleep(10000);
	}
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7 && wc.opcode == IBV_WC_SEND &&
	      wc.qp_num == id->qp->qp_num, "its completion: success, IBV_WC_SEND, the QP's number");
	n = 0;
	for (tries = 0; tries < 1000 && n == 0; tries++) {
		n = ibv_poll_cq(id->recv_cq, 1, &wc);
		if (n == 0)
			usleep(10000);
	}
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV,
	      "the server's reply");
	/* NTAIL more, and the close right behind them */
	strcpy(msg, "tail");
	tries = 0;
	for (int k = 0; k < NTAIL; k++) {
		wr.wr_id = 20 + k;
		CHECK(ibv_post_send(id->qp, &wr, &bad) == 0, "tail message %d posted", k);
	}
	for (int k = 0; k < NTAIL;) {
		n = ibv_poll_cq(id->send_cq, 1, &wc);
		if (n == 1) {
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)(20 + k),
			      "tail message %d completed", k);
			k++;
		} else if (n < 0 || ++tries > 2000) {
			CHECK(0, "tail messages complete");
			break;
		} else {
			usleep(1000);
		}
	}
	CHECK(rdma_disconnect(id) == 0, "rdma_disconnect right behind them");
	ev = expect_event(ec, RDMA_CM_EVENT_DISCONNECTED);
	if (ev)
		rdma_ack_cm_event(ev);
	rdma_destroy_qp(id);
	ibv_dereg_mr(mr);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ec);
	return 0;
}

/*
 * perftest's client retry (rdma_cm_client_connection()): connect, be
 * refused, destroy the QP and the id, make new ones on the same PD and CQs
 * and connect again. Nobody listens on @port.
 */
static int refused(const char *addr, const char *port)
{
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct sockaddr_storage ss;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	int round;

	CHECK(ec && resolve(addr, port, 0, &ss) == 0, "event channel, address");
	for (round = 0; round < 4; round++) {
		struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
							.max_send_sge = 1, .max_recv_sge = 1 } };
		struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
					      .retry_count = 7, .rnr_retry_count = 7 };
		struct rdma_cm_id *id;
		struct ibv_qp *qp;

		CHECK(rdma_create_id(ec, &id, NULL, RDMA_PS_TCP) == 0, "round %d: rdma_create_id",
		      round);
		CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000) == 0,
		      "rdma_resolve_addr");
		ev = expect_event(ec, RDMA_CM_EVENT_ADDR_RESOLVED);
		if (!ev)
			return 1;
		rdma_ack_cm_event(ev);
		CHECK(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route");
		ev = expect_event(ec, RDMA_CM_EVENT_ROUTE_RESOLVED);
		if (!ev)
			return 1;
		rdma_ack_cm_event(ev);
		if (!pd) {
			pd = ibv_alloc_pd(id->verbs);
			cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
			CHECK(pd && cq, "PD and CQ, kept across the rounds");
			if (!pd || !cq)
				return 1;
		}
		ia.send_cq = ia.recv_cq = cq;
		CHECK(rdma_create_qp(id, pd, &ia) == 0, "rdma_create_qp");
		qp = id->qp;
		/* siw refuses in the call, viaduct with an event, as rdma_cm allows */
		if (rdma_connect(id, &cp) == 0) {
			ev = expect_event(ec, RDMA_CM_EVENT_REJECTED);
			if (ev) {
				CHECK(ev->status == -ECONNREFUSED, "refused (status %d)",
				      ev->status);
				rdma_ack_cm_event(ev);
			}
		} else {
			CHECK(errno == ECONNREFUSED, "rdma_connect: ECONNREFUSED");
		}
		if (round & 1) {
			CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp after the refusal");
			id->qp = NULL;
		} else {
			rdma_destroy_qp(id);
		}
		CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id after the refusal");
	}
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0,
	      "the CQ and PD free once the QPs are gone");
	rdma_destroy_event_channel(ec);
	return 0;
}

/*
 * perftest 4.5-0.17's client retry (rdma_cm_client_connection() of that
 * release): after a refused connect it destroys the id (its QP stays),
 * the event channel and the array that held the id, then resolves and
 * destroys the id again through that array. libviaduct-verbs answers
 * calls on destroyed ids, channels and events with EINVAL rather than
 * reading through them (rdma-core does read through them). Also: an id
 * without a channel (synchronous) and rdma_create_ep() against @port,
 * where nobody listens.
 */
static int stale(const char *addr, const char *port)
{
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res = NULL;
	struct rdma_cm_event *ev, *dead_ev;
	struct rdma_cm_id *id, *sid, *ep;
	struct sockaddr_storage ss;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	/* not an id, a channel or an event: the library must not read it */
	void *wild = (void *)(uintptr_t)0x55d00000a;
	long junk[8] = { 0 };

	CHECK(ec && resolve(addr, port, 0, &ss) == 0, "event channel, address");
	if (!ec || rdma_create_id(ec, &id, NULL, RDMA_PS_TCP)) {
		CHECK(0, "rdma_create_id");
		return 1;
	}
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
	pd = ibv_alloc_pd(id->verbs);
	cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	CHECK(pd && cq, "PD and CQ");
	if (!pd || !cq)
		return 1;
	ia.send_cq = cq;
	ia.recv_cq = cq;
	CHECK(rdma_create_qp(id, pd, &ia) == 0, "rdma_create_qp");
	qp = id->qp;
	CHECK(rdma_connect(id, &cp) == 0, "rdma_connect");
	ev = expect_event(ec, RDMA_CM_EVENT_REJECTED);
	if (!ev)
		return 1;
	CHECK(ev->status == -ECONNREFUSED, "refused (status %d)", ev->status);
	dead_ev = ev;
	CHECK(rdma_ack_cm_event(ev) == 0, "rdma_ack_cm_event");
	errno = 0;
	CHECK(rdma_ack_cm_event(dead_ev) == -1 && errno == EINVAL,
	      "rdma_ack_cm_event of that event again: EINVAL");

	/* perftest's rdma_cm_destroy_cma(): the id with its QP, the channel */
	CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id of the refused id (its QP stays)");
	rdma_destroy_event_channel(ec);

	/* its retry, through what it destroyed */
	errno = 0;
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000) == -1 && errno == EINVAL,
	      "rdma_resolve_addr of the destroyed id: EINVAL");
	errno = 0;
	CHECK(rdma_resolve_addr(wild, NULL, (struct sockaddr *)&ss, 2000) == -1 && errno == EINVAL,
	      "rdma_resolve_addr of a pointer that never was an id: EINVAL");
	errno = 0;
	CHECK(rdma_connect((struct rdma_cm_id *)junk, &cp) == -1 && errno == EINVAL,
	      "rdma_connect of zeroed memory: EINVAL");
	errno = 0;
	CHECK(rdma_destroy_id(id) == -1 && errno == EINVAL,
	      "rdma_destroy_id of the destroyed id: EINVAL");
	errno = 0;
	CHECK(rdma_destroy_id(wild) == -1 && errno == EINVAL,
	      "rdma_destroy_id of a wild pointer: EINVAL");
	errno = 0;
	CHECK(rdma_get_cm_event(ec, &ev) == -1 && errno == EINVAL,
	      "rdma_get_cm_event on the destroyed channel: EINVAL");
	errno = 0;
	CHECK(rdma_create_id(ec, &sid, NULL, RDMA_PS_TCP) == -1 && errno == EINVAL,
	      "rdma_create_id on the destroyed channel: EINVAL");
	rdma_destroy_event_channel(ec);
	rdma_destroy_event_channel(wild);
	rdma_destroy_qp(id);
	CHECK(1, "rdma_destroy_event_channel, rdma_destroy_qp of destroyed, wild pointers return");

	/* The QP outlives its id, as on rdma-core; then CQ and PD go. */
	CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp of the destroyed id's QP");
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0, "the CQ and PD free");

	/* A synchronous id (no channel): each call waits for its event. */
	CHECK(rdma_create_id(NULL, &sid, NULL, RDMA_PS_TCP) == 0,
	      "rdma_create_id without a channel");
	CHECK(rdma_resolve_addr(sid, NULL, (struct sockaddr *)&ss, 2000) == 0,
	      "synchronous rdma_resolve_addr");
	CHECK(rdma_resolve_route(sid, 2000) == 0, "synchronous rdma_resolve_route");
	ia.send_cq = NULL;
	ia.recv_cq = NULL;
	CHECK(rdma_create_qp(sid, NULL, &ia) == 0, "rdma_create_qp with the id's own PD and CQs");
	errno = 0;
	CHECK(rdma_connect(sid, &cp) == -1 && errno == ECONNREFUSED,
	      "synchronous rdma_connect: -1, ECONNREFUSED");
	rdma_destroy_qp(sid);
	CHECK(rdma_destroy_id(sid) == 0, "rdma_destroy_id of the synchronous id");

	/*
	 * rdma_create_ep(): a synchronous id, route and QP in one call (the
	 * CQs rdma_create_qp() wrote back into @ia went with the id's QP)
	 */
	ia.send_cq = NULL;
	ia.recv_cq = NULL;
	if (rdma_getaddrinfo(addr, port, &hints, &res)) {
		CHECK(0, "rdma_getaddrinfo");
		return 1;
	}
	CHECK(rdma_create_ep(&ep, res, NULL, &ia) == 0, "rdma_create_ep");
	rdma_freeaddrinfo(res);
	errno = 0;
	CHECK(rdma_connect(ep, NULL) == -1 && errno == ECONNREFUSED,
	      "rdma_connect of the endpoint: -1, ECONNREFUSED");
	rdma_destroy_ep(ep);
	return 0;
}

/* --- posting and polling on QPs in Error --------------------------------- */

/*
 * Takes @want completions from @cq into @wc (a flush completes in the call
 * that caused it, so they are there at once; a few retries for safety);
 * returns how many came, and one more call must find none.
 */
static int take(struct ibv_cq *cq, struct ibv_wc *wc, int want)
{
	struct ibv_wc extra;
	int got = 0, tries = 0, n;

	while (got < want && tries++ < 100) {
		n = ibv_poll_cq(cq, want - got, wc + got);
		if (n < 0)
			return -1;
		if (n == 0)
			usleep(1000);
		got += n;
	}
	if (ibv_poll_cq(cq, 1, &extra) != 0)
		return -1;
	return got;
}

/* @n flushed completions of @qp, with wr_ids @first, @first + 1, ... */
static int flushed(const struct ibv_wc *wc, int n, const struct ibv_qp *qp, uint64_t first)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].wr_id != first + i || wc[i].status != IBV_WC_WR_FLUSH_ERR ||
		    wc[i].qp_num != qp->qp_num)
			return 0;
	return 1;
}

static int to_error(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

#define PDEPTH 32	/* send queue of the QPs */
#define NLIST 20	/* a list longer than the face's batch of 16 */

/*
 * The data path of the face without a peer: a QP in Error completes every
 * WR it takes as flushed, in order, so what was posted and what the
 * completions say can be compared exactly.
 */
static int post_checks(void)
{
	static char buf[4096];
	struct ibv_context *ctx = open_first(), *ctx2;
	struct ibv_qp_init_attr ia2, ia = { .qp_type = IBV_QPT_RC,
					    .cap = { .max_send_wr = PDEPTH, .max_recv_wr = 4,
						     .max_send_sge = 4, .max_recv_sge = 1,
						     .max_inline_data = 64 } };
	struct ibv_wc wc[4 * PDEPTH];
	struct ibv_send_wr s[NLIST], one, *bad;
	struct ibv_sge sge[4];
	struct ibv_cq *cq, *cq2, *cq3;
	struct ibv_qp *qa, *qb, *qx, *qy, *qz, *p1, *p2;
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr;
	uint32_t handle, xnum, inl;
	int i, n, ret;

	CHECK(ctx, "a device opens");
	if (!ctx)
		return 1;
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	cq = ibv_create_cq(ctx, 4 * PDEPTH, NULL, NULL, 0);
	cq2 = ibv_create_cq(ctx, 4 * PDEPTH, NULL, NULL, 0);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qa = pd && cq ? ibv_create_qp(pd, &ia) : NULL;
	qb = pd && cq ? ibv_create_qp(pd, &ia) : NULL;
	/* the QP may take more inline data than asked for: its slots' room */
	inl = ia.cap.max_inline_data;
	CHECK(mr && cq2 && qa && qb && inl >= 64 && inl < 1024,
	      "PD, MR, two CQs, two QPs (%u bytes inline)", inl);
	if (!mr || !cq2 || !qa || !qb || inl < 64 || inl >= 1024)
		return 1;
	for (i = 0; i < 4; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)buf + 16 * i, 8, mr->lkey };
	memset(&one, 0, sizeof(one));
	one.sg_list = sge;
	one.num_sge = 1;
	one.opcode = IBV_WR_SEND;
	one.send_flags = IBV_SEND_SIGNALED;

	/*
	 * A QP before the CM takes WRs as far as its queue goes (the kernel's
	 * queue, then the ring); the next is ENOMEM at bad_wr, one WR or a list.
	 */
	for (n = 0, ret = 0; n < 4 * PDEPTH; n++) {
		one.wr_id = n;
		bad = NULL;
		ret = ibv_post_send(qa, &one, &bad);
		if (ret)
			break;
	}
	CHECK(ret == ENOMEM && bad == &one && n >= PDEPTH && n < 4 * PDEPTH,
	      "a full send queue: ENOMEM at bad_wr after %d WRs (%d)", n, ret);
	s[0] = one;
	s[0].next = &s[1];
	s[1] = one;
	bad = NULL;
	ret = ibv_post_send(qa, s, &bad);
	CHECK(ret == ENOMEM && bad == &s[0], "a list on the full queue: ENOMEM at its first WR");
	CHECK(to_error(qa) == 0, "the QP to Error");
	CHECK(take(cq, wc, n) == n && flushed(wc, n, qa, 0),
	      "every WR taken before completes flushed, in order, with the QP's number");

	/* One WR at a time on two QPs of one CQ: each completion names its QP. */
	CHECK(to_error(qb) == 0, "a second QP on the CQ to Error");
	for (i = 0; i < 6; i++) {
		struct ibv_qp *q = i % 3 == 1 ? qb : qa;

		one.wr_id = 100 + i;
		one.send_flags = i % 2 ? IBV_SEND_SIGNALED | IBV_SEND_INLINE : 0;
		ret = ibv_post_send(q, &one, &bad);
		if (ret || take(cq, wc, 1) != 1 || !flushed(wc, 1, q, 100 + i))
			break;
	}
	CHECK(i == 6, "single posts alternating between the QPs: each completion names its QP");

	/*
	 * A list longer than a batch: SGE lists, inline data of one and of
	 * several SGEs, immediate data; all posted, in order.
	 */
	for (i = 0; i < NLIST; i++) {
		s[i] = (struct ibv_send_wr){ .wr_id = 200 + i, .next = &s[i + 1], .sg_list = sge,
					     .num_sge = 1 + i % 4, .opcode = IBV_WR_SEND,
					     .send_flags = IBV_SEND_SIGNALED };
		if (i % 3 == 1)
			s[i].send_flags |= IBV_SEND_INLINE;
		if (i % 5 == 2) {
			s[i].opcode = IBV_WR_SEND_WITH_IMM;
			s[i].imm_data = htonl(i);
		}
	}
	s[NLIST - 1].next = NULL;
	bad = NULL;
	ret = ibv_post_send(qa, s, &bad);
	CHECK(ret == 0 && !bad, "a list of %d WRs, some inline: posted (%d)", NLIST, ret);
	CHECK(take(cq, wc, NLIST) == NLIST && flushed(wc, NLIST, qa, 200),
	      "%d completions, in order, with the QP's number", NLIST);

	/* A bad WR in a list: the ones before it are posted, it is bad_wr. */
	for (i = 0; i < 3; i++) {
		s[i] = one;
		s[i].wr_id = 300 + i;
		s[i].send_flags = IBV_SEND_SIGNALED;
		s[i].next = i < 2 ? &s[i + 1] : NULL;
	}
	s[2].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	ret = ibv_post_send(qa, s, &bad);
	CHECK(ret == EINVAL && bad == &s[2] && take(cq, wc, 2) == 2 && flushed(wc, 2, qa, 300),
	      "an atomic third in a list: EINVAL at it, the two before it complete");
	s[2].opcode = IBV_WR_SEND;
	s[1].send_flags |= IBV_SEND_INLINE;
	s[1].num_sge = 4;
	sge[3].length = inl + 1 - 24; /* one byte beyond max_inline_data */
	ret = ibv_post_send(qa, s, &bad);
	CHECK(ret == EINVAL && bad == &s[1] && take(cq, wc, 1) == 1 && flushed(wc, 1, qa, 300),
	      "too much inline data second in a list: EINVAL at it, the first completes");
	one.wr_id = 400;
	one.send_flags = IBV_SEND_INLINE;
	one.sg_list = &sge[3];
	sge[3].length = inl + 1;
	ret = ibv_post_send(qa, &one, &bad);
	CHECK(ret == EINVAL && bad == &one && take(cq, wc, 1) == 0,
	      "one WR of one SGE, a byte beyond max_inline_data: EINVAL at it, nothing completes");
	one.sg_list = sge;
	one.send_flags = IBV_SEND_SIGNALED;

	/*
	 * The kernel gives a destroyed QP's handle to the next object made in
	 * the context, and its number (one space for the whole host) to the
	 * next QP made anywhere: QPs of a second context take the numbers
	 * here, so that x, y and z share a handle and have numbers of their
	 * own. A QP destroyed with completions unread leaves them in its CQ;
	 * y, made since on another CQ with x's handle, is not theirs; z, made
	 * on the first CQ with the handle again, gets its own number.
	 */
	ctx2 = open_first();
	pd2 = ctx2 ? ibv_alloc_pd(ctx2) : NULL;
	cq3 = ctx2 ? ibv_create_cq(ctx2, 16, NULL, NULL, 0) : NULL;
	CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0 && pd2 && cq3,
	      "both QPs destroyed; a second context, with a PD and a CQ");
	if (!pd2 || !cq3)
		return 1;
	ia2 = ia;
	ia2.send_cq = cq3;
	ia2.recv_cq = cq3;
	qx = ibv_create_qp(pd, &ia);
	CHECK(qx && to_error(qx) == 0, "QP x on the first CQ, in Error");
	if (!qx)
		return 1;
	handle = qx->handle;
	xnum = qx->qp_num;
	ret = 0;
	for (i = 0; i < 3; i++) {
		one.wr_id = 500 + i;
		ret |= ibv_post_send(qx, &one, &bad);
	}
	CHECK(ret == 0 && ibv_poll_cq(cq, 1, wc) == 1 && flushed(wc, 1, qx, 500),
	      "three WRs on x, one completion taken");
	CHECK(ibv_destroy_qp(qx) == 0, "x destroyed with two completions unread");
	p1 = ibv_create_qp(pd2, &ia2);
	ia.send_cq = cq2;
	ia.recv_cq = cq2;
	qy = ibv_create_qp(pd, &ia);
	CHECK(p1 && qy && qy->handle == handle && qy->qp_num != xnum,
	      "QP y on the second CQ: x's handle %u, number %u (x had %u)", qy ? qy->handle : 0,
	      qy ? qy->qp_num : 0, xnum);
	if (!p1 || !qy)
		return 1;
	n = ibv_poll_cq(cq, 2, wc);
	CHECK(n == 2 && wc[0].wr_id == 501 && wc[1].wr_id == 502 && wc[0].qp_num == 0 &&
	      wc[1].qp_num == 0,
	      "x's completions left in the first CQ name no QP, not y (qp_num %u, %u)",
	      n > 0 ? wc[0].qp_num : 0, n > 1 ? wc[1].qp_num : 0);
	CHECK(ibv_destroy_qp(qy) == 0, "y destroyed");
	p2 = ibv_create_qp(pd2, &ia2);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qz = ibv_create_qp(pd, &ia);
	CHECK(p2 && qz && to_error(qz) == 0 && qz->handle == handle && qz->qp_num != xnum &&
	      qz->qp_num != qy->qp_num,
	      "QP z on the first CQ, in Error: x's handle %u, number %u", qz ? qz->handle : 0,
	      qz ? qz->qp_num : 0);
	if (!p2 || !qz)
		return 1;
	one.wr_id = 600;
	CHECK(ibv_post_send(qz, &one, &bad) == 0 && take(cq, wc, 1) == 1 && flushed(wc, 1, qz, 600),
	      "z's completion names z (qp_num %u)", wc[0].qp_num);

	CHECK(ibv_destroy_qp(qz) == 0 && ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(cq2) == 0 &&
	      ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0,
	      "everything destroyed");
	CHECK(ibv_destroy_qp(p1) == 0 && ibv_destroy_qp(p2) == 0 && ibv_destroy_cq(cq3) == 0 &&
	      ibv_dealloc_pd(pd2) == 0 && ibv_close_device(ctx2) == 0,
	      "the second context's too");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "local"))
		local_checks();
	else if (argc == 2 && !strcmp(argv[1], "post"))
		post_checks();
	else if (argc == 5 && !strcmp(argv[1], "server") && !strcmp(argv[3], "-p"))
		server(argv[2], argv[4]);
	else if (argc == 5 && !strcmp(argv[1], "client") && !strcmp(argv[3], "-p"))
		client(argv[2], argv[4]);
	else if (argc == 5 && !strcmp(argv[1], "refused") && !strcmp(argv[3], "-p"))
		refused(argv[2], argv[4]);
	else if (argc == 5 && !strcmp(argv[1], "stale") && !strcmp(argv[3], "-p"))
		stale(argv[2], argv[4]);
	else {
		fprintf(stderr,
			"usage: %s local | post | {server|client|refused|stale} ADDR -p PORT\n",
			argv[0]);
		return 2;
	}
	return failures ? 1 : 0;
}
