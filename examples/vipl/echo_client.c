/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vipl-echo-client: the guide's EchoClient (section 8.1.2). Single
 * threaded: the name service finds the server, a VI with its receives
 * posted connects (VipConnectRequest), and each message goes out with
 * VipPostSend/VipSendWait and comes back with VipRecvWait, verified byte
 * for byte. Messages of every size class up to -S (0 to 3, each power of
 * two and its neighbours, and -S itself), -n times each.
 *
 *   vipl-echo-client -a SERVER [-d NIC] [-D DISCRIMINATOR] [-n N] [-S MAXSIZE]
 */
#include <getopt.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
	const char *dev = "VINIC0", *disc = "echo", *server = NULL;
	size_t max_size = 65536, size, bytes = 0;
	unsigned long n = 1, msgs = 0;
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_PROTECTION_HANDLE ptag;
	VIP_VI_ATTRIBUTES va = {0}, rva;
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *sd, *rd, *d;
	struct region mem;
	net_address local, remote;
	unsigned char *sbuf, *rbuf;
	VIP_RETURN r;
	int opt, tries;

	while ((opt = getopt(argc, argv, "a:d:D:n:S:")) != -1) {
		switch (opt) {
		case 'a':
			server = optarg;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'D':
			disc = optarg;
			break;
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			max_size = strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (!server)
		goto usage;

	CHECK(VipOpenNic(dev, &nic));
	CHECK(VipNSInit(nic, NULL));
	CHECK(VipQueryNic(nic, &na));
	if (max_size > na.MaxTransferSize) {
		fprintf(stderr, "-S %zu is beyond MaxTransferSize %lu\n", max_size,
			na.MaxTransferSize);
		return 2;
	}
	CHECK(VipCreatePtag(nic, &ptag));
	/* two descriptors, then the send and the receive buffer */
	region_init(&mem, nic, 2 * sizeof(VIP_DESCRIPTOR) + 2 * max_size, ptag, VIP_FALSE);
	sd = (VIP_DESCRIPTOR *)mem.base;
	rd = sd + 1;
	sbuf = (unsigned char *)(rd + 1);
	rbuf = sbuf + max_size;
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.MaxTransferSize = max_size;
	va.Ptag = ptag;
	CHECK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	fill_desc(rd, 0, rbuf, (VIP_UINT32)max_size, mem.mh);
	CHECK(VipPostRecv(vi, rd, mem.mh));

	make_address(&local, na.LocalNicAddress, na.NicAddressLen, "echo-client");
	lookup_address(nic, &remote, server, disc);
	/* the server may not be waiting yet: VIP_NO_MATCH until it is */
	for (tries = 0; tries < 600; tries++) {
		r = VipConnectRequest(vi, &local.a, &remote.a, 30000, &rva);
		if (r != VIP_NO_MATCH)
			break;
		usleep(100000);
	}
	CHECK(r);
	printf("connected to %s (\"%s\"): reliability %#x, MaxTransferSize %lu\n", server, disc,
	       rva.ReliabilityLevel, rva.MaxTransferSize);

	size = 0;
	do {
		for (unsigned long i = 0; i < n; i++) {
			unsigned seed = (unsigned)(msgs + 1);

			pattern(sbuf, size, seed);
			memset(rbuf, 0, size);
			fill_desc(sd, 0, sbuf, (VIP_UINT32)size, mem.mh);
			CHECK(VipPostSend(vi, sd, mem.mh));
			CHECK(VipSendWait(vi, VIP_INFINITE, &d));
			if (d != sd)
				goto wrong;
			r = VipRecvWait(vi, VIP_INFINITE, &d);
			if (r != VIP_SUCCESS || d != rd) {
				fprintf(stderr, "receive of %zu bytes: %s, status %#x\n", size,
					ret_name(r), d ? d->CS.Status : 0);
				return 1;
			}
			if (d->CS.Length != size || check_pattern(rbuf, size, seed)) {
				fprintf(stderr, "%zu bytes came back wrong (length %u)\n", size,
					d->CS.Length);
				return 1;
			}
			fill_desc(rd, 0, rbuf, (VIP_UINT32)max_size, mem.mh);
			CHECK(VipPostRecv(vi, rd, mem.mh));
			msgs++;
			bytes += size;
		}
	} while ((size = next_size(size, max_size)) != 0);

	CHECK(VipDisconnect(vi));
	r = VipRecvDone(vi, &d); /* the receive still posted, flushed */
	if (r != VIP_DESCRIPTOR_ERROR || d != rd ||
	    !(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR)) {
		fprintf(stderr, "the posted receive was not flushed: %s\n", ret_name(r));
		return 1;
	}
	CHECK(VipDestroyVi(vi));
	region_fini(&mem, nic);
	CHECK(VipDestroyPtag(nic, ptag));
	CHECK(VipNSShutdown(nic));
	CHECK(VipCloseNic(nic));
	printf("%lu messages, %zu bytes echoed and verified, sizes 0 to %zu\n", msgs, bytes,
	       max_size);
	return 0;
wrong:
	fprintf(stderr, "a descriptor that was not posted came back\n");
	return 1;
usage:
	fprintf(stderr, "usage: %s -a SERVER [-d NIC] [-D DISC] [-n N] [-S MAXSIZE]\n", argv[0]);
	return 2;
}
