// SPDX-License-Identifier: GPL-2.0
/*
 * itapi-conformance: the harness, S1 and the connection scenarios (S2-S5,
 * S11, and the error paths of the TII and TDI). See conformance.h.
 */
#include "conformance.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int tests, failures;
it_ia_handle_t the_ia;
struct in_addr peer_ip, own_ip;

void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tests++;
	if (!cond)
		failures++;
	printf("%sok %d - ", cond ? "" : "not ", tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void bail(const char *what)
{
	printf("Bail out! %s\n", what);
	exit(1);
}

void is_status(it_status_t got, it_status_t want, const char *call, const char *wantname)
{
	if (got == want)
		ok(1, "%s is %s", call, wantname);
	else
		ok(0, "%s is %s (got %s)", call, wantname, viaduct_it_status_str(got));
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---------------------------------------------------------------- fixtures */

void fx_open(struct fx *f, size_t len, it_mem_priv_t privs, uint32_t ird, uint32_t ord)
{
	it_ep_attributes_t a;

	memset(f, 0, sizeof(*f));
	f->ia = the_ia;
	if (it_pz_create(f->ia, &f->pz) != IT_SUCCESS)
		bail("it_pz_create");
	if (it_evd_create(f->ia, IT_DTO_EVENT_STREAM, 0, 64, 1, NULL, &f->req, NULL) ||
	    it_evd_create(f->ia, IT_DTO_EVENT_STREAM, 0, 64, 1, NULL, &f->rcv, NULL) ||
	    it_evd_create(f->ia, IT_CM_MSG_EVENT_STREAM, 0, 16, 1, NULL, &f->cm, NULL) ||
	    it_evd_create(f->ia, IT_CM_REQ_EVENT_STREAM, 0, 16, 1, NULL, &f->creq, NULL))
		bail("it_evd_create");
	f->len = len;
	f->buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
	if (!f->buf)
		bail("out of memory");
	memset(f->buf, 0, len);
	if (it_lmr_create(f->pz, f->buf, NULL, len, IT_ADDR_MODE_ABSOLUTE,
			  IT_PRIV_LOCAL | privs, IT_LMR_FLAG_NONE, 0, &f->lmr, &f->ctx) != IT_SUCCESS)
		bail("it_lmr_create");
	memset(&a, 0, sizeof(a));
	a.max_dto_payload_size = 65536;
	a.max_request_dtos = 16;
	a.max_rcv_dtos = 16;
	a.max_send_segments = 2;
	a.max_rcv_segments = 2;
	a.srv.rc.rdma_read_enable = IT_TRUE;
	a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = 2;
	a.srv.rc.max_rdma_write_segments = 2;
	a.srv.rc.rdma_read_ird = ird;
	a.srv.rc.rdma_read_ord = ord;
	a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
	if (it_ep_rc_create(f->pz, f->req, f->rcv, f->cm, IT_EP_NO_FLAG, &a, &f->ep) != IT_SUCCESS)
		bail("it_ep_rc_create");
}

void fx_close(struct fx *f)
{
	it_ep_free(f->ep);
	it_lmr_free(f->lmr);
	it_evd_free(f->creq);
	it_evd_free(f->cm);
	it_evd_free(f->rcv);
	it_evd_free(f->req);
	it_pz_free(f->pz);
	free(f->buf);
}

it_ep_state_rc_t ep_state(it_ep_handle_t ep)
{
	it_ep_param_t p;

	memset(&p, 0, sizeof(p));
	if (it_ep_query(ep, IT_EP_PARAM_STATE, &p) != IT_SUCCESS)
		return (it_ep_state_rc_t)-1;
	return p.ep_state.rc;
}

it_event_t next_event(it_evd_handle_t evd, uint64_t us)
{
	it_event_t ev;
	size_t more = 0;

	memset(&ev, 0, sizeof(ev));
	if (it_evd_wait(evd, us, &ev, &more) != IT_SUCCESS)
		memset(&ev, 0, sizeof(ev));
	return ev;
}

it_event_t expect_event(it_evd_handle_t evd, it_event_type_t want, const char *what)
{
	it_event_t ev = next_event(evd, LONG_US);

	if (ev.event_number == want)
		ok(1, "%s: %s", what, viaduct_it_event_str(want));
	else
		ok(0, "%s: %s (got %s)", what, viaduct_it_event_str(want),
		   ev.event_number ? viaduct_it_event_str(ev.event_number) : "nothing");
	return ev;
}

void expect_dto(it_evd_handle_t evd, it_event_type_t want, it_dto_cookie_t cookie,
		it_dto_status_t status, const char *what)
{
	it_event_t ev = next_event(evd, LONG_US);

	ok(ev.event_number == want && ev.dto_cmpl.cookie == cookie &&
		   ev.dto_cmpl.dto_status == status,
	   "%s: %s, cookie %llu, %s (got %s, %llu, %s)", what, viaduct_it_event_str(want),
	   (unsigned long long)cookie, viaduct_it_dto_status_str(status),
	   ev.event_number ? viaduct_it_event_str(ev.event_number) : "nothing",
	   (unsigned long long)ev.dto_cmpl.cookie, viaduct_it_dto_status_str(ev.dto_cmpl.dto_status));
}

/*
 * The completion of a Send after which the peer ends the connection as
 * soon as the message is there (S5: a Write to a region that forbids it;
 * S6: a Write we refuse; S7: one more Send, then a disconnect; S9: the
 * Sends that overflow our SEVD).
 * The peer checks that the message arrived. Having it, it can end the
 * connection before the transmit work here retired the Send: the EP
 * leaves CONNECTED with the Send still outstanding, and the document
 * flushes what is outstanding then. Either completion is right; any other
 * is not.
 */
void expect_sent_before_peer_end(struct fx *f, it_dto_cookie_t cookie, const char *what)
{
	it_event_t ev = next_event(f->req, LONG_US);

	ok(ev.event_number == IT_DTO_SEND_CMPL_EVENT && ev.dto_cmpl.cookie == cookie &&
		   (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS ||
		    ev.dto_cmpl.dto_status == IT_DTO_ERR_FLUSHED),
	   "%s: IT_DTO_SEND_CMPL_EVENT, cookie %llu, IT_DTO_SUCCESS or, the peer having ended the connection first, IT_DTO_ERR_FLUSHED (got %s, %llu, %s)",
	   what, (unsigned long long)cookie,
	   ev.event_number ? viaduct_it_event_str(ev.event_number) : "nothing",
	   (unsigned long long)ev.dto_cmpl.cookie, viaduct_it_dto_status_str(ev.dto_cmpl.dto_status));
}

it_lmr_triplet_t seg(const struct fx *f, size_t off, size_t len)
{
	it_lmr_triplet_t t;

	memset(&t, 0, sizeof(t));
	t.lmr = f->lmr;
	t.addr.abs = f->buf + off;
	t.length = len;
	return t;
}

it_path_t path_to(struct in_addr ip, uint64_t timeout_us)
{
	it_path_t p;

	memset(&p, 0, sizeof(p));
	p.spigot_id = 0;
	p.timeout = timeout_us;
	p.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
	p.remote.iwarp.raddr.ipv4 = ip;
	return p;
}

static it_conn_qual_t port_qual(uint16_t port)
{
	it_conn_qual_t q;

	memset(&q, 0, sizeof(q));
	q.type = IT_IANA_PORT;
	q.conn_qual.port = htons(port);
	return q;
}

static void post_recv(struct fx *f, size_t off, size_t len, it_dto_cookie_t cookie);

it_event_t connect_to(struct fx *f, struct in_addr ip, uint16_t port, it_cn_est_flags_t flags,
		      const void *pdata, size_t pdlen, uint64_t timeout_us)
{
	it_path_t path = path_to(ip, timeout_us);
	it_conn_qual_t q = port_qual(port);
	it_event_t ev;
	int tries;

	for (tries = 0;; tries++) {
		it_status_t st = it_ep_connect(f->ep, &path, NULL, &q, flags, pdata, pdlen);

		if (st != IT_SUCCESS) {
			ok(0, "it_ep_connect to port %u: %s", port, viaduct_it_status_str(st));
			memset(&ev, 0, sizeof(ev));
			return ev;
		}
		ev = next_event(f->cm, LONG_US);
		/* nobody listening yet: the server is still setting up */
		if (ev.event_number != IT_CM_MSG_CONN_NONPEER_REJECT_EVENT ||
		    ev.conn.reject_reason_code != IT_CN_REJ_BAD_PATH || tries >= 600) {
			f->npre = 0;
			return ev;
		}
		if (it_ep_reset(f->ep) != IT_SUCCESS)
			bail("it_ep_reset after a refused connection");
		/* the receives posted before were flushed: their completions
		 * (if the reset left any) go, and they are posted again */
		while (next_event(f->rcv, 100000).event_number != 0)
			;
		{
			size_t i, n = f->npre;

			f->npre = 0;
			for (i = 0; i < n; i++)
				post_recv(f, f->pre[i].off, f->pre[i].len, f->pre[i].cookie);
		}
	}
}

it_event_t take_request(struct fx *f, uint16_t port, it_listen_flags_t flags,
			it_listen_handle_t *l)
{
	it_conn_qual_t q = port_qual(port);

	IS(it_listen_create(f->ia, 0, f->creq, IT_LISTEN_CONN_QUAL_INPUT | flags, &q, l),
	   IT_SUCCESS);
	return expect_event(f->creq, IT_CM_REQ_CONN_REQUEST_EVENT, "a connection request arrives");
}

/* Post one receive of @len bytes at @off with @cookie. */
static void post_recv(struct fx *f, size_t off, size_t len, it_dto_cookie_t cookie)
{
	it_lmr_triplet_t s = seg(f, off, len);

	if (it_post_recv((it_handle_t)f->ep, &s, 1, cookie, IT_COMPLETION_FLAG) != IT_SUCCESS)
		bail("it_post_recv");
	if (ep_state(f->ep) == IT_EP_STATE_UNCONNECTED && f->npre < 4) {
		f->pre[f->npre].off = off;
		f->pre[f->npre].len = len;
		f->pre[f->npre].cookie = cookie;
		f->npre++;
	}
}

static void post_send(struct fx *f, size_t off, size_t len, it_dto_cookie_t cookie)
{
	it_lmr_triplet_t s = seg(f, off, len);

	IS(it_post_send(f->ep, &s, 1, cookie, IT_COMPLETION_FLAG), IT_SUCCESS);
}

/* ------------------------------------------------------------ S1 (local) */

static void s1_local(void)
{
	it_interface_t ifs[8];
	size_t n = 8, total = 0;
	it_ia_info_t *info = NULL;

	it_interface_list(ifs, &n, &total);
	ok(n >= 1 && total >= n, "S1: it_interface_list lists the device (%zu of %zu)", n, total);
	ok(n >= 1 && ifs[0].transport_type == IT_IWARP_TCP_TRANSPORT && ifs[0].major_version == 2,
	   "S1: an iWARP interface of IT-API 2");
	IS(it_ia_query(the_ia, &info), IT_SUCCESS);
	if (!info)
		return;
	ok(info->transport_type == IT_IWARP_TCP_TRANSPORT, "S1: the IA's transport is iWARP");
	ok(info->three_way_handshake_support == IT_FALSE,
	   "S1: three_way_handshake_support is IT_FALSE (appendix B.2)");
	ok(info->private_data_support == IT_TRUE && info->connect_private_data_len == 256 &&
		   info->accept_private_data_len == 256 && info->reject_private_data_len == 256 &&
		   info->disconnect_private_data_len == 0,
	   "S1: private data 256 on connect, accept and reject, none on disconnect");
	ok(info->ird_ord_ia_support == IT_TRUE && info->ird_ord_suppressible == IT_TRUE,
	   "S1: IRD/ORD negotiated and suppressible");
	ok(info->socket_conversion_support == IT_TRUE, "S1: socket conversion supported");
	it_ia_info_free(info);
}

/* ------------------------------------------- the TII's errors (local) */

static void cm_errors_local(void)
{
	struct fx f, g;
	it_path_t path = path_to(own_ip, 0);
	it_conn_qual_t q = port_qual(18990), busy, out;
	it_listen_handle_t l = NULL, l2 = NULL;
	it_listen_param_t lp;
	it_event_t ev;
	unsigned char big[257];
	uint16_t chosen;

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	memset(big, 'x', sizeof(big));
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_THREE_WAY, NULL, 0),
	   IT_ERR_INVALID_CN_EST_FLAGS);
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY | IT_CONNECT_FLAG_THREE_WAY,
			 NULL, 0),
	   IT_ERR_INVALID_CN_EST_FLAGS);
	IS(it_ep_connect(f.ep, &path, NULL, &q, 0, NULL, 0), IT_ERR_INVALID_CN_EST_FLAGS);
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, big, 257),
	   IT_ERR_INVALID_PDATA_LENGTH);
	q.conn_qual.port = 0;
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
	   IT_ERR_INVALID_CONN_QUAL);
	q = port_qual(18990);
	path.spigot_id = 1;
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
	   IT_ERR_INVALID_SPIGOT);
	path.spigot_id = 0;
	path.remote.iwarp.laddr.ipv4.s_addr = htonl(0xc6336407); /* 198.51.100.7: not ours */
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
	   IT_ERR_INVALID_SOURCE_PATH);
	path = path_to(own_ip, 0);
	IS(it_ep_connect(NULL, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
	   IT_ERR_INVALID_EP);
	ok(ep_state(f.ep) == IT_EP_STATE_UNCONNECTED, "refused calls leave the EP UNCONNECTED");
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_ERR_INVALID_EP_STATE);
	IS(it_ep_reset(f.ep), IT_ERR_INVALID_EP_STATE);
	IS(it_ep_accept(f.ep, 0x7fffffffULL, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	IS(it_reject(0x7fffffffULL, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	IS(it_reject(0x7fffffffULL, big, 257), IT_ERR_INVALID_PDATA_LENGTH);
	q = port_qual(18991);
	IS(it_handoff(&q, 0, 0x7fffffffULL), IT_ERR_INVALID_CN_EST_ID);

	/* listen points */
	q = port_qual(18992);
	IS(it_listen_create(the_ia, 0, f.cm, IT_LISTEN_CONN_QUAL_INPUT, &q, &l),
	   IT_ERR_INVALID_EVD_TYPE);
	IS(it_listen_create(the_ia, 0, f.req, IT_LISTEN_CONN_QUAL_INPUT, &q, &l),
	   IT_ERR_INVALID_EVD_TYPE);
	IS(it_listen_create(the_ia, 1, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &q, &l),
	   IT_ERR_INVALID_SPIGOT);
	IS(it_listen_create(the_ia, 0, f.creq, (it_listen_flags_t)0x80, &q, &l),
	   IT_ERR_INVALID_FLAGS);
	IS(it_listen_create(NULL, 0, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &q, &l), IT_ERR_INVALID_IA);
	q.conn_qual.port = 0;
	IS(it_listen_create(the_ia, 0, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &q, &l),
	   IT_ERR_INVALID_CONN_QUAL);
	q.type = IT_IB_SERVICEID;
	q.conn_qual.serviceid = 1234;
	IS(it_listen_create(the_ia, 0, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &q, &l),
	   IT_ERR_INVALID_CONN_QUAL);
	/* without IT_LISTEN_CONN_QUAL_INPUT an available qualifier comes back */
	memset(&out, 0, sizeof(out));
	IS(it_listen_create(the_ia, 0, f.creq, IT_LISTEN_NO_FLAG, &out, &l), IT_SUCCESS);
	chosen = ntohs(out.conn_qual.port);
	ok(out.type == IT_IANA_PORT && chosen != 0, "a listen point without a chosen qualifier gets "
						    "IANA port %u",
	   chosen);
	busy = out;
	IS(it_listen_create(the_ia, 0, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &busy, &l2),
	   IT_ERR_CONN_QUAL_BUSY);
	memset(&lp, 0, sizeof(lp));
	IS(it_listen_query(l, IT_LISTEN_PARAM_ALL, &lp), IT_SUCCESS);
	ok(lp.ia_handle == the_ia && lp.spigot_id == 0 && lp.connect_evd == f.creq &&
		   lp.connect_qual.type == IT_IANA_PORT && lp.connect_qual.conn_qual.port == out.conn_qual.port,
	   "it_listen_query gives the IA, spigot, EVD and qualifier");
	IS(it_listen_query(l, (it_listen_param_mask_t)0x100, &lp), IT_ERR_INVALID_MASK);
	IS(it_evd_free(f.creq), IT_ERR_EVD_BUSY);
	IS(it_listen_free(l), IT_SUCCESS);
	IS(it_listen_free(l), IT_ERR_INVALID_LISTEN);
	IS(it_listen_query(l, IT_LISTEN_PARAM_ALL, &lp), IT_ERR_INVALID_LISTEN);
	/* the qualifier is free again */
	IS(it_listen_create(the_ia, 0, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &busy, &l2), IT_SUCCESS);
	IS(it_listen_free(l2), IT_SUCCESS);

	/* nobody listens: NONPEER_REJECT with IT_CN_REJ_BAD_PATH, receives flushed */
	post_recv(&f, 0, 64, 11);
	q = port_qual(chosen);
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0), IT_SUCCESS);
	ev = expect_event(f.cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, "connecting to a closed port");
	ok(ev.conn.reject_reason_code == IT_CN_REJ_BAD_PATH && ev.conn.ep == f.ep,
	   "the reject names the EP, reason IT_CN_REJ_BAD_PATH (ECONNREFUSED)");
	ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL, "the EP is NONOPERATIONAL");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 11, IT_DTO_ERR_FLUSHED,
		   "the receive posted before connecting");
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
	   IT_ERR_INVALID_EP_STATE);
	/* disconnect of a NONOPERATIONAL EP: nothing happens, no event */
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	IS(it_ep_disconnect(f.ep, big, 1), IT_ERR_INVALID_PDATA_LENGTH);
	ev = next_event(f.cm, 200000);
	ok(ev.event_number == 0, "no event for disconnecting a NONOPERATIONAL EP");
	IS(it_ep_reset(f.ep), IT_SUCCESS);
	ok(ep_state(f.ep) == IT_EP_STATE_UNCONNECTED, "it_ep_reset: UNCONNECTED again");

	/* one process, two EPs: a connection to our own listen point */
	fx_open(&g, 4096, IT_PRIV_NONE, 4, 4);
	q = port_qual(18993);
	IS(it_listen_create(the_ia, 0, g.creq, IT_LISTEN_CONN_QUAL_INPUT, &q, &l), IT_SUCCESS);
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY,
			 (const unsigned char *)"own", 3), IT_SUCCESS);
	ok(ep_state(f.ep) == IT_EP_STATE_ACTIVE1_CONNECTION_PENDING,
	   "it_ep_connect: ACTIVE1_CONNECTION_PENDING");
	ev = expect_event(g.creq, IT_CM_REQ_CONN_REQUEST_EVENT, "own listen point");
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_EP_STATE);
	/* disconnect while pending: DISCONNECT locally, the attempt abandoned */
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL, "disconnect in ACTIVE1: NONOPERATIONAL");
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "disconnect in ACTIVE1");
	IS(it_ep_accept(g.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	ev = expect_event(g.cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT,
			  "accepting a request whose initiator left");
	ok(ep_state(g.ep) == IT_EP_STATE_NONOPERATIONAL, "the acceptor is NONOPERATIONAL");
	IS(it_ep_accept(g.ep, ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_EP_STATE);
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&g);
	fx_close(&f);
}

/* ---------------------------------------------- S2: establish, talk, end */

static const char hello[] = "hello from the active side";
static const char welcome[] = "welcome from the passive side";

static void s2_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_event_t ev;
	unsigned round;

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	for (round = 0; round < 2; round++) {
		post_recv(&f, 0, 256, 100 + round);
		post_recv(&f, 256, 256, 200 + round);
		if (round == 0) {
			ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
			ok(ev.conn_req.conn_qual.type == IT_IANA_PORT &&
				   ev.conn_req.conn_qual.conn_qual.port == htons(port) &&
				   ev.conn_req.spigot_id == 0 && ev.conn_req.evd == f.creq,
			   "S2: the request names the qualifier, spigot and EVD");
			ok(ev.conn_req.source_addr.addr_type == IT_IPV4 &&
				   ev.conn_req.source_addr.addr.ipv4.s_addr == peer_ip.s_addr,
			   "S2: the request's source address is the peer's");
			ok(ev.conn_req.private_data_present &&
				   !memcmp(ev.conn_req.private_data, hello, sizeof(hello)),
			   "S2: the request carries the active side's private data");
			ok(ev.conn_req.rdma_read_ird == 4 && ev.conn_req.rdma_read_ord == 4,
			   "S2: and its IRD/ORD (4, 4)");
		} else {
			ev = expect_event(f.creq, IT_CM_REQ_CONN_REQUEST_EVENT,
					  "S2: the reconnection's request");
		}
		ok(ep_state(f.ep) == IT_EP_STATE_UNCONNECTED, "S2: UNCONNECTED before accepting");
		IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, (const unsigned char *)welcome,
				sizeof(welcome)),
		   IT_SUCCESS);
		IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_EP_STATE);
		IS(it_reject(ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
		ev = expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S2: passive side");
		ok(ev.conn.ep == f.ep && ep_state(f.ep) == IT_EP_STATE_CONNECTED,
		   "S2: the event names the EP, which is CONNECTED when it is dequeued");
		/* ping-pong: receive, answer */
		{
			it_event_t r = next_event(f.rcv, LONG_US);

			ok(r.event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
				   r.dto_cmpl.cookie == (it_dto_cookie_t)(100 + round) &&
				   r.dto_cmpl.dto_status == IT_DTO_SUCCESS &&
				   r.dto_cmpl.transferred_length == 64 && f.buf[0] == (unsigned char)round,
			   "S2: the ping arrives in the first receive, 64 bytes, cookie %u",
			   100 + round);
		}
		memset(f.buf + 1024, (int)(0x40 + round), 64);
		post_send(&f, 1024, 64, 300 + round);
		expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 300 + round, IT_DTO_SUCCESS,
			   "S2: the pong's send");
		if (round == 0) {
			/* the active side disconnects */
			ev = expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT,
					  "S2: the peer disconnected");
			ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL,
			   "S2: NONOPERATIONAL when the event is dequeued");
		} else {
			IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
			ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL,
			   "S2: NONOPERATIONAL at once after it_ep_disconnect");
			expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT,
				     "S2: the local side too");
		}
		expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 200 + round, IT_DTO_ERR_FLUSHED,
			   "S2: the unused receive");
		/* every post to a NONOPERATIONAL EP completes as flushed
		 * (it_post_send and it_post_recv, "Asynchronous Errors") */
		post_send(&f, 512, 64, 400 + round);
		expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 400 + round, IT_DTO_ERR_FLUSHED,
			   "S2: a Send posted after the end");
		post_recv(&f, 512, 64, 500 + round);
		expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 500 + round, IT_DTO_ERR_FLUSHED,
			   "S2: a receive posted after the end");
		ev = next_event(f.cm, 200000);
		ok(ev.event_number == 0, "S2: one event for the transition, no second one");
		IS(it_ep_reset(f.ep), IT_SUCCESS);
		ok(ep_state(f.ep) == IT_EP_STATE_UNCONNECTED, "S2: it_ep_reset: UNCONNECTED");
	}
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

