/* SPDX-License-Identifier: GPL-2.0 */
/*
 * itapi-pingpong: request/response between two IT-API Endpoints. The
 * client sends -S bytes, the server answers with as many, -n times; the
 * client verifies every answer and prints the median and mean round trip.
 * Completions by polling it_evd_dequeue (no system call).
 *
 * With -W the messages are RDMA Writes instead of Sends: the two sides
 * exchange the address and rmr_context of their receive buffers with a
 * Send, then each writes the other's buffer and spins on the last byte of
 * its own, which carries the message's tag (as perftest's ib_write_lat).
 *
 * The timed path does what viaduct-perf's does, so that the two measure
 * the same work: post, reap the receive, post the next receive, answer.
 * The client writes each message's pattern before the round trip is timed
 * and checks the answer after it; the server answers a Send from the
 * buffer it received it in, copying nothing (three receive buffers in
 * turn: one just received, one posted for the next message, one still
 * the Endpoint's until the answer sent from it completes). A send's
 * completion is reaped off the timed path too, by the client once the
 * round trip is timed, by the server once its answer is posted.
 *
 *   itapi-pingpong -s [-d IA] [-p PORT] [-S SIZE] [-n N] [-W]
 *   itapi-pingpong -c SERVER [-d IA] [-p PORT] [-S SIZE] [-n N] [-W]
 */
#include <getopt.h>

#include "common.h"

static size_t size = 64;
static int use_write;

/* the buffer: two to send from (message @i's is sbuf(c, i)), three to
 * receive into (message @i's Send lands in rbuf(c, i); RDMA Writes land in
 * rbuf(c, 0)), the two targets (8-byte aligned) */
#define BUF_LEN (((5 * size + 7) & ~(size_t)7) + 2 * sizeof(struct target))
static unsigned char *sbuf(struct conn *c, unsigned long i) { return c->buf + (i & 1) * size; }
static unsigned char *rbuf(struct conn *c, unsigned long i) { return c->buf + (2 + i % 3) * size; }
static struct target *tin(struct conn *c)
{
	return (struct target *)(c->buf + ((5 * size + 7) & ~(size_t)7));
}
static struct target *tout(struct conn *c) { return tin(c) + 1; }

static void post_first_recv(struct conn *c)
{
	it_lmr_triplet_t s =
		use_write ? seg(c, tin(c), sizeof(struct target)) : seg(c, rbuf(c, 0), size);

	CHECK(it_post_recv((it_handle_t)c->ep, &s, 1, 1, IT_COMPLETION_FLAG));
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31 + i);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void post_write(struct conn *c, unsigned char tag, unsigned long i)
{
	unsigned char *b = sbuf(c, i);
	it_lmr_triplet_t s = seg(c, b, size);

	b[0] = tag;
	b[size - 1] = tag;
	CHECK(it_post_rdma_write(c->ep, &s, 1, 2, IT_COMPLETION_FLAG, tin(c)->addr, tin(c)->ctx));
}

