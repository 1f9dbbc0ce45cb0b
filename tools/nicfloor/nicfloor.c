/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nicfloor.c - p3-nicfloor: the latency floor of the emulated-NIC topology.
 * A token goes app0 -> nic0 -> wire -> nic1 -> app1 and back, through four
 * processes placed as compare places an offload ping-pong (app0 alone on
 * CPU 0; nic0, nic1 and app1 on CPU 1), with the device interface's wake-up
 * protocol and spin-then-block policy and no Portals work.  The half round
 * trip it prints is what a Portals offload 0-byte put cannot beat on this
 * placement; the offload figure over it is the cost of the work (rmpp, LIB,
 * DMA) and of any waste.  See README.md.
 */
#include "floor.h"
#include "p3num.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t floor_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void floor_pin(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s) != 0)
		fprintf(stderr, "p3-nicfloor: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: p3-nicfloor [options]\n"
	        "  The latency floor of the emulated-NIC topology: a token through\n"
	        "  app0 -> nic0 -> wire -> nic1 -> app1 and back (four processes, the\n"
	        "  device interface's doorbell/interrupt eventfds and sleep words, the\n"
	        "  spin-then-block policy of nal/myrinet/cpu_share.c), no Portals work.\n"
	        "  -w, --wire ether|udp   ether (default with --netns): AF_PACKET on --ifname\n"
	        "                         in the two namespace hosts; udp: 127.0.0.1\n"
	        "  -N, --netns NS0,NS1    the NICs' network namespaces (ip netns names;\n"
	        "                         root; tools/p3-netns create 2 makes a bed)\n"
	        "  -I, --ifname IF        ether: the interface (default eth0)\n"
	        "  -c, --cpus A,B         app0 on CPU A, app1 on CPU B (default 0,1; -1: free)\n"
	        "  -C, --nic-cpus C       both NICs on CPU C (default 1; -1: free)\n"
	        "  -i, --iters N          timed round trips (default 2000, 1-1000000)\n"
	        "  -x, --warmup N         untimed round trips first (default 100, 0-1000000)\n"
	        "  -f, --frame BYTES      frame size on the wire (default %d, 64-%d)\n"
	        "  -s, --nic-spin-us N    the NICs' idle spin (default: $P3_MCPD_SPIN_US if set\n"
	        "                         and not empty, else as mcpd decides it)\n"
	        "      --csv              one CSV row: test,size,value,unit,median,min,max\n"
	        "  -t, --timeout S        give up after S seconds (default 60, 1-86400)\n"
	        "  -h, --help             this text\n"
	        "The apps' waits follow P3_MYRI_SPIN and P3_MYRI_SPIN_US as an offload host's.\n"
	        "Prints the half round trip (mean over the timed iterations, as ptlbench\n"
	        "-t lat), its median and minimum, and per NIC its doorbells, interrupts\n"
	        "and sleeps.  Exit 0, 1 on failure, 77 when the wire cannot be opened\n"
	        "for lack of privilege.\n",
	        FLOOR_FRAME_DEFAULT, FLOOR_FRAME_MAX);
}

#define NF "p3-nicfloor"

/* A CPU number or -1 (free), or exit 2 with the reason. */
static int parse_cpu(const char *opt, const char *s)
{
	return (int)p3num_arg_i64(NF, opt, s, -1, CPU_SETSIZE - 1, 0);
}

static int parse_pair(const char *s, int *a, int *b)
{
	char first[32];
	const char *comma = strchr(s, ',');
	if (!comma || (size_t)(comma - s) >= sizeof(first))
		return -1;
	memcpy(first, s, (size_t)(comma - s));
	first[comma - s] = '\0';
	*a = parse_cpu("--cpus", first);
	*b = parse_cpu("--cpus", comma + 1);
	return 0;
}

static int split_netns(char *s, const char **ns)
{
	char *c = strchr(s, ',');
	if (!c || !c[1] || c == s)
		return -1;
	*c = '\0';
	ns[0] = s;
	ns[1] = c + 1;
	return 0;
}

