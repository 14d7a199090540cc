// SPDX-License-Identifier: GPL-2.0
/*
 * Helper of res_show_test.sh, not a test: opens /dev/viaduct, selects the
 * device named by argv[1] and creates one PD, one 64 KiB MR, one CQ and one
 * QP (polled doorbell, SQ and RQ on the CQ), an SRQ (limit 4 armed) and a
 * second QP on it, plus argv[2] extra PDs (0 if absent) to make the
 * resource dump span many messages. It then prints
 *
 *   ready pid PID pd H mr H cq H qp H qpn N srq H srqqp H srqwr N
 *
 * on stdout and sleeps until it is killed. Exit status 1 and a message on
 * stderr if anything fails.
 */
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include "vd_util.h"

#define HOLDER_MR_LEN	(64 * 1024)

static int die(const char *what, int err)
{
	fprintf(stderr, "res_holder: %s: %s\n", what, strerror(-err));
	return 1;
}

int main(int argc, char **argv)
{
	struct viaduct_select_device sel = {};
	struct viaduct_create_qp qp = {}, sqp = {};
	struct viaduct_create_srq srq = {};
	struct viaduct_modify_srq msrq = {};
	struct viaduct_create_cq cq = {};
	struct viaduct_reg_mr mr = {};
	struct viaduct_handle pd = {}, extra;
	unsigned long i, nextra;
	void *buf;
	int fd, r;

	if (argc < 2 || strlen(argv[1]) >= sizeof(sel.name)) {
		fprintf(stderr, "usage: res_holder DEVICE [EXTRA_PDS]\n");
		return 2;
	}
	nextra = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;

	fd = vd_open();
	if (fd < 0)
		return die("open " VD_DEV_PATH, -errno);
	strcpy(sel.name, argv[1]);
	r = vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel);
	if (r)
		return die("SELECT_DEVICE", r);
	r = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_PD, &pd);
	if (r)
		return die("CREATE_PD", r);

	buf = mmap(NULL, HOLDER_MR_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return die("mmap", -errno);
	mr.addr = (uintptr_t)buf;
	mr.length = HOLDER_MR_LEN;
	mr.pd_handle = pd.handle;
	mr.access = VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_READ;
	r = vd_ioctl(fd, VIADUCT_IOCTL_REG_MR, &mr);
	if (r)
		return die("REG_MR", r);

	cq.entries = 64;
	cq.channel_fd = -1;
	r = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_CQ, &cq);
	if (r)
		return die("CREATE_CQ", r);

	qp.pd_handle = pd.handle;
	qp.send_cq = cq.handle;
	qp.recv_cq = cq.handle;
	qp.flags = VIADUCT_QP_F_POLLED;
	qp.reliability = VIADUCT_RELIABILITY_RELIABLE_DELIVERY;
	qp.sq_depth = 16;
	qp.rq_depth = 16;
	qp.max_send_sge = 1;
	qp.max_recv_sge = 1;
	r = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_QP, &qp);
	if (r)
		return die("CREATE_QP", r);

	/* an SRQ with its limit armed, and a second QP on it */
	srq.pd_handle = pd.handle;
	srq.depth = 32;
	srq.max_sge = 1;
	r = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_SRQ, &srq);
	if (r)
		return die("CREATE_SRQ", r);
	msrq.handle = srq.handle;
	msrq.mask = VIADUCT_SRQ_ATTR_LIMIT;
	msrq.limit = 4;
	r = vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_SRQ, &msrq);
	if (r)
		return die("MODIFY_SRQ", r);
	sqp.pd_handle = pd.handle;
	sqp.send_cq = cq.handle;
	sqp.recv_cq = cq.handle;
	sqp.srq_handle = srq.handle;
	sqp.flags = VIADUCT_QP_F_POLLED;
	sqp.reliability = VIADUCT_RELIABILITY_RELIABLE_DELIVERY;
	sqp.sq_depth = 16;
	sqp.max_send_sge = 1;
	r = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_QP, &sqp);
	if (r)
		return die("CREATE_QP (on the SRQ)", r);

	for (i = 0; i < nextra; i++) {
		memset(&extra, 0, sizeof(extra));
		r = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_PD, &extra);
		if (r)
			return die("CREATE_PD (extra)", r);
	}

	printf("ready pid %d pd %u mr %u cq %u qp %u qpn %u srq %u srqqp %u srqwr %u\n",
	       (int)getpid(), pd.handle, mr.handle, cq.handle, qp.handle, qp.qpn,
	       srq.handle, sqp.handle, srq.depth);
	fflush(stdout);
	for (;;)
		pause();
}
