// SPDX-License-Identifier: GPL-2.0
/*
 * Soft RNIC devices bound to network interfaces. See device.h for the
 * locking rules and the lifetimes; each function has kernel-doc at its
 * definition.
 */
#include <linux/err.h>
#include <linux/inetdevice.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/xarray.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>
#include <kunit/visibility.h>

#include "device.h"
#include "stats.h"

static DEFINE_MUTEX(vd_devices_lock);
/* Runs the removal of devices: stopping their clients (remove_work()). */
static struct workqueue_struct *vd_dev_wq;
/* Live devices by index; the table owns one reference on each. */
static DEFINE_XARRAY(vd_devices);
/* Next index to hand out; indices only grow, so none is ever reused. */
static u32 vd_next_index;

static struct net *vd_net(const struct vd_device *vd)
{
	return read_pnet(&vd->net);
}

static bool name_char_valid(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/**
 * vd_device_name_valid() - whether a string is a valid device name
 * @name: the name, NUL-terminated or not within VIADUCT_NAME_SIZE
 *
 * Context: Any context.
 * Return: true for 1 to VIADUCT_NAME_SIZE - 1 characters of
 * [A-Za-z0-9_.-].
 */
bool vd_device_name_valid(const char *name)
{
	size_t len = strnlen(name, VIADUCT_NAME_SIZE);
	size_t i;

	if (len == 0 || len >= VIADUCT_NAME_SIZE)
		return false;
	for (i = 0; i < len; i++)
		if (!name_char_valid(name[i]))
			return false;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_name_valid);

static void vd_device_release(struct kref *ref)
{
	struct vd_device *vd = container_of(ref, struct vd_device, ref);

	/* removal, which drops the netdev, always comes before the last put */
	WARN_ON_ONCE(vd->netdev);
	WARN_ON_ONCE(!list_empty(&vd->clients));
	mutex_destroy(&vd->clients_lock);
	vd_tpt_uninit(&vd->tpt);
	vd_dev_counts_put(vd->counts);
	kfree(vd);
}

/**
 * vd_device_put() - drop a reference
 * @vd: the device
 *
 * Memory lifetime (kref; vd_device_get() takes one). The last put, which
 * always comes after removal, tears down the TPT, flushing its release
 * work, and so sleeps.
 *
 * Context: Process context.
 */
void vd_device_put(struct vd_device *vd)
{
	kref_put(&vd->ref, vd_device_release);
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_put);

static struct vd_device *find_by_name(struct net *net, const char *name)
{
	struct vd_device *vd;
	unsigned long idx;

	lockdep_assert_held(&vd_devices_lock);
	xa_for_each(&vd_devices, idx, vd)
		if (net_eq(vd_net(vd), net) && !strcmp(vd->name, name))
			return vd;
	return NULL;
}

static struct vd_device *find_by_netdev(const struct net_device *netdev)
{
	struct vd_device *vd;
	unsigned long idx;

	lockdep_assert_held(&vd_devices_lock);
	xa_for_each(&vd_devices, idx, vd)
		if (vd->netdev == netdev)
			return vd;
	return NULL;
}

/*
 * The second half of removal, in process context without RTNL or
 * vd_devices_lock (the clients take CM and socket locks): every client
 * stops what it does on the device. Holds a reference of its own.
 */
static void remove_work(struct work_struct *work)
{
	struct vd_device *vd = container_of(work, struct vd_device,
					    remove_work);
	struct vd_device_client *c;

	mutex_lock(&vd->clients_lock);
	list_for_each_entry(c, &vd->clients, node)
		c->removed(c);
	mutex_unlock(&vd->clients_lock);
	vd_dbg_dev(vd, "clients stopped\n");
	vd_device_put(vd);
}

/*
 * Contexts that selected @vd keep their reference and see it as removed
 * from now on; the interface is released at once, whoever still holds the
 * device. What its clients do on it is stopped by remove_work().
 */
static void remove_locked(struct vd_device *vd)
{
	lockdep_assert_held(&vd_devices_lock);

	vd_dbg_dev(vd, "unbinding from %s\n", netdev_name(vd->netdev));
	/*
	 * Not under @clients_lock, which comes before the clients' locks:
	 * vd_device_client_add() reads it under that lock, which the work
	 * queued below takes before it walks the clients, so a client is
	 * either refused or walked.
	 */
	WRITE_ONCE(vd->removed, true);
	xa_erase(&vd_devices, vd->index);
	netdev_put(vd->netdev, &vd->netdev_tracker);
	vd->netdev = NULL;
	vd_doorbell_worker_stop(&vd->db_worker);
	/* the table's reference goes to the work */
	queue_work(vd_dev_wq, &vd->remove_work);
}

/**
 * vd_device_client_add() - register a user that removal must stop
 * @vd: the device, referenced by the caller
 * @c: the client, with @c->removed set; stays registered until
 *     vd_device_client_del()
 *
 * Context: Process context; not from a client's @removed.
 * Return: 0, or -ENODEV if the device was removed already (@removed is
 * then never called).
 */
int vd_device_client_add(struct vd_device *vd, struct vd_device_client *c)
{
	int ret = -ENODEV;

	mutex_lock(&vd->clients_lock);
	if (!READ_ONCE(vd->removed)) {
		list_add_tail(&c->node, &vd->clients);
		ret = 0;
	}
	mutex_unlock(&vd->clients_lock);
	return ret;
}

/**
 * vd_device_client_del() - unregister a client
 * @vd: the device
 * @c: a client vd_device_client_add() registered
 *
 * Waits for a call of @c->removed that is under way: once this returns it
 * is never called again.
 *
 * Context: Process context; not from a client's @removed.
 */
void vd_device_client_del(struct vd_device *vd, struct vd_device_client *c)
{
	mutex_lock(&vd->clients_lock);
	list_del_init(&c->node);
	mutex_unlock(&vd->clients_lock);
}

/**
 * vd_device_create() - bind a new device to an interface
 * @netdev: the interface
 * @name: the device's name, unique in @netdev's namespace
 *
 * Starts the device's doorbell worker and enters it in the table of live
 * devices under the next index.
 *
 * Context: Process context, RTNL held.
 * Return: the device, with a reference for the caller; or ERR_PTR() of
 * -EINVAL (bad name), -ENODEV (@netdev is going away), -EBUSY (@netdev
 * already has a device), -EEXIST (@name is taken in @netdev's namespace),
 * -ENOSPC (device indices exhausted), -ENOMEM, or the error of starting
 * the worker thread.
 */
struct vd_device *vd_device_create(struct net_device *netdev, const char *name)
{
	struct vd_device *vd;
	int ret;

	ASSERT_RTNL();

	if (!vd_device_name_valid(name))
		return ERR_PTR(-EINVAL);
	/* Under RTNL an interface still registered gets NETDEV_UNREGISTER later. */
	if (netdev->reg_state != NETREG_REGISTERED)
		return ERR_PTR(-ENODEV);

	vd = kzalloc(sizeof(*vd), GFP_KERNEL);
	if (!vd)
		return ERR_PTR(-ENOMEM);
	vd->counts = kzalloc(sizeof(*vd->counts), GFP_KERNEL);
	if (!vd->counts) {
		kfree(vd);
		return ERR_PTR(-ENOMEM);
	}
	refcount_set(&vd->counts->ref, 1);
	kref_init(&vd->ref);
	strscpy(vd->name, name, sizeof(vd->name));
	write_pnet(&vd->net, dev_net(netdev));
	atomic_set(&vd->contexts, 0);
	mutex_init(&vd->clients_lock);
	INIT_LIST_HEAD(&vd->clients);
	INIT_WORK(&vd->remove_work, remove_work);
	vd_tpt_init(&vd->tpt, VD_MAX_MR);
	ret = vd_doorbell_worker_start(&vd->db_worker, name);
	if (ret) {
		vd_tpt_uninit(&vd->tpt);
		vd_dev_counts_put(vd->counts);
		kfree(vd);
		return ERR_PTR(ret);
	}

	mutex_lock(&vd_devices_lock);
	ret = -EBUSY;
	if (find_by_netdev(netdev))
		goto err_unlock;
	ret = -EEXIST;
	if (find_by_name(dev_net(netdev), name))
		goto err_unlock;
	ret = -ENOSPC;
	if (vd_next_index == VIADUCT_INDEX_SELECTED)
		goto err_unlock;
	vd->index = vd_next_index;
	ret = xa_insert(&vd_devices, vd->index, vd, GFP_KERNEL);
	if (ret)
		goto err_unlock;
	vd_next_index++;
	netdev_hold(netdev, &vd->netdev_tracker, GFP_KERNEL);
	vd->netdev = netdev;
	vd_device_get(vd);
	mutex_unlock(&vd_devices_lock);

	vd_dbg_dev(vd, "bound to %s\n", netdev_name(netdev));
	return vd;

err_unlock:
	mutex_unlock(&vd_devices_lock);
	vd_doorbell_worker_stop(&vd->db_worker);
	vd_tpt_uninit(&vd->tpt);
	vd_dev_counts_put(vd->counts);
	kfree(vd);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_create);

/**
 * vd_device_remove() - unbind a device from its interface
 * @vd: the device, referenced by the caller
 *
 * Unlists @vd, drops its netdev reference, stops its doorbell worker and
 * queues the stopping of its clients (struct vd_device_client), which
 * then drops the table's reference. Holders of references keep the
 * memory only, and see the device as removed.
 *
 * Context: Process context.
 * Return: 0, or -ENODEV if it was already removed.
 */
int vd_device_remove(struct vd_device *vd)
{
	int ret = -ENODEV;

	mutex_lock(&vd_devices_lock);
	if (!vd->removed) {
		remove_locked(vd);
		ret = 0;
	}
	mutex_unlock(&vd_devices_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_remove);

/**
 * vd_device_get_by_index() - look a live device up by index
 * @net: the namespace it must live in
 * @index: its index
 *
 * Context: Process context.
 * Return: the device, referenced, or NULL.
 */
struct vd_device *vd_device_get_by_index(struct net *net, u32 index)
{
	struct vd_device *vd;

	mutex_lock(&vd_devices_lock);
	vd = xa_load(&vd_devices, index);
	if (vd && net_eq(vd_net(vd), net))
		vd_device_get(vd);
	else
		vd = NULL;
	mutex_unlock(&vd_devices_lock);
	return vd;
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_get_by_index);

/**
 * vd_device_get_by_name() - look a live device up by name
 * @net: the namespace it lives in
 * @name: its name
 *
 * Context: Process context.
 * Return: the device, referenced, or NULL.
 */
struct vd_device *vd_device_get_by_name(struct net *net, const char *name)
{
	struct vd_device *vd;

	mutex_lock(&vd_devices_lock);
	vd = find_by_name(net, name);
	if (vd)
		vd_device_get(vd);
	mutex_unlock(&vd_devices_lock);
	return vd;
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_get_by_name);

/**
 * vd_device_get_next() - walk the live devices of a namespace
 * @net: the namespace
 * @index: where to start; set to the index of the device found
 *
 * Context: Process context.
 * Return: the live device of @net with the lowest index >= *@index,
 * referenced; NULL if none.
 */
struct vd_device *vd_device_get_next(struct net *net, u32 *index)
{
	struct vd_device *vd, *found = NULL;
	unsigned long idx;

	mutex_lock(&vd_devices_lock);
	xa_for_each_start(&vd_devices, idx, vd, *index) {
		if (net_eq(vd_net(vd), net)) {
			found = vd_device_get(vd);
			*index = idx;
			break;
		}
	}
	mutex_unlock(&vd_devices_lock);
	return found;
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_get_next);

static void fill_addrs(struct net_device *netdev,
		       struct viaduct_device_attr *attr)
{
	struct viaduct_addr *a;
	struct in_device *in_dev;
	struct in_ifaddr *ifa;
#if IS_ENABLED(CONFIG_IPV6)
	struct inet6_ifaddr *ifp;
	struct inet6_dev *in6_dev;
#endif
	u32 n = 0;

	rcu_read_lock();
	in_dev = __in_dev_get_rcu(netdev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			if (n == VIADUCT_MAX_ADDRS)
				break;
			a = &attr->addrs[n++];
			a->family = VIADUCT_AF_INET;
			a->prefixlen = ifa->ifa_prefixlen;
			memcpy(a->addr, &ifa->ifa_local, sizeof(ifa->ifa_local));
		}
	}
#if IS_ENABLED(CONFIG_IPV6)
	in6_dev = __in6_dev_get(netdev);
	if (in6_dev) {
		read_lock_bh(&in6_dev->lock);
		list_for_each_entry(ifp, &in6_dev->addr_list, if_list) {
			if (n == VIADUCT_MAX_ADDRS)
				break;
			a = &attr->addrs[n++];
			a->family = VIADUCT_AF_INET6;
			a->prefixlen = ifp->prefix_len;
			memcpy(a->addr, &ifp->addr, sizeof(ifp->addr));
		}
		read_unlock_bh(&in6_dev->lock);
	}
#endif
	rcu_read_unlock();
	attr->num_addrs = n;
}

static void fill_attr(struct vd_device *vd, struct viaduct_device_attr *attr)
{
	struct net_device *netdev = vd->netdev;
	unsigned int flags = READ_ONCE(netdev->flags);

	lockdep_assert_held(&vd_devices_lock);

	memset(attr, 0, sizeof(*attr));
	attr->index = vd->index;
	attr->abi_version = VIADUCT_ABI_VERSION;
	strscpy(attr->name, vd->name, sizeof(attr->name));
	strscpy(attr->ifname, netdev->name, sizeof(attr->ifname));
	attr->ifindex = netdev->ifindex;
	attr->mtu = READ_ONCE(netdev->mtu);
	if (flags & IFF_UP) {
		attr->flags |= VIADUCT_DEV_F_UP;
		if (netif_running(netdev) && netif_carrier_ok(netdev))
			attr->flags |= VIADUCT_DEV_F_RUNNING;
	}
	memcpy(attr->hw_addr, netdev->dev_addr,
	       min_t(size_t, netdev->addr_len, sizeof(attr->hw_addr)));

	attr->max_pd = VD_MAX_PD;
	attr->max_mr = VD_MAX_MR;
	/* windows take their STags from the same table as the regions */
	attr->max_mw = VD_MAX_MR;
	attr->max_cq = VD_MAX_CQ;
	attr->max_cqe = VD_MAX_CQE;
	attr->max_qp = VD_MAX_QP;
	attr->max_qp_wr = VD_MAX_QP_WR;
	attr->max_sge = VD_MAX_SGE;
	attr->max_inline = VD_MAX_INLINE;
	attr->max_ord = VD_MAX_ORD;
	attr->max_ird = VD_MAX_IRD;
	attr->max_msg_size = VD_MAX_MSG_SIZE;
	attr->max_mr_size = VD_MAX_MR_SIZE;
	attr->page_size = VD_PAGE_SIZE;

	fill_addrs(netdev, attr);
}

/**
 * vd_device_query() - the attributes of a device
 * @vd: the device
 * @attr: filled, all of it (@index too), from the device and its interface
 *
 * Context: Process context.
 * Return: 0, or -ENODEV once the device was removed.
 */
int vd_device_query(struct vd_device *vd, struct viaduct_device_attr *attr)
{
	int ret = -ENODEV;

	mutex_lock(&vd_devices_lock);
	if (!vd->removed) {
		fill_attr(vd, attr);
		ret = 0;
	}
	mutex_unlock(&vd_devices_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_query);

/**
 * vd_device_list() - the live devices of a namespace
 * @net: the namespace
 * @capacity: the most entries the caller wants
 * @entries: set to a new array the caller frees with kvfree() (NULL if
 *           empty)
 * @filled: set to the entries in it: the first min(@capacity, number)
 *          devices, by index
 *
 * Context: Process context.
 * Return: the number of devices of @net, or -ENOMEM.
 */
int vd_device_list(struct net *net, u32 capacity,
		   struct viaduct_device_entry **entries, u32 *filled)
{
	struct viaduct_device_entry *ents = NULL, *e;
	struct vd_device *vd;
	unsigned long idx;
	u32 count = 0, n;

	mutex_lock(&vd_devices_lock);
	xa_for_each(&vd_devices, idx, vd)
		if (net_eq(vd_net(vd), net))
			count++;
	n = min(capacity, count);
	if (n) {
		ents = kvcalloc(n, sizeof(*ents), GFP_KERNEL);
		if (!ents) {
			mutex_unlock(&vd_devices_lock);
			return -ENOMEM;
		}
	}
	e = ents;
	xa_for_each(&vd_devices, idx, vd) {
		if (e == ents + n)
			break;
		if (!net_eq(vd_net(vd), net))
			continue;
		e->index = vd->index;
		e->ifindex = vd->netdev->ifindex;
		strscpy(e->name, vd->name, sizeof(e->name));
		strscpy(e->ifname, vd->netdev->name, sizeof(e->ifname));
		e++;
	}
	mutex_unlock(&vd_devices_lock);

	*entries = ents;
	*filled = n;
	return count;
}
EXPORT_SYMBOL_IF_KUNIT(vd_device_list);

/*
 * NETDEV_UNREGISTER comes when the interface is deleted, when it moves to
 * another namespace (the device stays behind and goes) and when its
 * namespace is dismantled, always before unregister_netdevice() waits for
 * the references to drop: removing the device here releases ours in time.
 */
static int vd_netdev_event(struct notifier_block *nb, unsigned long event,
			   void *ptr)
{
	struct net_device *netdev = netdev_notifier_info_to_dev(ptr);
	struct vd_device *vd;

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;

	mutex_lock(&vd_devices_lock);
	vd = find_by_netdev(netdev);
	if (vd)
		remove_locked(vd);
	mutex_unlock(&vd_devices_lock);
	return NOTIFY_DONE;
}

static struct notifier_block vd_netdev_notifier = {
	.notifier_call = vd_netdev_event,
};

static void remove_all(struct net *net)
{
	struct vd_device *vd;
	unsigned long idx;

	mutex_lock(&vd_devices_lock);
	xa_for_each(&vd_devices, idx, vd)
		if (!net || net_eq(vd_net(vd), net))
			remove_locked(vd);
	mutex_unlock(&vd_devices_lock);
}

/*
 * Subsystem exits run after the device exits, which unregister or move
 * every interface of the namespace, so the notifier has normally removed
 * the namespace's devices already; this only makes sure no device outlives
 * its namespace.
 */
static void __net_exit vd_net_exit(struct net *net)
{
	remove_all(net);
}

static struct pernet_operations vd_net_ops = {
	.exit = vd_net_exit,
};

/**
 * vd_device_init() - register the netdev notifier and the pernet cleanup
 *
 * Context: Module init, process context.
 * Return: 0, or the error of registering either.
 */
int __init vd_device_init(void)
{
	int ret;

	vd_dev_wq = alloc_workqueue("viaduct_dev", WQ_UNBOUND, 0);
	if (!vd_dev_wq)
		return -ENOMEM;
	ret = register_pernet_subsys(&vd_net_ops);
	if (ret)
		goto err_pernet;
	ret = register_netdevice_notifier(&vd_netdev_notifier);
	if (ret)
		goto err_notifier;
	return 0;

err_notifier:
	unregister_pernet_subsys(&vd_net_ops);
err_pernet:
	destroy_workqueue(vd_dev_wq);
	return ret;
}

/**
 * vd_device_uninit() - unregister what vd_device_init() registered
 *
 * Removes every device that is still there and waits for the removals
 * (no context is left, so none has clients).
 *
 * Context: Module exit, process context.
 */
void vd_device_uninit(void)
{
	/* Unregistering replays NETDEV_UNREGISTER, which removes most devices. */
	unregister_netdevice_notifier(&vd_netdev_notifier);
	remove_all(NULL);
	unregister_pernet_subsys(&vd_net_ops);
	destroy_workqueue(vd_dev_wq);
	xa_destroy(&vd_devices);
}
