// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded, time-bounded fuzzer of the /dev/viaduct resource commands.
 *
 * Random sequences over every command with mostly valid and corrupted
 * arguments (handles live, stale, of another type, of another thread;
 * random sizes, flags and pointers, including unmapped and read-only
 * memory), random mmap/munmap of every key, random garbage in mapped rings
 * and doorbell indices, random fork/exit/kill of children holding the file,
 * random close and reopen, several threads on one file, and removal of the
 * device underneath it all.
 *
 * Each phase is one test. It runs in a worker process; the test fails if
 * the worker (or one of its children) dies of a signal, if a command
 * returns a kernel-internal errno (>= 512), if the kernel stops answering
 * afterwards, or if anything stays allocated or pinned after the worker
 * is gone. The kernel log scan of the harness (KASAN, lockdep, WARN,
 * kmemleak) is the other half of the oracle.
 *
 * The "connected" phase does the same to a context whose QPs are
 * connected to peer QPs in another network namespace (the shared pair of
 * xfer_util.h): besides the random commands, mostly valid Sends, Writes
 * and Reads into the peer's registered buffer and receives are posted
 * into their rings. For the first half the WRs are rarely wrong (a field
 * in 500; the test asserts that some Sends reached the peers) and the
 * connected QPs, their PD and MR are not among the random commands'
 * targets, so that streams carry traffic while everything else is
 * fuzzed; in the second half they are fair game (MODIFY to any state,
 * DESTROY, ring garbage). The peer context, in the test process, must survive:
 * once the fuzzed context is closed, every peer QP is in Error with each
 * posted receive completed exactly once, it still serves commands, and
 * nothing stays allocated.
 *
 * Environment: VIADUCT_FUZZ_SEED (default: from the clock, printed),
 * VIADUCT_FUZZ_SECONDS (the budget of all phases but "connected", which
 * takes another 15 % of it; default 60, or 20 when VD_FLAVOUR=debug).
 */
#include <pthread.h>
#include <sys/time.h>

#include "xfer_util.h"

/* ------------------------------------------------------------------ */
/* Randomness                                                         */
/* ------------------------------------------------------------------ */

static uint64_t rnd_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(rnd_next(s) % n) : 0;
}

static int chance(uint64_t *s, unsigned int pct)
{
	return rnd(s, 100) < pct;
}

/* A "size" with an eye for edges: 0, 1, powers of two and their neighbours, huge. */
static uint64_t rnd_size(uint64_t *s, uint64_t typical)
{
	switch (rnd(s, 8)) {
	case 0:
		return 0;
	case 1:
		return 1 + rnd(s, 4);
	case 2: {
		uint64_t p = 1ULL << rnd(s, 64);

		return p + (int)rnd(s, 3) - 1;
	}
	case 3:
		return rnd_next(s);
	case 4:
		return 0xffffffffULL - rnd(s, 2);
	default:
		return 1 + rnd(s, typical ? (uint32_t)typical : 1);
	}
}

/* ------------------------------------------------------------------ */
/* State                                                              */
/* ------------------------------------------------------------------ */

#define MAXH		48
#define MAXMAP		48
#define MAXKEY		128
#define MAXCH		4
#define MAXKIDS		8
#define RW_SIZE		(4UL << 20)

enum { T_PD, T_MR, T_CQ, T_QP, T_NR };

enum { K_CQ, K_DB, K_SQ, K_RQ, K_PCQ };

struct fz_key {
	uint64_t key;
	uint64_t size;
	int kind;
	uint32_t depth;		/* ring entries */
	uint32_t slot;		/* WQE slot size */
	uint32_t owner;		/* the QP of a doorbell page or WQE ring */
};

struct fz_map {
	void *p;
	size_t len;
	struct fz_key k;
};

/* Handles published by every thread, read racily by the others. */
static uint32_t shared_pool[64];

struct fz {
	uint64_t rng;
	int fd;
	const struct vd_testdev *dev;
	struct viaduct_device_attr attr;
	uint32_t h[T_NR][MAXH];
	unsigned int n[T_NR];
	uint32_t stale[32];
	struct fz_key keys[MAXKEY];
	unsigned int nkeys;
	struct fz_map maps[MAXMAP];
	unsigned int nmaps;
	int ch[MAXCH];
	pid_t kids[MAXKIDS];
	char *rw, *ro, *none, *hole;
	void *roarg;		/* read-only view of @rwarg */
	void *rwarg;
	int is_child;		/* a forked child: no forks, no waiting */
	int may_close;		/* may close and reopen its file */
	int internal_errnos;	/* commands that returned errno >= 512 */
	int child_crashes;
	unsigned long ops, ok;
	struct { unsigned long cmd; int err; } first_bad;
	/* the connected phase: QPs connected to a peer, and the two buffers */
	struct vd_qp *conn;
	unsigned int nconn;
	unsigned long posts;
	char *lbuf;
	size_t llen, rlen;
	__u32 lstag, rstag;
	__u64 raddr;
	__u32 conn_pd, conn_mr;	/* the connected side's PD and region */
	int gentle;		/* traffic first: faults rare, nothing deadly */
	/* completions of the connected QPs reaped while gentle */
	unsigned long gentle_ok, gentle_err;
	struct viaduct_cqe gentle_first_err;
};

static void fz_note(struct fz *z, unsigned long cmd, int ret)
{
	z->ops++;
	if (!ret) {
		z->ok++;
		return;
	}
	if (-ret >= 512 && -ret < 4096) {
		if (!z->internal_errnos) {
			z->first_bad.cmd = cmd;
			z->first_bad.err = -ret;
		}
		z->internal_errnos++;
	}
}

static int fz_ioctl(struct fz *z, unsigned long cmd, void *arg)
{
	int ret = vd_ioctl(z->fd, cmd, arg);

	fz_note(z, cmd, ret);
	return ret;
}

static void add_handle(struct fz *z, int t, uint32_t h)
{
	if (z->n[t] < MAXH)
		z->h[t][z->n[t]++] = h;
	__atomic_store_n(&shared_pool[rnd(&z->rng, 64)], h, __ATOMIC_RELAXED);
}

static void drop_handle(struct fz *z, int t, unsigned int i)
{
	z->stale[rnd(&z->rng, 32)] = z->h[t][i];
	z->h[t][i] = z->h[t][--z->n[t]];
}

static void forget_handle(struct fz *z, uint32_t h)
{
	int t;
	unsigned int i;

	for (t = 0; t < T_NR; t++)
		for (i = 0; i < z->n[t]; i++)
			if (z->h[t][i] == h) {
				drop_handle(z, t, i);
				return;
			}
}

static void add_key(struct fz *z, uint64_t key, uint64_t size, int kind, uint32_t depth,
		    uint32_t slot, uint32_t owner)
{
	struct fz_key *k = &z->keys[z->nkeys < MAXKEY ? z->nkeys++ : rnd(&z->rng, MAXKEY)];

	k->owner = owner;
	k->key = key;
	k->size = size;
	k->kind = kind;
	k->depth = depth;
	k->slot = slot;
}

/* A handle of type @t, mostly a live one, sometimes anything but. */
static uint32_t pick_any(struct fz *z, int t)
{
	uint64_t *r = &z->rng;
	int o;

	switch (rnd(r, 20)) {
	case 0:
		return 0;
	case 1:
		return rnd_next(r);
	case 2:
		return 1 + rnd(r, 64);
	case 3:
	case 4:
		return z->stale[rnd(r, 32)];
	case 5:
		o = rnd(r, T_NR);
		return z->n[o] ? z->h[o][rnd(r, z->n[o])] : 0;
	case 6:
	case 7:
		return __atomic_load_n(&shared_pool[rnd(r, 64)], __ATOMIC_RELAXED);
	default:
		return z->n[t] ? z->h[t][rnd(r, z->n[t])] : rnd(r, 8);
	}
}

/*
 * A handle for a command: pick_any()'s, except that while the connected
 * phase is gentle, its PD, region and QPs are never the target (a small
 * handle guessed at random is often one of them, and a command on it
 * would end the traffic before it began); they become fair game with
 * fz_expose_connected().
 */
