/* SPDX-License-Identifier: BSD-3-Clause */
/* check_multiproc.c - jobs of 2, 4 and 8 ranks: all-to-all puts and gets at
 * every size threshold (0, 1, eager-1, eager, eager+1, 1 MiB), 64 MiB
 * transfers, a moved eager limit (P3_SHMEM_EAGER_MAX), and cleanup of
 * /dev/shm.  Data is verified byte for byte with a pattern depending on
 * sender, receiver and offset.  Over shmem (app, thread) and lo (threads). */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ptl_size_t eager = 16384;

static ptl_size_t mp_sizes[6];
static void set_sizes(void)
{
	const char *e = getenv("P3_SHMEM_EAGER_MAX");
	if (e)
		eager = strtoull(e, NULL, 10);
	ptl_size_t s[6] = {0, 1, eager - 1, eager, eager + 1, 1u << 20};
	memcpy(mp_sizes, s, sizeof(s));
}

/* Match bits name the receiving rank too: over lo all ranks share one NI. */
#define BITS(b, rank) ((ptl_match_bits_t)(b) | (ptl_match_bits_t)(rank) << 32)

static uint32_t seed(int src, int dst, size_t si)
{
	return (uint32_t)(src << 16 | dst << 8 | (int)si);
}

/* All-to-all: for each size, every rank puts a distinct slice to every rank
 * (itself included), then gets back from every rank the slice it sent. */
