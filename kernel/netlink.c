// SPDX-License-Identifier: GPL-2.0
/*
 * The "viaduct" generic-netlink family: link add, del and get/dump,
 * counters and resources.
 *
 * Every command acts on the namespace of the requesting socket. The family
 * owns nothing: devices belong to device.c, which reports their state
 * through vd_device_query(), contexts to uctx.c (vd_uctx_walk()) and their
 * objects to uobj_report.c (vd_uobj_table_walk()); this file only
 * translates.
 *
 * The context and resource dumps resume where the last message did not
 * fit: cb->args[0] is the context id, cb->args[1] the handle within it
 * (RES_GET) or whether the module-wide message went out (STATS_GET),
 * cb->args[2] set once everything was sent.
 *
 * Who may create and remove devices is rdma's nldev rule: CAP_NET_ADMIN in
 * the initial user namespace (GENL_ADMIN_PERM, netlink_capable()), not in
 * the user namespace that owns the network namespace: a device is a
 * module-wide resource (a kernel thread, a QP number space, memory), and
 * any user may own a user namespace. The context reports show only the
 * contexts whose opener is visible in the reader's pid namespace, with the
 * pid as the reader sees it, as nldev shows only the resources of tasks in
 * the reader's pid namespace.
 */
#include <linux/if.h>
#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include <viaduct/viaduct-nl.h>

#include "device.h"
#include "netlink.h"
#include "stats.h"
#include "uctx.h"
#include "uobj.h"

static const struct nla_policy vd_nl_policy[VIADUCT_A_MAX + 1] = {
	[VIADUCT_A_DEV_INDEX]	= { .type = NLA_U32 },
	[VIADUCT_A_DEV_NAME]	= { .type = NLA_NUL_STRING,
				    .len = VIADUCT_NAME_SIZE - 1 },
	[VIADUCT_A_IFINDEX]	= NLA_POLICY_MIN(NLA_U32, 1),
	[VIADUCT_A_IFNAME]	= { .type = NLA_NUL_STRING, .len = IFNAMSIZ - 1 },
	[VIADUCT_A_RES_TYPE]	= NLA_POLICY_RANGE(NLA_U32, VIADUCT_RES_PD,
						   VIADUCT_RES_SRQ),
};

static struct genl_family vd_nl_family;

static int put_addrs(struct sk_buff *skb,
		     const struct viaduct_device_attr *attr)
{
	struct nlattr *addrs, *addr;
	u32 i;

	addrs = nla_nest_start(skb, VIADUCT_A_ADDRS);
	if (!addrs)
		return -EMSGSIZE;
	for (i = 0; i < attr->num_addrs; i++) {
		const struct viaduct_addr *a = &attr->addrs[i];
		int len = a->family == VIADUCT_AF_INET ? 4 : 16;

		addr = nla_nest_start(skb, VIADUCT_A_ADDR);
		if (!addr ||
		    nla_put_u16(skb, VIADUCT_A_ADDR_FAMILY, a->family) ||
		    nla_put_u8(skb, VIADUCT_A_ADDR_PREFIXLEN, a->prefixlen) ||
		    nla_put(skb, VIADUCT_A_ADDR_DATA, len, a->addr))
			return -EMSGSIZE;
		nla_nest_end(skb, addr);
	}
	nla_nest_end(skb, addrs);
	return 0;
}

static int put_limits(struct sk_buff *skb,
		      const struct viaduct_device_attr *attr)
{
	struct nlattr *limits;

	limits = nla_nest_start(skb, VIADUCT_A_LIMITS);
	if (!limits ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_PD, attr->max_pd) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_MR, attr->max_mr) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_CQ, attr->max_cq) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_CQE, attr->max_cqe) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_QP, attr->max_qp) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_QP_WR, attr->max_qp_wr) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_SGE, attr->max_sge) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_INLINE, attr->max_inline) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_ORD, attr->max_ord) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_IRD, attr->max_ird) ||
	    nla_put_u64_64bit(skb, VIADUCT_A_LIMIT_MAX_MSG_SIZE,
			      attr->max_msg_size, VIADUCT_A_LIMIT_PAD) ||
	    nla_put_u64_64bit(skb, VIADUCT_A_LIMIT_MAX_MR_SIZE,
			      attr->max_mr_size, VIADUCT_A_LIMIT_PAD) ||
	    nla_put_u32(skb, VIADUCT_A_LIMIT_MAX_MW, attr->max_mw))
		return -EMSGSIZE;
	nla_nest_end(skb, limits);
	return 0;
}

