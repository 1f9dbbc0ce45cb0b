/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wire.c - rmpp wire format: pack/parse round trips, rejection of every
 * malformed case, CRC32C known vectors. */
#include "rmpp_wire.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/uio.h>

static uint8_t frame[70000];

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static struct rmpp_pkt base_data(void)
{
	struct rmpp_pkt p;
	memset(&p, 0, sizeof(p));
	p.type = RMPP_PKT_DATA;
	p.flags = RMPP_F_ACK_VALID | RMPP_F_MSG;
	p.dst_ep = 7;
	p.src_ep = 9;
	p.src_epoch = 0x11111111;
	p.dst_epoch = 0x22222222;
	p.psn = 0xfffffff0;
	p.ack_psn = 0x00000010;
	p.credit = 77;
	p.tsval = 1234;
	p.tsecr = 5678;
	p.m.msn = 42;
	p.m.mop = RMPP_MOP_EAGER_FIRST;
	p.m.msg_len = 100;
	return p;
}

static const char ptlhdr[] = "portals-header-bytes";
static char data[100];

/* A DATA/EAGER_FIRST frame with 2 SACK blocks, a header and 60 data bytes. */
static long build_data(unsigned flags_extra)
{
	struct rmpp_pkt p = base_data();
	p.flags |= (uint8_t)flags_extra;
	p.sack_n = 2;
	p.sack[0].start = 0xfffffffe;
	p.sack[0].end = 3; /* wraps */
	p.sack[1].start = 10;
	p.sack[1].end = 12;
	p.m.ptlhdr_len = sizeof(ptlhdr);
	p.ptlhdr = (const uint8_t *)ptlhdr;
	p.data_len = 60;
	struct iovec iov[2] = {{data, 30}, {data + 30, 70}};
	return rmpp_pkt_build(frame, sizeof(frame), &p, iov, 2, 0);
}

START_TEST(t_crc32c_vectors)
{
	ck_assert_uint_eq(rmpp_crc32c(0, "123456789", 9), 0xe3069283);
	ck_assert_uint_eq(rmpp_crc32c_sw(0, "123456789", 9), 0xe3069283);
	ck_assert_uint_eq(rmpp_crc32c(0, "", 0), 0);
	/* RFC 3720 B.4: 32 bytes of zeros / ones / increasing / decreasing */
	uint8_t b[32];
	memset(b, 0, 32);
	ck_assert_uint_eq(rmpp_crc32c(0, b, 32), 0x8a9136aa);
	memset(b, 0xff, 32);
	ck_assert_uint_eq(rmpp_crc32c(0, b, 32), 0x62a8ab43);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	ck_assert_uint_eq(rmpp_crc32c(0, b, 32), 0x46dd794e);
	ck_assert_uint_eq(rmpp_crc32c_sw(0, b, 32), 0x46dd794e);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	ck_assert_uint_eq(rmpp_crc32c(0, b, 32), 0x113fdb5c);
	/* chaining and unaligned starts agree with the software path */
	uint8_t big[1037];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 31 + 7);
	for (size_t off = 0; off < 9; off++) {
		uint32_t whole = rmpp_crc32c_sw(0, big + off, sizeof(big) - off);
		ck_assert_uint_eq(rmpp_crc32c(0, big + off, sizeof(big) - off), whole);
		uint32_t part = rmpp_crc32c(0, big + off, 100);
		ck_assert_uint_eq(rmpp_crc32c(part, big + off + 100, sizeof(big) - off - 100),
				  whole);
	}
}
END_TEST

/* The carry-less-multiply fold and the copying variant agree with the table
 * CRC for every length around the fold's block sizes, any alignment of source
 * and destination, and a chained starting register; the copy is exact and
 * writes nothing outside [dst, dst + len). */
