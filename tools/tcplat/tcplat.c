// SPDX-License-Identifier: GPL-2.0
/*
 * viaduct-tcplat: the TCP latency floor between two hosts, for "make bench".
 * A client and a server exchange N small requests and responses (8 bytes
 * by default) over one TCP connection with TCP_NODELAY; the client times
 * each round trip and prints the median and other percentiles of half a
 * round trip, in microseconds, the unit viaduct-perf and perftest use for
 * t_typical. Two ways of waiting, each on its own connection:
 *
 *   blocking   read() sleeps until the bytes are there (a wakeup per
 *              message, as an RDMA consumer blocking on a CQ event);
 *   busy       non-blocking read() in a loop (no sleep, as a consumer
 *              polling its CQ).
 *
 *   viaduct-tcplat -s [-p PORT] [-B ADDR]          server (one client, then exits)
 *   viaduct-tcplat -c ADDR [-p PORT] [-n N] [-S BYTES] [--busy|--blocking]
 *
 * The client prints one line per mode:
 *   "#bytes #iters t_min[us] t_median[us] t_p99[us] mode"
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TL_MAX_SIZE	4096

static void usage(FILE *f)
{
	fprintf(f,
		"usage: viaduct-tcplat -s [-p PORT] [-B ADDR]\n"
		"       viaduct-tcplat -c ADDR [-p PORT] [-n ITERS] [-S BYTES] [--busy|--blocking]\n"
		"TCP request/response latency (half round trip, microseconds).\n"
		"  -s            serve one client, then exit\n"
		"  -c ADDR       connect to the server at ADDR\n"
		"  -p PORT       TCP port (default 18515)\n"
		"  -B ADDR       server: address to bind (default any)\n"
		"  -n ITERS      round trips per mode (default 1000)\n"
		"  -S BYTES      message size, 1 to %d (default 8)\n"
		"  --busy        only the busy-polling mode\n"
		"  --blocking    only the blocking mode\n",
		TL_MAX_SIZE);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* All of @len bytes; on a non-blocking socket, spins on EAGAIN. */
static int xfer(int fd, char *buf, size_t len, int sending)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = sending ? send(fd, buf + done, len - done, MSG_NOSIGNAL) :
				      recv(fd, buf + done, len - done, 0);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return -1;
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			continue;
		return -1;
	}
	return 0;
}

static int set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The first bytes of a connection: mode, size, iterations (host order). */
struct tl_hello {
	uint32_t busy;
	uint32_t size;
	uint32_t iters;
};

static int serve_one(int fd)
{
	struct tl_hello h;
	char buf[TL_MAX_SIZE];
	uint32_t i;

	if (xfer(fd, (char *)&h, sizeof(h), 0))
		return -1;
	if (!h.size || h.size > TL_MAX_SIZE)
		return -1;
	if (set_nonblock(fd, h.busy != 0))
		return -1;
	for (i = 0; i < h.iters; i++)
		if (xfer(fd, buf, h.size, 0) || xfer(fd, buf, h.size, 1))
			return -1;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int run_client(int fd, int busy, uint32_t size, uint32_t iters)
{
	struct tl_hello h = { (uint32_t)busy, size, iters };
	char buf[TL_MAX_SIZE];
	uint64_t *t = calloc(iters, sizeof(*t));
	uint32_t i;

	if (!t)
		return -1;
	memset(buf, 0x5a, sizeof(buf));
	if (xfer(fd, (char *)&h, sizeof(h), 1) || set_nonblock(fd, busy))
		goto fail;
	for (i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();

		if (xfer(fd, buf, size, 1) || xfer(fd, buf, size, 0))
			goto fail;
		t[i] = now_ns() - t0;
	}
	qsort(t, iters, sizeof(*t), cmp_u64);
	printf("%8u %8u %12.2f %12.2f %12.2f  %s\n", size, iters, (double)t[0] / 2000.0,
	       (double)t[iters / 2] / 2000.0, (double)t[(uint64_t)iters * 99 / 100] / 2000.0,
	       busy ? "busy" : "blocking");
	free(t);
	return 0;
fail:
	fprintf(stderr, "viaduct-tcplat: connection failed: %s\n", strerror(errno));
	free(t);
	return -1;
}

static int resolve(const char *host, const char *port, int passive,
		   struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : 0 };
	int err = getaddrinfo(host, port, &hints, res);

	if (err)
		fprintf(stderr, "viaduct-tcplat: %s: %s\n", host ? host : "*",
			gai_strerror(err));
	return err ? -1 : 0;
}

static int server(const char *bind_addr, const char *port)
{
	struct addrinfo *ai;
	int one = 1, lfd, fd, mode, ret = 0;

	if (resolve(bind_addr, port, 1, &ai))
		return 1;
	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 2)) {
		perror("viaduct-tcplat: listen");
		freeaddrinfo(ai);
		return 1;
	}
	freeaddrinfo(ai);
	printf("listening on port %s\n", port);
	fflush(stdout);
	/* one connection per mode; the client says how many with its first */
	for (mode = 0; mode < 2; mode++) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			perror("viaduct-tcplat: accept");
			ret = 1;
			break;
		}
		tune(fd);
		if (serve_one(fd))
			ret = 1;
		close(fd);
	}
	close(lfd);
	return ret;
}

static int client(const char *host, const char *port, int modes, uint32_t size,
		  uint32_t iters)
{
	int mode, ret = 0;

	printf("%8s %8s %12s %12s %12s  %s\n", "#bytes", "#iters", "t_min[us]",
	       "t_median[us]", "t_p99[us]", "mode");
	/* modes: bit 0 blocking, bit 1 busy; the server takes two connections */
	for (mode = 0; mode < 2; mode++) {
		struct addrinfo *ai;
		int fd, run = modes & (1 << mode);

		if (resolve(host, port, 0, &ai))
			return 1;
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			perror("viaduct-tcplat: connect");
			freeaddrinfo(ai);
			return 1;
		}
		freeaddrinfo(ai);
		tune(fd);
		if (run_client(fd, mode, size, run ? iters : 1))
			ret = 1;
		close(fd);
	}
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "busy", no_argument, NULL, 'b' },
		{ "blocking", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *host = NULL, *bind_addr = NULL, *port = "18515";
	unsigned long iters = 1000, size = 8;
	int c, srv = 0, modes = 3;
	char *end;

	while ((c = getopt_long(argc, argv, "sc:p:B:n:S:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			srv = 1;
			break;
		case 'c':
			host = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'B':
			bind_addr = optarg;
			break;
		case 'n':
			iters = strtoul(optarg, &end, 10);
			if (*end || !iters || iters > 100000000) {
				fprintf(stderr, "viaduct-tcplat: bad -n %s\n", optarg);
				return 2;
			}
			break;
		case 'S':
			size = strtoul(optarg, &end, 10);
			if (*end || !size || size > TL_MAX_SIZE) {
				fprintf(stderr, "viaduct-tcplat: bad -S %s (1 to %d)\n", optarg,
					TL_MAX_SIZE);
				return 2;
			}
			break;
		case 'b':
			modes = 2;
			break;
		case 'k':
			modes = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || srv == !!host) {
		usage(stderr);
		return 2;
	}
	return srv ? server(bind_addr, port) :
		     client(host, port, modes, (uint32_t)size, (uint32_t)iters);
}
