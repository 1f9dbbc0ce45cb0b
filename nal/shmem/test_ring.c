/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ring.c - unit tests of the shmem SPSC ring: records, wraparound,
 * full ring, corruption detection, two threads with millions of records. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

struct ring_mem {
	struct shm_ring_ctl ctl;
	uint8_t data[];
};

static struct ring_mem *ring_alloc(uint32_t size)
{
	struct ring_mem *m = aligned_alloc(4096, (sizeof(*m) + size + 4095) & ~(size_t)4095);

	ck_assert_ptr_nonnull(m);
	shm_ring_ctl_init(&m->ctl);
	memset(m->data, 0xEE, size);
	return m;
}

/* Write a record of `len` bytes whose body is a pattern derived from seq. */
static int put(struct shm_ring *tx, uint32_t len, uint32_t seq)
{
	struct shm_rec *rec;
	int r = shm_ring_reserve(tx, len, &rec);

	if (r != SHM_RING_OK)
		return r;
	rec->r_kind = 7;
	rec->r_aux = seq;
	rec->r_aux2 = len;
	uint8_t *body = (uint8_t *)(rec + 1);
	for (uint32_t i = 0; i + sizeof(*rec) < len; i++)
		body[i] = (uint8_t)(seq * 31 + i);
	return SHM_RING_OK;
}

static void get_check(struct shm_ring *rx, uint32_t seq, uint32_t len)
{
	const struct shm_rec *rec;
	uint32_t rlen;
	int r = shm_ring_peek(rx, &rec, &rlen);

	ck_assert_int_eq(r, SHM_RING_OK);
	ck_assert_uint_eq(rlen, shm_ring_reclen(len));
	ck_assert_uint_eq(rec->r_kind, 7);
	ck_assert_uint_eq(rec->r_aux, seq);
	ck_assert_uint_eq(rec->r_aux2, len);
	const uint8_t *body = (const uint8_t *)(rec + 1);
	uint32_t bad = 0; /* one assertion per record: Check logs each one */
	for (uint32_t i = 0; i + sizeof(*rec) < len; i++)
		bad += body[i] != (uint8_t)(seq * 31 + i);
	ck_assert_uint_eq(bad, 0);
	shm_ring_consume(rx, rlen);
}

START_TEST(test_ring_basic)
{
	struct ring_mem *m = ring_alloc(4096);
	struct shm_ring tx, rx;
	const struct shm_rec *rec;
	uint32_t len;

	shm_ring_attach_producer(&tx, &m->ctl, m->data, 4096);
	shm_ring_attach_consumer(&rx, &m->ctl, m->data, 4096);
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_EMPTY);
	ck_assert_int_eq(put(&tx, 100, 1), SHM_RING_OK);
	/* not visible before publish */
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_EMPTY);
	shm_ring_publish(&tx);
	ck_assert(shm_ring_nonempty(&rx));
	get_check(&rx, 1, 100);
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_EMPTY);
	ck_assert_uint_eq(atomic_load(&m->ctl.rc_tail), 128);
	free(m);
}
END_TEST

START_TEST(test_ring_full)
{
	struct ring_mem *m = ring_alloc(4096);
	struct shm_ring tx, rx;
	int n = 0;

	shm_ring_attach_producer(&tx, &m->ctl, m->data, 4096);
	shm_ring_attach_consumer(&rx, &m->ctl, m->data, 4096);
	while (put(&tx, 256, (uint32_t)n) == SHM_RING_OK)
		n++;
	ck_assert_int_eq(n, 4096 / 256); /* exactly full, nothing dropped */
	ck_assert_int_eq(put(&tx, 64, 99), SHM_RING_FULL);
	ck_assert_uint_eq(shm_ring_space(&tx), 0);
	shm_ring_publish(&tx);
	get_check(&rx, 0, 256);
	/* one slot freed: a 256-byte record fits again, a larger one not */
	ck_assert_int_eq(put(&tx, 512, 100), SHM_RING_FULL);
	ck_assert_int_eq(put(&tx, 256, (uint32_t)n), SHM_RING_OK);
	shm_ring_publish(&tx);
	for (int i = 1; i <= n; i++)
		get_check(&rx, (uint32_t)i, 256);
	/* a record larger than half the ring never fits */
	ck_assert_int_eq(put(&tx, 4096 / 2 + 64, 1), SHM_RING_FULL);
	free(m);
}
END_TEST

