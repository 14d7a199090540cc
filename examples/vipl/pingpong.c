/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vipl-pingpong: request/response between two VIs. The client sends -S
 * bytes, the server answers with as many, -n times; the client verifies
 * every answer and prints the median and mean round trip. Completion by polling
 * (VipSendDone/VipRecvDone, no system call) or, with -w, by waiting.
 *
 * With -W the messages are RDMA Writes instead of Sends: the two sides
 * exchange the address and memory handle of their receive buffers with a
 * Send, then each writes the other's buffer and spins on the last byte of
 * its own, which carries the message's tag (as perftest's ib_write_lat).
 *
 * The timed path does what viaduct-perf's does, so that the two measure
 * the same work: a send's descriptor is reaped off it, by the client once
 * the round trip is timed, by the server once its answer is posted (from
 * the other of two descriptors and buffers, the previous one being still
 * the VI's until reaped).
 *
 *   vipl-pingpong -s [-d NIC] [-D DISC] [-S SIZE] [-n N] [-w] [-W]
 *   vipl-pingpong -c SERVER [-d NIC] [-D DISC] [-S SIZE] [-n N] [-w] [-W]
 */
#include <getopt.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static int use_wait;

/* -W: where the peer's receive buffer is */
struct target {
	VIP_UINT64 addr;
	VIP_MEM_HANDLE mh;
	VIP_UINT32 size;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static VIP_DESCRIPTOR *complete(VIP_VI_HANDLE vi, int recv)
{
	VIP_DESCRIPTOR *d = NULL;
	VIP_RETURN r;

	if (use_wait)
		r = recv ? VipRecvWait(vi, VIP_INFINITE, &d) : VipSendWait(vi, VIP_INFINITE, &d);
	else
		do
			r = recv ? VipRecvDone(vi, &d) : VipSendDone(vi, &d);
		while (r == VIP_NOT_DONE);
	if (r != VIP_SUCCESS) {
		fprintf(stderr, "%s: %s, status %#x\n", recv ? "receive" : "send", ret_name(r),
			d ? d->CS.Status : 0);
		exit(1);
	}
	return d;
}

/* -W: an RDMA Write of @size bytes from @src to the peer's buffer @t. */
static void post_write(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, const struct target *t, void *src,
		       size_t size, VIP_MEM_HANDLE mh)
{
	memset(d, 0, sizeof(*d));
	d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
	d->CS.SegCount = 2;
	d->CS.Length = (VIP_UINT32)size;
	d->DS[0].Remote.Data.AddressBits = t->addr;
	d->DS[0].Remote.Handle = t->mh;
	d->DS[1].Local.Data.Address = src;
	d->DS[1].Local.Handle = mh;
	d->DS[1].Local.Length = (VIP_UINT32)size;
	CHECK(VipPostSend(vi, d, mh));
}

/* -W: waits for the peer's Write of message @tag; 0 if its first byte matches. */
static int wait_write(const unsigned char *buf, size_t size, unsigned char tag)
{
	const volatile unsigned char *last = buf + size - 1;

	while (*last != tag)
		;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return buf[0] == tag ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *dev = "VINIC0", *disc = "pingpong", *server = NULL;
	int opt, is_server = 0, use_write = 0;
	size_t size = 64;
	unsigned long n = 1000;
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_VI_ATTRIBUTES va = {0}, rva;
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *sd, *rd, *d, *ad;
	struct region mem;
	net_address local, remote;
	unsigned char *sbuf, *rbuf, *abuf;
	struct target *tin, *tout;
	struct timespec t0, t1;
	double *rtt;

	while ((opt = getopt(argc, argv, "sc:d:D:S:n:wW")) != -1) {
		switch (opt) {
		case 's':
			is_server = 1;
			break;
		case 'c':
			server = optarg;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'D':
			disc = optarg;
			break;
		case 'S':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			use_wait = 1;
			break;
		case 'W':
			use_write = 1;
			break;
		default:
			goto usage;
		}
	}
	if (is_server == !!server || size < 1)
		goto usage;

	CHECK(VipOpenNic(dev, &nic));
	CHECK(VipQueryNic(nic, &na));
	/* sd[2], rd, tin, tout, sbuf[2], rbuf */
	region_init(&mem, nic, 3 * sizeof(VIP_DESCRIPTOR) + 2 * sizeof(struct target) + 3 * size,
		    NULL, use_write ? VIP_TRUE : VIP_FALSE);
	sd = (VIP_DESCRIPTOR *)mem.base;
	rd = sd + 2;
	tin = (struct target *)(rd + 1);
	tout = tin + 1;
	sbuf = (unsigned char *)(tout + 1);
	rbuf = sbuf + 2 * size;
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.MaxTransferSize = size < sizeof(*tout) ? sizeof(*tout) : size;
	va.EnableRdmaWrite = use_write ? VIP_TRUE : VIP_FALSE;
	CHECK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	if (use_write)
		fill_desc(rd, 0, tin, sizeof(*tin), mem.mh);
	else
		fill_desc(rd, 0, rbuf, (VIP_UINT32)size, mem.mh);
	CHECK(VipPostRecv(vi, rd, mem.mh));

	if (is_server) {
		VIP_CONN_HANDLE conn;

		make_address(&local, na.LocalNicAddress, na.NicAddressLen, disc);
		printf("pingpong server on %s: waiting\n", na.Name);
		fflush(stdout);
		CHECK(VipConnectWait(nic, &local.a, VIP_INFINITE, &remote.a, &rva, &conn));
		CHECK(VipConnectAccept(conn, vi));
	} else {
		VIP_RETURN r;
		int tries;

		CHECK(VipNSInit(nic, NULL));
		make_address(&local, na.LocalNicAddress, na.NicAddressLen, "pingpong-client");
		lookup_address(nic, &remote, server, disc);
		for (tries = 0; tries < 600; tries++) {
			r = VipConnectRequest(vi, &local.a, &remote.a, 30000, &rva);
			if (r != VIP_NO_MATCH)
				break;
			usleep(100000);
		}
		CHECK(r);
		CHECK(VipNSShutdown(nic));
	}

	rtt = calloc(n, sizeof(*rtt));
	if (!rtt)
		return 1;
	if (use_write) {
		tout->addr = (VIP_UINT64)(uintptr_t)rbuf;
		tout->mh = mem.mh;
		tout->size = (VIP_UINT32)size;
		fill_desc(sd, 0, tout, sizeof(*tout), mem.mh);
		CHECK(VipPostSend(vi, sd, mem.mh));
		complete(vi, 0);
		complete(vi, 1);
		if (tin->size != size) {
			fprintf(stderr, "the peer's buffer has %u bytes, not %zu\n", tin->size, size);
			return 1;
		}
	}
	for (unsigned long i = 0; use_write && i < n; i++) {
		unsigned char tag = (unsigned char)(i % 255 + 1);

		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (!is_server) {
			sbuf[0] = tag;
			sbuf[size - 1] = tag;
			post_write(vi, sd, tin, sbuf, size, mem.mh);
		}
		if (wait_write(rbuf, size, tag)) {
			fprintf(stderr, "message %lu: wrong answer\n", i);
			return 1;
		}
		if (is_server) {
			/* the previous Write's descriptor and buffer are the VI's until reaped */
			ad = sd + (i & 1);
			abuf = sbuf + (i & 1) * size;
			abuf[0] = tag;
			abuf[size - 1] = tag;
			post_write(vi, ad, tin, abuf, size, mem.mh);
			if (i)
				complete(vi, 0);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		rtt[i] = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
			 1e3;
		if (!is_server)
			complete(vi, 0);
	}
	for (unsigned long i = 0; !use_write && i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (!is_server) {
			pattern(sbuf, size, (unsigned)i);
			fill_desc(sd, 0, sbuf, (VIP_UINT32)size, mem.mh);
			CHECK(VipPostSend(vi, sd, mem.mh));
		}
		d = complete(vi, 1);
		if (d->CS.Length != size || (!is_server && check_pattern(rbuf, size, (unsigned)i))) {
			fprintf(stderr, "message %lu: wrong answer\n", i);
			return 1;
		}
		/* the answer, from the other of two buffers and descriptors */
		ad = sd + (i & 1);
		abuf = sbuf + (i & 1) * size;
		if (is_server)
			memcpy(abuf, rbuf, size);
		fill_desc(rd, 0, rbuf, (VIP_UINT32)size, mem.mh);
		CHECK(VipPostRecv(vi, rd, mem.mh));
		if (is_server) {
			fill_desc(ad, 0, abuf, (VIP_UINT32)size, mem.mh);
			CHECK(VipPostSend(vi, ad, mem.mh));
			if (i)
				complete(vi, 0);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		rtt[i] = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
			 1e3;
		if (!is_server)
			complete(vi, 0);
	}
	if (is_server && n)
		complete(vi, 0);
	if (!is_server && n) {
		double sum = 0;

		for (unsigned long i = 0; i < n; i++)
			sum += rtt[i];
		qsort(rtt, n, sizeof(*rtt), cmp_double);
		printf("%lu %s round trips of %zu bytes, verified: median %.2f us, mean %.2f us "
		       "(half round trip: median %.2f us)\n",
		       n, use_write ? "RDMA Write" : "Send", size, rtt[n / 2], sum / (double)n, rtt[n / 2] / 2);
	}
	free(rtt);
	CHECK(VipDisconnect(vi));
	while (VipRecvDone(vi, &d) == VIP_DESCRIPTOR_ERROR && d)
		;
	CHECK(VipDestroyVi(vi));
	region_fini(&mem, nic);
	CHECK(VipCloseNic(nic));
	return 0;
usage:
	fprintf(stderr, "usage: %s -s|-c SERVER [-d NIC] [-D DISC] [-S SIZE] [-n N] [-w] [-W]\n",
		argv[0]);
	return 2;
}
