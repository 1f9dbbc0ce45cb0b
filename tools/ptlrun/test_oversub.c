/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_oversub.c - ptl_oversub_detect() (<p3rt/oversub.h>) with pinned
 * ranks: the local ranks' CPUs are the union of their affinity masks
 * (portals/runtime/affinity_board.c), not each rank's own one.
 *
 * Children of this process play the local ranks of a job (their common
 * parent names the board, as hydra's proxy or slurmstepd would), each
 * pinned with sched_setaffinity, MPI_LOCALNRANKS set, and report what
 * detection found through a pipe.  Cases, with CPUs a and b of our mask:
 *   2 ranks pinned a, b          -> not oversubscribed, 2 CPUs (the union)
 *   4 ranks pinned a, b, a, b    -> oversubscribed, 2 CPUs
 *   2 ranks both pinned a        -> oversubscribed, 1 CPU
 *   2 ranks unpinned (a and b)   -> not oversubscribed, own mask, no board
 *   2 local ranks, 1 started     -> the wait ends (2 s): own mask, 1 CPU
 * and no board object is left in /dev/shm.  Needs 2 CPUs (else 77); ~3 s.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <p3rt/oversub.h>

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct report {
	int oversubscribed;
	unsigned cpus;
	char cpus_source[32];
};

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("FAIL: " __VA_ARGS__);                                              \
			printf("\n");                                                              \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static void child(int cpu_a, int cpu_b, unsigned nranks, int fd)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu_a, &set);
	if (cpu_b >= 0)
		CPU_SET(cpu_b, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		_exit(3);
	char v[16];
	snprintf(v, sizeof(v), "%u", nranks);
	setenv("MPI_LOCALNRANKS", v, 1);
	struct ptl_oversub o;
	struct report r = {0};
	r.oversubscribed = ptl_oversub_detect(&o);
	r.cpus = o.cpus;
	snprintf(r.cpus_source, sizeof(r.cpus_source), "%s", o.cpus_source);
	_exit(write(fd, &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 4);
}

/* Start `started` ranks of a job of `nranks`, rank i pinned to pins[2i]
 * (and pins[2i+1] unless -1); their reports in rep[]. */
static int run_job(unsigned nranks, unsigned started, const int *pins, struct report *rep)
{
	int fds[8][2];
	pid_t pids[8];
	for (unsigned i = 0; i < started; i++) {
		if (pipe(fds[i]) != 0)
			return -1;
		pids[i] = fork();
		if (pids[i] < 0)
			return -1;
		if (pids[i] == 0) {
			close(fds[i][0]);
			child(pins[2 * i], pins[2 * i + 1], nranks, fds[i][1]);
		}
		close(fds[i][1]);
	}
	int rc = 0;
	for (unsigned i = 0; i < started; i++) {
		if (read(fds[i][0], &rep[i], sizeof(rep[i])) != (ssize_t)sizeof(rep[i]))
			rc = -1;
		close(fds[i][0]);
		int st;
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			rc = -1;
	}
	return rc;
}

static void expect(const char *what, unsigned nranks, unsigned started, const int *pins,
                   int oversub, unsigned cpus, const char *source)
{
	struct report rep[8];
	if (run_job(nranks, started, pins, rep) != 0) {
		CHECK(0, "%s: a rank failed", what);
		return;
	}
	for (unsigned i = 0; i < started; i++) {
		printf("%s: rank %u: %s, %u CPUs (%s)\n", what, i,
		       rep[i].oversubscribed ? "oversubscribed" : "not oversubscribed", rep[i].cpus,
		       rep[i].cpus_source);
		CHECK(rep[i].oversubscribed == oversub, "%s: rank %u: oversubscribed %d, want %d",
		      what, i, rep[i].oversubscribed, oversub);
		CHECK(rep[i].cpus == cpus, "%s: rank %u: %u CPUs, want %u", what, i, rep[i].cpus,
		      cpus);
		CHECK(!strcmp(rep[i].cpus_source, source), "%s: rank %u: CPUs from '%s', want '%s'",
		      what, i, rep[i].cpus_source, source);
	}
}

static int boards_left(void)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "p3aff-%u-%d-", (unsigned)getuid(), (int)getpid());
	DIR *d = opendir("/dev/shm");
	int n = 0;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));)
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

int main(void)
{
	static const char *const vars[] = {
	    "P3_LOCAL_RANKS", "P3_NODE_CPUS", "P3_OVERSUBSCRIBED", "SLURM_STEP_TASKS_PER_NODE",
	    "SLURM_NODEID",   "PTL_NIDMAP",   "PTL_MY_RID"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	cpu_set_t set;
	int a = -1, b = -1;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE && b < 0; c++)
			if (CPU_ISSET(c, &set)) {
				if (a < 0)
					a = c;
				else
					b = c;
			}
	if (b < 0) {
		printf("SKIP: needs 2 CPUs in the affinity mask\n");
		return 77;
	}
	/* when the machine has exactly these 2 CPUs online, an unpinned rank
	 * holds all of them: its own mask settles it */
	const char *own = "affinity", *board = "local ranks' affinity";
	expect("2 ranks pinned apart", 2, 2, (int[]){a, -1, b, -1}, 0, 2, board);
	expect("4 ranks pinned on 2 CPUs", 4, 4, (int[]){a, -1, b, -1, a, -1, b, -1}, 1, 2, board);
	expect("2 ranks pinned together", 2, 2, (int[]){a, -1, a, -1}, 1, 1, board);
	expect("2 ranks unpinned", 2, 2, (int[]){a, b, a, b}, 0, 2, own);
	expect("1 of 2 ranks started", 2, 1, (int[]){a, -1}, 1, 1, own);
	CHECK(boards_left() == 0, "%d board object(s) left in /dev/shm", boards_left());
	if (failures)
		return 1;
	printf("PASS: test_oversub: pinned ranks are counted on the union of their CPUs\n");
	return 0;
}
