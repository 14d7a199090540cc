// SPDX-License-Identifier: GPL-2.0
/*
 * cq_events: the two ways of waiting for completions of the OFED verbs
 * reference's ibv_get_cq_event() examples, written from its description.
 *
 *   cq_events server PORT          receives 2 x COUNT messages
 *   cq_events client SERVER PORT   sends them, waits for the server's
 *                                  answer that it has them all, disconnects
 *
 * The server takes the first COUNT in blocking mode (arm, ibv_get_cq_event,
 * ack, re-arm, drain with ibv_poll_cq), the rest in non-blocking mode
 * (O_NONBLOCK on the channel's descriptor, poll(2) for POLLIN, then
 * ibv_get_cq_event), acknowledging every event before it destroys the CQ.
 *
 * Build: cc -o cq_events cq_events.c $(pkg-config --cflags --libs viaduct-verbs)
 */
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

#include "connect.h"

enum { COUNT = 8, DEPTH = 2 * COUNT };

static char bufs[2 * COUNT][64];

/* Drains the CQ: returns the receives it found; any error status is fatal. */
static int drain(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n = 0, r;

	while ((r = ibv_poll_cq(cq, 1, &wc)) == 1) {
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "completion %s\n", ibv_wc_status_str(wc.status));
			exit(1);
		}
		n += wc.opcode == IBV_WC_RECV;
	}
	if (r < 0)
		die("ibv_poll_cq");
	return n;
}

static int server(const char *port)
{
	struct conn c = {};
	struct ibv_mr *mr;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	unsigned events = 0;
	int got = 0, blocking, i;

	conn_listen(&c, port, DEPTH);
	mr = ibv_reg_mr(c.pd, bufs, sizeof(bufs), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	for (i = 0; i < 2 * COUNT; i++) {
		struct ibv_sge sge = { (uintptr_t)bufs[i], sizeof(bufs[i]), mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(c.id->qp, &wr, &bad))
			die("ibv_post_recv");
	}
	conn_accept(&c);

	/* (a) blocking. Arming asks for an event at the next completion, not
	 * for those already there: drain once after arming, then sleep. */
	if (ibv_req_notify_cq(c.cq, 0))
		die("ibv_req_notify_cq");
	got += drain(c.cq);
	while (got < COUNT) {
		if (ibv_get_cq_event(c.ch, &ev_cq, &ev_ctx))
			die("ibv_get_cq_event");
		if (ev_cq != c.cq) {
			fprintf(stderr, "event for an unknown CQ\n");
			return 1;
		}
		ibv_ack_cq_events(ev_cq, 1);
		if (ibv_req_notify_cq(c.cq, 0))
			die("ibv_req_notify_cq");
		got += drain(c.cq);
	}
	printf("blocking mode: %d messages\n", got);
	blocking = got;

	/* (b) non-blocking */
	if (fcntl(c.ch->fd, F_SETFL, fcntl(c.ch->fd, F_GETFL) | O_NONBLOCK) < 0)
		die("fcntl");
	got += drain(c.cq);	/* what came since the last arm */
	while (got < 2 * COUNT) {
		struct pollfd p = { .fd = c.ch->fd, .events = POLLIN };
		int r = poll(&p, 1, 5000);

		if (r < 0)
			die("poll");
		if (r == 0) {
			fprintf(stderr, "no completion event within 5 s\n");
			return 1;
		}
		if (ibv_get_cq_event(c.ch, &ev_cq, &ev_ctx)) {
			if (errno == EAGAIN)
				continue;
			die("ibv_get_cq_event");
		}
		events++;
		if (ibv_req_notify_cq(c.cq, 0))
			die("ibv_req_notify_cq");
		got += drain(c.cq);
	}
	ibv_ack_cq_events(c.cq, events);
	printf("non-blocking mode: %d messages\n", got - blocking);
	printf("received %d messages\n", got);
	{
		/* tell the client; it disconnects once it has the answer */
		struct ibv_sge sge = { (uintptr_t)bufs[0], 1, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;
		int r;

		if (ibv_post_send(c.id->qp, &wr, &bad))
			die("ibv_post_send");
		while ((r = ibv_poll_cq(c.cq, 1, &wc)) == 0 || (r == 1 && wc.wr_id != 100))
			usleep(1000);
		if (r < 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "the answer failed\n");
			return 1;
		}
	}
	ibv_dereg_mr(mr);
	conn_close(&c, 0);
	return 0;
}

static int client(const char *server, const char *port)
{
	struct conn c = {};
	struct ibv_mr *mr;
	int i, done = 0;

	static char answer[64];
	struct ibv_mr *amr;
	struct ibv_sge asge;
	struct ibv_recv_wr rwr = { .wr_id = 100, .sg_list = &asge, .num_sge = 1 }, *rbad;
	int answered = 0;

	conn_prepare(&c, server, port, DEPTH);
	mr = ibv_reg_mr(c.pd, bufs, sizeof(bufs), IBV_ACCESS_LOCAL_WRITE);
	amr = ibv_reg_mr(c.pd, answer, sizeof(answer), IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !amr)
		die("ibv_reg_mr");
	/* the server's answer that it has every message */
	asge = (struct ibv_sge){ (uintptr_t)answer, sizeof(answer), amr->lkey };
	if (ibv_post_recv(c.id->qp, &rwr, &rbad))
		die("ibv_post_recv");
	conn_connect(&c);
	for (i = 0; i < 2 * COUNT; i++) {
		struct ibv_sge sge = { (uintptr_t)bufs[i], sizeof(bufs[i]), mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		snprintf(bufs[i], sizeof(bufs[i]), "message %d", i);
		if (ibv_post_send(c.id->qp, &wr, &bad))
			die("ibv_post_send");
		/* pace the sends so that both of the server's modes see some */
		while (done <= i) {
			struct ibv_wc wc;
			int r = ibv_poll_cq(c.cq, 1, &wc);

			if (r < 0 || (r == 1 && wc.status != IBV_WC_SUCCESS)) {
				fprintf(stderr, "send failed\n");
				return 1;
			}
			if (r == 1 && wc.opcode == IBV_WC_RECV)
				answered = 1;
			else
				done += r;
			if (!r)
				usleep(1000);
		}
	}
	printf("sent %d messages\n", done);
	while (!answered) {
		struct ibv_wc wc;
		int r = ibv_poll_cq(c.cq, 1, &wc);

		if (r < 0 || (r == 1 && wc.status != IBV_WC_SUCCESS)) {
			fprintf(stderr, "no answer\n");
			return 1;
		}
		answered = r == 1 && wc.opcode == IBV_WC_RECV;
		if (!r)
			usleep(1000);
	}
	ibv_dereg_mr(mr);
	ibv_dereg_mr(amr);
	conn_close(&c, 1);
	return 0;
}

int main(int argc, char *argv[])
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: cq_events server PORT | cq_events client SERVER PORT\n");
	return 2;
}
