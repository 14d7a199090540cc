/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vipl-echo-server: the guide's EchoServer (section 8.1.1). A listen loop
 * takes one connection request at a time (VipConnectWait, VipCreateVi,
 * VipConnectAccept); the receive queues of all clients' VIs share one
 * completion queue, which a worker thread waits on (VipCQWait), echoing
 * each message back on the client's send queue (VipPostSend, VipSendWait).
 * A client that goes away (its receives come back flushed) is disconnected
 * and its VI destroyed; the others go on. Exits after -n clients.
 *
 *   vipl-echo-server [-d NIC] [-D DISCRIMINATOR] [-n CLIENTS] [-S MAXSIZE]
 */
#include <getopt.h>
#include <pthread.h>

#include "common.h"

#define RECVS 4 /* receives posted per client */
#define MAX_CLIENTS 16

struct client {
	VIP_VI_HANDLE vi;
	struct region mem; /* RECVS+1 descriptors, then RECVS buffers */
	VIP_DESCRIPTOR *recv[RECVS];
	unsigned char *buf[RECVS];
	VIP_DESCRIPTOR *send;
	int gone;
};

static VIP_NIC_HANDLE nic;
static VIP_CQ_HANDLE cq;
static size_t max_size = 65536;
static struct client clients[MAX_CLIENTS];
static int nclients, accepted, finished, want = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static struct client *client_of(VIP_VI_HANDLE vi)
{
	struct client *c = NULL;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < nclients; i++)
		if (clients[i].vi == vi && !clients[i].gone)
			c = &clients[i];
	pthread_mutex_unlock(&lock);
	return c;
}

/* Ends client @c once: @served counts it toward -n. */
static void drop(struct client *c, int served)
{
	VIP_DESCRIPTOR *d;

	pthread_mutex_lock(&lock);
	if (c->gone) {
		pthread_mutex_unlock(&lock);
		return;
	}
	c->gone = 1;
	pthread_mutex_unlock(&lock);
	/* the guide's recovery: disconnect, drain both queues, destroy */
	CHECK(VipDisconnect(c->vi));
	while (VipRecvDone(c->vi, &d) != VIP_DESCRIPTOR_ERROR || d)
		;
	while (VipSendDone(c->vi, &d) != VIP_DESCRIPTOR_ERROR || d)
		;
	CHECK(VipDestroyVi(c->vi));
	region_fini(&c->mem, nic);
	pthread_mutex_lock(&lock);
	finished += served;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		VIP_VI_HANDLE vi;
		VIP_BOOLEAN recvq;
		VIP_DESCRIPTOR *d, *s;
		struct client *c;
		VIP_RETURN r;
		int i;

		pthread_mutex_lock(&lock);
		i = finished == want;
		pthread_mutex_unlock(&lock);
		if (i)
			return NULL;
		r = VipCQWait(cq, 200, &vi, &recvq);
		if (r == VIP_TIMEOUT)
			continue;
		CHECK(r);
		c = client_of(vi);
		if (!c || !recvq)
			continue; /* a stale entry */
		r = VipRecvDone(vi, &d);
		if (r == VIP_NOT_DONE)
			continue; /* taken already */
		if (r != VIP_SUCCESS) {
			/* flushed or failed: this client is done */
			if (d && !(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR))
				fprintf(stderr, "client %ld: receive status %#x\n",
					(long)(c - clients), d->CS.Status);
			drop(c, 1);
			continue;
		}
		for (i = 0; i < RECVS && c->recv[i] != d; i++)
			;
		s = c->send;
		fill_desc(s, VIP_CONTROL_OP_SENDRECV, c->buf[i], d->CS.Length, c->mem.mh);
		CHECK(VipPostSend(vi, s, c->mem.mh));
		r = VipSendWait(vi, VIP_INFINITE, &s);
		if (r != VIP_SUCCESS) {
			drop(c, 1);
			continue;
		}
		fill_desc(d, 0, c->buf[i], (VIP_UINT32)max_size, c->mem.mh);
		CHECK(VipPostRecv(vi, d, c->mem.mh));
	}
}

int main(int argc, char **argv)
{
	const char *dev = "VINIC0", *disc = "echo";
	VIP_NIC_ATTRIBUTES na;
	VIP_PROTECTION_HANDLE ptag;
	net_address local, remote;
	pthread_t th;
	int opt;

	while ((opt = getopt(argc, argv, "d:D:n:S:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'D':
			disc = optarg;
			break;
		case 'n':
			want = atoi(optarg);
			break;
		case 'S':
			max_size = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-d NIC] [-D DISC] [-n CLIENTS] [-S MAXSIZE]\n",
				argv[0]);
			return 2;
		}
	}
	if (want < 1 || want > MAX_CLIENTS) {
		fprintf(stderr, "-n: 1 to %d clients\n", MAX_CLIENTS);
		return 2;
	}
	CHECK(VipOpenNic(dev, &nic));
	CHECK(VipQueryNic(nic, &na));
	CHECK(VipCreatePtag(nic, &ptag));
	CHECK(VipCreateCQ(nic, MAX_CLIENTS * RECVS, &cq));
	make_address(&local, na.LocalNicAddress, na.NicAddressLen, disc);
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	printf("echo server on %s, discriminator \"%s\": waiting for %d client(s)\n", na.Name,
	       disc, want);
	fflush(stdout);

	while (accepted < want && nclients < MAX_CLIENTS) {
		VIP_VI_ATTRIBUTES va = {0}, rva;
		VIP_CONN_HANDLE conn;
		struct client *c = &clients[nclients];
		size_t descs = (RECVS + 1) * sizeof(VIP_DESCRIPTOR);
		VIP_RETURN r;

		CHECK(VipConnectWait(nic, &local.a, VIP_INFINITE, &remote.a, &rva, &conn));
		va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
		va.MaxTransferSize = max_size;
		va.Ptag = ptag;
		CHECK(VipCreateVi(nic, &va, NULL, cq, &c->vi));
		region_init(&c->mem, nic, descs + RECVS * max_size, ptag, VIP_FALSE);
		for (int i = 0; i < RECVS; i++) {
			c->recv[i] = (VIP_DESCRIPTOR *)c->mem.base + i;
			c->buf[i] = (unsigned char *)c->mem.base + descs + i * max_size;
			fill_desc(c->recv[i], 0, c->buf[i], (VIP_UINT32)max_size, c->mem.mh);
			CHECK(VipPostRecv(c->vi, c->recv[i], c->mem.mh));
		}
		c->send = (VIP_DESCRIPTOR *)c->mem.base + RECVS;
		pthread_mutex_lock(&lock);
		nclients++;
		pthread_mutex_unlock(&lock);
		r = VipConnectAccept(conn, c->vi);
		if (r != VIP_SUCCESS) {
			fprintf(stderr, "accept: %s\n", ret_name(r));
			drop(c, 0);
			continue;
		}
		accepted++;
		printf("client %d connected\n", accepted);
		fflush(stdout);
	}
	pthread_join(th, NULL);
	CHECK(VipDestroyCQ(cq));
	CHECK(VipDestroyPtag(nic, ptag));
	CHECK(VipCloseNic(nic));
	printf("echo server: %d client(s) served\n", want);
	return 0;
}
