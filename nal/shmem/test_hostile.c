/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_hostile.c - a hostile peer writes random and malformed records into
 * the rings of a shmem NI (under a stub LIB); the NI must neither crash nor
 * read out of bounds (run it under ASan), must count what it rejected, and
 * must keep serving well-behaved rings.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stub_lib.h"

/* ---- stub LIB (stub_lib.h) ------------------------------------------------ */

static struct p3_msg the_msg;
static uint8_t rx_buf[1 << 16];

int p3_lib_parse(struct p3_lib *lib, const struct p3_hdr *hdr, void *nal_ctx)
{
	struct iovec iov = {lib->rbuf, lib->rlen};
	uint64_t mlen = hdr->payload_len < lib->rlen ? hdr->payload_len : lib->rlen;

	lib->nrecv++;
	/* like LIB: every other request is "dropped" */
	if (lib->nrecv & 1)
		return p3_nal_shmem_ops.recv(lib->priv, NULL, nal_ctx, NULL, 0, 0, 0,
		                             hdr->payload_len);
	return p3_nal_shmem_ops.recv(lib->priv, &the_msg, nal_ctx, &iov, 1, 0, mlen,
	                             hdr->payload_len);
}

void p3_lib_finalize(struct p3_lib *lib, struct p3_msg *msg, ptl_ni_fail_t status)
{
	(void)msg;
	(void)status;
	lib->nfinal++;
}

/* ---- the hostile peer ---------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static struct p3_lib lib;

static void ni_up(uint32_t jid)
{
	struct p3_nal_init_args a = {
	    .iface = PTL_IFACE_SHMEM, .requested_pid = 7, .jid = jid, .rank = -1};
	struct p3_nal_info info;

	memset(&lib, 0, sizeof(lib));
	lib.rbuf = rx_buf;
	lib.rlen = sizeof(rx_buf);
	ck_assert_int_eq(p3_nal_shmem_ops.init(&lib, &a, &info, &lib.priv), 0);
	lib.id = info.id;
}

/* Claim ring `idx` of the NI's segment as fake sender pid 1000 + idx and
 * return a producer view of it. */
static void claim(struct shm_seg *seg, uint32_t idx, struct shm_ring *tx)
{
	struct shm_claim *cl = shm_seg_claim(seg, idx);
	struct shm_seg_hdr *hdr = seg->sg_base;

	ck_assert_ptr_nonnull(cl);
	cl->cl_nid = 0;
	cl->cl_pid = 1000 + idx;
	atomic_store(&cl->cl_ospid, (uint32_t)getpid());
	atomic_store(&cl->cl_state, SHM_CLAIM_TAKEN);
	if (atomic_load(&hdr->sh_nclaimed) < idx + 1)
		atomic_store(&hdr->sh_nclaimed, idx + 1);
	shm_ring_attach_producer(tx, shm_seg_ring_ctl(seg, idx), shm_seg_ring_data(seg, idx),
	                         hdr->sh_ring_size);
}

static int put_hello(struct shm_ring *tx, uint32_t idx)
{
	struct shm_rec *rec;
	if (shm_ring_reserve(tx, sizeof(struct shm_hello), &rec) != SHM_RING_OK)
		return -1;
	struct shm_hello *he = (struct shm_hello *)rec;
	he->he_rec.r_kind = SHM_REC_HELLO;
	he->he_nid = 0;
	he->he_pid = 1000 + idx;
	he->he_ospid = (uint32_t)getpid();
	he->he_flags = (rnd() & 1) ? SHM_SEG_F_CMA : 0;
	he->he_incarnation = rnd();
	he->he_probe_addr = rnd() & 1 ? rnd() : 0;
	he->he_probe_value = rnd();
	return 0;
}

/* A record that is framed correctly but whose content is random or
 * subtly wrong. */
