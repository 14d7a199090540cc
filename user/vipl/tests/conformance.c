// SPDX-License-Identifier: GPL-2.0
/*
 * vipl-conformance: VIPL's calls and return codes on a real viaduct device,
 * as the VI Architecture Developer's Guide states them. Prints TAP.
 *
 *   vipl-conformance local            one process, no connection
 *   vipl-conformance server CLIENTIP  the server half of the scenarios
 *   vipl-conformance client SERVERIP  the client half
 *
 * The two halves run the same list of scenarios in the same order; each
 * scenario has a discriminator of its own, and the client retries while
 * VIP_NO_MATCH says the server is not waiting on it yet.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <vipl.h>

static int tests, failures;

/*
 * How long a wait for something that must happen may take: a bound for a
 * hang, not a measure of speed (a loaded 2-core host is slow). Waits whose
 * expiry is what a test checks use short timeouts of their own.
 */
#define LONG_MS 240000

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tests++;
	if (!cond)
		failures++;
	printf("%sok %d - ", cond ? "" : "not ", tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* A call that must return @want; a failure says what it returned. */
#define IS(call, want)                                                          \
	do {                                                                    \
		VIP_RETURN is_ret_ = (call);                                    \
		if (is_ret_ == (want))                                          \
			ok(1, "%s is %s", #call, #want);                        \
		else                                                            \
			ok(0, "%s is %s (returned %d)", #call, #want,           \
			   (int)is_ret_);                                       \
	} while (0)

static void bail(const char *what)
{
	printf("Bail out! %s\n", what);
	exit(1);
}

/* ---------------------------------------------------------------- helpers */

typedef struct {
	VIP_NET_ADDRESS a;
	VIP_UINT8 room[80];
} addr_t;

static VIP_NIC_HANDLE nic;
static VIP_NIC_ATTRIBUTES na;
static VIP_UINT8 peer_ip[4];

static VIP_NET_ADDRESS *mkaddr(addr_t *x, const VIP_UINT8 *host, const char *disc)
{
	x->a.HostAddressLen = 4;
	x->a.DiscriminatorLen = (VIP_UINT16)strlen(disc);
	memcpy(x->a.HostAddress, host, 4);
	memcpy(x->a.HostAddress + 4, disc, strlen(disc));
	return &x->a;
}

/* A page-aligned block of @pages pages, registered whole or (with @reg
 * smaller) only its first @reg bytes; the rest is a canary. */
struct mem {
	unsigned char *p;
	size_t size;
	VIP_MEM_HANDLE mh;
};

static void mem_init(struct mem *m, size_t pages, size_t reg, VIP_PROTECTION_HANDLE ptag,
		     VIP_BOOLEAN rw, VIP_BOOLEAN rr)
{
	VIP_MEM_ATTRIBUTES ma = {ptag, rw, rr};

	m->size = pages * 4096;
	m->p = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->p == MAP_FAILED)
		bail("mmap");
	memset(m->p, 0xa5, m->size);
	if (VipRegisterMem(nic, m->p, reg ? reg : m->size, &ma, &m->mh) != VIP_SUCCESS)
		bail("VipRegisterMem");
}

static void mem_fini(struct mem *m)
{
	VipDeregisterMem(nic, m->p, m->mh);
	munmap(m->p, m->size);
}

static VIP_DESCRIPTOR *desc(struct mem *m, unsigned i)
{
	return (VIP_DESCRIPTOR *)(m->p + 256 * i);
}

static void one_seg(VIP_DESCRIPTOR *d, VIP_UINT16 control, void *buf, VIP_UINT32 len,
		    VIP_MEM_HANDLE mh)
{
	memset(d, 0, sizeof(*d));
	d->CS.Control = control;
	d->CS.SegCount = 1;
	d->CS.Length = len;
	d->DS[0].Local.Data.Address = buf;
	d->DS[0].Local.Handle = mh;
	d->DS[0].Local.Length = len;
}

static VIP_VI_HANDLE mkvi(VIP_RELIABILITY_LEVEL rel, VIP_ULONG mtu, VIP_BOOLEAN rw,
			  VIP_BOOLEAN rr, VIP_CQ_HANDLE scq, VIP_CQ_HANDLE rcq)
{
	VIP_VI_ATTRIBUTES va = {rel, mtu, NULL, NULL, rw, rr};
	VIP_VI_HANDLE vi;

	if (VipCreateVi(nic, &va, scq, rcq, &vi) != VIP_SUCCESS)
		bail("VipCreateVi");
	printf("# VI %p created\n", (void *)vi);
	return vi;
}

static VIP_VI_STATE state(VIP_VI_HANDLE vi)
{
	VIP_VI_STATE st = (VIP_VI_STATE)-1;
	VIP_VI_ATTRIBUTES va;
	VIP_BOOLEAN s, r;

	VipQueryVi(vi, &st, &va, &s, &r);
	return st;
}

/* Disconnects, dequeues everything and destroys @vi. */
static void teardown(VIP_VI_HANDLE vi)
{
	VIP_DESCRIPTOR *d;

	VipDisconnect(vi);
	for (int i = 0; i < 100 && (VipRecvWait(vi, 200, &d) != VIP_DESCRIPTOR_ERROR || d); i++)
		;
	for (int i = 0; i < 100 && (VipSendWait(vi, 200, &d) != VIP_DESCRIPTOR_ERROR || d); i++)
		;
	/*
	 * After an error the flush of the native QP completes in the
	 * background: VipDestroyVi answers VIP_INVALID_STATE until the VI is
	 * Idle, which it must become.
	 */
	for (int i = 0; VipDestroyVi(vi) != VIP_SUCCESS; i++) {
		if (i == LONG_MS / 100)
			bail("VipDestroyVi after teardown: the VI never became Idle");
		usleep(100000);
		/* a disconnect that ran out of time before the flush: again */
		if (state(vi) != VIP_STATE_IDLE)
			VipDisconnect(vi);
		for (VIP_RETURN r; (r = VipRecvDone(vi, &d)) == VIP_SUCCESS ||
				   (r == VIP_DESCRIPTOR_ERROR && d);)
			;
		for (VIP_RETURN r; (r = VipSendDone(vi, &d)) == VIP_SUCCESS ||
				   (r == VIP_DESCRIPTOR_ERROR && d);)
			;
	}
}

static VIP_RETURN request(VIP_VI_HANDLE vi, const char *disc, VIP_ULONG timeout,
			  VIP_VI_ATTRIBUTES *rva)
{
	addr_t l, r;
	char mine[80];
	VIP_RETURN ret = VIP_NO_MATCH;

	snprintf(mine, sizeof(mine), "client-%s", disc);
	mkaddr(&l, na.LocalNicAddress, mine);
	mkaddr(&r, peer_ip, disc);
	/* the server may still be finishing the last scenario: no match yet */
	for (int i = 0; i < LONG_MS / 100 && ret == VIP_NO_MATCH; i++) {
		ret = VipConnectRequest(vi, &l.a, &r.a, timeout, rva);
		if (ret == VIP_NO_MATCH)
			usleep(100000);
	}
	return ret;
}

static VIP_RETURN wait_for(const char *disc, VIP_ULONG timeout, addr_t *remote,
			   VIP_VI_ATTRIBUTES *rva, VIP_CONN_HANDLE *conn)
{
	addr_t l;

	mkaddr(&l, na.LocalNicAddress, disc);
	return VipConnectWait(nic, &l.a, timeout, &remote->a, rva, conn);
}

/* ------------------------------------------------------ asynchronous errors */

static atomic_int errors_seen, conn_lost_seen, post_desc_seen, recvq_empty_seen, rdmaw_prot_seen;
static VIP_VI_HANDLE last_error_vi;

static void on_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *ed)
{
	(void)ctx;
	/* a diagnostic line in the TAP stream: which error, where, in order */
	printf("# error callback: code %d, resource %d, VI %p\n", (int)ed->ErrorCode,
	       (int)ed->ResourceCode, (void *)ed->ViHandle);
	atomic_fetch_add(&errors_seen, 1);
	last_error_vi = ed->ViHandle;
	if (ed->ErrorCode == VIP_ERROR_CONN_LOST)
		atomic_fetch_add(&conn_lost_seen, 1);
	if (ed->ErrorCode == VIP_ERROR_POST_DESC)
		atomic_fetch_add(&post_desc_seen, 1);
	if (ed->ErrorCode == VIP_ERROR_RECVQ_EMPTY)
		atomic_fetch_add(&recvq_empty_seen, 1);
	if (ed->ErrorCode == VIP_ERROR_RDMAW_PROT)
		atomic_fetch_add(&rdmaw_prot_seen, 1);
}

static int wait_flag(atomic_int *f, int want)
{
	for (int i = 0; i < LONG_MS / 50 && atomic_load(f) < want; i++)
		usleep(50000);
	return atomic_load(f) >= want;
}

/* ------------------------------------------------------------ notify */

static atomic_int notified;
static VIP_DESCRIPTOR *notified_desc;

static void on_desc(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d)
{
	(void)n;
	(void)vi;
	notified_desc = d;
	*(int *)ctx += 1;
	atomic_fetch_add(&notified, 1);
}

static atomic_int cq_notified;
static VIP_BOOLEAN cq_notified_recv;

static void on_cq(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE vi, VIP_BOOLEAN recv)
{
	(void)ctx;
	(void)n;
	(void)vi;
	cq_notified_recv = recv;
	atomic_fetch_add(&cq_notified, 1);
}

/* ================================================================ local */

