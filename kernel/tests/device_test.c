// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_device: device lifetime against real (test-made)
 * interfaces in the initial namespace: creation rules, lookups, indices
 * that are never reused, query, listing, removal by request and by
 * interface unregistration, which must not wait for the last reference;
 * the counts of a device's objects, which outlive the device.
 */
#include <kunit/test.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <net/net_namespace.h>

#include "../cq.h"
#include "../device.h"
#include "../pd.h"
#include "../stats.h"

#define NR_NETDEVS	2

struct dev_fixture {
	struct net_device *nd[NR_NETDEVS];
	bool registered[NR_NETDEVS];
};

static netdev_tx_t test_xmit(struct sk_buff *skb, struct net_device *dev)
{
	dev_kfree_skb(skb);
	return NETDEV_TX_OK;
}

static const struct net_device_ops test_netdev_ops = {
	.ndo_start_xmit = test_xmit,
};

static void test_setup(struct net_device *dev)
{
	ether_setup(dev);
	dev->netdev_ops = &test_netdev_ops;
}

static int dev_test_init(struct kunit *test)
{
	struct dev_fixture *f;
	int i, ret;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f);
	test->priv = f;
	for (i = 0; i < NR_NETDEVS; i++) {
		f->nd[i] = alloc_netdev(0, "vdkt%d", NET_NAME_ENUM, test_setup);
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f->nd[i]);
		eth_hw_addr_random(f->nd[i]);
		ret = register_netdev(f->nd[i]);
		KUNIT_ASSERT_EQ(test, ret, 0);
		f->registered[i] = true;
	}
	return 0;
}

static void dev_test_exit(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	int i;

	for (i = 0; i < NR_NETDEVS; i++) {
		if (!f->nd[i])
			continue;
		if (f->registered[i])
			unregister_netdev(f->nd[i]);
		free_netdev(f->nd[i]);
	}
}

static struct vd_device *create(struct net_device *nd, const char *name)
{
	struct vd_device *vd;

	rtnl_lock();
	vd = vd_device_create(nd, name);
	rtnl_unlock();
	return vd;
}

static void device_create_rules(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	struct vd_device *vd, *other;

	vd = create(f->nd[0], "vdkt_a");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, vd);
	KUNIT_EXPECT_STREQ(test, vd->name, "vdkt_a");
	KUNIT_EXPECT_TRUE(test, vd_device_alive(vd));

	/* one device per interface */
	other = create(f->nd[0], "vdkt_b");
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(other), -EBUSY);
	/* one name per namespace */
	other = create(f->nd[1], "vdkt_a");
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(other), -EEXIST);
	other = create(f->nd[1], "bad name");
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(other), -EINVAL);
	other = create(f->nd[1], "");
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(other), -EINVAL);

	KUNIT_EXPECT_EQ(test, vd_device_remove(vd), 0);
	KUNIT_EXPECT_FALSE(test, vd_device_alive(vd));
	KUNIT_EXPECT_EQ(test, vd_device_remove(vd), -ENODEV);
	vd_device_put(vd);
}

static void device_lookup(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	struct vd_device *vd, *found;
	u32 index;

	vd = create(f->nd[0], "vdkt_a");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, vd);

	found = vd_device_get_by_name(&init_net, "vdkt_a");
	KUNIT_EXPECT_PTR_EQ(test, found, vd);
	if (found)
		vd_device_put(found);
	found = vd_device_get_by_index(&init_net, vd->index);
	KUNIT_EXPECT_PTR_EQ(test, found, vd);
	if (found)
		vd_device_put(found);
	index = vd->index;
	found = vd_device_get_next(&init_net, &index);
	KUNIT_EXPECT_PTR_EQ(test, found, vd);
	KUNIT_EXPECT_EQ(test, index, vd->index);
	if (found)
		vd_device_put(found);
	KUNIT_EXPECT_NULL(test, vd_device_get_by_name(&init_net, "vdkt_none"));
	KUNIT_EXPECT_NULL(test, vd_device_get_by_index(&init_net,
						       VIADUCT_INDEX_SELECTED));

	KUNIT_EXPECT_EQ(test, vd_device_remove(vd), 0);
	KUNIT_EXPECT_NULL(test, vd_device_get_by_name(&init_net, "vdkt_a"));
	KUNIT_EXPECT_NULL(test, vd_device_get_by_index(&init_net, vd->index));
	vd_device_put(vd);
}