static int put_stat(struct sk_buff *skb, int type, u64 val)
{
	return nla_put_u64_64bit(skb, type, val, VIADUCT_A_STAT_PAD);
}

/* The objects of @vd not yet freed, as a VIADUCT_A_STATS nest. */
static int put_dev_stats(struct sk_buff *skb, struct vd_device *vd)
{
	const struct vd_dev_counts *c = vd->counts;
	struct nlattr *stats;

	stats = nla_nest_start(skb, VIADUCT_A_STATS);
	if (!stats ||
	    put_stat(skb, VIADUCT_A_STAT_PDS,
		     vd_dev_count_read(c, VD_DEV_PDS)) ||
	    put_stat(skb, VIADUCT_A_STAT_MRS, vd_tpt_regions(&vd->tpt)) ||
	    put_stat(skb, VIADUCT_A_STAT_CQS,
		     vd_dev_count_read(c, VD_DEV_CQS)) ||
	    put_stat(skb, VIADUCT_A_STAT_QPS,
		     vd_dev_count_read(c, VD_DEV_QPS)) ||
	    put_stat(skb, VIADUCT_A_STAT_SRQS,
		     vd_dev_count_read(c, VD_DEV_SRQS)) ||
	    put_stat(skb, VIADUCT_A_STAT_PINNED_PAGES,
		     vd_tpt_pinned_pages(&vd->tpt)))
		return -EMSGSIZE;
	nla_nest_end(skb, stats);
	return 0;
}

/*
 * One LINK_GET message for @vd; @attr is scratch space. -ENODEV if the
 * device was removed meanwhile, -EMSGSIZE if @skb is full (then @skb is
 * left as it was).
 */
