/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * myri_dmafail.c - operations whose DMA at the target fails, over the
 * myrinet NAL (run by myri-dmafail.sh under ptlrun, two ranks, any
 * PTL_PROGRESS).  Rank 0 attaches an MD over a page, then makes the page
 * inaccessible (mprotect PROT_NONE): the MD stays registered, so the NIC's
 * process_vm_readv/writev of it fails.  Rank 1, the initiator:
 *
 *   - PtlGet from that MD: REPLY_END must come, with PTL_NI_FAIL (before,
 *     the target's NIC sent no reply and the initiator waited forever);
 *   - PtlPut with an ACK into it: the ACK must come, with PTL_NI_FAIL;
 *   - with --getput (offload: the swap is the NIC's DMA; on the host LIB
 *     swaps with memcpy and the target would fault): PtlGetPut into it:
 *     REPLY_END with PTL_NI_FAIL and nothing written into the reply MD;
 *   - then a get from a good MD of the same target: REPLY_END OK, bytes right
 *     (the endpoints go on working).
 *
 * Each wait is bounded (WAIT_MS).  The target checks its GET_END, PUT_END
 * (and GETPUT_END) say PTL_NI_FAIL.  Prints "dmafail: ok" per rank.
 */
#include "myri_util.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PT          6
#define BITS_VICTIM 1
#define BITS_GOOD   2
#define BITS_SYNC   3
#define SYNC_READY  1
#define SYNC_DONE   2
#define LEN         64
#define WAIT_MS     10000

static unsigned rank;
static int failures;

static void fail(const char *what)
{
	fprintf(stderr, "myri_dmafail rank %u: FAIL: %s\n", rank, what);
	failures++;
}

static void attach(ptl_match_bits_t bits, void *buf, size_t len, unsigned options)
{
	mu_attach(PT, bits, buf, len, PTL_MD_THRESH_INF, options);
}

/* The sync put with header data `what` has arrived (its PUT_END). */
static void wait_sync(ptl_hdr_data_t what)
{
	if (!mu_wait_put(BITS_SYNC, what, WAIT_MS)) {
		fail("no sync put from the peer");
		exit(1);
	}
}

/* An END event of `kind` with PTL_NI_FAIL must come; what says what for. */
static void expect_fail(ptl_event_kind_t kind, const char *what)
{
	ptl_event_t ev;
	char msg[160];
	if (!mu_wait_event(kind, MU_ANY, &ev, WAIT_MS)) {
		snprintf(msg, sizeof(msg), "%s: no %s within %d ms (a wait that never ends)", what,
		         PtlEventKindStr(kind), WAIT_MS);
		fail(msg);
	} else if (ev.ni_fail_type != PTL_NI_FAIL) {
		snprintf(msg, sizeof(msg), "%s: %s says %s, not PTL_NI_FAIL", what,
		         PtlEventKindStr(kind), PtlNIFailStr(mu_ni, ev.ni_fail_type));
		fail(msg);
	} else {
		printf("rank %u: %s: %s with PTL_NI_FAIL (mlength %llu)\n", rank, what,
		       PtlEventKindStr(kind), (unsigned long long)ev.mlength);
	}
}

static int target(ptl_process_id_t peer, int getput)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *mem =
	    mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static char none;
	if (mem == MAP_FAILED)
		return 1;
	char *victim = mem, *good = mem + pg;
	for (long i = 0; i < pg; i++)
		good[i] = (char)(i * 7 + 3);
	attach(BITS_SYNC, &none, 0, PTL_MD_OP_PUT);
	attach(BITS_VICTIM, victim, (size_t)pg, PTL_MD_OP_PUT | PTL_MD_OP_GET);
	attach(BITS_GOOD, good, (size_t)pg, PTL_MD_OP_GET);
	/* still registered with the NIC (offload: for the MD's life), but no
	 * longer readable or writable: the NIC's DMA of it fails */
	if (mprotect(victim, (size_t)pg, PROT_NONE) != 0) {
		perror("mprotect");
		return 1;
	}
	mu_sync_put(peer, PT, BITS_SYNC, SYNC_READY);
	expect_fail(PTL_EVENT_GET_END, "target of the get");
	expect_fail(PTL_EVENT_PUT_END, "target of the put");
	if (getput)
		expect_fail(PTL_EVENT_GETPUT_END, "target of the getput");
	wait_sync(SYNC_DONE);
	return 0;
}

static int initiator(ptl_process_id_t peer, int getput)
{
	static char none;
	char buf[LEN], put[LEN];
	memset(buf, 0x5c, sizeof(buf));
	memset(put, 0x6d, sizeof(put));
	attach(BITS_SYNC, &none, 0, PTL_MD_OP_PUT);
	wait_sync(SYNC_READY);
	ptl_handle_md_t bmd = mu_bind(buf, sizeof(buf)), pmd = mu_bind(put, sizeof(put));

	MU_CHECK(PtlGet(bmd, peer, PT, 0, BITS_VICTIM, 0));
	expect_fail(PTL_EVENT_REPLY_END, "get from an MD the NIC cannot read");
	MU_CHECK(PtlPut(pmd, PTL_ACK_REQ, peer, PT, 0, BITS_VICTIM, 0, 0));
	expect_fail(PTL_EVENT_ACK, "put with ack into an MD the NIC cannot write");
	if (getput) {
		MU_CHECK(PtlGetPut(bmd, pmd, peer, PT, 0, BITS_VICTIM, 0, 0));
		expect_fail(PTL_EVENT_REPLY_END, "getput on an MD the NIC cannot swap");
	}
	for (int i = 0; i < LEN; i++)
		if (buf[i] != 0x5c) {
			fail("bytes landed in the reply MD of a failed reply");
			break;
		}

	/* the endpoints still work */
	ptl_event_t ev;
	MU_CHECK(PtlGet(bmd, peer, PT, 0, BITS_GOOD, 0));
	if (!mu_wait_event(PTL_EVENT_REPLY_END, MU_ANY, &ev, WAIT_MS) ||
	    ev.ni_fail_type != PTL_NI_OK || ev.mlength != LEN)
		fail("a get from a good MD afterwards");
	for (int i = 0; i < LEN; i++)
		if (buf[i] != (char)(i * 7 + 3)) {
			fail("the good get's bytes");
			break;
		}
	mu_sync_put(peer, PT, BITS_SYNC, SYNC_DONE);
	return 0;
}

int main(int argc, char **argv)
{
	int getput = argc > 1 && strcmp(argv[1], "--getput") == 0;
	ptl_process_id_t peer;
	rank = mu_init_pair("myri_dmafail", 1024, &peer);
	int rc = rank == 0 ? target(peer, getput) : initiator(peer, getput);
	mu_fini();
	if (rc == 0 && failures == 0)
		printf("dmafail: ok (rank %u)\n", rank);
	return rc || failures ? 1 : 0;
}