START_TEST(test_ring_wrap)
{
	const uint32_t size = 8192;
	struct ring_mem *m = ring_alloc(size);
	struct shm_ring tx, rx;
	uint32_t wseq = 0, rseq = 0, lens[4096];

	shm_ring_attach_producer(&tx, &m->ctl, m->data, size);
	shm_ring_attach_consumer(&rx, &m->ctl, m->data, size);
	srand(42);
	/* many laps with odd sizes so wrap fillers of every length occur */
	for (int round = 0; round < 20000; round++) {
		int burst = rand() % 5;
		for (int i = 0; i < burst; i++) {
			uint32_t len = 16 + (uint32_t)(rand() % 3000);
			if (put(&tx, len, wseq) != SHM_RING_OK)
				break;
			lens[wseq % 4096] = len;
			wseq++;
		}
		shm_ring_publish(&tx);
		int take = rand() % 5;
		for (int i = 0; i < take && rseq < wseq; i++, rseq++)
			get_check(&rx, rseq, lens[rseq % 4096]);
	}
	while (rseq < wseq) {
		get_check(&rx, rseq, lens[rseq % 4096]);
		rseq++;
	}
	ck_assert_uint_gt(atomic_load(&m->ctl.rc_head), 50 * (uint64_t)size);
	free(m);
}
END_TEST

START_TEST(test_ring_corrupt)
{
	struct ring_mem *m = ring_alloc(4096);
	struct shm_ring tx, rx;
	const struct shm_rec *rec;
	uint32_t len;

	shm_ring_attach_producer(&tx, &m->ctl, m->data, 4096);
	shm_ring_attach_consumer(&rx, &m->ctl, m->data, 4096);
	ck_assert_int_eq(put(&tx, 64, 1), SHM_RING_OK);
	shm_ring_publish(&tx);

	struct shm_rec *w = (struct shm_rec *)m->data;
	w->r_len = 100; /* not aligned */
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_CORRUPT);
	w->r_len = 8192; /* past the end of the ring */
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_CORRUPT);
	w->r_len = 0;
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_CORRUPT);
	w->r_len = 64;
	w->r_kind = SHM_REC_WRAP; /* a filler that does not reach the end */
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_CORRUPT);
	w->r_kind = 7;
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_OK);

	/* head is not what publishes: an impossible head changes nothing */
	atomic_store(&m->ctl.rc_head, 1u << 20);
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_OK);
	/* a stamp of another lap is not published */
	w->r_stamp = shm_ring_stamp(4096, 4096);
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_EMPTY);
	w->r_stamp = 0;
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_EMPTY);
	/* impossible tail seen by the producer */
	atomic_store(&m->ctl.rc_tail, 1u << 30);
	tx.rg_cached = 0;
	tx.rg_pos = 4096;
	ck_assert_int_eq(put(&tx, 64, 2), SHM_RING_CORRUPT);
	free(m);
}
END_TEST

/* Payload lines whose stamp word holds the next lap's stamp of their
 * position: consumed, they are cleared, so a lap later the consumer does not
 * take them for published records. */
START_TEST(test_ring_stale_payload)
{
	struct ring_mem *m = ring_alloc(4096);
	struct shm_ring tx, rx;
	const struct shm_rec *rec;
	uint32_t len;
	struct shm_rec *w;

	shm_ring_attach_producer(&tx, &m->ctl, m->data, 4096);
	shm_ring_attach_consumer(&rx, &m->ctl, m->data, 4096);
	/* lap 0: one 2048-byte record at 0, its line 1 forging lap 1's stamp */
	ck_assert_int_eq(shm_ring_reserve(&tx, 2048, &w), SHM_RING_OK);
	w->r_kind = 7;
	uint16_t forged = shm_ring_stamp(4096 + 64, 4096);
	memcpy((uint8_t *)w + 64 + 6, &forged, 2);
	shm_ring_publish(&tx);
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_OK);
	ck_assert_uint_eq(len, 2048);
	shm_ring_consume(&rx, len);
	/* lap 0 ends with a 2048-byte record; lap 1 starts with a 64-byte one */
	ck_assert_int_eq(put(&tx, 2048, 1), SHM_RING_OK);
	shm_ring_publish(&tx);
	get_check(&rx, 1, 2048);
	ck_assert_int_eq(put(&tx, 64, 2), SHM_RING_OK);
	shm_ring_publish(&tx);
	get_check(&rx, 2, 64);
	/* the consumer now waits at 4096 + 64: nothing is published there */
	ck_assert_int_eq(shm_ring_peek(&rx, &rec, &len), SHM_RING_EMPTY);
	ck_assert(!shm_ring_nonempty(&rx));
	ck_assert_int_eq(put(&tx, 64, 3), SHM_RING_OK);
	shm_ring_publish(&tx);
	get_check(&rx, 3, 64);
	free(m);
}
END_TEST

/* A producer killed after stamping a record but before storing head: its
 * successor resumes after the stamped record, not on top of it. */
