// SPDX-License-Identifier: GPL-2.0
/*
 * itapi-rping: an IT-API client of rping's protocol, for a server that is
 * rdma-core's "rping -s" (on siw, or on viaduct through the verbs face).
 *
 *   itapi-rping -a SERVER [-p PORT] [-S SIZE] [-C COUNT] [-V] [-v]
 *
 * Every ping is rping's exchange: the client sends the address, STag and
 * length of its start buffer (16 bytes: 64-bit address, 32-bit STag,
 * 32-bit length, all big-endian); the server reads the buffer with an RDMA
 * Read and answers with a 16-byte message; the client sends the same
 * triple for its sink buffer; the server writes the data back with an RDMA
 * Write and answers again. The start buffer holds "rdma-ping-N: " and then
 * the letters A to z in turn from a start letter that moves on by one for
 * each ping; with -V the sink must come back equal to it. The connection
 * is the TII's two-way establishment; it ends with it_ep_disconnect.
 * Exit status 0 if every ping went through (and matched with -V).
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <arpa/inet.h>
#include <it_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAIT_US (120ULL * 1000 * 1000) /* a bound for a hang, not a speed */
#define MSG_FMT "rdma-ping-%d: "

struct rping_info {
	uint64_t buf; /* big-endian */
	uint32_t rkey; /* big-endian: the rmr_context as it goes on the wire */
	uint32_t size; /* big-endian */
};

static it_evd_handle_t req_evd, rcv_evd, cm_evd;
static it_ep_handle_t ep;

static void die(const char *what, it_status_t st)
{
	fprintf(stderr, "itapi-rping: %s: %s\n", what, viaduct_it_status_str(st));
	exit(1);
}

/* The next completion of @evd: must be @want, successful. */
static it_event_t completion(it_evd_handle_t evd, it_event_type_t want, const char *what)
{
	it_event_t ev;
	size_t more;
	it_status_t st = it_evd_wait(evd, WAIT_US, &ev, &more);

	if (st != IT_SUCCESS)
		die(what, st);
	if (ev.event_number != want || ev.dto_cmpl.dto_status != IT_DTO_SUCCESS) {
		fprintf(stderr, "itapi-rping: %s: %s, %s\n", what,
			viaduct_it_event_str(ev.event_number),
			viaduct_it_dto_status_str(ev.dto_cmpl.dto_status));
		exit(1);
	}
	return ev;
}