static int fill_link(struct sk_buff *skb, struct vd_device *vd, u32 portid,
		     u32 seq, int flags, struct viaduct_device_attr *attr)
{
	void *hdr;
	int ret;

	ret = vd_device_query(vd, attr);
	if (ret)
		return ret;

	hdr = genlmsg_put(skb, portid, seq, &vd_nl_family, flags,
			  VIADUCT_CMD_LINK_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, VIADUCT_A_DEV_INDEX, attr->index) ||
	    nla_put_string(skb, VIADUCT_A_DEV_NAME, attr->name) ||
	    nla_put_u32(skb, VIADUCT_A_IFINDEX, attr->ifindex) ||
	    nla_put_string(skb, VIADUCT_A_IFNAME, attr->ifname) ||
	    nla_put_u32(skb, VIADUCT_A_MTU, attr->mtu) ||
	    nla_put_u32(skb, VIADUCT_A_FLAGS, attr->flags) ||
	    nla_put_u32(skb, VIADUCT_A_ABI_VERSION, attr->abi_version) ||
	    put_addrs(skb, attr) || put_limits(skb, attr) ||
	    nla_put_u32(skb, VIADUCT_A_CONTEXTS, vd_device_contexts(vd)) ||
	    put_dev_stats(skb, vd)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* The device named in the request by name or index, referenced. */
static struct vd_device *lookup_device(struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	struct nlattr **attrs = info->attrs;
	struct vd_device *vd;

	if (attrs[VIADUCT_A_DEV_NAME]) {
		vd = vd_device_get_by_name(net,
					   nla_data(attrs[VIADUCT_A_DEV_NAME]));
	} else if (attrs[VIADUCT_A_DEV_INDEX]) {
		vd = vd_device_get_by_index(net,
					    nla_get_u32(attrs[VIADUCT_A_DEV_INDEX]));
	} else {
		NL_SET_ERR_MSG(info->extack, "device name or index required");
		return ERR_PTR(-EINVAL);
	}
	if (!vd) {
		NL_SET_ERR_MSG(info->extack, "no such device");
		return ERR_PTR(-ENODEV);
	}
	return vd;
}

/* The interface named in the request, RTNL held. */
static struct net_device *lookup_netdev(struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	struct nlattr **attrs = info->attrs;
	struct net_device *netdev = NULL;

	ASSERT_RTNL();

	if (attrs[VIADUCT_A_IFINDEX]) {
		netdev = __dev_get_by_index(net,
					    nla_get_u32(attrs[VIADUCT_A_IFINDEX]));
		if (netdev && attrs[VIADUCT_A_IFNAME] &&
		    nla_strcmp(attrs[VIADUCT_A_IFNAME], netdev->name))
			netdev = NULL;
	} else if (attrs[VIADUCT_A_IFNAME]) {
		netdev = __dev_get_by_name(net,
					   nla_data(attrs[VIADUCT_A_IFNAME]));
	}
	return netdev;
}

static void create_error(struct genl_info *info, int err)
{
	struct nlattr *name = info->attrs[VIADUCT_A_DEV_NAME];

	switch (err) {
	case -EINVAL:
		NL_SET_ERR_MSG_ATTR(info->extack, name, "invalid device name");
		break;
	case -EEXIST:
		NL_SET_ERR_MSG_ATTR(info->extack, name, "name in use");
		break;
	case -EBUSY:
		NL_SET_ERR_MSG(info->extack,
			       "interface already has a viaduct device");
		break;
	case -ENODEV:
		NL_SET_ERR_MSG(info->extack, "interface is going away");
		break;
	case -ENOSPC:
		NL_SET_ERR_MSG(info->extack, "device indices exhausted");
		break;
	}
}

static int vd_nl_link_add(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct viaduct_device_attr *attr;
	struct net_device *netdev;
	struct vd_device *vd;
	struct sk_buff *msg;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, VIADUCT_A_DEV_NAME))
		return -EINVAL;
	if (!attrs[VIADUCT_A_IFINDEX] && !attrs[VIADUCT_A_IFNAME]) {
		NL_SET_ERR_MSG(info->extack, "interface index or name required");
		return -EINVAL;
	}

	attr = kmalloc(sizeof(*attr), GFP_KERNEL);
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	ret = -ENOMEM;
	if (!attr || !msg)
		goto out;

	rtnl_lock();
	netdev = lookup_netdev(info);
	if (!netdev) {
		NL_SET_ERR_MSG(info->extack, "no such interface");
		ret = -ENODEV;
		goto out_unlock;
	}
	vd = vd_device_create(netdev, nla_data(attrs[VIADUCT_A_DEV_NAME]));
	if (IS_ERR(vd)) {
		ret = PTR_ERR(vd);
		create_error(info, ret);
		goto out_unlock;
	}
	ret = fill_link(msg, vd, info->snd_portid, info->snd_seq, 0, attr);
	if (ret) {
		/* not reported, so not created */
		vd_device_remove(vd);
		vd_device_put(vd);
		goto out_unlock;
	}
	rtnl_unlock();
	vd_device_put(vd);
	kfree(attr);
	return genlmsg_reply(msg, info);

out_unlock:
	rtnl_unlock();
out:
	nlmsg_free(msg);
	kfree(attr);
	return ret;
}

static int vd_nl_link_del(struct sk_buff *skb, struct genl_info *info)
{
	struct vd_device *vd;
	int ret;

	vd = lookup_device(info);
	if (IS_ERR(vd))
		return PTR_ERR(vd);
	ret = vd_device_remove(vd);
	if (ret)
		NL_SET_ERR_MSG(info->extack, "no such device");
	vd_device_put(vd);
	return ret;
}

static int vd_nl_link_get(struct sk_buff *skb, struct genl_info *info)
{
	struct viaduct_device_attr *attr;
	struct vd_device *vd;
	struct sk_buff *msg;
	int ret;

	vd = lookup_device(info);
	if (IS_ERR(vd))
		return PTR_ERR(vd);

	attr = kmalloc(sizeof(*attr), GFP_KERNEL);
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	ret = -ENOMEM;
	if (!attr || !msg)
		goto out;
	ret = fill_link(msg, vd, info->snd_portid, info->snd_seq, 0, attr);
	if (ret)
		goto out;
	vd_device_put(vd);
	kfree(attr);
	return genlmsg_reply(msg, info);

out:
	nlmsg_free(msg);
	kfree(attr);
	vd_device_put(vd);
	return ret;
}

