/* machine-probe: a one-line figure of the machine's state, taken by the
 * stack comparison before, during and after its run so that a report can
 * say whether the machine drifted while it was measured.
 *
 *   machine-probe [--samples N] [--cpus A,B]
 *
 * Two figures, each the median (and min, max) of N samples (default 5):
 *  - flag ping-pong: two threads pinned on CPUs A and B (default 0,1) pass
 *    a flag back and forth through one cache line; one-way time in ns.
 *    It moves when a core is shared with another task or the cache
 *    coherence path slows down.
 *  - memcpy: bandwidth of copying 8 MiB (GB/s, 1e9 bytes), best of 4 per
 *    sample; it moves with memory-bus contention.
 * Output: "pingpong_ns MED MIN MAX memcpy_GBps MED MIN MAX failed K".
 * Each sample is bounded (a partner that never answers ends it after 2 s),
 * so the probe never hangs; such a sample is left out of the figures and
 * counted in K (all failed: the ping-pong figures are -1).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p3num.h"

#define ROUNDS      20000
#define COPY_BYTES  (8u << 20)
#define MAX_SAMPLES 64

static _Alignas(64) atomic_int flag;
static int cpu_a, cpu_b;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof set, &set); /* best effort: unpinned still measures */
}

/* wait until flag == want; 0, or -1 after 2 s (a partner that was descheduled
 * for that long makes the sample meaningless anyway) */
static int wait_flag(int want, double deadline)
{
	unsigned spins = 0;
	while (atomic_load_explicit(&flag, memory_order_acquire) != want)
		if ((++spins & 0xffff) == 0 && now() > deadline)
			return -1;
	return 0;
}

static void *partner(void *arg)
{
	double deadline = *(double *)arg;
	pin(cpu_b);
	for (int i = 0; i < ROUNDS; i++) {
		if (wait_flag(2 * i + 1, deadline))
			return NULL;
		atomic_store_explicit(&flag, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

static double pingpong_ns(void)
{
	double deadline = now() + 2.0;
	atomic_store(&flag, 0);
	pthread_t t;
	if (pthread_create(&t, NULL, partner, &deadline))
		return -1;
	pin(cpu_a);
	double t0 = now();
	int ok = 1;
	for (int i = 0; i < ROUNDS && ok; i++) {
		atomic_store_explicit(&flag, 2 * i + 1, memory_order_release);
		ok = wait_flag(2 * i + 2, deadline) == 0;
	}
	double t1 = now();
	if (!ok)
		atomic_store(&flag, -1); /* lets a waiting partner run into its deadline */
	pthread_join(t, NULL);
	return ok ? (t1 - t0) / (2.0 * ROUNDS) * 1e9 : -1;
}

static double memcpy_gbps(char *src, char *dst)
{
	double best = 1e9;
	for (int k = 0; k < 4; k++) {
		double t0 = now();
		memcpy(dst, src, COPY_BYTES);
		__asm__ __volatile__("" ::"r"(dst) : "memory");
		double t = now() - t0;
		if (t < best)
			best = t;
	}
	return COPY_BYTES / best / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void print_spread(const char *name, double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	printf("%s %.4g %.4g %.4g", name, med, v[0], v[n - 1]);
}

/* "A,B": two CPU numbers, or exit 2 with the reason. */
static void parse_cpus(const char *s)
{
	char a[16];
	const char *comma = strchr(s, ',');
	size_t len = comma ? (size_t)(comma - s) : 0;

	if (!comma || len >= sizeof(a)) {
		fprintf(stderr, "machine-probe: --cpus: \"%s\" is not two CPU numbers A,B\n", s);
		exit(2);
	}
	snprintf(a, sizeof(a), "%.*s", (int)len, s);
	cpu_a = (int)p3num_arg_u64("machine-probe", "--cpus", a, 0, CPU_SETSIZE - 1, 0);
	cpu_b = (int)p3num_arg_u64("machine-probe", "--cpus", comma + 1, 0, CPU_SETSIZE - 1, 0);
}

int main(int argc, char **argv)
{
	int n = 5;
	cpu_a = 0;
	cpu_b = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--samples") && i + 1 < argc) {
			n = (int)p3num_arg_u64("machine-probe", "--samples", argv[++i], 1,
			                       MAX_SAMPLES, 0);
		} else if (!strcmp(argv[i], "--cpus") && i + 1 < argc) {
			parse_cpus(argv[++i]);
		} else {
			n = 0;
		}
	}
	if (n < 1 || n > MAX_SAMPLES) {
		fprintf(stderr, "usage: machine-probe [--samples 1..%d] [--cpus A,B]\n",
		        MAX_SAMPLES);
		return 2;
	}
	char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
	if (!src || !dst) {
		fprintf(stderr, "machine-probe: out of memory\n");
		return 1;
	}
	memset(src, 1, COPY_BYTES);
	memset(dst, 2, COPY_BYTES);
	double pp[MAX_SAMPLES], mc[MAX_SAMPLES];
	int npp = 0;
	for (int i = 0; i < n; i++) {
		double t = pingpong_ns();
		if (t > 0)
			pp[npp++] = t;
		mc[i] = memcpy_gbps(src, dst);
	}
	if (npp)
		print_spread("pingpong_ns", pp, npp);
	else
		printf("pingpong_ns -1 -1 -1");
	printf(" ");
	print_spread("memcpy_GBps", mc, n);
	printf(" failed %d\n", n - npp);
	free(src);
	free(dst);
	return 0;
}