static void s2_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	unsigned round;

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	for (round = 0; round < 2; round++) {
		post_recv(&f, 0, 256, 100 + round);
		post_recv(&f, 256, 256, 200 + round);
		ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, hello, sizeof(hello), 0);
		ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT,
		   "S2: active side: ESTABLISHED (got %s)", viaduct_it_event_str(ev.event_number));
		ok(ev.conn.ep == f.ep && ep_state(f.ep) == IT_EP_STATE_CONNECTED,
		   "S2: the event names the EP, which is CONNECTED");
		ok(ev.conn.private_data_present &&
			   !memcmp(ev.conn.private_data, welcome, sizeof(welcome)),
		   "S2: ESTABLISHED carries the acceptor's private data");
		ok(ev.conn.rdma_read_ird == 4 && ev.conn.rdma_read_ord == 4,
		   "S2: and its IRD/ORD (4, 4)");
		/* the active side sends first (the document's advice) */
		f.buf[1024] = (unsigned char)round;
		post_send(&f, 1024, 64, 300 + round);
		expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 300 + round, IT_DTO_SUCCESS,
			   "S2: the ping's send");
		{
			it_event_t r = next_event(f.rcv, LONG_US);

			ok(r.event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
				   r.dto_cmpl.cookie == (it_dto_cookie_t)(100 + round) &&
				   r.dto_cmpl.transferred_length == 64 &&
				   f.buf[0] == (unsigned char)(0x40 + round),
			   "S2: the pong arrives, cookie %u", 100 + round);
		}
		if (round == 0) {
			IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
			ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL,
			   "S2: NONOPERATIONAL at once after it_ep_disconnect");
			expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "S2: the local side");
		} else {
			expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT,
				     "S2: the passive side disconnected");
			ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL, "S2: NONOPERATIONAL");
		}
		expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 200 + round, IT_DTO_ERR_FLUSHED,
			   "S2: the unused receive");
		ev = next_event(f.cm, 200000);
		ok(ev.event_number == 0, "S2: one event for the transition, no second one");
		IS(it_ep_reset(f.ep), IT_SUCCESS);
	}
	fx_close(&f);
}