START_TEST(t_crc32c_fold_copy)
{
	static uint8_t src[20000], dst[20100];
	uint32_t seed = 12345;
	for (size_t i = 0; i < sizeof(src); i++) {
		seed = seed * 1103515245u + 12345u;
		src[i] = (uint8_t)(seed >> 16);
	}
	const size_t lens[] = {0,    1,    15,   16,   63,   64,   255,   256,
	                       257,  300,  511,  512,  513,  1023, 1024,  1500,
	                       4095, 4096, 8191, 8960, 9000, 9001, 16384, 19900};
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
		for (size_t off = 0; off < 3; off++) {
			size_t len = lens[li], doff = (off * 7) % 64;
			uint32_t start = off ? 0xdeadbeefu * (uint32_t)off : 0;
			uint32_t want = rmpp_crc32c_sw(start, src + off, len);
			ck_assert_uint_eq(rmpp_crc32c(start, src + off, len), want);
			ck_assert_uint_eq(rmpp_crc32c_fold(start, src + off, len), want);
			ck_assert_uint_eq(rmpp_crc32c_word(start, src + off, len), want);
			memset(dst, 0xa5, sizeof(dst));
			ck_assert_uint_eq(rmpp_crc32c_copy(start, dst + doff, src + off, len),
			                  want);
			ck_assert_int_eq(memcmp(dst + doff, src + off, len), 0);
			for (size_t i = 0; i < doff; i++)
				ck_assert_uint_eq(dst[i], 0xa5);
			ck_assert_uint_eq(dst[doff + len], 0xa5);
		}
	printf("crc32c: fold %s\n",
	       rmpp_crc32c_fold_available() ? "in use (VPCLMULQDQ)" : "not available here");
}
END_TEST

START_TEST(t_round_trip_data)
{
	for (int i = 0; i < 100; i++)
		data[i] = (char)(i + 1);
	for (int crc = 0; crc < 2; crc++) {
		long len = build_data(crc ? RMPP_F_CRC : 0);
		ck_assert_int_eq(len, 40 + 16 + 24 + (long)sizeof(ptlhdr) + 60);
		struct rmpp_pkt q;
		ck_assert_int_eq(rmpp_pkt_parse(frame, (size_t)len,
						RMPP_PARSE_VERIFY_CRC |
							(crc ? RMPP_PARSE_REQUIRE_CRC : 0),
						&q),
				 0);
		ck_assert_uint_eq(frame[0] >> 4, RMPP_WIRE_VERSION);
		ck_assert_uint_eq(q.type, RMPP_PKT_DATA);
		ck_assert_uint_eq(q.flags & RMPP_F_SACK, RMPP_F_SACK);
		ck_assert_uint_eq(q.dst_ep, 7);
		ck_assert_uint_eq(q.src_ep, 9);
		ck_assert_uint_eq(q.src_epoch, 0x11111111);
		ck_assert_uint_eq(q.dst_epoch, 0x22222222);
		ck_assert_uint_eq(q.psn, 0xfffffff0);
		ck_assert_uint_eq(q.ack_psn, 0x10);
		ck_assert_uint_eq(q.credit, 77);
		ck_assert_uint_eq(q.tsval, 1234);
		ck_assert_uint_eq(q.tsecr, 5678);
		ck_assert_uint_eq(q.sack_n, 2);
		ck_assert_uint_eq(q.sack[0].start, 0xfffffffe);
		ck_assert_uint_eq(q.sack[0].end, 3);
		ck_assert_uint_eq(q.sack[1].start, 10);
		ck_assert_uint_eq(q.m.msn, 42);
		ck_assert_uint_eq(q.m.mop, RMPP_MOP_EAGER_FIRST);
		ck_assert_uint_eq(q.m.ptlhdr_len, sizeof(ptlhdr));
		ck_assert_uint_eq(q.m.msg_len, 100);
		ck_assert_uint_eq(q.data_len, 60);
		ck_assert_mem_eq(q.ptlhdr, ptlhdr, sizeof(ptlhdr));
		ck_assert_mem_eq(q.data, data, 60);
		ck_assert_uint_eq(q.frame_len, (uint32_t)len);
		/* network byte order on the wire */
		ck_assert_uint_eq(frame[16], 0xff);
		ck_assert_uint_eq(frame[19], 0xf0);
		/* link padding (minimum Ethernet frame) is accepted and excluded */
		memset(frame + len, 0xee, 64);
		ck_assert_int_eq(rmpp_pkt_parse(frame, (size_t)len + 64, RMPP_PARSE_VERIFY_CRC, &q),
				 0);
		ck_assert_uint_eq(q.frame_len, (uint32_t)len);
		/* every truncation is rejected */
		for (long l = 0; l < len; l++)
			ck_assert_int_ne(rmpp_pkt_parse(frame, (size_t)l, RMPP_PARSE_VERIFY_CRC, &q),
					 0);
	}
}
END_TEST

