// SPDX-License-Identifier: GPL-2.0
/*
 * add_server: the passive side of the "add two integers" example of the
 * OFED verbs reference (rdma_cm and verbs, written from its description).
 *
 *   add_server [PORT]          (default 20079)
 *
 * Accepts one connection, advertising a two-integer buffer ({address,
 * rkey} as private data). The client RDMA Writes the first integer into
 * buf[0] and Sends the second into buf[1]; the Send's completion means the
 * Write before it has landed. The server adds them and Sends the sum back,
 * then waits for the client to disconnect.
 *
 * Build: cc -o add_server add_server.c $(pkg-config --cflags --libs viaduct-verbs)
 * (or -lrdmacm -libverbs for rdma-core: the source is the same).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

struct pdata {
	uint64_t buf_va;	/* big-endian */
	uint32_t buf_rkey;	/* big-endian */
} __attribute__((packed));

static int die(const char *what)
{
	fprintf(stderr, "add_server: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != t) {
		fprintf(stderr, "add_server: %s (status %d), expected %s\n",
			rdma_event_str(ev->event), ev->status, rdma_event_str(t));
		exit(1);
	}
	return ev;
}

/* Sleeps on the channel until the CQ has a completion, re-arms, polls it. */
static void wait_wc(struct ibv_comp_channel *ch, struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct ibv_cq *evt_cq;
	void *ctx;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1)
			break;
		if (ibv_get_cq_event(ch, &evt_cq, &ctx))
			die("ibv_get_cq_event");
		ibv_ack_cq_events(evt_cq, 1);
		if (ibv_req_notify_cq(cq, 0))
			die("ibv_req_notify_cq");
	}
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "add_server: completion %s\n", ibv_wc_status_str(wc->status));
		exit(1);
	}
}

int main(int argc, char *argv[])
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct rdma_event_channel *cm_channel;
	struct rdma_cm_id *listen_id, *cm_id;
	struct rdma_cm_event *event;
	struct rdma_conn_param conn_param = {};
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_chan;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp_init_attr qp_attr = {};
	struct ibv_sge sge;
	struct ibv_send_wr send_wr = {}, *bad_send_wr;
	struct ibv_recv_wr recv_wr = {}, *bad_recv_wr;
	struct ibv_wc wc;
	struct sockaddr_in sin = {};
	struct pdata rep_pdata;
	uint32_t *buf;

	cm_channel = rdma_create_event_channel();
	if (!cm_channel)
		die("rdma_create_event_channel");
	if (rdma_create_id(cm_channel, &listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	sin.sin_family = AF_INET;
	sin.sin_port = htons(argc > 1 ? atoi(argv[1]) : 20079);
	sin.sin_addr.s_addr = INADDR_ANY;
	if (rdma_bind_addr(listen_id, (struct sockaddr *)&sin))
		die("rdma_bind_addr");
	if (rdma_listen(listen_id, 1))
		die("rdma_listen");

	event = expect(cm_channel, RDMA_CM_EVENT_CONNECT_REQUEST);
	cm_id = event->id;
	rdma_ack_cm_event(event);

	pd = ibv_alloc_pd(cm_id->verbs);
	if (!pd)
		die("ibv_alloc_pd");
	comp_chan = ibv_create_comp_channel(cm_id->verbs);
	if (!comp_chan)
		die("ibv_create_comp_channel");
	cq = ibv_create_cq(cm_id->verbs, 2, NULL, comp_chan, 0);
	if (!cq)
		die("ibv_create_cq");
	if (ibv_req_notify_cq(cq, 0))
		die("ibv_req_notify_cq");
	buf = calloc(2, sizeof(uint32_t));
	if (!buf)
		die("calloc");
	mr = ibv_reg_mr(pd, buf, 2 * sizeof(uint32_t),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr");

	qp_attr.cap.max_send_wr = 1;
	qp_attr.cap.max_send_sge = 1;
	qp_attr.cap.max_recv_wr = 1;
	qp_attr.cap.max_recv_sge = 1;
	qp_attr.send_cq = cq;
	qp_attr.recv_cq = cq;
	qp_attr.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(cm_id, pd, &qp_attr))
		die("rdma_create_qp");

	/* the receive for the client's Send, posted before accepting */
	sge.addr = (uintptr_t)(buf + 1);
	sge.length = sizeof(uint32_t);
	sge.lkey = mr->lkey;
	recv_wr.wr_id = 1;
	recv_wr.sg_list = &sge;
	recv_wr.num_sge = 1;
	if (ibv_post_recv(cm_id->qp, &recv_wr, &bad_recv_wr))
		die("ibv_post_recv");

	rep_pdata.buf_va = htobe64((uintptr_t)buf);
	rep_pdata.buf_rkey = htonl(mr->rkey);
	conn_param.responder_resources = 1;
	conn_param.private_data = &rep_pdata;
	conn_param.private_data_len = sizeof(rep_pdata);
	if (rdma_accept(cm_id, &conn_param))
		die("rdma_accept");
	rdma_ack_cm_event(expect(cm_channel, RDMA_CM_EVENT_ESTABLISHED));

	wait_wc(comp_chan, cq, &wc); /* the Send: the Write before it is in buf[0] */
	if (wc.opcode != IBV_WC_RECV || wc.byte_len != sizeof(uint32_t)) {
		fprintf(stderr, "add_server: unexpected completion\n");
		return 1;
	}
	printf("%u + %u = %u\n", ntohl(buf[0]), ntohl(buf[1]), ntohl(buf[0]) + ntohl(buf[1]));
	buf[0] = htonl(ntohl(buf[0]) + ntohl(buf[1]));

	sge.addr = (uintptr_t)buf;
	send_wr.wr_id = 2;
	send_wr.opcode = IBV_WR_SEND;
	send_wr.send_flags = IBV_SEND_SIGNALED;
	send_wr.sg_list = &sge;
	send_wr.num_sge = 1;
	if (ibv_post_send(cm_id->qp, &send_wr, &bad_send_wr))
		die("ibv_post_send");
	wait_wc(comp_chan, cq, &wc);

	/* the client disconnects once it has the sum */
	rdma_ack_cm_event(expect(cm_channel, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(cm_id);
	ibv_dereg_mr(mr);
	free(buf);
	if (ibv_destroy_cq(cq) || ibv_destroy_comp_channel(comp_chan) || ibv_dealloc_pd(pd))
		die("teardown");
	rdma_destroy_id(cm_id);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(cm_channel);
	return 0;
}