/* ------------------------------------------------- S3 and S4: RDMA */

/* The server's advertisement: where its buffer is and its rmr_context. */
struct adv {
	uint64_t addr; /* it_make_rdma_addr_absolute() */
	it_rmr_context_t ctx;
	uint32_t len;
};

static void s3_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_event_t ev;
	struct adv a;
	size_t i;
	int good = 1;

	fx_open(&f, 65536, IT_PRIV_REMOTE_WRITE, 4, 4);
	post_recv(&f, 0, 64, 1);
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S3: passive side");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S3: the client's hello");
	a.addr = it_make_rdma_addr_absolute(f.buf + 4096);
	a.ctx = f.ctx;
	a.len = 32768;
	memcpy(f.buf + 64, &a, sizeof(a));
	post_recv(&f, 0, 64, 2);
	post_send(&f, 64, sizeof(a), 3);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 3, IT_DTO_SUCCESS, "S3: advertisement sent");
	/* the Send that follows the Write completes the receive: the data is there */
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 2, IT_DTO_SUCCESS,
		   "S3: the Send after the RDMA Write");
	for (i = 0; i < 32768; i++)
		good = good && f.buf[4096 + i] == (unsigned char)(i * 7 + 3);
	ok(good, "S3: every byte the RDMA Write placed is there when the receive completes");
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "S3: the peer disconnected");
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

