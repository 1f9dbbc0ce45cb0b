/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p3scale - one rank of the scale test (tools/scale/README.md): an
 * all-to-all of small puts over N ranks of a ptlrun job, every byte checked,
 * with the start-up time, completion time, resident memory, heap growth per
 * peer and open descriptors of the rank printed on one line.
 *
 *   usage: p3scale [MSG_BYTES (default 64)] [TIMEOUT_S (default 600)]
 *   env:   P3SCALE_T0_NS  launch time (CLOCK_REALTIME ns) for the start-up figure
 *          P3SCALE_WINDOW puts in flight per rank (default 32)
 *
 * Phases: (1) Portals start-up and MEs; (2) a barrier through rank 0 (each
 * rank puts "ready" with an ack to rank 0 and retries while rank 0 drops it
 * for lack of an ME; rank 0 answers "go" to everyone); (3) every rank puts
 * MSG_BYTES to every other rank (PtlPutRegion of one MD, acks, at most
 * WINDOW in flight) into its own slot of the target's buffer; (4) wait for
 * the N-1 arrivals and acks, check every byte, measure, finalize.  Every
 * wait blocks in PtlEQPoll: idle ranks sleep, so 1024 ranks fit 2 cores.
 */
#include <dirent.h>
#include <malloc.h>
#include <p3rt/p3rt.h>
#include <portals3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p3num.h"

#define PT         7
#define BITS_A2A   1
#define BITS_READY 2
#define BITS_GO    3
#define WINDOW_DEFAULT 32

static unsigned me, n;
static unsigned timeout_ms = 600000;
static unsigned window = WINDOW_DEFAULT;
static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "p3scale rank %u: %s: %s\n", me, what, rc >= 0 ? PtlErrorStr((unsigned)rc) : "failed");
	exit(1);
}

static unsigned char pat(unsigned src, unsigned dst, size_t i)
{
	uint64_t x = ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ i;
	x *= 0x9E3779B97F4A7C15ull;
	return (unsigned char)(x >> 56);
}

static long status_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtol(line + strlen(key), NULL, 10);
	fclose(f);
	return v;
}

static int count_fds(void)
{
	int c = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		c++;
	closedir(d);
	return c - 3; /* ., .., the directory's own descriptor */
}

static ptl_handle_md_t attach(ptl_match_bits_t bits, void *buf, size_t len)
{
	ptl_process_id_t any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
	ptl_handle_me_t meh;
	ptl_handle_md_t md;
	ptl_md_t d;
	int rc = PtlMEAttach(ni, PT, any, bits, 0, PTL_RETAIN, PTL_INS_AFTER, &meh);
	if (rc != PTL_OK)
		die("PtlMEAttach", rc);
	memset(&d, 0, sizeof(d));
	d.start = buf;
	d.length = len;
	d.threshold = PTL_MD_THRESH_INF;
	d.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
	d.eq_handle = eq;
	d.user_ptr = (void *)(uintptr_t)bits;
	if ((rc = PtlMDAttach(meh, d, PTL_RETAIN, &md)) != PTL_OK)
		die("PtlMDAttach", rc);
	return md;
}

static ptl_handle_md_t bind(void *buf, size_t len, uintptr_t tag)
{
	ptl_handle_md_t md;
	ptl_md_t d;
	memset(&d, 0, sizeof(d));
	d.start = buf;
	d.length = len;
	d.threshold = PTL_MD_THRESH_INF;
	d.options = PTL_MD_EVENT_START_DISABLE;
	d.eq_handle = eq;
	d.user_ptr = (void *)tag;
	int rc = PtlMDBind(ni, d, PTL_RETAIN, &md);
	if (rc != PTL_OK)
		die("PtlMDBind", rc);
	return md;
}

static void next_event(ptl_event_t *ev)
{
	int which, rc = PtlEQPoll(&eq, 1, timeout_ms, ev, &which);
	if (rc == PTL_EQ_EMPTY)
		die("no event before the timeout", -1);
	if (rc != PTL_OK)
		die("PtlEQPoll", rc);
}

static unsigned arrivals, errors;
static unsigned char *seen;
static size_t msg = 64;

/* an all-to-all put arrived (possibly while we still wait for the GO: a
 * faster rank may already be past the barrier) */
