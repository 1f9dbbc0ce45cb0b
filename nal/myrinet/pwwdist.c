/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pwwdist.c - COMB's PWW loop (bench/comb/comb.c pww_run: MPI_Irecv +
 * MPI_Isend, rank 0 works for the interval, both wait; rank 1, the support
 * rank, polls with MPI_Testall) with the times of every iteration instead of
 * their means: the distribution of rank 0's wait phase, and which rank
 * posted each iteration first (the support "ahead": its message was at rank
 * 0's NIC before rank 0 posted its receive).  README §3.8.
 *
 * Usage: pwwdist [SIZE [INTERVAL_US [ITERS [WARMUP]]]] (100000 1000 200 20);
 * rank r pins itself to CPU r.  PWW_CSV=FILE: one line per iteration (index,
 * support post time - rank 0 post time, rank 0 wait, support end - rank 0
 * end; us).  PWW_TRACE0=1: rank 0 prints the ptl3 provider's event trace
 * (FI_PTL3_TRACE) and a PWWPOST / PWWMARK line after each post and wait
 * phase, to attribute events to phases.  Not built by make (an MPI program):
 *   $(mpi-adapter/build-mpich --print-prefix)/bin/mpicc -O2 -o pwwdist \
 *       nal/myrinet/pwwdist.c
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}
static void work(double us)
{
	double end = now() + us * 1e-6;
	volatile unsigned long x = 0;
	while (now() < end)
		for (int i = 0; i < 100; i++)
			x++;
}
static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}
int main(int argc, char **argv)
{
	const char *pr = getenv("PMI_RANK");
	if (getenv("PWW_TRACE0") && pr && pr[0] == '0' && !pr[1]) {
		setenv("FI_PTL3_TRACE", "1", 1);
		setenv("PWW_MARKS", "1", 1);
	}
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	size_t size = argc > 1 ? strtoul(argv[1], 0, 0) : 100000;
	double iv = argc > 2 ? atof(argv[2]) : 1000;
	int iters = argc > 3 ? atoi(argv[3]) : 200, warm = argc > 4 ? atoi(argv[4]) : 20;
	int marks = getenv("PWW_MARKS") != NULL, nranks;
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2 || size < 1 || size > (1u << 30) || iters < 10 || warm < 0 || iv < 0) {
		if (rank == 0)
			fprintf(stderr, "usage (2 ranks): pwwdist [SIZE [INTERVAL_US [ITERS>=10 "
			                "[WARMUP]]]]\n");
		MPI_Finalize();
		return 2;
	}
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(rank, &cs);
	sched_setaffinity(0, sizeof(cs), &cs);
	char *sb = malloc(size), *rb = malloc(size);
	double *post = calloc(iters, 8), *wt = calloc(iters, 8), *wk = calloc(iters, 8);
	double *tstart = calloc(iters, 8), *tend = calloc(iters, 8);
	double *ps = calloc(iters, 8), *pe = calloc(iters, 8), *s = calloc(iters, 8);
	if (!sb || !rb || !post || !wt || !wk || !tstart || !tend || !ps || !pe || !s) {
		fprintf(stderr, "pwwdist: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(sb, 1, size);
	int peer = 1 - rank;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = now();
	for (int it = -warm; it < iters; it++) {
		MPI_Request r[2];
		double ta = now();
		MPI_Irecv(rb, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &r[0]);
		MPI_Isend(sb, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &r[1]);
		double tb = now();
		if (marks && rank == 0)
			fprintf(stderr, "PWWPOST it %d\n", it);
		if (rank == 0)
			work(iv);
		double tc = now();
		if (rank == 0)
			MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
		else {
			int f = 0;
			while (!f)
				MPI_Testall(2, r, &f, MPI_STATUSES_IGNORE);
		}
		double td = now();
		if (it == 0)
			t0 = ta;
		if (it >= 0) {
			tstart[it] = ta;
			tend[it] = td;
			post[it] = tb - ta;
			wk[it] = tc - tb;
			wt[it] = td - tc;
		}
		if (marks && rank == 0)
			fprintf(stderr, "PWWMARK it %d post %.1f wait %.1f\n", it, (tb - ta) * 1e6,
			        (td - tc) * 1e6);
	}
	double total = now() - t0;
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		MPI_Send(tstart, iters, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
		MPI_Send(tend, iters, MPI_DOUBLE, 0, 8, MPI_COMM_WORLD);
	} else {
		MPI_Recv(ps, iters, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Recv(pe, iters, MPI_DOUBLE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		/* the support ahead (posted iteration it before the worker did) or behind */
		int ahead = 0;
		double wa = 0, wb = 0, lagb = 0;
		int nb = 0;
		FILE *csv = getenv("PWW_CSV") ? fopen(getenv("PWW_CSV"), "w") : NULL;
		for (int i = 0; i < iters; i++) {
			double d = ps[i] - tstart[i];
			if (csv)
				fprintf(csv, "%d %.1f %.1f %.1f\n", i, d * 1e6, wt[i] * 1e6,
				        (pe[i] - tend[i]) * 1e6);
			if (d < 0) {
				ahead++;
				wa += wt[i];
			} else {
				nb++;
				wb += wt[i];
				lagb += d;
			}
		}
		if (csv)
			fclose(csv);
		printf(
		    "support ahead in %d of %d iterations (mean worker wait %.1f us); behind in %d "
		    "(mean wait %.1f us, support posts %.1f us after the worker)\n",
		    ahead, iters, ahead ? 1e6 * wa / ahead : 0, nb, nb ? 1e6 * wb / nb : 0,
		    nb ? 1e6 * lagb / nb : 0);
	}
	if (rank == 0) {
		double sw = 0, sp = 0, sk = 0;
		int b[7] = {0};
		double lim[6] = {20, 50, 100, 200, 500, 1000};
		for (int i = 0; i < iters; i++) {
			sw += wt[i], sp += post[i], sk += wk[i];
			int k = 0;
			while (k < 6 && wt[i] * 1e6 >= lim[k])
				k++;
			b[k]++;
		}
		memcpy(s, wt, iters * 8);
		qsort(s, iters, 8, cmp);
		printf(
		    "pwwdist size %zu interval %.0f us iters %d: avail(work/total) %.1f %% "
		    "post %.1f wait %.1f us (mean) wait p10 %.1f p50 %.1f p90 %.1f max %.1f us\n",
		    size, iv, iters, 100 * sk / total, 1e6 * sp / iters, 1e6 * sw / iters,
		    1e6 * s[iters / 10], 1e6 * s[iters / 2], 1e6 * s[iters * 9 / 10],
		    1e6 * s[iters - 1]);
		printf("wait hist: <20 %d | 20-50 %d | 50-100 %d | 100-200 %d | 200-500 %d | "
		       "500-1000 %d | >=1000 %d\n",
		       b[0], b[1], b[2], b[3], b[4], b[5], b[6]);
		fflush(stdout);
	}
	double *bufs[] = {post, wt, wk, tstart, tend, ps, pe, s};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		free(bufs[i]);
	free(sb);
	free(rb);
	MPI_Finalize();
	return 0;
}
