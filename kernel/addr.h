/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Addresses and the route policy of a device, for the connection manager.
 *
 * API
 * ---
 *   vd_addr_from_user(a, ss, len)
 *       struct viaduct_sockaddr -> sockaddr_in/in6 and its length.
 *       -EAFNOSUPPORT for a family other than IPv4 or IPv6 (or IPv6 without
 *       CONFIG_IPV6), -EINVAL for an IPv4 address with a scope or bytes
 *       past its four.
 *   vd_addr_to_user(ss, a)
 *       The other way; a family other than IPv4/IPv6 gives zeroes.
 *   vd_addr_is_any(ss)
 *       Whether the address part is the wildcard.
 *   vd_addr_check(dev, net, ss, listen)
 *       A listener's address (@listen) must be one of @dev's or the
 *       any-address; a destination must be one of @dev's addresses or be
 *       routed (in @net) out of @dev's interface. Returns the interface
 *       index to bind to, -EADDRNOTAVAIL, -ENETUNREACH (no route) or
 *       -ENOMEM. Process context.
 */
#ifndef _VD_ADDR_H
#define _VD_ADDR_H

#include <linux/socket.h>
#include <linux/types.h>
#include <net/net_namespace.h>
#include <viaduct/viaduct-abi.h>

struct vd_device;

int vd_addr_from_user(const struct viaduct_sockaddr *a,
		      struct sockaddr_storage *ss, int *len);
void vd_addr_to_user(const struct sockaddr_storage *ss,
		     struct viaduct_sockaddr *a);
bool vd_addr_is_any(const struct sockaddr_storage *ss);
int vd_addr_check(struct vd_device *dev, struct net *net,
		  const struct sockaddr_storage *ss, bool listen);

#endif /* _VD_ADDR_H */
