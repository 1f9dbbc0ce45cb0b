/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ptlhostcost - the host CPU one 8-byte put costs its initiator and its
 * target, over any NAL and progress mode (ptlrun -n 2).
 *
 * Rank 0, the initiator, posts R rounds of N 8-byte puts without ack back to
 * back and measures its thread's CPU time (CLOCK_THREAD_CPUTIME_ID) inside
 * the Portals calls of each round (the puts and the non-blocking event
 * reads that keep its EQ from overflowing), then waits for the round's
 * SEND_ENDs (not measured).  With --fresh-md every put goes out of an MD of
 * its own (PtlMDBind, threshold 1, auto-unlinked), the pattern of an MPI
 * adapter's pulls.  Rank 1, the target, makes no Portals call while the
 * puts land: it computes for --loop-ms, and the CPU its process used
 * meanwhile beside that loop (getrusage minus the loop thread's own clock:
 * progress threads, interrupt handlers) is what Portals took from it; then
 * it takes the PUT_END events (PtlEQWait) and reports that CPU too.
 *
 *   ptlrun -n 2 [--nal N --progress M] ptlhostcost [-n N] [-r R] [--fresh-md]
 *          [--loop-ms MS]
 *
 * Output: one line per rank, "hostcost initiator ..." and "hostcost target
 * ...", figures per put in microseconds (median and range over the rounds
 * for the initiator).
 */
#include <p3rt/p3rt.h>
#include <portals3.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "p3num.h"

#define PT_DATA    5
#define PT_CTL     6
#define EQ_LEN     16384
#define MAX_ROUNDS 1000

#define CHECK(call)                                                                                \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != PTL_OK) {                                                               \
			fprintf(stderr, "ptlhostcost: %s: %s\n", #call, PtlErrorStr(rc_));         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

struct opts {
	int n, rounds, fresh, loop_ms;
};

static double clock_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rusage_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static const ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};

static void attach(ptl_handle_ni_t ni, ptl_pt_index_t pt, void *buf, ptl_size_t len,
                   ptl_handle_eq_t eq)
{
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_md_t d = {.start = buf,
	              .length = len,
	              .threshold = PTL_MD_THRESH_INF,
	              .options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE,
	              .eq_handle = eq};
	CHECK(PtlMEAttach(ni, pt, any, 0, ~0ull, PTL_RETAIN, PTL_INS_AFTER, &me));
	CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
}

