/* SPDX-License-Identifier: BSD-3-Clause */
/* sched_slice.c - the scheduling slice of the NIC (mcpd) and of the host's
 * interrupt handler thread.
 *
 * A Myrinet NIC had a processor of its own: its firmware never waited for
 * the host's computation; a kernel interrupt handler runs the moment its
 * interrupt arrives.  Here both are tasks sharing a core with a rank, and Linux's fair
 * scheduler (EEVDF, 6.6+) lets a CPU-bound task that is running finish its
 * slice (0.75 ms x (1 + log2 CPUs)) before a task that just woke up gets the
 * core.  On two cores that is 1.5 ms: a doorbell or a frame arriving while
 * the rank beside the NIC computes waited up to that long, and COMB's 100 KB
 * PWW exchange over offload took 0.7 or 1.1-1.6 ms depending on where that
 * wake-up fell (nal/myrinet/README.md "Scheduling slice").
 *
 * Since Linux 6.12 a SCHED_OTHER task may ask for a shorter slice
 * (sched_attr.sched_runtime, 0.1-100 ms); a task with a shorter slice than
 * the running one preempts it when it wakes (PREEMPT_SHORT).  mcpd and the
 * handler thread ask for one: they keep their fair share of CPU time (what
 * they take is still taken from the rank on their core, as the paper's
 * accounting wants), but get the core when they have work.  Older kernels
 * ignore the field: the call says so (-ENOSYS). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_share.h"
#include "p3num.h"

/* The kernel's struct sched_attr (include/uapi/linux/sched/types.h, version
 * 1 without the utilisation clamps: 48 bytes); glibc 2.36 has no wrapper. */
struct myri_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

/* The kernel's bounds of a fair task's custom slice (kernel/sched/syscalls.c). */
#define MYRI_SLICE_MIN_US 100u
#define MYRI_SLICE_MAX_US 100000u

int myri_sched_set_slice(unsigned slice_us)
{
	if (slice_us == 0)
		return 0;
	if (slice_us < MYRI_SLICE_MIN_US)
		slice_us = MYRI_SLICE_MIN_US;
	if (slice_us > MYRI_SLICE_MAX_US)
		slice_us = MYRI_SLICE_MAX_US;
#ifdef SYS_sched_getattr
	struct myri_sched_attr a;
	memset(&a, 0, sizeof(a));
	/* keep the policy and nice level the task was started with */
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0)
		return -errno;
	if (a.sched_policy != 0 && a.sched_policy != 3) /* SCHED_OTHER, SCHED_BATCH */
		return -EPERM;
	a.size = sizeof(a);
	a.sched_flags = 0;
	a.sched_runtime = (uint64_t)slice_us * 1000u;
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
		return -errno;
	/* a kernel older than 6.12 accepts the call and ignores the field */
	memset(&a, 0, sizeof(a));
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0 || a.sched_runtime == 0)
		return -ENOSYS;
	return (int)(a.sched_runtime / 1000u);
#else
	return -ENOSYS;
#endif
}

unsigned myri_slice_env(const char *name, unsigned def_us, int *given, char *msg, size_t msglen)
{
	const char *e = getenv(name);
	uint64_t v = def_us;
	*given = e && *e;
	if (*given && p3num_u64(name, e, 0, MYRI_MAX_SLICE_US, P3NUM_BASE0, &v, msg, msglen))
		*given = -1;
	return *given > 0 ? (unsigned)v : def_us;
}