static void alltoall(struct h_ctx *c)
{
	int n = c->nranks;
	ptl_size_t maxsz = mp_sizes[5];
	unsigned char *rx = malloc((size_t)n * maxsz);
	unsigned char *tx = malloc(maxsz);
	ptl_handle_eq_t eq = h_eq(c, 1024);

	H_TRUE(rx != NULL && tx != NULL);
	for (size_t si = 0; si < 6; si++) {
		ptl_size_t sz = mp_sizes[si];
		ptl_handle_md_t md;
		ptl_handle_me_t me;
		int cnt[PTL_EVENT_KIND_MAX];

		memset(rx, 0xEE, (size_t)n * maxsz);
		me = h_me_md(c, H_PT, h_any_id, BITS(0xA11 + si, c->rank), 0, PTL_RETAIN,
		             h_md(rx, (ptl_size_t)n * sz, PTL_MD_THRESH_INF,
		                  PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
		             PTL_RETAIN, &md);
		h_sync(c);
		for (int k = 1; k <= n; k++) {
			int dst = (c->rank + k) % n;
			h_fill(tx, sz, seed(c->rank, dst, si), 0);
			H_EQ(h_put(c, c->id[dst], H_PT, BITS(0xA11 + si, dst),
			           (ptl_size_t)c->rank * sz, tx, sz, PTL_ACK_REQ,
			           (ptl_hdr_data_t)c->rank),
			     sz);
		}
		h_collect(eq, 2 * n, cnt);
		H_EQ(cnt[PTL_EVENT_PUT_START], n);
		H_EQ(cnt[PTL_EVENT_PUT_END], n);
		for (int src = 0; src < n; src++)
			H_PAT(rx + (size_t)src * sz, sz, seed(src, c->rank, si), 0);
		h_sync(c);
		for (int k = 1; k <= n; k++) {
			int dst = (c->rank + k) % n;
			memset(tx, 0, sz);
			H_EQ(h_getdata(c, c->id[dst], H_PT, BITS(0xA11 + si, dst),
			               (ptl_size_t)c->rank * sz, tx, sz),
			     sz);
			H_PAT(tx, sz, seed(c->rank, dst, si), 0);
		}
		h_collect(eq, 2 * n, cnt);
		H_EQ(cnt[PTL_EVENT_GET_START], n);
		H_EQ(cnt[PTL_EVENT_GET_END], n);
		h_sync(c);
		H_OK(PtlMEUnlink(me));
	}
	h_expect_none(eq, 10);
	H_OK(PtlEQFree(eq));
	free(rx);
	free(tx);
}

START_TEST(alltoall_2ranks)
{
	set_sizes();
	h_run_job(_i, 2, alltoall, 120);
}
END_TEST

START_TEST(alltoall_4ranks)
{
	set_sizes();
	h_run_job(_i, 4, alltoall, 180);
}
END_TEST

START_TEST(alltoall_8ranks)
{
	set_sizes();
	h_run_job(_i, 8, alltoall, 240);
}
END_TEST

/* The eager limit moved by P3_SHMEM_EAGER_MAX: the thresholds move with it. */
START_TEST(alltoall_eager_env)
{
	setenv("P3_SHMEM_EAGER_MAX", "1024", 1);
	set_sizes();
	H_EQ(mp_sizes[3], 1024);
	h_run_job(_i, 4, alltoall, 180);
}
END_TEST

/* 64 MiB put and get between two ranks, byte for byte. */
#define HUGE_SZ (64u << 20)
static void huge(struct h_ctx *c)
{
	unsigned char *buf = malloc(HUGE_SZ);
	H_TRUE(buf != NULL);
	if (c->rank == 0) {
		ptl_handle_eq_t eq = h_eq(c, 16);
		ptl_handle_md_t md;
		ptl_handle_me_t me;
		ptl_event_t ev;
		memset(buf, 0, HUGE_SZ);
		me = h_me_md(c, H_PT, h_any_id, 0xB16, 0, PTL_RETAIN,
		             h_md(buf, HUGE_SZ, PTL_MD_THRESH_INF,
		                  PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq),
		             PTL_RETAIN, &md);
		h_sync(c);
		h_expect(eq, PTL_EVENT_PUT_START, &ev);
		h_expect(eq, PTL_EVENT_PUT_END, &ev);
		H_EQ(ev.mlength, HUGE_SZ);
		H_PAT(buf, HUGE_SZ, 0x64, 0);
		h_fill(buf, HUGE_SZ, 0x65, 0);
		h_sync(c);
		h_expect(eq, PTL_EVENT_GET_START, &ev);
		h_expect(eq, PTL_EVENT_GET_END, &ev);
		H_EQ(ev.mlength, HUGE_SZ);
		h_sync(c);
		H_OK(PtlMEUnlink(me));
		H_OK(PtlEQFree(eq));
	} else {
		h_fill(buf, HUGE_SZ, 0x64, 0);
		h_sync(c);
		H_EQ(h_put(c, c->id[0], H_PT, 0xB16, 0, buf, HUGE_SZ, PTL_ACK_REQ, 0), HUGE_SZ);
		h_sync(c);
		memset(buf, 0, HUGE_SZ);
		H_EQ(h_getdata(c, c->id[0], H_PT, 0xB16, 0, buf, HUGE_SZ), HUGE_SZ);
		H_PAT(buf, HUGE_SZ, 0x65, 0);
		h_sync(c);
	}
	free(buf);
}

START_TEST(transfer_64mib)
{
	h_run_job(_i, 2, huge, 180);
}
END_TEST

/* A ring of puts among 8 ranks with many messages in flight at once. */
static void ring_burst(struct h_ctx *c)
{
	enum { M = 64, SZ = 4096 };
	int n = c->nranks, next = (c->rank + 1) % n, prev = (c->rank + n - 1) % n;
	unsigned char *rx = malloc(M * SZ), *tx = malloc(M * SZ); /* ranks may be threads */
	ptl_handle_eq_t eq = h_eq(c, 512), seq = h_eq(c, 512);
	ptl_handle_md_t md, smd;
	ptl_handle_me_t me =
	    h_me_md(c, H_PT, h_any_id, BITS(0x21, c->rank), 0, PTL_RETAIN,
	            h_md(rx, (size_t)M * SZ, M, PTL_MD_OP_PUT, eq), PTL_UNLINK, &md);
	int cnt[PTL_EVENT_KIND_MAX];
	ptl_event_t ev;

	h_fill(tx, (size_t)M * SZ, seed(c->rank, next, 9), 0);
	smd = h_bind(c, h_md(tx, (size_t)M * SZ, PTL_MD_THRESH_INF, 0, seq), PTL_RETAIN);
	h_sync(c);
	for (int m = 0; m < M; m++)
		H_OK(PtlPutRegion(smd, (ptl_size_t)m * SZ, SZ, PTL_NO_ACK_REQ, c->id[next], H_PT, 0,
		                  BITS(0x21, next), 0, (ptl_hdr_data_t)m));
	h_collect(seq, 2 * M, cnt);
	H_EQ(cnt[PTL_EVENT_SEND_END], M);
	/* in order: the local offset advances, so message m lands at m * SZ */
	for (int m = 0; m < M; m++) {
		h_expect(eq, PTL_EVENT_PUT_START, &ev);
		H_EQ(ev.hdr_data, m);
		H_EQ(ev.offset, (ptl_size_t)m * SZ);
		h_expect(eq, PTL_EVENT_PUT_END, &ev);
	}
	h_expect(eq, PTL_EVENT_UNLINK, &ev);
	H_PAT(rx, (size_t)M * SZ, seed(prev, c->rank, 9), 0);
	h_sync(c);
	H_OK(PtlMEUnlink(me)); /* PTL_RETAIN: the ME outlives its MD */
	H_OK(PtlMDUnlink(smd));
	H_OK(PtlEQFree(eq));
	H_OK(PtlEQFree(seq));
	free(rx);
	free(tx);
}

START_TEST(ring_burst_8ranks)
{
	h_run_job(_i, 8, ring_burst, 120);
}
END_TEST

/* After a clean job every rank's segment is gone from /dev/shm. */
static void nothing(struct h_ctx *c)
{
	h_sync(c);
}
START_TEST(no_segments_left)
{
	h_run_job(_i, 4, nothing, 60);
	if (h_last_leftover != 0)
		h_fail(__FILE__, __LINE__,
		       "%d /dev/shm/p3shm-%u-%u-* segments left after a clean "
		       "4-rank job",
		       h_last_leftover, (unsigned)getuid(), (unsigned)h_last_jid);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("multiproc");
	TCase *tc = tcase_create("multiproc");
	tcase_set_timeout(tc, 300);
	H_ADD(tc, alltoall_2ranks);
	H_ADD(tc, alltoall_4ranks);
	H_ADD(tc, alltoall_8ranks);
	H_ADD_X(tc, alltoall_eager_env, H_X_NOT_SHMEM, "the eager limit is a shmem parameter");
	H_ADD(tc, transfer_64mib);
	H_ADD(tc, ring_burst_8ranks);
	H_ADD_X(tc, no_segments_left, H_X_NOT_SHMEM, "only shmem creates shared memory segments");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