static void wait_write(struct conn *c, unsigned char tag, unsigned long i)
{
	const volatile unsigned char *last = rbuf(c, 0) + size - 1;

	while (*last != tag)
		;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (rbuf(c, 0)[0] != tag) {
		fprintf(stderr, "message %lu: wrong answer\n", i);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *ia = NULL, *server = NULL;
	unsigned long n = 1000;
	unsigned port = 7471;
	int opt, is_server = 0;
	struct conn c;
	it_lmr_triplet_t s;
	it_event_t ev;
	double *rtt, t0;

	while ((opt = getopt(argc, argv, "sc:d:p:S:n:W")) != -1) {
		switch (opt) {
		case 's':
			is_server = 1;
			break;
		case 'c':
			server = optarg;
			break;
		case 'd':
			ia = optarg;
			break;
		case 'p':
			port = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'S':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 'W':
			use_write = 1;
			break;
		default:
			goto usage;
		}
	}
	if (is_server == !!server || size < 1 || size > (1UL << 24) || port < 1 || port > 65535)
		goto usage;
	rtt = calloc(n ? n : 1, sizeof(*rtt));
	if (!rtt)
		return 1;

	conn_open(&c, ia, BUF_LEN, 4);
	if (is_server) {
		post_first_recv(&c);
		conn_accept(&c, "pingpong", (uint16_t)port);
	} else {
		conn_connect(&c, server, (uint16_t)port, post_first_recv);
	}

	if (use_write) {
		/* where to write: each side tells the other */
		/* an RDMA address travels in network byte order (it_hton64) */
		tout(&c)->addr = it_hton64((uint64_t)(uintptr_t)rbuf(&c, 0));
		tout(&c)->ctx = c.ctx;
		tout(&c)->len = (uint32_t)size;
		s = seg(&c, tout(&c), sizeof(struct target));
		CHECK(it_post_send(c.ep, &s, 1, 3, IT_COMPLETION_FLAG));
		reap(c.req, "send");
		reap(c.rcv, "receive");
		if (tin(&c)->len != size) {
			fprintf(stderr, "the peer's buffer has %u bytes, not %zu\n", tin(&c)->len, size);
			return 1;
		}
		/* rbuf is zero (conn_open): no tag matches before the first Write */
		for (unsigned long i = 0; i < n; i++) {
			unsigned char tag = (unsigned char)(i % 255 + 1);

			t0 = now_us();
			if (!is_server)
				post_write(&c, tag, i);
			wait_write(&c, tag, i);
			if (is_server) {
				post_write(&c, tag, i);
				if (i)
					reap(c.req, "RDMA Write");
			}
			rtt[i] = now_us() - t0;
			if (!is_server)
				reap(c.req, "RDMA Write");
		}
	}
	for (unsigned long i = 0; !use_write && i < n; i++) {
		if (!is_server)
			pattern(sbuf(&c, i), size, (unsigned)i);
		t0 = now_us();
		if (!is_server) {
			s = seg(&c, sbuf(&c, i), size);
			CHECK(it_post_send(c.ep, &s, 1, 2, IT_COMPLETION_FLAG));
		}
		ev = reap(c.rcv, "receive");
		if (ev.dto_cmpl.transferred_length != size) {
			fprintf(stderr, "message %lu: %zu bytes, not %zu\n", i,
				(size_t)ev.dto_cmpl.transferred_length, size);
			return 1;
		}
		s = seg(&c, rbuf(&c, i + 1), size);
		CHECK(it_post_recv((it_handle_t)c.ep, &s, 1, 1, IT_COMPLETION_FLAG));
		if (is_server) {
			/* the answer is what came: rbuf(i) is not posted again
			 * before this Send's completion is reaped, next round */
			s = seg(&c, rbuf(&c, i), size);
			CHECK(it_post_send(c.ep, &s, 1, 2, IT_COMPLETION_FLAG));
			if (i)
				reap(c.req, "send");
		}
		rtt[i] = now_us() - t0;
		if (!is_server) {
			if (memcmp(sbuf(&c, i), rbuf(&c, i), size)) {
				fprintf(stderr, "message %lu: wrong answer\n", i);
				return 1;
			}
			reap(c.req, "send");
		}
	}
	if (is_server && n)
		reap(c.req, is_server && use_write ? "RDMA Write" : "send");
	if (!is_server && n) {
		double sum = 0;

		for (unsigned long i = 0; i < n; i++)
			sum += rtt[i];
		qsort(rtt, n, sizeof(*rtt), cmp_double);
		printf("%lu %s round trips of %zu bytes, verified: median %.2f us, mean %.2f us "
		       "(half round trip: median %.2f us)\n",
		       n, use_write ? "RDMA Write" : "Send", size, rtt[n / 2], sum / (double)n,
		       rtt[n / 2] / 2);
	}
	free(rtt);
	conn_close(&c, !is_server);
	return 0;
usage:
	fprintf(stderr, "usage: %s -s|-c SERVER [-d IA] [-p PORT] [-S SIZE] [-n N] [-W]\n", argv[0]);
	return 2;
}
