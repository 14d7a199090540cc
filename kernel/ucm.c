// SPDX-License-Identifier: GPL-2.0
/*
 * The connection manager's commands on /dev/viaduct (include/uapi/viaduct/viaduct-abi.h,
 * "Connection manager"): argument checks, copies in and out, and handle
 * lookups. cm.c does the work; uobj.c keeps the ids in the handle table.
 * Descriptors (channels, converted sockets) are looked up here, and a
 * listener's new connections reach the table through ucm_publish(), the
 * owner callback the CM was given: the CM never sees either.
 *
 * Every command checks its argument completely before it acts: reserved
 * fields and unknown flags are EINVAL, private data beyond
 * VIADUCT_CM_PRIVATE_DATA_MAX is EINVAL, an unreadable private data
 * pointer is EFAULT, a handle that names no CM id (or no QP) of this
 * context is ENOENT, and a context without a live selected device gets
 * ENODEV (uctx.c's dispatcher sees to that, after copying the argument
 * in), except for CM_DESTROY_ID and CM_ACK_EVENT, which work on ids of a
 * removed device too. The commands run without the table's lock, on referenced objects.
 */
#include <linux/err.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/net.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "addr.h"
#include "cm.h"
#include "cm_channel.h"
#include "device.h"
#include "qp.h"
#include "uctx.h"
#include "uobj.h"
#include "viaduct.h"

static_assert(VIADUCT_CM_CONVERT_SOCKET_SIZE_VER0 ==
	      offsetof(struct viaduct_cm_convert_socket, send_data));
static_assert(VIADUCT_CM_CONVERT_SOCKET_SIZE_VER1 ==
	      sizeof(struct viaduct_cm_convert_socket));

/* Copies a parameter block in and validates it; @flags: those allowed. */
static int ucm_param(const struct viaduct_cm_conn_param *u, u32 flags,
		     struct vd_cm_param *p)
{
	if (u->flags & ~flags)
		return -EINVAL;
	if (u->private_data_len > VIADUCT_CM_PRIVATE_DATA_MAX)
		return -EINVAL;
	if (u->ird > VD_MAX_IRD || u->ord > VD_MAX_ORD)
		return -EINVAL;
	p->flags = u->flags;
	p->ird = u->ird;
	p->ord = u->ord;
	p->timeout_ms = u->timeout_ms;
	p->pd_len = u->private_data_len;
	if (p->pd_len &&
	    copy_from_user(p->pd, u64_to_user_ptr(u->private_data), p->pd_len))
		return -EFAULT;
	return 0;
}

/* The referenced id and, if @qp_handle is not NULL, QP of a command. */
static int ucm_lookup(struct vd_uctx *ctx, u32 handle, const u32 *qp_handle,
		      struct vd_cm_id **id, struct vd_qp **qp)
{
	*id = vd_uobj_cm_id_get(&ctx->objs, handle);
	if (!*id)
		return -ENOENT;
	if (!qp_handle)
		return 0;
	*qp = vd_uobj_get_qp(&ctx->objs, *qp_handle);
	if (!*qp) {
		vd_cm_id_put(*id);
		return -ENOENT;
	}
	return 0;
}

/* The channel behind descriptor @fd, referenced. */
static struct vd_cm_channel *ucm_channel_fdget(int fd)
{
	struct vd_cm_channel *ch;
	struct file *file;

	file = fget(fd);
	if (!file)
		return ERR_PTR(-EBADF);
	ch = vd_cm_channel_from_file(file);
	fput(file);
	return ch;
}

/* struct vd_cm_owner.publish: a listener's child gets a handle. */
static int ucm_publish(void *arg, struct vd_cm_id *child)
{
	u32 handle;

	return vd_uobj_cm_id_add(arg, child, &handle);
}

