/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * myri_lastack.c - the last ACK of a job over the myrinet NAL (run by
 * myri-lastack.sh under ptlrun, two ranks, any PTL_PROGRESS).  Rank 1
 * attaches an MD, waits for one put and closes its NI at once (PtlNIFini,
 * exit): the ACK its LIB owes rank 0 is the last command it posts.  Rank 0
 * puts with an ACK and must get it within WAIT_MS.  Before, the NIC could
 * drop rank 1's endpoint on its hang-up with that ACK still queued, and
 * rank 0 waited forever (an MPI_Waitall that never returned: osu_bibw over
 * MPICH in interrupt mode).  Prints "lastack: ok" per rank.
 */
#include <p3rt/p3rt.h>
#include <portals3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PT         7
#define BITS       1
#define BITS_READY 2
#define WAIT_MS    10000

#define CHECK(call)                                                                                \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != PTL_OK) {                                                               \
			fprintf(stderr, "myri_lastack: %s: %s\n", #call, PtlErrorStr(rc_));        \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq;

static void attach(ptl_match_bits_t bits, void *buf, size_t len)
{
	ptl_process_id_t any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
	ptl_handle_me_t me;
	ptl_handle_md_t mdh;
	ptl_md_t md = {.start = buf,
	               .length = len,
	               .threshold = PTL_MD_THRESH_INF,
	               .options = PTL_MD_OP_PUT,
	               .user_ptr = NULL,
	               .eq_handle = eq};
	CHECK(PtlMEAttach(ni, PT, any, bits, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	CHECK(PtlMDAttach(me, md, PTL_RETAIN, &mdh));
}

/* The next event of kind (others pass) within ms: 1, or 0. */
static int wait_event(ptl_event_kind_t kind, ptl_match_bits_t bits, ptl_event_t *ev, int ms)
{
	for (int slices = 0; slices < ms / 100;) {
		int which, rc = PtlEQPoll(&eq, 1, 100, ev, &which);
		if (rc == PTL_EQ_EMPTY) {
			slices++;
			continue;
		}
		CHECK(rc == PTL_EQ_DROPPED ? PTL_FAIL : rc);
		if (ev->type == kind && (kind != PTL_EVENT_PUT_END || ev->match_bits == bits))
			return 1;
	}
	return 0;
}

static ptl_handle_md_t bind(void *buf, size_t len)
{
	ptl_handle_md_t mdh;
	ptl_md_t md = {.start = buf,
	               .length = len,
	               .threshold = PTL_MD_THRESH_INF,
	               .options = 0,
	               .user_ptr = NULL,
	               .eq_handle = eq};
	CHECK(PtlMDBind(ni, md, PTL_RETAIN, &mdh));
	return mdh;
}

int main(void)
{
	int max_ifs;
	unsigned rank, size;
	ptl_process_id_t peer;
	static char buf[64], ready;
	ptl_event_t ev;
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(PtlInit(&max_ifs));
	CHECK(PtlSetRank(PTL_INVALID_HANDLE, -1, -1));
	CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
	CHECK(PtlGetRank(ni, &rank, &size));
	if (size != 2) {
		fprintf(stderr, "myri_lastack: run with 2 ranks\n");
		return 1;
	}
	CHECK(PtlGetRankId(ni, 1 - rank, &peer));
	CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));
	if (rank == 1) {
		attach(BITS, buf, sizeof(buf));
		/* ready: a put rank 0 waits for (repeated until it is there) */
		ptl_handle_md_t md = bind(&ready, 0);
		int got = 0;
		for (int tries = 0; tries < 100 && !got; tries++) {
			CHECK(PtlPut(md, PTL_NOACK_REQ, peer, PT, 0, BITS_READY, 0, 0));
			got = wait_event(PTL_EVENT_PUT_END, BITS, &ev, 200);
		}
		if (!got) {
			fprintf(stderr, "myri_lastack: rank 1: no put came\n");
			return 1;
		}
		/* close at once: the ACK owed is the last command posted */
		CHECK(PtlNIFini(ni));
		PtlFini();
		printf("lastack: ok (rank 1)\n");
		return 0;
	}
	attach(BITS_READY, &ready, 0);
	if (!wait_event(PTL_EVENT_PUT_END, BITS_READY, &ev, WAIT_MS)) {
		fprintf(stderr, "myri_lastack: rank 0: rank 1 never said ready\n");
		return 1;
	}
	/* the NIC goes to sleep meanwhile: it then wakes for the doorbell
	 * and may find the hang-up beside it */
	struct timespec d = {0, 20 * 1000 * 1000};
	nanosleep(&d, NULL);
	CHECK(PtlPut(bind(buf, sizeof(buf)), PTL_ACK_REQ, peer, PT, 0, BITS, 0, 0));
	if (!wait_event(PTL_EVENT_ACK, 0, &ev, WAIT_MS) || ev.ni_fail_type != PTL_NI_OK) {
		fprintf(stderr,
		        "myri_lastack: rank 0: FAIL: no ACK within %d ms from a target that "
		        "closed right after the put\n",
		        WAIT_MS);
		return 1;
	}
	CHECK(PtlNIFini(ni));
	PtlFini();
	printf("lastack: ok (rank 0)\n");
	return 0;
}