START_TEST(t_round_trip_control)
{
	struct rmpp_pkt p, q;
	/* HELLO */
	memset(&p, 0, sizeof(p));
	p.type = RMPP_PKT_HELLO;
	p.flags = RMPP_F_CRC;
	p.src_epoch = 5;
	p.psn = 99;
	p.credit = 64;
	p.hello.mtu = 9000;
	p.hello.hflags = RMPP_HELLO_F_CRC;
	long len = rmpp_pkt_build(frame, sizeof(frame), &p, NULL, 0, 0);
	ck_assert_int_eq(len, 48);
	ck_assert_int_eq(rmpp_pkt_parse(frame, (size_t)len, RMPP_PARSE_VERIFY_CRC, &q), 0);
	ck_assert_uint_eq(q.hello.magic, RMPP_HELLO_MAGIC);
	ck_assert_uint_eq(q.hello.mtu, 9000);
	ck_assert_uint_eq(q.psn, 99);
	/* a path-MTU probe: HELLO padded with zeros to 1500 bytes, CRC over the
	 * 48-byte frame only */
	p.hello.hflags = RMPP_HELLO_F_CRC | RMPP_HELLO_F_PMTU | RMPP_HELLO_F_PROBE;
	len = rmpp_pkt_build(frame, sizeof(frame), &p, NULL, 0, 0);
	ck_assert_int_eq(len, 48);
	memset(frame + len, 0, 1500 - (size_t)len);
	ck_assert_int_eq(rmpp_pkt_parse(frame, 1500, RMPP_PARSE_VERIFY_CRC, &q), 0);
	ck_assert_uint_eq(q.frame_len, 48);
	ck_assert_uint_eq(q.hello.hflags, RMPP_HELLO_F_ALL);
	/* ACK + RNR, PROBE, RESET, CLOSE */
	const unsigned types[] = {RMPP_PKT_ACK, RMPP_PKT_PROBE, RMPP_PKT_RESET, RMPP_PKT_CLOSE};
	for (unsigned i = 0; i < 4; i++) {
		memset(&p, 0, sizeof(p));
		p.type = (uint8_t)types[i];
		p.src_epoch = 1;
		p.dst_epoch = 2;
		if (types[i] == RMPP_PKT_ACK || types[i] == RMPP_PKT_PROBE) {
			p.flags = RMPP_F_ACK_VALID | RMPP_F_DSACK;
			p.sack_n = 1;
			p.sack[0].start = 5;
			p.sack[0].end = 6;
		}
		if (types[i] == RMPP_PKT_ACK) {
			p.flags |= RMPP_F_MSG;
			p.m.mop = RMPP_MOP_RNR;
			p.m.arg = 1000;
		}
		len = rmpp_pkt_build(frame, sizeof(frame), &p, NULL, 0, 0);
		ck_assert_int_gt(len, 0);
		ck_assert_int_eq(rmpp_pkt_parse(frame, (size_t)len, 0, &q), 0);
		ck_assert_uint_eq(q.type, types[i]);
	}
	/* CTS, DONE, RDATA */
	p = base_data();
	p.m.mop = RMPP_MOP_CTS;
	p.m.arg = 80;
	p.m.offset = 50;
	len = rmpp_pkt_build(frame, sizeof(frame), &p, NULL, 0, 0);
	ck_assert_int_eq(rmpp_pkt_parse(frame, (size_t)len, 0, &q), 0);
	ck_assert_uint_eq(q.m.arg, 80);
	p = base_data();
	p.m.mop = RMPP_MOP_RDATA;
	p.m.offset = 90;
	p.data_len = 10;
	struct iovec iov = {data, sizeof(data)};
	len = rmpp_pkt_build(frame, sizeof(frame), &p, &iov, 1, 90);
	ck_assert_int_eq(rmpp_pkt_parse(frame, (size_t)len, 0, &q), 0);
	ck_assert_mem_eq(q.data, data + 90, 10);
	/* names come from the same X-macro lists */
	ck_assert_str_eq(rmpp_pkt_type_name(RMPP_PKT_HELLO_ACK), "HELLO_ACK");
	ck_assert_str_eq(rmpp_mop_name(RMPP_MOP_RDATA), "RDATA");
	ck_assert_str_eq(rmpp_pkt_type_name(0), "?");
	ck_assert_str_eq(rmpp_parse_err_str(RMPP_PERR_CRC), "CRC32C mismatch");
}
END_TEST

