// SPDX-License-Identifier: GPL-2.0
/*
 * Writes the seed corpora of the fuzz targets (tools/fuzz/corpus/<target>/)
 * with the module's own encoders: one valid FPDU stream per opcode with
 * and without CRC, a Terminate, Request and Reply frames of both MPA
 * revisions, and QP attributes with well-formed SQ and RQ slots. The
 * fuzzers start from valid inputs and mutate inward.
 *   seeds <corpus dir>
 */
#include <sys/stat.h>
#include <viaduct/viaduct-abi.h>

#include "../../kernel/iwarp.h"
#include "../../kernel/mpa.h"
#include "../../kernel/qp.h"
#include "../../kernel/terminate.h"
#include "../../kernel/viaduct.h"

static const char *dir;

static void put(const char *target, const char *name, const void *p, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* An FPDU of @hdr with @plen payload bytes at @out; its length. */
static size_t fpdu(u8 *out, const struct vd_iw_hdr *hdr, u32 plen, bool crc)
{
	int h = vd_iw_build(out + VD_MPA_LEN_SIZE, VD_MPA_ULPDU_MAX, hdr);
	u32 i;

	if (h < 0)
		exit(1);
	for (i = 0; i < plen; i++)
		out[VD_MPA_LEN_SIZE + h + i] = (u8)(i * 7);
	return vd_mpa_fpdu_seal(out, 65536 + 8, h + plen, crc);
}

static void frames(void)
{
	static const u8 ops[] = { VD_OP_WRITE, VD_OP_READ_REQ, VD_OP_READ_RESP, VD_OP_SEND,
				  VD_OP_SEND_INV, VD_OP_SEND_SE, VD_OP_SEND_SE_INV, VD_OP_IMM,
				  VD_OP_IMM_SE, VD_OP_SEND_IMM, VD_OP_SEND_SE_IMM };
	static u8 buf[1 + 3 * (65536 + 8)];
	char name[64];
	size_t i, len;
	int crc;

	for (crc = 0; crc < 2; crc++) {
		for (i = 0; i < sizeof(ops); i++) {
			struct vd_iw_hdr hdr = {
				.opcode = ops[i], .last = true, .stag = 0x1005a,
				.to = 0x7f0000001000ULL, .msn = 1, .inv_stag = 0x2005a,
				.imm = 0xdeadbeef, .sink_stag = 0x3005a, .sink_to = 0x1000,
				.size = 4096, .src_stag = 0x1005a, .src_to = 0x7f0000002000ULL,
			};
			u32 plen = vd_iw_opcode_tagged(ops[i]) || ops[i] == VD_OP_SEND ? 37 : 0;

			buf[0] = crc;
			len = 1 + fpdu(buf + 1, &hdr, plen, crc);
			/* a second segment behind the first, where one may follow */
			if (plen) {
				hdr.last = false;
				len += fpdu(buf + len, &hdr, plen, crc);
			}
			snprintf(name, sizeof(name), "op%x-%s", ops[i], crc ? "crc" : "nocrc");
			put("frame", name, buf, len);
		}
		{
			u8 t[VD_TERM_ULPDU_MAX];
			u8 bad[VD_HDR_TAGGED];
			struct vd_iw_hdr w = { .opcode = VD_OP_WRITE, .last = true, .stag = 1 };
			int n;

			vd_iw_build(bad, sizeof(bad), &w);
			n = vd_term_build(t, sizeof(t), 0x1100, 1, bad, sizeof(bad), 100);
			buf[0] = crc;
			memcpy(buf + 1 + VD_MPA_LEN_SIZE, t, n);
			len = 1 + vd_mpa_fpdu_seal(buf + 1, 65536 + 8, n, crc);
			put("frame", crc ? "terminate-crc" : "terminate-nocrc", buf, len);
		}
	}
}

static void mpa(void)
{
	static const u32 flags[] = { 0, VIADUCT_CM_F_CRC, VIADUCT_CM_F_MPA_V1,
				     VIADUCT_CM_F_P2P | VIADUCT_CM_F_CRC };
	u8 buf[5 + 24];
	char name[64];
	size_t i;
	int reply, n;

	for (i = 0; i < 4; i++) {
		for (reply = 0; reply < 2; reply++) {
			struct vd_mpa_ours ours = { .flags = flags[i], .ird = 4, .ord = 4 };
			struct vd_mpa_info info;

			vd_mpa_request(&ours, &info);
			info.reply = reply;
			buf[0] = flags[i];
			buf[1] = 0;
			buf[2] = 4;
			buf[3] = 0;
			buf[4] = 4;
			n = vd_mpa_rr_build(buf + 5, sizeof(buf) - 5, &info);
			if (n < 0)
				exit(1);
			snprintf(name, sizeof(name), "%s-%zu", reply ? "reply" : "request", i);
			put("mpa", name, buf, 5 + n);
		}
	}
}

static void wqe(void)
{
	u8 buf[sizeof(struct viaduct_create_qp) + 2 * 512] = { 0 };
	struct viaduct_create_qp a = {
		.reliability = VIADUCT_RELIABILITY_RELIABLE_DELIVERY,
		.sq_depth = 16, .rq_depth = 16, .max_send_sge = 2, .max_recv_sge = 2,
		.max_inline = 64,
	};
	struct viaduct_sqe *s;
	struct viaduct_sge *g;
	struct viaduct_rqe *r;
	struct vd_qp_caps c;

	if (vd_qp_caps(&a, &c))
		exit(1);
	memcpy(buf, &a, sizeof(a));
	s = (void *)(buf + sizeof(a));
	s->opcode = VIADUCT_OP_RDMA_WRITE;
	s->num_sge = 2;
	s->remote_stag = 0x1005a;
	s->remote_addr = 0x1000;
	g = (void *)(s + 1);
	g[0].length = 100;
	g[1].length = 4000;
	r = (void *)(buf + sizeof(a) + c.sq_wqe_size);
	r->num_sge = 1;
	((struct viaduct_sge *)(r + 1))->length = 65536;
	put("wqe", "write-and-recv", buf, sizeof(a) + c.sq_wqe_size + c.rq_wqe_size);
	s->opcode = VIADUCT_OP_SEND;
	s->flags = VIADUCT_SQE_INLINE;
	s->num_sge = 0;
	s->remote_stag = 0;
	s->remote_addr = 0;
	s->length = 48;
	put("wqe", "inline-send", buf, sizeof(a) + c.sq_wqe_size);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seeds <corpus dir>\n");
		return 2;
	}
	dir = argv[1];
	mkdir(dir, 0755);
	frames();
	mpa();
	wqe();
	return 0;
}