/* The next event of kind k on eq (others are skipped). */
static void wait_kind(ptl_handle_eq_t eq, ptl_event_kind_t k)
{
	for (;;) {
		ptl_event_t ev;
		int rc = PtlEQWait(eq, &ev);
		if (rc != PTL_OK && rc != PTL_EQ_DROPPED)
			CHECK(rc);
		if (ev.type == k)
			return;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void initiator(ptl_handle_ni_t ni, ptl_process_id_t tgt, const struct opts *o)
{
	static uint64_t ctl, buf = 0x1122334455667788ull;
	static double per[MAX_ROUNDS];
	ptl_handle_eq_t eq, ceq;
	ptl_handle_md_t md = PTL_INVALID_HANDLE;
	CHECK(PtlEQAlloc(ni, EQ_LEN, PTL_EQ_HANDLER_NONE, &eq));
	CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &ceq));
	attach(ni, PT_CTL, &ctl, sizeof(ctl), ceq);
	wait_kind(ceq, PTL_EVENT_PUT_END); /* the target is ready */
	ptl_md_t d = {.start = &buf,
	              .length = sizeof(buf),
	              .threshold = o->fresh ? 1 : PTL_MD_THRESH_INF,
	              .options = PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_UNLINK_DISABLE,
	              .eq_handle = eq};
	if (!o->fresh)
		CHECK(PtlMDBind(ni, d, PTL_RETAIN, &md));
	double ru0 = rusage_s(), wall0 = clock_s(CLOCK_MONOTONIC);
	for (int r = 0; r < o->rounds; r++) {
		int ends = 0;
		double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < o->n; i++) {
			if (o->fresh)
				CHECK(PtlMDBind(ni, d, PTL_UNLINK, &md));
			CHECK(PtlPut(md, PTL_NOACK_REQ, tgt, PT_DATA, 0, 0, 0, 0));
			ptl_event_t ev; /* keep the EQ from overflowing, without waiting */
			while (i - ends > EQ_LEN / 4 && PtlEQGet(eq, &ev) == PTL_OK)
				ends += ev.type == PTL_EVENT_SEND_END;
		}
		per[r] = (clock_s(CLOCK_THREAD_CPUTIME_ID) - t0) / o->n * 1e6;
		while (ends < o->n) {
			ptl_event_t ev;
			int rc = PtlEQWait(eq, &ev);
			if (rc != PTL_OK)
				CHECK(rc);
			ends += ev.type == PTL_EVENT_SEND_END;
		}
	}
	double ru = rusage_s() - ru0, wall = clock_s(CLOCK_MONOTONIC) - wall0;
	CHECK(PtlMDBind(
	    ni,
	    (ptl_md_t){
	        .start = &ctl, .length = sizeof(ctl), .threshold = 1, .eq_handle = PTL_EQ_NONE},
	    PTL_UNLINK, &md));
	CHECK(PtlPut(md, PTL_NOACK_REQ, tgt, PT_CTL, 0, 0, 0, 0)); /* done */
	qsort(per, (size_t)o->rounds, sizeof(per[0]), cmp_double);
	long total = (long)o->n * o->rounds;
	printf("hostcost initiator %s: %ld puts of 8 bytes%s in %d rounds, %.3f s: CPU per put "
	       "in the calls %.3f us (median; rounds %.3f-%.3f); process CPU per put %.3f us\n",
	       getenv("PTL_PROGRESS") ? getenv("PTL_PROGRESS") : "default", total,
	       o->fresh ? " (a fresh MD each)" : "", o->rounds, wall, per[o->rounds / 2], per[0],
	       per[o->rounds - 1], ru / (double)total * 1e6);
}

