// SPDX-License-Identifier: GPL-2.0
/*
 * The data-path scenarios of itapi-conformance (inventory B.4): S6 RMR
 * link and unlink, S7 completion suppression, S8 EVD thresholds,
 * notification, aggregates and fd mode on real completions, S9 the DTO
 * SEVD overflow, S10 an S-RQ shared by two EPs with its low watermark,
 * and the moderated wakeups of a waiter with a threshold; and, in the one
 * process of the local run, the send queue's bookkeeping on a flushed EP.
 * Both halves of each scenario run in their own process (server, client);
 * the server tells the client when to go on with messages of its own, so
 * that nothing depends on timing.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "conformance.h"

static void recv_one(struct fx *f, size_t off, size_t len, it_dto_cookie_t cookie)
{
	it_lmr_triplet_t s = seg(f, off, len);

	if (it_post_recv((it_handle_t)f->ep, &s, 1, cookie, IT_COMPLETION_FLAG) != IT_SUCCESS)
		bail("it_post_recv");
	/* connect_to() posts them again if a refused attempt flushed them */
	if (ep_state(f->ep) == IT_EP_STATE_UNCONNECTED && f->npre < 4) {
		f->pre[f->npre].off = off;
		f->pre[f->npre].len = len;
		f->pre[f->npre].cookie = cookie;
		f->npre++;
	}
}

static void send_one(struct fx *f, size_t off, size_t len, it_dto_cookie_t cookie,
		     it_dto_flags_t flags)
{
	it_lmr_triplet_t s = seg(f, off, len);

	IS(it_post_send(f->ep, &s, 1, cookie, flags), IT_SUCCESS);
}

/* A connection's end on the passive side: the peer's disconnect. */
static void peer_gone(struct fx *f, const char *what)
{
	it_event_t ev = next_event(f->cm, LONG_US);

	ok(ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT ||
		   ev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT,
	   "%s: the connection ends (%s)", what, viaduct_it_event_str(ev.event_number));
}

static void hang_up(struct fx *f, const char *what)
{
	IS(it_ep_disconnect(f->ep, NULL, 0), IT_SUCCESS);
	expect_event(f->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, what);
}

struct adv {
	uint64_t addr;
	it_rmr_context_t ctx;
	uint32_t len;
};

/* ------------------------------------------------ S6: RMR link, unlink */

static void s6_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_rmr_handle_t rmr, wide;
	it_rmr_context_t ctx = 0, wctx = 0;
	it_rmr_param_t rp;
	it_event_t ev;
	struct adv a;
	size_t i;
	int good = 1;

	/* no remote rights on the LMR: the RMRs are the only way in */
	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	IS(it_rmr_create(f.pz, IT_RMR_TYPE_NARROW, &rmr), IT_SUCCESS);
	IS(it_rmr_create(f.pz, IT_RMR_TYPE_WIDE, &wide), IT_SUCCESS);
	recv_one(&f, 0, 64, 1);
	recv_one(&f, 0, 64, 2);
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S6: passive side");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S6: hello");

	/* a link is a WR: it completes as one, and the context is new */
	IS(it_rmr_link(rmr, f.lmr, f.buf + 4096, 4096, IT_ADDR_MODE_ABSOLUTE,
		       IT_PRIV_REMOTE_WRITE, f.ep, 10, IT_COMPLETION_FLAG, &ctx),
	   IT_SUCCESS);
	expect_dto(f.req, IT_RMR_LINK_CMPL_EVENT, 10, IT_DTO_SUCCESS, "S6: narrow RMR linked");
	memset(&rp, 0, sizeof(rp));
	IS(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &rp), IT_SUCCESS);
	ok(rp.linked == IT_TRUE && rp.rmr_context == ctx && rp.lmr == f.lmr &&
		   rp.length == 4096 && rp.type == IT_RMR_TYPE_NARROW,
	   "S6: it_rmr_query shows the link");
	IS(it_ep_free(f.ep), IT_ERR_EP_BUSY);
	IS(it_lmr_free(f.lmr), IT_ERR_LMR_BUSY);
	/* relative addressing on the wide one: offsets from its start */
	IS(it_rmr_link(wide, f.lmr, f.buf + 16384, 4096, IT_ADDR_MODE_RELATIVE,
		       IT_PRIV_REMOTE_READ, f.ep, 11, IT_COMPLETION_FLAG, &wctx),
	   IT_SUCCESS);
	expect_dto(f.req, IT_RMR_LINK_CMPL_EVENT, 11, IT_DTO_SUCCESS, "S6: wide RMR linked");
	for (i = 0; i < 4096; i++)
		f.buf[16384 + i] = (unsigned char)(i * 13 + 1);

	a.addr = it_make_rdma_addr_absolute(f.buf + 4096);
	a.ctx = ctx;
	a.len = 4096;
	memcpy(f.buf + 64, &a, sizeof(a));
	a.addr = it_make_rdma_addr_relative(1024);
	a.ctx = wctx;
	a.len = 1024;
	memcpy(f.buf + 64 + sizeof(a), &a, sizeof(a));
	send_one(&f, 64, 2 * sizeof(a), 3, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 3, IT_DTO_SUCCESS, "S6: advertisement sent");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 2, IT_DTO_SUCCESS,
		   "S6: the peer wrote through the narrow RMR and read through the wide one");
	for (i = 0; i < 4096; i++)
		good = good && f.buf[4096 + i] == (unsigned char)(i ^ 0xa5);
	ok(good, "S6: every byte written through the RMR is there");

	/* unlinked, the old context reaches nothing */
	IS(it_rmr_unlink(rmr, f.ep, 12, IT_COMPLETION_FLAG), IT_SUCCESS);
	expect_dto(f.req, IT_RMR_LINK_CMPL_EVENT, 12, IT_DTO_SUCCESS, "S6: narrow RMR unlinked");
	memset(&rp, 0, sizeof(rp));
	IS(it_rmr_query(rmr, IT_RMR_PARAM_LINKED, &rp), IT_SUCCESS);
	ok(rp.linked == IT_FALSE, "S6: it_rmr_query shows it unlinked");
	IS(it_rmr_unlink(wide, f.ep, 13, IT_COMPLETION_FLAG), IT_SUCCESS);
	expect_dto(f.req, IT_RMR_LINK_CMPL_EVENT, 13, IT_DTO_SUCCESS, "S6: wide RMR unlinked");
	memset(f.buf + 4096, 0, 4096);
	send_one(&f, 64, 8, 4, IT_COMPLETION_FLAG);
	expect_sent_before_peer_end(&f, 4, "S6: 'unlinked' sent");
	/* the peer's Write with the stale context fails there and breaks the
	 * connection; nothing lands here */
	peer_gone(&f, "S6: stale context");
	good = 1;
	for (i = 0; i < 4096; i++)
		good = good && f.buf[4096 + i] == 0;
	ok(good, "S6: the Write with the stale context placed nothing");
	IS(it_lmr_free(f.lmr), IT_SUCCESS); /* nothing linked to it any more */
	IS(it_lmr_create(f.pz, f.buf, NULL, f.len, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
			 IT_LMR_FLAG_NONE, 0, &f.lmr, NULL),
	   IT_SUCCESS);
	IS(it_rmr_free(rmr), IT_SUCCESS);
	IS(it_rmr_free(wide), IT_SUCCESS);
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

