/* SPDX-License-Identifier: BSD-3-Clause */
/* cpu_share.h - spin or block, from who shares our core (cpu_share.c). */
#ifndef MYRI_CPU_SHARE_H
#define MYRI_CPU_SHARE_H

#include <sched.h>
#include <sys/types.h>

enum myri_spin {
	MYRI_SPIN_NONE,  /* block at once: the other side needs this very core */
	MYRI_SPIN_YIELD, /* spin briefly, yielding: the other side may be here */
	MYRI_SPIN,       /* spin briefly: the other side runs on other cores */
};

/* The policy of a waiter in this process whose wait process `other` ends. */
enum myri_spin myri_spin_policy(pid_t other);

/* myri_spin_policy, unless P3_MYRI_SPIN (none|yield|spin) says otherwise. */
enum myri_spin myri_spin_policy_env(pid_t other);

/* A waiter's spin when the other side runs on other cores (MYRI_SPIN):
 * P3_MYRI_SPIN_US (at most 100000), else def_us (also, with a warning on
 * stderr, when P3_MYRI_SPIN_US is not a number). */
unsigned int myri_spin_budget_env(unsigned int def_us);

/* 1 if every CPU of mine is in taken. */
int myri_cpus_covered(const cpu_set_t *mine, const cpu_set_t *taken);

/* sched_slice.c: ask the kernel for a scheduling slice of slice_us for the
 * calling thread (0: leave the kernel's; clamped to 100-100000 us), so that
 * it preempts a CPU-bound task on its core when it wakes (Linux >= 6.12).
 * Returns the slice granted in us, 0 if none was asked, or -errno (-ENOSYS:
 * the kernel has no custom slices; -EPERM: not a fair-class thread). */
int myri_sched_set_slice(unsigned slice_us);

/* The environment variable name if set (and *given = 1), else def_us
 * (*given = 0); def_us and *given = -1 with the reason in msg if it is not a
 * number in 0-MYRI_MAX_SLICE_US (p3num.h). */
#define MYRI_MAX_SLICE_US 100000
unsigned myri_slice_env(const char *name, unsigned def_us, int *given, char *msg, size_t msglen);

#endif
