/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * oversub_floor.c - the floor under an allreduce of N processes that share
 * fewer cores: what a perfect communication library (no matching, no
 * protocol, one cache line per message) pays in waits and context switches.
 *
 *   p3-oversub-floor [-n NPROCS] [-w spin|yield|futex|handoff] [-a rd|rsag]
 *                    [-i ITERS] [-s SPIN] [-t HANDOFF_US]
 *
 * NPROCS (a power of two, <= 64) processes forked from this one run ITERS
 * recursive-doubling "allreduces" of one 64-bit word (the textbook
 * algorithm for small messages): at step k, rank r writes its word and the iteration
 * into its slot for step k and waits for the slot of rank r ^ 2^k.  With
 * -a rsag the rounds are those MPICH 4.0.2 runs for 64 B on 4 ranks
 * (MPIR_Allreduce_intra_reduce_scatter_allgather): a reduce-scatter by
 * recursive halving (partners at distance N/2 down to 1), then an allgather
 * by recursive doubling (1 up to N/2), twice the rounds.  The wait is
 *   spin   a pause loop (the best case when every process has a core);
 *   yield  sched_yield() between checks (a handoff to the co-scheduled
 *          process, never sleeping);
 *   futex  SPIN checks with sched_yield, then FUTEX_WAIT on the slot; a
 *          writer wakes the waiter it finds registered;
 *   handoff checks with sched_yield for HANDOFF_US (50) microseconds, then
 *          FUTEX_WAIT as futex does: P3_OVERSUB_WAIT=handoff's wait without
 *          its back-off (portals/api-handoff.c).
 * The sums are checked every iteration.  Prints one line:
 *   "floor: N procs, WAIT: X us per allreduce (ITERS iterations)" (WAIT/rsag
 *   with -a rsag).
 * Used by mpi-adapter/README.md ("Oversubscription") to show how close to the
 * 2-rank figure 4 ranks on 2 cores can come; not a test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "p3num.h"

#define MAX_PROCS 64
#define MAX_STEPS 12 /* rounds: 2 log2(MAX_PROCS) with -a rsag */

enum wait_kind { WAIT_SPIN, WAIT_YIELD, WAIT_FUTEX, WAIT_HANDOFF };

struct slot {
	_Atomic uint32_t seq;     /* the iteration this value belongs to (futex word) */
	_Atomic uint32_t waiting; /* a reader sleeps on seq */
	uint64_t value;
	char pad[48];
};

struct shared {
	struct slot slot[MAX_PROCS][MAX_STEPS][2]; /* [iteration & 1] */
	_Atomic uint32_t ready;
	_Atomic uint32_t go;
	double elapsed_us[MAX_PROCS];
	int errors;
};