/* Build a valid frame (no CRC), let mut() damage it, expect err. */
typedef void (*mut_fn)(uint8_t *f, long *len);
struct bad_case {
	const char *name;
	int kind; /* 0 data, 1 hello, 2 cts, 3 ack */
	mut_fn mut;
	int err;
	unsigned opts;
};

static long build_kind(int kind)
{
	struct rmpp_pkt p;
	switch (kind) {
	case 1:
		memset(&p, 0, sizeof(p));
		p.type = RMPP_PKT_HELLO;
		p.src_epoch = 5;
		p.hello.mtu = 9000;
		return rmpp_pkt_build(frame, sizeof(frame), &p, NULL, 0, 0);
	case 2:
		p = base_data();
		p.m.mop = RMPP_MOP_CTS;
		p.m.arg = 80;
		p.m.offset = 50;
		return rmpp_pkt_build(frame, sizeof(frame), &p, NULL, 0, 0);
	case 3:
		memset(&p, 0, sizeof(p));
		p.type = RMPP_PKT_ACK;
		p.flags = RMPP_F_ACK_VALID;
		p.src_epoch = 1;
		p.dst_epoch = 2;
		p.sack_n = 1;
		p.sack[0].start = 1;
		p.sack[0].end = 2;
		return rmpp_pkt_build(frame, sizeof(frame), &p, NULL, 0, 0);
	default:
		return build_data(0);
	}
}