static void s6_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	struct adv a, w;
	it_lmr_triplet_t s;
	size_t i;
	int good = 1;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	recv_one(&f, 0, 64, 1);
	recv_one(&f, 0, 64, 2);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S6: active side ESTABLISHED");
	send_one(&f, 128, 8, 1, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S6: hello sent");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S6: advertisement");
	memcpy(&a, f.buf, sizeof(a));
	memcpy(&w, f.buf + sizeof(a), sizeof(w));
	for (i = 0; i < 4096; i++)
		f.buf[4096 + i] = (unsigned char)(i ^ 0xa5);
	s = seg(&f, 4096, 4096);
	IS(it_post_rdma_write(f.ep, &s, 1, 2, IT_COMPLETION_FLAG, a.addr, a.ctx), IT_SUCCESS);
	s = seg(&f, 32768, 1024);
	IS(it_post_rdma_read(f.ep, &s, 1, 3, IT_COMPLETION_FLAG, w.addr, w.ctx), IT_SUCCESS);
	send_one(&f, 128, 8, 4, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_RDMA_WRITE_CMPL_EVENT, 2, IT_DTO_SUCCESS, "S6: Write via the RMR");
	expect_dto(f.req, IT_DTO_RDMA_READ_CMPL_EVENT, 3, IT_DTO_SUCCESS,
		   "S6: Read at a relative address");
	for (i = 0; i < 1024; i++)
		good = good && f.buf[32768 + i] == (unsigned char)((1024 + i) * 13 + 1);
	ok(good, "S6: the relative address 1024 is the wide RMR's 1024th byte");
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 4, IT_DTO_SUCCESS, "S6: 'written' sent");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 2, IT_DTO_SUCCESS, "S6: 'unlinked'");
	/* the old context, again */
	s = seg(&f, 4096, 4096);
	IS(it_post_rdma_write(f.ep, &s, 1, 5, IT_COMPLETION_FLAG, a.addr, a.ctx), IT_SUCCESS);
	send_one(&f, 128, 8, 6, IT_COMPLETION_FLAG);
	ev = next_event(f.cm, LONG_US);
	ok(ev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT ||
		   ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT,
	   "S6: the stale context ends the connection (%s)", viaduct_it_event_str(ev.event_number));
	ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL, "S6: NONOPERATIONAL");
	fx_close(&f);
}

/* ------------------------------------- S7: completion suppression */

static void s7_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_event_t ev;
	int i, good = 1;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	for (i = 0; i < 16; i++)
		recv_one(&f, (size_t)i * 64, 64, 100 + (it_dto_cookie_t)i);
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S7: passive side");
	/* every Send, with or without a completion of its own, arrives, in order */
	for (i = 0; i < 16; i++) {
		ev = next_event(f.rcv, LONG_US);
		good = good && ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
		       ev.dto_cmpl.cookie == 100 + (it_dto_cookie_t)i &&
		       ev.dto_cmpl.dto_status == IT_DTO_SUCCESS &&
		       ev.dto_cmpl.transferred_length == 8;
	}
	ok(good, "S7: 16 receives completed in order, 8 bytes each");
	recv_one(&f, 2048, 64, 116);
	send_one(&f, 4096, 8, 1, IT_COMPLETION_FLAG);
	expect_sent_before_peer_end(&f, 1, "S7: 'ready' sent");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 116, IT_DTO_SUCCESS,
		   "S7: the Send that needed the retired slots");
	peer_gone(&f, "S7");
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