static void put_bad(struct shm_ring *tx, uint32_t max_rec)
{
	struct shm_rec *rec;
	uint32_t len = 16 + (uint32_t)(rnd() % (max_rec - 16));

	if (shm_ring_reserve(tx, len, &rec) != SHM_RING_OK)
		return;
	uint32_t rlen = rec->r_len;
	uint8_t *p = (uint8_t *)rec;
	for (uint32_t i = 4; i < rlen; i++)
		p[i] = (uint8_t)rnd();
	rec->r_kind = (uint16_t)(1 + rnd() % 7);
	if (rlen >= SHM_MSG_HDR_LEN && (rnd() & 1)) {
		struct shm_msg_rec *mr = (struct shm_msg_rec *)rec;
		mr->mr_hdr.payload_len = rnd() & 1 ? rlen - SHM_MSG_HDR_LEN : rnd() % (1u << 20);
		if (rec->r_kind == SHM_REC_CMA_RTS && rlen >= SHM_MSG_HDR_LEN + 16) {
			struct shm_cma_desc *cd = (struct shm_cma_desc *)(mr + 1);
			cd->cd_ospid = rnd() & 1 ? (uint32_t)getpid() : (uint32_t)rnd();
			cd->cd_niov = (uint32_t)(rnd() % 8);
		}
	}
}

START_TEST(test_hostile_records)
{
	uint32_t jid = (uint32_t)getpid() + 300000;

	setenv("P3_SHMEM_CONNECT_TIMEOUT", "0", 1);
	setenv("P3_SHMEM_RING_SIZE", "65536", 1);
	rng_state = 0x9E3779B97F4A7C15ull ^ (uint64_t)_i;
	for (int round = 0; round < 8; round++) {
		ni_up(jid);
		struct shm_ni *ni = lib.priv;
		struct shm_seg peer_view = {.sg_fd = -1};
		char name[SHM_NAME_MAX];
		shm_seg_name(name, sizeof(name), (uint32_t)getuid(), jid, 7);
		ck_assert_int_eq(shm_seg_open(&peer_view, name), 0);
		struct shm_seg_hdr *hdr = peer_view.sg_base;
		uint32_t max_rec = hdr->sh_max_record;

		for (uint32_t idx = 0; idx < ni->ni_cf.cf_max_peers; idx++) {
			struct shm_ring tx;
			claim(&peer_view, idx, &tx);
			if (rnd() % 4)
				put_hello(&tx, idx);
			for (int k = (int)(rnd() % 20); k > 0; k--)
				put_bad(&tx, max_rec);
			if ((rnd() & 3) == 0) {
				/* broken framing: a raw random length */
				struct shm_rec *raw =
				    (struct shm_rec *)(tx.rg_data + (tx.rg_pos & (tx.rg_size - 1)));
				if (tx.rg_size - (tx.rg_pos & (tx.rg_size - 1)) >= 64) {
					raw->r_len = (uint32_t)rnd();
					raw->r_kind = (uint16_t)rnd();
					tx.rg_pos += 64;
				}
			}
			/* head without stamps publishes nothing */
			if ((rnd() & 7) == 0)
				atomic_store(&tx.rg_ctl->rc_head, rnd());
			else
				shm_ring_publish(&tx);
			for (int k = 0; k < 3; k++)
				p3_nal_shmem_ops.progress(lib.priv, 0);
		}
		/* the NI still answers: a status read and a progress pass */
		ptl_sr_value_t bad = 0;
		ck_assert_int_eq(
		    p3_nal_shmem_ops.status(lib.priv, PTL_SR_NAL_BASE + SHM_CTR_BAD_RECORDS, &bad),
		    0);
		ck_assert_uint_gt(bad, 0);
		p3_nal_shmem_ops.progress(lib.priv, 1);
		shm_seg_close(&peer_view);
		p3_nal_shmem_ops.stop(lib.priv);
		p3_nal_shmem_ops.destroy(lib.priv);
	}
}
END_TEST

/* The NI under test (job jid, connect timeout 0) and a view of its segment
 * through which the test plays the peers. */
static void bed_up(uint32_t jid, struct shm_seg *pv)
{
	char name[SHM_NAME_MAX];
	setenv("P3_SHMEM_CONNECT_TIMEOUT", "0", 1);
	ni_up(jid);
	shm_seg_name(name, sizeof(name), (uint32_t)getuid(), jid, 7);
	ck_assert_int_eq(shm_seg_open(pv, name), 0);
}

static void bed_down(struct shm_seg *pv)
{
	shm_seg_close(pv);
	p3_nal_shmem_ops.stop(lib.priv);
	p3_nal_shmem_ops.destroy(lib.priv);
}

