/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the IT-API examples share: one RC Endpoint with its three SEVDs and
 * one registered buffer, set up as the IT-API document's "TII" chapter
 * describes (a listen point and it_ep_accept on the passive side,
 * it_ep_connect on the active side), completions reaped by polling
 * it_evd_dequeue (no system call), and a clean disconnect.
 */
#ifndef ITAPI_EXAMPLES_COMMON_H
#define ITAPI_EXAMPLES_COMMON_H

#define ITAPI_ENABLE_V21_BINDINGS
#include <arpa/inet.h>
#include <it_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct conn {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t req, rcv, cm, creq;
	it_listen_handle_t listen;
	it_ep_handle_t ep;
	it_lmr_handle_t lmr;
	it_rmr_context_t ctx; /* the buffer's, for the peer's RDMA Writes */
	unsigned char *buf;
	size_t len;
};

/* Where the peer may write: sent in a Send after the connection is up.
 * @addr and @ctx as the IT-API passes them, in network byte order. */
struct target {
	uint64_t addr;
	it_rmr_context_t ctx;
	uint32_t len;
};

static void die(const char *what, it_status_t st)
{
	fprintf(stderr, "%s: %s\n", what, viaduct_it_status_str(st));
	exit(1);
}

#define CHECK(call)                                        \
	do {                                               \
		it_status_t st_ = (call);                  \
		if (st_ != IT_SUCCESS)                     \
			die(#call, st_);                   \
	} while (0)

/* The IA (the first interface if @name is NULL), its PZ and SEVDs, a
 * buffer of @len bytes the peer may write, an EP for @depth DTOs. */
static void conn_open(struct conn *c, const char *name, size_t len, size_t depth)
{
	it_interface_t ifs[4];
	size_t n = 4, total = 0;
	it_ep_attributes_t a;

	memset(c, 0, sizeof(*c));
	if (!name) {
		it_interface_list(ifs, &n, &total);
		if (n == 0) {
			fprintf(stderr, "no IT-API interface: is there a viaduct device?\n");
			exit(1);
		}
		name = ifs[0].name;
	}
	CHECK(it_ia_create(name, 2, 1, &c->ia));
	CHECK(it_pz_create(c->ia, &c->pz));
	CHECK(it_evd_create(c->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 2 * depth + 2, 1,
			    NULL, &c->req, NULL));
	CHECK(it_evd_create(c->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 2 * depth + 2, 1,
			    NULL, &c->rcv, NULL));
	CHECK(it_evd_create(c->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1, NULL,
			    &c->cm, NULL));
	CHECK(it_evd_create(c->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1, NULL,
			    &c->creq, NULL));
	c->len = len;
	c->buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
	if (!c->buf) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	memset(c->buf, 0, len);
	CHECK(it_lmr_create(c->pz, c->buf, NULL, len, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_LMR_FLAG_NONE, 0, &c->lmr,
			    &c->ctx));
	memset(&a, 0, sizeof(a));
	a.max_dto_payload_size = len;
	a.max_request_dtos = depth + 1;
	a.max_rcv_dtos = depth + 1;
	a.max_send_segments = 1;
	a.max_rcv_segments = 1;
	a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_write_segments = 1;
	a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
	CHECK(it_ep_rc_create(c->pz, c->req, c->rcv, c->cm, IT_EP_NO_FLAG, &a, &c->ep));
}

static it_event_t wait_event(it_evd_handle_t evd, const char *what)
{
	it_event_t ev;
	size_t more;

	memset(&ev, 0, sizeof(ev));
	if (it_evd_wait(evd, IT_TIMEOUT_INFINITE, &ev, &more) != IT_SUCCESS) {
		fprintf(stderr, "%s: no event\n", what);
		exit(1);
	}
	return ev;
}

/* Passive side: listens on @port, prints "waiting", accepts one. */
static void conn_accept(struct conn *c, const char *prog, uint16_t port)
{
	it_conn_qual_t q;
	it_event_t ev;

	memset(&q, 0, sizeof(q));
	q.type = IT_IANA_PORT;
	q.conn_qual.port = htons(port);
	CHECK(it_listen_create(c->ia, 0, c->creq, IT_LISTEN_CONN_QUAL_INPUT, &q, &c->listen));
	printf("%s server on port %u: waiting\n", prog, port);
	fflush(stdout);
	ev = wait_event(c->creq, "connection request");
	CHECK(it_ep_accept(c->ep, ev.conn_req.cn_est_id, NULL, 0));
	ev = wait_event(c->cm, "accept");
	if (ev.event_number != IT_CM_MSG_CONN_ESTABLISHED_EVENT) {
		fprintf(stderr, "accept: %s\n", viaduct_it_event_str(ev.event_number));
		exit(1);
	}
}

/* Active side: connects to @server:@port, retrying while nobody listens;
 * @prepost (re)posts the receives the reset of a refused attempt flushed. */
static void conn_connect(struct conn *c, const char *server, uint16_t port,
			 void (*prepost)(struct conn *))
{
	it_path_t path;
	it_conn_qual_t q;
	it_event_t ev;
	int tries;

	memset(&path, 0, sizeof(path));
	path.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
	if (inet_pton(AF_INET, server, &path.remote.iwarp.raddr.ipv4) != 1) {
		fprintf(stderr, "%s: not an IPv4 address\n", server);
		exit(2);
	}
	memset(&q, 0, sizeof(q));
	q.type = IT_IANA_PORT;
	q.conn_qual.port = htons(port);
	for (tries = 0;; tries++) {
		prepost(c);
		CHECK(it_ep_connect(c->ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
		ev = wait_event(c->cm, "connect");
		if (ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT)
			return;
		if (ev.event_number != IT_CM_MSG_CONN_NONPEER_REJECT_EVENT || tries >= 600) {
			fprintf(stderr, "connect: %s\n", viaduct_it_event_str(ev.event_number));
			exit(1);
		}
		/* nobody listens yet: start over with a clean EP */
		CHECK(it_ep_reset(c->ep));
		while (it_evd_dequeue(c->rcv, &ev) == IT_SUCCESS)
			;
		usleep(100000);
	}
}

/* The next event of a DTO SEVD, by polling; exits unless it succeeded. */
static it_event_t reap(it_evd_handle_t evd, const char *what)
{
	it_event_t ev;
	it_status_t st;

	while ((st = it_evd_dequeue(evd, &ev)) == IT_ERR_QUEUE_EMPTY)
		;
	if (st != IT_SUCCESS)
		die(what, st);
	if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS) {
		fprintf(stderr, "%s: %s\n", what, viaduct_it_dto_status_str(ev.dto_cmpl.dto_status));
		exit(1);
	}
	return ev;
}

static it_lmr_triplet_t seg(const struct conn *c, const void *at, size_t len)
{
	it_lmr_triplet_t t;

	memset(&t, 0, sizeof(t));
	t.lmr = c->lmr;
	t.addr.abs = (void *)(uintptr_t)at;
	t.length = len;
	return t;
}

/* Disconnects (the active side) or waits for the peer's disconnect. */
static void conn_close(struct conn *c, int active)
{
	it_event_t ev;

	if (active)
		CHECK(it_ep_disconnect(c->ep, NULL, 0));
	ev = wait_event(c->cm, "disconnect");
	if (ev.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT &&
	    ev.event_number != IT_CM_MSG_CONN_BROKEN_EVENT)
		fprintf(stderr, "disconnect: %s\n", viaduct_it_event_str(ev.event_number));
	it_ep_free(c->ep);
	if (c->listen)
		it_listen_free(c->listen);
	it_lmr_free(c->lmr);
	it_evd_free(c->creq);
	it_evd_free(c->cm);
	it_evd_free(c->rcv);
	it_evd_free(c->req);
	it_pz_free(c->pz);
	it_ia_free(c->ia);
	free(c->buf);
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

#endif