long vd_ucm_create_channel(struct vd_uctx *ctx, struct vd_device *vd,
			   void *karg, const struct vd_uarg *uarg)
{
	struct viaduct_cm_channel *c = karg;

	memset(c, 0, sizeof(*c));
	return vd_uobj_give_fd(vd_cm_channel_create_file(), uarg, c,
			       sizeof(*c), &c->fd);
}

long vd_ucm_create_id(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		      const struct vd_uarg *uarg)
{
	struct viaduct_cm_create_id *c = karg;
	struct vd_cm_channel *ch;
	struct vd_cm_owner owner = {
		.net = ctx->net,
		.dev = vd,
		.publish = ucm_publish,
		.arg = &ctx->objs,
	};
	struct vd_cm_id *id;
	long ret;

	ch = ucm_channel_fdget(c->channel_fd);
	if (IS_ERR(ch))
		return PTR_ERR(ch);
	id = vd_cm_id_create(&owner, ch, c->user_data);
	vd_cm_channel_put(ch);		/* the id holds its own */
	if (IS_ERR(id))
		return PTR_ERR(id);
	ret = vd_uobj_cm_id_add(&ctx->objs, id, &c->handle);
	if (ret) {
		vd_cm_id_destroy(id);
		return ret;
	}
	if (vd_uarg_reply(uarg, c, sizeof(*c))) {
		/* nobody was told the handle; another thread may have guessed */
		id = vd_uobj_cm_id_remove(&ctx->objs, c->handle, true);
		if (!IS_ERR(id))
			vd_cm_id_destroy(id);
		return -EFAULT;
	}
	return 0;
}

long vd_ucm_destroy_id(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		       const struct vd_uarg *uarg)
{
	struct viaduct_handle *h = karg;
	struct vd_cm_id *id;

	if (h->reserved)
		return -EINVAL;
	id = vd_uobj_cm_id_remove(&ctx->objs, h->handle, false);
	if (IS_ERR(id))
		return PTR_ERR(id);
	vd_cm_id_destroy(id);
	return 0;
}

long vd_ucm_listen(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		   const struct vd_uarg *uarg)
{
	struct viaduct_cm_listen *l = karg;
	struct vd_cm_id *id;
	long ret;

	ret = ucm_lookup(ctx, l->handle, NULL, &id, NULL);
	if (ret)
		return ret;
	ret = vd_cm_listen(id, &l->addr, l->backlog);
	vd_cm_id_put(id);
	if (!ret && vd_uarg_reply(uarg, l, sizeof(*l)))
		ret = -EFAULT;	/* listening nevertheless, as bind(2) would */
	return ret;
}

/*
 * Takes a descriptor out of the caller's table and hands the table's
 * reference to the caller (filp_close() is the caller's): named
 * file_close_fd() since 6.8 (Kbuild detects it as VD_HAVE_FILE_CLOSE_FD).
 */
static struct file *ucm_file_close_fd(unsigned int fd)
{
#ifdef VD_HAVE_FILE_CLOSE_FD
	return file_close_fd(fd);
#else
	return close_fd_get_file(fd);
#endif
}

/* The socket a conversion looks at, and the descriptor it came by. */
struct ucm_claim {
	int fd;
	struct file *file;	/* referenced by the conversion */
};

/*
 * struct vd_cm_convert.claim: the socket leaves the caller's descriptor
 * table, and the CM's reference must then be the only one. Called once
 * every other check passed. A descriptor that no longer names the file
 * (another thread of the caller closed or replaced it meanwhile) is
 * closed nevertheless: EBADF. A file someone else also holds (a dup()
 * made meanwhile, another thread's system call on it) is left to them:
 * EBUSY, and the caller's descriptor is gone.
 */
static int ucm_claim(void *arg, struct socket *sock)
{
	struct ucm_claim *c = arg;
	struct file *f;

	f = ucm_file_close_fd(c->fd);
	if (!f)
		return -EBADF;
	filp_close(f, current->files);
	if (f != c->file)
		return -EBADF;
	return file_count(c->file) == 1 ? 0 : -EBUSY;
}