static uint32_t pick(struct fz *z, int t)
{
	uint32_t h = pick_any(z, t);
	unsigned int i;

	if (!z->gentle || !h)
		return h;
	if (h == z->conn_pd || h == z->conn_mr)
		return 0;
	for (i = 0; i < z->nconn; i++)
		if (h == z->conn[i].c.handle)
			return 0;
	return h;
}

/* Where an argument structure lives: mostly @arg, sometimes nowhere good. */
static void *pick_argp(struct fz *z, void *arg, size_t len)
{
	switch (rnd(&z->rng, 40)) {
	case 0:
		return NULL;
	case 1:
		return (void *)(uintptr_t)rnd_next(&z->rng);
	case 2:
		/* the same page through a writable and a read-only view */
		memcpy(z->rwarg, arg, len);
		return z->roarg;
	case 3:
		return z->hole;
	case 4:
		return z->none;
	case 5:
		return VD_KERNEL_PTR;
	default:
		return arg;
	}
}

/* Flips a few random bits of @len bytes at @p. */
static void corrupt(struct fz *z, void *p, size_t len)
{
	unsigned int i, n = 1 + rnd(&z->rng, 3);

	/* a flipped bit makes a handle of 0 one of the gentle half's: see pick() */
	if (z->gentle)
		return;
	for (i = 0; i < n; i++) {
		size_t at = rnd(&z->rng, len);

		if (chance(&z->rng, 50))
			((uint8_t *)p)[at] ^= 1U << rnd(&z->rng, 8);
		else
			((uint8_t *)p)[at] = rnd(&z->rng, 256);
	}
}

/* A memory range for REG_MR: mostly inside the read-write area. */
static void pick_range(struct fz *z, __u64 *addr, __u64 *len)
{
	uint64_t *r = &z->rng;
	uint64_t off = rnd(r, RW_SIZE);

	switch (rnd(r, 16)) {
	case 0:
		*addr = (uintptr_t)z->ro + rnd(r, 2 * VD_PAGE);
		*len = 1 + rnd(r, VD_PAGE);
		return;
	case 1:
		*addr = (uintptr_t)z->none;
		*len = 1 + rnd(r, VD_PAGE);
		return;
	case 2:
		*addr = (uintptr_t)z->hole + rnd(r, VD_PAGE);
		*len = 1 + rnd(r, 3 * VD_PAGE);
		return;
	case 3:
		*addr = rnd_next(r);
		*len = rnd_size(r, RW_SIZE);
		return;
	case 4:
		*addr = (uintptr_t)z->rw + off;
		*len = rnd_size(r, RW_SIZE);
		return;
	default:
		*addr = (uintptr_t)z->rw + off;
		*len = 1 + rnd(r, (uint32_t)(RW_SIZE - off));
		return;
	}
}

/* ------------------------------------------------------------------ */
/* Operations                                                         */
/* ------------------------------------------------------------------ */

static void op_create_pd(struct fz *z)
{
	struct viaduct_handle h = { 0 };
	void *p = pick_argp(z, &h, sizeof(h));

	if (!fz_ioctl(z, VIADUCT_IOCTL_CREATE_PD, p) && p == &h)
		add_handle(z, T_PD, h.handle);
}

static void op_destroy(struct fz *z, int t)
{
	static const unsigned long cmds[T_NR] = {
		VIADUCT_IOCTL_DESTROY_PD, VIADUCT_IOCTL_DEREG_MR,
		VIADUCT_IOCTL_DESTROY_CQ, VIADUCT_IOCTL_DESTROY_QP,
	};
	struct viaduct_handle h = { .handle = pick(z, t) };

	if (chance(&z->rng, 5))
		h.reserved = rnd_next(&z->rng);
	if (!fz_ioctl(z, cmds[t], pick_argp(z, &h, sizeof(h))))
		forget_handle(z, h.handle);
}

static void op_reg_mr(struct fz *z)
{
	struct viaduct_reg_mr m = { 0 };
	void *p;

	if (z->n[T_MR] >= MAXH - 2 || (z->n[T_MR] > 24 && chance(&z->rng, 50))) {
		op_destroy(z, T_MR);
		return;
	}
	pick_range(z, &m.addr, &m.length);
	m.pd_handle = pick(z, T_PD);
	m.access = rnd(&z->rng, 16);
	if (m.access & VIADUCT_ACCESS_REMOTE_WRITE && chance(&z->rng, 80))
		m.access |= VIADUCT_ACCESS_LOCAL_WRITE;
	/* mostly what the device does (no memory windows): MRs to use */
	if (chance(&z->rng, 90))
		m.access &= ~VIADUCT_ACCESS_MW_BIND;
	m.key = rnd(&z->rng, 256);
	if (chance(&z->rng, 10))
		corrupt(z, &m, sizeof(m));
	p = pick_argp(z, &m, sizeof(m));
	if (!fz_ioctl(z, VIADUCT_IOCTL_REG_MR, p) && p == &m)
		add_handle(z, T_MR, m.handle);
}

static uint32_t pick_entries(struct fz *z, uint32_t max)
{
	if (chance(&z->rng, 85))
		return 1 + rnd(&z->rng, max < 1024 ? max : 1024);
	return rnd_size(&z->rng, max);
}

static void op_create_cq(struct fz *z)
{
	struct viaduct_create_cq c = { 0 };
	void *p;

	if (z->n[T_CQ] >= MAXH - 2) {
		op_destroy(z, T_CQ);
		return;
	}
	c.entries = pick_entries(z, z->attr.max_cqe);
	c.channel_fd = chance(&z->rng, 30) ? z->ch[rnd(&z->rng, MAXCH)] : -1;
	if (chance(&z->rng, 3))
		c.channel_fd = rnd(&z->rng, 64) - 2;
	c.user_data = rnd_next(&z->rng);
	if (chance(&z->rng, 10))
		corrupt(z, &c, sizeof(c));
	p = pick_argp(z, &c, sizeof(c));
	if (!fz_ioctl(z, VIADUCT_IOCTL_CREATE_CQ, p) && p == &c) {
		add_handle(z, T_CQ, c.handle);
		add_key(z, c.mmap_key, c.mmap_size, K_CQ, c.entries, 0, 0);
	}
}

static void op_resize_cq(struct fz *z)
{
	struct viaduct_resize_cq r = { .handle = pick(z, T_CQ) };
	void *p;

	r.entries = pick_entries(z, z->attr.max_cqe);
	if (chance(&z->rng, 5))
		corrupt(z, &r, sizeof(r));
	p = pick_argp(z, &r, sizeof(r));
	if (!fz_ioctl(z, VIADUCT_IOCTL_RESIZE_CQ, p) && p == &r)
		add_key(z, r.mmap_key, r.mmap_size, K_CQ, r.entries, 0, 0);
}

static void op_arm_cq(struct fz *z)
{
	struct viaduct_arm_cq a = { .handle = pick(z, T_CQ) };

	a.flags = chance(&z->rng, 90) ? 1 + rnd(&z->rng, 3) : (uint32_t)rnd_next(&z->rng);
	/* half of them moderated: small counts, the ring's size, garbage */
	if (chance(&z->rng, 50))
		a.threshold = chance(&z->rng, 80) ? rnd(&z->rng, 70) : (uint32_t)rnd_size(&z->rng, 64);
	if (chance(&z->rng, 3))
		a.reserved = rnd_next(&z->rng);
	fz_ioctl(z, VIADUCT_IOCTL_ARM_CQ, pick_argp(z, &a, sizeof(a)));
}

