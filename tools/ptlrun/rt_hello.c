/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_hello.c - the usual start of a Portals program, as the reference
 * runtime documents it, then one put around a ring:
 *
 *   PtlInit; PtlSetRank(PTL_INVALID_HANDLE, -1, -1); PtlNIInit(PTL_PID_ANY);
 *   PtlGetRank; PtlGetRankId for every rank (mine must be PtlGetId's);
 *   put "hello from R" to rank R+1 with an ack; receive from rank R-1.
 *
 * Runs under ptlrun (PTL_* environment) and under mpiexec (PMI).  Prints
 * "rank R of N jid J: got 'hello from R-1'" and exits 0 on success.
 */
#include <p3rt/p3rt.h>
#include <portals3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELLO_PT   4
#define HELLO_BITS 0x4e110ull

#define CHECK(call)                                                                                \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != PTL_OK) {                                                               \
			fprintf(stderr, "rt_hello: %s: %s\n", #call, PtlErrorStr(rc_));            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Count a PUT_END or an ACK; 1 (after a message) if the event reports a
 * failure.  With puts > 1 the put was repeated, and a repeat's ACK may fail
 * without harm: the peer got the first one and closed its NI before the
 * repeat arrived (over myrinet the NIC then reports PTL_NI_PEER_RESTARTED
 * at once); the loop still needs one ACK that succeeded. */
static int note_event(ptl_handle_ni_t ni, unsigned int rank, const ptl_event_t *ev, int *got_put,
                      int *got_ack, int puts)
{
	if (ev->ni_fail_type != PTL_NI_OK && ev->type == PTL_EVENT_ACK && puts > 1) {
		fprintf(stderr, "rt_hello: rank %u: an ACK of one of %d repeated puts failed (%s): "
		        "the peer may have closed after an earlier one\n",
		        rank, puts, PtlNIFailStr(ni, ev->ni_fail_type));
		return 0;
	}
	if (ev->ni_fail_type != PTL_NI_OK) {
		fprintf(stderr, "rt_hello: rank %u: %s failed: %s\n", rank,
		        PtlEventKindStr(ev->type), PtlNIFailStr(ni, ev->ni_fail_type));
		return 1;
	}
	if (ev->type == PTL_EVENT_PUT_END)
		*got_put = 1;
	else if (ev->type == PTL_EVENT_ACK)
		*got_ack = 1;
	return 0;
}

int main(void)
{
	char inbuf[64] = "", outbuf[64];
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t md_in, md_out;
	ptl_process_id_t me_id, id, any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
	ptl_md_t md;
	ptl_event_t ev;
	unsigned int rank, size;
	ptl_jid_t jid;
	int max_ifs, got_put = 0, got_ack = 0;
	/* RT_HELLO_TRIES: puts (100 ms apart) before giving up, default 100 */
	const char *t = getenv("RT_HELLO_TRIES");
	int max_tries = t && atoi(t) > 0 ? atoi(t) : 100;

	CHECK(PtlInit(&max_ifs));
	CHECK(PtlSetRank(PTL_INVALID_HANDLE, -1, -1));
	CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
	CHECK(PtlGetRank(ni, &rank, &size));
	CHECK(PtlGetId(ni, &me_id));
	for (unsigned int r = 0; r < size; r++) {
		CHECK(PtlGetRankId(ni, r, &id));
		if (r == rank && (id.nid != me_id.nid || id.pid != me_id.pid)) {
			fprintf(stderr,
			        "rt_hello: rank %u: PtlGetRankId says %u:%u, PtlGetId %u:%u\n",
			        rank, id.nid, id.pid, me_id.nid, me_id.pid);
			return 1;
		}
	}
	if (PtlGetRankId(ni, size, &id) != PTL_PROCESS_INVALID) {
		fprintf(stderr, "rt_hello: PtlGetRankId(size) did not fail\n");
		return 1;
	}

	CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));
	CHECK(PtlMEAttach(ni, HELLO_PT, any, HELLO_BITS, 0, PTL_UNLINK, PTL_INS_AFTER, &me));
	memset(&md, 0, sizeof(md));
	md.start = inbuf;
	md.length = sizeof(inbuf);
	md.threshold = 1;
	md.options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE;
	md.eq_handle = eq;
	CHECK(PtlMDAttach(me, md, PTL_UNLINK, &md_in));

	snprintf(outbuf, sizeof(outbuf), "hello from %u", rank);
	md.start = outbuf;
	md.length = strlen(outbuf) + 1;
	md.threshold = PTL_MD_THRESH_INF; /* sends may be repeated */
	md.options = 0;
	CHECK(PtlMDBind(ni, md, PTL_RETAIN, &md_out));
	CHECK(PtlGetRankId(ni, (rank + 1) % size, &id));
	/* Portals drops a put that matches nothing, without an ack: the peer
	 * may not have attached its ME yet (with a progress thread it handles
	 * traffic from PtlNIInit on).  So send until the ack proves delivery;
	 * a repeat that lands after the ME unlinked is only a counted drop. */
	int puts = 0;
	for (int tries = 0; !got_ack; tries++) {
		int which, rc;
		if (tries == max_tries) {
			fprintf(stderr, "rt_hello: rank %u: no ack from rank %u after %d tries\n",
			        rank, (rank + 1) % size, max_tries);
			/* close the NI: its counters (P3_RMPP_STATS) say why */
			PtlNIFini(ni);
			return 1;
		}
		CHECK(PtlPut(md_out, PTL_ACK_REQ, id, HELLO_PT, 0, HELLO_BITS, 0, 0));
		puts++;
		while ((rc = PtlEQPoll(&eq, 1, 100, &ev, &which)) == PTL_OK) {
			if (note_event(ni, rank, &ev, &got_put, &got_ack, puts))
				return 1;
		}
		if (rc != PTL_EQ_EMPTY)
			CHECK(rc);
	}
	while (!got_put) {
		CHECK(PtlEQWait(eq, &ev));
		if (note_event(ni, rank, &ev, &got_put, &got_ack, puts))
			return 1;
	}
	snprintf(outbuf, sizeof(outbuf), "hello from %u", (rank + size - 1) % size);
	if (strcmp(inbuf, outbuf) != 0) {
		fprintf(stderr, "rt_hello: rank %u: got '%s', expected '%s'\n", rank, inbuf,
		        outbuf);
		return 1;
	}
	CHECK(PtlMDUnlink(md_out));
	CHECK(PtlGetJID(ni, &jid));
	printf("rank %u of %u jid %u: got '%s'\n", rank, size, jid, inbuf);
	fflush(stdout);
	CHECK(PtlNIFini(ni));
	PtlFini();
	return 0;
}