static void target(ptl_handle_ni_t ni, ptl_process_id_t ini, const struct opts *o)
{
	static uint64_t data, ctl, hello = 1;
	ptl_handle_eq_t eq, ceq, aeq;
	ptl_handle_md_t md;
	CHECK(PtlEQAlloc(ni, EQ_LEN, PTL_EQ_HANDLER_NONE, &eq));
	CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &ceq));
	CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &aeq));
	attach(ni, PT_DATA, &data, sizeof(data), eq);
	attach(ni, PT_CTL, &ctl, sizeof(ctl), ceq);
	CHECK(PtlMDBind(ni,
	                (ptl_md_t){.start = &hello,
	                           .length = sizeof(hello),
	                           .threshold = PTL_MD_THRESH_INF,
	                           .eq_handle = aeq},
	                PTL_RETAIN, &md));
	/* Ready, until the ack says the initiator's ME took it (a put that
	 * matches nothing is dropped without an ack). */
	for (int got = 0, tries = 0; !got; tries++) {
		if (tries == 300) {
			fprintf(stderr, "ptlhostcost: no ack from the initiator\n");
			exit(1);
		}
		CHECK(PtlPut(md, PTL_ACK_REQ, ini, PT_CTL, 0, 0, 0, 0));
		double until = clock_s(CLOCK_MONOTONIC) + 0.1;
		while (!got && clock_s(CLOCK_MONOTONIC) < until) {
			ptl_event_t ev;
			int which;
			if (PtlEQPoll(&aeq, 1, 10, &ev, &which) == PTL_OK)
				got = ev.type == PTL_EVENT_ACK && ev.mlength == sizeof(hello);
		}
	}
	/* No Portals call while the puts land: a compute loop. */
	double ru0 = rusage_s(), th0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	double until = clock_s(CLOCK_MONOTONIC) + o->loop_ms * 1e-3;
	volatile uint64_t x = 0;
	while (clock_s(CLOCK_MONOTONIC) < until)
		for (int i = 0; i < 10000; i++)
			x += (uint64_t)i * 2654435761u;
	double beside = (rusage_s() - ru0) - (clock_s(CLOCK_THREAD_CPUTIME_ID) - th0);
	if (beside < 0) /* the two clocks tick differently: nothing beside the loop */
		beside = 0;
	long total = (long)o->n * o->rounds, ends = 0;
	double ru1 = rusage_s();
	while (ends < total) {
		ptl_event_t ev;
		int rc = PtlEQWait(eq, &ev);
		if (rc != PTL_OK)
			CHECK(rc);
		ends += ev.type == PTL_EVENT_PUT_END;
	}
	double after = rusage_s() - ru1;
	wait_kind(ceq, PTL_EVENT_PUT_END); /* the initiator is done */
	printf("hostcost target %s: %ld puts: CPU beside the compute loop (%d ms) per put %.3f "
	       "us (%.1f ms in all); CPU taking the events afterwards per put %.3f us\n",
	       getenv("PTL_PROGRESS") ? getenv("PTL_PROGRESS") : "default", total, o->loop_ms,
	       beside / (double)total * 1e6, beside * 1e3, after / (double)total * 1e6);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ptlrun -n 2 ptlhostcost [-n PUTS] [-r ROUNDS] [--fresh-md] "
	           "[--loop-ms MS]\n"
	           "  the CPU per 8-byte put of the initiator (in its Portals calls) and of a\n"
	           "  target that computes, making no Portals call, while the puts land\n"
	           "  -n PUTS      puts per round, back to back (default 500, 1-16384)\n"
	           "  -r ROUNDS    rounds (default 20, 1-1000; the median round is reported)\n"
	           "  --fresh-md   each put from an MD of its own (PtlMDBind, threshold 1)\n"
	           "  --loop-ms MS the target's compute loop (default 3000)\n");
}

int main(int argc, char **argv)
{
	struct opts o = {.n = 500, .rounds = 20, .fresh = 0, .loop_ms = 3000};
	static const struct option lo[] = {{"fresh-md", no_argument, NULL, 'f'},
	                                   {"loop-ms", required_argument, NULL, 'l'},
	                                   {"help", no_argument, NULL, 'h'},
	                                   {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "n:r:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			o.n = (int)p3num_arg_u64("ptlhostcost", "-n", optarg, 1, EQ_LEN, 0);
			break;
		case 'r':
			o.rounds =
			    (int)p3num_arg_u64("ptlhostcost", "-r", optarg, 1, MAX_ROUNDS, 0);
			break;
		case 'f':
			o.fresh = 1;
			break;
		case 'l':
			o.loop_ms =
			    (int)p3num_arg_u64("ptlhostcost", "--loop-ms", optarg, 0, INT_MAX, 0);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.n < 1 || o.n > EQ_LEN || o.rounds < 1 || o.rounds > MAX_ROUNDS || o.loop_ms < 0) {
		usage(stderr);
		return 2;
	}
	int max_ifs;
	ptl_handle_ni_t ni;
	unsigned int rank, size;
	ptl_process_id_t peer;
	CHECK(PtlInit(&max_ifs));
	CHECK(PtlSetRank(PTL_INVALID_HANDLE, -1, -1));
	CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
	CHECK(PtlGetRank(ni, &rank, &size));
	if (size != 2) {
		fprintf(stderr, "ptlhostcost: run it with 2 ranks (ptlrun -n 2)\n");
		return 2;
	}
	CHECK(PtlGetRankId(ni, 1 - rank, &peer));
	if (rank == 0)
		initiator(ni, peer, &o);
	else
		target(ni, peer, &o);
	fflush(stdout);
	PtlNIFini(ni);
	PtlFini();
	return 0;
}