static void local_nic(void)
{
	VIP_NIC_HANDLE h;

	IS(VipOpenNic("vd0", &h), VIP_SUCCESS);
	IS(VipCloseNic(h), VIP_SUCCESS);
	IS(VipCloseNic(h), VIP_INVALID_PARAMETER);
	IS(VipOpenNic("/dev/via_eth0", &h), VIP_SUCCESS);
	IS(VipCloseNic(h), VIP_SUCCESS);
	IS(VipOpenNic("VINIC", &h), VIP_SUCCESS);
	IS(VipCloseNic(h), VIP_SUCCESS);
	IS(VipOpenNic("VINIC9", &h), VIP_INVALID_PARAMETER);
	IS(VipOpenNic("/dev/via_nosuch", &h), VIP_INVALID_PARAMETER);
	IS(VipOpenNic("nosuch0", &h), VIP_INVALID_PARAMETER);
	ok(na.NicAddressLen == 4 && na.LocalNicAddress && na.MaxDiscriminatorLen >= 16 &&
		   na.MaxSegmentsPerDesc >= 2 && na.MaxTransferSize > 0 && na.ThreadSafe &&
		   na.ReliabilityLevelSupport == 7 && strcmp(na.Name, "vd0") == 0,
	   "VipQueryNic: vd0, a 4-byte address, the limits");
}

static void local_memory(void)
{
	VIP_PROTECTION_HANDLE p1, p2;
	VIP_MEM_ATTRIBUTES ma = {0}, q;
	VIP_MEM_HANDLE mh, mh2;
	static unsigned char buf[3 * 4096] __attribute__((aligned(4096)));

	IS(VipCreatePtag(nic, &p1), VIP_SUCCESS);
	IS(VipCreatePtag(nic, &p2), VIP_SUCCESS);
	ma.Ptag = p1;
	ma.EnableRdmaWrite = VIP_TRUE;
	IS(VipRegisterMem(nic, buf, 0, &ma, &mh), VIP_INVALID_PARAMETER);
	IS(VipRegisterMem(nic, buf, 100, NULL, &mh), VIP_INVALID_PARAMETER);
	ma.Ptag = (VIP_PROTECTION_HANDLE)buf;
	IS(VipRegisterMem(nic, buf, 100, &ma, &mh), VIP_INVALID_PTAG);
	ma.Ptag = p1;
	IS(VipRegisterMem(nic, buf + 10, 5000, &ma, &mh), VIP_SUCCESS);
	IS(VipRegisterMem(nic, buf + 10, 5000, &ma, &mh2), VIP_SUCCESS);
	ok(mh != mh2, "every registration gets a handle of its own");
	IS(VipQueryMem(nic, buf + 100, mh, &q), VIP_SUCCESS);
	ok(q.Ptag == p1 && q.EnableRdmaWrite && !q.EnableRdmaRead, "VipQueryMem: the attributes");
	IS(VipQueryMem(nic, buf + 6000, mh, &q), VIP_INVALID_PARAMETER);
	IS(VipSetMemAttributes(nic, buf + 10, mh, &ma), VIP_SUCCESS);
	/* every attribute changes in place, the handle stays */
	ma.EnableRdmaRead = VIP_TRUE;
	IS(VipSetMemAttributes(nic, buf + 10, mh, &ma), VIP_SUCCESS);
	IS(VipQueryMem(nic, buf + 10, mh, &q), VIP_SUCCESS);
	ok(q.Ptag == p1 && q.EnableRdmaWrite && q.EnableRdmaRead,
	   "VipSetMemAttributes: RDMA Read enabled");
	ma.Ptag = p2;
	ma.EnableRdmaWrite = VIP_FALSE;
	IS(VipSetMemAttributes(nic, buf + 4000, mh, &ma), VIP_SUCCESS);
	IS(VipQueryMem(nic, buf + 10, mh, &q), VIP_SUCCESS);
	ok(q.Ptag == p2 && !q.EnableRdmaWrite && q.EnableRdmaRead,
	   "VipSetMemAttributes: another protection tag, RDMA Write disabled");
	IS(VipDestroyPtag(nic, p2), VIP_ERROR_RESOURCE);
	/* refused: nothing changes */
	ma.Ptag = (VIP_PROTECTION_HANDLE)buf;
	ma.EnableRdmaWrite = VIP_TRUE;
	IS(VipSetMemAttributes(nic, buf + 10, mh, &ma), VIP_INVALID_PTAG);
	ma.Ptag = p1;
	IS(VipSetMemAttributes(nic, buf + 6000, mh, &ma), VIP_INVALID_PARAMETER);
	IS(VipSetMemAttributes(nic, buf + 10, mh + 12345, &ma), VIP_INVALID_PARAMETER);
	IS(VipSetMemAttributes(nic, buf + 10, mh, NULL), VIP_INVALID_PARAMETER);
	IS(VipSetMemAttributes(NULL, buf + 10, mh, &ma), VIP_INVALID_PARAMETER);
	IS(VipQueryMem(nic, buf + 10, mh, &q), VIP_SUCCESS);
	ok(q.Ptag == p2 && !q.EnableRdmaWrite && q.EnableRdmaRead,
	   "a refused VipSetMemAttributes changes nothing");
	/* back to the first tag: both can be destroyed once unused */
	IS(VipSetMemAttributes(nic, buf + 10, mh, &ma), VIP_SUCCESS);
	IS(VipDestroyPtag(nic, p1), VIP_ERROR_RESOURCE);
	IS(VipDeregisterMem(nic, buf, mh), VIP_INVALID_PARAMETER);
	IS(VipDeregisterMem(nic, buf + 10, mh), VIP_SUCCESS);
	IS(VipDeregisterMem(nic, buf + 10, mh), VIP_INVALID_PARAMETER);
	IS(VipDeregisterMem(nic, buf + 10, mh2), VIP_SUCCESS);
	IS(VipDestroyPtag(nic, p1), VIP_SUCCESS);
	/* read-only memory cannot be opened to RDMA Write later */
	{
		void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		VIP_MEM_ATTRIBUTES rma = {NULL, VIP_FALSE, VIP_TRUE};

		if (ro == MAP_FAILED)
			bail("mmap");
		IS(VipRegisterMem(nic, ro, 4096, &rma, &mh), VIP_SUCCESS);
		rma.EnableRdmaWrite = VIP_TRUE;
		IS(VipSetMemAttributes(nic, ro, mh, &rma), VIP_INVALID_PARAMETER);
		rma.EnableRdmaWrite = VIP_FALSE;
		rma.EnableRdmaRead = VIP_FALSE;
		IS(VipSetMemAttributes(nic, ro, mh, &rma), VIP_SUCCESS);
		IS(VipDeregisterMem(nic, ro, mh), VIP_SUCCESS);
		munmap(ro, 4096);
	}
	IS(VipDestroyPtag(nic, p1), VIP_INVALID_PARAMETER);
	IS(VipDestroyPtag(nic, p2), VIP_SUCCESS);
}

static void local_vi(void)
{
	VIP_VI_ATTRIBUTES va = {VIP_SERVICE_RELIABLE_DELIVERY, 4096, NULL, NULL, 0, 0}, q;
	VIP_VI_HANDLE vi;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_DESCRIPTOR *d;

	va.ReliabilityLevel = 3;
	IS(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_RELIABILITY_LEVEL);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.MaxTransferSize = na.MaxTransferSize + 1;
	IS(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_MTU);
	va.MaxTransferSize = 4096;
	va.Ptag = (VIP_PROTECTION_HANDLE)&va;
	IS(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_PTAG);
	va.Ptag = NULL;
	va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
	va.EnableRdmaRead = VIP_TRUE;
	IS(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_RDMAREAD);
	va.EnableRdmaRead = VIP_FALSE;
	IS(VipCreateVi(nic, &va, (VIP_CQ_HANDLE)&va, NULL, &vi), VIP_INVALID_PARAMETER);
	IS(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_SUCCESS);
	IS(VipQueryVi(vi, &st, &q, &se, &re), VIP_SUCCESS);
	ok(st == VIP_STATE_IDLE && se && re && q.ReliabilityLevel == VIP_SERVICE_UNRELIABLE &&
		   q.MaxTransferSize == 4096,
	   "VipQueryVi: Idle, both queues empty, the attributes");
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_RECEPTION;
	va.MaxTransferSize = 8192;
	va.EnableRdmaWrite = VIP_TRUE;
	IS(VipSetViAttributes(vi, &va), VIP_SUCCESS);
	VipQueryVi(vi, &st, &q, &se, &re);
	ok(q.ReliabilityLevel == VIP_SERVICE_RELIABLE_RECEPTION && q.MaxTransferSize == 8192 &&
		   q.EnableRdmaWrite,
	   "VipSetViAttributes in Idle: all of them applied");
	va.ReliabilityLevel = 5;
	va.MaxTransferSize = 1;
	IS(VipSetViAttributes(vi, &va), VIP_INVALID_RELIABILITY_LEVEL);
	VipQueryVi(vi, &st, &q, &se, &re);
	ok(q.MaxTransferSize == 8192, "a refused VipSetViAttributes changes nothing");
	d = (VIP_DESCRIPTOR *)&va;
	IS(VipSendDone(vi, &d), VIP_DESCRIPTOR_ERROR);
	ok(d == NULL, "VipSendDone on an empty queue: no descriptor");
	IS(VipRecvWait(vi, 0, &d), VIP_DESCRIPTOR_ERROR);
	IS(VipSendNotify(vi, NULL, on_desc), VIP_DESCRIPTOR_ERROR);
	IS(VipDestroyVi(vi), VIP_SUCCESS);
	IS(VipDestroyVi(vi), VIP_INVALID_PARAMETER);
}

/* Posted receives of an Idle VI: flushed by VipDisconnect, in order,
 * through the CQ, the notify callback firing exactly once. */