#define OFF_MSG (40 + 16) /* message sub-header of build_data() */
static void m_short(uint8_t *f, long *l)
{
	(void)f;
	*l = 39;
}
static void m_version(uint8_t *f, long *l)
{
	f[0] = (uint8_t)((2 << 4) | (f[0] & 0xf));
	(void)l;
}
static void m_type0(uint8_t *f, long *l)
{
	f[0] = (uint8_t)(1 << 4);
	(void)l;
}
static void m_type9(uint8_t *f, long *l)
{
	f[0] = (uint8_t)((1 << 4) | 9);
	(void)l;
}
static void m_nomsg(uint8_t *f, long *l)
{
	f[1] &= (uint8_t)~RMPP_F_MSG;
	(void)l;
}
static void m_noack(uint8_t *f, long *l)
{
	f[1] &= (uint8_t)~RMPP_F_ACK_VALID;
	(void)l;
}
static void m_ece(uint8_t *f, long *l)
{
	f[1] |= RMPP_F_ECE;
	(void)l;
}
static void m_hello_ack(uint8_t *f, long *l)
{
	f[1] |= RMPP_F_ACK_VALID;
	(void)l;
}
static void m_sack5(uint8_t *f, long *l)
{
	f[27] = 5;
	(void)l;
}
static void m_sackflag(uint8_t *f, long *l)
{
	f[1] &= (uint8_t)~RMPP_F_SACK;
	(void)l;
}
static void m_dsack0(uint8_t *f, long *l)
{
	f[1] = (uint8_t)((f[1] | RMPP_F_DSACK) & ~RMPP_F_SACK);
	f[27] = 0;
	f[26] = 6;
	(void)l;
}
static void m_ext(uint8_t *f, long *l)
{
	f[26] = 9;
	(void)l;
}
static void m_payload_long(uint8_t *f, long *l)
{
	put16(f + 2, 5000);
	(void)l;
}
static void m_src_epoch0(uint8_t *f, long *l)
{
	put32(f + 8, 0);
	(void)l;
}
static void m_dst_epoch0(uint8_t *f, long *l)
{
	put32(f + 12, 0);
	(void)l;
}
static void m_sack_span0(uint8_t *f, long *l)
{
	put32(f + 40 + 8, 10);
	put32(f + 40 + 12, 10);
	(void)l;
}
static void m_sack_span_big(uint8_t *f, long *l)
{
	put32(f + 40 + 8, 10);
	put32(f + 40 + 12, 10 + 70000);
	(void)l;
}
static void m_mop0(uint8_t *f, long *l)
{
	f[OFF_MSG + 4] = 0;
	(void)l;
}
static void m_mop9(uint8_t *f, long *l)
{
	f[OFF_MSG + 4] = 9;
	(void)l;
}
static void m_mop_rnr_in_data(uint8_t *f, long *l)
{
	f[OFF_MSG + 4] = RMPP_MOP_RNR;
	(void)l;
}
static void m_mflags(uint8_t *f, long *l)
{
	f[OFF_MSG + 5] = 1;
	(void)l;
}
static void m_ptlhdr_big(uint8_t *f, long *l)
{
	put16(f + OFF_MSG + 6, 257);
	(void)l;
}
static void m_ptlhdr_gt_payload(uint8_t *f, long *l)
{
	put16(f + 2, 10);
	put16(f + OFF_MSG + 6, 11);
	(void)l;
}
static void m_first_offset(uint8_t *f, long *l)
{
	put32(f + OFF_MSG + 12, 4);
	(void)l;
}
static void m_first_too_much(uint8_t *f, long *l)
{
	put32(f + OFF_MSG + 8, 59);
	(void)l;
}
static void m_first_arg(uint8_t *f, long *l)
{
	put32(f + OFF_MSG + 16, 1);
	(void)l;
}
static void m_cont_with_hdr(uint8_t *f, long *l)
{
	f[OFF_MSG + 4] = RMPP_MOP_EAGER_CONT;
	put32(f + OFF_MSG + 12, 10);
	(void)l;
}
static void m_rdata_past_end(uint8_t *f, long *l)
{
	f[OFF_MSG + 4] = RMPP_MOP_RDATA;
	put16(f + OFF_MSG + 6, 0);
	put32(f + OFF_MSG + 12, 90);
	(void)l;
}
static void m_rdata_offset0(uint8_t *f, long *l)
{
	f[OFF_MSG + 4] = RMPP_MOP_RDATA;
	put16(f + OFF_MSG + 6, 0);
	(void)l;
}
#define OFF_MSG_CTS 40
static void m_cts_payload(uint8_t *f, long *l)
{
	put16(f + 2, 4);
	*l += 4;
}
static void m_cts_arg(uint8_t *f, long *l)
{
	put32(f + OFF_MSG_CTS + 16, 101);
	(void)l;
}
static void m_cts_grant(uint8_t *f, long *l)
{
	put32(f + OFF_MSG_CTS + 12, 81);
	(void)l;
}
static void m_done_offset(uint8_t *f, long *l)
{
	f[OFF_MSG_CTS + 4] = RMPP_MOP_DONE;
	(void)l;
}
static void m_hello_len(uint8_t *f, long *l)
{
	put16(f + 2, 7);
	(void)l;
}
static void m_hello_magic(uint8_t *f, long *l)
{
	f[40] ^= 1;
	(void)l;
}
static void m_hello_mtu(uint8_t *f, long *l)
{
	put16(f + 44, 100);
	(void)l;
}
static void m_hello_flags(uint8_t *f, long *l)
{
	put16(f + 46, 8);
	(void)l;
}
static void m_ack_payload(uint8_t *f, long *l)
{
	put16(f + 2, 4);
	*l += 4;
}
static void m_ack_mop(uint8_t *f, long *l)
{
	/* turn the SACK block into a fake message sub-header */
	f[1] |= RMPP_F_MSG;
	f[26] = 2 + 6;
	memset(f + 48, 0, 24);
	f[48 + 4] = RMPP_MOP_CTS;
	*l += 24;
}
static void m_no_crc(uint8_t *f, long *l)
{
	(void)f;
	(void)l;
}
static void m_crc_nonzero(uint8_t *f, long *l)
{
	f[39] = 1;
	(void)l;
}
static void m_ackpsn_noack(uint8_t *f, long *l)
{
	put32(f + 20, 1);
	(void)l;
}