/*
 * CM_CONVERT_SOCKET's socket: @fd must name a socket whose file nobody
 * else holds. Our reference and the descriptor table's make two: more is
 * a dup(), a fork(), an SCM_RIGHTS message in flight, io_uring or another
 * thread inside a system call on it, any of which could read or write the
 * stream once the CM runs MPA and FPDUs on it. The socket's file,
 * referenced, or an ERR_PTR; the descriptor is untouched.
 */
static struct socket *ucm_convert_sock(int fd, struct ucm_claim *claim)
{
	struct socket *sock;
	struct file *file;

	file = fget(fd);
	if (!file)
		return ERR_PTR(-EBADF);
	sock = sock_from_file(file);
	if (!sock) {
		fput(file);
		return ERR_PTR(-ENOTSOCK);
	}
	if (file_count(file) != 2) {
		fput(file);
		return ERR_PTR(-EBUSY);
	}
	claim->fd = fd;
	claim->file = file;
	return sock;
}

/*
 * CM_CONNECT, CM_ACCEPT and CM_CONVERT_SOCKET: the parameter block checked
 * and copied in, then the id and the QP looked up; @sockfd < 0 and @cv
 * NULL for all but CONVERT.
 */
static long ucm_with_qp(struct vd_uctx *ctx, u32 handle,
			const struct viaduct_cm_conn_param *param, u32 flags,
			u32 cmd, const struct viaduct_sockaddr *dst, s32 sockfd,
			struct vd_cm_convert *cv)
{
	struct ucm_claim claim;
	struct socket *sock;
	struct vd_cm_param *p;
	struct vd_cm_id *id;
	struct vd_qp *qp;
	long ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = ucm_param(param, flags, p);
	if (!ret)
		ret = ucm_lookup(ctx, handle, &param->qp_handle, &id, &qp);
	if (ret)
		goto out;
	switch (cmd) {
	case VIADUCT_IOCTL_CM_CONNECT:
		ret = vd_cm_connect(id, dst, qp, p);
		break;
	case VIADUCT_IOCTL_CM_ACCEPT:
		ret = vd_cm_accept(id, qp, p);
		break;
	default:
		sock = ucm_convert_sock(sockfd, &claim);
		if (IS_ERR(sock)) {
			ret = PTR_ERR(sock);
			break;
		}
		cv->claim = ucm_claim;
		cv->claim_arg = &claim;
		/* the CM takes over the socket's file reference */
		ret = vd_cm_convert(id, sock, qp, p, cv);
		break;
	}
	vd_qp_put(qp);
	vd_cm_id_put(id);
out:
	kfree(p);
	return ret;
}

long vd_ucm_connect(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		    const struct vd_uarg *uarg)
{
	struct viaduct_cm_connect *c = karg;

	if (c->reserved)
		return -EINVAL;
	return ucm_with_qp(ctx, c->handle, &c->param,
			   VIADUCT_CM_F_ALL & ~VIADUCT_CM_F_ACTIVE,
			   VIADUCT_IOCTL_CM_CONNECT, &c->dst, -1, NULL);
}

long vd_ucm_accept(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		   const struct vd_uarg *uarg)
{
	struct viaduct_cm_accept *a = karg;

	if (a->reserved)
		return -EINVAL;
	return ucm_with_qp(ctx, a->handle, &a->param,
			   VIADUCT_CM_F_ALL & ~VIADUCT_CM_F_ACTIVE,
			   VIADUCT_IOCTL_CM_ACCEPT, NULL, -1, NULL);
}

