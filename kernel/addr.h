/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Addresses and the route policy of a device, for the connection manager:
 * the ABI's struct viaduct_sockaddr to and from kernel socket addresses, and
 * which local addresses a device answers on and which destinations it may
 * reach. No state and no locks of its own; the functions are documented at
 * their definitions in addr.c.
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