static void s3_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	struct adv a;
	it_lmr_triplet_t s;
	size_t i;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	post_recv(&f, 0, 64, 1);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S3: active side ESTABLISHED");
	post_send(&f, 128, 8, 2);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 2, IT_DTO_SUCCESS, "S3: hello sent");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S3: advertisement");
	memcpy(&a, f.buf, sizeof(a));
	for (i = 0; i < 32768; i++)
		f.buf[4096 + i] = (unsigned char)(i * 7 + 3);
	s = seg(&f, 4096, 32768);
	IS(it_post_rdma_write(f.ep, &s, 1, 4, IT_COMPLETION_FLAG, a.addr, a.ctx), IT_SUCCESS);
	post_send(&f, 128, 8, 5);
	expect_dto(f.req, IT_DTO_RDMA_WRITE_CMPL_EVENT, 4, IT_DTO_SUCCESS, "S3: RDMA Write");
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 5, IT_DTO_SUCCESS, "S3: the Send behind it");
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "S3: the local side");
	fx_close(&f);
}

static void s4_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_event_t ev;
	it_ep_attributes_t a;
	struct adv ad;
	size_t i;

	fx_open(&f, 65536, IT_PRIV_REMOTE_READ, 8, 8);
	for (i = 0; i < 16384; i++)
		f.buf[8192 + i] = (unsigned char)(i ^ 0x5a);
	post_recv(&f, 0, 64, 1);
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	ok(ev.conn_req.rdma_read_ird == 4 && ev.conn_req.rdma_read_ord == 2,
	   "S4: the request carries the initiator's IRDi 4, ORDi 2 (got %u, %u)",
	   ev.conn_req.rdma_read_ird, ev.conn_req.rdma_read_ord);
	/* our ORD 8 exceeds the initiator's IRD 4: a conflict */
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_EP_ATTR);
	ok(ep_state(f.ep) == IT_EP_STATE_UNCONNECTED, "S4: the refused accept changed nothing");
	/* B.3.3: IRDr := min(IRDr, ORDi), ORDr := min(ORDr, IRDi) */
	memset(&a, 0, sizeof(a));
	a.srv.rc.rdma_read_ird = 8 < ev.conn_req.rdma_read_ord ? 8 : ev.conn_req.rdma_read_ord;
	a.srv.rc.rdma_read_ord = 8 < ev.conn_req.rdma_read_ird ? 8 : ev.conn_req.rdma_read_ird;
	IS(it_ep_modify(f.ep, IT_EP_PARAM_MAX_IRD | IT_EP_PARAM_MAX_ORD, &a), IT_SUCCESS);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S4: passive side");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S4: hello");
	ad.addr = it_make_rdma_addr_absolute(f.buf + 8192);
	ad.ctx = f.ctx;
	ad.len = 16384;
	memcpy(f.buf + 64, &ad, sizeof(ad));
	post_recv(&f, 0, 64, 2);
	post_send(&f, 64, sizeof(ad), 3);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 3, IT_DTO_SUCCESS, "S4: advertisement sent");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 2, IT_DTO_SUCCESS, "S4: the reader is done");
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "S4: the peer disconnected");
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