static void op_create_qp(struct fz *z)
{
	const struct viaduct_device_attr *d = &z->attr;
	struct viaduct_create_qp c;
	uint64_t *r = &z->rng;
	void *p;

	if (z->n[T_QP] >= 24) {
		op_destroy(z, T_QP);
		return;
	}
	vd_qp_args(&c, pick(z, T_PD), chance(r, 20) ? 0 : pick(z, T_CQ),
		   chance(r, 20) ? 0 : pick(z, T_CQ));
	c.user_data = rnd_next(r);
	c.flags = chance(r, 30) ? VIADUCT_QP_F_POLLED : 0;
	c.reliability = 1U << rnd(r, 3);
	/* mostly what the device gives (no Reliable Reception): QPs to use */
	if (c.reliability == VIADUCT_RELIABILITY_RELIABLE_RECEPTION && chance(r, 90))
		c.reliability = VIADUCT_RELIABILITY_RELIABLE_DELIVERY;
	c.access = rnd(r, 4);
	c.sq_depth = pick_entries(z, d->max_qp_wr < 512 ? d->max_qp_wr : 512);
	c.rq_depth = pick_entries(z, d->max_qp_wr < 512 ? d->max_qp_wr : 512);
	/* rings shorter than the queues, sometimes longer (EINVAL) */
	if (chance(r, 30)) {
		c.sq_ring_depth = 1 + rnd(r, c.sq_depth + (chance(r, 10) ? 2 : 0));
		c.rq_ring_depth = 1 + rnd(r, c.rq_depth + (chance(r, 10) ? 2 : 0));
	}
	c.max_send_sge = rnd(r, d->max_sge + 1);
	c.max_recv_sge = rnd(r, d->max_sge + 1);
	c.max_inline = rnd(r, d->max_inline + 1);
	c.ord = rnd(r, d->max_ord + 1);
	c.ird = rnd(r, d->max_ird + 1);
	if (chance(r, 15))
		corrupt(z, &c, sizeof(c));
	p = pick_argp(z, &c, sizeof(c));
	if (!fz_ioctl(z, VIADUCT_IOCTL_CREATE_QP, p) && p == &c) {
		add_handle(z, T_QP, c.handle);
		add_key(z, c.db_key, c.db_size, K_DB, 0, 0, c.handle);
		add_key(z, c.sq_key, c.sq_size, K_SQ, c.sq_ring_depth, c.sq_wqe_size, c.handle);
		add_key(z, c.rq_key, c.rq_size, K_RQ, c.rq_ring_depth, c.rq_wqe_size, c.handle);
		if (!c.send_cq)
			add_key(z, c.scq_key, c.scq_size, K_PCQ, c.scq_entries, 0, c.handle);
		if (!c.recv_cq)
			add_key(z, c.rcq_key, c.rcq_size, K_PCQ, c.rcq_entries, 0, c.handle);
	}
}

static void op_modify_qp(struct fz *z)
{
	struct viaduct_modify_qp m = { .handle = pick(z, T_QP) };
	uint64_t *r = &z->rng;

	m.mask = chance(r, 90) ? 1 + rnd(r, 15) : (uint32_t)rnd_next(r);
	m.state = chance(r, 60) ? (chance(r, 50) ? VIADUCT_QPS_ERROR : VIADUCT_QPS_IDLE)
				: rnd(r, VIADUCT_QPS_MAX + 3);
	m.access = rnd(r, 5);
	m.ord = rnd(r, z->attr.max_ord + 2);
	m.ird = rnd(r, z->attr.max_ird + 2);
	fz_ioctl(z, VIADUCT_IOCTL_MODIFY_QP, pick_argp(z, &m, sizeof(m)));
}

static void op_query_qp(struct fz *z)
{
	struct viaduct_query_qp q = { .handle = pick(z, T_QP) };

	if (chance(&z->rng, 5))
		q.reserved = 1;
	fz_ioctl(z, VIADUCT_IOCTL_QUERY_QP, pick_argp(z, &q, sizeof(q)));
}

static void op_doorbell(struct fz *z)
{
	struct viaduct_doorbell_req d = { .handle = pick(z, T_QP) };

	d.flags = chance(&z->rng, 90) ? 1 + rnd(&z->rng, 3) : (uint32_t)rnd_next(&z->rng);
	fz_ioctl(z, VIADUCT_IOCTL_DOORBELL, pick_argp(z, &d, sizeof(d)));
}

static void op_channel(struct fz *z)
{
	struct viaduct_comp_channel c = { .fd = -1 };
	unsigned int i = rnd(&z->rng, MAXCH);
	void *p;

	if (z->ch[i] >= 0 && chance(&z->rng, 70)) {
		struct viaduct_cq_event ev[4];

		/* drain it (non-blocking), sometimes into bad memory, then maybe close */
		if (read(z->ch[i], chance(&z->rng, 10) ? (void *)z->ro : (void *)ev,
			 rnd(&z->rng, sizeof(ev) + 1)) < 0 && errno != EAGAIN)
			fz_note(z, 0, -errno);
		if (chance(&z->rng, 30)) {
			close(z->ch[i]);
			z->ch[i] = -1;
		}
		return;
	}
	p = pick_argp(z, &c, sizeof(c));
	if (!fz_ioctl(z, VIADUCT_IOCTL_CREATE_COMP_CHANNEL, p) && p == &c) {
		if (z->ch[i] >= 0)
			close(z->ch[i]);
		z->ch[i] = c.fd;
		fcntl(c.fd, F_SETFL, O_NONBLOCK);
	}
}

static void op_async(struct fz *z)
{
	struct viaduct_async_event ev[4];
	ssize_t n;

	if (vd_wait_readable(z->fd, 0) <= 0 && chance(&z->rng, 80))
		return;
	n = read(z->fd, chance(&z->rng, 10) ? (void *)z->ro : (void *)ev,
		 rnd(&z->rng, sizeof(ev) + 1));
	if (n < 0 && errno != EAGAIN)
		fz_note(z, 1, -errno);
}

static void op_random_cmd(struct fz *z)
{
	char buf[256];
	unsigned long cmd = _IOC(rnd(&z->rng, 4), VIADUCT_IOCTL_MAGIC, rnd(&z->rng, 64),
				 rnd(&z->rng, sizeof(buf)));

	memset(buf, rnd(&z->rng, 256), sizeof(buf));
	fz_ioctl(z, cmd, pick_argp(z, buf, sizeof(buf)));
}

static void op_mmap(struct fz *z)
{
	int exact, prot, flags;
	struct fz_key k;
	size_t len;
	void *p;

	if (z->nmaps >= MAXMAP) {
		struct fz_map *m = &z->maps[rnd(&z->rng, MAXMAP)];

		munmap(m->p, m->len);
		*m = z->maps[--z->nmaps];
	}
	if (z->nkeys && chance(&z->rng, 90)) {
		k = z->keys[rnd(&z->rng, z->nkeys)];
	} else {
		k.key = (uint64_t)rnd(&z->rng, 1U << 20) * VD_PAGE;
		k.size = VD_PAGE * (1 + rnd(&z->rng, 4));
		k.kind = -1;
	}
	len = k.size;
	exact = 1;
	switch (rnd(&z->rng, 10)) {
	case 0:
		len += VD_PAGE;
		exact = 0;
		break;
	case 1:
		len = VD_PAGE;
		exact = len == k.size;
		break;
	case 2:
		k.key += VD_PAGE;
		exact = 0;
		break;
	}
	if (!len || len > (64UL << 20))
		return;
	prot = chance(&z->rng, 5) ? PROT_READ : PROT_READ | PROT_WRITE;
	flags = chance(&z->rng, 5) ? MAP_PRIVATE : MAP_SHARED;
	p = mmap(NULL, len, prot, flags, z->fd, (off_t)k.key);
	if (p == MAP_FAILED)
		return;
	/* only whole, writable, shared mappings of known objects are scribbled on */
	if (!exact || k.kind < 0 || !(prot & PROT_WRITE) || flags != MAP_SHARED) {
		if (prot & PROT_WRITE)
			memset(p, rnd(&z->rng, 256), len < VD_PAGE ? len : VD_PAGE);
		munmap(p, len);
		return;
	}
	z->maps[z->nmaps].p = p;
	z->maps[z->nmaps].len = len;
	z->maps[z->nmaps].k = k;
	z->nmaps++;
}

static void op_munmap(struct fz *z)
{
	unsigned int i;

	if (!z->nmaps)
		return;
	i = rnd(&z->rng, z->nmaps);
	munmap(z->maps[i].p, z->maps[i].len);
	z->maps[i] = z->maps[--z->nmaps];
}

