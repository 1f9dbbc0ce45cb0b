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

/* 1 if every CPU of mine is in taken. */
int myri_cpus_covered(const cpu_set_t *mine, const cpu_set_t *taken);

#endif