static void s4_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	struct adv ad;
	it_lmr_triplet_t s;
	it_ep_param_t p;
	size_t i;
	int good = 1;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 2);
	post_recv(&f, 0, 64, 1);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S4: active side ESTABLISHED");
	ok(ev.conn.rdma_read_ird == 2 && ev.conn.rdma_read_ord == 4,
	   "S4: ESTABLISHED carries the responder's IRDr 2, ORDr 4 (got %u, %u)",
	   ev.conn.rdma_read_ird, ev.conn.rdma_read_ord);
	memset(&p, 0, sizeof(p));
	IS(it_ep_query(f.ep, IT_EP_PARAM_MAX_ORD, &p), IT_SUCCESS);
	ok(p.attr.srv.rc.rdma_read_ord == 2, "S4: ORDi stays min(ORDi, IRDr) = 2");
	post_send(&f, 128, 8, 2);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 2, IT_DTO_SUCCESS, "S4: hello sent");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S4: advertisement");
	memcpy(&ad, f.buf, sizeof(ad));
	/* two reads, the second fenced behind the first, then a Send */
	s = seg(&f, 8192, 8192);
	IS(it_post_rdma_read(f.ep, &s, 1, 3, IT_COMPLETION_FLAG, ad.addr, ad.ctx), IT_SUCCESS);
	s = seg(&f, 16384, 8192);
	IS(it_post_rdma_read(f.ep, &s, 1, 4, IT_COMPLETION_FLAG | IT_BARRIER_FENCE_FLAG,
			     it_hton64(it_ntoh64(ad.addr) + 8192), ad.ctx),
	   IT_SUCCESS);
	expect_dto(f.req, IT_DTO_RDMA_READ_CMPL_EVENT, 3, IT_DTO_SUCCESS, "S4: first RDMA Read");
	expect_dto(f.req, IT_DTO_RDMA_READ_CMPL_EVENT, 4, IT_DTO_SUCCESS,
		   "S4: fenced RDMA Read, completed after it");
	for (i = 0; i < 16384; i++)
		good = good && f.buf[8192 + i] == (unsigned char)(i ^ 0x5a);
	ok(good, "S4: the read data is the responder's");
	post_send(&f, 128, 8, 5);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 5, IT_DTO_SUCCESS, "S4: done sent");
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "S4: the local side");
	fx_close(&f);
}

/* --------------------------------------- S5: protection faults break */

static void s5_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_event_t ev;
	struct adv ad;

	/* remote read only: a Write to it is a protection fault */
	fx_open(&f, 65536, IT_PRIV_REMOTE_READ, 4, 4);
	post_recv(&f, 0, 64, 1);
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S5: passive side");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S5: hello");
	ad.addr = it_make_rdma_addr_absolute(f.buf + 4096);
	ad.ctx = f.ctx;
	ad.len = 4096;
	memcpy(f.buf + 64, &ad, sizeof(ad));
	post_recv(&f, 0, 64, 2);
	post_send(&f, 64, sizeof(ad), 3);
	expect_sent_before_peer_end(&f, 3, "S5: advertisement sent");
	/* the target of the fault: the connection breaks here too */
	ev = next_event(f.cm, LONG_US);
	ok(ev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT ||
		   ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT,
	   "S5: the target's connection ends (%s)", viaduct_it_event_str(ev.event_number));
	ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL, "S5: the target is NONOPERATIONAL");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 2, IT_DTO_ERR_FLUSHED,
		   "S5: the target's receive is flushed");
	ev = next_event(f.cm, 200000);
	ok(ev.event_number == 0, "S5: exactly one of DISCONNECT or BROKEN");
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

static void s5_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	struct adv ad;
	it_lmr_triplet_t s;

	fx_open(&f, 65536, IT_PRIV_NONE, 4, 4);
	post_recv(&f, 0, 64, 1);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S5: active side ESTABLISHED");
	post_send(&f, 128, 8, 2);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 2, IT_DTO_SUCCESS, "S5: hello sent");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S5: advertisement");
	memcpy(&ad, f.buf, sizeof(ad));
	post_recv(&f, 0, 64, 6);
	/* no REMOTE_WRITE on the target: the Write fails, the connection breaks */
	s = seg(&f, 4096, 512);
	IS(it_post_rdma_write(f.ep, &s, 1, 4, IT_COMPLETION_FLAG, ad.addr, ad.ctx), IT_SUCCESS);
	/* B.3.6: at the initiator either an error completion or, as on
	 * iWARP where a Write completes once sent, the broken connection */
	ev = next_event(f.req, LONG_US);
	ok(ev.event_number == IT_DTO_RDMA_WRITE_CMPL_EVENT && ev.dto_cmpl.cookie == 4,
	   "S5: the Write to a region without REMOTE_WRITE completes (%s)",
	   viaduct_it_dto_status_str(ev.dto_cmpl.dto_status));
	expect_event(f.cm, IT_CM_MSG_CONN_BROKEN_EVENT, "S5: the initiator's connection breaks");
	ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL, "S5: NONOPERATIONAL");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 6, IT_DTO_ERR_FLUSHED,
		   "S5: the pending receive is flushed");
	/* every post now completes as flushed */
	post_send(&f, 128, 8, 7);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 7, IT_DTO_ERR_FLUSHED,
		   "S5: a Send posted after the break");
	ev = next_event(f.cm, 200000);
	ok(ev.event_number == 0, "S5: BROKEN and no DISCONNECT after it");
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	IS(it_ep_reset(f.ep), IT_SUCCESS);
	fx_close(&f);
}