/* Garbage into a mapping: the kernel must survive any ring content. */
static void op_scribble(struct fz *z)
{
	static const uint32_t nasty[] = {
		0, 1, 0x7fffffff, 0x80000000U, 0xffffffffU, 0xfffffffeU, 0x10000,
	};
	struct fz_map *m;
	uint32_t *w;
	size_t n;

	if (!z->nmaps)
		return;
	m = &z->maps[rnd(&z->rng, z->nmaps)];
	w = m->p;
	n = m->len / 4;
	if (m->k.kind == K_DB && chance(&z->rng, 60)) {
		struct viaduct_doorbell *db = m->p;
		uint32_t v = chance(&z->rng, 50) ? nasty[rnd(&z->rng, VD_ARRAY_SIZE(nasty))]
						 : db->sq_consumer + rnd(&z->rng, 2048) - 64;

		if (chance(&z->rng, 50))
			__atomic_store_n(&db->sq_producer, v, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&db->rq_producer, v, __ATOMIC_RELEASE);
		if (chance(&z->rng, 10))
			db->sq_consumer = rnd_next(&z->rng);	/* not ours: must be ignored */
		return;
	}
	if ((m->k.kind == K_CQ || m->k.kind == K_PCQ) && chance(&z->rng, 50)) {
		struct viaduct_ring *r = m->p;

		r->consumer = chance(&z->rng, 50) ? r->producer + rnd(&z->rng, 8) - 4
						  : (uint32_t)rnd_next(&z->rng);
		if (chance(&z->rng, 10))
			r->producer = rnd_next(&z->rng);
		return;
	}
	switch (rnd(&z->rng, 3)) {
	case 0:
		w[rnd(&z->rng, n)] = rnd_next(&z->rng);
		break;
	case 1:
		memset(m->p, rnd(&z->rng, 256), m->len);
		break;
	default: {
		size_t at = rnd(&z->rng, n), len = rnd(&z->rng, n - at) + 1, i;

		for (i = 0; i < len && i < 256; i++)
			w[at + i] = rnd_next(&z->rng);
	}
	}
}

/* A mostly valid WQE into a mapped SQ or RQ, its producer moved, a doorbell maybe. */
static void op_post(struct fz *z)
{
	struct fz_map *ring = NULL, *db = NULL;
	struct viaduct_doorbell *d;
	unsigned int i, tries;
	uint32_t idx;
	char *slot;

	for (tries = 0; tries < 4 && !ring; tries++) {
		struct fz_map *m;

		if (!z->nmaps)
			return;
		m = &z->maps[rnd(&z->rng, z->nmaps)];
		if ((m->k.kind == K_SQ || m->k.kind == K_RQ) && m->k.depth && m->k.slot &&
		    !(m->k.depth & (m->k.depth - 1)))
			ring = m;
	}
	/* mostly the ring's own doorbell page, sometimes another QP's */
	for (i = 0; ring && i < z->nmaps && !db; i++)
		if (z->maps[i].k.kind == K_DB &&
		    (z->maps[i].k.owner == ring->k.owner || chance(&z->rng, 10)))
			db = &z->maps[i];
	if (!ring || !db)
		return;
	d = db->p;
	idx = ring->k.kind == K_SQ ? d->sq_producer : d->rq_producer;
	slot = (char *)ring->p + (size_t)(idx & (ring->k.depth - 1)) * ring->k.slot;
	if ((size_t)(slot - (char *)ring->p) + ring->k.slot > ring->len)
		return;
	memset(slot, 0, ring->k.slot);
	if (ring->k.kind == K_SQ) {
		struct viaduct_sqe *s = (void *)slot;
		struct viaduct_sge *g = (void *)(s + 1);

		s->wr_id = rnd_next(&z->rng);
		s->opcode = rnd(&z->rng, VIADUCT_OP_MAX + (chance(&z->rng, 10) ? 3 : 1));
		s->flags = rnd(&z->rng, 32);
		s->num_sge = rnd(&z->rng, 3);
		if (s->flags & VIADUCT_SQE_INLINE)
			s->length = rnd(&z->rng, ring->k.slot);
		s->remote_stag = rnd_next(&z->rng);
		s->remote_addr = rnd_next(&z->rng);
		for (i = 0; i < s->num_sge && (char *)(g + i + 1) <= slot + ring->k.slot; i++) {
			g[i].addr = (uintptr_t)z->rw + rnd(&z->rng, RW_SIZE);
			g[i].length = rnd(&z->rng, 8192);
			g[i].stag = rnd_next(&z->rng);
		}
		__atomic_store_n(&d->sq_producer, idx + 1, __ATOMIC_RELEASE);
	} else {
		struct viaduct_rqe *r = (void *)slot;

		r->wr_id = rnd_next(&z->rng);
		r->num_sge = rnd(&z->rng, 3);
		__atomic_store_n(&d->rq_producer, idx + 1, __ATOMIC_RELEASE);
	}
	/* the doorbell page and ring may belong to different QPs: ring any QP */
	if (chance(&z->rng, 70))
		op_doorbell(z);
}

/* Reads whatever CQEs a mapped completion ring claims to have. */
static void op_consume(struct fz *z)
{
	struct viaduct_ring *r;
	struct fz_map *m;
	uint32_t p;

	if (!z->nmaps)
		return;
	m = &z->maps[rnd(&z->rng, z->nmaps)];
	if (m->k.kind != K_CQ && m->k.kind != K_PCQ)
		return;
	r = m->p;
	p = __atomic_load_n(&r->producer, __ATOMIC_ACQUIRE);
	__atomic_store_n(&r->consumer, p, __ATOMIC_RELEASE);
}

/*
 * A field of a connected WR is wrong: one in ten, or while gentle one in
 * five hundred, so that most QPs carry traffic before their first fault.
 */
static int fz_fault(struct fz *z)
{
	return z->gentle ? rnd(&z->rng, 500) == 0 : chance(&z->rng, 10);
}

/* Counts what the gentle half's traffic completed with. */
static void fz_gentle_cqe(struct fz *z, const struct viaduct_cqe *cqe)
{
	if (!z->gentle)
		return;
	if (cqe->status == VIADUCT_WC_SUCCESS) {
		z->gentle_ok++;
		return;
	}
	if (!z->gentle_err++)
		z->gentle_first_err = *cqe;
}

/* A length for a WR into the connected buffers: mostly small, some edges. */
static uint32_t conn_len(struct fz *z, size_t room)
{
	if (z->gentle)
		return 1 + rnd(&z->rng, room < 16384 ? (uint32_t)room : 16384);
	switch (rnd(&z->rng, 10)) {
	case 0:
		return 0;
	case 1:
		return (uint32_t)rnd_size(&z->rng, room);
	default:
		return 1 + rnd(&z->rng, room < 16384 ? (uint32_t)room : 16384);
	}
}

/*
 * A mostly valid WR on a connected QP: a receive, or a Send, Write or
 * Read between the two registered buffers, through the QP's own ring and
 * its producer index as the doorbell page has it now (op_scribble may
 * have moved it), then maybe a doorbell. Its completions are mostly
 * consumed, so that the QP lives long enough to meet the other commands.
 */
