// SPDX-License-Identifier: GPL-2.0
/*
 * add_client: the active side of the "add two integers" example of the
 * OFED verbs reference (rdma_cm and verbs, written from its description).
 *
 *   add_client SERVER VAL1 VAL2 [PORT]     (default port 20079)
 *
 * Connects, RDMA Writes VAL1 (unsignalled) into the buffer the server
 * advertised in its private data, Sends VAL2, receives the sum, prints
 * "VAL1 + VAL2 = SUM", disconnects.
 *
 * Build: cc -o add_client add_client.c $(pkg-config --cflags --libs viaduct-verbs)
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

enum { RESOLVE_TIMEOUT_MS = 5000 };

struct pdata {
	uint64_t buf_va;
	uint32_t buf_rkey;
} __attribute__((packed));

static int die(const char *what)
{
	fprintf(stderr, "add_client: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != t) {
		fprintf(stderr, "add_client: %s (status %d), expected %s\n",
			rdma_event_str(ev->event), ev->status, rdma_event_str(t));
		exit(1);
	}
	return ev;
}

int main(int argc, char *argv[])
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct pdata server_pdata;
	struct rdma_event_channel *cm_channel;
	struct rdma_cm_id *cm_id;
	struct rdma_cm_event *event;
	struct rdma_conn_param conn_param = {};
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_chan;
	struct ibv_cq *cq, *evt_cq;
	struct ibv_mr *mr;
	struct ibv_qp_init_attr qp_attr = {};
	struct ibv_sge sge;
	struct ibv_send_wr send_wr = {}, *bad_send_wr;
	struct ibv_recv_wr recv_wr = {}, *bad_recv_wr;
	struct ibv_wc wc;
	void *cq_context;
	struct addrinfo *res, *t, hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	uint32_t *buf;
	unsigned events = 0;
	int err = -1;

	if (argc < 4) {
		fprintf(stderr, "usage: add_client SERVER VAL1 VAL2 [PORT]\n");
		return 2;
	}
	cm_channel = rdma_create_event_channel();
	if (!cm_channel)
		die("rdma_create_event_channel");
	if (rdma_create_id(cm_channel, &cm_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (getaddrinfo(argv[1], argc > 4 ? argv[4] : "20079", &hints, &res)) {
		fprintf(stderr, "add_client: cannot resolve %s\n", argv[1]);
		return 1;
	}
	for (t = res; t; t = t->ai_next) {
		err = rdma_resolve_addr(cm_id, NULL, t->ai_addr, RESOLVE_TIMEOUT_MS);
		if (!err)
			break;
	}
	freeaddrinfo(res);
	if (err)
		die("rdma_resolve_addr");
	rdma_ack_cm_event(expect(cm_channel, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(cm_id, RESOLVE_TIMEOUT_MS))
		die("rdma_resolve_route");
	rdma_ack_cm_event(expect(cm_channel, RDMA_CM_EVENT_ROUTE_RESOLVED));

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
	mr = ibv_reg_mr(pd, buf, 2 * sizeof(uint32_t), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");

	qp_attr.cap.max_send_wr = 2;
	qp_attr.cap.max_send_sge = 1;
	qp_attr.cap.max_recv_wr = 1;
	qp_attr.cap.max_recv_sge = 1;
	qp_attr.send_cq = cq;
	qp_attr.recv_cq = cq;
	qp_attr.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(cm_id, pd, &qp_attr))
		die("rdma_create_qp");

	conn_param.initiator_depth = 1;
	conn_param.retry_count = 7;
	if (rdma_connect(cm_id, &conn_param))
		die("rdma_connect");
	event = expect(cm_channel, RDMA_CM_EVENT_ESTABLISHED);
	if (event->param.conn.private_data_len < sizeof(server_pdata)) {
		fprintf(stderr, "add_client: no buffer advertised\n");
		return 1;
	}
	memcpy(&server_pdata, event->param.conn.private_data, sizeof(server_pdata));
	rdma_ack_cm_event(event);

	/* the receive for the sum */
	sge.addr = (uintptr_t)buf;
	sge.length = sizeof(uint32_t);
	sge.lkey = mr->lkey;
	recv_wr.wr_id = 0;
	recv_wr.sg_list = &sge;
	recv_wr.num_sge = 1;
	if (ibv_post_recv(cm_id->qp, &recv_wr, &bad_recv_wr))
		die("ibv_post_recv");

	buf[0] = htonl(strtoul(argv[2], NULL, 0));
	buf[1] = htonl(strtoul(argv[3], NULL, 0));

	/* VAL1 by an unsignalled RDMA Write, then VAL2 by a signalled Send */
	sge.addr = (uintptr_t)buf;
	send_wr.wr_id = 1;
	send_wr.opcode = IBV_WR_RDMA_WRITE;
	send_wr.sg_list = &sge;
	send_wr.num_sge = 1;
	send_wr.wr.rdma.rkey = ntohl(server_pdata.buf_rkey);
	send_wr.wr.rdma.remote_addr = be64toh(server_pdata.buf_va);
	if (ibv_post_send(cm_id->qp, &send_wr, &bad_send_wr))
		die("ibv_post_send (RDMA Write)");

	sge.addr = (uintptr_t)(buf + 1);
	send_wr.wr_id = 2;
	send_wr.opcode = IBV_WR_SEND;
	send_wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(cm_id->qp, &send_wr, &bad_send_wr))
		die("ibv_post_send (Send)");

	/* the Send's completion and the sum's receive, in either order */
	for (;;) {
		if (ibv_get_cq_event(comp_chan, &evt_cq, &cq_context))
			die("ibv_get_cq_event");
		events++;
		if (ibv_req_notify_cq(cq, 0))
			die("ibv_req_notify_cq");
		while (ibv_poll_cq(cq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "add_client: completion %s\n",
					ibv_wc_status_str(wc.status));
				return 1;
			}
			if (wc.wr_id == 0)
				goto done;
		}
	}
done:
	ibv_ack_cq_events(cq, events);
	printf("%s + %s = %u\n", argv[2], argv[3], ntohl(buf[0]));

	if (rdma_disconnect(cm_id))
		die("rdma_disconnect");
	rdma_ack_cm_event(expect(cm_channel, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(cm_id);
	ibv_dereg_mr(mr);
	free(buf);
	if (ibv_destroy_cq(cq) || ibv_destroy_comp_channel(comp_chan) || ibv_dealloc_pd(pd))
		die("teardown");
	rdma_destroy_id(cm_id);
	rdma_destroy_event_channel(cm_channel);
	return 0;
}