static void local_flush_and_cq(void)
{
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi, who;
	VIP_BOOLEAN recv;
	VIP_DESCRIPTOR *d;
	struct mem m;
	int count = 0;

	IS(VipCreateCQ(nic, 0, &cq), VIP_INVALID_PARAMETER);
	IS(VipCreateCQ(nic, (VIP_ULONG)1 << 30, &cq), VIP_ERROR_RESOURCE);
	IS(VipCreateCQ(nic, 8, &cq), VIP_SUCCESS);
	IS(VipResizeCQ(cq, 16), VIP_SUCCESS);
	IS(VipCQDone(cq, &who, &recv), VIP_NOT_DONE);
	IS(VipCQWait(cq, 50, &who, &recv), VIP_TIMEOUT);
	vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, cq);
	IS(VipDestroyCQ(cq), VIP_ERROR_RESOURCE);
	IS(VipRecvWait(vi, 10, &d), VIP_ERROR_RESOURCE);
	IS(VipRecvNotify(vi, NULL, on_desc), VIP_ERROR_RESOURCE);
	mem_init(&m, 2, 0, NULL, 0, 0);
	for (unsigned i = 0; i < 3; i++) {
		one_seg(desc(&m, i), 0, m.p + 4096, 100, m.mh);
		desc(&m, i)->CS.Status = 0xffffffff;
		IS(VipPostRecv(vi, desc(&m, i), m.mh), VIP_SUCCESS);
	}
	ok(desc(&m, 0)->CS.Status == 0, "posting zeroes Status");
	IS(VipRecvDone(vi, &d), VIP_NOT_DONE);
	IS(VipDestroyVi(vi), VIP_INVALID_STATE);
	IS(VipCQNotify(cq, NULL, on_cq), VIP_SUCCESS);
	IS(VipDisconnect(vi), VIP_SUCCESS);
	ok(wait_flag(&cq_notified, 1) && cq_notified_recv, "VipCQNotify fired, for a receive queue");
	usleep(200000);
	ok(atomic_load(&cq_notified) == 1, "... exactly once");
	for (int i = 1; i < 3; i++) {
		IS(VipCQWait(cq, LONG_MS, &who, &recv), VIP_SUCCESS);
		ok(who == vi && recv, "CQ entry %d: the VI's receive queue", i + 1);
	}
	for (unsigned i = 0; i < 3; i++) {
		VIP_RETURN r = VipRecvDone(vi, &d);

		ok(r == VIP_DESCRIPTOR_ERROR && d == desc(&m, i) &&
			   d->CS.Status ==
				   (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR | VIP_STATUS_OP_RECEIVE),
		   "flushed receive %u dequeued in order, Status %#x", i, d ? d->CS.Status : 0);
	}
	IS(VipRecvDone(vi, &d), VIP_DESCRIPTOR_ERROR);
	ok(d == NULL, "then the queue is empty");
	IS(VipDestroyVi(vi), VIP_SUCCESS);
	IS(VipDestroyCQ(cq), VIP_SUCCESS);

	/* the same without a CQ, with the notify callback */
	vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
	one_seg(desc(&m, 0), 0, m.p + 4096, 100, m.mh);
	IS(VipPostRecv(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
	IS(VipRecvNotify(vi, &count, on_desc), VIP_SUCCESS);
	IS(VipDisconnect(vi), VIP_SUCCESS);
	ok(wait_flag(&notified, 1) && notified_desc == desc(&m, 0),
	   "VipRecvNotify: the handler got the flushed descriptor");
	usleep(200000);
	ok(count == 1, "... exactly once");
	IS(VipDestroyVi(vi), VIP_SUCCESS);
	mem_fini(&m);
}

/*
 * Two threads post to and reap from one work queue at once, on both queues
 * of a VI and through a CQ (vipl.rst, "Threads"). The VIs are in Error, so
 * every descriptor comes back at once, flushed: nothing may be lost or come
 * back twice, and a Done of a thread that has a descriptor outstanding
 * never finds the queue empty.
 */
#define TQ_DESCS 16
#define TQ_ITERS 3000

struct tq {
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq; /* reap through it first, if any */
	VIP_BOOLEAN recv;
	struct mem *m;
	unsigned first; /* descriptors first .. first + TQ_DESCS - 1 of m */
	pthread_mutex_t lock;
	unsigned free[TQ_DESCS], nfree;
	atomic_int posted[TQ_DESCS], reaped[TQ_DESCS];
	atomic_int bad, lost, noted;
	char what[160]; /* the first thing that went wrong */
};

static void tq_fail(struct tq *q, atomic_int *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void tq_fail(struct tq *q, atomic_int *counter, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(counter, 1);
	if (atomic_exchange(&q->noted, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(q->what, sizeof(q->what), fmt, ap);
	va_end(ap);
}

/* One descriptor of @q's queue, or NULL: none after LONG_MS, or an empty
 * queue, or (with a CQ) an entry whose queue had nothing done. */
static VIP_DESCRIPTOR *tq_reap(struct tq *q, VIP_RETURN *r)
{
	VIP_DESCRIPTOR *d = NULL;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long spins = 1;; spins++) {
		if (q->cq) {
			VIP_VI_HANDLE who;
			VIP_BOOLEAN recv;

			*r = VipCQDone(q->cq, &who, &recv);
			if (*r == VIP_SUCCESS) {
				if (who != q->vi || recv != q->recv)
					tq_fail(q, &q->bad, "a CQ entry of another queue");
				*r = q->recv ? VipRecvDone(q->vi, &d) : VipSendDone(q->vi, &d);
				return d;
			}
		} else {
			*r = q->recv ? VipRecvDone(q->vi, &d) : VipSendDone(q->vi, &d);
		}
		if (*r != VIP_NOT_DONE)
			return d;
		if (spins % 1024 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > LONG_MS)
				return NULL;
		}
	}
}

static void *tq_thread(void *arg)
{
	struct tq *q = arg;
	const VIP_UINT32 want = VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
				(q->recv ? VIP_STATUS_OP_RECEIVE : VIP_STATUS_OP_SEND);

	for (int i = 0; i < TQ_ITERS && !atomic_load(&q->lost); i++) {
		unsigned k;

		pthread_mutex_lock(&q->lock);
		k = q->free[--q->nfree]; /* never empty: at most one out per thread */
		pthread_mutex_unlock(&q->lock);
		VIP_DESCRIPTOR *d = desc(q->m, q->first + k);

		one_seg(d, 0, q->m->p + 16384 + 64 * (q->first + k), 64, q->m->mh);
		atomic_fetch_add(&q->posted[k], 1);
		VIP_RETURN r = q->recv ? VipPostRecv(q->vi, d, q->m->mh)
				       : VipPostSend(q->vi, d, q->m->mh);
		if (r != VIP_SUCCESS)
			tq_fail(q, &q->bad, "a post returned %d", r);
		d = tq_reap(q, &r);
		if (!d) {
			tq_fail(q, &q->lost, "no descriptor came back (last return %d)", r);
			break;
		}
		ptrdiff_t at = ((unsigned char *)d - q->m->p) / 256 - (ptrdiff_t)q->first;
		if (r != VIP_DESCRIPTOR_ERROR || at < 0 || at >= TQ_DESCS ||
		    d != desc(q->m, q->first + (unsigned)at)) {
			tq_fail(q, &q->bad, "Done returned %d and %p", r, (void *)d);
			continue;
		}
		k = (unsigned)at;
		if (d->CS.Status != want)
			tq_fail(q, &q->bad, "descriptor %u came back with Status %#x", k,
				d->CS.Status);
		if (atomic_fetch_add(&q->reaped[k], 1) + 1 != atomic_load(&q->posted[k]))
			tq_fail(q, &q->bad, "descriptor %u came back more often than posted", k);
		pthread_mutex_lock(&q->lock);
		q->free[q->nfree++] = k;
		pthread_mutex_unlock(&q->lock);
	}
	return NULL;
}

/* Puts the Reliable Delivery VI @vi in Error with a malformed descriptor
 * (an RDMA Write without its address segment) at @d, and dequeues it. */
static void error_vi(VIP_VI_HANDLE vi, VIP_CQ_HANDLE scq, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh)
{
	VIP_DESCRIPTOR *got = NULL;
	VIP_VI_HANDLE who;
	VIP_BOOLEAN recv;
	VIP_RETURN r;

	memset(d, 0, sizeof(*d));
	d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
	IS(VipPostSend(vi, d, mh), VIP_SUCCESS);
	while (scq && VipCQDone(scq, &who, &recv) == VIP_NOT_DONE)
		;
	while ((r = VipSendDone(vi, &got)) == VIP_NOT_DONE)
		;
	ok(r == VIP_DESCRIPTOR_ERROR && got == d && state(vi) == VIP_STATE_ERROR,
	   "a malformed descriptor puts a Reliable Delivery VI in Error");
}

static void local_threads(void)
{
	VIP_CQ_HANDLE cq;
	struct mem m;
	struct tq q[3];
	pthread_t th[6];

	IS(VipCreateCQ(nic, 64, &cq), VIP_SUCCESS);
	/* one VI without a CQ (its send and receive queues), one on the CQ */
	VIP_VI_HANDLE vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
	VIP_VI_HANDLE vicq = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, cq, NULL);
	/* 3 x TQ_DESCS descriptors of 256 bytes, two more for the malformed
	 * ones, the 64-byte buffers from 16 KiB */
	mem_init(&m, 5, 0, NULL, 0, 0);
	error_vi(vi, NULL, desc(&m, 3 * TQ_DESCS), m.mh);
	error_vi(vicq, cq, desc(&m, 3 * TQ_DESCS + 1), m.mh);
	for (unsigned i = 0; i < 3; i++) {
		memset(&q[i], 0, sizeof(q[i]));
		q[i].vi = i == 2 ? vicq : vi;
		q[i].cq = i == 2 ? cq : NULL;
		q[i].recv = i == 1 ? VIP_TRUE : VIP_FALSE;
		q[i].m = &m;
		q[i].first = TQ_DESCS * i;
		pthread_mutex_init(&q[i].lock, NULL);
		for (unsigned k = 0; k < TQ_DESCS; k++)
			q[i].free[q[i].nfree++] = k;
	}
	for (unsigned t = 0; t < 6; t++)
		pthread_create(&th[t], NULL, tq_thread, &q[t / 2]);
	for (unsigned t = 0; t < 6; t++)
		pthread_join(th[t], NULL);
	static const char *const names[3] = {"send queue", "receive queue", "send queue on a CQ"};
	for (unsigned i = 0; i < 3; i++) {
		int posted = 0, reaped = 0;

		for (unsigned k = 0; k < TQ_DESCS; k++) {
			posted += atomic_load(&q[i].posted[k]);
			reaped += atomic_load(&q[i].reaped[k]);
		}
		ok(!atomic_load(&q[i].bad) && !atomic_load(&q[i].lost) && posted == 2 * TQ_ITERS &&
			   reaped == posted,
		   "two threads posting and reaping on one %s: %d posted, %d back, %d lost, %d "
		   "wrong%s%s",
		   names[i], posted, reaped, atomic_load(&q[i].lost), atomic_load(&q[i].bad),
		   q[i].what[0] ? ": " : "", q[i].what);
		pthread_mutex_destroy(&q[i].lock);
	}
	VIP_VI_HANDLE who;
	VIP_BOOLEAN recv;
	IS(VipCQDone(cq, &who, &recv), VIP_NOT_DONE);
	teardown(vi);
	teardown(vicq);
	IS(VipDestroyCQ(cq), VIP_SUCCESS);
	mem_fini(&m);
}

/* Descriptors the library refuses: the guide's status, in order, and the
 * asynchronous Post Descriptor Error for one it cannot touch. */
static void local_bad_descriptors(void)
{
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *d;
	struct mem m, other;
	unsigned char canary[64];

	mem_init(&m, 2, 0, NULL, 0, 0);
	mem_init(&other, 1, 0, NULL, 0, 0);
	vi = mkvi(VIP_SERVICE_UNRELIABLE, 4096, 0, 0, NULL, NULL);

	one_seg(desc(&m, 0), 0x10, m.p + 4096, 10, m.mh); /* reserved control bit */
	one_seg(desc(&m, 1), VIP_CONTROL_OP_RESERVED, m.p + 4096, 10, m.mh);
	one_seg(desc(&m, 2), 0, m.p + 4096, 10, m.mh);
	desc(&m, 2)->CS.Length = 11; /* not the sum of the segments */
	one_seg(desc(&m, 3), 0, m.p + 4096, 8192, m.mh); /* beyond MaxTransferSize */
	one_seg(desc(&m, 4), 0, m.p + 4096, 10, m.mh);
	desc(&m, 4)->CS.SegCount = (VIP_UINT16)(na.MaxSegmentsPerDesc + 1);
	one_seg(desc(&m, 5), 0, m.p + 4096, 10, m.mh);
	desc(&m, 5)->CS.Reserved = 1;
	for (unsigned i = 0; i < 6; i++)
		IS(VipPostSend(vi, desc(&m, i), m.mh), VIP_SUCCESS);
	VIP_UINT32 want[6] = {VIP_STATUS_FORMAT_ERROR, VIP_STATUS_FORMAT_ERROR,
			      VIP_STATUS_LENGTH_ERROR, VIP_STATUS_LENGTH_ERROR,
			      VIP_STATUS_LENGTH_ERROR, VIP_STATUS_FORMAT_ERROR};
	for (unsigned i = 0; i < 6; i++) {
		VIP_RETURN r = VipSendDone(vi, &d);

		ok(r == VIP_DESCRIPTOR_ERROR && d == desc(&m, i) &&
			   (d->CS.Status & VIP_STATUS_ERROR_MASK) == want[i] &&
			   (d->CS.Status & VIP_STATUS_DONE),
		   "bad descriptor %u: Done, error bits %#x", i, d ? d->CS.Status : 0);
	}
	ok(state(vi) == VIP_STATE_IDLE, "an unreliable VI stays as it was");

	/* misaligned, and in memory its handle does not cover: not touched */
	VipErrorCallback(nic, NULL, on_error);
	d = (VIP_DESCRIPTOR *)(m.p + 1024 + 8);
	one_seg(d, 0, m.p + 4096, 10, m.mh);
	memcpy(canary, d, sizeof(canary));
	IS(VipPostSend(vi, d, m.mh), VIP_SUCCESS);
	ok(wait_flag(&post_desc_seen, 1) && last_error_vi == vi,
	   "a misaligned descriptor: Post Descriptor Error on the VI");
	ok(memcmp(canary, d, sizeof(canary)) == 0, "... and it was not written");
	d = desc(&m, 4);
	one_seg(d, 0, m.p + 4096, 10, m.mh);
	memcpy(canary, d, sizeof(canary));
	IS(VipPostRecv(vi, d, other.mh), VIP_SUCCESS);
	ok(wait_flag(&post_desc_seen, 2), "a descriptor outside its handle's region: Post Descriptor Error");
	ok(memcmp(canary, d, sizeof(canary)) == 0, "... and it was not written");
	ok(state(vi) == VIP_STATE_ERROR, "the VI is in Error after it");
	{
		/* a descriptor in memory of another protection tag */
		VIP_PROTECTION_HANDLE tag;
		struct mem tagged;

		IS(VipCreatePtag(nic, &tag), VIP_SUCCESS);
		mem_init(&tagged, 1, 0, tag, 0, 0);
		one_seg(desc(&tagged, 0), 0, tagged.p + 2048, 10, tagged.mh);
		memcpy(canary, desc(&tagged, 0), sizeof(canary));
		IS(VipPostRecv(vi, desc(&tagged, 0), tagged.mh), VIP_SUCCESS);
		ok(wait_flag(&post_desc_seen, 3),
		   "a descriptor in memory of another tag: Post Descriptor Error");
		ok(memcmp(canary, desc(&tagged, 0), sizeof(canary)) == 0, "... and it was not written");
		mem_fini(&tagged);
		IS(VipDestroyPtag(nic, tag), VIP_SUCCESS);
	}
	IS(VipSendDone(vi, &d), VIP_DESCRIPTOR_ERROR);
	ok(d == NULL, "neither was queued");
	IS(VipDisconnect(vi), VIP_SUCCESS);
	ok(state(vi) == VIP_STATE_IDLE, "VipDisconnect: Error to Idle");
	IS(VipDestroyVi(vi), VIP_SUCCESS);
	VipErrorCallback(nic, NULL, NULL);
	mem_fini(&other);
	mem_fini(&m);
}

static void local_connect_params(void)
{
	VIP_VI_HANDLE vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
	VIP_VI_ATTRIBUTES rva;
	VIP_CONN_HANDLE conn;
	addr_t l, r, rem;
	VIP_UINT8 other[4] = {192, 0, 2, 200};
	VIP_UINT8 low[4] = {192, 0, 2, 0};

	mkaddr(&l, na.LocalNicAddress, "me");
	mkaddr(&r, other, "you");
	IS(VipConnectRequest(vi, &l.a, &r.a, 0, &rva), VIP_INVALID_PARAMETER);
	IS(VipConnectRequest(vi, &r.a, &r.a, 100, &rva), VIP_INVALID_PARAMETER);
	IS(VipConnectWait(nic, &r.a, 0, &rem.a, &rva, &conn), VIP_INVALID_PARAMETER);
	IS(VipConnectWait(nic, &l.a, 0, &rem.a, &rva, &conn), VIP_TIMEOUT);
	IS(VipConnectWait(nic, &l.a, 300, &rem.a, &rva, &conn), VIP_TIMEOUT);
	IS(VipConnectPeerDone(vi, &rva), VIP_INVALID_STATE);
	IS(VipConnectPeerRequest(vi, &l.a, &r.a, 0), VIP_INVALID_PARAMETER);
	IS(VipConnectPeerRequest(vi, &l.a, &l.a, 100), VIP_INVALID_PARAMETER);
	/* nobody answers: the active side (the smaller address) times out */
	IS(VipConnectPeerRequest(vi, &l.a, &r.a, 700), VIP_SUCCESS);
	ok(state(vi) == VIP_STATE_CONNECT_PENDING, "a peer request makes the VI Pending Connect");
	IS(VipConnectPeerRequest(vi, &l.a, &r.a, 700), VIP_INVALID_STATE);
	IS(VipConnectPeerWait(vi, &rva), VIP_TIMEOUT);
	/* and the passive side (the larger address) too */
	mkaddr(&r, low, "you");
	IS(VipConnectPeerRequest(vi, &l.a, &r.a, 500), VIP_SUCCESS);
	VIP_RETURN ret;
	while ((ret = VipConnectPeerDone(vi, &rva)) == VIP_NOT_DONE)
		usleep(20000);
	ok(ret == VIP_TIMEOUT, "a passive peer request times out: VipConnectPeerDone %d", ret);
	ok(state(vi) == VIP_STATE_IDLE, "... and the VI is Idle again");
	IS(VipDestroyVi(vi), VIP_SUCCESS);
}

static void local_names(void)
{
	static const char hosts[] = "# test\n192.0.2.77 Foo foo-alias\n192.0.2.78 bar\n";
	char path[] = "/tmp/vipl-hostsXXXXXX", name[64];
	addr_t a;
	unsigned char *host = (unsigned char *)&a + offsetof(VIP_NET_ADDRESS, HostAddress);
	VIP_ULONG len;
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, hosts, strlen(hosts)) != (ssize_t)strlen(hosts))
		bail("hosts file");
	close(fd);
	a.a.HostAddressLen = 0;
	IS(VipNSGetHostByName(nic, "foo", &a.a, 0), VIP_ERROR_NAMESERVICE);
	IS(VipNSShutdown(nic), VIP_ERROR_NAMESERVICE);
	IS(VipNSInit(nic, path), VIP_SUCCESS);
	IS(VipNSInit(nic, path), VIP_ERROR_NAMESERVICE);
	IS(VipNSGetHostByName(nic, "FOO", &a.a, 0), VIP_SUCCESS);
	ok(a.a.HostAddressLen == 4 && host[3] == 77, "case-insensitive lookup in the file");
	IS(VipNSGetHostByName(nic, "foo-alias", &a.a, 0), VIP_SUCCESS);
	IS(VipNSGetHostByName(nic, "foo", &a.a, 1), VIP_ERROR_NAMESERVICE);
	IS(VipNSGetHostByName(nic, "nosuch", &a.a, 0), VIP_ERROR_NAMESERVICE);
	host[3] = 78;
	len = 2;
	IS(VipNSGetHostByAddr(nic, &a.a, name, &len), VIP_INVALID_PARAMETER);
	ok(len == 3, "a short buffer: NameLen says 3");
	len = sizeof(name);
	IS(VipNSGetHostByAddr(nic, &a.a, name, &len), VIP_SUCCESS);
	ok(strcmp(name, "bar") == 0, "reverse lookup: bar");
	IS(VipNSShutdown(nic), VIP_SUCCESS);
	IS(VipNSInit(nic, NULL), VIP_SUCCESS);
	IS(VipNSGetHostByName(nic, "192.0.2.9", &a.a, 0), VIP_SUCCESS);
	ok(host[3] == 9, "the system resolver");
	IS(VipNSShutdown(nic), VIP_SUCCESS);
	IS(VipNSInit(nic, "/nonexistent/hosts"), VIP_ERROR_NAMESERVICE);
	unlink(path);
}

