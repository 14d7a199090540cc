/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What verbs_ops (the initiator, any rdma-core device) and verbs_inv_peer
 * (the responder, libviaduct's native API) agree on for the Send with
 * Invalidate checks: the offer the responder sends (after the initiator's
 * first message: an MPA responder never sends first) and the written
 * pattern.
 */
#ifndef VERBS_INV_H
#define VERBS_INV_H

#include <stdint.h>

#define VI_PAGES 4		/* pages fast-registered by the responder */
#define VI_IOVA 0x7000000ULL	/* the address they are registered at */

struct vi_offer {
	uint64_t iova;
	uint32_t stag;		/* host order */
	uint32_t len;
};

/* byte @i of what the initiator writes */
static inline unsigned int vi_pattern(uint32_t i)
{
	return (i * 7 + (i >> 9) + 3) & 0xffu;
}

#endif