long vd_ucm_convert(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		    const struct vd_uarg *uarg)
{
	struct viaduct_cm_convert_socket *c = karg;
	struct vd_cm_convert cv = {};
	u8 *send = NULL, *recv = NULL;
	long ret;

	if (c->send_len > VIADUCT_CM_CONVERT_SEND_MAX ||
	    c->recv_len > VIADUCT_CM_CONVERT_RECV_MAX)
		return -EINVAL;
	if (c->send_len) {
		send = memdup_user(u64_to_user_ptr(c->send_data), c->send_len);
		if (IS_ERR(send))
			return PTR_ERR(send);
	}
	if (c->recv_len) {
		recv = memdup_user(u64_to_user_ptr(c->recv_data), c->recv_len);
		if (IS_ERR(recv)) {
			kfree(send);
			return PTR_ERR(recv);
		}
	}
	cv.send = send;
	cv.send_len = c->send_len;
	cv.recv = recv;
	cv.recv_len = c->recv_len;
	ret = ucm_with_qp(ctx, c->handle, &c->param, VIADUCT_CM_F_ALL,
			  VIADUCT_IOCTL_CM_CONVERT_SOCKET, NULL, c->sockfd, &cv);
	kfree(recv);
	kfree(send);
	return ret;
}

long vd_ucm_handoff(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		    const struct vd_uarg *uarg)
{
	struct viaduct_cm_handoff *h = karg;
	struct sockaddr_storage ss, *addr = NULL;
	struct vd_cm_id *id;
	int len;
	long ret;

	if (h->reserved || !h->addr.port)
		return -EINVAL;
	if (h->addr.family) {
		ret = vd_addr_from_user(&h->addr, &ss, &len);
		if (ret)
			return ret;
		addr = &ss;
	} else if (h->addr.scope_id || memchr_inv(h->addr.addr, 0,
						  sizeof(h->addr.addr))) {
		return -EINVAL;
	}
	ret = ucm_lookup(ctx, h->handle, NULL, &id, NULL);
	if (ret)
		return ret;
	ret = vd_cm_handoff(id, addr, h->addr.port);
	vd_cm_id_put(id);
	if (ret)
		return ret;
	/* the request is the other listener's: this id and its events go */
	id = vd_uobj_cm_id_remove(&ctx->objs, h->handle, true);
	if (!IS_ERR(id))
		vd_cm_id_destroy(id);
	return 0;
}

long vd_ucm_reject(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		   const struct vd_uarg *uarg)
{
	struct viaduct_cm_reject *r = karg;
	struct vd_cm_id *id;
	u8 *pd = NULL;
	long ret;

	if (r->private_data_len > VIADUCT_CM_PRIVATE_DATA_MAX)
		return -EINVAL;
	if (r->private_data_len) {
		pd = memdup_user(u64_to_user_ptr(r->private_data),
				 r->private_data_len);
		if (IS_ERR(pd))
			return PTR_ERR(pd);
	}
	ret = ucm_lookup(ctx, r->handle, NULL, &id, NULL);
	if (!ret) {
		ret = vd_cm_reject(id, pd, r->private_data_len);
		vd_cm_id_put(id);
	}
	kfree(pd);
	return ret;
}

long vd_ucm_disconnect(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		       const struct vd_uarg *uarg)
{
	struct viaduct_cm_disconnect *d = karg;
	struct vd_cm_id *id;
	long ret;

	if (d->flags & ~VIADUCT_CM_DISC_ABORT)
		return -EINVAL;
	ret = ucm_lookup(ctx, d->handle, NULL, &id, NULL);
	if (ret)
		return ret;
	ret = vd_cm_disconnect(id, d->flags & VIADUCT_CM_DISC_ABORT);
	vd_cm_id_put(id);
	return ret;
}

long vd_ucm_ack(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		const struct vd_uarg *uarg)
{
	struct viaduct_cm_ack *a = karg;
	struct vd_cm_id *id;
	long ret;

	ret = ucm_lookup(ctx, a->handle, NULL, &id, NULL);
	if (ret)
		return ret;
	ret = vd_cm_ack(id, a->seq);
	vd_cm_id_put(id);
	return ret;
}