static void device_index_not_reused(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	struct vd_device *a, *b;

	a = create(f->nd[0], "vdkt_a");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, a);
	KUNIT_EXPECT_EQ(test, vd_device_remove(a), 0);

	/* same interface, same name: a new device with a new index */
	b = create(f->nd[0], "vdkt_a");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, b);
	KUNIT_EXPECT_PTR_NE(test, a, b);
	KUNIT_EXPECT_GT(test, b->index, a->index);
	KUNIT_EXPECT_NE(test, b->index, VIADUCT_INDEX_SELECTED);
	KUNIT_EXPECT_FALSE(test, vd_device_alive(a));
	KUNIT_EXPECT_EQ(test, vd_device_remove(b), 0);
	vd_device_put(a);
	vd_device_put(b);
}

static void device_query(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	struct net_device *nd = f->nd[0];
	struct viaduct_device_attr *attr;
	struct vd_device *vd;
	int ret;

	attr = kunit_kzalloc(test, sizeof(*attr), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, attr);
	vd = create(nd, "vdkt_q");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, vd);

	memset(attr, 0xa5, sizeof(*attr));
	KUNIT_ASSERT_EQ(test, vd_device_query(vd, attr), 0);
	KUNIT_EXPECT_EQ(test, attr->index, vd->index);
	KUNIT_EXPECT_EQ(test, attr->abi_version, VIADUCT_ABI_VERSION);
	KUNIT_EXPECT_STREQ(test, attr->name, "vdkt_q");
	KUNIT_EXPECT_STREQ(test, attr->ifname, nd->name);
	KUNIT_EXPECT_EQ(test, attr->ifindex, (u32)nd->ifindex);
	KUNIT_EXPECT_EQ(test, attr->mtu, 1500U);
	KUNIT_EXPECT_EQ(test, attr->flags, 0U);
	KUNIT_EXPECT_EQ(test, attr->num_addrs, 0U);
	KUNIT_EXPECT_EQ(test, memcmp(attr->hw_addr, nd->dev_addr, ETH_ALEN), 0);
	KUNIT_EXPECT_EQ(test, attr->hw_addr[6], 0);
	KUNIT_EXPECT_EQ(test, attr->max_qp, VD_MAX_QP);
	KUNIT_EXPECT_EQ(test, attr->max_cqe, VD_MAX_CQE);
	KUNIT_EXPECT_EQ(test, attr->max_msg_size, VD_MAX_MSG_SIZE);
	KUNIT_EXPECT_EQ(test, attr->max_mr_size, VD_MAX_MR_SIZE);
	KUNIT_EXPECT_EQ(test, attr->page_size, (u32)PAGE_SIZE);
	/* everything not reported is zero, never stale (QUERY_DEVICE adds caps) */
	KUNIT_EXPECT_EQ(test, attr->caps, 0U);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(attr->addrs, 0, sizeof(attr->addrs)));

	rtnl_lock();
	ret = dev_open(nd, NULL);
	rtnl_unlock();
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_ASSERT_EQ(test, vd_device_query(vd, attr), 0);
	KUNIT_EXPECT_EQ(test, attr->flags,
			VIADUCT_DEV_F_UP | VIADUCT_DEV_F_RUNNING);
	rtnl_lock();
	netif_carrier_off(nd);
	rtnl_unlock();
	KUNIT_ASSERT_EQ(test, vd_device_query(vd, attr), 0);
	KUNIT_EXPECT_EQ(test, attr->flags, VIADUCT_DEV_F_UP);

	KUNIT_EXPECT_EQ(test, vd_device_remove(vd), 0);
	KUNIT_EXPECT_EQ(test, vd_device_query(vd, attr), -ENODEV);
	vd_device_put(vd);
}

static void device_list(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	struct viaduct_device_entry *ents;
	struct vd_device *a, *b;
	int count, seen = 0;
	u32 n, i;

	a = create(f->nd[0], "vdkt_a");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, a);
	b = create(f->nd[1], "vdkt_b");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, b);

	count = vd_device_list(&init_net, 0, &ents, &n);
	KUNIT_EXPECT_GE(test, count, 2);
	KUNIT_EXPECT_EQ(test, n, 0U);
	KUNIT_EXPECT_NULL(test, ents);

	count = vd_device_list(&init_net, U32_MAX, &ents, &n);
	KUNIT_ASSERT_GE(test, count, 2);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ents);
	KUNIT_EXPECT_EQ(test, n, (u32)count);
	for (i = 0; i < n; i++) {
		if (ents[i].index == a->index) {
			KUNIT_EXPECT_STREQ(test, ents[i].name, "vdkt_a");
			KUNIT_EXPECT_STREQ(test, ents[i].ifname, f->nd[0]->name);
			KUNIT_EXPECT_EQ(test, ents[i].ifindex,
					(u32)f->nd[0]->ifindex);
			seen++;
		} else if (ents[i].index == b->index) {
			KUNIT_EXPECT_STREQ(test, ents[i].name, "vdkt_b");
			seen++;
		}
	}
	KUNIT_EXPECT_EQ(test, seen, 2);
	kvfree(ents);

	count = vd_device_list(&init_net, 1, &ents, &n);
	KUNIT_EXPECT_GE(test, count, 2);
	KUNIT_EXPECT_EQ(test, n, 1U);
	kvfree(ents);

	KUNIT_EXPECT_EQ(test, vd_device_remove(a), 0);
	KUNIT_EXPECT_EQ(test, vd_device_remove(b), 0);
	vd_device_put(a);
	vd_device_put(b);
}

