/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The peer's side of the wire for the tests that speak MPA over a plain
 * TCP socket to viaduct (rx_test, hostile_test): CRC32c, a byte stream of
 * an MPA Reply and hand-built FPDUs, and the socket helpers (namespaces,
 * listener, exact reads and writes).
 */
#ifndef VD_MPA_PEER_H
#define VD_MPA_PEER_H

#include <netinet/in.h>
#include <poll.h>

#include "xfer_util.h"

static __u32 crc32c_table[256];

static inline void crc32c_init(void)
{
	__u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78U : c >> 1;
		crc32c_table[i] = c;
	}
}

static inline __u32 crc32c(const unsigned char *p, size_t len)
{
	__u32 c = ~0U;

	while (len--)
		c = crc32c_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

/* The byte stream the peer writes: the MPA Reply, then FPDUs. */
struct rx_stream {
	unsigned char *p;
	size_t len, cap;
	int crc;
};

static inline void *st_grow(struct rx_stream *s, size_t n)
{
	void *at;

	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->p = realloc(s->p, s->cap);
		if (!s->p)
			abort();
	}
	at = s->p + s->len;
	memset(at, 0, n);
	s->len += n;
	return at;
}

static inline void put16(unsigned char *p, __u32 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void put32(unsigned char *p, __u32 v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static inline void put64(unsigned char *p, __u64 v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

/* An enhanced MPA Reply (RFC 6581, no P2P), with C as the stream has it. */
static inline void st_reply(struct rx_stream *s)
{
	unsigned char *r = st_grow(s, 24);

	memcpy(r, "MPA ID Rep Frame", 16);
	r[16] = 0x10 | (s->crc ? 0x40 : 0);	/* H, C */
	r[17] = 2;
	put16(r + 18, 4);
	put16(r + 20, 4);			/* IRD */
	put16(r + 22, 4);			/* ORD */
}

/*
 * Frames @ulen bytes of ULPDU: headers @hdr (@hlen bytes) and @plen bytes
 * of @payload. Returns the FPDU's offset in the stream.
 */
static inline size_t st_fpdu(struct rx_stream *s, const unsigned char *hdr, size_t hlen,
		      const unsigned char *payload, size_t plen)
{
	size_t ulen = hlen + plen, pad = -(2 + ulen) & 3, off = s->len;
	unsigned char *f = st_grow(s, 2 + ulen + pad + 4);

	put16(f, ulen);
	memcpy(f + 2, hdr, hlen);
	if (plen)
		memcpy(f + 2 + hlen, payload, plen);
	if (s->crc) {
		__u32 c = crc32c(f, 2 + ulen + pad);

		/* least significant byte first, as siw and viaduct send it */
		f[2 + ulen + pad] = c;
		f[2 + ulen + pad + 1] = c >> 8;
		f[2 + ulen + pad + 2] = c >> 16;
		f[2 + ulen + pad + 3] = c >> 24;
	}
	return off;
}

static inline size_t fpdu_len(const struct rx_stream *s, size_t off)
{
	size_t ulen = (size_t)s->p[off] << 8 | s->p[off + 1];

	return 2 + ulen + (-(2 + ulen) & 3) + 4;
}

/* An RDMA Write of @len bytes of @src to @stag at @to, one segment. */
static inline size_t st_write(struct rx_stream *s, __u32 stag, __u64 to, const unsigned char *src,
		       size_t len)
{
	unsigned char h[14];

	h[0] = 0x80 | 0x40 | 1;		/* T, L, DDP version 1 */
	h[1] = 0x40 | 0;		/* RDMAP version 1, RDMA Write */
	put32(h + 2, stag);
	put64(h + 6, to);
	return st_fpdu(s, h, sizeof(h), src, len);
}

/* One segment of a Send: queue 0, @msn, @mo, last or not. */
static inline size_t st_send(struct rx_stream *s, __u32 msn, __u32 mo, int last,
		      const unsigned char *src, size_t len)
{
	unsigned char h[18] = { 0 };

	h[0] = (last ? 0x40 : 0) | 1;
	h[1] = 0x40 | 3;		/* Send */
	put32(h + 6, 0);		/* QN 0 */
	put32(h + 10, msn);
	put32(h + 14, mo);
	return st_fpdu(s, h, sizeof(h), src, len);
}

/* A Terminate from the peer: DDP untagged, "no buffer" (0x1202). */
static inline size_t st_terminate(struct rx_stream *s)
{
	unsigned char h[22] = { 0 };

	h[0] = 0x40 | 1;
	h[1] = 0x40 | 7;		/* Terminate */
	put32(h + 6, 2);		/* QN 2 */
	put32(h + 10, 1);		/* MSN 1 */
	put32(h + 18, 0x12020000U);	/* layer 1, type 2, code 2; no headers */
	return st_fpdu(s, h, sizeof(h), NULL, 0);
}

/* Enters namespace @ns; returns the file of the one we were in, or -errno. */
static inline int rx_enter(const char *ns)
{
	char path[96];
	int self, fd, ret = 0;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || fd < 0 || setns(fd, CLONE_NEWNET))
		ret = -errno;
	if (fd >= 0)
		close(fd);
	if (ret && self >= 0)
		close(self);
	return ret ? ret : self;
}

static inline void rx_leave(int self)
{
	if (setns(self, CLONE_NEWNET))
		abort();
	close(self);
}

static inline int rx_listener(const char *ns, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int self = rx_enter(ns), fd, one = 1;

	if (self < 0)
		return self;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	rx_leave(self);
	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, "192.0.2.2", &sin.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len)) {
		close(fd);
		return -errno;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

/* Reads exactly @len bytes within @ms: 0, -ETIMEDOUT, -ECONNRESET. */
static inline int rx_read_full(int fd, void *buf, size_t len, int ms)
{
	uint64_t end = vd_now_ms() + ms;
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (int64_t)(end - vd_now_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left) != 1)
			return -ETIMEDOUT;
		n = read(fd, (char *)buf + got, len - got);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return -ECONNRESET;
		if (n < 0)
			return -errno;
		got += n;
	}
	return 0;
}

