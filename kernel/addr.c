// SPDX-License-Identifier: GPL-2.0
/*
 * Addresses of the connection manager and the route policy of a device
 * (addr.h): which local addresses a device answers on, and which
 * destinations it may reach.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/route.h>

#include "addr.h"
#include "device.h"

/**
 * vd_addr_from_user() - convert an ABI address to a kernel one
 * @a: the address as the user gave it (already copied in)
 * @ss: filled with a sockaddr_in or sockaddr_in6 (the rest zeroed)
 * @len: set to the length of what @ss holds
 *
 * Context: Any context.
 * Return: 0; -EAFNOSUPPORT for a family other than IPv4 or IPv6 (or IPv6
 * without CONFIG_IPV6); -EINVAL for an IPv4 address with a scope or with
 * bytes past its four.
 */
int vd_addr_from_user(const struct viaduct_sockaddr *a,
		      struct sockaddr_storage *ss, int *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == VIADUCT_AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (a->scope_id || memchr_inv(a->addr + 4, 0, 12))
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = a->port;
		memcpy(&sin->sin_addr, a->addr, 4);
		*len = sizeof(*sin);
		return 0;
	}
	if (a->family == VIADUCT_AF_INET6 && IS_ENABLED(CONFIG_IPV6)) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = a->port;
		sin6->sin6_scope_id = a->scope_id;
		memcpy(&sin6->sin6_addr, a->addr, 16);
		*len = sizeof(*sin6);
		return 0;
	}
	return -EAFNOSUPPORT;
}

/**
 * vd_addr_to_user() - convert a kernel address to an ABI one
 * @ss: a sockaddr_in or sockaddr_in6
 * @a: filled with it; all zeroes for a family other than IPv4 or IPv6
 *
 * Context: Any context.
 */
void vd_addr_to_user(const struct sockaddr_storage *ss,
		     struct viaduct_sockaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		a->family = VIADUCT_AF_INET;
		a->port = sin->sin_port;
		memcpy(a->addr, &sin->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		a->family = VIADUCT_AF_INET6;
		a->port = sin6->sin6_port;
		a->scope_id = sin6->sin6_scope_id;
		memcpy(a->addr, &sin6->sin6_addr, 16);
	}
}

/**
 * vd_addr_is_any() - whether the address part is the wildcard
 * @ss: an IPv4 or IPv6 address
 *
 * Context: Any context.
 * Return: true for INADDR_ANY or in6addr_any, whatever the port.
 */
bool vd_addr_is_any(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return ipv6_addr_any(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* Whether @ss (its address part) is one of the addresses in @attr. */
static bool addr_on_device(const struct viaduct_device_attr *attr,
			   const struct sockaddr_storage *ss)
{
	const void *ip;
	u16 family;
	size_t n;
	u32 i;

	if (ss->ss_family == AF_INET) {
		family = VIADUCT_AF_INET;
		ip = &((const struct sockaddr_in *)ss)->sin_addr;
		n = 4;
	} else {
		family = VIADUCT_AF_INET6;
		ip = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		n = 16;
	}
	for (i = 0; i < min(attr->num_addrs, VIADUCT_MAX_ADDRS); i++)
		if (attr->addrs[i].family == family &&
		    !memcmp(attr->addrs[i].addr, ip, n))
			return true;
	return false;
}

/* The egress interface of a route to @dst in @net, or a negative errno. */
static int route_ifindex(struct net *net, const struct sockaddr_storage *dst)
{
	int ifindex;

	if (dst->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)dst;
		struct flowi4 fl4 = { .daddr = sin->sin_addr.s_addr };
		struct rtable *rt = ip_route_output_key(net, &fl4);

		if (IS_ERR(rt))
			return PTR_ERR(rt);
		ifindex = rt->dst.dev->ifindex;
		ip_rt_put(rt);
		return ifindex;
	}
#if IS_ENABLED(CONFIG_IPV6)
	{
		const struct sockaddr_in6 *sin6 = (const void *)dst;
		struct flowi6 fl6 = {
			.daddr = sin6->sin6_addr,
			.flowi6_oif = sin6->sin6_scope_id,
		};
		struct dst_entry *d = ip6_route_output(net, NULL, &fl6);

		ifindex = d->error ? d->error : d->dev->ifindex;
		dst_release(d);
		return ifindex;
	}
#else
	return -EAFNOSUPPORT;
#endif
}

/**
 * vd_addr_check() - the route policy of a device
 * @dev: the device the id belongs to
 * @net: the namespace of the command
 * @ss: the address to check (vd_addr_from_user())
 * @listen: @ss is a listener's local address, else a destination
 *
 * A listener's address must be one of @dev's addresses or the any-address.
 * A destination must be one of @dev's addresses or be routed, in @net, out
 * of @dev's interface.
 *
 * Context: Process context (allocates with GFP_KERNEL).
 * Return: the index of @dev's interface, to bind to; -EADDRNOTAVAIL if the
 * address is not the device's or routed out of another interface;
 * -ENETUNREACH if there is no route; -ENODEV if @dev was removed; -ENOMEM.
 */
int vd_addr_check(struct vd_device *dev, struct net *net,
		  const struct sockaddr_storage *ss, bool listen)
{
	struct viaduct_device_attr *attr;
	int ret;

	attr = kzalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	ret = vd_device_query(dev, attr);
	if (ret)
		goto out;
	if (listen) {
		ret = vd_addr_is_any(ss) || addr_on_device(attr, ss) ?
		      (int)attr->ifindex : -EADDRNOTAVAIL;
		goto out;
	}
	if (addr_on_device(attr, ss)) {
		ret = attr->ifindex;
		goto out;
	}
	ret = route_ifindex(net, ss);
	if (ret >= 0)
		ret = ret == attr->ifindex ? ret : -EADDRNOTAVAIL;
	else if (ret != -ENOMEM)
		ret = -ENETUNREACH;
out:
	kfree(attr);
	return ret;
}