/*
 * The interface goes away while the device is still referenced (as by an
 * open context): unregistration must not wait for that reference, and the
 * device must then read as removed.
 */
static void device_netdev_unregister(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	struct viaduct_device_attr *attr;
	struct vd_device *vd;

	attr = kunit_kzalloc(test, sizeof(*attr), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, attr);
	vd = create(f->nd[0], "vdkt_u");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, vd);
	vd_device_ctx_attach(vd);
	KUNIT_EXPECT_EQ(test, vd_device_contexts(vd), 1U);

	unregister_netdev(f->nd[0]);
	f->registered[0] = false;

	KUNIT_EXPECT_FALSE(test, vd_device_alive(vd));
	KUNIT_EXPECT_EQ(test, vd_device_query(vd, attr), -ENODEV);
	KUNIT_EXPECT_EQ(test, vd_device_remove(vd), -ENODEV);
	KUNIT_EXPECT_NULL(test, vd_device_get_by_name(&init_net, "vdkt_u"));
	/* an unregistered interface cannot get a device */
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(create(f->nd[0], "vdkt_v")),
			-ENODEV);
	/* the name is free again */
	vd_device_ctx_detach(vd);
	vd_device_put(vd);
	vd = create(f->nd[1], "vdkt_u");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, vd);
	KUNIT_EXPECT_EQ(test, vd_device_contexts(vd), 0U);
	KUNIT_EXPECT_EQ(test, vd_device_remove(vd), 0);
	vd_device_put(vd);
}

/* A device nobody holds is freed when its interface goes. */
static void device_removed_with_interface(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	struct vd_device *vd;

	vd = create(f->nd[1], "vdkt_w");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, vd);
	/* from here on only the table holds it */
	vd_device_put(vd);

	unregister_netdev(f->nd[1]);
	f->registered[1] = false;
	KUNIT_EXPECT_NULL(test, vd_device_get_by_name(&init_net, "vdkt_w"));
}

/*
 * A device's counts count its PDs and CQs from creation to free, and stay
 * for the objects that outlive the device (KASAN watches the last puts).
 */
static void device_counts_outlive_the_device(struct kunit *test)
{
	struct dev_fixture *f = test->priv;
	struct vd_dev_counts *c;
	struct vd_device *vd;
	struct vd_pd *pd;
	struct vd_cq *cq;

	vd = create(f->nd[0], "vdkt_c");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, vd);
	c = vd_dev_counts_get(vd->counts);
	KUNIT_EXPECT_EQ(test, vd_dev_count_read(c, VD_DEV_PDS), 0U);
	pd = vd_pd_create(vd, vd->counts);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pd);
	cq = vd_cq_create(4, 1, 0, NULL, NULL, vd->counts);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	KUNIT_EXPECT_EQ(test, vd_dev_count_read(c, VD_DEV_PDS), 1U);
	KUNIT_EXPECT_EQ(test, vd_dev_count_read(c, VD_DEV_CQS), 1U);
	KUNIT_EXPECT_EQ(test, vd_dev_count_read(c, VD_DEV_QPS), 0U);

	/* the device goes: removal drops the table's reference, this ours */
	KUNIT_EXPECT_EQ(test, vd_device_remove(vd), 0);
	vd_device_put(vd);
	KUNIT_EXPECT_EQ(test, vd_dev_count_read(c, VD_DEV_PDS), 1U);

	vd_pd_put(pd);
	KUNIT_EXPECT_EQ(test, vd_dev_count_read(c, VD_DEV_PDS), 0U);
	vd_cq_put(cq);
	KUNIT_EXPECT_EQ(test, vd_dev_count_read(c, VD_DEV_CQS), 0U);
	vd_dev_counts_put(c);
}

static struct kunit_case device_test_cases[] = {
	KUNIT_CASE(device_create_rules),
	KUNIT_CASE(device_lookup),
	KUNIT_CASE(device_index_not_reused),
	KUNIT_CASE(device_query),
	KUNIT_CASE(device_list),
	KUNIT_CASE(device_netdev_unregister),
	KUNIT_CASE(device_removed_with_interface),
	KUNIT_CASE(device_counts_outlive_the_device),
	{}
};

static struct kunit_suite device_test_suite = {
	.name = "viaduct_device",
	.init = dev_test_init,
	.exit = dev_test_exit,
	.test_cases = device_test_cases,
};

kunit_test_suite(device_test_suite);