/* 0, 1 for --help, -1 on a bad option. */
static int parse(int argc, char **argv, struct floor_opts *o, int *timeout_s)
{
	static const struct option lo[] = {{"wire", required_argument, NULL, 'w'},
	                                   {"netns", required_argument, NULL, 'N'},
	                                   {"ifname", required_argument, NULL, 'I'},
	                                   {"cpus", required_argument, NULL, 'c'},
	                                   {"nic-cpus", required_argument, NULL, 'C'},
	                                   {"iters", required_argument, NULL, 'i'},
	                                   {"warmup", required_argument, NULL, 'x'},
	                                   {"frame", required_argument, NULL, 'f'},
	                                   {"nic-spin-us", required_argument, NULL, 's'},
	                                   {"csv", no_argument, NULL, 'V'},
	                                   {"timeout", required_argument, NULL, 't'},
	                                   {"help", no_argument, NULL, 'h'},
	                                   {NULL, 0, NULL, 0}};
	int c, wire_set = 0;
	*o = (struct floor_opts){.wire = FLOOR_WIRE_UDP,
	                         .ifname = "eth0",
	                         .app_cpu = {0, 1},
	                         .nic_cpu = 1,
	                         .iters = 2000,
	                         .warmup = 100,
	                         .frame = FLOOR_FRAME_DEFAULT,
	                         .nic_spin_us = -1};
	while ((c = getopt_long(argc, argv, "w:N:I:c:C:i:x:f:s:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 'w':
			if (strcmp(optarg, "ether") && strcmp(optarg, "udp"))
				return -1;
			o->wire = strcmp(optarg, "ether") ? FLOOR_WIRE_UDP : FLOOR_WIRE_ETHER;
			wire_set = 1;
			break;
		case 'N':
			if (split_netns(optarg, o->netns) != 0)
				return -1;
			if (!wire_set)
				o->wire = FLOOR_WIRE_ETHER;
			break;
		case 'I':
			o->ifname = optarg;
			break;
		case 'c':
			if (parse_pair(optarg, &o->app_cpu[0], &o->app_cpu[1]) != 0)
				return -1;
			break;
		case 'C':
			o->nic_cpu = parse_cpu("--nic-cpus", optarg);
			break;
		case 'i':
			o->iters =
			    (long)p3num_arg_u64(NF, "--iters", optarg, 1, FLOOR_MAX_ITERS, 0);
			break;
		case 'x':
			o->warmup =
			    (long)p3num_arg_u64(NF, "--warmup", optarg, 0, FLOOR_MAX_ITERS, 0);
			break;
		case 'f':
			o->frame = p3num_arg_u64(NF, "--frame", optarg, 64, FLOOR_FRAME_MAX, 0);
			break;
		case 's':
			o->nic_spin_us =
			    (int)p3num_arg_u64(NF, "--nic-spin-us", optarg, 0, 100000, 0);
			break;
		case 'V':
			o->csv = 1;
			break;
		case 't':
			*timeout_s = (int)p3num_arg_u64(NF, "--timeout", optarg, 1, 86400, 0);
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			return -1;
		}
	}
	if (optind < argc || o->iters < 1 || o->iters > FLOOR_MAX_ITERS || o->warmup < 0 ||
	    o->frame < 64 || o->frame > FLOOR_FRAME_MAX || *timeout_s < 1 ||
	    (o->wire == FLOOR_WIRE_ETHER && !o->netns[0])) {
		if (o->wire == FLOOR_WIRE_ETHER && !o->netns[0])
			fprintf(stderr, "p3-nicfloor: --wire ether needs --netns NS0,NS1\n");
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void report(struct floor_shared *sh, const struct floor_opts *o)
{
	long n = o->iters;
	double sum = 0;
	for (long i = 0; i < n; i++)
		sum += sh->rtt_us[i];
	qsort(sh->rtt_us, (size_t)n, sizeof(double), cmp_double);
	double mean = sum / (double)n / 2, med = sh->rtt_us[n / 2] / 2, min = sh->rtt_us[0] / 2,
	       max = sh->rtt_us[n - 1] / 2;
	if (o->csv) {
		printf("test,size,value,unit,median,min,max\nnicfloor,0,%.3f,us,%.3f,%.3f,%.3f\n",
		       mean, med, min, max);
		return;
	}
	printf("# p3-nicfloor: token app0 -> nic0 -> wire -> nic1 -> app1 and back, no Portals "
	       "work\n# wire: %s, frame %zu B; app0 CPU %d, app1 CPU %d, NICs CPU %d\n",
	       o->wire == FLOOR_WIRE_ETHER ? "ether (AF_PACKET between namespace hosts)"
	                                   : "udp (127.0.0.1)",
	       o->frame, o->app_cpu[0], o->app_cpu[1], o->nic_cpu);
	printf("half round trip: mean %.2f us, median %.2f us, min %.2f us, max %.2f us "
	       "(%ld iterations after %ld warm-up)\n",
	       mean, med, min, max, n, o->warmup);
	for (int k = 0; k < 2; k++) {
		const struct floor_node *d = &sh->node[k];
		printf("nic%d: frames in %llu, doorbells %llu, interrupts %llu, sleeps %llu\n", k,
		       (unsigned long long)d->frames, (unsigned long long)d->doorbells,
		       (unsigned long long)d->interrupts, (unsigned long long)d->wakeups);
	}
}

/* Wait for the apps (bounded), then stop the NICs; 0 when both apps ended
 * well.  Children are ended by their recorded pids only. */
static int supervise(struct floor_shared *sh, pid_t *pid, int timeout_s)
{
	int ok = 1, left = 2;
	uint64_t end = floor_now_ns() + (uint64_t)timeout_s * 1000000000u;
	while (left > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			int app = p == pid[2] || p == pid[3];
			int bad = !WIFEXITED(st) || WEXITSTATUS(st) != 0;
			if (bad)
				ok = 0;
			for (int i = 0; i < 4; i++)
				if (pid[i] == p)
					pid[i] = 0;
			if (app)
				left--;
			else if (bad) /* a NIC failed: the apps cannot finish */
				break;
			continue;
		}
		if (p < 0 || floor_now_ns() > end || atomic_load(&sh->failed)) {
			if (floor_now_ns() > end)
				fprintf(stderr, "p3-nicfloor: timed out\n");
			ok = 0;
			break;
		}
		usleep(2000);
	}
	atomic_store(&sh->stop, 1);
	uint64_t one = 1;
	for (int k = 0; k < 2; k++)
		if (write(sh->node[k].doorbell_fd, &one, sizeof(one)) < 0)
			ok = 0;
	for (int i = 0; i < 4; i++) {
		if (!pid[i])
			continue;
		if (!ok && i >= 2)
			kill(pid[i], SIGKILL);
		int st;
		waitpid(pid[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			ok = 0;
	}
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct floor_opts o;
	int timeout_s = 60;
	int r = parse(argc, argv, &o, &timeout_s);
	if (r != 0) {
		if (r < 0)
			usage(stderr);
		return r > 0 ? 0 : 2;
	}
	if (o.wire == FLOOR_WIRE_ETHER && geteuid() != 0) {
		fprintf(stderr, "p3-nicfloor: --wire ether needs root (network namespaces, "
		                "CAP_NET_RAW); --wire udp runs without\n");
		return 77;
	}
	struct floor_shared *sh =
	    mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("p3-nicfloor: mmap");
		return 1;
	}
	for (int k = 0; k < 2; k++) {
		sh->node[k].doorbell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		sh->node[k].intr_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (sh->node[k].doorbell_fd < 0 || sh->node[k].intr_fd < 0) {
			perror("p3-nicfloor: eventfd");
			return 1;
		}
	}
	fflush(stdout);
	pid_t pid[4] = {0, 0, 0, 0}; /* nic0, nic1, app0, app1 */
	for (int i = 0; i < 4; i++) {
		pid[i] = fork();
		if (pid[i] < 0) {
			perror("p3-nicfloor: fork");
			atomic_store(&sh->stop, 1);
			break;
		}
		if (pid[i] == 0) {
			if (i < 2)
				floor_nic_main(sh, i, &o);
			_exit(floor_app_main(sh, i - 2, &o));
		}
	}
	if (supervise(sh, pid, timeout_s) != 0) {
		fprintf(stderr, "p3-nicfloor: failed\n");
		return 1;
	}
	report(sh, &o);
	return 0;
}