/*
 * The end of what the other side sends: 0 for its FIN with nothing before
 * it, -EPROTO if bytes came first, -ECONNRESET for a reset, -ETIMEDOUT.
 */
static inline int peer_read_end(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return -ETIMEDOUT;
	n = read(fd, &c, 1);
	if (n == 0)
		return 0;
	if (n > 0)
		return -EPROTO;
	return -errno;
}

static inline int rx_write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* A Terminate as the peer receives it (RFC 5040 section 4.8). */
struct peer_term {
	__u32 ctrl;			/* Layer EType ErrorCode M D R */
	__u16 code;			/* Layer << 12 | EType << 8 | ErrorCode */
	int m, d, r;
	__u16 seg_len;			/* DDP Segment Length, with M */
	unsigned char ddp[18];		/* the copied DDP header, with D */
	size_t ddp_len;
	unsigned char rreq[28];		/* the copied Read Request, with R */
	int crc_ok;
	unsigned int skipped;		/* other FPDUs read before it */
};

/*
 * Reads FPDUs from @fd until a Terminate and decodes it; others (Read
 * Responses) are counted and dropped. 0, -ETIMEDOUT, -ECONNRESET (the
 * stream ended first) or -EPROTO (a frame the peer cannot take).
 */
static inline int peer_read_terminate(int fd, int crc, struct peer_term *t, int ms)
{
	static unsigned char f[2 + 65535 + 3 + 4];
	const unsigned char *u = f + 2, *p;
	size_t ulen, flen;
	__u32 c;
	int ret;

	memset(t, 0, sizeof(*t));
	for (;;) {
		ret = rx_read_full(fd, f, 2, ms);
		if (ret)
			return ret;
		ulen = (size_t)f[0] << 8 | f[1];
		flen = 2 + ulen + (-(2 + ulen) & 3) + 4;
		ret = rx_read_full(fd, f + 2, flen - 2, ms);
		if (ret)
			return ret;
		c = crc32c(f, flen - 4);
		t->crc_ok = !crc || (f[flen - 4] == (c & 0xff) && f[flen - 3] == ((c >> 8) & 0xff) &&
				     f[flen - 2] == ((c >> 16) & 0xff) && f[flen - 1] == c >> 24);
		if (ulen < 2)
			return -EPROTO;
		if (!(u[0] & 0x80) && (u[1] & 0x0f) == 7)
			break;
		t->skipped++;
	}
	if (ulen < 22)
		return -EPROTO;
	t->ctrl = (__u32)u[18] << 24 | (__u32)u[19] << 16 | (__u32)u[20] << 8 | u[21];
	t->code = t->ctrl >> 16;
	t->m = !!(t->ctrl & 0x8000);
	t->d = !!(t->ctrl & 0x4000);
	t->r = !!(t->ctrl & 0x2000);
	p = u + 22;
	if (t->m || t->d) {
		if (ulen < 24)
			return -EPROTO;
		t->seg_len = (__u16)(p[0] << 8 | p[1]);
		p += 2;
	}
	if (t->d) {
		t->ddp_len = p[0] & 0x80 ? 14 : 18;
		if ((size_t)(p - u) + t->ddp_len > ulen)
			return -EPROTO;
		memcpy(t->ddp, p, t->ddp_len);
		p += t->ddp_len;
	}
	if (t->r) {
		if ((size_t)(p - u) + 28 > ulen)
			return -EPROTO;
		memcpy(t->rreq, p, 28);
	}
	return 0;
}

#endif /* VD_MPA_PEER_H */