static long futex(_Atomic uint32_t *w, int op, uint32_t v)
{
	return syscall(SYS_futex, (uint32_t *)w, op, v, NULL, NULL, 0);
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void wait_seq(struct slot *s, uint32_t want, enum wait_kind how, int spin)
{
	double end = how == WAIT_HANDOFF ? now_us() + spin : 0;
	for (int i = 0; atomic_load_explicit(&s->seq, memory_order_acquire) != want; i++) {
		if (how == WAIT_SPIN) {
			__builtin_ia32_pause();
		} else if (how == WAIT_YIELD || (how == WAIT_FUTEX && i < spin) ||
		           (how == WAIT_HANDOFF && now_us() < end)) {
			sched_yield();
		} else {
			atomic_store(&s->waiting, 1);
			if (atomic_load(&s->seq) != want)
				futex(&s->seq, FUTEX_WAIT, atomic_load(&s->seq));
			atomic_store(&s->waiting, 0);
		}
	}
}

static void post(struct slot *s, uint32_t seq, uint64_t v, enum wait_kind how)
{
	s->value = v;
	atomic_store_explicit(&s->seq, seq, memory_order_release);
	if ((how == WAIT_FUTEX || how == WAIT_HANDOFF) && atomic_load(&s->waiting))
		futex(&s->seq, FUTEX_WAKE, 1);
}

/* The partner distance of round k: recursive doubling (1, 2, 4 ...), or
 * rsag's halving (N/2 ... 1) then doubling (1 ... N/2). */
static int round_distance(int k, int log2n, int rsag)
{
	if (!rsag)
		return 1 << k;
	return k < log2n ? 1 << (log2n - 1 - k) : 1 << (k - log2n);
}

static void rank_main(struct shared *sh, int rank, int n, int iters, enum wait_kind how, int spin,
                      int rsag)
{
	int log2n = __builtin_ctz((unsigned)n);
	int steps = rsag ? 2 * log2n : log2n;
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		sched_yield();
	double t0 = 0;
	for (int it = 1; it <= iters + 100; it++) {
		if (it == 101)
			t0 = now_us(); /* 100 warm-up iterations */
		uint64_t v = (uint64_t)rank + (uint64_t)it;
		for (int k = 0; k < steps; k++) {
			int peer = rank ^ round_distance(k, log2n, rsag);
			post(&sh->slot[rank][k][it & 1], (uint32_t)it, v, how);
			wait_seq(&sh->slot[peer][k][it & 1], (uint32_t)it, how, spin);
			uint64_t theirs = sh->slot[peer][k][it & 1].value;
			/* allgather rounds: both hold the sum already */
			if (k < log2n)
				v += theirs;
			else if (theirs != v)
				__atomic_fetch_add(&sh->errors, 1, __ATOMIC_RELAXED);
		}
		/* sum over r of (r + it) */
		if (v != (uint64_t)n * (uint64_t)(n - 1) / 2 + (uint64_t)n * (uint64_t)it)
			__atomic_fetch_add(&sh->errors, 1, __ATOMIC_RELAXED);
		/* slots alternate by iteration: a rank can be one iteration
		 * ahead of a partner still reading, never two (it would need the
		 * partner's next post first) */
	}
	sh->elapsed_us[rank] = now_us() - t0;
}

int main(int argc, char **argv)
{
	int n = 4, iters = 20000, spin = 100, handoff_us = 50, rsag = 0, opt;
	enum wait_kind how = WAIT_YIELD;
	const char *hows[] = {"spin", "yield", "futex", "handoff"};
	while ((opt = getopt(argc, argv, "n:w:a:i:s:t:")) != -1) {
		switch (opt) {
		case 'a':
			rsag = !strcmp(optarg, "rsag") ? 1 : !strcmp(optarg, "rd") ? 0 : -1;
			break;
		case 'n':
			n = (int)p3num_arg_u64("p3-oversub-floor", "-n", optarg, 2, MAX_PROCS, 0);
			break;
		case 'i':
			iters = (int)p3num_arg_u64("p3-oversub-floor", "-i", optarg, 1, INT_MAX, 0);
			break;
		case 's':
			spin = (int)p3num_arg_u64("p3-oversub-floor", "-s", optarg, 0, INT_MAX, 0);
			break;
		case 't':
			handoff_us =
			    (int)p3num_arg_u64("p3-oversub-floor", "-t", optarg, 0, 1000000, 0);
			break;
		case 'w':
			how = !strcmp(optarg, "spin")      ? WAIT_SPIN
			      : !strcmp(optarg, "yield")   ? WAIT_YIELD
			      : !strcmp(optarg, "futex")   ? WAIT_FUTEX
			      : !strcmp(optarg, "handoff") ? WAIT_HANDOFF
			                                   : (enum wait_kind) - 1;
			break;
		default:
			how = (enum wait_kind) - 1;
		}
	}
	if ((int)how < 0 || rsag < 0 || n < 2 || n > MAX_PROCS || (n & (n - 1)) || iters < 1 ||
	    spin < 0 || handoff_us < 0) {
		fprintf(stderr,
		        "usage: %s [-n 2|4|...|64] [-w spin|yield|futex|handoff] [-a rd|rsag] "
		        "[-i ITERS] [-s SPIN] [-t HANDOFF_US]\n",
		        argv[0]);
		return 2;
	}
	struct shared *sh =
	    mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	pid_t pids[MAX_PROCS];
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return 1;
		if (pids[r] == 0) {
			rank_main(sh, r, n, iters, how, how == WAIT_HANDOFF ? handoff_us : spin,
			          rsag);
			_exit(0);
		}
	}
	while (atomic_load(&sh->ready) < (uint32_t)n)
		usleep(1000);
	atomic_store(&sh->go, 1);
	int bad = 0;
	for (int r = 0; r < n; r++) {
		int st;
		if (waitpid(pids[r], &st, 0) != pids[r] || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	double worst = 0;
	for (int r = 0; r < n; r++)
		worst = sh->elapsed_us[r] > worst ? sh->elapsed_us[r] : worst;
	printf("floor: %d procs, %s%s: %.2f us per allreduce (%d iterations)%s\n", n, hows[how],
	       rsag ? "/rsag" : "", worst / iters, iters, sh->errors || bad ? ", ERRORS" : "");
	return sh->errors || bad;
}