/* ============================================================ scenarios */

enum { ROLE_SERVER, ROLE_CLIENT };
static int role;

/* 1: connect, every descriptor field of a Send with immediate data */
static void sc_basic(void)
{
	VIP_VI_ATTRIBUTES rva;
	struct mem m;
	VIP_DESCRIPTOR *d;
	VIP_VI_HANDLE vi;

	mem_init(&m, 2, 0, NULL, 0, 0);
	vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		addr_t rem;
		VIP_UINT8 *b = m.p + 4096;

		/* three segments: 10, 20 and 4000 bytes */
		d = desc(&m, 0);
		memset(d, 0, 256);
		d->CS.SegCount = 3;
		for (int i = 0; i < 3; i++) {
			VIP_DATA_SEGMENT *ds = &((VIP_DATA_SEGMENT *)(d->DS))[i];
			static const VIP_UINT32 len[3] = {10, 20, 4000};
			static const unsigned off[3] = {0, 100, 200};

			ds->Data.Address = b + off[i];
			ds->Handle = m.mh;
			ds->Length = len[i];
		}
		IS(VipPostRecv(vi, d, m.mh), VIP_SUCCESS);
		IS(wait_for("basic", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		ok(rem.a.HostAddressLen == 4 && memcmp(rem.a.HostAddress, peer_ip, 4) == 0 &&
			   rem.a.DiscriminatorLen == 12 &&
			   memcmp(rem.a.HostAddress + 4, "client-basic", 12) == 0,
		   "VipConnectWait: the client's LocalAddr");
		ok(rva.ReliabilityLevel == VIP_SERVICE_RELIABLE_DELIVERY && rva.MaxTransferSize == 4096,
		   "VipConnectWait: the client's attributes");
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_INVALID_PARAMETER);
		ok(state(vi) == VIP_STATE_CONNECTED, "the server's VI is Connected");
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d == desc(&m, 0) && d->CS.Length == 40 && d->CS.ImmediateData == 0xdeadbeef &&
			   d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE),
		   "the receive: Length 40, the immediate data, Status %#x", d ? d->CS.Status : 0);
		int good = 1;
		for (int i = 0; i < 40; i++) {
			int at = i < 10 ? i : i < 30 ? 100 + i - 10 : 200 + i - 30;

			good &= b[at] == (unsigned char)(i + 1);
		}
		ok(good && b[10] == 0xa5 && b[120] == 0xa5 && b[210] == 0xa5,
		   "scattered over the segments in order, nothing past them");
		/* answer with an empty Send */
		one_seg(desc(&m, 1), 0, NULL, 0, m.mh);
		desc(&m, 1)->CS.SegCount = 0;
		IS(VipPostSend(vi, desc(&m, 1), m.mh), VIP_SUCCESS);
		IS(VipSendWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_SEND), "an empty Send: Status %#x",
		   d->CS.Status);
		/* the client disconnects after it */
		ok(wait_flag(&conn_lost_seen, 1), "the client's VipDisconnect: Connection Lost here");
		ok(state(vi) == VIP_STATE_ERROR, "the server's VI is in Error");
	} else {
		unsigned char *b = m.p + 4096;

		for (int i = 0; i < 40; i++)
			b[i] = (unsigned char)(i + 1);
		one_seg(desc(&m, 1), 0, m.p + 2048, 64, m.mh);
		IS(VipPostRecv(vi, desc(&m, 1), m.mh), VIP_SUCCESS);
		IS(request(vi, "basic", LONG_MS, &rva), VIP_SUCCESS);
		ok(rva.ReliabilityLevel == VIP_SERVICE_RELIABLE_DELIVERY && rva.MaxTransferSize == 4096,
		   "VipConnectRequest: the server's attributes");
		ok(state(vi) == VIP_STATE_CONNECTED, "the client's VI is Connected");
		IS(request(vi, "basic", 1000, &rva), VIP_INVALID_STATE);
		/* two segments, immediate data */
		d = desc(&m, 0);
		memset(d, 0, 256);
		d->CS.Control = VIP_CONTROL_IMMEDIATE;
		d->CS.ImmediateData = 0xdeadbeef;
		d->CS.SegCount = 2;
		d->CS.Length = 40;
		d->DS[0].Local.Data.Address = b;
		d->DS[0].Local.Handle = m.mh;
		d->DS[0].Local.Length = 25;
		d->DS[1].Local.Data.Address = b + 25;
		d->DS[1].Local.Handle = m.mh;
		d->DS[1].Local.Length = 15;
		d->CS.Next.AddressBits = 0x1122334455667788ull; /* the program's own */
		d->CS.NextHandle = 0x99;
		IS(VipPostSend(vi, d, m.mh), VIP_SUCCESS);
		IS(VipSendWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d == desc(&m, 0) && d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_SEND) &&
			   d->CS.Length == 40 && d->CS.ImmediateData == 0xdeadbeef,
		   "the send: Status %#x, Length and ImmediateData as posted", d->CS.Status);
		ok(d->CS.Next.AddressBits == 0x1122334455667788ull && d->CS.NextHandle == 0x99,
		   "Next and NextHandle left to the program");
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d->CS.Length == 0, "the empty answer: Length 0");
		IS(VipDisconnect(vi), VIP_SUCCESS);
		ok(state(vi) == VIP_STATE_IDLE, "VipDisconnect: Idle");
		ok(atomic_load(&conn_lost_seen) == 0, "the initiator of a disconnect gets no callback");
	}
	teardown(vi);
	mem_fini(&m);
}

