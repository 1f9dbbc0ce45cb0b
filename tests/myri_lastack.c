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
#include "myri_util.h"

#include <time.h>

#define PT         7
#define BITS       1
#define BITS_READY 2
#define WAIT_MS    10000

int main(void)
{
	ptl_process_id_t peer;
	static char buf[64], ready;
	ptl_event_t ev;
	unsigned rank = mu_init_pair("myri_lastack", 64, &peer);
	if (rank == 1) {
		mu_attach(PT, BITS, buf, sizeof(buf), PTL_MD_THRESH_INF, PTL_MD_OP_PUT);
		/* ready: a put rank 0 waits for (repeated until it is there) */
		ptl_handle_md_t md = mu_bind(&ready, 0);
		int got = 0;
		for (int tries = 0; tries < 100 && !got; tries++) {
			MU_CHECK(PtlPut(md, PTL_NOACK_REQ, peer, PT, 0, BITS_READY, 0, 0));
			got = mu_wait_put(BITS, MU_ANY, 200);
		}
		if (!got) {
			fprintf(stderr, "myri_lastack: rank 1: no put came\n");
			return 1;
		}
		/* close at once: the ACK owed is the last command posted */
		mu_fini();
		printf("lastack: ok (rank 1)\n");
		return 0;
	}
	mu_attach(PT, BITS_READY, &ready, 0, PTL_MD_THRESH_INF, PTL_MD_OP_PUT);
	if (!mu_wait_put(BITS_READY, MU_ANY, WAIT_MS)) {
		fprintf(stderr, "myri_lastack: rank 0: rank 1 never said ready\n");
		return 1;
	}
	/* the NIC goes to sleep meanwhile: it then wakes for the doorbell
	 * and may find the hang-up beside it */
	struct timespec d = {0, 20 * 1000 * 1000};
	nanosleep(&d, NULL);
	MU_CHECK(PtlPut(mu_bind(buf, sizeof(buf)), PTL_ACK_REQ, peer, PT, 0, BITS, 0, 0));
	if (!mu_wait_event(PTL_EVENT_ACK, MU_ANY, &ev, WAIT_MS) || ev.ni_fail_type != PTL_NI_OK) {
		fprintf(stderr,
		        "myri_lastack: rank 0: FAIL: no ACK within %d ms from a target that "
		        "closed right after the put\n",
		        WAIT_MS);
		return 1;
	}
	mu_fini();
	printf("lastack: ok (rank 0)\n");
	return 0;
}
