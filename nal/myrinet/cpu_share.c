/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_share.c - does a waiter share its core with the other side of the
 * device interface?  On a machine with fewer cores than busy processes
 * (the 2-core benchmark placement: the measured rank alone on one core,
 * its NIC beside the peer on the other) a spin is only cheap when the
 * process that will end it runs elsewhere; spinning on the core that
 * process needs holds it off for the whole spin (measured: one interrupt
 * per message and +50 us per hop), and yielding hands the core to any
 * other job.  So the side that shares the only core it may run on with
 * the other side blocks at once, and a side that may share spins briefly
 * and yields.  Decided from the CPU affinity masks, which a launcher sets.
 */
#include "cpu_share.h"
#include "p3num.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

enum myri_spin myri_spin_policy(pid_t other)
{
	cpu_set_t mine, theirs, both;
	if (sched_getaffinity(0, sizeof(mine), &mine) != 0 ||
	    sched_getaffinity(other, sizeof(theirs), &theirs) != 0)
		return MYRI_SPIN_YIELD; /* unknown: brief, and polite */
	CPU_AND(&both, &mine, &theirs);
	if (CPU_COUNT(&both) == 0)
		return MYRI_SPIN; /* the other side never needs this core */
	if (CPU_COUNT(&mine) == 1 && CPU_EQUAL(&both, &theirs))
		return MYRI_SPIN_NONE; /* it runs only on our one core */
	return MYRI_SPIN_YIELD;
}

int myri_cpus_covered(const cpu_set_t *mine, const cpu_set_t *taken)
{
	cpu_set_t rest;
	CPU_OR(&rest, mine, taken);
	return CPU_EQUAL(&rest, taken);
}

enum myri_spin myri_spin_policy_env(pid_t other)
{
	const char *e = getenv("P3_MYRI_SPIN");
	if (e && !strcmp(e, "none"))
		return MYRI_SPIN_NONE;
	if (e && !strcmp(e, "yield"))
		return MYRI_SPIN_YIELD;
	if (e && !strcmp(e, "spin"))
		return MYRI_SPIN;
	return myri_spin_policy(other);
}

unsigned int myri_spin_budget_env(unsigned int def_us)
{
	const char *e = getenv("P3_MYRI_SPIN_US");
	if (e && *e) {
		uint64_t v;
		char msg[160];
		if (!p3num_u64("P3_MYRI_SPIN_US", e, 0, UINT64_MAX, P3NUM_BASE0, &v, msg,
		               sizeof(msg)))
			return v > 100000 ? 100000u : (unsigned int)v;
		fprintf(stderr, "p3stack[myrinet] warning: %s; using %u\n", msg, def_us);
	}
	return def_us;
}