static void s7_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	it_lmr_triplet_t s;
	size_t nmore = 99;
	int i;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	recv_one(&f, 0, 64, 50);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S7: active side ESTABLISHED");
	/* 15 Sends without a completion, then a marker with one: 16, the
	 * request queue's max_request_dtos */
	for (i = 1; i <= 15; i++)
		send_one(&f, 128, 8, (it_dto_cookie_t)i, 0);
	send_one(&f, 128, 8, 16, IT_COMPLETION_FLAG);
	/* the queue is full until a completion says otherwise */
	s = seg(&f, 128, 8);
	IS(it_post_send(f.ep, &s, 1, 17, IT_COMPLETION_FLAG), IT_ERR_TOO_MANY_POSTS);
	IS(it_post_send(f.ep, &s, 1, 17, IT_NOTIFY_FLAG), IT_ERR_INVALID_DTO_FLAGS);
	memset(&ev, 0, sizeof(ev));
	IS(it_evd_wait(f.req, LONG_US, &ev, &nmore), IT_SUCCESS);
	ok(ev.event_number == IT_DTO_SEND_CMPL_EVENT && ev.dto_cmpl.cookie == 16 &&
		   ev.dto_cmpl.dto_status == IT_DTO_SUCCESS && nmore == 0,
	   "S7: the marker is the only completion (cookie %llu, %zu more)",
	   (unsigned long long)ev.dto_cmpl.cookie, nmore);
	IS(it_evd_dequeue(f.req, &ev), IT_ERR_QUEUE_EMPTY);
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 50, IT_DTO_SUCCESS, "S7: 'ready'");
	/* the marker's completion retired the 15 before it */
	send_one(&f, 128, 8, 17, IT_COMPLETION_FLAG | IT_NOTIFY_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 17, IT_DTO_SUCCESS, "S7: a Send after the marker");
	hang_up(&f, "S7: the local side");
	fx_close(&f);
}

/* ------------------- S8: thresholds, notification, AEVD and fd mode */

static void s8_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_evd_handle_t aevd;
	it_evd_param_t p;
	it_event_t ev;
	it_status_t st;
	size_t nmore = 0, rounds = 0;
	int fd = -1, only_timeouts = 1, i;
	struct pollfd pfd;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	memset(&p, 0, sizeof(p));
	p.sevd_threshold = 4;
	IS(it_evd_modify(f.rcv, IT_EVD_PARAM_THRESHOLD, &p), IT_SUCCESS);
	/* exactly the 7 the client sends: no receive is left to be flushed
	 * into the SEVD when the client disconnects */
	for (i = 1; i <= 7; i++)
		recv_one(&f, (size_t)i * 64, 64, (it_dto_cookie_t)i);
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S8: passive side");

	/* 3 receives (no notification among them) are below the threshold of
	 * 4: every wait times out, and reports what is queued */
	while (nmore < 3 && rounds++ < LONG_US / 100000) {
		st = it_evd_wait(f.rcv, 100000, &ev, &nmore);
		only_timeouts = only_timeouts && st == IT_ERR_TIMEOUT_EXPIRED;
		if (st != IT_ERR_TIMEOUT_EXPIRED)
			break;
	}
	ok(only_timeouts && nmore == 3,
	   "S8: below the threshold the wait times out, nmore %zu of 3", nmore);
	send_one(&f, 2048, 8, 100, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 100, IT_DTO_SUCCESS, "S8: 'go' sent");
	/* the fourth makes four: the wait returns the first, three more */
	memset(&ev, 0, sizeof(ev));
	IS(it_evd_wait(f.rcv, LONG_US, &ev, &nmore), IT_SUCCESS);
	ok(ev.dto_cmpl.cookie == 1 && nmore == 3,
	   "S8: at the threshold: the first receive, 3 more (cookie %llu, %zu more)",
	   (unsigned long long)ev.dto_cmpl.cookie, nmore);
	for (i = 2; i <= 4; i++) {
		IS(it_evd_dequeue(f.rcv, &ev), IT_SUCCESS);
		ok(ev.dto_cmpl.cookie == (it_dto_cookie_t)i, "S8: receive %d in order", i);
	}

	/* threshold off: only a notification event ends a wait; the peer's
	 * solicited Send notifies, and the ordinary one before it is returned
	 * first */
	p.sevd_threshold = IT_THRESHOLD_DISABLE;
	IS(it_evd_modify(f.rcv, IT_EVD_PARAM_THRESHOLD, &p), IT_SUCCESS);
	send_one(&f, 2048, 8, 101, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 101, IT_DTO_SUCCESS, "S8: 'go 2' sent");
	memset(&ev, 0, sizeof(ev));
	IS(it_evd_wait(f.rcv, LONG_US, &ev, &nmore), IT_SUCCESS);
	ok(ev.dto_cmpl.cookie == 5 && nmore == 1,
	   "S8: the solicited receive woke the waiter for the one before it (cookie %llu)",
	   (unsigned long long)ev.dto_cmpl.cookie);
	IS(it_evd_dequeue(f.rcv, &ev), IT_SUCCESS);
	ok(ev.dto_cmpl.cookie == 6, "S8: then the solicited one");

	/* an AEVD with a descriptor: readable when a member has an event */
	IS(it_evd_create(f.ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_CREATE_FD, 0, 0, NULL,
			 &aevd, &fd),
	   IT_SUCCESS);
	p.aevd = aevd;
	p.evd_enabled = IT_FALSE;
	IS(it_evd_modify(f.rcv, IT_EVD_PARAM_AEVD_HANDLE | IT_EVD_PARAM_ENABLED, &p), IT_SUCCESS);
	p.evd_enabled = IT_TRUE;
	p.sevd_threshold = 1;
	IS(it_evd_modify(f.rcv, IT_EVD_PARAM_ENABLED | IT_EVD_PARAM_THRESHOLD, &p), IT_SUCCESS);
	IS(it_evd_wait(f.rcv, 0, &ev, &nmore), IT_ERR_INVALID_EVD_STATE);
	pfd.fd = fd;
	pfd.events = POLLIN;
	ok(poll(&pfd, 1, 0) == 0, "S8: the AEVD's descriptor is not readable yet");
	send_one(&f, 2048, 8, 102, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 102, IT_DTO_SUCCESS, "S8: 'go 3' sent");
	ok(poll(&pfd, 1, (int)(LONG_US / 1000)) == 1, "S8: the descriptor turns readable");
	memset(&ev, 0, sizeof(ev));
	IS(it_evd_dequeue(aevd, &ev), IT_SUCCESS);
	ok(ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT && ev.dto_cmpl.cookie == 7 &&
		   ev.dto_cmpl.evd == f.rcv,
	   "S8: the AEVD gives the member's event, naming the member");
	IS(it_evd_dequeue(aevd, &ev), IT_ERR_QUEUE_EMPTY);
	ok(poll(&pfd, 1, 0) == 0, "S8: drained, the descriptor is not readable");
	peer_gone(&f, "S8");
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f); /* the member goes first, then its AEVD may */
	IS(it_evd_free(aevd), IT_SUCCESS);
}