static const struct bad_case bad_cases[] = {
	{"short", 0, m_short, RMPP_PERR_SHORT, 0},
	{"version", 0, m_version, RMPP_PERR_VERSION, 0},
	{"type 0", 0, m_type0, RMPP_PERR_TYPE, 0},
	{"type 9", 0, m_type9, RMPP_PERR_TYPE, 0},
	{"DATA without MSG", 0, m_nomsg, RMPP_PERR_FLAGS, 0},
	{"DATA without ACK_VALID", 0, m_noack, RMPP_PERR_FLAGS, 0},
	{"ECE", 0, m_ece, RMPP_PERR_FLAGS, 0},
	{"HELLO with ACK_VALID", 1, m_hello_ack, RMPP_PERR_FLAGS, 0},
	{"sack_n 5", 0, m_sack5, RMPP_PERR_EXT, 0},
	{"SACK flag missing", 0, m_sackflag, RMPP_PERR_FLAGS, 0},
	{"DSACK without blocks", 0, m_dsack0, RMPP_PERR_FLAGS, 0},
	{"ext_words", 0, m_ext, RMPP_PERR_EXT, 0},
	{"payload_len", 0, m_payload_long, RMPP_PERR_LENGTH, 0},
	{"src_epoch 0", 0, m_src_epoch0, RMPP_PERR_EPOCH, 0},
	{"dst_epoch 0", 0, m_dst_epoch0, RMPP_PERR_EPOCH, 0},
	{"SACK span 0", 0, m_sack_span0, RMPP_PERR_SACK, 0},
	{"SACK span huge", 0, m_sack_span_big, RMPP_PERR_SACK, 0},
	{"mop 0", 0, m_mop0, RMPP_PERR_MOP, 0},
	{"mop 9", 0, m_mop9, RMPP_PERR_MOP, 0},
	{"RNR in DATA", 0, m_mop_rnr_in_data, RMPP_PERR_MOP, 0},
	{"mflags", 0, m_mflags, RMPP_PERR_RESERVED, 0},
	{"ptlhdr_len 257", 0, m_ptlhdr_big, RMPP_PERR_MSGFIELD, 0},
	{"ptlhdr_len > payload", 0, m_ptlhdr_gt_payload, RMPP_PERR_MSGFIELD, 0},
	{"EAGER_FIRST offset", 0, m_first_offset, RMPP_PERR_MSGFIELD, 0},
	{"EAGER_FIRST data > msg_len", 0, m_first_too_much, RMPP_PERR_MSGFIELD, 0},
	{"EAGER_FIRST arg", 0, m_first_arg, RMPP_PERR_MSGFIELD, 0},
	{"EAGER_CONT with header", 0, m_cont_with_hdr, RMPP_PERR_MSGFIELD, 0},
	{"RDATA past msg_len", 0, m_rdata_past_end, RMPP_PERR_MSGFIELD, 0},
	{"RDATA offset 0", 0, m_rdata_offset0, RMPP_PERR_MSGFIELD, 0},
	{"CTS with payload", 2, m_cts_payload, RMPP_PERR_MSGFIELD, 0},
	{"CTS accepted > msg_len", 2, m_cts_arg, RMPP_PERR_MSGFIELD, 0},
	{"CTS grant > accepted", 2, m_cts_grant, RMPP_PERR_MSGFIELD, 0},
	{"DONE offset", 2, m_done_offset, RMPP_PERR_MSGFIELD, 0},
	{"HELLO length", 1, m_hello_len, RMPP_PERR_HELLO, 0},
	{"HELLO magic", 1, m_hello_magic, RMPP_PERR_HELLO, 0},
	{"HELLO mtu", 1, m_hello_mtu, RMPP_PERR_HELLO, 0},
	{"HELLO flags", 1, m_hello_flags, RMPP_PERR_HELLO, 0},
	{"ACK with payload", 3, m_ack_payload, RMPP_PERR_LENGTH, 0},
	{"ACK with CTS", 3, m_ack_mop, RMPP_PERR_MOP, 0},
	{"CRC required", 0, m_no_crc, RMPP_PERR_NOCRC, RMPP_PARSE_REQUIRE_CRC},
	{"CRC field without flag", 0, m_crc_nonzero, RMPP_PERR_RESERVED, 0},
	{"ack_psn without ACK_VALID", 1, m_ackpsn_noack, RMPP_PERR_RESERVED, 0},
};

