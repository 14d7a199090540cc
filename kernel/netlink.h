/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The "viaduct" generic-netlink family (include/uapi/viaduct/viaduct-nl.h).
 *
 *   vd_netlink_init(), vd_netlink_uninit()
 *       Register and unregister the family. Unregistering waits for
 *       running commands and dumps to finish.
 */
#ifndef _VD_NETLINK_H
#define _VD_NETLINK_H

int vd_netlink_init(void);
void vd_netlink_uninit(void);

#endif /* _VD_NETLINK_H */