static void s8_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	int i;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	for (i = 0; i < 3; i++)
		recv_one(&f, 0, 64, 50 + (it_dto_cookie_t)i);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S8: active side ESTABLISHED");
	for (i = 1; i <= 3; i++)
		send_one(&f, 128, 8, (it_dto_cookie_t)i, IT_COMPLETION_FLAG);
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 50, IT_DTO_SUCCESS, "S8: 'go'");
	send_one(&f, 128, 8, 4, IT_COMPLETION_FLAG);
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 51, IT_DTO_SUCCESS, "S8: 'go 2'");
	send_one(&f, 128, 8, 5, IT_COMPLETION_FLAG);
	send_one(&f, 128, 8, 6, IT_COMPLETION_FLAG | IT_SOLICITED_WAIT_FLAG);
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 52, IT_DTO_SUCCESS, "S8: 'go 3'");
	send_one(&f, 128, 8, 7, IT_COMPLETION_FLAG);
	for (i = 1; i <= 7; i++)
		expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, (it_dto_cookie_t)i, IT_DTO_SUCCESS,
			   "S8: Send");
	hang_up(&f, "S8: the local side");
	fx_close(&f);
}

/* ------------------------------------- S9: a DTO SEVD overflows */

static void s9_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_evd_handle_t small, aff, aff2;
	it_ep_handle_t ep2;
	it_ep_attributes_t a;
	it_evd_param_t p;
	it_event_t ev;
	it_status_t st;
	uint32_t q;
	size_t i;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	st = it_evd_create(f.ia, IT_ASYNC_AFF_EVENT_STREAM, 0, 16, 1, NULL, &aff, NULL);
	IS(st, IT_SUCCESS);
	IS(it_evd_create(f.ia, IT_ASYNC_AFF_EVENT_STREAM, 0, 16, 1, NULL, &aff2, NULL),
	   IT_ERR_ASYNC_AFF_EVD_EXISTS);
	/* the EP's receive SEVD: the smallest queue the CQ gives */
	IS(it_evd_create(f.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 1, 1, NULL, &small,
			 NULL),
	   IT_SUCCESS);
	memset(&p, 0, sizeof(p));
	IS(it_evd_query(small, IT_EVD_PARAM_QUEUE_SIZE, &p), IT_SUCCESS);
	q = (uint32_t)p.sevd_queue_size;
	ok(q >= 1 && q <= 64, "S9: the SEVD holds %u", q);
	it_ep_free(f.ep);
	memset(&a, 0, sizeof(a));
	a.max_dto_payload_size = 4096;
	a.max_request_dtos = 4;
	a.max_rcv_dtos = q + 4;
	a.max_send_segments = 1;
	a.max_rcv_segments = 1;
	a.srv.rc.rdma_read_ird = 4;
	a.srv.rc.rdma_read_ord = 4;
	IS(it_ep_rc_create(f.pz, f.req, small, f.cm, IT_EP_NO_FLAG, &a, &f.ep), IT_SUCCESS);
	for (i = 0; i < q + 2; i++)
		recv_one(&f, 0, 64, 1 + i);
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S9: passive side");
	/* tell the client how many: one more than the SEVD holds */
	memcpy(f.buf + 4096, &q, sizeof(q));
	send_one(&f, 4096, sizeof(q), 100, IT_COMPLETION_FLAG);
	/* having it, the client overflows the SEVD: the connection may break first */
	expect_sent_before_peer_end(&f, 100, "S9: count sent");
	/* nothing reaped: the SEVD overflows, the EP on it breaks */
	expect_event(f.cm, IT_CM_MSG_CONN_BROKEN_EVENT, "S9: the overflow breaks the connection");
	ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL, "S9: NONOPERATIONAL");
	/* with the EP's own failure (EP_FAILURE) in any order */
	for (i = 0; i < 4; i++) {
		ev = next_event(aff, LONG_US);
		if (ev.event_number != IT_ASYNC_AFF_EP_FAILURE)
			break;
	}
	ok(ev.event_number == IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE && ev.aff_async.cause.sevd == small,
	   "S9: SEVD_ENQUEUE_FAILURE names the SEVD (%s)", viaduct_it_event_str(ev.event_number));
	memset(&p, 0, sizeof(p));
	IS(it_evd_query(small, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
	ok(p.evd_overflowed == IT_TRUE, "S9: the SEVD says it overflowed");
	/* a DTO overflow cannot be undone: no reset, no new EP on it */
	p.evd_overflowed = IT_FALSE;
	IS(it_evd_modify(small, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
	IS(it_evd_query(small, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
	ok(p.evd_overflowed == IT_TRUE, "S9: and stays overflowed");
	IS(it_ep_reset(f.ep), IT_ERR_CANNOT_RESET);
	IS(it_ep_rc_create(f.pz, f.req, small, f.cm, IT_EP_NO_FLAG, &a, &ep2),
	   IT_ERR_INVALID_RECV_EVD_STATE);
	/* the events before the overflow are still there */
	memset(&ev, 0, sizeof(ev));
	IS(it_evd_dequeue(small, &ev), IT_SUCCESS);
	ok(ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT && ev.dto_cmpl.cookie == 1,
	   "S9: the first receive is still in the SEVD");
	IS(it_listen_free(l), IT_SUCCESS);
	IS(it_ep_free(f.ep), IT_SUCCESS);
	IS(it_evd_free(small), IT_SUCCESS);
	IS(it_evd_free(aff), IT_SUCCESS);
	/* fx_close frees an EP: give it one */
	a.max_rcv_dtos = 4;
	IS(it_ep_rc_create(f.pz, f.req, f.rcv, f.cm, IT_EP_NO_FLAG, &a, &f.ep), IT_SUCCESS);
	fx_close(&f);
}

static void s9_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	uint32_t q = 0, i;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	recv_one(&f, 0, 64, 50);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S9: active side ESTABLISHED");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 50, IT_DTO_SUCCESS, "S9: the count");
	memcpy(&q, f.buf, sizeof(q));
	/* one at a time, each reaped: one more than the peer's SEVD holds */
	for (i = 0; i < q + 1; i++) {
		it_lmr_triplet_t s = seg(&f, 128, 8);

		if (it_post_send(f.ep, &s, 1, 1 + i, IT_COMPLETION_FLAG) != IT_SUCCESS)
			break;
		ev = next_event(f.req, LONG_US);
		if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
			break;
	}
	ev = next_event(f.cm, LONG_US);
	ok(ev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT ||
		   ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT,
	   "S9: the peer's overflow ends this side's connection (%s)",
	   viaduct_it_event_str(ev.event_number));
	fx_close(&f);
}

/* ----------------------------- S10: an S-RQ shared by two endpoints */

static void s10_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_conn_qual_t qual;
	it_srq_handle_t srq;
	it_srq_param_t sp;
	it_evd_handle_t aff;
	it_ep_handle_t ep[2];
	it_ep_attributes_t a;
	it_event_t ev;
	it_dto_cookie_t last[2] = { 0, 0 };
	int count[2] = { 0, 0 }, in_order = 1, i, k;
	int established[2] = { 0, 0 }, ended[2] = { 0, 0 }, want;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	IS(it_evd_create(f.ia, IT_ASYNC_AFF_EVENT_STREAM, 0, 16, 1, NULL, &aff, NULL),
	   IT_SUCCESS);
	IS(it_srq_create(f.pz, 1, 8, &srq), IT_SUCCESS);
	memset(&a, 0, sizeof(a));
	a.max_dto_payload_size = 4096;
	a.max_request_dtos = 4;
	a.max_send_segments = 1;
	a.srv.rc.rdma_read_ird = 4;
	a.srv.rc.rdma_read_ord = 4;
	a.srv.rc.srq = srq;
	a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
	for (k = 0; k < 2; k++)
		IS(it_ep_rc_create(f.pz, f.req, f.rcv, f.cm, IT_EP_SRQ, &a, &ep[k]), IT_SUCCESS);
	for (i = 0; i < 8; i++) {
		it_lmr_triplet_t s = seg(&f, (size_t)i * 64, 64);

		IS(it_post_recv((it_handle_t)srq, &s, 1, 1 + (it_dto_cookie_t)i,
				IT_COMPLETION_FLAG),
		   IT_SUCCESS);
	}
	{
		it_lmr_triplet_t s = seg(&f, 0, 64);

		IS(it_post_recv((it_handle_t)srq, &s, 1, 9, IT_COMPLETION_FLAG),
		   IT_ERR_TOO_MANY_POSTS);
		IS(it_post_recv((it_handle_t)ep[0], &s, 1, 9, IT_COMPLETION_FLAG),
		   IT_ERR_INVALID_SRQ);
	}
	/* fewer than 3 left raises the watermark event, once */
	memset(&sp, 0, sizeof(sp));
	sp.low_watermark = 3;
	IS(it_srq_modify(srq, IT_SRQ_PARAM_LOW_WATERMARK, &sp), IT_SUCCESS);
	IS(it_srq_free(srq), IT_ERR_SRQ_BUSY);

	memset(&qual, 0, sizeof(qual));
	qual.type = IT_IANA_PORT;
	qual.conn_qual.port = htons(port);
	IS(it_listen_create(f.ia, 0, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &qual, &l), IT_SUCCESS);
	for (k = 0; k < 2; k++) {
		ev = next_event(f.creq, LONG_US);
		ok(ev.event_number == IT_CM_REQ_CONN_REQUEST_EVENT, "S10: request %d", k + 1);
		IS(it_ep_accept(ep[k], ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	}
	/*
	 * Each EP's events come in its own order, ESTABLISHED first; the two
	 * EPs' events may interleave. The kernel reports the passive side's
	 * ESTABLISHED after its MPA reply went out: with this thread slow to
	 * finish it_ep_accept(ep[1]), the peer can send, complete and hang up
	 * EP 1 first, so EP 1's end may come before EP 2's ESTABLISHED.
	 */
	while (!established[0] || !established[1]) {
		ev = next_event(f.cm, LONG_US);
		k = ev.conn.ep == ep[0] ? 0 : ev.conn.ep == ep[1] ? 1 : -1;
		if (k >= 0 && !established[k] &&
		    ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT) {
			established[k] = 1;
		} else if (k >= 0 && established[k] && !ended[k] &&
			   (ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT ||
			    ev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT)) {
			ended[k] = 1;
		} else {
			ok(0, "S10: ESTABLISHED on each EP, then its end (got %s for EP %d)",
			   ev.event_number ? viaduct_it_event_str(ev.event_number) : "nothing",
			   k + 1);
			break;
		}
	}
	for (k = 0; k < 2; k++)
		ok(established[k], "S10: EP %d ESTABLISHED", k + 1);
	/* 3 Sends on each connection: 6 of the 8 receives taken */
	for (i = 0; i < 6; i++) {
		ev = next_event(f.rcv, LONG_US);
		if (ev.event_number != IT_DTO_RC_RECV_CMPL_EVENT ||
		    ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
			break;
		k = ev.dto_cmpl.ep == ep[0] ? 0 : ev.dto_cmpl.ep == ep[1] ? 1 : -1;
		if (k < 0)
			break;
		/* per EP, receives complete in the order of the peer's Sends,
		 * which carry their number */
		in_order = in_order &&
			   f.buf[(ev.dto_cmpl.cookie - 1) * 64] == (unsigned char)(count[k] + 1) &&
			   ev.dto_cmpl.cookie > last[k];
		last[k] = ev.dto_cmpl.cookie;
		count[k]++;
	}
	ok(count[0] == 3 && count[1] == 3, "S10: 3 receives for each EP (%d, %d)", count[0],
	   count[1]);
	ok(in_order, "S10: per EP, in the order of its peer's Sends");
	ev = next_event(aff, LONG_US);
	ok(ev.event_number == IT_ASYNC_AFF_SRQ_LOW_WATERMARK && ev.aff_async.cause.srq == srq,
	   "S10: the S-RQ's low watermark event (%s)", viaduct_it_event_str(ev.event_number));
	memset(&sp, 0xff, sizeof(sp));
	IS(it_srq_query(srq, IT_SRQ_PARAM_ALL, &sp), IT_SUCCESS);
	ok(sp.max_recv_dtos == 8 && sp.max_recv_segs == 1 && sp.low_watermark == 0,
	   "S10: it_srq_query: 8 receives of 1 segment, the watermark spent");
	/* each connection ends once: the ends not seen yet, in either order */
	for (want = !ended[0] + !ended[1]; want > 0; want--) {
		ev = next_event(f.cm, LONG_US);
		k = ev.conn.ep == ep[0] ? 0 : ev.conn.ep == ep[1] ? 1 : -1;
		if (k < 0 || ended[k] ||
		    (ev.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT &&
		     ev.event_number != IT_CM_MSG_CONN_BROKEN_EVENT)) {
			ok(0, "S10: each EP's connection ends once (got %s for EP %d)",
			   ev.event_number ? viaduct_it_event_str(ev.event_number) : "nothing",
			   k + 1);
			break;
		}
		ended[k] = 2;
	}
	for (k = 0; k < 2; k++)
		ok(ended[k], "S10: EP %d's connection ends%s", k + 1,
		   ended[k] == 1 ? " (before the other was ESTABLISHED)" : "");
	IS(it_listen_free(l), IT_SUCCESS);
	for (k = 0; k < 2; k++)
		IS(it_ep_free(ep[k]), IT_SUCCESS);
	IS(it_srq_free(srq), IT_SUCCESS);
	IS(it_evd_free(aff), IT_SUCCESS);
	fx_close(&f);
}

static void s10_client(uint16_t port)
{
	struct fx f[2];
	it_event_t ev;
	int i, k;

	for (k = 0; k < 2; k++) {
		fx_open(&f[k], 4096, IT_PRIV_NONE, 4, 4);
		ev = connect_to(&f[k], peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
		ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT,
		   "S10: active side %d ESTABLISHED", k + 1);
	}
	for (i = 1; i <= 3; i++)
		for (k = 0; k < 2; k++) {
			f[k].buf[128] = (unsigned char)i;
			send_one(&f[k], 128, 8, (it_dto_cookie_t)i, IT_COMPLETION_FLAG);
			expect_dto(f[k].req, IT_DTO_SEND_CMPL_EVENT, (it_dto_cookie_t)i,
				   IT_DTO_SUCCESS, "S10: Send");
		}
	for (k = 0; k < 2; k++) {
		hang_up(&f[k], "S10: the local side");
		fx_close(&f[k]);
	}
}

/* ----------------- a threshold of N: one wakeup, not one per completion */

/*
 * The waiter's wakeups are its thread's voluntary context switches: a
 * sleep in the kernel (poll) that ended. A waiter armed for every
 * completion sleeps and wakes once per completion; one armed moderately
 * (ARM_CQ's threshold) sleeps once until the N-th or its timeout.
 */
static long wakeups(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		bail("getrusage");
	return ru.ru_nvcsw;
}

#define MOD_N 8

struct waiter {
	it_evd_handle_t evd;
	it_status_t st;
	it_event_t ev;
	size_t nmore;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	memset(&w->ev, 0, sizeof(w->ev));
	w->st = it_evd_wait(w->evd, LONG_US, &w->ev, &w->nmore);
	return NULL;
}

static void moderated_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_evd_param_t p;
	it_event_t ev;
	it_status_t st = IT_SUCCESS;
	size_t nmore = 0;
	long before, sw = 0;
	unsigned waits = 0;
	int only_timeouts = 1, in_order = 1, i;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	memset(&p, 0, sizeof(p));
	p.sevd_threshold = MOD_N;
	IS(it_evd_modify(f.rcv, IT_EVD_PARAM_THRESHOLD, &p), IT_SUCCESS);
	for (i = 1; i <= MOD_N; i++)
		recv_one(&f, (size_t)i * 64, 64, (it_dto_cookie_t)i);
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "moderated: passive side");

	/* the client's N-1 Sends arrive one by one while the waiter sleeps:
	 * none of them wakes it, each wait ends by its timeout */
	while (nmore < MOD_N - 1 && waits < LONG_US / 300000) {
		before = wakeups();
		st = it_evd_wait(f.rcv, 300000, &ev, &nmore);
		sw += wakeups() - before;
		waits++;
		if (st != IT_ERR_TIMEOUT_EXPIRED) {
			only_timeouts = 0;
			break;
		}
	}
	ok(only_timeouts && nmore == MOD_N - 1,
	   "moderated: %d completions below the threshold of %d: the wait times out (%s), "
	   "nmore %zu",
	   MOD_N - 1, MOD_N, viaduct_it_status_str(st), nmore);
	ok(sw <= (long)waits + 2,
	   "moderated: %d completions did not wake the waiter: %ld wakeups in %u timed waits",
	   MOD_N - 1, sw, waits);

	/* the N-th wakes it, once */
	send_one(&f, 2048, 8, 100, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 100, IT_DTO_SUCCESS, "moderated: 'go' sent");
	memset(&ev, 0, sizeof(ev));
	before = wakeups();
	IS(it_evd_wait(f.rcv, LONG_US, &ev, &nmore), IT_SUCCESS);
	sw = wakeups() - before;
	ok(ev.dto_cmpl.cookie == 1 && nmore == MOD_N - 1,
	   "moderated: the N-th completion ends the wait: the first receive, %d more "
	   "(cookie %llu, %zu more)",
	   MOD_N - 1, (unsigned long long)ev.dto_cmpl.cookie, nmore);
	ok(sw <= 2, "moderated: the N-th completion woke the waiter once (%ld wakeups)", sw);
	for (i = 2; i <= MOD_N; i++) {
		in_order = in_order && it_evd_dequeue(f.rcv, &ev) == IT_SUCCESS &&
			   ev.dto_cmpl.cookie == (it_dto_cookie_t)i &&
			   ev.dto_cmpl.dto_status == IT_DTO_SUCCESS;
	}
	ok(in_order, "moderated: the other %d receives follow in order", MOD_N - 1);
	IS(it_evd_dequeue(f.rcv, &ev), IT_ERR_QUEUE_EMPTY);

	/* a receive posted with IT_NOTIFY_FLAG while a waiter sleeps with the
	 * threshold of N (moderately armed, most likely: the gap is not what
	 * is asserted) wakes it below the threshold once it completes */
	{
		struct timespec gap = { 0, 100 * 1000 * 1000 };
		it_lmr_triplet_t sg = seg(&f, 1024, 64);
		struct waiter w = { f.rcv, IT_SUCCESS, { 0 }, 0 };
		pthread_t t;

		if (pthread_create(&t, NULL, wait_thread, &w) != 0)
			bail("pthread_create");
		nanosleep(&gap, NULL);
		IS(it_post_recv((it_handle_t)f.ep, &sg, 1, 200, IT_COMPLETION_FLAG | IT_NOTIFY_FLAG),
		   IT_SUCCESS);
		send_one(&f, 2048, 8, 101, IT_COMPLETION_FLAG);
		expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 101, IT_DTO_SUCCESS,
			   "moderated: 'go 2' sent");
		pthread_join(t, NULL);
		ok(w.st == IT_SUCCESS && w.ev.dto_cmpl.cookie == 200 && w.nmore == 0,
		   "moderated: the notifying receive woke the waiter below the threshold "
		   "(%s, cookie %llu, %zu more)",
		   viaduct_it_status_str(w.st), (unsigned long long)w.ev.dto_cmpl.cookie, w.nmore);
	}
	peer_gone(&f, "moderated");
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

static void moderated_client(uint16_t port)
{
	struct timespec gap = { 0, 20 * 1000 * 1000 };
	struct fx f;
	it_event_t ev;
	int i;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	recv_one(&f, 0, 64, 50);
	recv_one(&f, 64, 64, 51);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT,
	   "moderated: active side ESTABLISHED");
	/* apart, so that a waiter armed per completion would wake for each
	 * (what is asserted does not depend on the gap) */
	for (i = 1; i < MOD_N; i++) {
		send_one(&f, 128, 8, (it_dto_cookie_t)i, IT_COMPLETION_FLAG);
		expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, (it_dto_cookie_t)i, IT_DTO_SUCCESS,
			   "moderated: Send");
		nanosleep(&gap, NULL);
	}
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 50, IT_DTO_SUCCESS, "moderated: 'go'");
	send_one(&f, 128, 8, MOD_N, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, MOD_N, IT_DTO_SUCCESS, "moderated: the N-th Send");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 51, IT_DTO_SUCCESS, "moderated: 'go 2'");
	send_one(&f, 128, 8, MOD_N + 1, IT_COMPLETION_FLAG);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, MOD_N + 1, IT_DTO_SUCCESS,
		   "moderated: the Send for the notifying receive");
	hang_up(&f, "moderated: the local side");
	fx_close(&f);
}

