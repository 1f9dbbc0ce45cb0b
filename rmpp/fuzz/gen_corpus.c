/* SPDX-License-Identifier: BSD-3-Clause */
/* gen_corpus.c - write the seed corpus for fuzz_rmpp_hdr: one file per
 * valid packet kind, plus a few invalid ones.  Usage: rmpp-gen-corpus DIR */
#include "rmpp_wire.h"

#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

static const char *dir;
static uint8_t buf[70000];

static void put(const char *name, const uint8_t *b, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return;
	}
	fwrite(b, 1, len, f);
	fclose(f);
}

static long build(struct rmpp_pkt *p, size_t data_len)
{
	static uint8_t data[9000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	struct iovec iov = {data, sizeof(data)};
	p->data_len = (uint32_t)data_len;
	return rmpp_pkt_build(buf, sizeof(buf), p, &iov, 1, 0);
}

static struct rmpp_pkt base(unsigned type)
{
	struct rmpp_pkt p;
	memset(&p, 0, sizeof(p));
	p.type = (uint8_t)type;
	p.src_ep = 1;
	p.dst_ep = 2;
	p.src_epoch = 0x01020304;
	p.dst_epoch = 0x05060708;
	p.psn = 0xffffff9c;
	p.credit = 64;
	p.tsval = 100;
	p.tsecr = 50;
	if (type == RMPP_PKT_DATA || type == RMPP_PKT_ACK || type == RMPP_PKT_PROBE) {
		p.flags = RMPP_F_ACK_VALID | RMPP_F_CRC;
		p.ack_psn = 17;
	}
	if (type == RMPP_PKT_DATA)
		p.flags |= RMPP_F_MSG;
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	static const char hdr[104] = "portals header";
	struct rmpp_pkt p;
	long l;

	p = base(RMPP_PKT_HELLO);
	p.flags = RMPP_F_CRC;
	p.dst_epoch = 0;
	p.hello.mtu = 9000;
	p.hello.hflags = RMPP_HELLO_F_CRC;
	l = build(&p, 0);
	put("hello", buf, (size_t)l);
	p.type = RMPP_PKT_HELLO_ACK;
	p.dst_epoch = 9;
	l = build(&p, 0);
	put("hello_ack", buf, (size_t)l);

	p = base(RMPP_PKT_DATA);
	p.m.mop = RMPP_MOP_EAGER_FIRST;
	p.m.msg_len = 300;
	p.m.ptlhdr_len = sizeof(hdr);
	p.ptlhdr = (const uint8_t *)hdr;
	p.sack_n = 2;
	p.sack[0] = (struct rmpp_sack){5, 6};
	p.sack[1] = (struct rmpp_sack){8, 12};
	p.flags |= RMPP_F_DSACK;
	l = build(&p, 200);
	put("eager_first_sack_dsack", buf, (size_t)l);
	memset(buf + l, 0, 60);
	put("eager_first_padded", buf, (size_t)l + 60);
	put("eager_first_truncated", buf, (size_t)l - 7);
	buf[50] ^= 4;
	put("eager_first_bad_crc", buf, (size_t)l);

	p = base(RMPP_PKT_DATA);
	p.m.mop = RMPP_MOP_EAGER_CONT;
	p.m.msg_len = 300;
	p.m.offset = 200;
	l = build(&p, 100);
	put("eager_cont", buf, (size_t)l);

	p = base(RMPP_PKT_DATA);
	p.m.mop = RMPP_MOP_RTS;
	p.m.msg_len = 1 << 20;
	p.m.ptlhdr_len = sizeof(hdr);
	p.ptlhdr = (const uint8_t *)hdr;
	l = build(&p, 8800);
	put("rts", buf, (size_t)l);

	p = base(RMPP_PKT_DATA);
	p.m.mop = RMPP_MOP_CTS;
	p.m.msg_len = 1 << 20;
	p.m.arg = 100000;
	p.m.offset = 50000;
	l = build(&p, 0);
	put("cts", buf, (size_t)l);

	p = base(RMPP_PKT_DATA);
	p.m.mop = RMPP_MOP_RDATA;
	p.m.msg_len = 1 << 20;
	p.m.offset = 8800;
	p.flags |= RMPP_F_RETX | RMPP_F_ACK_REQ;
	l = build(&p, 8800);
	put("rdata_retx", buf, (size_t)l);

	p = base(RMPP_PKT_DATA);
	p.m.mop = RMPP_MOP_DONE;
	p.m.msg_len = 1 << 20;
	p.m.arg = 100000;
	l = build(&p, 0);
	put("done", buf, (size_t)l);

	p = base(RMPP_PKT_ACK);
	p.sack_n = 4;
	for (unsigned i = 0; i < 4; i++)
		p.sack[i] = (struct rmpp_sack){20 + 10 * i, 25 + 10 * i};
	l = build(&p, 0);
	put("ack_4sack", buf, (size_t)l);

	p = base(RMPP_PKT_ACK);
	p.flags |= RMPP_F_MSG;
	p.m.mop = RMPP_MOP_RNR;
	p.m.arg = 2000;
	l = build(&p, 0);
	put("ack_rnr", buf, (size_t)l);

	p = base(RMPP_PKT_PROBE);
	p.flags |= RMPP_F_ACK_REQ;
	l = build(&p, 0);
	put("probe", buf, (size_t)l);

	p = base(RMPP_PKT_RESET);
	p.flags = RMPP_F_CRC;
	l = build(&p, 0);
	put("reset", buf, (size_t)l);
	buf[0] = (uint8_t)((2 << 4) | RMPP_PKT_RESET);
	put("bad_version", buf, (size_t)l);

	p = base(RMPP_PKT_CLOSE);
	l = build(&p, 0);
	put("close_nocrc", buf, (size_t)l);

	put("short", buf, 20);
	memset(buf, 0xff, 64);
	put("all_ones", buf, 64);
	return 0;
}