/* ------------------------------ reject, handoff, listen points over time */

static const char nope[] = "not today";

static void cm_server(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l, l2, l3;
	it_evd_handle_t creq2;
	it_conn_qual_t q;
	it_event_t ev, ev2;

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	/* 1: reject with private data; the id is used up */
	ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
	IS(it_reject(ev.conn_req.cn_est_id, (const unsigned char *)nope, sizeof(nope)),
	   IT_SUCCESS);
	IS(it_reject(ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);

	/* 2: handoff to a second listen point of the IA */
	if (it_evd_create(the_ia, IT_CM_REQ_EVENT_STREAM, 0, 4, 1, NULL, &creq2, NULL))
		bail("it_evd_create");
	q = port_qual((uint16_t)(port + 1));
	IS(it_listen_create(the_ia, 0, creq2, IT_LISTEN_CONN_QUAL_INPUT, &q, &l2), IT_SUCCESS);
	ev = expect_event(f.creq, IT_CM_REQ_CONN_REQUEST_EVENT, "handoff: the request");
	q = port_qual((uint16_t)(port + 3));
	IS(it_handoff(&q, 0, ev.conn_req.cn_est_id), IT_ERR_INVALID_CONN_QUAL);
	q = port_qual((uint16_t)(port + 1));
	IS(it_handoff(&q, 1, ev.conn_req.cn_est_id), IT_ERR_INVALID_SPIGOT);
	IS(it_handoff(&q, 0, ev.conn_req.cn_est_id), IT_SUCCESS);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	ev2 = expect_event(creq2, IT_CM_REQ_CONN_REQUEST_EVENT, "handoff: forwarded request");
	ok(ev2.conn_req.conn_qual.conn_qual.port == q.conn_qual.port &&
		   ev2.conn_req.evd == creq2 &&
		   !memcmp(ev2.conn_req.private_data, ev.conn_req.private_data, IT_MAX_PRIV_DATA) &&
		   ev2.conn_req.source_addr.addr.ipv4.s_addr == ev.conn_req.source_addr.addr.ipv4.s_addr &&
		   ev2.conn_req.cn_est_id != ev.conn_req.cn_est_id,
	   "handoff: the forwarded request has the same address and private data, a new id");
	IS(it_ep_accept(f.ep, ev2.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "handoff: passive side");
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "handoff: the peer disconnected");
	IS(it_ep_reset(f.ep), IT_SUCCESS);
	IS(it_listen_free(l2), IT_SUCCESS);
	IS(it_evd_free(creq2), IT_SUCCESS);

	/* 3: a request taken before it_listen_free stays valid */
	q = port_qual((uint16_t)(port + 2));
	IS(it_listen_create(the_ia, 0, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &q, &l3), IT_SUCCESS);
	ev = expect_event(f.creq, IT_CM_REQ_CONN_REQUEST_EVENT, "listen_free: the request");
	IS(it_listen_free(l3), IT_SUCCESS);
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT,
		     "listen_free: accepted after the listen point went");
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "listen_free: the peer disconnected");
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

static void cm_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	it_path_t path = path_to(peer_ip, 0);
	it_conn_qual_t q;

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	post_recv(&f, 0, 64, 1);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, "please", 6, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_PEER_REJECT_EVENT,
	   "reject: the initiator gets PEER_REJECT (got %s)", viaduct_it_event_str(ev.event_number));
	ok(ev.conn.private_data_present && !memcmp(ev.conn.private_data, nope, sizeof(nope)),
	   "reject: with the rejecter's private data");
	ok(ep_state(f.ep) == IT_EP_STATE_NONOPERATIONAL, "reject: NONOPERATIONAL");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_ERR_FLUSHED,
		   "reject: the receive posted before connecting");
	IS(it_ep_reset(f.ep), IT_SUCCESS);

	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, "handoff", 7, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT,
	   "handoff: the initiator is connected through the other listen point");
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "handoff: the local side");
	IS(it_ep_reset(f.ep), IT_SUCCESS);

	ev = connect_to(&f, peer_ip, (uint16_t)(port + 2), IT_CONNECT_FLAG_TWO_WAY, NULL, 0, 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT,
	   "listen_free: the initiator is connected");
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "listen_free: the local side");
	IS(it_ep_reset(f.ep), IT_SUCCESS);
	/* the listen point and its last request are gone: nobody listens */
	q = port_qual((uint16_t)(port + 2));
	IS(it_ep_connect(f.ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0), IT_SUCCESS);
	ev = expect_event(f.cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT,
			  "listen_free: later requests find nobody");
	ok(ev.conn.reject_reason_code == IT_CN_REJ_BAD_PATH, "listen_free: IT_CN_REJ_BAD_PATH");
	fx_close(&f);
}

/* ------------------------------- handoff to another process's listen point */

/*
 * The passive host's process A takes a request on its listen point and
 * hands it off to a qualifier that only process B (another program: this
 * one run as "handoff-child", with a fresh IA of its own) listens on. A's
 * cn_est_id is destroyed and A sees no further event; B gets the
 * CONN_REQUEST event with the initiator's address and private data,
 * accepts it with private data of its own, and receives the initiator's
 * Send; the initiator is connected to B. B's TAP lines are relayed into
 * A's (renumbered), B's exit status is one more check.
 */
static const char to_b[] = "to the other process";
static const char from_b[] = "accepted by the other process";
static const char hello_b[] = "a Send for the other process";

static void handoff_child(uint16_t port)
{
	struct fx f;
	it_listen_handle_t l;
	it_conn_qual_t q = port_qual(port);
	it_lmr_triplet_t s;
	it_event_t ev;

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	post_recv(&f, 0, 64, 7);
	IS(it_listen_create(the_ia, 0, f.creq, IT_LISTEN_CONN_QUAL_INPUT, &q, &l), IT_SUCCESS);
	printf("# listening\n");
	fflush(stdout);
	ev = expect_event(f.creq, IT_CM_REQ_CONN_REQUEST_EVENT,
			  "handoff to B: the request arrives at B's listen point");
	ok(ev.conn_req.conn_qual.conn_qual.port == q.conn_qual.port &&
		   ev.conn_req.private_data_present &&
		   !memcmp(ev.conn_req.private_data, to_b, sizeof(to_b)) &&
		   ev.conn_req.source_addr.addr.ipv4.s_addr == peer_ip.s_addr,
	   "handoff to B: with B's qualifier, the initiator's address and private data");
	IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, (const unsigned char *)from_b, sizeof(from_b)),
	   IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "handoff to B: B's EP");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 7, IT_DTO_SUCCESS,
		   "handoff to B: the initiator's Send");
	ok(!memcmp(f.buf, hello_b, sizeof(hello_b)), "handoff to B: its bytes");
	/* the initiator disconnects only after B's answer */
	ok(ep_state(f.ep) == IT_EP_STATE_CONNECTED, "handoff to B: B's EP is CONNECTED");
	s = seg(&f, 128, sizeof(from_b));
	memcpy(f.buf + 128, from_b, sizeof(from_b));
	IS(it_post_send(f.ep, &s, 1, 8, IT_COMPLETION_FLAG), IT_SUCCESS);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 8, IT_DTO_SUCCESS, "handoff to B: B's answer");
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "handoff to B: the peer disconnected");
	IS(it_listen_free(l), IT_SUCCESS);
	fx_close(&f);
}