/* ------------------------------- posts and completions on a flushed EP */

/* An EP on f's PZ and SEVDs taking @max_req send WRs, NONOPERATIONAL after
 * a connection to a port of our own nobody listens on was refused: what
 * is posted to it completes at once, flushed, and nothing goes on the
 * wire. */
static it_ep_handle_t flushed_ep(struct fx *f, size_t max_req)
{
	it_ep_attributes_t a;
	it_path_t path = path_to(own_ip, 0);
	it_conn_qual_t q;
	it_ep_handle_t ep = NULL;

	memset(&a, 0, sizeof(a));
	a.max_dto_payload_size = 4096;
	a.max_request_dtos = max_req;
	a.max_rcv_dtos = 4;
	a.max_send_segments = 1;
	a.max_rcv_segments = 1;
	a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
	if (it_ep_rc_create(f->pz, f->req, f->rcv, f->cm, IT_EP_NO_FLAG, &a, &ep) != IT_SUCCESS)
		bail("it_ep_rc_create");
	memset(&q, 0, sizeof(q));
	q.type = IT_IANA_PORT;
	q.conn_qual.port = htons(18994);
	IS(it_ep_connect(ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0), IT_SUCCESS);
	expect_event(f->cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, "flushed EP: the port is closed");
	if (ep_state(ep) != IT_EP_STATE_NONOPERATIONAL)
		bail("the refused EP is not NONOPERATIONAL");
	return ep;
}