static void usage(void)
{
	fprintf(stderr, "usage: itapi-rping -a SERVER [-p PORT] [-S SIZE] [-C COUNT] [-V] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct in_addr server = { 0 };
	unsigned long port = 7174, size = 64, count = 1;
	int validate = 0, verbose = 0, opt, ping, start = 65;
	it_interface_t ifs[4];
	size_t n = 4, total = 0, i;
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_lmr_handle_t msg_lmr, start_lmr, sink_lmr;
	it_rmr_context_t start_ctx, sink_ctx, unused;
	struct rping_info msgs[3]; /* [0] sent, [1] [2] received */
	char *start_buf, *sink_buf;
	it_ep_attributes_t a;
	it_path_t path;
	it_conn_qual_t q;
	it_event_t ev;
	size_t more;
	it_lmr_triplet_t s;
	it_status_t st;

	while ((opt = getopt(argc, argv, "a:p:S:C:Vv")) != -1) {
		switch (opt) {
		case 'a':
			if (inet_pton(AF_INET, optarg, &server) != 1)
				usage();
			break;
		case 'p':
			port = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'C':
			count = strtoul(optarg, NULL, 0);
			break;
		case 'V':
			validate = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
		}
	}
	/* rping's own bounds on the buffer */
	if (!server.s_addr || !port || port > 65535 || size < 24 || size > 64 * 1024 || !count)
		usage();

	it_interface_list(ifs, &n, &total);
	if (n == 0) {
		fprintf(stderr, "itapi-rping: no IT-API interface (no viaduct device here)\n");
		return 1;
	}
	if ((st = it_ia_create(ifs[0].name, 2, 1, &ia)) != IT_SUCCESS)
		die("it_ia_create", st);
	if ((st = it_pz_create(ia, &pz)) != IT_SUCCESS)
		die("it_pz_create", st);
	if ((st = it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 16, 1, NULL, &req_evd, NULL)) ||
	    (st = it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 16, 1, NULL, &rcv_evd, NULL)) ||
	    (st = it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, 0, 4, 1, NULL, &cm_evd, NULL)))
		die("it_evd_create", st);
	start_buf = calloc(1, size);
	sink_buf = calloc(1, size);
	if (!start_buf || !sink_buf)
		return 1;
	if ((st = it_lmr_create(pz, msgs, NULL, sizeof(msgs), IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				IT_LMR_FLAG_NONE, 0, &msg_lmr, &unused)) ||
	    (st = it_lmr_create(pz, start_buf, NULL, size, IT_ADDR_MODE_ABSOLUTE,
				IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, IT_LMR_FLAG_NONE, 0, &start_lmr,
				&start_ctx)) ||
	    (st = it_lmr_create(pz, sink_buf, NULL, size, IT_ADDR_MODE_ABSOLUTE,
				IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_LMR_FLAG_NONE, 0, &sink_lmr,
				&sink_ctx)))
		die("it_lmr_create", st);
	memset(&a, 0, sizeof(a));
	a.max_dto_payload_size = size;
	a.max_request_dtos = 8;
	a.max_rcv_dtos = 8;
	a.max_send_segments = 1;
	a.max_rcv_segments = 1;
	a.srv.rc.rdma_read_enable = IT_TRUE;
	a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = 1;
	a.srv.rc.max_rdma_write_segments = 1;
	a.srv.rc.rdma_read_ird = 1; /* as rping's responder_resources */
	a.srv.rc.rdma_read_ord = 1; /* and initiator_depth */
	a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
	if ((st = it_ep_rc_create(pz, req_evd, rcv_evd, cm_evd, IT_EP_NO_FLAG, &a, &ep)))
		die("it_ep_rc_create", st);

	/* both of the server's answers of a ping have a receive waiting */
	for (i = 1; i <= 2; i++) {
		s.lmr = msg_lmr;
		s.addr.abs = &msgs[i];
		s.length = sizeof(msgs[i]);
		if ((st = it_post_recv((it_handle_t)ep, &s, 1, i, IT_COMPLETION_FLAG)))
			die("it_post_recv", st);
	}
	memset(&path, 0, sizeof(path));
	path.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
	path.remote.iwarp.raddr.ipv4 = server;
	memset(&q, 0, sizeof(q));
	q.type = IT_IANA_PORT;
	q.conn_qual.port = htons((uint16_t)port);
	if ((st = it_ep_connect(ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0)))
		die("it_ep_connect", st);
	if ((st = it_evd_wait(cm_evd, WAIT_US, &ev, &more)))
		die("waiting for the connection", st);
	if (ev.event_number != IT_CM_MSG_CONN_ESTABLISHED_EVENT) {
		fprintf(stderr, "itapi-rping: connecting: %s (reason %d)\n",
			viaduct_it_event_str(ev.event_number), (int)ev.conn.reject_reason_code);
		return 1;
	}
	if (verbose)
		printf("connected; the server's IRD %u, ORD %u\n", ev.conn.rdma_read_ird,
		       ev.conn.rdma_read_ord);

	s.lmr = msg_lmr;
	s.addr.abs = &msgs[0];
	s.length = sizeof(msgs[0]);
	for (ping = 0; (unsigned long)ping < count; ping++) {
		int cc = snprintf(start_buf, size, MSG_FMT, ping);
		unsigned char c = (unsigned char)start;
		it_event_t r;

		for (i = (size_t)cc; i < size; i++) {
			start_buf[i] = (char)c;
			if (++c > 122)
				c = 65;
		}
		if (++start > 122)
			start = 65;
		start_buf[size - 1] = 0;
		memset(sink_buf, 0, size);

		/* the source: the server reads it */
		msgs[0].buf = it_make_rdma_addr_absolute(start_buf);
		msgs[0].rkey = start_ctx;
		msgs[0].size = htonl((uint32_t)size);
		if ((st = it_post_send(ep, &s, 1, 10, IT_COMPLETION_FLAG)))
			die("it_post_send", st);
		completion(req_evd, IT_DTO_SEND_CMPL_EVENT, "sending the source");
		r = completion(rcv_evd, IT_DTO_RC_RECV_CMPL_EVENT, "the server's read is done");
		if (r.dto_cmpl.transferred_length != sizeof(struct rping_info)) {
			fprintf(stderr, "itapi-rping: bogus answer of %u bytes\n",
				r.dto_cmpl.transferred_length);
			return 1;
		}
		if ((st = it_post_recv((it_handle_t)ep, &(it_lmr_triplet_t){ msg_lmr,
								       { .abs = &msgs[r.dto_cmpl.cookie] },
								       sizeof(msgs[1]) },
				       1, r.dto_cmpl.cookie, IT_COMPLETION_FLAG)))
			die("it_post_recv", st);

		/* the sink: the server writes into it */
		msgs[0].buf = it_make_rdma_addr_absolute(sink_buf);
		msgs[0].rkey = sink_ctx;
		if ((st = it_post_send(ep, &s, 1, 11, IT_COMPLETION_FLAG)))
			die("it_post_send", st);
		completion(req_evd, IT_DTO_SEND_CMPL_EVENT, "sending the sink");
		r = completion(rcv_evd, IT_DTO_RC_RECV_CMPL_EVENT, "the server's write is done");
		if ((st = it_post_recv((it_handle_t)ep, &(it_lmr_triplet_t){ msg_lmr,
								       { .abs = &msgs[r.dto_cmpl.cookie] },
								       sizeof(msgs[1]) },
				       1, r.dto_cmpl.cookie, IT_COMPLETION_FLAG)))
			die("it_post_recv", st);
		if (validate && memcmp(start_buf, sink_buf, size)) {
			fprintf(stderr, "itapi-rping: data mismatch in ping %d\n", ping);
			return 1;
		}
		if (verbose)
			printf("ping data: %s\n", sink_buf);
	}

	if ((st = it_ep_disconnect(ep, NULL, 0)))
		die("it_ep_disconnect", st);
	if ((st = it_evd_wait(cm_evd, WAIT_US, &ev, &more)) ||
	    ev.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT) {
		fprintf(stderr, "itapi-rping: disconnecting: %s\n",
			st ? viaduct_it_status_str(st) : viaduct_it_event_str(ev.event_number));
		return 1;
	}
	printf("itapi-rping: %lu pings of %lu bytes%s\n", count, size,
	       validate ? ", every one verified" : "");
	it_ia_free(ia); /* frees every object of the IA */
	free(start_buf);
	free(sink_buf);
	return 0;
}