/* cb->args[0]: the index to resume the dump at. */
static int vd_nl_link_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct net *net = sock_net(skb->sk);
	struct viaduct_device_attr *attr;
	u32 index = cb->args[0];
	struct vd_device *vd;
	int ret;

	attr = kmalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	while ((vd = vd_device_get_next(net, &index))) {
		ret = fill_link(skb, vd, NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, NLM_F_MULTI, attr);
		vd_device_put(vd);
		if (ret == -EMSGSIZE)
			break;
		/* removed meanwhile (-ENODEV) or sent: on to the next */
		index++;
	}
	cb->args[0] = index;
	kfree(attr);
	return skb->len;
}

/* --- Counters and resources ---------------------------------------- */

static int fill_global_stats(struct sk_buff *skb, u32 portid, u32 seq,
			     int flags)
{
	struct nlattr *stats;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &vd_nl_family, flags,
			  VIADUCT_CMD_STATS_GET);
	if (!hdr)
		return -EMSGSIZE;
	stats = nla_nest_start(skb, VIADUCT_A_STATS);
	if (!stats ||
	    put_stat(skb, VIADUCT_A_STAT_CONTEXTS, vd_stat_read(contexts)) ||
	    put_stat(skb, VIADUCT_A_STAT_PDS, vd_stat_read(pds)) ||
	    put_stat(skb, VIADUCT_A_STAT_MRS, vd_stat_read(mrs)) ||
	    put_stat(skb, VIADUCT_A_STAT_CQS, vd_stat_read(cqs)) ||
	    put_stat(skb, VIADUCT_A_STAT_QPS, vd_stat_read(qps)) ||
	    put_stat(skb, VIADUCT_A_STAT_PINNED_PAGES,
		     vd_stat_read(pinned_pages)) ||
	    put_stat(skb, VIADUCT_A_STAT_DOORBELLS, vd_stat_read(doorbells)) ||
	    put_stat(skb, VIADUCT_A_STAT_WORKER_POLLS,
		     vd_stat_read(worker_polls)) ||
	    put_stat(skb, VIADUCT_A_STAT_WORKER_WAKEUPS,
		     vd_stat_read(worker_wakeups)) ||
	    put_stat(skb, VIADUCT_A_STAT_WQES_CONSUMED,
		     vd_stat_read(wqes_consumed)) ||
	    put_stat(skb, VIADUCT_A_STAT_CQES_WRITTEN,
		     vd_stat_read(cqes_written)) ||
	    put_stat(skb, VIADUCT_A_STAT_CQ_OVERFLOWS,
		     vd_stat_read(cq_overflows)) ||
	    put_stat(skb, VIADUCT_A_STAT_TX_ZCOPY_MSGS,
		     vd_stat_read(tx_zcopy_msgs)) ||
	    put_stat(skb, VIADUCT_A_STAT_TX_ZCOPY_COPIED,
		     vd_stat_read(tx_zcopy_copied)) ||
	    put_stat(skb, VIADUCT_A_STAT_TX_ZCOPY_FALLBACKS,
		     vd_stat_read(tx_zcopy_fallbacks)) ||
	    put_stat(skb, VIADUCT_A_STAT_TX_DIRECT, vd_stat_read(tx_direct)) ||
	    put_stat(skb, VIADUCT_A_STAT_TX_DEFERRED,
		     vd_stat_read(tx_deferred)) ||
	    put_stat(skb, VIADUCT_A_STAT_RX_UPCALL, vd_stat_read(rx_upcall)) ||
	    put_stat(skb, VIADUCT_A_STAT_RX_DEFERRED,
		     vd_stat_read(rx_deferred)) ||
	    put_stat(skb, VIADUCT_A_STAT_TX_ONECOPY_BYTES,
		     vd_stat_read(tx_onecopy_bytes)) ||
	    put_stat(skb, VIADUCT_A_STAT_TX_BUFFERED_BYTES,
		     vd_stat_read(tx_buffered_bytes)) ||
	    put_stat(skb, VIADUCT_A_STAT_RX_ONECOPY_BYTES,
		     vd_stat_read(rx_onecopy_bytes)) ||
	    put_stat(skb, VIADUCT_A_STAT_RX_BUFFERED_BYTES,
		     vd_stat_read(rx_buffered_bytes))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, stats);
	genlmsg_end(skb, hdr);
	return 0;
}