/* it_evd_dequeue until an event comes (a bound for a hang: LONG_US). */
static it_status_t dequeue(it_evd_handle_t evd, it_event_t *ev)
{
	struct timespec ms = { 0, 1000 * 1000 };
	it_status_t st;
	uint64_t waited = 0;

	memset(ev, 0, sizeof(*ev));
	while ((st = it_evd_dequeue(evd, ev)) == IT_ERR_QUEUE_EMPTY && waited < LONG_US) {
		nanosleep(&ms, NULL);
		waited += 1000;
	}
	return st;
}

/* Dequeues @n events of @evd: Send completions of @ep, flushed, cookies
 * @first, @first + 1, ...; false at the first that is not. */
static int flushed_in_order(it_evd_handle_t evd, it_ep_handle_t ep, it_dto_cookie_t first,
			    int n)
{
	it_event_t ev;

	for (int i = 0; i < n; i++) {
		if (dequeue(evd, &ev) != IT_SUCCESS ||
		    ev.event_number != IT_DTO_SEND_CMPL_EVENT || ev.dto_cmpl.evd != evd ||
		    ev.dto_cmpl.ep != ep || ev.dto_cmpl.cookie != first + (it_dto_cookie_t)i ||
		    ev.dto_cmpl.dto_status != IT_DTO_ERR_FLUSHED ||
		    ev.dto_cmpl.transferred_length != 0 || ev.dto_cmpl.unlinked_mr_handle != NULL) {
			diag("event %d: %s, cookie %llu, %s", i,
			     ev.event_number ? viaduct_it_event_str(ev.event_number) : "nothing",
			     (unsigned long long)ev.dto_cmpl.cookie,
			     viaduct_it_dto_status_str(ev.dto_cmpl.dto_status));
			return 0;
		}
	}
	return 1;
}