static void op_post_conn(struct fz *z)
{
	static const uint8_t ops[] = {
		VIADUCT_OP_SEND, VIADUCT_OP_SEND, VIADUCT_OP_RDMA_WRITE, VIADUCT_OP_RDMA_WRITE,
		VIADUCT_OP_RDMA_READ, VIADUCT_OP_SEND_INV, VIADUCT_OP_RDMA_READ_INV,
	};
	uint64_t *r = &z->rng;
	struct viaduct_sge *g;
	struct vd_qp *q;
	uint32_t idx;
	size_t off;

	if (!z->nconn)
		return;
	q = &z->conn[rnd(r, z->nconn)];
	off = rnd(r, z->llen);
	if (chance(r, 30)) {
		struct viaduct_rqe *e;

		idx = __atomic_load_n(&q->db->rq_producer, __ATOMIC_RELAXED);
		/* while gentle, never more than the ring holds */
		if (z->gentle && idx - vd_rq_consumer(q) >= q->c.rq_ring_depth)
			return;
		e = vd_rq_slot(q, idx);
		memset(e, 0, q->c.rq_wqe_size);
		e->wr_id = rnd_next(r);
		e->num_sge = !fz_fault(z) ? 1 : rnd(r, 6);
		g = (struct viaduct_sge *)(e + 1);
		g->addr = (uintptr_t)z->lbuf + off;
		g->length = conn_len(z, z->llen - off);
		g->stag = !fz_fault(z) ? z->lstag : (uint32_t)rnd_next(r);
		__atomic_store_n(&q->db->rq_producer, idx + 1, __ATOMIC_RELEASE);
		if (chance(r, 80))
			fz_ioctl(z, VIADUCT_IOCTL_DOORBELL,
				 &(struct viaduct_doorbell_req){ q->c.handle, VIADUCT_DOORBELL_RQ });
	} else {
		struct viaduct_sqe *e;
		size_t roff = rnd(r, z->rlen);

		idx = __atomic_load_n(&q->db->sq_producer, __ATOMIC_RELAXED);
		if (z->gentle && idx - vd_sq_consumer(q) >= q->c.sq_ring_depth)
			return;
		e = vd_sq_slot(q, idx);
		memset(e, 0, q->c.sq_wqe_size);
		e->wr_id = rnd_next(r);
		/* while gentle, no invalidation of the peer's region */
		e->opcode = !(fz_fault(z) && chance(r, 50)) ?
			    ops[rnd(r, VD_ARRAY_SIZE(ops) - (z->gentle ? 2 : 0))] : rnd(r, 256);
		e->flags = VIADUCT_SQE_SIGNALED;
		/* Sends and Writes with immediate data (both ends negotiate it) */
		if ((e->opcode == VIADUCT_OP_SEND || e->opcode == VIADUCT_OP_RDMA_WRITE) &&
		    chance(r, 20))
			e->flags |= VIADUCT_SQE_SOLICITED | VIADUCT_SQE_IMMEDIATE;
		if (fz_fault(z))
			e->flags = rnd(r, 256);
		/* immediate data only with its flag, no remote fields for a Send */
		e->imm_data = e->flags & VIADUCT_SQE_IMMEDIATE || fz_fault(z) ? rnd_next(r) : 0;
		e->num_sge = !fz_fault(z) ? 1 : rnd(r, 6);
		e->remote_stag = !fz_fault(z) ? z->rstag : (uint32_t)rnd_next(r);
		e->remote_addr = !fz_fault(z) ? z->raddr + roff : rnd_next(r);
		if ((e->opcode == VIADUCT_OP_SEND || e->opcode == VIADUCT_OP_SEND_INV) &&
		    !fz_fault(z)) {
			if (e->opcode == VIADUCT_OP_SEND)
				e->remote_stag = 0;
			e->remote_addr = 0;
		}
		g = (struct viaduct_sge *)(e + 1);
		g->addr = (uintptr_t)z->lbuf + off;
		g->length = conn_len(z, (z->llen - off) < (z->rlen - roff) ? z->llen - off
									      : z->rlen - roff);
		g->stag = !fz_fault(z) ? z->lstag : (uint32_t)rnd_next(r);
		__atomic_store_n(&q->db->sq_producer, idx + 1, __ATOMIC_RELEASE);
		if (chance(r, 90))
			fz_ioctl(z, VIADUCT_IOCTL_DOORBELL,
				 &(struct viaduct_doorbell_req){ q->c.handle, VIADUCT_DOORBELL_SQ });
	}
	z->posts++;
	if (z->gentle || chance(r, 70)) {
		struct viaduct_cqe cqe;

		while (q->scq.hdr && vd_cring_avail(&q->scq) <= q->scq.entries &&
		       vd_cring_poll(&q->scq, &cqe))
			fz_gentle_cqe(z, &cqe);
		while (q->rcq.hdr && vd_cring_avail(&q->rcq) <= q->rcq.entries &&
		       vd_cring_poll(&q->rcq, &cqe))
			fz_gentle_cqe(z, &cqe);
	}
}

/* A command on a connected QP, or on its private completion rings. */
static void op_conn_cmd(struct fz *z)
{
	struct vd_qp *q;
	uint64_t *r = &z->rng;

	if (!z->nconn)
		return;
	q = &z->conn[rnd(r, z->nconn)];
	switch (rnd(r, 8)) {
	case 0: {
		struct viaduct_modify_qp m = { .handle = q->c.handle };

		/* rarely: this ends the connection for good */
		if (z->gentle || !chance(r, 15))
			return;
		m.mask = chance(r, 90) ? 1 + rnd(r, 15) : (uint32_t)rnd_next(r);
		m.state = rnd(r, VIADUCT_QPS_MAX + 2);
		m.access = rnd(r, 5);
		m.ord = rnd(r, z->attr.max_ord + 2);
		m.ird = rnd(r, z->attr.max_ird + 2);
		fz_ioctl(z, VIADUCT_IOCTL_MODIFY_QP, pick_argp(z, &m, sizeof(m)));
		return;
	}
	case 1:
	case 2: {
		struct viaduct_query_qp qq = { .handle = q->c.handle };

		fz_ioctl(z, VIADUCT_IOCTL_QUERY_QP, pick_argp(z, &qq, sizeof(qq)));
		return;
	}
	case 3: {
		struct viaduct_doorbell_req d = { .handle = q->c.handle };

		d.flags = chance(r, 90) ? 1 + rnd(r, 3) : (uint32_t)rnd_next(r);
		fz_ioctl(z, VIADUCT_IOCTL_DOORBELL, pick_argp(z, &d, sizeof(d)));
		return;
	}
	case 4:
		/* garbage producer indices: the kernel must not trust them */
		if (!z->gentle && chance(r, 20))
			__atomic_store_n(chance(r, 50) ? &q->db->sq_producer : &q->db->rq_producer,
					 (uint32_t)rnd_next(r), __ATOMIC_RELEASE);
		return;
	case 5:
		/* a consumer index out of range in a private ring */
		if (!z->gentle && chance(r, 10) && q->rcq.hdr)
			__atomic_store_n(&q->rcq.hdr->consumer, (uint32_t)rnd_next(r),
					 __ATOMIC_RELEASE);
		return;
	case 6: {
		struct viaduct_handle h = { .handle = q->c.handle };

		/* rarely: the peer's stream must end properly */
		if (!z->gentle && chance(r, 5) && !fz_ioctl(z, VIADUCT_IOCTL_DESTROY_QP, &h)) {
			forget_handle(z, q->c.handle);
			vd_qp_unmap(q);
			*q = z->conn[--z->nconn];
		}
		return;
	}
	default:
		op_post_conn(z);
	}
}

static void fz_reopen(struct fz *z)
{
	int t;

	close(z->fd);
	for (t = 0; t < T_NR; t++)
		while (z->n[t])
			drop_handle(z, t, 0);
	/* a file that never selects gets ENODEV for a while */
	if (chance(&z->rng, 30)) {
		z->fd = vd_open();
	} else {
		z->fd = vd_testdev_open_selected(z->dev);
		if (z->fd < 0)
			z->fd = vd_open();
	}
	if (z->fd >= 0)
		fcntl(z->fd, F_SETFL, O_NONBLOCK);
}

static void fz_step(struct fz *z);

static void reap_kids(struct fz *z, int kill_them)
{
	unsigned int i;

	for (i = 0; i < MAXKIDS; i++) {
		int st;

		if (z->kids[i] <= 0)
			continue;
		if (kill_them)
			kill(z->kids[i], SIGKILL);
		if (waitpid(z->kids[i], &st, kill_them ? 0 : WNOHANG) != z->kids[i])
			continue;
		if (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL)
			z->child_crashes++;
		if (WIFEXITED(st) && WEXITSTATUS(st))
			z->internal_errnos++;
		z->kids[i] = 0;
	}
}

static void op_fork(struct fz *z)
{
	unsigned int i, slot = MAXKIDS;
	pid_t pid;

	reap_kids(z, 0);
	for (i = 0; i < MAXKIDS; i++)
		if (z->kids[i] <= 0)
			slot = i;
	if (slot == MAXKIDS) {
		kill(z->kids[rnd(&z->rng, MAXKIDS)], SIGKILL);
		return;
	}
	pid = fork();
	if (pid < 0)
		return;
	if (pid) {
		z->kids[slot] = pid;
		rnd_next(&z->rng);
		return;
	}
	/* the child: same file, none of the mappings, its own randomness */
	z->is_child = 1;
	z->nmaps = 0;
	z->rng ^= (uint64_t)getpid() << 17;
	z->internal_errnos = 0;
	for (i = 0; i < MAXKIDS; i++)
		z->kids[i] = 0;
	for (i = 0; i < 50 + rnd(&z->rng, 300); i++)
		fz_step(z);
	if (chance(&z->rng, 30))
		close(z->fd);
	_exit(z->internal_errnos ? 1 : 0);
}

