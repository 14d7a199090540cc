// SPDX-License-Identifier: GPL-2.0
/*
 * listen_delay.so: preloaded into an rdma_cm server (LD_PRELOAD), delays
 * its rdma_listen() number $VD_LISTEN_DELAY_CALL (1 if unset) by
 * $VD_LISTEN_DELAY_MS milliseconds, then calls the real one.
 *
 * perftest -R connects twice: first an rdma_cm connection of its own for
 * the out-of-band exchange, then, after that exchange, the test's; its
 * server listens anew for the second (its second rdma_listen()). A client
 * whose second rdma_connect() comes before that listen is refused
 * (REJECTED, -ECONNREFUSED; on siw rdma_connect() fails) and goes through
 * its retry path. A loaded host opens that window by chance; this opens
 * it every time.
 *
 * Built against rdma-core's headers; rdma_listen at RDMACM_1.0, the
 * version programs import (listen_delay.map).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

#include <rdma/rdma_cma.h>

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	static int calls;
	int (*real)(struct rdma_cm_id *cm_id, int backlog);
	const char *ms = getenv("VD_LISTEN_DELAY_MS");
	const char *which = getenv("VD_LISTEN_DELAY_CALL");

	*(void **)&real = dlsym(RTLD_NEXT, "rdma_listen");
	if (!real)
		abort();
	if (ms && ++calls == (which ? atoi(which) : 1)) {
		long v = strtol(ms, NULL, 10);
		struct timespec ts = { .tv_sec = v / 1000, .tv_nsec = v % 1000 * 1000000 };

		while (nanosleep(&ts, &ts))
			;
	}
	return real(id, backlog);
}
