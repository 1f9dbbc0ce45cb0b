/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pathprof.c - the path profile (rmpp.h): cycles from a received batch to
 * the next transmit, point by point, when P3_RMPP_PATHPROF is set.
 *
 * Why: the latency a Portals put adds over a raw datagram is spread over a
 * dozen layers (parse, CRC, acks, matching, events, the application, the
 * send path) of 50-300 cycles each; a sampling profiler on a VM without a
 * PMU shows the spin loop, not that chain.  Time stamps at layer boundaries
 * do: a path's marks are kept per thread and added to the process totals
 * when it ends, so a path that ends without a transmit (nothing to answer)
 * counts nowhere.  rdtsc costs ~25 cycles here; with the profile off a mark
 * is a load and a branch.
 */
#include "rmpp_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

int rmpp_pathprof_on_;

static const char *const point_names[RMPP_PP_NPOINTS] = {
	[RMPP_PP_RX_PARSED] = "rx_parsed",       [RMPP_PP_RX_CONN] = "rx_conn",
	[RMPP_PP_RX_ACKED] = "rx_acked",         [RMPP_PP_NAL_RX_HDR] = "nal_rx_hdr",
	[RMPP_PP_NAL_MATCHED] = "nal_matched",   [RMPP_PP_NAL_RX_DONE] = "nal_rx_done",
	[RMPP_PP_RX_DONE] = "rx_done",           [RMPP_PP_PROGRESS_RET] = "progress_ret",
	[RMPP_PP_NAL_SEND] = "nal_send",         [RMPP_PP_SEND] = "send",
	[RMPP_PP_SEND_QUEUED] = "send_queued",   [RMPP_PP_TX] = "tx",
};

static pthread_once_t pp_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t pp_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pp_sum[RMPP_PP_NPOINTS], pp_n[RMPP_PP_NPOINTS], pp_paths, pp_long;
/* A path longer than this is not a request answered (the application did
 * something else in between): counted apart, or a few would swamp the means. */
#define PATH_MAX_NS 100000u
static uint64_t pp_max_ticks = PATH_MAX_NS;
static double pp_ticks_per_ns = 1.0;
static char pp_dest[256];

static uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* TSC ticks per ns over 5 ms of the monotonic clock (only when on). */
static void calibrate(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t n0 = mono_ns(), t0 = ticks(), n1;
	while ((n1 = mono_ns()) - n0 < 5000000u)
		;
	uint64_t t1 = ticks();
	pp_ticks_per_ns = (double)(t1 - t0) / (double)(n1 - n0);
#endif
	pp_max_ticks = (uint64_t)(PATH_MAX_NS * pp_ticks_per_ns);
}

/* The report's file: "%p" in the name becomes the pid (one file per rank). */
static void dest_path(char *out, size_t cap)
{
	const char *p = strstr(pp_dest, "%p");
	if (!p) {
		snprintf(out, cap, "%s", pp_dest);
		return;
	}
	snprintf(out, cap, "%.*s%d%s", (int)(p - pp_dest), pp_dest, (int)getpid(), p + 2);
}

static void pathprof_report(void)
{
	FILE *out = stderr;
	char path[320];
	bool own = strcmp(pp_dest, "1") != 0;
	if (own) {
		dest_path(path, sizeof(path));
		if (!(out = fopen(path, "a"))) {
			fprintf(stderr,
				"rmpp: P3_RMPP_PATHPROF=%s: cannot open %s for appending (%m); "
				"the path profile is lost\n",
				pp_dest, path);
			return;
		}
	}
	pthread_mutex_lock(&pp_lock);
	fprintf(out,
		"# rmpp path profile, pid %d: %" PRIu64 " paths from a receive to the next "
		"transmit (%" PRIu64 " longer than %u us left out); %.3f ticks/ns\n"
		"# %-14s %12s %10s %10s\n",
		(int)getpid(), pp_paths, pp_long, PATH_MAX_NS / 1000u, pp_ticks_per_ns, "point",
		"mean_ticks", "mean_ns", "paths");
	for (int i = 0; i < RMPP_PP_NPOINTS; i++) {
		if (!pp_n[i])
			continue;
		double m = (double)pp_sum[i] / (double)pp_n[i];
		fprintf(out, "  %-14s %12.1f %10.1f %10" PRIu64 "\n", point_names[i], m,
			m / pp_ticks_per_ns, pp_n[i]);
	}
	pthread_mutex_unlock(&pp_lock);
	if (own)
		fclose(out);
	else
		fflush(out);
}

static void pathprof_init_once(void)
{
	const char *v = getenv("P3_RMPP_PATHPROF");
	if (!v || !*v || strcmp(v, "0") == 0)
		return;
	snprintf(pp_dest, sizeof(pp_dest), "%s", v);
	calibrate();
	atexit(pathprof_report);
	rmpp_pathprof_on_ = 1;
}

void rmpp_pathprof_init(void)
{
	pthread_once(&pp_once, pathprof_init_once);
}

void rmpp_pathprof_start_(struct rmpp_ep *ep)
{
	ep->pp.t0 = ticks();
	ep->pp.hit = 0;
}

static void path_end(struct rmpp_pathprof_path *cur)
{
	pthread_mutex_lock(&pp_lock);
	if (cur->at[RMPP_PP_TX] > pp_max_ticks) {
		pp_long++;
	} else {
		for (int i = 0; i < RMPP_PP_NPOINTS; i++)
			if (cur->hit & (1u << i)) {
				pp_sum[i] += cur->at[i];
				pp_n[i]++;
			}
		pp_paths++;
	}
	pthread_mutex_unlock(&pp_lock);
	cur->t0 = 0;
}

void rmpp_pathprof_mark(struct rmpp_ep *ep, enum rmpp_pathprof_point pt)
{
	if (!rmpp_pathprof_on_ || !ep || !ep->pp.t0 || (unsigned)pt >= RMPP_PP_NPOINTS)
		return;
	struct rmpp_pathprof_path *cur = &ep->pp;
	cur->at[pt] = ticks() - cur->t0;
	cur->hit |= 1u << pt;
	if (pt == RMPP_PP_TX)
		path_end(cur);
}
