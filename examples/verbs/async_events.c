// SPDX-License-Identifier: GPL-2.0
/*
 * async_events: the OFED verbs reference's ibv_get_async_event() example
 * (non-blocking: O_NONBLOCK on the context's async_fd, poll(2), get, ack),
 * written from its description, with an error to report.
 *
 *   async_events server PORT          advertises a read-only buffer
 *   async_events client SERVER PORT   RDMA Writes to it
 *
 * The client's Write violates the server's access rights: the server's QP
 * gets an affiliated asynchronous event (a QP access error or fatal
 * error), which the server reads, prints with ibv_event_type_str() and
 * acknowledges before it destroys the QP. On iWARP the client's Write
 * completes once it is sent; the server's Terminate then ends the
 * connection.
 *
 * Build: cc -o async_events async_events.c $(pkg-config --cflags --libs viaduct-verbs)
 */
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

#include "connect.h"

struct adv {
	uint64_t va;
	uint32_t rkey;
} __attribute__((packed));

static char buf[4096];

static int server(const char *port)
{
	struct conn c = {};
	struct ibv_mr *mr;
	struct ibv_async_event ev;
	struct adv adv;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
				  .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_context *ctx;
	int flags;

	conn_listen(&c, port, 4);
	ctx = c.id->verbs;
	/* remote read only: a remote write is an access violation */
	mr = ibv_reg_mr(c.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("ibv_reg_mr");
	conn_accept(&c);
	adv.va = htobe64((uintptr_t)buf);
	adv.rkey = htobe32(mr->rkey);
	memcpy(buf + 2048, &adv, sizeof(adv));
	sge = (struct ibv_sge){ (uintptr_t)(buf + 2048), sizeof(adv), mr->lkey };
	if (ibv_post_send(c.id->qp, &wr, &bad))
		die("ibv_post_send");

	flags = fcntl(ctx->async_fd, F_GETFL);
	if (fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)
		die("fcntl");
	for (;;) {
		struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
		int r = poll(&p, 1, 10000);

		if (r < 0)
			die("poll");
		if (r == 0) {
			fprintf(stderr, "no asynchronous event within 10 s\n");
			return 1;
		}
		if (ibv_get_async_event(ctx, &ev)) {
			if (errno == EAGAIN)
				continue;
			die("ibv_get_async_event");
		}
		break;
	}
	printf("async event: %s (%d)%s\n", ibv_event_type_str(ev.event_type), ev.event_type,
	       ev.element.qp == c.id->qp ? " on the connection's QP" : "");
	if (ev.element.qp != c.id->qp) {
		ibv_ack_async_event(&ev);
		return 1;
	}
	ibv_ack_async_event(&ev);
	/* the violation ends the connection; the client's side sees it too */
	rdma_disconnect(c.id);
	ibv_dereg_mr(mr);
	conn_close(&c, 0);
	return 0;
}

static int client(const char *server, const char *port)
{
	struct conn c = {};
	struct ibv_mr *mr;
	struct adv adv;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	int n, tries;

	conn_prepare(&c, server, port, 4);
	mr = ibv_reg_mr(c.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	/* before connecting: the server sends its advertisement at once */
	sge = (struct ibv_sge){ (uintptr_t)buf, sizeof(adv), mr->lkey };
	if (ibv_post_recv(c.id->qp, &rwr, &rbad))
		die("ibv_post_recv");
	conn_connect(&c);
	for (tries = 0; (n = ibv_poll_cq(c.cq, 1, &wc)) == 0 && tries < 1000; tries++)
		usleep(10000);
	if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) {
		fprintf(stderr, "no advertisement\n");
		return 1;
	}
	memcpy(&adv, buf, sizeof(adv));
	sge = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	wr.wr.rdma.remote_addr = be64toh(adv.va);
	wr.wr.rdma.rkey = be32toh(adv.rkey);
	if (ibv_post_send(c.id->qp, &wr, &bad))
		die("ibv_post_send");
	for (tries = 0; (n = ibv_poll_cq(c.cq, 1, &wc)) == 0 && tries < 1000; tries++)
		usleep(10000);
	if (n != 1 || wc.wr_id != 9) {
		fprintf(stderr, "no completion for the Write\n");
		return 1;
	}
	/* On iWARP a Write completes once sent: the responder's Terminate
	 * ends the connection afterwards. */
	printf("RDMA Write to a read-only buffer: %s\n", ibv_wc_status_str(wc.status));
	ibv_dereg_mr(mr);
	conn_close(&c, 0);
	printf("disconnected by the server\n");
	return 0;
}

int main(int argc, char *argv[])
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: async_events server PORT | async_events client SERVER PORT\n");
	return 2;
}