static void fz_step(struct fz *z)
{
	uint32_t w = rnd(&z->rng, 130);

	if (w < 6)
		op_create_pd(z);
	else if (w < 10)
		op_destroy(z, T_PD);
	else if (w < 22)
		op_reg_mr(z);
	else if (w < 27)
		op_destroy(z, T_MR);
	else if (w < 33)
		op_create_cq(z);
	else if (w < 36)
		op_resize_cq(z);
	else if (w < 39)
		op_destroy(z, T_CQ);
	else if (w < 43)
		op_arm_cq(z);
	else if (w < 51)
		op_create_qp(z);
	else if (w < 57)
		op_modify_qp(z);
	else if (w < 60)
		op_query_qp(z);
	else if (w < 63)
		op_destroy(z, T_QP);
	else if (w < 69)
		op_doorbell(z);
	else if (w < 72)
		op_channel(z);
	else if (w < 80)
		op_mmap(z);
	else if (w < 84)
		op_munmap(z);
	else if (w < 96)
		op_scribble(z);
	else if (w < 108)
		op_post(z);
	else if (w < 113)
		op_consume(z);
	else if (w < 116)
		op_async(z);
	else if (w < 118)
		op_random_cmd(z);
	else if (w < 119 && !z->is_child && z->kids[0] >= 0)
		op_fork(z);
	else if (w < 120 && z->may_close)
		fz_reopen(z);
	else
		op_reg_mr(z);
}

/* ------------------------------------------------------------------ */
/* Phases                                                             */
/* ------------------------------------------------------------------ */

