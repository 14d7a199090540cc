/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the VIPL examples, in the spirit of the guide's sample
 * programs (section 8.1.4): each wraps one step that every VIA program
 * takes. Plain C over <vipl.h> only.
 */
#ifndef VIPL_EXAMPLE_COMMON_H
#define VIPL_EXAMPLE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vipl.h>

static const char *const vipl_ret_names[] = {
	"VIP_SUCCESS", "VIP_NOT_DONE", "VIP_INVALID_PARAMETER", "VIP_ERROR_RESOURCE",
	"VIP_TIMEOUT", "VIP_REJECT", "VIP_INVALID_RELIABILITY_LEVEL", "VIP_INVALID_MTU",
	"VIP_INVALID_QOS", "VIP_INVALID_PTAG", "VIP_INVALID_RDMAREAD", "VIP_DESCRIPTOR_ERROR",
	"VIP_INVALID_STATE", "VIP_ERROR_NAMESERVICE", "VIP_NO_MATCH", "VIP_NOT_REACHABLE"};

static inline const char *ret_name(VIP_RETURN r)
{
	return (unsigned)r < sizeof(vipl_ret_names) / sizeof(vipl_ret_names[0]) ?
		       vipl_ret_names[r] :
		       "unknown";
}

#define CHECK(call)                                                                 \
	do {                                                                        \
		VIP_RETURN r_ = (call);                                             \
		if (r_ != VIP_SUCCESS) {                                            \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
				ret_name(r_));                                      \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

/* A VI network address with room for a host address and a discriminator. */
typedef struct {
	VIP_NET_ADDRESS a;
	VIP_UINT8 room[4 + 64];
} net_address;

/* @host (NicAddressLen bytes) followed by the discriminator @disc. */
static inline VIP_NET_ADDRESS *make_address(net_address *na, const VIP_UINT8 *host,
					    VIP_UINT16 host_len, const char *disc)
{
	VIP_UINT16 n = (VIP_UINT16)strlen(disc);

	na->a.HostAddressLen = host_len;
	na->a.DiscriminatorLen = n;
	memcpy(na->a.HostAddress, host, host_len);
	memcpy(na->a.HostAddress + host_len, disc, n);
	return &na->a;
}

/* The remote host by name, through the VIPL name service, and @disc. */
static inline VIP_NET_ADDRESS *lookup_address(VIP_NIC_HANDLE nic, net_address *na,
					      const char *host, const char *disc)
{
	VIP_UINT8 h[16];
	VIP_UINT16 len;

	na->a.HostAddressLen = 0;
	CHECK(VipNSGetHostByName(nic, (VIP_CHAR *)host, &na->a, 0));
	len = na->a.HostAddressLen;
	memcpy(h, na->a.HostAddress, len);
	return make_address(na, h, len, disc);
}

/* Descriptors and buffers in one registered, page-aligned block. */
struct region {
	void *base;
	size_t size;
	VIP_MEM_HANDLE mh;
};

static inline void region_init(struct region *r, VIP_NIC_HANDLE nic, size_t size,
			       VIP_PROTECTION_HANDLE ptag, VIP_BOOLEAN rdma_write)
{
	VIP_MEM_ATTRIBUTES ma;

	r->size = size;
	if (posix_memalign(&r->base, 4096, size)) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	memset(r->base, 0, size);
	ma.Ptag = ptag;
	ma.EnableRdmaWrite = rdma_write;
	ma.EnableRdmaRead = VIP_FALSE;
	CHECK(VipRegisterMem(nic, r->base, size, &ma, &r->mh));
}

static inline void region_fini(struct region *r, VIP_NIC_HANDLE nic)
{
	CHECK(VipDeregisterMem(nic, r->base, r->mh));
	free(r->base);
}

/* A one-segment descriptor of @len bytes at @buf. */
static inline void fill_desc(VIP_DESCRIPTOR *d, VIP_UINT16 control, void *buf, VIP_UINT32 len,
			     VIP_MEM_HANDLE mh)
{
	memset(&d->CS, 0, sizeof(d->CS));
	d->CS.Control = control;
	d->CS.SegCount = 1;
	d->CS.Length = len;
	d->DS[0].Local.Data.Address = buf;
	d->DS[0].Local.Handle = mh;
	d->DS[0].Local.Length = len;
}

/* Bytes that depend on the message and its size, to verify. */
static inline void pattern(unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131u + i * 7u + (len & 0xff));
}

static inline int check_pattern(const unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char)(seed * 131u + i * 7u + (len & 0xff)))
			return -1;
	return 0;
}

/* The message sizes the examples go through up to @max: 0 to 3, every
 * power of two with its neighbours, and @max. The size after @s, or 0. */
static inline size_t next_size(size_t s, size_t max)
{
	size_t q = 1, n;

	if (s < 3) {
		n = s + 1;
	} else {
		while (q * 2 <= s + 1)
			q *= 2;
		n = s == q - 1 ? q : s == q ? q + 1 : 2 * q - 1;
	}
	if (n <= max)
		return n;
	return s < max ? max : 0;
}

#endif