/*
 * The opener of @ctx as the reader sees it: its pid in the reader's pid
 * namespace, 0 if it is not visible there (a context of a sibling or
 * parent pid namespace). Dumps run in the reader's context (its sendmsg()
 * or recvmsg()).
 */
static pid_t owner_pid(struct vd_uctx *ctx)
{
	return pid_nr_ns(ctx->owner, task_active_pid_ns(current));
}

/* Who holds @ctx: id, pid (in the reader's pid namespace), comm, device. */
static int put_owner(struct sk_buff *skb, struct vd_uctx *ctx, pid_t pid)
{
	/* pairs with smp_store_release() in ioctl_select_device() */
	struct vd_device *vd = smp_load_acquire(&ctx->dev);

	if (nla_put_u32(skb, VIADUCT_A_CTX_ID, ctx->id) ||
	    nla_put_u32(skb, VIADUCT_A_PID, pid) ||
	    nla_put_string(skb, VIADUCT_A_COMM, ctx->comm))
		return -EMSGSIZE;
	/* the context's reference keeps a removed device's name readable */
	if (vd && (nla_put_u32(skb, VIADUCT_A_DEV_INDEX, vd->index) ||
		   nla_put_string(skb, VIADUCT_A_DEV_NAME, vd->name)))
		return -EMSGSIZE;
	return 0;
}

struct vd_nl_walk {
	struct sk_buff *skb;
	struct netlink_callback *cb;
	struct vd_uctx *ctx;		/* RES_GET: the context being walked */
	pid_t pid;			/* RES_GET: its opener, as seen */
	u32 type;			/* RES_GET: VIADUCT_RES_*, 0 for all */
	bool admin;			/* RES_GET: the reader may see STags */
};

