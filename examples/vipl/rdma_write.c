/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vipl-rdma-write: RDMA Write between two VIs. The server registers a
 * buffer with EnableRdmaWrite, on a VI with EnableRdmaWrite, and sends its
 * address and memory handle to the client. The client then writes messages
 * of every size class up to -S into it: RDMA Write with immediate data
 * (which consumes a receive at the server, status OP_REMOTE_RDMA_WRITE
 * with the written length) and plain RDMA Write followed by a Send whose
 * immediate data carries the length. The server verifies each message and
 * acknowledges it with an empty Send.
 *
 *   vipl-rdma-write -s [-d NIC] [-D DISC] [-S MAXSIZE]
 *   vipl-rdma-write -c SERVER [-d NIC] [-D DISC] [-S MAXSIZE]
 */
#include <getopt.h>
#include <unistd.h>

#include "common.h"

struct target {
	VIP_UINT64 addr;
	VIP_MEM_HANDLE handle;
	VIP_UINT32 size;
};

static VIP_DESCRIPTOR *wait_done(VIP_VI_HANDLE vi, int recv)
{
	VIP_DESCRIPTOR *d = NULL;
	VIP_RETURN r = recv ? VipRecvWait(vi, VIP_INFINITE, &d) : VipSendWait(vi, VIP_INFINITE, &d);

	if (r != VIP_SUCCESS) {
		fprintf(stderr, "%s: %s, status %#x\n", recv ? "receive" : "send", ret_name(r),
			d ? d->CS.Status : 0);
		exit(1);
	}
	return d;
}

