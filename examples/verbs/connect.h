/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Connection set-up shared by cq_events and async_events: one RC
 * connection over rdma_cm, with a PD, one CQ on a completion channel and
 * a QP, on either side.
 */
#ifndef EXAMPLES_VERBS_CONNECT_H
#define EXAMPLES_VERBS_CONNECT_H

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

struct conn {
	struct rdma_event_channel *cm;
	struct rdma_cm_id *listen_id;	/* the server's */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
};

static void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(1);
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != t) {
		fprintf(stderr, "%s (status %d), expected %s\n", rdma_event_str(ev->event),
			ev->status, rdma_event_str(t));
		exit(1);
	}
	return ev;
}

static void make_qp(struct conn *c, int depth)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = depth, .max_recv_wr = depth,
					       .max_send_sge = 1, .max_recv_sge = 1 } };

	c->pd = ibv_alloc_pd(c->id->verbs);
	c->ch = ibv_create_comp_channel(c->id->verbs);
	if (!c->pd || !c->ch)
		die("PD and completion channel");
	c->cq = ibv_create_cq(c->id->verbs, 2 * depth, NULL, c->ch, 0);
	if (!c->cq)
		die("ibv_create_cq");
	a.send_cq = a.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &a))
		die("rdma_create_qp");
}

/* Server: listens on PORT, takes one request; the QP exists, not accepted. */
static void conn_listen(struct conn *c, const char *port, int depth)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP },
			     *res;
	struct rdma_cm_event *ev;

	c->cm = rdma_create_event_channel();
	if (!c->cm || rdma_create_id(c->cm, &c->listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_getaddrinfo(NULL, port, &hints, &res))
		die("rdma_getaddrinfo");
	if (rdma_bind_addr(c->listen_id, res->ai_src_addr) || rdma_listen(c->listen_id, 1))
		die("rdma_listen");
	rdma_freeaddrinfo(res);
	ev = expect(c->cm, RDMA_CM_EVENT_CONNECT_REQUEST);
	c->id = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(c, depth);
}

static void conn_accept(struct conn *c)
{
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };

	if (rdma_accept(c->id, &p))
		die("rdma_accept");
	rdma_ack_cm_event(expect(c->cm, RDMA_CM_EVENT_ESTABLISHED));
}

/* Client: resolves SERVER:PORT and makes the QP; conn_connect() connects. */
static void conn_prepare(struct conn *c, const char *server, const char *port, int depth)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;

	c->cm = rdma_create_event_channel();
	if (!c->cm || rdma_create_id(c->cm, &c->id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_getaddrinfo(server, port, &hints, &res))
		die("rdma_getaddrinfo");
	if (rdma_resolve_addr(c->id, NULL, res->ai_dst_addr, 5000))
		die("rdma_resolve_addr");
	rdma_freeaddrinfo(res);
	rdma_ack_cm_event(expect(c->cm, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(c->id, 5000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(expect(c->cm, RDMA_CM_EVENT_ROUTE_RESOLVED));
	make_qp(c, depth);
}

static void conn_connect(struct conn *c)
{
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };

	if (rdma_connect(c->id, &p))
		die("rdma_connect");
	rdma_ack_cm_event(expect(c->cm, RDMA_CM_EVENT_ESTABLISHED));
}

static void conn_close(struct conn *c, int initiate)
{
	if (initiate && rdma_disconnect(c->id))
		die("rdma_disconnect");
	rdma_ack_cm_event(expect(c->cm, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(c->id);
	if (ibv_destroy_cq(c->cq) || ibv_destroy_comp_channel(c->ch) || ibv_dealloc_pd(c->pd))
		die("teardown");
	rdma_destroy_id(c->id);
	if (c->listen_id)
		rdma_destroy_id(c->listen_id);
	rdma_destroy_event_channel(c->cm);
}

#endif
