/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * oversub.c - more ranks on this node than CPUs they may use?  The answer
 * decides whether waits busy-poll (fast when every rank has a core) or yield
 * (else a polling rank holds the core its peer needs: milliseconds per
 * message instead of microseconds).  See <p3rt/oversub.h> for precedence.
 *
 * Standalone (no libportals3 state): bench/osu compiles it too, to say in
 * its header what the adapter decided.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <p3rt/oversub.h>

#include "affinity_board.h"
#include "p3num.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OVERSUB_EXPORT __attribute__((visibility("default")))

/* A positive decimal count below 2^20, or 0 (absent, malformed). */
static unsigned env_count(const char *name)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	uint64_t v;
	return p3num_u64(name, s, 1, 1u << 20, 0, &v, NULL, 0) ? 0 : (unsigned)v;
}

/* Slurm's "2(x3),1" (tasks per node, run-length coded) at node index. */
static unsigned slurm_local_tasks(void)
{
	const char *s = getenv("SLURM_STEP_TASKS_PER_NODE");
	const char *id = getenv("SLURM_NODEID");
	if (!s || !id || !*id)
		s = NULL;
	if (!s)
		return 0;
	unsigned long node = strtoul(id, NULL, 10), at = 0;
	while (*s) {
		char *end;
		unsigned long tasks = strtoul(s, &end, 10), reps = 1;
		if (end == s)
			return 0;
		s = end;
		if (*s == '(') {
			if (s[1] != 'x')
				return 0;
			reps = strtoul(s + 2, &end, 10);
			if (*end != ')' || reps == 0)
				return 0;
			s = end + 1;
		}
		if (node < at + reps)
			return tasks > 0 && tasks <= (1ul << 20) ? (unsigned)tasks : 0;
		at += reps;
		if (*s == ',')
			s++;
		else if (*s)
			return 0;
	}
	return 0;
}

/* ptlrun: ranks of PTL_NIDMAP whose nid is PTL_MY_RID's. */
static unsigned nidmap_local_ranks(void)
{
	const char *map = getenv("PTL_NIDMAP");
	const char *rid = getenv("PTL_MY_RID");
	if (!map || !rid || !*map || !*rid)
		return 0;
	unsigned long me = strtoul(rid, NULL, 10), i = 0;
	size_t mylen = 0;
	const char *mine = NULL;
	for (const char *p = map; *p; i++) { /* find my entry */
		size_t n = strcspn(p, ":");
		if (i == me) {
			mine = p;
			mylen = n;
			break;
		}
		p += n + (p[n] == ':');
	}
	if (!mine)
		return 0;
	unsigned count = 0;
	for (const char *p = map; *p;) {
		size_t n = strcspn(p, ":");
		count += n == mylen && !memcmp(p, mine, n);
		p += n + (p[n] == ':');
	}
	return count;
}

static unsigned local_ranks(char *source, size_t len)
{
	static const char *const vars[] = {"P3_LOCAL_RANKS", "MPI_LOCALNRANKS"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		unsigned n = env_count(vars[i]);
		if (n) {
			snprintf(source, len, "%s", vars[i]);
			return n;
		}
	}
	unsigned n = slurm_local_tasks();
	if (n) {
		snprintf(source, len, "SLURM_STEP_TASKS_PER_NODE");
		return n;
	}
	n = nidmap_local_ranks();
	if (n)
		snprintf(source, len, "PTL_NIDMAP");
	return n;
}

/* The CPUs the local ranks may use.  A rank's own mask is the answer when
 * it settles the question (it holds as many CPUs as there are ranks, or
 * every online CPU); a pinned rank (fewer) asks the other local ranks for
 * theirs (affinity_board.c): two ranks pinned to CPUs 0 and 1 are not
 * oversubscribed although each sees one CPU. */