START_TEST(t_malformed)
{
	const struct bad_case *b = &bad_cases[_i];
	long len = build_kind(b->kind);
	ck_assert_int_gt(len, 0);
	struct rmpp_pkt q;
	ck_assert_int_eq(rmpp_pkt_parse(frame, (size_t)len, 0, &q), 0);
	b->mut(frame, &len);
	int rc = rmpp_pkt_parse(frame, (size_t)len, b->opts, &q);
	ck_assert_msg(rc == b->err, "case '%s': got %d (%s), want %d (%s)", b->name, rc,
		      rmpp_parse_err_str(rc), b->err, rmpp_parse_err_str(b->err));
}
END_TEST

START_TEST(t_bitflips_caught_by_crc)
{
	long len = build_data(RMPP_F_CRC);
	struct rmpp_pkt q;
	unsigned caught = 0, total = 0;
	for (long i = 0; i < len; i++)
		for (int bit = 0; bit < 8; bit++) {
			frame[i] ^= (uint8_t)(1u << bit);
			int rc = rmpp_pkt_parse(frame, (size_t)len,
						RMPP_PARSE_VERIFY_CRC | RMPP_PARSE_REQUIRE_CRC, &q);
			total++;
			caught += rc != 0;
			frame[i] ^= (uint8_t)(1u << bit);
		}
	ck_assert_uint_eq(caught, total);
	ck_assert_int_eq(rmpp_pkt_parse(frame, (size_t)len, RMPP_PARSE_VERIFY_CRC, &q), 0);
}
END_TEST

START_TEST(t_build_limits)
{
	struct rmpp_pkt p = base_data();
	p.data_len = 60;
	struct iovec iov = {data, 100};
	ck_assert_int_eq(rmpp_pkt_build(frame, 100, &p, &iov, 1, 0), -1); /* too small */
	p.sack_n = 5;
	ck_assert_int_eq(rmpp_pkt_build(frame, sizeof(frame), &p, &iov, 1, 0), -1);
	p.sack_n = 0;
	iov.iov_len = 10; /* not enough source bytes */
	ck_assert_int_eq(rmpp_pkt_build(frame, sizeof(frame), &p, &iov, 1, 0), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rmpp-wire");
	TCase *tc = tcase_create("wire");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, t_crc32c_vectors);
	tcase_add_test(tc, t_crc32c_fold_copy);
	tcase_add_test(tc, t_round_trip_data);
	tcase_add_test(tc, t_round_trip_control);
	tcase_add_loop_test(tc, t_malformed, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_test(tc, t_bitflips_caught_by_crc);
	tcase_add_test(tc, t_build_limits);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