/* Relays the child's TAP from @in until "# listening" (@until_listening)
 * or its end; returns whether it saw "# listening". */
static int relay(FILE *in, int until_listening)
{
	char line[512];

	while (fgets(line, sizeof(line), in)) {
		char *d;

		line[strcspn(line, "\n")] = 0;
		if (!strcmp(line, "# listening")) {
			if (until_listening)
				return 1;
			continue;
		}
		if (!strncmp(line, "# ", 2)) {
			diag("B: %s", line + 2);
			continue;
		}
		d = strstr(line, " - ");
		if (!strncmp(line, "ok ", 3) && d)
			ok(1, "B: %s", d + 3);
		else if (!strncmp(line, "not ok ", 7) && d)
			ok(0, "B: %s", d + 3);
		else if (strncmp(line, "1..", 3) && strcmp(line, "TAP version 13"))
			diag("B: %s", line);
	}
	return 0;
}

static void handoff_server(uint16_t port)
{
	char ip[INET_ADDRSTRLEN], bport[8];
	struct fx f;
	it_listen_handle_t l;
	it_conn_qual_t q;
	it_event_t ev;
	int fds[2], status = -1, listening;
	FILE *in;
	pid_t pid;

	inet_ntop(AF_INET, &peer_ip, ip, sizeof(ip));
	snprintf(bport, sizeof(bport), "%u", (unsigned)(port + 1));
	if (pipe(fds) != 0)
		bail("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bail("fork");
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execl("/proc/self/exe", "itapi-conformance", "handoff-child", ip, bport, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	if (!in)
		bail("fdopen");
	listening = relay(in, 1);
	ok(listening, "handoff to B: B (pid %d) listens on port %s", (int)pid, bport);

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	if (listening) {
		ev = take_request(&f, port, IT_LISTEN_NO_FLAG, &l);
		q = port_qual((uint16_t)(port + 1));
		IS(it_handoff(&q, 0, ev.conn_req.cn_est_id), IT_SUCCESS);
		/* destroyed by the handoff */
		IS(it_ep_accept(f.ep, ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
		IS(it_reject(ev.conn_req.cn_est_id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
		IS(it_handoff(&q, 0, ev.conn_req.cn_est_id), IT_ERR_INVALID_CN_EST_ID);
		ok(ep_state(f.ep) == IT_EP_STATE_UNCONNECTED, "handoff to B: A's EP stays UNCONNECTED");
	}
	relay(in, 0);
	fclose(in);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "handoff to B: B exits 0 (status %#x)",
	   status);
	if (listening) {
		/* A got nothing more: no event for the request it gave away */
		ok(next_event(f.creq, 0).event_number == 0 && next_event(f.cm, 0).event_number == 0,
		   "handoff to B: no further event at A");
		IS(it_listen_free(l), IT_SUCCESS);
	}
	fx_close(&f);
}

static void handoff_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	it_lmr_triplet_t s;

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	memcpy(f.buf, hello_b, sizeof(hello_b));
	post_recv(&f, 256, 64, 10);
	ev = connect_to(&f, peer_ip, port, IT_CONNECT_FLAG_TWO_WAY, to_b, sizeof(to_b), 0);
	ok(ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT,
	   "handoff to B: the initiator is connected (got %s)",
	   viaduct_it_event_str(ev.event_number));
	ok(ev.conn.private_data_present && !memcmp(ev.conn.private_data, from_b, sizeof(from_b)),
	   "handoff to B: with B's private data");
	s = seg(&f, 0, sizeof(hello_b));
	IS(it_post_send(f.ep, &s, 1, 9, IT_COMPLETION_FLAG), IT_SUCCESS);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 9, IT_DTO_SUCCESS, "handoff to B: the Send");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 10, IT_DTO_SUCCESS, "handoff to B: B's answer");
	ok(!memcmp(f.buf + 256, from_b, sizeof(from_b)), "handoff to B: its bytes");
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "handoff to B: the local side");
	fx_close(&f);
}

/* ------------------------------------------ S11: socket conversion */

static const char last_msg[] = "the last streaming-mode message";

static int tcp_listen(uint16_t port)
{
	struct sockaddr_in sa;
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr = own_ip;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1))
		bail("TCP listen");
	return s;
}

static int tcp_connect(uint16_t port)
{
	struct sockaddr_in sa;
	int tries;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr = peer_ip;
	for (tries = 0; tries < 2400; tries++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return s;
		if (s >= 0)
			close(s);
		sleep_ms(100);
	}
	bail("TCP connect");
}

static int read_full(int s, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(s, (char *)buf + got, len - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* The server is the Conversion Initiator (RDMA responder, passive states). */
static void s11_server(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	char greet[6];
	int ls = tcp_listen(port), s;

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	s = accept(ls, NULL, NULL);
	close(ls);
	ok(s >= 0 && read_full(s, greet, sizeof(greet)) == 0 && !memcmp(greet, "hello", 6),
	   "S11: streaming mode first: the client's hello");
	post_recv(&f, 0, 64, 1);
	IS(it_socket_convert(s, f.ep, IT_SC_DEFAULT, (const unsigned char *)last_msg,
			     sizeof(last_msg)),
	   IT_SUCCESS);
	{
		it_ep_state_rc_t st = ep_state(f.ep);

		ok(st == IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ || st == IT_EP_STATE_CONNECTED,
		   "S11: the initiator waits for the RDMA transition request (state %d)", st);
	}
	IS(it_socket_convert(s, f.ep, IT_SC_DEFAULT, NULL, 0), IT_ERR_INVALID_EP_STATE);
	ev = expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S11: Conversion Initiator");
	ok(ev.conn.ep == f.ep && ep_state(f.ep) == IT_EP_STATE_CONNECTED &&
		   ev.conn.rdma_read_ird == 0 && ev.conn.rdma_read_ord == 0 &&
		   !ev.conn.private_data_present,
	   "S11: CONNECTED; IRD/ORD zero and no private data in the event");
	/* the socket is the implementation's; the descriptor may only be closed */
	{
		int on = 1;

		ok(setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) == -1,
		   "S11: SO_KEEPALIVE on the converted descriptor is refused (optional)");
		ok(close(s) == 0, "S11: closing the converted descriptor");
	}
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS,
		   "S11: the first RDMA message arrives");
	ok(!memcmp(f.buf, "rdma mode", 10), "S11: with its data");
	post_send(&f, 0, 10, 2);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 2, IT_DTO_SUCCESS, "S11: the answer");
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "S11: the peer disconnected");
	fx_close(&f);
}

