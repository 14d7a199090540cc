/* SPDX-License-Identifier: GPL-2.0 */
/*
 * itapi-stream: streaming RDMA Write bandwidth between two IT-API
 * Endpoints, as perftest's ib_write_bw measures it. The server registers
 * a buffer the peer may write and sends its address and rmr_context; the
 * client keeps -t RDMA Writes of -S bytes in flight until -n are done
 * (one it_post_rdma_write per WR, each with its completion, reaped by
 * polling it_evd_dequeue), then says so with a Send, and the server
 * verifies every byte of its buffer. The client prints the average
 * bandwidth in MB/sec (2^20 bytes, perftest's unit).
 *
 *   itapi-stream -s [-d IA] [-p PORT] [-S SIZE]
 *   itapi-stream -c SERVER [-d IA] [-p PORT] [-S SIZE] [-n N] [-t DEPTH]
 */
#include <getopt.h>

#include "common.h"

static size_t size = 65536;

/* the buffer: the data, then the two targets */
static struct target *tgt(struct conn *c) { return (struct target *)(c->buf + size); }

static void post_first_recv(struct conn *c)
{
	it_lmr_triplet_t s = seg(c, tgt(c) + 1, sizeof(struct target));

	CHECK(it_post_recv((it_handle_t)c->ep, &s, 1, 1, IT_COMPLETION_FLAG));
}

static void pattern(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7 + 3);
}

int main(int argc, char **argv)
{
	const char *ia = NULL, *server = NULL;
	unsigned long n = 1000, depth = 64;
	unsigned port = 7472;
	int opt, is_server = 0;
	struct conn c;
	it_lmr_triplet_t s;

	while ((opt = getopt(argc, argv, "sc:d:p:S:n:t:")) != -1) {
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
		case 't':
			depth = strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (is_server == !!server || size < 1 || size > (1UL << 30) || depth < 1 ||
	    depth > 4096 || n < 1 || port < 1 || port > 65535)
		goto usage;

	conn_open(&c, ia, size + 2 * sizeof(struct target), depth);
	if (is_server) {
		unsigned char *want = malloc(size);

		post_first_recv(&c);
		conn_accept(&c, "stream", (uint16_t)port);
		/* an RDMA address travels in network byte order (it_hton64) */
		tgt(&c)->addr = it_hton64((uint64_t)(uintptr_t)c.buf);
		tgt(&c)->ctx = c.ctx;
		tgt(&c)->len = (uint32_t)size;
		s = seg(&c, tgt(&c), sizeof(struct target));
		CHECK(it_post_send(c.ep, &s, 1, 2, IT_COMPLETION_FLAG));
		reap(c.req, "send");
		/* the client's "done": its Writes were placed before it */
		reap(c.rcv, "receive");
		if (!want)
			return 1;
		pattern(want, size);
		if (memcmp(want, c.buf, size)) {
			fprintf(stderr, "the streamed buffer differs from what was written\n");
			return 1;
		}
		printf("%zu bytes verified\n", size);
		free(want);
	} else {
		unsigned long posted = 0, done = 0;
		struct target *t = tgt(&c) + 1;
		double t0, secs;

		conn_connect(&c, server, (uint16_t)port, post_first_recv);
		reap(c.rcv, "receive");
		if (t->len != size) {
			fprintf(stderr, "the server's buffer has %u bytes, not %zu\n", t->len, size);
			return 1;
		}
		pattern(c.buf, size);
		s = seg(&c, c.buf, size);
		t0 = now_us();
		while (done < n) {
			while (posted < n && posted - done < depth) {
				CHECK(it_post_rdma_write(c.ep, &s, 1, posted, IT_COMPLETION_FLAG, t->addr,
							 t->ctx));
				posted++;
			}
			reap(c.req, "RDMA Write");
			done++;
		}
		secs = (now_us() - t0) / 1e6;
		s = seg(&c, t, 8);
		CHECK(it_post_send(c.ep, &s, 1, n, IT_COMPLETION_FLAG));
		reap(c.req, "send");
		printf("%lu RDMA Writes of %zu bytes, %lu in flight: average %.2f MB/sec\n", n, size,
		       depth, (double)n * (double)size / secs / 1048576.0);
	}
	conn_close(&c, !is_server);
	return 0;
usage:
	fprintf(stderr, "usage: %s -s|-c SERVER [-d IA] [-p PORT] [-S SIZE] [-n N] [-t DEPTH]\n",
		argv[0]);
	return 2;
}