static void arrival(const ptl_event_t *ev)
{
	unsigned src = (unsigned)ev->hdr_data;
	if (ev->ni_fail_type != PTL_NI_OK || src >= n || seen[src]++ || ev->offset != src * msg ||
	    ev->mlength != msg) {
		fprintf(stderr, "p3scale rank %u: bad or duplicate arrival (hdr %llu offset %llu fail %u)\n",
		        me, (unsigned long long)ev->hdr_data, (unsigned long long)ev->offset,
		        (unsigned)ev->ni_fail_type);
		errors++;
	}
	arrivals++;
}

static int is_arrival(const ptl_event_t *ev)
{
	return ev->type == PTL_EVENT_PUT_END && (uintptr_t)ev->md.user_ptr == BITS_A2A;
}

int main(int argc, char **argv)
{
	msg = argc > 1 ? p3num_arg_u64("p3scale", "MSG_BYTES", argv[1], 1, 65536, P3NUM_BASE0) : 64;
	const char *t0e = getenv("P3SCALE_T0_NS");
	uint64_t t0 = t0e ? p3num_arg_u64("p3scale", "P3SCALE_T0_NS", t0e, 0, UINT64_MAX, 0)
	                  : now_ns(),
	         t_ready, t_done;
	int max_if, rc;

	if (argc > 2)
		timeout_ms =
		    (unsigned)p3num_arg_u64("p3scale", "TIMEOUT_S", argv[2], 1, 4000000, 0) * 1000u;
	window = (unsigned)p3num_env_u64("p3scale", "P3SCALE_WINDOW", window, 1, 1u << 20, 0);
	if (msg < 1 || msg > 65536) {
		fprintf(stderr, "p3scale: MSG_BYTES must be 1..65536\n");
		return 2;
	}
	if ((rc = PtlInit(&max_if)) != PTL_OK)
		die("PtlInit", rc);
	if ((rc = PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1)) != PTL_OK)
		die("PtlSetRank", rc);
	if ((rc = PtlNIInit(PTL_IFACE_AUTO, PTL_PID_ANY, NULL, NULL, &ni)) != PTL_OK)
		die("PtlNIInit", rc);
	if ((rc = PtlGetRank(ni, &me, &n)) != PTL_OK)
		die("PtlGetRank", rc);
	ptl_process_id_t *id = malloc(sizeof(*id) * n);
	unsigned char *in = calloc(n, msg), *out = malloc(n * msg);
	seen = calloc(n, 1);
	uint64_t *ready_slots = calloc(n, sizeof(uint64_t)), go = 0, one = 1;
	if (!id || !in || !out || !seen || !ready_slots)
		die("out of memory", -1);
	for (unsigned r = 0; r < n; r++)
		if ((rc = PtlGetRankId(ni, r, &id[r])) != PTL_OK)
			die("PtlGetRankId", rc);
	for (unsigned r = 0; r < n; r++)
		for (size_t i = 0; i < msg; i++)
			out[r * msg + i] = pat(me, r, i);
	if ((rc = PtlEQAlloc(ni, 2 * n + 4 * window + 64, PTL_EQ_HANDLER_NONE, &eq)) != PTL_OK)
		die("PtlEQAlloc", rc);
	attach(BITS_A2A, in, n * msg);
	attach(BITS_GO, &go, sizeof(go));
	if (me == 0)
		attach(BITS_READY, ready_slots, n * sizeof(uint64_t));
	ptl_handle_md_t omd = bind(out, n * msg, 100), one_md = bind(&one, sizeof(one), 200);
	/* what the NAL holds per peer is measured from here on */
	struct mallinfo2 m0 = mallinfo2();
	long rss0 = status_kb("VmRSS:");
	ptl_event_t ev;

	/* (2) barrier through rank 0 */
	if (me != 0) {
		/* A put that reaches rank 0 before its ME exists is dropped
		 * silently (no ack): resend after a second without one.  Rank 0
		 * counts each rank once; late acks are told apart by their MD. */
		int got_go = 0, acked = 0;
		uint64_t resend = 0;
		while (!got_go) {
			if (!acked && now_ns() >= resend) {
				if ((rc = PtlPut(one_md, PTL_ACK_REQ, id[0], PT, 0, BITS_READY, me * 8, 0)) != PTL_OK)
					die("PtlPut ready", rc);
				resend = now_ns() + 1000000000ull;
			}
			int which;
			rc = PtlEQPoll(&eq, 1, 1000, &ev, &which);
			if (rc == PTL_EQ_EMPTY) {
				if (now_ns() - t0 > (uint64_t)timeout_ms * 1000000ull)
					die("no GO from rank 0 before the timeout", -1);
				continue;
			}
			if (rc != PTL_OK)
				die("PtlEQPoll", rc);
			if (ev.type == PTL_EVENT_ACK && ev.ni_fail_type == PTL_NI_OK)
				acked = 1;
			if (is_arrival(&ev))
				arrival(&ev);
			got_go = ev.type == PTL_EVENT_PUT_END && (uintptr_t)ev.md.user_ptr == BITS_GO;
		}
	} else {
		unsigned ready = 1;
		unsigned char *up = calloc(n, 1);
		if (!up)
			die("out of memory", -1);
		while (ready < n) {
			next_event(&ev);
			if (ev.type != PTL_EVENT_PUT_END || (uintptr_t)ev.md.user_ptr != BITS_READY)
				continue;
			unsigned r = (unsigned)(ev.offset / 8);
			if (r < n && r != 0 && !up[r]++)
				ready++;
		}
		free(up);
		go = 1;
		ptl_handle_md_t gmd = bind(&go, sizeof(go), 300);
		for (unsigned r = 1; r < n; r++)
			if ((rc = PtlPut(gmd, PTL_NOACK_REQ, id[r], PT, 0, BITS_GO, 0, 0)) != PTL_OK)
				die("PtlPut go", rc);
	}
	t_ready = now_ns();

	/* (3) all-to-all */
	unsigned next = 1, inflight = 0, acks = 0;
	while (acks < n - 1 || arrivals < n - 1) {
		while (next < n && inflight < window) {
			unsigned r = (me + next++) % n;
			if ((rc = PtlPutRegion(omd, r * msg, msg, PTL_ACK_REQ, id[r], PT, 0, BITS_A2A,
			                       me * msg, me)) != PTL_OK)
				die("PtlPutRegion", rc);
			inflight++;
		}
		int which;
		if ((rc = PtlEQPoll(&eq, 1, timeout_ms, &ev, &which)) == PTL_EQ_EMPTY) {
			fprintf(stderr, "p3scale rank %u: all-to-all: %u of %u acks, %u of %u arrivals before the timeout; missing from:",
			        me, acks, n - 1, arrivals, n - 1);
			for (unsigned r = 0; r < n; r++)
				if (r != me && !seen[r])
					fprintf(stderr, " %u", r);
			fputc('\n', stderr);
			exit(1);
		}
		if (rc != PTL_OK)
			die("PtlEQPoll", rc);
		if (ev.ni_fail_type != PTL_NI_OK && !is_arrival(&ev)) {
			fprintf(stderr, "p3scale rank %u: %s failed (%u)\n", me, PtlEventKindStr(ev.type),
			        (unsigned)ev.ni_fail_type);
			errors++;
		}
		if (ev.type == PTL_EVENT_ACK && (uintptr_t)ev.md.user_ptr == 100) {
			acks++;
			inflight--;
			if (ev.mlength != msg)
				errors++;
		} else if (is_arrival(&ev)) {
			arrival(&ev);
		}
	}
	/* (4) every byte */
	for (unsigned r = 0; r < n; r++)
		for (size_t i = 0; r != me && i < msg; i++)
			if (in[r * msg + i] != pat(r, me, i)) {
				fprintf(stderr, "p3scale rank %u: byte %zu from rank %u wrong\n", me, i, r);
				errors++;
				break;
			}
	t_done = now_ns();
	struct mallinfo2 m1 = mallinfo2();
	long rss = status_kb("VmRSS:"), hwm = status_kb("VmHWM:");
	long heap_per_peer = ((long)m1.uordblks - (long)m0.uordblks) / (long)(n - 1);
	long rss_per_peer = (rss - rss0) * 1024 / (long)(n - 1);
	printf("p3scale rank %u of %u: ready_ms %.1f a2a_ms %.1f rss_kb %ld hwm_kb %ld "
	       "heap_per_peer_b %ld rss_per_peer_b %ld fds %d errors %u\n",
	       me, n, (double)(t_ready - t0) / 1e6, (double)(t_done - t_ready) / 1e6, rss, hwm,
	       heap_per_peer, rss_per_peer, count_fds(), errors);
	fflush(stdout);
	PtlNIFini(ni);
	PtlFini();
	free(id);
	free(in);
	free(out);
	free(seen);
	free(ready_slots);
	return errors ? 1 : 0;
}