int main(int argc, char **argv)
{
	const char *dev = "VINIC0", *disc = "rdmaw", *server = NULL;
	size_t max_size = 65536, size = 0;
	int opt, is_server = 0;
	unsigned long msgs = 0;
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_VI_ATTRIBUTES va = {0}, rva;
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *sd, *rd, *d;
	struct region mem, data;
	net_address local, remote;
	struct target *t;

	while ((opt = getopt(argc, argv, "sc:d:D:S:")) != -1) {
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
			max_size = strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (is_server == !!server || max_size < 1)
		goto usage;

	CHECK(VipOpenNic(dev, &nic));
	CHECK(VipQueryNic(nic, &na));
	/* descriptors (three segments' room each) and the target message */
	region_init(&mem, nic, 4096, NULL, VIP_FALSE);
	sd = (VIP_DESCRIPTOR *)mem.base;
	rd = sd + 2;
	t = (struct target *)((char *)mem.base + 2048);
	/* the data: written into at the server, written from at the client */
	region_init(&data, nic, max_size, NULL, is_server ? VIP_TRUE : VIP_FALSE);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.MaxTransferSize = max_size > sizeof(*t) ? max_size : sizeof(*t);
	va.EnableRdmaWrite = is_server ? VIP_TRUE : VIP_FALSE;
	CHECK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	fill_desc(rd, 0, t, sizeof(*t), mem.mh);
	CHECK(VipPostRecv(vi, rd, mem.mh));

	if (is_server) {
		VIP_CONN_HANDLE conn;

		make_address(&local, na.LocalNicAddress, na.NicAddressLen, disc);
		printf("rdma-write server on %s: waiting\n", na.Name);
		fflush(stdout);
		CHECK(VipConnectWait(nic, &local.a, VIP_INFINITE, &remote.a, &rva, &conn));
		CHECK(VipConnectAccept(conn, vi));
		/* tell the client where to write */
		t[1].addr = (VIP_UINT64)(uintptr_t)data.base;
		t[1].handle = data.mh;
		t[1].size = (VIP_UINT32)max_size;
		fill_desc(sd, 0, &t[1], sizeof(*t), mem.mh);
		CHECK(VipPostSend(vi, sd, mem.mh));
		wait_done(vi, 0);
		do {
			VIP_UINT32 st, len;

			d = wait_done(vi, 1);
			st = d->CS.Status;
			if (!(st & VIP_STATUS_IMMEDIATE)) {
				fprintf(stderr, "message %lu: no immediate data\n", msgs);
				return 1;
			}
			if ((st & VIP_STATUS_OP_MASK) == VIP_STATUS_OP_REMOTE_RDMA_WRITE)
				len = d->CS.Length; /* written by an RDMA Write with immediate */
			else
				len = d->CS.ImmediateData; /* announced by the Send behind a plain Write */
			if (len != size || d->CS.ImmediateData != size ||
			    check_pattern(data.base, size, (unsigned)msgs)) {
				fprintf(stderr, "message %lu (%zu bytes, status %#x): wrong\n", msgs,
					size, st);
				return 1;
			}
			fill_desc(rd, 0, t, sizeof(*t), mem.mh);
			CHECK(VipPostRecv(vi, rd, mem.mh));
			fill_desc(sd, 0, NULL, 0, mem.mh);
			sd->CS.SegCount = 0;
			CHECK(VipPostSend(vi, sd, mem.mh));
			wait_done(vi, 0);
			msgs++;
		} while ((size = next_size(size, max_size)) != 0);
		printf("%lu RDMA Writes received and verified, sizes 0 to %zu\n", msgs, max_size);
	} else {
		struct target peer;
		VIP_RETURN r;
		int tries;

		CHECK(VipNSInit(nic, NULL));
		make_address(&local, na.LocalNicAddress, na.NicAddressLen, "rdmaw-client");
		lookup_address(nic, &remote, server, disc);
		for (tries = 0; tries < 600; tries++) {
			r = VipConnectRequest(vi, &local.a, &remote.a, 30000, &rva);
			if (r != VIP_NO_MATCH)
				break;
			usleep(100000);
		}
		CHECK(r);
		CHECK(VipNSShutdown(nic));
		d = wait_done(vi, 1);
		peer = *t;
		if (peer.size < max_size) {
			fprintf(stderr, "the server has room for %u bytes only\n", peer.size);
			return 1;
		}
		do {
			int with_imm = msgs % 2 == 0;

			pattern(data.base, size, (unsigned)msgs);
			fill_desc(rd, 0, t, sizeof(*t), mem.mh);
			CHECK(VipPostRecv(vi, rd, mem.mh)); /* for the acknowledgement */
			/* control segment, address segment, one data segment */
			memset(sd, 0, 3 * 16 + 16);
			sd->CS.Control = VIP_CONTROL_OP_RDMAWRITE |
					 (with_imm ? VIP_CONTROL_IMMEDIATE : 0);
			sd->CS.SegCount = 2;
			sd->CS.Length = (VIP_UINT32)size;
			sd->CS.ImmediateData = (VIP_UINT32)size;
			sd->DS[0].Remote.Data.AddressBits = peer.addr;
			sd->DS[0].Remote.Handle = peer.handle;
			sd->DS[1].Local.Data.Address = data.base;
			sd->DS[1].Local.Handle = data.mh;
			sd->DS[1].Local.Length = (VIP_UINT32)size;
			CHECK(VipPostSend(vi, sd, mem.mh));
			d = wait_done(vi, 0);
			if ((d->CS.Status & VIP_STATUS_OP_MASK) != VIP_STATUS_OP_RDMA_WRITE) {
				fprintf(stderr, "RDMA Write completed as %#x\n", d->CS.Status);
				return 1;
			}
			if (!with_imm) {
				fill_desc(sd, VIP_CONTROL_IMMEDIATE, NULL, 0, mem.mh);
				sd->CS.SegCount = 0;
				sd->CS.ImmediateData = (VIP_UINT32)size;
				CHECK(VipPostSend(vi, sd, mem.mh));
				wait_done(vi, 0);
			}
			wait_done(vi, 1); /* the server has checked it */
			msgs++;
		} while ((size = next_size(size, max_size)) != 0);
		printf("%lu RDMA Writes of sizes 0 to %zu verified by the server\n", msgs, max_size);
	}
	CHECK(VipDisconnect(vi));
	while (VipRecvDone(vi, &d) == VIP_DESCRIPTOR_ERROR && d)
		;
	CHECK(VipDestroyVi(vi));
	region_fini(&data, nic);
	region_fini(&mem, nic);
	CHECK(VipCloseNic(nic));
	return 0;
usage:
	fprintf(stderr, "usage: %s -s|-c SERVER [-d NIC] [-D DISC] [-S MAXSIZE]\n", argv[0]);
	return 2;
}