/* 2: reject, no-match, timeouts */
static void sc_reject_timeout(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);

	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		addr_t rem;

		IS(wait_for("rejected", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectReject(conn), VIP_SUCCESS);
		IS(VipConnectReject(conn), VIP_INVALID_PARAMETER);
		IS(wait_for("late", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		sleep(3); /* the client gives up after 1 s */
		IS(VipConnectAccept(conn, vi), VIP_TIMEOUT);
		ok(state(vi) == VIP_STATE_IDLE, "the VI of a failed accept is Idle");
		IS(wait_for("late2", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		sleep(3);
		IS(VipConnectReject(conn), VIP_SUCCESS); /* after the client's timeout */
	} else {
		IS(request(vi, "rejected", LONG_MS, &rva), VIP_REJECT);
		ok(state(vi) == VIP_STATE_IDLE, "a rejected VI is Idle");
		addr_t l, r;

		mkaddr(&l, na.LocalNicAddress, "me");
		mkaddr(&r, peer_ip, "nobody-waits-on-this");
		IS(VipConnectRequest(vi, &l.a, &r.a, 5000, &rva), VIP_NO_MATCH);
		IS(request(vi, "late", 1000, &rva), VIP_TIMEOUT);
		IS(request(vi, "late2", 1000, &rva), VIP_TIMEOUT);
	}
	IS(VipDestroyVi(vi), VIP_SUCCESS);
}

/* 3: the attribute rules of VipConnectAccept */
static void sc_conflict(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi;

	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		VIP_VI_ATTRIBUTES va = {VIP_SERVICE_UNRELIABLE, 2000, NULL, NULL, 0, 0};
		addr_t rem;
		struct mem rm;
		VIP_DESCRIPTOR *d;

		vi = mkvi(VIP_SERVICE_UNRELIABLE, 2000, 0, 0, NULL, NULL);
		IS(wait_for("conflict", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_INVALID_RELIABILITY_LEVEL);
		va.ReliabilityLevel = VIP_SERVICE_RELIABLE_RECEPTION;
		IS(VipSetViAttributes(vi, &va), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_INVALID_MTU);
		va.MaxTransferSize = rva.MaxTransferSize;
		IS(VipSetViAttributes(vi, &va), VIP_SUCCESS);
		/* one receive for the client's first Send, none for its second */
		mem_init(&rm, 1, 0, NULL, 0, 0);
		one_seg(desc(&rm, 0), 0, rm.p + 2048, 64, rm.mh);
		IS(VipPostRecv(vi, desc(&rm, 0), rm.mh), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		ok(state(vi) == VIP_STATE_CONNECTED, "accepted after changing the attributes");
		va.MaxTransferSize = 10;
		IS(VipSetViAttributes(vi, &va), VIP_INVALID_STATE);
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d->CS.Length == 16 && memcmp(rm.p + 2048, "reliable recept.", 16) == 0,
		   "the first Reliable Reception Send arrived");
		/*
		 * only now may the client send its second, which breaks this
		 * VI: the state checks above see it Connected whatever the
		 * timing (not waited for: the break may flush it)
		 */
		memcpy(rm.p + 3072, "go", 2);
		one_seg(desc(&rm, 1), 0, rm.p + 3072, 2, rm.mh);
		IS(VipPostSend(vi, desc(&rm, 1), rm.mh), VIP_SUCCESS);
		wait_flag(&conn_lost_seen, 2);
		teardown(vi);
		mem_fini(&rm);
		return;
	} else {
		struct mem m;
		VIP_DESCRIPTOR *d;

		vi = mkvi(VIP_SERVICE_RELIABLE_RECEPTION, 1000, 0, 0, NULL, NULL);
		mem_init(&m, 1, 0, NULL, 0, 0);
		/* for the server's go-ahead */
		one_seg(desc(&m, 1), 0, m.p + 3072, 64, m.mh);
		IS(VipPostRecv(vi, desc(&m, 1), m.mh), VIP_SUCCESS);
		IS(request(vi, "conflict", LONG_MS, &rva), VIP_SUCCESS);
		ok(rva.ReliabilityLevel == VIP_SERVICE_RELIABLE_RECEPTION && rva.MaxTransferSize == 1000,
		   "connected, Reliable Reception on both sides");
		/* Reliable Reception: a Send completes once it is placed; here the
		 * server has no receive posted, so it fails, reported in the
		 * send descriptor */
		memcpy(m.p + 2048, "reliable recept.", 16);
		one_seg(desc(&m, 0), 0, m.p + 2048, 16, m.mh);
		IS(VipPostSend(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		IS(VipSendWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_SEND),
		   "Reliable Reception: the first Send completes once placed (%#x)", d->CS.Status);
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d->CS.Length == 2 && memcmp(m.p + 3072, "go", 2) == 0, "the server's go-ahead");
		one_seg(desc(&m, 0), 0, m.p + 2048, 16, m.mh);
		IS(VipPostSend(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		VIP_RETURN r = VipSendWait(vi, LONG_MS, &d);
		ok(r == VIP_DESCRIPTOR_ERROR && d && (d->CS.Status & VIP_STATUS_ERROR_MASK),
		   "Reliable Reception: the second, without a receive at the peer, fails in its "
		   "descriptor (%#x)",
		   d ? d->CS.Status : 0);
		teardown(vi);
		mem_fini(&m);
		return;
	}
	teardown(vi);
}

/* 4: protection: nothing is written outside registered memory */
static void sc_protection(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi;
	struct mem m;
	VIP_DESCRIPTOR *d;

	/* two pages mapped, the first registered: the second is the canary */
	mem_init(&m, 2, 4096, NULL, 0, 0);
	vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		addr_t rem;
		int good = 1;

		/* the receive's segment runs past the registered page */
		one_seg(desc(&m, 0), 0, m.p + 4000, 200, m.mh);
		IS(VipPostRecv(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		IS(wait_for("protection", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		VIP_RETURN r = VipRecvWait(vi, LONG_MS, &d);
		ok(r == VIP_DESCRIPTOR_ERROR && d == desc(&m, 0) &&
			   (d->CS.Status & VIP_STATUS_PROTECTION_ERROR),
		   "a receive reaching past its region: PROTECTION (%#x)", d ? d->CS.Status : 0);
		for (size_t i = 4096; i < 8192; i++)
			good &= m.p[i] == 0xa5;
		ok(good, "the unregistered page after it is untouched");
		ok(state(vi) == VIP_STATE_ERROR, "a reliable VI is in Error after it");
	} else {
		IS(request(vi, "protection", LONG_MS, &rva), VIP_SUCCESS);
		memset(m.p + 1024, 0x5a, 200);
		one_seg(desc(&m, 0), 0, m.p + 1024, 200, m.mh);
		IS(VipPostSend(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		VipSendWait(vi, LONG_MS, &d);
		/* a local protection error: the segment is not in the region */
		sleep(1);
	}
	teardown(vi);
	mem_fini(&m);
}

/*
 * A Send that finds the receive queue empty: the receiving NIC drops it,
 * raises VIP_ERROR_RECVQ_EMPTY through the error callback and, the VI being
 * reliable, puts it into Error.
 */
static void sc_recvq_empty(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi;
	struct mem m;
	VIP_DESCRIPTOR *d;

	mem_init(&m, 1, 4096, NULL, 0, 0);
	vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		addr_t rem;
		int before = atomic_load(&recvq_empty_seen);

		IS(wait_for("recvq-empty", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		/* no receive posted: the client's Send is dropped */
		ok(wait_flag(&recvq_empty_seen, before + 1) && last_error_vi == vi,
		   "a Send into an empty receive queue: VIP_ERROR_RECVQ_EMPTY for this VI");
		ok(state(vi) == VIP_STATE_ERROR, "the reliable VI is in Error after it");
	} else {
		IS(request(vi, "recvq-empty", LONG_MS, &rva), VIP_SUCCESS);
		one_seg(desc(&m, 0), 0, m.p, 64, m.mh);
		IS(VipPostSend(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		VipSendWait(vi, LONG_MS, &d);
		sleep(1);
	}
	teardown(vi);
	mem_fini(&m);
}

/*
 * VipSetMemAttributes on a connected VI: a region registered without RDMA
 * Write takes the peer's RDMA Write once it is enabled, under the same
 * memory handle, and refuses the next one once it is disabled again: an
 * asynchronous error here, nothing written.
 */
static void sc_set_mem(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi;
	struct mem m;
	VIP_DESCRIPTOR *d;
	VIP_RETURN sent;
	VIP_UINT32 st;
	struct {
		VIP_UINT64 addr;
		VIP_MEM_HANDLE mh;
	} *info;

	mem_init(&m, 2, 0, NULL, 0, 0);
	if (role == ROLE_SERVER) {
		VIP_MEM_ATTRIBUTES ma = {NULL, VIP_TRUE, VIP_FALSE}, q;
		VIP_CONN_HANDLE conn;
		addr_t rem;
		struct mem r;
		int good = 1, before;

		mem_init(&r, 1, 0, NULL, VIP_FALSE, VIP_FALSE);
		vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, VIP_TRUE, VIP_FALSE, NULL, NULL);
		one_seg(desc(&m, 0), 0, m.p + 2048, 64, m.mh);
		IS(VipPostRecv(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		one_seg(desc(&m, 1), 0, m.p + 2048 + 64, 64, m.mh);
		IS(VipPostRecv(vi, desc(&m, 1), m.mh), VIP_SUCCESS);
		IS(wait_for("setmem", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		IS(VipSetMemAttributes(nic, r.p, r.mh, &ma), VIP_SUCCESS);
		info = (void *)(m.p + 1024 + 512);
		info->addr = (VIP_UINT64)(uintptr_t)r.p;
		info->mh = r.mh;
		one_seg(desc(&m, 2), 0, info, sizeof(*info), m.mh);
		IS(VipPostSend(vi, desc(&m, 2), m.mh), VIP_SUCCESS);
		IS(VipSendWait(vi, LONG_MS, &d), VIP_SUCCESS);
		/* the client wrote, then says so */
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		for (int i = 0; i < 256; i++)
			good &= r.p[100 + i] == (unsigned char)(i ^ 0x3c);
		ok(good && r.p[99] == 0xa5 && r.p[356] == 0xa5,
		   "RDMA Write enabled by VipSetMemAttributes: the bytes landed, nothing around them");
		ma.EnableRdmaWrite = VIP_FALSE;
		IS(VipSetMemAttributes(nic, r.p, r.mh, &ma), VIP_SUCCESS);
		IS(VipQueryMem(nic, r.p, r.mh, &q), VIP_SUCCESS);
		ok(!q.EnableRdmaWrite, "VipQueryMem: RDMA Write disabled again");
		before = atomic_load(&rdmaw_prot_seen);
		one_seg(desc(&m, 3), 0, m.p + 3000, 8, m.mh);
		IS(VipPostSend(vi, desc(&m, 3), m.mh), VIP_SUCCESS);
		/*
		 * The client checks that this message arrived. Having it, it
		 * writes at once, and this VI can go to Error on that Write
		 * before its Send's completion is in: the Send is then flushed
		 * as outstanding. Either is right; nothing else is.
		 */
		sent = VipSendWait(vi, LONG_MS, &d);
		st = d ? d->CS.Status & VIP_STATUS_ERROR_MASK : ~0u;
		ok(d == desc(&m, 3) &&
			   ((sent == VIP_SUCCESS && st == 0) ||
			    (sent == VIP_DESCRIPTOR_ERROR && st == VIP_STATUS_DESC_FLUSHED_ERROR)),
		   "'disabled' sent: done, or flushed when the peer's Write broke the VI first (%d, Status %#x)",
		   sent, d ? d->CS.Status : 0);
		ok(wait_flag(&rdmaw_prot_seen, before + 1) && last_error_vi == vi,
		   "an RDMA Write after VipSetMemAttributes disabled it: VIP_ERROR_RDMAW_PROT");
		good = 1;
		for (int i = 0; i < 4096; i++)
			good &= r.p[i] == (i >= 100 && i < 356 ? (unsigned char)((i - 100) ^ 0x3c)
							     : 0xa5);
		ok(good, "... and nothing of it was written");
		ok(state(vi) == VIP_STATE_ERROR, "a reliable VI is in Error after it");
		teardown(vi);
		mem_fini(&r);
		mem_fini(&m);
		return;
	} else {
		unsigned char *b = m.p + 4096;

		vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
		one_seg(desc(&m, 0), 0, m.p + 2048, 64, m.mh);
		IS(VipPostRecv(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		one_seg(desc(&m, 1), 0, m.p + 2048 + 64, 64, m.mh);
		IS(VipPostRecv(vi, desc(&m, 1), m.mh), VIP_SUCCESS);
		IS(request(vi, "setmem", LONG_MS, &rva), VIP_SUCCESS);
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		info = (void *)(m.p + 2048);
		for (int pass = 0; pass < 2; pass++) {
			for (int i = 0; i < 256; i++)
				b[i] = (unsigned char)(pass ? 0x77 : i ^ 0x3c);
			d = desc(&m, pass ? 4 : 2);
			memset(d, 0, 64);
			d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
			d->CS.SegCount = 2;
			d->CS.Length = 256;
			d->DS[0].Remote.Data.AddressBits = info->addr + 100;
			d->DS[0].Remote.Handle = info->mh;
			d->DS[1].Local.Data.Address = b;
			d->DS[1].Local.Handle = m.mh;
			d->DS[1].Local.Length = 256;
			IS(VipPostSend(vi, d, m.mh), VIP_SUCCESS);
			if (pass)
				break;
			IS(VipSendWait(vi, LONG_MS, &d), VIP_SUCCESS);
			one_seg(desc(&m, 3), 0, m.p + 3000, 8, m.mh);
			IS(VipPostSend(vi, desc(&m, 3), m.mh), VIP_SUCCESS);
			IS(VipSendWait(vi, LONG_MS, &d), VIP_SUCCESS);
			/* the server disables RDMA Write, then says so */
			IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		}
		/* the server's Terminate ends the connection; then leave */
		for (int i = 0; i < LONG_MS / 50 && state(vi) != VIP_STATE_ERROR; i++)
			usleep(50000);
	}
	teardown(vi);
	mem_fini(&m);
}

/*
 * The guide's 252 data segments (5.4), MaxSegmentsPerDesc with the address
 * segment: a Send gathered from 252 segments lands scattered over a
 * receive of 252, byte for byte, nothing between them; one more segment
 * is a LENGTH error.
 */
#define NSEG 252
#define SEG_STRIDE 48 /* 16 bytes, then a 32-byte canary */

static void segs_fill(VIP_DESCRIPTOR *d, struct mem *m, unsigned n, VIP_UINT16 control)
{
	VIP_DATA_SEGMENT *ds = (VIP_DATA_SEGMENT *)d->DS;

	memset(d, 0, sizeof(VIP_CONTROL_SEGMENT) + n * sizeof(*ds));
	d->CS.Control = control;
	d->CS.SegCount = (VIP_UINT16)n;
	d->CS.Length = n * 16;
	for (unsigned i = 0; i < n; i++) {
		ds[i].Data.Address = m->p + 4096 + i * SEG_STRIDE;
		ds[i].Handle = m->mh;
		ds[i].Length = 16;
	}
}

static void sc_segments(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi;
	struct mem m;
	VIP_DESCRIPTOR *d = NULL;

	ok(na.MaxSegmentsPerDesc == NSEG + 1, "MaxSegmentsPerDesc: %d data segments and the AS (%lu)",
	   NSEG, (unsigned long)na.MaxSegmentsPerDesc);
	/* the descriptor fills page 0, the segments pages 1 to 3 */
	mem_init(&m, 5, 0, NULL, 0, 0);
	vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		addr_t rem;
		int good = 1;

		segs_fill((VIP_DESCRIPTOR *)m.p, &m, NSEG, 0);
		IS(VipPostRecv(vi, (VIP_DESCRIPTOR *)m.p, m.mh), VIP_SUCCESS);
		IS(wait_for("segments", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d == (VIP_DESCRIPTOR *)m.p && d->CS.Length == NSEG * 16 &&
			   d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE),
		   "a receive of %d segments: Length %u, Status %#x", NSEG, d ? d->CS.Length : 0,
		   d ? d->CS.Status : 0);
		for (unsigned i = 0; i < NSEG * SEG_STRIDE; i++) {
			unsigned seg = i / SEG_STRIDE, off = i % SEG_STRIDE;
			unsigned k = seg * 16 + off;

			good &= m.p[4096 + i] == (off < 16 ? (unsigned char)(k * 7 + 1) : 0xa5);
		}
		ok(good, "scattered over %d segments in order, nothing between them", NSEG);
	} else {
		for (unsigned i = 0; i < NSEG * SEG_STRIDE; i++) {
			unsigned seg = i / SEG_STRIDE, off = i % SEG_STRIDE;

			m.p[4096 + i] = off < 16 ? (unsigned char)((seg * 16 + off) * 7 + 1) : 0x11;
		}
		IS(request(vi, "segments", LONG_MS, &rva), VIP_SUCCESS);
		segs_fill((VIP_DESCRIPTOR *)m.p, &m, NSEG, 0);
		IS(VipPostSend(vi, (VIP_DESCRIPTOR *)m.p, m.mh), VIP_SUCCESS);
		IS(VipSendWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(d == (VIP_DESCRIPTOR *)m.p &&
			   d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_SEND),
		   "a Send gathered from %d segments: Status %#x", NSEG, d ? d->CS.Status : 0);
		/* one more: refused, nothing sent (the server saw one message) */
		segs_fill((VIP_DESCRIPTOR *)m.p, &m, NSEG + 1, 0);
		IS(VipPostSend(vi, (VIP_DESCRIPTOR *)m.p, m.mh), VIP_SUCCESS);
		VIP_RETURN r = VipSendWait(vi, LONG_MS, &d);
		ok(r == VIP_DESCRIPTOR_ERROR && d == (VIP_DESCRIPTOR *)m.p &&
			   (d->CS.Status & VIP_STATUS_ERROR_MASK) == VIP_STATUS_LENGTH_ERROR,
		   "%d data segments: LENGTH error (%#x)", NSEG + 1, d ? d->CS.Status : 0);
	}
	teardown(vi);
	mem_fini(&m);
}

/*
 * Data in memory of another protection tag: a region moved to another tag
 * by VipSetMemAttributes can no longer be sent from on this VI
 * (PROTECTION, nothing sent); the server's receive is only flushed.
 */
static void sc_wrong_tag(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi;
	struct mem m;
	VIP_DESCRIPTOR *d = NULL;

	mem_init(&m, 2, 0, NULL, 0, 0);
	vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, NULL, NULL);
	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		addr_t rem;
		int good = 1;

		one_seg(desc(&m, 0), 0, m.p + 4096, 256, m.mh);
		IS(VipPostRecv(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		IS(wait_for("wrong-tag", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		VIP_RETURN r = VipRecvWait(vi, LONG_MS, &d);
		ok(r == VIP_DESCRIPTOR_ERROR && d == desc(&m, 0) &&
			   (d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR),
		   "the peer's refused Send never arrived: the receive is flushed (%#x)",
		   d ? d->CS.Status : 0);
		for (int i = 0; i < 256; i++)
			good &= m.p[4096 + i] == 0xa5;
		ok(good, "... and its buffer is untouched");
	} else {
		VIP_MEM_ATTRIBUTES ma = {NULL, VIP_FALSE, VIP_FALSE};
		VIP_PROTECTION_HANDLE tag;
		struct mem other;

		IS(VipCreatePtag(nic, &tag), VIP_SUCCESS);
		mem_init(&other, 1, 0, NULL, 0, 0);
		IS(request(vi, "wrong-tag", LONG_MS, &rva), VIP_SUCCESS);
		ma.Ptag = tag;
		IS(VipSetMemAttributes(nic, other.p, other.mh, &ma), VIP_SUCCESS);
		memset(other.p, 0x5a, 256);
		one_seg(desc(&m, 0), 0, other.p, 256, other.mh);
		IS(VipPostSend(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		VIP_RETURN r = VipSendWait(vi, LONG_MS, &d);
		ok(r == VIP_DESCRIPTOR_ERROR && d == desc(&m, 0) &&
			   (d->CS.Status & VIP_STATUS_PROTECTION_ERROR),
		   "a Send from memory moved to another tag: PROTECTION (%#x)", d ? d->CS.Status : 0);
		teardown(vi);
		mem_fini(&other);
		IS(VipDestroyPtag(nic, tag), VIP_SUCCESS);
		mem_fini(&m);
		return;
	}
	teardown(vi);
	mem_fini(&m);
}

/* 5: RDMA: Write into a region without RDMA Write, Read, CQ order */
static void sc_rdma(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi;
	struct mem m;
	VIP_DESCRIPTOR *d;
	struct {
		VIP_UINT64 addr;
		VIP_MEM_HANDLE ro, rw;
	} *info;

	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		addr_t rem;
		struct mem ro, rw;
		int good = 1;

		mem_init(&m, 1, 0, NULL, 0, 0);
		mem_init(&ro, 1, 0, NULL, VIP_FALSE, VIP_TRUE); /* readable, not writable */
		mem_init(&rw, 1, 0, NULL, VIP_TRUE, VIP_TRUE);
		for (int i = 0; i < 4096; i++)
			ro.p[i] = (unsigned char)(i * 3);
		vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, VIP_TRUE, VIP_TRUE, NULL, NULL);
		one_seg(desc(&m, 0), 0, m.p + 2048, 64, m.mh);
		IS(VipPostRecv(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		IS(wait_for("rdma", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		info = (void *)(m.p + 1024);
		info->addr = (VIP_UINT64)(uintptr_t)ro.p;
		info->ro = ro.mh;
		info->rw = rw.mh;
		one_seg(desc(&m, 1), 0, info, sizeof(*info), m.mh);
		IS(VipPostSend(vi, desc(&m, 1), m.mh), VIP_SUCCESS);
		int before = atomic_load(&errors_seen);

		IS(VipSendWait(vi, LONG_MS, &d), VIP_SUCCESS);
		/* the client reads, sends, then writes where it may not */
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		ok(wait_flag(&errors_seen, before + 1),
		   "an RDMA Write into a region without EnableRdmaWrite: an asynchronous error");
		for (int i = 0; i < 4096; i++)
			good &= ro.p[i] == (unsigned char)(i * 3);
		ok(good, "... and the region is unchanged");
		teardown(vi);
		mem_fini(&rw);
		mem_fini(&ro);
	} else {
		VIP_CQ_HANDLE cq;
		VIP_VI_HANDLE who;
		VIP_BOOLEAN recv;
		unsigned char *buf;
		int good = 1;

		IS(VipCreateCQ(nic, 16, &cq), VIP_SUCCESS);
		mem_init(&m, 2, 0, NULL, 0, 0);
		buf = m.p + 4096;
		vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 4096, 0, 0, cq, NULL);
		one_seg(desc(&m, 0), 0, m.p + 2048, 64, m.mh);
		IS(VipPostRecv(vi, desc(&m, 0), m.mh), VIP_SUCCESS);
		IS(request(vi, "rdma", LONG_MS, &rva), VIP_SUCCESS);
		IS(VipRecvWait(vi, LONG_MS, &d), VIP_SUCCESS);
		info = (void *)(m.p + 2048);
		/* RDMA Read of 4096 bytes, then a Send: CQ entries in that order */
		d = desc(&m, 1);
		memset(d, 0, 64);
		d->CS.Control = VIP_CONTROL_OP_RDMAREAD;
		d->CS.SegCount = 2;
		d->CS.Length = 4096;
		d->DS[0].Remote.Data.AddressBits = info->addr;
		d->DS[0].Remote.Handle = info->ro;
		d->DS[1].Local.Data.Address = buf;
		d->DS[1].Local.Handle = m.mh;
		d->DS[1].Local.Length = 4096;
		IS(VipPostSend(vi, d, m.mh), VIP_SUCCESS);
		one_seg(desc(&m, 2), VIP_CONTROL_QFENCE, m.p + 3000, 8, m.mh);
		IS(VipPostSend(vi, desc(&m, 2), m.mh), VIP_SUCCESS);
		IS(VipCQWait(cq, LONG_MS, &who, &recv), VIP_SUCCESS);
		ok(who == vi && !recv, "first CQ entry: the send queue");
		IS(VipSendDone(vi, &d), VIP_SUCCESS);
		ok(d == desc(&m, 1) &&
			   d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ),
		   "it is the RDMA Read's (Status %#x)", d->CS.Status);
		for (int i = 0; i < 4096; i++)
			good &= buf[i] == (unsigned char)(i * 3);
		ok(good, "the RDMA Read brought the bytes");
		IS(VipCQWait(cq, LONG_MS, &who, &recv), VIP_SUCCESS);
		IS(VipSendDone(vi, &d), VIP_SUCCESS);
		ok(d == desc(&m, 2), "then the fenced Send's");
		IS(VipSendWait(vi, 10, &d), VIP_ERROR_RESOURCE);
		/* an RDMA Write into the read-only region */
		d = desc(&m, 3);
		memset(d, 0, 64);
		d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
		d->CS.SegCount = 2;
		d->CS.Length = 100;
		d->DS[0].Remote.Data.AddressBits = info->addr;
		d->DS[0].Remote.Handle = info->ro;
		d->DS[1].Local.Data.Address = buf;
		d->DS[1].Local.Handle = m.mh;
		d->DS[1].Local.Length = 100;
		IS(VipPostSend(vi, d, m.mh), VIP_SUCCESS);
		one_seg(desc(&m, 4), 0, m.p + 3000, 8, m.mh);
		IS(VipPostSend(vi, desc(&m, 4), m.mh), VIP_SUCCESS);
		sleep(2);
		VipDisconnect(vi);
		while (VipSendDone(vi, &d) != VIP_DESCRIPTOR_ERROR || d)
			;
		while (VipRecvDone(vi, &d) != VIP_DESCRIPTOR_ERROR || d)
			;
		while (VipCQDone(cq, &who, &recv) == VIP_SUCCESS)
			;
		IS(VipDestroyVi(vi), VIP_SUCCESS);
		IS(VipDestroyCQ(cq), VIP_SUCCESS);
	}
	mem_fini(&m);
}

/* 6: one thread sends while another receives on the same VI */
struct pump {
	VIP_VI_HANDLE vi;
	struct mem *m;
	int n, errors;
	sem_t credits; /* receives the server has posted for us */
};

static void *sender(void *arg)
{
	struct pump *p = arg;
	VIP_DESCRIPTOR *d;

	for (int i = 0; i < p->n; i++) {
		unsigned char *b = p->m->p + 8192 + (size_t)(i % 8) * 64;

		sem_wait(&p->credits);
		memset(b, i & 0xff, 64);
		one_seg(desc(p->m, 8 + (unsigned)(i % 8)), 0, b, 64, p->m->mh);
		if (VipPostSend(p->vi, desc(p->m, 8 + (unsigned)(i % 8)), p->m->mh) != VIP_SUCCESS ||
		    VipSendWait(p->vi, LONG_MS, &d) != VIP_SUCCESS)
			p->errors++;
	}
	return NULL;
}

static void sc_threads(void)
{
	VIP_VI_ATTRIBUTES rva;
	VIP_VI_HANDLE vi = mkvi(VIP_SERVICE_RELIABLE_DELIVERY, 64, 0, 0, NULL, NULL);
	struct mem m;
	VIP_DESCRIPTOR *d;
	const int n = 200;

	mem_init(&m, 4, 0, NULL, 0, 0);
	for (unsigned i = 0; i < 8; i++) {
		one_seg(desc(&m, i), 0, m.p + 4096 + i * 64, 64, m.mh);
		VipPostRecv(vi, desc(&m, i), m.mh);
	}
	if (role == ROLE_SERVER) {
		VIP_CONN_HANDLE conn;
		addr_t rem;
		int errors = 0;

		IS(wait_for("threads", LONG_MS, &rem, &rva, &conn), VIP_SUCCESS);
		IS(VipConnectAccept(conn, vi), VIP_SUCCESS);
		for (int i = 0; i < n; i++) {
			if (VipRecvWait(vi, LONG_MS, &d) != VIP_SUCCESS) {
				errors++;
				break;
			}
			unsigned char *b = (unsigned char *)d->DS[0].Local.Data.Address;
			unsigned char *echo = m.p + 12288;

			if (b[0] != (i & 0xff) || b[63] != (i & 0xff))
				errors++;
			/* the receive goes back before the echo: the client sends
			 * only as many as it got echoes for, plus 8 */
			memcpy(echo, b, 64);
			one_seg(d, 0, b, 64, m.mh);
			VipPostRecv(vi, d, m.mh);
			one_seg(desc(&m, 8), 0, echo, 64, m.mh);
			VipPostSend(vi, desc(&m, 8), m.mh);
			if (VipSendWait(vi, LONG_MS, &d) != VIP_SUCCESS)
				errors++;
		}
		ok(errors == 0, "echoed %d messages in order", n);
		wait_flag(&conn_lost_seen, 3);
	} else {
		struct pump p = {vi, &m, n, 0, {{0}}};
		pthread_t th;
		int errors = 0, first_bad = -1;
		VIP_RETURN bad_r = VIP_SUCCESS;

		sem_init(&p.credits, 0, 8);
		IS(request(vi, "threads", LONG_MS, &rva), VIP_SUCCESS);
		pthread_create(&th, NULL, sender, &p);
		for (int i = 0; i < n; i++) {
			bad_r = VipRecvWait(vi, LONG_MS, &d);
			if (bad_r != VIP_SUCCESS) {
				first_bad = i;
				errors++;
				break;
			}
			unsigned char *b = (unsigned char *)d->DS[0].Local.Data.Address;
			if (b[0] != (i & 0xff) || b[63] != (i & 0xff)) {
				if (first_bad < 0)
					first_bad = i;
				errors++;
			}
			one_seg(d, 0, b, 64, m.mh);
			VipPostRecv(vi, d, m.mh);
			sem_post(&p.credits);
		}
		for (int i = 0; errors && i < n; i++)
			sem_post(&p.credits); /* let the sender finish */
		pthread_join(th, NULL);
		ok(errors == 0 && p.errors == 0,
		   "one thread sent %d messages while another received the echoes "
		   "(%d receive errors from %d, last %d; %d send errors)",
		   n, errors, first_bad, bad_r, p.errors);
	}
	teardown(vi);
	mem_fini(&m);
}

/* 7: autodiscovery after the hosts have talked */
static void sc_autodiscovery(void)
{
	VIP_AUTODISCOVERY_LIST l = {1, NULL, 0};
	addr_t a[4];
	VIP_NET_ADDRESS *arr[4] = {&a[0].a, &a[1].a, &a[2].a, &a[3].a};
	int found = 0;

	IS(VipQuerySystemManagementInfo(nic, 2, &l), VIP_INVALID_PARAMETER);
	VIP_RETURN r = VipQuerySystemManagementInfo(nic, VIP_SMI_AUTODISCOVERY, &l);
	ok(r == VIP_ERROR_RESOURCE && l.NumAdAddrs >= 1,
	   "autodiscovery without room: ERROR_RESOURCE and the count (%lu)", l.NumAdAddrs);
	l.ADAddrArray = arr;
	l.NumAdAddrs = 4;
	for (int i = 0; i < 4; i++)
		a[i].a.HostAddressLen = 0;
	IS(VipQuerySystemManagementInfo(nic, VIP_SMI_AUTODISCOVERY, &l), VIP_SUCCESS);
	for (VIP_ULONG i = 0; i < l.NumAdAddrs && i < 4; i++)
		found |= memcmp(a[i].a.HostAddress, peer_ip, 4) == 0;
	ok(found, "autodiscovery finds the peer, one hop away");
}

int main(int argc, char **argv)
{
	if (argc < 2)
		bail("usage: vipl-conformance local|server PEER|client PEER");
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	if (VipOpenNic("VINIC0", &nic) != VIP_SUCCESS || VipQueryNic(nic, &na) != VIP_SUCCESS)
		bail("cannot open VINIC0");
	if (strcmp(argv[1], "local") == 0) {
		local_nic();
		local_memory();
		local_vi();
		local_flush_and_cq();
		local_threads();
		local_bad_descriptors();
		local_connect_params();
		local_names();
	} else if (argc == 3 && inet_pton(AF_INET, argv[2], peer_ip) == 1) {
		role = strcmp(argv[1], "server") == 0 ? ROLE_SERVER : ROLE_CLIENT;
		VipErrorCallback(nic, NULL, on_error);
		sc_basic();
		sc_reject_timeout();
		sc_conflict();
		sc_protection();
		sc_recvq_empty();
		sc_rdma();
		sc_set_mem();
		sc_wrong_tag();
		sc_segments();
		sc_threads();
		sc_autodiscovery();
	} else {
		bail("usage: vipl-conformance local|server PEER|client PEER");
	}
	IS(VipCloseNic(nic), VIP_SUCCESS);
	printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