static uint64_t fuzz_seed(void)
{
	static uint64_t seed;
	const char *e;

	if (seed)
		return seed;
	e = getenv("VIADUCT_FUZZ_SEED");
	if (e && *e) {
		seed = strtoull(e, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000003ULL ^ ts.tv_nsec ^ ((uint64_t)getpid() << 32);
	}
	if (!seed)
		seed = 1;
	return seed;
}

/* Milliseconds for a phase: @permille of the total budget, at least one second. */
static unsigned int phase_ms(unsigned int permille)
{
	const char *e = getenv("VIADUCT_FUZZ_SECONDS"), *fl = getenv("VD_FLAVOUR");
	double total = fl && !strcmp(fl, "debug") ? 20 : 60;
	double ms;

	if (e && *e)
		total = strtod(e, NULL);
	ms = total * permille;
	if (ms < 1000)
		ms = 1000;
	if (ms > 600000)
		ms = 600000;	/* the test's own timeout is 900 s */
	return (unsigned int)ms;
}

static int fz_init(struct fz *z, const struct vd_testdev *dev, uint64_t seed)
{
	unsigned int i;
	int mfd;

	memset(z, 0, sizeof(*z));
	z->rng = seed * 0x9e3779b97f4a7c15ULL + 1;
	z->dev = dev;
	z->attr = dev->attr;
	for (i = 0; i < MAXCH; i++)
		z->ch[i] = -1;
	for (i = 0; i < 32; i++)
		z->stale[i] = 1 + i;
	z->rw = vd_map_before_hole(RW_SIZE);
	if (!z->rw)
		return -1;
	z->ro = mmap(NULL, 2 * VD_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	z->none = mmap(NULL, VD_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mfd = memfd_create("vd_fuzz_arg", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, VD_PAGE))
		return -1;
	z->rwarg = mmap(NULL, VD_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	z->roarg = mmap(NULL, VD_PAGE, PROT_READ, MAP_SHARED, mfd, 0);
	close(mfd);
	if (z->rw == MAP_FAILED || z->ro == MAP_FAILED || z->none == MAP_FAILED ||
	    z->roarg == MAP_FAILED || z->rwarg == MAP_FAILED)
		return -1;
	z->hole = z->rw + RW_SIZE;
	z->fd = vd_testdev_open_selected(dev);
	if (z->fd < 0)
		return -1;
	fcntl(z->fd, F_SETFL, O_NONBLOCK);
	return 0;
}

/* The worker's result, for the parent. */
struct fz_result {
	unsigned long ops, ok, posts, gentle_ok, gentle_err;
	struct viaduct_cqe gentle_first_err;
	int internal_errnos;
	int child_crashes;
	unsigned long bad_cmd;
	int bad_err;
};

static void fz_report(struct fz *z, struct fz_result *res)
{
	res->ops += z->ops;
	res->ok += z->ok;
	res->posts += z->posts;
	res->gentle_ok += z->gentle_ok;
	res->gentle_err += z->gentle_err;
	if (z->gentle_err && !res->gentle_first_err.status)
		res->gentle_first_err = z->gentle_first_err;
	res->internal_errnos += z->internal_errnos;
	res->child_crashes += z->child_crashes;
	if (z->internal_errnos && !res->bad_err) {
		res->bad_cmd = z->first_bad.cmd;
		res->bad_err = z->first_bad.err;
	}
}

static void fz_release(struct fz *z)
{
	unsigned int i;

	reap_kids(z, 1);
	for (i = 0; i < z->nmaps; i++)
		munmap(z->maps[i].p, z->maps[i].len);
	z->nmaps = 0;
	for (i = 0; i < MAXCH; i++)
		if (z->ch[i] >= 0)
			close(z->ch[i]);
	if (z->fd >= 0)
		close(z->fd);
	z->fd = -1;
}

enum phase { PH_ARGS, PH_RINGS, PH_FORK, PH_THREADS, PH_REMOVAL, PH_CONNECTED };

/* The connected phase: what the test set up before forking the worker. */
#define FZ_CONN		4

static struct {
	int fd;			/* the context to fuzz */
	__u32 pd, mr;
	struct vd_qp q[FZ_CONN];	/* connected; the worker maps them again */
	char *lbuf;
	size_t llen, rlen;
	__u32 lstag, rstag;
	__u64 raddr;
} fzc;

static struct vd_qp fz_conn_qps[FZ_CONN];

/* Maps the rings of a QP created by the parent (mappings are not inherited). */
static int fz_remap_qp(int fd, struct vd_qp *q)
{
	q->db = vd_mmap_key(fd, q->c.db_key, q->c.db_size);
	q->sq = vd_mmap_key(fd, q->c.sq_key, q->c.sq_size);
	q->rq = vd_mmap_key(fd, q->c.rq_key, q->c.rq_size);
	memset(&q->scq, 0, sizeof(q->scq));
	memset(&q->rcq, 0, sizeof(q->rcq));
	if (q->db == MAP_FAILED || q->sq == MAP_FAILED || q->rq == MAP_FAILED)
		return -1;
	if (vd_cring_map(&q->scq, fd, q->c.scq_key, q->c.scq_size, q->c.scq_entries) ||
	    vd_cring_map(&q->rcq, fd, q->c.rcq_key, q->c.rcq_size, q->c.rcq_entries))
		return -1;
	return 0;
}

/* The worker takes over the test's context with its connected QPs. */
static int fz_take_connected(struct fz *z)
{
	unsigned int i;

	close(z->fd);
	z->fd = dup(fzc.fd);
	if (z->fd < 0)
		return -1;
	/* a read of the async events must never wait (the file is shared) */
	fcntl(z->fd, F_SETFL, O_NONBLOCK);
	z->kids[0] = -1;	/* no forks: a child would share the streams' file */
	z->conn = fz_conn_qps;
	for (i = 0; i < FZ_CONN; i++) {
		struct vd_qp *q = &z->conn[i];

		*q = fzc.q[i];
		if (fz_remap_qp(z->fd, q))
			return -1;
		z->nconn++;
	}
	z->lbuf = fzc.lbuf;
	z->llen = fzc.llen;
	z->lstag = fzc.lstag;
	z->rlen = fzc.rlen;
	z->rstag = fzc.rstag;
	z->raddr = fzc.raddr;
	z->conn_pd = fzc.pd;
	z->conn_mr = fzc.mr;
	z->gentle = 1;
	return 0;
}

/*
 * The second half of the connected phase: the connected QPs become fair
 * game for the random commands and ring scribbles of every phase.
 */
static void fz_expose_connected(struct fz *z)
{
	unsigned int i;

	z->gentle = 0;
	add_handle(z, T_PD, fzc.pd);
	add_handle(z, T_MR, fzc.mr);
	for (i = 0; i < z->nconn; i++) {
		struct vd_qp *q = &z->conn[i];

		add_handle(z, T_QP, q->c.handle);
		add_key(z, q->c.db_key, q->c.db_size, K_DB, 0, 0, q->c.handle);
		add_key(z, q->c.sq_key, q->c.sq_size, K_SQ, q->c.sq_ring_depth, q->c.sq_wqe_size,
			q->c.handle);
		add_key(z, q->c.rq_key, q->c.rq_size, K_RQ, q->c.rq_ring_depth, q->c.rq_wqe_size,
			q->c.handle);
		add_key(z, q->c.scq_key, q->c.scq_size, K_PCQ, q->c.scq_entries, 0, q->c.handle);
		add_key(z, q->c.rcq_key, q->c.rcq_size, K_PCQ, q->c.rcq_entries, 0, q->c.handle);
	}
}

struct thread_arg {
	struct fz z;
	uint64_t end;
	int fd;
};

static void *fz_thread(void *p)
{
	struct thread_arg *a = p;

	while (vd_now_ms() < a->end)
		fz_step(&a->z);
	return NULL;
}

/* The worker: runs the phase until the deadline; the result goes into @res. */
static void fz_worker(const struct vd_testdev *dev, enum phase ph, uint64_t seed,
		      unsigned int ms, struct fz_result *res)
{
	uint64_t end = vd_now_ms() + ms;
	static struct thread_arg ta[4];
	pthread_t th[4];
	struct fz z;
	unsigned int i;

	setpgid(0, 0);
	if (fz_init(&z, dev, seed))
		_exit(100);
	switch (ph) {
	case PH_ARGS:
		/* no rings touched: arguments only */
		while (vd_now_ms() < end) {
			uint32_t w = rnd(&z.rng, 100);

			if (w < 75)
				fz_step(&z);
			else if (w < 85)
				op_random_cmd(&z);
			else
				op_reg_mr(&z);
		}
		break;
	case PH_RINGS:
		/* lots of objects mapped and scribbled on */
		while (vd_now_ms() < end) {
			uint32_t w = rnd(&z.rng, 100);

			if (w < 40)
				fz_step(&z);
			else if (w < 55)
				op_mmap(&z);
			else if (w < 75)
				op_scribble(&z);
			else if (w < 90)
				op_post(&z);
			else
				op_create_qp(&z);
		}
		break;
	case PH_FORK:
		z.may_close = 1;
		while (vd_now_ms() < end) {
			if (chance(&z.rng, 4))
				op_fork(&z);
			else if (chance(&z.rng, 1))
				fz_reopen(&z);
			else
				fz_step(&z);
			if (chance(&z.rng, 2))
				reap_kids(&z, 0);
			if (z.fd < 0)
				fz_reopen(&z);
		}
		break;
	case PH_THREADS:
		/* one file, four threads, each with its own mappings */
		for (i = 0; i < 4; i++) {
			ta[i].z = z;
			ta[i].z.rng ^= (uint64_t)(i + 1) << 40;
			ta[i].z.kids[0] = -1;	/* no forks from threads */
			ta[i].end = end;
			if (pthread_create(&th[i], NULL, fz_thread, &ta[i]))
				_exit(101);
		}
		for (i = 0; i < 4; i++) {
			pthread_join(th[i], NULL);
			fz_report(&ta[i].z, res);
			ta[i].z.fd = -1;
			ta[i].z.kids[0] = 0;
			fz_release(&ta[i].z);
		}
		break;
	case PH_REMOVAL:
		/* the parent removes the device part way; carry on regardless */
		while (vd_now_ms() < end)
			fz_step(&z);
		break;
	case PH_CONNECTED:
		if (fz_take_connected(&z))
			_exit(102);
		while (vd_now_ms() < end) {
			uint32_t w = rnd(&z.rng, 100);

			/* the first half is traffic among random commands elsewhere */
			if (z.gentle && vd_now_ms() > end - ms / 2)
				fz_expose_connected(&z);

			if (w < 45)
				fz_step(&z);
			else if (w < 80)
				op_post_conn(&z);
			else
				op_conn_cmd(&z);
		}
		for (i = 0; i < z.nconn; i++)
			vd_qp_unmap(&z.conn[i]);
		break;
	}
	fz_report(&z, res);
	fz_release(&z);
	_exit(0);
}

FIXTURE(fz)
{
	struct vd_testdev dev;
};

FIXTURE_SETUP(fz)
{
	int ret = vd_testdev_up(&self->dev, "fz");

	ASSERT_EQ(0, ret) TH_LOG("test device %s: step %d", self->dev.name, -ret);
	/* the fuzzer opens its own files */
	vd_testdev_close(&self->dev);
}

FIXTURE_TEARDOWN(fz)
{
	vd_testdev_down(&self->dev);
}

static const char *const phase_names[] = {
	"args", "rings", "fork", "threads", "removal", "connected",
};

/*
 * Runs the worker of phase @ph for @permille of the budget and checks what
 * it reports; the counts land in @res (shared memory).
 */
static void run_worker(struct __test_metadata *_metadata, FIXTURE_DATA(fz) *self,
		       enum phase ph, unsigned int permille, struct fz_result *res)
{
	const char *const *names = phase_names;
	uint64_t seed = fuzz_seed() + ph;
	unsigned int ms = phase_ms(permille);
	int st;
	pid_t pid;

	ksft_print_msg("fuzz phase %s: seed %llu (VIADUCT_FUZZ_SEED=%llu), %u ms\n", names[ph],
		       (unsigned long long)seed, (unsigned long long)fuzz_seed(), ms);
	memset(res, 0, sizeof(*res));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		fz_worker(&self->dev, ph, seed, ms, res);
	if (ph == PH_REMOVAL) {
		vd_sleep_ms(ms / 3 + rnd(&seed, ms / 3));
		vd_testdev_down(&self->dev);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	/* stragglers of a worker that died early */
	kill(-pid, SIGKILL);
	while (waitpid(-pid, NULL, 0) > 0)
		;

	ksft_print_msg("fuzz phase %s: %lu commands, %lu succeeded\n", names[ph], res->ops,
		       res->ok);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		TH_LOG("worker %s (status %#x); reproduce with VIADUCT_FUZZ_SEED=%llu",
		       WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "failed", st,
		       (unsigned long long)fuzz_seed());
	}
	EXPECT_EQ(0, res->child_crashes) TH_LOG("forked children crashed");
	EXPECT_EQ(0, res->internal_errnos) {
		TH_LOG("%d commands returned kernel-internal errnos; first: cmd %#lx errno %d",
		       res->internal_errnos, res->bad_cmd, res->bad_err);
	}
	EXPECT_LT(0, res->ops);
}

static void run_phase(struct __test_metadata *_metadata, FIXTURE_DATA(fz) *self,
		      enum phase ph, unsigned int permille)
{
	const char *const *names = phase_names;
	struct fz_result *res;
	struct vd_snap before;
	int fd, pd;

	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	/*
	 * The test device's counts: the worker works on it alone. In the
	 * removal phase they are the new device's of the same name; what the
	 * removed one still held shows in the module's counts at the end of
	 * the run (tools/vm/guest-check.sh).
	 */
	vd_snap_take_dev(&before, NULL, self->dev.name);
	run_worker(_metadata, self, ph, permille, res);

	/* the kernel still answers */
	if (ph == PH_REMOVAL) {
		ASSERT_EQ(0, vd_testdev_up(&self->dev, "fz"));
		vd_testdev_close(&self->dev);
	}
	fd = vd_testdev_open_selected(&self->dev);
	ASSERT_LE(0, fd) TH_LOG("cannot select the device after fuzzing: %s", strerror(-fd));
	pd = vd_create_pd(fd);
	EXPECT_LT(0, pd);
	EXPECT_EQ(0, vd_destroy_pd(fd, pd));
	close(fd);
	/* and holds nothing of the worker's any more */
	vd_snap_expect_back(&before, 10000, names[ph]);
	munmap(res, sizeof(*res));
}

TEST_F_TIMEOUT(fz, args, 900) { run_phase(_metadata, self, PH_ARGS, 300); }
TEST_F_TIMEOUT(fz, rings, 900) { run_phase(_metadata, self, PH_RINGS, 250); }
TEST_F_TIMEOUT(fz, fork_and_close, 900) { run_phase(_metadata, self, PH_FORK, 150); }
TEST_F_TIMEOUT(fz, threads, 900) { run_phase(_metadata, self, PH_THREADS, 200); }
TEST_F_TIMEOUT(fz, device_removed, 900) { run_phase(_metadata, self, PH_REMOVAL, 100); }

/* Connects @n QPs of @a to as many of @b; b posts XF_DEPTH receives on each first. */
static void fz_connect(struct __test_metadata *_metadata, struct xf_side *a, struct xf_side *b,
		       struct vd_qp *qa, struct vd_qp *qb, unsigned int n)
{
	struct viaduct_cm_listen l = { 0 };
	struct viaduct_cm_event ev;
	unsigned int i, k;

	l.handle = b->id;
	xf_addr(&l.addr, 2, 0);
	ASSERT_EQ(0, vd_ioctl(b->fd, VIADUCT_IOCTL_CM_LISTEN, &l));
	for (i = 0; i < n; i++) {
		struct viaduct_cm_connect c = { 0 };
		struct viaduct_cm_accept acc = { 0 };
		int id;

		ASSERT_EQ(0, xf_qp_up(a, &qa[i]));
		ASSERT_EQ(0, xf_qp_up(b, &qb[i]));
		ASSERT_LE(XF_DEPTH, qb[i].c.rcq_entries);
		for (k = 0; k < XF_DEPTH; k++) {
			struct xf_sge g = { .off = (k * 16384UL) % (b->len - 16384), .len = 16384 };

			xf_post_recv_q(b, &qb[i], 1000 * i + k, &g, 1);
		}
		id = xf_create_id(a, i);
		ASSERT_LT(0, id);
		c.handle = id;
		xf_addr(&c.dst, 2, ntohs(l.addr.port));
		c.param.qp_handle = qa[i].c.handle;
		ASSERT_EQ(0, vd_ioctl(a->fd, VIADUCT_IOCTL_CM_CONNECT, &c));
		ASSERT_EQ(0, xf_cm_event(b, &ev, XF_WAIT_MS));
		ASSERT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
		acc.handle = ev.handle;
		acc.param.qp_handle = qb[i].c.handle;
		ASSERT_EQ(0, vd_ioctl(b->fd, VIADUCT_IOCTL_CM_ACCEPT, &acc));
		ASSERT_EQ(0, xf_cm_event(a, &ev, XF_WAIT_MS));
		ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
		ASSERT_EQ(0, xf_cm_event(b, &ev, XF_WAIT_MS));
		ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	}
}

/*
 * Once the fuzzed context is gone, peer QP @i is in Error and each of its
 * XF_DEPTH receives completed exactly once (consumed by a Send of the
 * worker's, or flushed), nothing overflowed.
 */
static unsigned int fz_check_peer(struct __test_metadata *_metadata, struct xf_side *b,
				  struct vd_qp *q, unsigned int i)
{
	struct viaduct_query_qp qq = { .handle = q->c.handle };
	unsigned char seen[XF_DEPTH] = { 0 };
	unsigned int got = 0, ok = 0, waited, first_status = 0;
	struct viaduct_cqe cqe;

	for (waited = 0; waited < XF_WAIT_MS; waited += 50) {
		ASSERT_EQ(0, vd_ioctl(b->fd, VIADUCT_IOCTL_QUERY_QP, &qq));
		if (qq.state == VIADUCT_QPS_ERROR)
			break;
		vd_sleep_ms(50);
	}
	EXPECT_EQ(VIADUCT_QPS_ERROR, qq.state) TH_LOG("peer QP %u: state %u", i, qq.state);
	for (waited = 0; got < XF_DEPTH && waited < XF_WAIT_MS; waited += 20) {
		while (got < XF_DEPTH && vd_cring_poll(&q->rcq, &cqe)) {
			__u64 k = cqe.wr_id - 1000ULL * i;

			got++;
			ok += cqe.status == VIADUCT_WC_SUCCESS;
			if (cqe.status != VIADUCT_WC_SUCCESS && !first_status)
				first_status = cqe.status;
			EXPECT_GT(XF_DEPTH, k) TH_LOG("peer QP %u: wr_id %llu", i,
						       (unsigned long long)cqe.wr_id);
			if (k < XF_DEPTH) {
				EXPECT_EQ(0, seen[k]) TH_LOG("peer QP %u: receive %llu twice", i, k);
				seen[k] = 1;
			}
		}
		if (got < XF_DEPTH)
			vd_sleep_ms(20);
	}
	EXPECT_EQ(XF_DEPTH, got) TH_LOG("peer QP %u: receive completions", i);
	EXPECT_EQ(0, vd_cring_poll(&q->rcq, &cqe)) TH_LOG("peer QP %u: a completion too many", i);
	EXPECT_EQ(0, q->rcq.hdr->flags & VIADUCT_RING_F_OVERFLOW);
	ksft_print_msg("fuzz phase connected: peer QP %u in state %u (Terminate 0x%x), %u of %u receives consumed, %u flushed or failed (first status %u)\n",
		       i, qq.state, qq.terminate, ok, XF_DEPTH, got - ok, first_status);
	return ok;
}

/*
 * The fuzzer on a context whose QPs are connected to a peer context in
 * another namespace; see the top of the file.
 */
TEST_F_TIMEOUT(fz, connected, 900)
{
	struct vd_qp qa[FZ_CONN], qb[FZ_CONN];
	struct fz_result *res;
	struct vd_snap before;
	unsigned int i, received = 0;
	struct xf_side a, b;
	int up, pd;

	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	/* the namespaces and their devices first: they outlive the test */
	xf_pair_share(_metadata, &a, &b, &up);
	xf_side_down(&a);
	xf_side_down(&b);
	/* their release may finish in a worker: wait until nothing moves */
	vd_snap_take_pair(&before, a.ns, b.ns, "vd0");
	for (i = 0; i < 50; i++) {
		struct vd_snap now = before;

		vd_sleep_ms(100);
		vd_snap_read(&now);
		if (vd_snap_same(&before, &now))
			break;
		before = now;
	}
	ASSERT_EQ(0, xf_in_ns(a.ns, xf_side_up, &a));
	ASSERT_EQ(0, xf_in_ns(b.ns, xf_side_up, &b));
	fz_connect(_metadata, &a, &b, qa, qb, FZ_CONN);

	fzc.fd = a.fd;
	fzc.pd = a.pd;
	fzc.mr = a.mr;
	memcpy(fzc.q, qa, sizeof(qa));
	fzc.lbuf = (char *)a.buf;
	fzc.llen = a.len;
	fzc.lstag = a.stag;
	fzc.raddr = (uintptr_t)b.buf;
	fzc.rlen = b.len;
	fzc.rstag = b.stag;
	run_worker(_metadata, self, PH_CONNECTED, 150, res);
	ksft_print_msg("fuzz phase connected: %lu WRs posted on %u connected QPs\n", res->posts,
		       FZ_CONN);
	ksft_print_msg("fuzz phase connected: traffic half: %lu completions reaped ok, %lu not (first: opcode %u status %u detail 0x%x)\n",
		       res->gentle_ok, res->gentle_err, res->gentle_first_err.opcode,
		       res->gentle_first_err.status, res->gentle_first_err.vendor_err);

	/* the fuzzed context goes, and every stream with it */
	for (i = 0; i < FZ_CONN; i++)
		vd_qp_unmap(&qa[i]);
	xf_side_down(&a);
	for (i = 0; i < FZ_CONN; i++)
		received += fz_check_peer(_metadata, &b, &qb[i], i);
	/* faults are rare while gentle: Sends come before most QPs' first */
	EXPECT_LT(0, received) TH_LOG("no Send of the traffic half reached a peer");

	/* the peer's context still serves */
	pd = vd_create_pd(b.fd);
	EXPECT_LT(0, pd);
	EXPECT_EQ(0, vd_destroy_pd(b.fd, pd));
	for (i = 0; i < FZ_CONN; i++)
		vd_qp_unmap(&qb[i]);
	xf_side_down(&b);
	vd_snap_expect_back(&before, 10000, "connected");
	munmap(res, sizeof(*res));
}

TEST_HARNESS_MAIN
