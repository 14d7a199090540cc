/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vipl-stream: streaming RDMA Write bandwidth between two VIs, as
 * perftest's ib_write_bw measures it. The server registers a buffer with
 * RDMA Write enabled and sends its address and memory handle; the client
 * keeps -t RDMA Writes of -S bytes in flight until -n are done (completion
 * by polling: VipSendDone, no system call), then says so with a Send, and
 * the server verifies every byte of its buffer. The client prints the
 * average bandwidth in MB/sec (2^20 bytes, perftest's unit).
 *
 *   vipl-stream -s [-d NIC] [-D DISC] [-S SIZE]
 *   vipl-stream -c SERVER [-d NIC] [-D DISC] [-S SIZE] [-n N] [-t DEPTH]
 */
#include <getopt.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

struct target {
	VIP_UINT64 addr;
	VIP_MEM_HANDLE mh;
	VIP_UINT32 size;
};

/* Descriptor @i of the block at @base: 128 bytes each, 64-byte aligned. */
static VIP_DESCRIPTOR *desc_at(void *base, unsigned long i)
{
	return (VIP_DESCRIPTOR *)((char *)base + i * 128);
}

static VIP_DESCRIPTOR *complete(VIP_VI_HANDLE vi, int recv)
{
	VIP_DESCRIPTOR *d = NULL;
	VIP_RETURN r;

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

static void rdma_write(VIP_DESCRIPTOR *d, const struct target *t, void *src, VIP_MEM_HANDLE mh)
{
	memset(d, 0, sizeof(VIP_CONTROL_SEGMENT) + 2 * sizeof(VIP_DATA_SEGMENT));
	d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
	d->CS.SegCount = 2;
	d->CS.Length = t->size;
	d->DS[0].Remote.Data.AddressBits = t->addr;
	d->DS[0].Remote.Handle = t->mh;
	d->DS[1].Local.Data.Address = src;
	d->DS[1].Local.Handle = mh;
	d->DS[1].Local.Length = t->size;
}

int main(int argc, char **argv)
{
	const char *dev = "VINIC0", *disc = "stream", *server = NULL;
	int opt, is_server = 0;
	size_t size = 65536;
	unsigned long n = 1000, depth = 64;
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_VI_ATTRIBUTES va = {0}, rva;
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *d;
	struct region ctl, data;
	net_address local, remote;
	struct target *t;

	while ((opt = getopt(argc, argv, "sc:d:D:S:n:t:")) != -1) {
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
		case 't':
			depth = strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (is_server == !!server || size < 1 || size > 0xffffffffUL || depth < 1 || n < 1)
		goto usage;

	CHECK(VipOpenNic(dev, &nic));
	CHECK(VipQueryNic(nic, &na));
	if (depth > na.MaxDescriptorsPerQueue)
		depth = na.MaxDescriptorsPerQueue;
	/* descriptors (64-byte aligned, 128 bytes each) and two small buffers */
	region_init(&ctl, nic, (depth + 2) * 128 + 2 * sizeof(*t), NULL, VIP_FALSE);
	t = (struct target *)((char *)ctl.base + (depth + 2) * 128);
	region_init(&data, nic, size, NULL, is_server ? VIP_TRUE : VIP_FALSE);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.MaxTransferSize = size;
	va.EnableRdmaWrite = is_server ? VIP_TRUE : VIP_FALSE;
	CHECK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	/* the server's "done", the client's target */
	fill_desc(desc_at(ctl.base, 0), 0, t + 1, sizeof(*t), ctl.mh);
	CHECK(VipPostRecv(vi, desc_at(ctl.base, 0), ctl.mh));

	if (is_server) {
		VIP_CONN_HANDLE conn;

		make_address(&local, na.LocalNicAddress, na.NicAddressLen, disc);
		printf("stream server on %s: waiting\n", na.Name);
		fflush(stdout);
		CHECK(VipConnectWait(nic, &local.a, VIP_INFINITE, &remote.a, &rva, &conn));
		CHECK(VipConnectAccept(conn, vi));
		t->addr = (VIP_UINT64)(uintptr_t)data.base;
		t->mh = data.mh;
		t->size = (VIP_UINT32)size;
		fill_desc(desc_at(ctl.base, 1), 0, t, sizeof(*t), ctl.mh);
		CHECK(VipPostSend(vi, desc_at(ctl.base, 1), ctl.mh));
		complete(vi, 0);
		d = complete(vi, 1);
		if (check_pattern(data.base, size, 7)) {
			fprintf(stderr, "the streamed buffer differs from what was written\n");
			return 1;
		}
		printf("%lu bytes verified\n", (unsigned long)size);
	} else {
		struct timespec t0, t1;
		unsigned long posted = 0, done = 0;
		VIP_RETURN r;
		double secs;
		int tries;

		CHECK(VipNSInit(nic, NULL));
		make_address(&local, na.LocalNicAddress, na.NicAddressLen, "stream-client");
		lookup_address(nic, &remote, server, disc);
		for (tries = 0; tries < 600; tries++) {
			r = VipConnectRequest(vi, &local.a, &remote.a, 30000, &rva);
			if (r != VIP_NO_MATCH)
				break;
			usleep(100000);
		}
		CHECK(r);
		CHECK(VipNSShutdown(nic));
		complete(vi, 1);
		t = t + 1;
		if (t->size != size) {
			fprintf(stderr, "the server's buffer has %u bytes, not %zu\n", t->size, size);
			return 1;
		}
		pattern(data.base, size, 7);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (done < n) {
			while (posted < n && posted - done < depth) {
				d = desc_at(ctl.base, 2 + posted % depth);
				rdma_write(d, t, data.base, data.mh);
				CHECK(VipPostSend(vi, d, ctl.mh));
				posted++;
			}
			complete(vi, 0);
			done++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		/* RDMA Writes are placed in order: the Send comes after all */
		fill_desc(desc_at(ctl.base, 1), 0, t, 8, ctl.mh);
		CHECK(VipPostSend(vi, desc_at(ctl.base, 1), ctl.mh));
		complete(vi, 0);
		printf("%lu RDMA Writes of %zu bytes, %lu in flight: average %.2f MB/sec\n", n, size,
		       depth, (double)n * (double)size / secs / 1048576.0);
	}
	CHECK(VipDisconnect(vi));
	while (VipRecvDone(vi, &d) == VIP_DESCRIPTOR_ERROR && d)
		;
	CHECK(VipDestroyVi(vi));
	region_fini(&data, nic);
	region_fini(&ctl, nic);
	CHECK(VipCloseNic(nic));
	return 0;
usage:
	fprintf(stderr,
		"usage: %s -s|-c SERVER [-d NIC] [-D DISC] [-S SIZE] [-n N] [-t DEPTH]\n",
		argv[0]);
	return 2;
}