START_TEST(test_ring_restart_after_stamp)
{
	struct ring_mem *m = ring_alloc(4096);
	struct shm_ring tx, tx2, rx;

	shm_ring_attach_producer(&tx, &m->ctl, m->data, 4096);
	shm_ring_attach_consumer(&rx, &m->ctl, m->data, 4096);
	ck_assert_int_eq(put(&tx, 100, 1), SHM_RING_OK);
	shm_ring_publish(&tx);
	ck_assert_int_eq(put(&tx, 200, 2), SHM_RING_OK);
	shm_ring_stamp_pending(&tx); /* stamped, head not stored: killed here */
	ck_assert_uint_eq(atomic_load(&m->ctl.rc_head), 128);
	get_check(&rx, 1, 100);
	get_check(&rx, 2, 200);
	shm_ring_attach_producer(&tx2, &m->ctl, m->data, 4096);
	ck_assert_uint_eq(tx2.rg_pos, 128 + 256);
	ck_assert_int_eq(put(&tx2, 64, 3), SHM_RING_OK);
	shm_ring_publish(&tx2);
	get_check(&rx, 3, 64);
	free(m);
}
END_TEST

/* ---- two threads ------------------------------------------------------ */

#define SPSC_ITEMS 5000000u

struct spsc {
	struct ring_mem *m;
	uint32_t size;
	uint64_t sum_tx, sum_rx;
	uint64_t full;
	_Atomic int bad;
};

static uint32_t item_len(uint32_t i)
{
	return 32 + (i * 2654435761u >> 22) % 200; /* 32..231 bytes */
}

static void *spsc_producer(void *arg)
{
	struct spsc *s = arg;
	struct shm_ring tx;

	shm_ring_attach_producer(&tx, &s->m->ctl, s->m->data, s->size);
	for (uint32_t i = 0; i < SPSC_ITEMS;) {
		struct shm_rec *rec;
		uint32_t len = item_len(i);
		int r = shm_ring_reserve(&tx, len, &rec);
		if (r == SHM_RING_FULL) {
			if (s->bad)
				break;
			shm_ring_publish(&tx);
			s->full++;
			sched_yield();
			continue;
		}
		if (r != SHM_RING_OK) {
			s->bad = 1;
			break;
		}
		rec->r_kind = 9;
		rec->r_aux = i;
		uint64_t v = (uint64_t)i * 0x9E3779B97F4A7C15ull;
		memcpy(rec + 1, &v, sizeof(v));
		memset((uint8_t *)(rec + 1) + 8, (int)(i & 0xff), len - sizeof(*rec) - 8);
		s->sum_tx += v;
		i++;
		if ((i & 7) == 0)
			shm_ring_publish(&tx); /* batched publication */
	}
	shm_ring_publish(&tx);
	return NULL;
}

static void *spsc_consumer(void *arg)
{
	struct spsc *s = arg;
	struct shm_ring rx;

	shm_ring_attach_consumer(&rx, &s->m->ctl, s->m->data, s->size);
	for (uint32_t i = 0; i < SPSC_ITEMS;) {
		const struct shm_rec *rec;
		uint32_t len;
		int r = shm_ring_peek(&rx, &rec, &len);
		if (r == SHM_RING_EMPTY) {
			sched_yield();
			continue;
		}
		if (r != SHM_RING_OK || rec->r_kind != 9 || rec->r_aux != i ||
		    len != shm_ring_reclen(item_len(i))) {
			s->bad = 2;
			break;
		}
		uint64_t v;
		memcpy(&v, rec + 1, sizeof(v));
		const uint8_t *fill = (const uint8_t *)(rec + 1) + 8;
		if (v != (uint64_t)i * 0x9E3779B97F4A7C15ull ||
		    fill[item_len(i) - sizeof(*rec) - 9] != (uint8_t)(i & 0xff)) {
			s->bad = 3;
			break;
		}
		s->sum_rx += v;
		shm_ring_consume(&rx, len);
		i++;
	}
	return NULL;
}

START_TEST(test_ring_spsc_threads)
{
	struct spsc s = {.size = 16384};
	pthread_t p, c;

	s.m = ring_alloc(s.size);
	ck_assert_int_eq(pthread_create(&c, NULL, spsc_consumer, &s), 0);
	ck_assert_int_eq(pthread_create(&p, NULL, spsc_producer, &s), 0);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	ck_assert_int_eq(s.bad, 0);
	ck_assert_uint_eq(s.sum_tx, s.sum_rx);
	ck_assert_uint_eq(atomic_load(&s.m->ctl.rc_head), atomic_load(&s.m->ctl.rc_tail));
	free(s.m);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("shmem_ring");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ring_basic);
	tcase_add_test(tc, test_ring_full);
	tcase_add_test(tc, test_ring_wrap);
	tcase_add_test(tc, test_ring_corrupt);
	tcase_add_test(tc, test_ring_stale_payload);
	tcase_add_test(tc, test_ring_restart_after_stamp);
	tcase_add_test(tc, test_ring_spsc_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ring_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
