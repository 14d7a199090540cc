/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The "viaduct" generic-netlink family (include/uapi/viaduct/viaduct-nl.h):
 * devices (link add/del/get), statistics and resources for management tools.
 * Its commands are in netlink.c; module init registers the family.
 */
#ifndef _VD_NETLINK_H
#define _VD_NETLINK_H

int vd_netlink_init(void);
void vd_netlink_uninit(void);

#endif /* _VD_NETLINK_H */