static void s11_client(uint16_t port)
{
	struct fx f;
	it_event_t ev;
	char got[sizeof(last_msg)];
	int s = tcp_connect(port), u, p[2];

	fx_open(&f, 4096, IT_PRIV_NONE, 4, 4);
	/* the TDI's errors first */
	u = socket(AF_INET, SOCK_DGRAM, 0);
	IS(it_socket_convert(u, f.ep, IT_SC_DEFAULT, NULL, 0), IT_ERR_OP_NOT_SUPPORTED);
	close(u);
	u = socket(AF_INET, SOCK_STREAM, 0);
	IS(it_socket_convert(u, f.ep, IT_SC_DEFAULT, NULL, 0), IT_ERR_INVALID_SD_STATE);
	close(u);
	if (pipe(p))
		bail("pipe");
	IS(it_socket_convert(p[0], f.ep, IT_SC_DEFAULT, NULL, 0), IT_ERR_INVALID_SD);
	close(p[0]);
	close(p[1]);
	IS(it_socket_convert(-1, f.ep, IT_SC_DEFAULT, NULL, 0), IT_ERR_INVALID_SD);
	IS(it_socket_convert(s, f.ep, IT_SC_NO_REQ_REP, NULL, 0), IT_ERR_OP_NOT_SUPPORTED);
	IS(it_socket_convert(s, f.ep, (it_sc_flags_t)0x10, NULL, 0), IT_ERR_INVALID_FLAGS);
	IS(it_socket_convert(s, NULL, IT_SC_DEFAULT, NULL, 0), IT_ERR_INVALID_EP);
	ok(ep_state(f.ep) == IT_EP_STATE_UNCONNECTED, "S11: refused conversions changed nothing");

	if (write(s, "hello", 6) != 6)
		bail("write");
	/* the Conversion Responder reads the initiator's last message whole */
	ok(read_full(s, got, sizeof(got)) == 0 && !memcmp(got, last_msg, sizeof(last_msg)),
	   "S11: the Last ULP Streaming-Mode Message arrives in streaming mode");
	post_recv(&f, 0, 64, 1);
	IS(it_socket_convert(s, f.ep, IT_SC_DEFAULT, NULL, 0), IT_SUCCESS);
	ev = expect_event(f.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "S11: Conversion Responder");
	ok(ev.conn.ep == f.ep && ep_state(f.ep) == IT_EP_STATE_CONNECTED &&
		   ev.conn.rdma_read_ird == 0 && ev.conn.rdma_read_ord == 0 &&
		   !ev.conn.private_data_present,
	   "S11: CONNECTED; IRD/ORD zero and no private data in the event");
	ok(close(s) == 0, "S11: closing the converted descriptor leaves the EP alone");
	memcpy(f.buf + 1024, "rdma mode", 10);
	post_send(&f, 1024, 10, 2);
	expect_dto(f.req, IT_DTO_SEND_CMPL_EVENT, 2, IT_DTO_SUCCESS, "S11: first RDMA message");
	expect_dto(f.rcv, IT_DTO_RC_RECV_CMPL_EVENT, 1, IT_DTO_SUCCESS, "S11: the answer");
	IS(it_ep_disconnect(f.ep, NULL, 0), IT_SUCCESS);
	expect_event(f.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, "S11: the local side");
	fx_close(&f);
}

/* ---------------------------------------------------------------- main */

/* Data-path scenarios may come from another file; none if not. */
__attribute__((weak)) const struct scenario dataplane_scenarios[1];
__attribute__((weak)) const size_t dataplane_count;

static const struct scenario scenarios[] = {
	{ "S1 interface and IA", NULL, NULL, s1_local },
	{ "TII errors and one-process connections", NULL, NULL, cm_errors_local },
	{ "S2 two-way establishment, ping-pong, disconnect, reset", s2_server, s2_client, NULL },
	{ "S3 RDMA Write then Send", s3_server, s3_client, NULL },
	{ "S4 RDMA Read, BARRIER_FENCE, IRD/ORD negotiation", s4_server, s4_client, NULL },
	{ "S5 protection fault breaks the connection", s5_server, s5_client, NULL },
	{ "reject, handoff, listen_free", cm_server, cm_client, NULL },
	{ "S11 socket conversion", s11_server, s11_client, NULL },
	{ "handoff to another process", handoff_server, handoff_client, NULL },
};

static void run(const struct scenario *s, const char *mode, uint16_t port)
{
	if (!strcmp(mode, "local") && s->local) {
		diag("%s", s->name);
		s->local();
	} else if (!strcmp(mode, "server") && s->server) {
		diag("%s (port %u)", s->name, port);
		s->server(port);
	} else if (!strcmp(mode, "client") && s->client) {
		diag("%s (port %u)", s->name, port);
		s->client(port);
	}
}

int main(int argc, char **argv)
{
	it_interface_t ifs[4];
	size_t n = 4, total = 0, i;
	it_ia_info_t *info = NULL;
	uint16_t port = 19000;
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "local") && strcmp(mode, "server") && strcmp(mode, "client") &&
	    strcmp(mode, "handoff-child")) {
		fprintf(stderr, "usage: %s local | server CLIENTIP | client SERVERIP\n", argv[0]);
		return 2;
	}
	/* the second process of the handoff scenario: CLIENTIP PORT */
	if (!strcmp(mode, "handoff-child") && argc < 4)
		return 2;
	if (strcmp(mode, "local") && (argc < 3 || inet_pton(AF_INET, argv[2], &peer_ip) != 1)) {
		fprintf(stderr, "%s: %s needs the peer's IPv4 address\n", argv[0], mode);
		return 2;
	}
	printf("TAP version 13\n");
	it_interface_list(ifs, &n, &total);
	if (n == 0)
		bail("no IT-API interface: is there a viaduct device?");
	if (it_ia_create(ifs[0].name, 2, 1, &the_ia) != IT_SUCCESS)
		bail("it_ia_create");
	if (it_ia_query(the_ia, &info) != IT_SUCCESS || info->num_spigots < 1 ||
	    info->spigot_info[0].num_net_addr < 1)
		bail("it_ia_query: no address on the spigot");
	for (i = 0; i < info->spigot_info[0].num_net_addr; i++)
		if (info->spigot_info[0].net_addr[i].addr_type == IT_IPV4) {
			own_ip = info->spigot_info[0].net_addr[i].addr.ipv4;
			break;
		}
	it_ia_info_free(info);
	if (!own_ip.s_addr)
		bail("the spigot has no IPv4 address");
	if (!strcmp(mode, "handoff-child")) {
		handoff_child((uint16_t)atoi(argv[3]));
		IS(it_ia_free(the_ia), IT_SUCCESS);
		printf("1..%d\n", tests);
		return failures ? 1 : 0;
	}
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++, port += 8)
		run(&scenarios[i], mode, port);
	for (i = 0; i < dataplane_count; i++, port += 8)
		run(&dataplane_scenarios[i], mode, port);
	IS(it_ia_free(the_ia), IT_SUCCESS);
	printf("1..%d\n", tests);
	if (failures)
		diag("%d of %d failed", failures, tests);
	return failures ? 1 : 0;
}
