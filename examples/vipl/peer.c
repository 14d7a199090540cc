/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vipl-peer: the peer-to-peer connection model. Both sides run the same
 * program, each naming its own discriminator and the other's:
 *
 *   host A: vipl-peer -a B -l alpha -r beta
 *   host B: vipl-peer -a A -l beta -r alpha
 *
 * Each posts receives, asks with VipConnectPeerRequest (non-blocking) and
 * completes with VipConnectPeerDone (polling) or, with -w,
 * VipConnectPeerWait. Then both send at once: messages of every size class
 * up to -S, each verified by the other side; the first names the sender's
 * discriminator, so each side checks that it met the right peer.
 */
#include <getopt.h>
#include <unistd.h>

#include "common.h"

#define RECVS 4

int main(int argc, char **argv)
{
	const char *dev = "VINIC0", *host = NULL, *ldisc = NULL, *rdisc = NULL;
	size_t max_size = 4096, size = 0, descs = RECVS * sizeof(VIP_DESCRIPTOR);
	unsigned long polls = 0, msgs = 0;
	int opt, use_wait = 0, next = 0;
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_VI_ATTRIBUTES va = {0}, rva;
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *rd[RECVS], *sd, *d;
	unsigned char *rbuf[RECVS], *sbuf;
	struct region mem;
	net_address local, remote;
	VIP_RETURN r;

	while ((opt = getopt(argc, argv, "a:d:l:r:S:w")) != -1) {
		switch (opt) {
		case 'a':
			host = optarg;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'l':
			ldisc = optarg;
			break;
		case 'r':
			rdisc = optarg;
			break;
		case 'S':
			max_size = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			use_wait = 1;
			break;
		default:
			goto usage;
		}
	}
	if (!host || !ldisc || !rdisc || max_size < 64)
		goto usage;

	CHECK(VipOpenNic(dev, &nic));
	CHECK(VipQueryNic(nic, &na));
	CHECK(VipNSInit(nic, NULL));
	region_init(&mem, nic, descs + sizeof(VIP_DESCRIPTOR) + (RECVS + 1) * max_size, NULL,
		    VIP_FALSE);
	sd = (VIP_DESCRIPTOR *)mem.base + RECVS;
	sbuf = (unsigned char *)mem.base + descs + sizeof(VIP_DESCRIPTOR);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.MaxTransferSize = max_size;
	CHECK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	for (int i = 0; i < RECVS; i++) {
		rd[i] = (VIP_DESCRIPTOR *)mem.base + i;
		rbuf[i] = sbuf + (size_t)(i + 1) * max_size;
		fill_desc(rd[i], 0, rbuf[i], (VIP_UINT32)max_size, mem.mh);
		CHECK(VipPostRecv(vi, rd[i], mem.mh));
	}
	make_address(&local, na.LocalNicAddress, na.NicAddressLen, ldisc);
	lookup_address(nic, &remote, host, rdisc);
	CHECK(VipConnectPeerRequest(vi, &local.a, &remote.a, 240000));
	if (use_wait) {
		r = VipConnectPeerWait(vi, &rva);
	} else {
		while ((r = VipConnectPeerDone(vi, &rva)) == VIP_NOT_DONE) {
			polls++;
			usleep(10000);
		}
	}
	CHECK(r);
	printf("met %s (\"%s\") as \"%s\" after %lu polls\n", host, rdisc, ldisc, polls);

	/* the first message names the sender: "I am <disc>" */
	do {
		size_t len = size;
		unsigned seed = (unsigned)msgs;

		if (msgs == 0) {
			len = (size_t)snprintf((char *)sbuf, max_size, "I am %s", ldisc);
		} else {
			pattern(sbuf, len, seed);
		}
		fill_desc(sd, 0, sbuf, (VIP_UINT32)len, mem.mh);
		CHECK(VipPostSend(vi, sd, mem.mh));
		CHECK(VipSendWait(vi, VIP_INFINITE, &d));
		r = VipRecvWait(vi, VIP_INFINITE, &d);
		if (r != VIP_SUCCESS || d != rd[next]) {
			fprintf(stderr, "receive: %s\n", ret_name(r));
			return 1;
		}
		if (msgs == 0) {
			char want[96];

			snprintf(want, sizeof(want), "I am %s", rdisc);
			if (d->CS.Length != strlen(want) || memcmp(rbuf[next], want, strlen(want))) {
				fprintf(stderr, "met the wrong peer: \"%.*s\"\n", (int)d->CS.Length,
					(char *)rbuf[next]);
				return 1;
			}
		} else if (d->CS.Length != len || check_pattern(rbuf[next], len, seed)) {
			fprintf(stderr, "message %lu of %zu bytes: wrong\n", msgs, len);
			return 1;
		}
		fill_desc(rd[next], 0, rbuf[next], (VIP_UINT32)max_size, mem.mh);
		CHECK(VipPostRecv(vi, rd[next], mem.mh));
		next = (next + 1) % RECVS;
		msgs++;
	} while (msgs == 1 || (size = next_size(size, max_size)) != 0);
	printf("%lu messages each way, verified\n", msgs);

	/* both may disconnect: the second finds the connection gone already */
	CHECK(VipDisconnect(vi));
	while (VipRecvDone(vi, &d) == VIP_DESCRIPTOR_ERROR && d)
		;
	CHECK(VipDestroyVi(vi));
	region_fini(&mem, nic);
	CHECK(VipNSShutdown(nic));
	CHECK(VipCloseNic(nic));
	return 0;
usage:
	fprintf(stderr, "usage: %s -a HOST -l LOCALDISC -r REMOTEDISC [-d NIC] [-S MAXSIZE] [-w]\n",
		argv[0]);
	return 2;
}