static unsigned usable_cpus(unsigned local_ranks, char *source, size_t len)
{
	unsigned n = env_count("P3_NODE_CPUS");
	if (n) {
		snprintf(source, len, "P3_NODE_CPUS");
		return n;
	}
	cpu_set_t mine, all;
	if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || CPU_COUNT(&mine) <= 0) {
		snprintf(source, len, "unknown");
		return 1;
	}
	unsigned own = (unsigned)CPU_COUNT(&mine);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(source, len, "affinity");
	if (local_ranks <= own || (online > 0 && own >= (unsigned long)online))
		return own;
	if (p3_affinity_board_union(local_ranks, &mine, &all) != 0)
		return own;
	snprintf(source, len, "local ranks' affinity");
	return (unsigned)CPU_COUNT(&all);
}

OVERSUB_EXPORT int ptl_oversub_detect(struct ptl_oversub *o)
{
	memset(o, 0, sizeof(*o));
	o->local_ranks = local_ranks(o->source, sizeof(o->source));
	o->cpus = usable_cpus(o->local_ranks, o->cpus_source, sizeof(o->cpus_source));
	o->oversubscribed = o->local_ranks > o->cpus;
	const char *force = getenv("P3_OVERSUBSCRIBED");
	if (force && (!strcmp(force, "0") || !strcmp(force, "1"))) {
		o->oversubscribed = force[0] == '1';
		snprintf(o->source, sizeof(o->source), "P3_OVERSUBSCRIBED");
	}
	return o->oversubscribed;
}

OVERSUB_EXPORT enum ptl_oversub_wait ptl_oversub_wait_policy(void)
{
	const char *w = getenv("P3_OVERSUB_WAIT");
	if (w && !strcmp(w, "sleep"))
		return PTL_OVERSUB_WAIT_SLEEP;
	if (w && !strcmp(w, "yield"))
		return PTL_OVERSUB_WAIT_YIELD;
	return PTL_OVERSUB_WAIT_HANDOFF;
}

OVERSUB_EXPORT unsigned ptl_oversub_handoff_us(void)
{
	const char *s = getenv("P3_OVERSUB_HANDOFF_US");
	if (!s || !*s)
		return PTL_OVERSUB_HANDOFF_US;
	uint64_t v;
	return p3num_u64("P3_OVERSUB_HANDOFF_US", s, 0, 100000, 0, &v, NULL, 0)
	           ? PTL_OVERSUB_HANDOFF_US
	           : (unsigned)v;
}

OVERSUB_EXPORT const char *ptl_oversub_wait_name(enum ptl_oversub_wait w)
{
	return w == PTL_OVERSUB_WAIT_SLEEP   ? "sleep"
	       : w == PTL_OVERSUB_WAIT_YIELD ? "yield"
	                                     : "handoff";
}

/* The verdict's words; "waits yield" in every oversubscribed form, which
 * bench/compare's report looks for. */
static void verdict(int oversubscribed, char *buf, size_t len)
{
	enum ptl_oversub_wait w = ptl_oversub_wait_policy();
	if (!oversubscribed)
		snprintf(buf, len, "not oversubscribed, waits busy-poll");
	else if (w == PTL_OVERSUB_WAIT_HANDOFF)
		snprintf(buf, len,
		         "oversubscribed, waits yield the CPU (handoff: sched_yield for %u us, "
		         "then sleep)",
		         ptl_oversub_handoff_us());
	else
		snprintf(buf, len, "oversubscribed, waits yield the CPU (%s)",
		         w == PTL_OVERSUB_WAIT_SLEEP ? "sleeping" : "sched_yield");
}

OVERSUB_EXPORT void ptl_oversub_describe(const struct ptl_oversub *o, char *buf, size_t len)
{
	char v[96];
	verdict(o->oversubscribed, v, sizeof(v));
	if (!strcmp(o->source, "P3_OVERSUBSCRIBED"))
		snprintf(buf, len, "P3_OVERSUBSCRIBED=%d: %s", o->oversubscribed, v);
	else if (!o->local_ranks)
		snprintf(buf, len, "local ranks unknown, %u CPUs: waits busy-poll", o->cpus);
	else
		snprintf(buf, len, "%u local ranks (%s) on %u CPUs (%s): %s", o->local_ranks,
		         o->source, o->cpus, o->cpus_source, v);
}