/*
 * The send queue's bookkeeping without a peer: an EP takes max_request_dtos
 * WRs not yet reaped, not the larger power of two its shadow ring has;
 * completions come back in post order with their cookies, whether a
 * dequeue translates one straight from the CQ or takes it from the
 * SEVD's queue, also as the ring wraps; a completion of a freed EP is
 * dropped while the other EPs' on the same SEVD still come.
 */
static void posts_local(void)
{
	struct fx f;
	it_ep_handle_t ep, gone;
	it_lmr_triplet_t s;
	it_event_t ev;
	int i, round, fine;

	fx_open(&f, 4096, IT_PRIV_NONE, 0, 0);
	ep = flushed_ep(&f, 5);
	s = seg(&f, 0, 8);
	for (i = 1; i <= 5; i++)
		IS(it_post_send(ep, &s, 1, (it_dto_cookie_t)i, IT_COMPLETION_FLAG), IT_SUCCESS);
	IS(it_post_send(ep, &s, 1, 6, IT_COMPLETION_FLAG), IT_ERR_TOO_MANY_POSTS);
	ok(flushed_in_order(f.req, ep, 1, 5), "5 flushed Sends dequeued in post order");
	IS(it_evd_dequeue(f.req, &ev), IT_ERR_QUEUE_EMPTY);
	fine = 1;
	for (round = 1; round <= 4 && fine; round++) {
		for (i = 0; i < 5; i++)
			fine = fine && it_post_send(ep, &s, 1, (it_dto_cookie_t)(10 * round + i),
						    IT_COMPLETION_FLAG) == IT_SUCCESS;
		fine = fine && it_post_send(ep, &s, 1, 99, IT_COMPLETION_FLAG) ==
				       IT_ERR_TOO_MANY_POSTS;
		fine = fine && flushed_in_order(f.req, ep, (it_dto_cookie_t)(10 * round), 5);
	}
	ok(fine, "4 more rounds of 5 around the shadow ring: full at 5, in order");
	/* some reaped: at least as many posts again as were reaped (a
	 * completion the SEVD has taken from the CQ and queued frees its
	 * slot too, so perhaps more) */
	for (i = 0; i < 5; i++)
		IS(it_post_send(ep, &s, 1, (it_dto_cookie_t)(100 + i), IT_COMPLETION_FLAG),
		   IT_SUCCESS);
	ok(flushed_in_order(f.req, ep, 100, 2), "2 of 5 reaped");
	IS(it_post_send(ep, &s, 1, 105, IT_COMPLETION_FLAG), IT_SUCCESS);
	IS(it_post_send(ep, &s, 1, 106, IT_COMPLETION_FLAG), IT_SUCCESS);
	ok(flushed_in_order(f.req, ep, 102, 5), "the other 3 and the 2 posted since, in order");

	/* a freed EP's completion, after one of its own was the last taken */
	gone = flushed_ep(&f, 4);
	IS(it_post_send(gone, &s, 1, 200, IT_COMPLETION_FLAG), IT_SUCCESS);
	ok(flushed_in_order(f.req, gone, 200, 1), "the second EP's Send");
	IS(it_post_send(gone, &s, 1, 201, IT_COMPLETION_FLAG), IT_SUCCESS);
	IS(it_ep_free(gone), IT_SUCCESS);
	IS(it_post_send(ep, &s, 1, 300, IT_COMPLETION_FLAG), IT_SUCCESS);
	IS(it_post_send(ep, &s, 1, 301, IT_COMPLETION_FLAG), IT_SUCCESS);
	ok(flushed_in_order(f.req, ep, 300, 2),
	   "after it_ep_free of the other EP, the first EP's Sends come, its own dropped");
	IS(it_evd_dequeue(f.req, &ev), IT_ERR_QUEUE_EMPTY);
	IS(it_ep_free(ep), IT_SUCCESS);
	fx_close(&f);
}

const struct scenario dataplane_scenarios[] = {
	{ "posts and completions on a flushed EP", NULL, NULL, posts_local },
	{ "S6 RMR link and unlink, stale context", s6_server, s6_client, NULL },
	{ "S7 completion suppression and the marker", s7_server, s7_client, NULL },
	{ "S8 EVD threshold, notification, AEVD, fd", s8_server, s8_client, NULL },
	{ "S9 DTO SEVD overflow", s9_server, s9_client, NULL },
	{ "S10 S-RQ shared by two EPs, low watermark", s10_server, s10_client, NULL },
	{ "EVD threshold: one wakeup for N completions", moderated_server, moderated_client, NULL },
};
const size_t dataplane_count = sizeof(dataplane_scenarios) / sizeof(dataplane_scenarios[0]);
