// SPDX-License-Identifier: GPL-2.0
/*
 * viaduct: the VI Architecture Kernel Agent and a software iWARP RNIC.
 *
 * Module lifetime: every part comes up in order and goes down in exactly
 * the reverse order. The faces users reach (netlink, /dev/viaduct) come up
 * last and go first, so nothing new can arrive while the parts beneath
 * them are torn down.
 */
#include <linux/genetlink.h>
#include <linux/init.h>
#include <linux/module.h>
#include <net/genetlink.h>

#include <viaduct/viaduct-nl.h>

#include "cm.h"
#include "device.h"
#include "netlink.h"
#include "stats.h"
#include "transport.h"
#include "uctx.h"

struct vd_stats vd_stats;

static int __init vd_mod_init(void)
{
	int ret;

	ret = vd_device_init();
	if (ret)
		goto err_device;

	ret = vd_cm_init();
	if (ret)
		goto err_cm;

	ret = vd_transport_init();
	if (ret)
		goto err_transport;
	/* the CM reaches the transport only through these */
	vd_cm_set_stream_ops(&vd_transport_ops);

	ret = vd_uctx_init();
	if (ret)
		goto err_uctx;

	ret = vd_netlink_init();
	if (ret)
		goto err_netlink;

	pr_info("VI kernel agent and soft RNIC, ABI version %u\n",
		VIADUCT_ABI_VERSION);
	return 0;

err_netlink:
	vd_uctx_uninit();
err_uctx:
	vd_cm_set_stream_ops(NULL);
	vd_transport_uninit();
err_transport:
	vd_cm_uninit();
err_cm:
	vd_device_uninit();
err_device:
	return ret;
}

static void __exit vd_mod_exit(void)
{
	vd_netlink_uninit();
	vd_uctx_uninit();
	vd_cm_set_stream_ops(NULL);
	vd_transport_uninit();
	vd_cm_uninit();
	vd_device_uninit();
}

module_init(vd_mod_init);
module_exit(vd_mod_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("viaduct: VI Architecture kernel agent and software iWARP RNIC");
MODULE_ALIAS_GENL_FAMILY(VIADUCT_GENL_NAME);