/* An eager PUT record with 8 payload bytes (after the returned record). */
static struct shm_msg_rec *reserve_put8(struct shm_ring *r)
{
	struct shm_rec *rec;
	ck_assert_int_eq(shm_ring_reserve(r, SHM_MSG_HDR_LEN + 8, &rec), SHM_RING_OK);
	struct shm_msg_rec *mr = (struct shm_msg_rec *)rec;
	rec->r_kind = SHM_REC_EAGER;
	memset(&mr->mr_hdr, 0, sizeof(mr->mr_hdr));
	mr->mr_hdr.type = P3_MSG_PUT;
	mr->mr_hdr.payload_len = 8;
	return mr;
}

/* A well-behaved sender next to a hostile one is still served, in order. */
START_TEST(test_hostile_neighbour)
{
	uint32_t jid = (uint32_t)getpid() + 400000;

	struct shm_seg pv = {.sg_fd = -1};
	bed_up(jid, &pv);
	struct shm_ring good, evil;
	claim(&pv, 0, &evil);
	claim(&pv, 1, &good);
	put_hello(&evil, 0);
	put_hello(&good, 1);
	struct shm_rec *rec;
	ck_assert_int_eq(shm_ring_reserve(&evil, 64, &rec), SHM_RING_OK);
	rec->r_kind = SHM_REC_DATA; /* DATA without a PIPE_RTS */
	for (int i = 0; i < 100; i++) {
		memcpy(reserve_put8(&good) + 1, &i, sizeof(i));
	}
	shm_ring_publish(&evil);
	shm_ring_publish(&good);
	for (int k = 0; k < 10; k++)
		p3_nal_shmem_ops.progress(lib.priv, 0);
	ck_assert_uint_eq(lib.nrecv, 100);
	int last;
	memcpy(&last, lib.rbuf, sizeof(last));
	ck_assert_int_eq(last, 99); /* in order: the last one written last */
	ptl_sr_value_t bad = 0;
	p3_nal_shmem_ops.status(lib.priv, PTL_SR_NAL_BASE + SHM_CTR_BAD_RECORDS, &bad);
	ck_assert_uint_eq(bad, 1);
	bed_down(&pv);
}
END_TEST

/* COOP records that describe no send of ours (unknown seq, slot or chunk
 * count out of range) are counted and ignored; the ring stays usable. */
START_TEST(test_hostile_coop)
{
	uint32_t jid = (uint32_t)getpid() + 500000;

	struct shm_seg pv = {.sg_fd = -1};
	bed_up(jid, &pv);
	struct shm_ring evil;
	claim(&pv, 0, &evil);
	put_hello(&evil, 0);
	const struct shm_coop cps[] = {
	    {.cp_seq = 12345, .cp_dest = 4096, .cp_len = 1 << 20, .cp_chunk = 1 << 18,
	     .cp_nchunks = 4},
	    {.cp_seq = 0, .cp_dest = 4096, .cp_len = 1 << 20, .cp_chunk = 1 << 18,
	     .cp_slot = SHM_COOP_SLOTS, .cp_nchunks = 4},
	    {.cp_seq = 0, .cp_len = 1 << 20, .cp_chunk = 1, .cp_nchunks = 1000},
	};
	struct shm_rec *rec;
	for (size_t i = 0; i < sizeof(cps) / sizeof(cps[0]); i++) {
		ck_assert_int_eq(shm_ring_reserve(&evil, sizeof(struct shm_coop), &rec), SHM_RING_OK);
		memcpy((uint8_t *)rec + sizeof(*rec), (const uint8_t *)&cps[i] + sizeof(*rec),
		       sizeof(cps[i]) - sizeof(*rec));
		rec->r_kind = SHM_REC_COOP;
	}
	reserve_put8(&evil);
	shm_ring_publish(&evil);
	for (int k = 0; k < 10; k++)
		p3_nal_shmem_ops.progress(lib.priv, 0);
	ptl_sr_value_t bad = 0;
	p3_nal_shmem_ops.status(lib.priv, PTL_SR_NAL_BASE + SHM_CTR_BAD_RECORDS, &bad);
	ck_assert_uint_eq(bad, 3);
	ck_assert_uint_eq(lib.nrecv, 1); /* the put behind them still arrives */
	bed_down(&pv);
}
END_TEST

static Suite *hostile_suite(void)
{
	Suite *s = suite_create("shmem_hostile");
	TCase *tc = tcase_create("hostile");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_hostile_records, 0, 4);
	tcase_add_test(tc, test_hostile_neighbour);
	tcase_add_test(tc, test_hostile_coop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hostile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