/* vd_uctx_walk() callback of the STATS_GET dump: one context. */
static int stats_ctx(struct vd_uctx *ctx, void *arg)
{
	struct vd_nl_walk *w = arg;
	struct sk_buff *skb = w->skb;
	pid_t pid = owner_pid(ctx);
	struct vd_uobj_counts c;
	struct nlattr *stats;
	void *hdr;

	/* not in the reader's pid namespace: not shown */
	if (!pid)
		return 0;
	vd_uobj_table_counts(&ctx->objs, &c);
	hdr = genlmsg_put(skb, NETLINK_CB(w->cb->skb).portid,
			  w->cb->nlh->nlmsg_seq, &vd_nl_family, NLM_F_MULTI,
			  VIADUCT_CMD_STATS_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (put_owner(skb, ctx, pid))
		goto cancel;
	stats = nla_nest_start(skb, VIADUCT_A_STATS);
	if (!stats ||
	    put_stat(skb, VIADUCT_A_STAT_PDS, c.objs[VIADUCT_RES_PD - 1]) ||
	    put_stat(skb, VIADUCT_A_STAT_MRS, c.objs[VIADUCT_RES_MR - 1]) ||
	    put_stat(skb, VIADUCT_A_STAT_CQS, c.objs[VIADUCT_RES_CQ - 1]) ||
	    put_stat(skb, VIADUCT_A_STAT_QPS, c.objs[VIADUCT_RES_QP - 1]) ||
	    put_stat(skb, VIADUCT_A_STAT_SRQS, c.objs[VIADUCT_RES_SRQ - 1]) ||
	    put_stat(skb, VIADUCT_A_STAT_PINNED_PAGES, c.pinned_pages) ||
	    put_stat(skb, VIADUCT_A_STAT_DOORBELLS, c.doorbells))
		goto cancel;
	nla_nest_end(skb, stats);
	genlmsg_end(skb, hdr);
	return 0;

cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

static int vd_nl_stats_get(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	int ret;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	ret = fill_global_stats(msg, info->snd_portid, info->snd_seq, 0);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

/* The module-wide counters, then one message per context of the namespace. */
static int vd_nl_stats_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct vd_nl_walk w = { .skb = skb, .cb = cb };
	u32 id = cb->args[0];
	int ret;

	if (cb->args[2])
		return 0;
	if (!cb->args[1]) {
		ret = fill_global_stats(skb, NETLINK_CB(cb->skb).portid,
					cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (ret)
			return ret;
		cb->args[1] = 1;
	}
	ret = vd_uctx_walk(sock_net(skb->sk), &id, stats_ctx, &w);
	cb->args[0] = id;
	if (!ret)
		cb->args[2] = 1;
	else if (ret != -EMSGSIZE || !skb->len)
		return ret;
	return skb->len;
}

static int put_res_attrs(struct sk_buff *skb, const struct vd_uobj_info *info,
			 bool admin)
{
	switch (info->type) {
	case VIADUCT_RES_PD:
		return nla_put_u32(skb, VIADUCT_A_RES_PDN, info->pdn);
	case VIADUCT_RES_MR:
		if (admin &&
		    nla_put_u32(skb, VIADUCT_A_RES_STAG, info->mr.stag))
			return -EMSGSIZE;
		if (nla_put_u32(skb, VIADUCT_A_RES_PD_HANDLE, info->pd_handle) ||
		    nla_put_u32(skb, VIADUCT_A_RES_PDN, info->pdn) ||
		    nla_put_u64_64bit(skb, VIADUCT_A_RES_LENGTH,
				      info->mr.length, VIADUCT_A_PAD) ||
		    nla_put_u64_64bit(skb, VIADUCT_A_RES_PINNED_PAGES,
				      info->mr.pinned_pages, VIADUCT_A_PAD) ||
		    nla_put_u32(skb, VIADUCT_A_RES_ACCESS, info->mr.access))
			return -EMSGSIZE;
		return 0;
	case VIADUCT_RES_CQ:
		return nla_put_u32(skb, VIADUCT_A_RES_CQE, info->cq.entries);
	case VIADUCT_RES_QP:
		if (nla_put_u32(skb, VIADUCT_A_RES_PD_HANDLE, info->pd_handle) ||
		    nla_put_u32(skb, VIADUCT_A_RES_PDN, info->pdn) ||
		    nla_put_u32(skb, VIADUCT_A_RES_QPN, info->qp.qpn) ||
		    nla_put_u32(skb, VIADUCT_A_RES_QP_STATE, info->qp.state) ||
		    nla_put_u32(skb, VIADUCT_A_RES_QP_FLAGS, info->qp.flags) ||
		    nla_put_u32(skb, VIADUCT_A_RES_SQ_DEPTH,
				info->qp.sq_depth) ||
		    nla_put_u32(skb, VIADUCT_A_RES_RQ_DEPTH,
				info->qp.rq_depth))
			return -EMSGSIZE;
		if (info->qp.send_cq &&
		    nla_put_u32(skb, VIADUCT_A_RES_SEND_CQ, info->qp.send_cq))
			return -EMSGSIZE;
		if (info->qp.recv_cq &&
		    nla_put_u32(skb, VIADUCT_A_RES_RECV_CQ, info->qp.recv_cq))
			return -EMSGSIZE;
		if (info->qp.srq &&
		    nla_put_u32(skb, VIADUCT_A_RES_SRQ, info->qp.srq))
			return -EMSGSIZE;
		return 0;
	case VIADUCT_RES_SRQ:
		if (nla_put_u32(skb, VIADUCT_A_RES_PD_HANDLE, info->pd_handle) ||
		    nla_put_u32(skb, VIADUCT_A_RES_PDN, info->pdn) ||
		    nla_put_u32(skb, VIADUCT_A_RES_RQ_DEPTH, info->srq.depth) ||
		    nla_put_u32(skb, VIADUCT_A_RES_SRQ_LIMIT, info->srq.limit) ||
		    nla_put_u32(skb, VIADUCT_A_RES_SRQ_QPS, info->srq.qps))
			return -EMSGSIZE;
		return 0;
	}
	return 0;
}

/* vd_uobj_table_walk() callback of the RES_GET dump: one object. */
static int res_obj(const struct vd_uobj_info *info, void *arg)
{
	struct vd_nl_walk *w = arg;
	struct sk_buff *skb = w->skb;
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(w->cb->skb).portid,
			  w->cb->nlh->nlmsg_seq, &vd_nl_family, NLM_F_MULTI,
			  VIADUCT_CMD_RES_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (put_owner(skb, w->ctx, w->pid) ||
	    nla_put_u32(skb, VIADUCT_A_RES_TYPE, info->type) ||
	    nla_put_u32(skb, VIADUCT_A_RES_HANDLE, info->handle) ||
	    put_res_attrs(skb, info, w->admin)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* vd_uctx_walk() callback of the RES_GET dump: one context's objects. */
static int res_ctx(struct vd_uctx *ctx, void *arg)
{
	struct vd_nl_walk *w = arg;
	struct netlink_callback *cb = w->cb;
	/* the handle to resume at belongs to the context we stopped in */
	u32 handle = ctx->id == cb->args[0] ? cb->args[1] : 0;
	int ret;

	w->pid = owner_pid(ctx);
	/* not in the reader's pid namespace: not shown */
	if (!w->pid)
		return 0;
	w->ctx = ctx;
	ret = vd_uobj_table_walk(&ctx->objs, &handle, w->type, res_obj, w);
	cb->args[1] = ret ? handle : 0;
	return ret;
}

static int vd_nl_res_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct vd_nl_walk w = { .skb = skb, .cb = cb };
	const struct nlattr *type;
	u32 id = cb->args[0];
	int ret;

	if (cb->args[2])
		return 0;
	/* validated against the policy before the dump started */
	type = nlmsg_find_attr(cb->nlh, GENL_HDRLEN, VIADUCT_A_RES_TYPE);
	if (type)
		w.type = nla_get_u32(type);
	w.admin = netlink_net_capable(cb->skb, CAP_NET_ADMIN);
	ret = vd_uctx_walk(sock_net(skb->sk), &id, res_ctx, &w);
	cb->args[0] = id;
	if (!ret)
		cb->args[2] = 1;
	else if (ret != -EMSGSIZE || !skb->len)
		return ret;
	return skb->len;
}

static const struct genl_small_ops vd_nl_ops[] = {
	{
		.cmd = VIADUCT_CMD_LINK_ADD,
		.flags = GENL_ADMIN_PERM,
		.doit = vd_nl_link_add,
	},
	{
		.cmd = VIADUCT_CMD_LINK_DEL,
		.flags = GENL_ADMIN_PERM,
		.doit = vd_nl_link_del,
	},
	{
		.cmd = VIADUCT_CMD_LINK_GET,
		.doit = vd_nl_link_get,
		.dumpit = vd_nl_link_dump,
	},
	{
		.cmd = VIADUCT_CMD_STATS_GET,
		.doit = vd_nl_stats_get,
		.dumpit = vd_nl_stats_dump,
	},
	{
		.cmd = VIADUCT_CMD_RES_GET,
		.dumpit = vd_nl_res_dump,
	},
};

static struct genl_family vd_nl_family __ro_after_init = {
	.name = VIADUCT_GENL_NAME,
	.version = VIADUCT_GENL_VERSION,
	.maxattr = VIADUCT_A_MAX,
	.policy = vd_nl_policy,
	.netnsok = true,
	.parallel_ops = true,
	.module = THIS_MODULE,
	.small_ops = vd_nl_ops,
	.n_small_ops = ARRAY_SIZE(vd_nl_ops),
};

/**
 * vd_netlink_init() - register the generic-netlink family
 *
 * Context: Module init, process context.
 * Return: 0 or the negative errno of genl_register_family().
 */
int __init vd_netlink_init(void)
{
	return genl_register_family(&vd_nl_family);
}

/**
 * vd_netlink_uninit() - unregister the generic-netlink family
 *
 * Waits for commands that are running (they hold genetlink's cb_lock, which
 * unregistering takes for writing). A dump in progress holds a reference on
 * the module (the family's @module), so none runs by the time module exit
 * calls this.
 *
 * Context: Module exit, process context.
 */
void vd_netlink_uninit(void)
{
	genl_unregister_family(&vd_nl_family);
}
