/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_super.c - the p3soak supervisor: starts the N worker ranks of one
 * Portals job (own process groups, optionally each in a network namespace
 * host), SIGKILLs a seeded random rank every --kill-every seconds and
 * restarts it as a new incarnation (a new rmpp epoch / shmem incarnation
 * for its peers), stops the job after --duration, waits for the drain and
 * writes the report.  No kills in the last --quiet seconds, so that every
 * pair ends with a clean stretch.
 */
#define _GNU_SOURCE
#include "soak.h"
#include "p3num.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct super {
	struct soak_job *job;
	char job_path[600], self[512], nidmap[4096], pidmap[4096], jid[32];
	const char *nal, *progress, *netns_tag, *report;
	double duration, kill_every, quiet;
	uint64_t rng;
	pid_t pid[SOAK_MAX_RANKS];
	uint64_t restart_at[SOAK_MAX_RANKS]; /* 0: none pending */
	int expect_death[SOAK_MAX_RANKS];
	unsigned kills, crashes;
};

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: p3soak [options]\n"
	        "  -n, --ranks N        worker ranks (2..%d, default 4)\n"
	        "      --nal NAL        shmem (default), udp, ether, lo\n"
	        "  -d, --duration S     seconds of traffic (default 60)\n"
	        "  -s, --seed S         seed of sizes, operations, kills, contents (default 1)\n"
	        "      --kill-every S   SIGKILL a random rank about every S s and restart it (0: never; default 10)\n"
	        "      --quiet S        no kills in the last S s (default: a quarter of the duration, at most 20)\n"
	        "      --ops LIST       comma list of put,get,getput (default all)\n"
	        "      --max-size B     largest put/get in bytes (default 65536)\n"
	        "      --window W       operations in flight per rank (default 4)\n"
	        "      --op-timeout S   an operation not done after S s without a kill fails (default 30)\n"
	        "      --progress MODE  PTL_PROGRESS of the ranks (app, thread)\n"
	        "      --netns-tag T    rank r runs in namespace T-h(r %% H) of a tools/p3-netns bed (root)\n"
	        "      --hosts H        hosts of that bed (default 2)\n"
	        "      --cross          traffic only between ranks of different hosts (ether)\n"
	        "  -w, --work DIR       job file, stats files and rank logs (default: a new /tmp dir)\n"
	        "  -r, --report FILE    also write the report there\n"
	        "      --analyze DIR    only print the report of the kept work directory DIR\n"
	        "Exit status 0 when every check passed (tools/soak/README.md).\n",
	        SOAK_MAX_RANKS);
}

static uint64_t super_rand(struct super *s)
{
	s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
	return soak_mix(s->rng);
}

/* a pid base whose udp ports (21000 + pid on loopback) are free */
static unsigned udp_base(unsigned n)
{
	const char *e = getenv("P3_RMPP_BASE_PORT");
	long port0 = e && *e ? (long)p3num_arg_u64("p3soak", "P3_RMPP_BASE_PORT", e, 1, 65535, P3NUM_BASE0)
	                     : 21000;
	for (unsigned b = 1000 + (unsigned)(getpid() % 200) * 64; b + n < 44000; b += 64) {
		int ok = 1;
		for (unsigned i = 0; i < n && ok; i++) {
			struct sockaddr_in a = {.sin_family = AF_INET};
			int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (fd < 0)
				return b;
			a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			a.sin_port = htons((uint16_t)(port0 + b + i));
			ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
			close(fd);
		}
		if (ok)
			return b;
	}
	return 1000;
}

static int make_maps(struct super *s)
{
	struct soak_job *j = s->job;
	int shm = !strcmp(s->nal, "shmem") || !strcmp(s->nal, "lo");
	unsigned base = shm ? 0 : s->netns_tag ? 100 : udp_base(j->nranks);
	size_t a = 0, b = 0;

	if (!shm && strcmp(s->nal, "udp") && strcmp(s->nal, "ether")) {
		fprintf(stderr, "p3soak: unknown NAL '%s' (shmem, lo, udp, ether)\n", s->nal);
		return -1;
	}
	if (!strcmp(s->nal, "ether") && !s->netns_tag) {
		fprintf(stderr, "p3soak: --nal ether needs --netns-tag (namespace hosts, root)\n");
		return -1;
	}
	for (unsigned r = 0; r < j->nranks; r++) {
		char nid[32];
		if (shm)
			snprintf(nid, sizeof(nid), "0");
		else if (s->netns_tag)
			snprintf(nid, sizeof(nid), "10.77.0.%u", r % j->hosts + 1);
		else
			snprintf(nid, sizeof(nid), "127.0.0.1");
		a += (size_t)snprintf(s->nidmap + a, sizeof(s->nidmap) - a, "%s%s", r ? ":" : "", nid);
		b += (size_t)snprintf(s->pidmap + b, sizeof(s->pidmap) - b, "%s%u", r ? ":" : "", base + r);
	}
	snprintf(s->jid, sizeof(s->jid), "%u", (unsigned)getpid());
	return 0;
}

static void child_exec(struct super *s, unsigned r)
{
	char path[700], rid[16], inc[16];
	int fd;

	setpgid(0, 0);
	snprintf(path, sizeof(path), "%s/r%u.log", s->job->dir, r);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	if (s->netns_tag) {
		snprintf(path, sizeof(path), "/run/netns/%s-h%u", s->netns_tag, r % s->job->hosts);
		int ns = open(path, O_RDONLY | O_CLOEXEC);
		if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
			fprintf(stderr, "p3soak: entering %s: %s\n", path, strerror(errno));
			_exit(126);
		}
		setenv("P3_RMPP_IFNAME", "eth0", 0);
	}
	snprintf(rid, sizeof(rid), "%u", r);
	snprintf(inc, sizeof(inc), "%u", s->job->rank[r].inc);
	setenv("PTL_MY_RID", rid, 1);
	setenv("PTL_NIDMAP", s->nidmap, 1);
	setenv("PTL_PIDMAP", s->pidmap, 1);
	setenv("PTL_MY_JID", s->jid, 1);
	setenv("PTL_NAL", s->nal, 1);
	setenv("P3SOAK_INC", inc, 1);
	if (s->progress)
		setenv("PTL_PROGRESS", s->progress, 1);
	execl(s->self, "p3soak", "--worker", s->job_path, (char *)NULL);
	fprintf(stderr, "p3soak: exec %s: %s\n", s->self, strerror(errno));
	_exit(127);
}

static int spawn(struct super *s, unsigned r)
{
	struct soak_rank_ctl *c = &s->job->rank[r];
	pid_t pid;

	c->ready = 0;
	c->drained = 0;
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "p3soak: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0)
		child_exec(s, r);
	setpgid(pid, pid);
	s->pid[r] = pid;
	c->ospid = pid;
	c->alive = 1;
	s->expect_death[r] = 0;
	return 0;
}

static int rank_of(struct super *s, pid_t pid)
{
	for (unsigned r = 0; r < s->job->nranks; r++)
		if (s->pid[r] == pid)
			return (int)r;
	return -1;
}

/* exits of workers: expected (our kill, or the end) or a crash */
static void reap(struct super *s, int ending)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		int r = rank_of(s, pid);
		if (r < 0)
			continue;
		s->pid[r] = 0;
		s->job->rank[r].alive = 0;
		s->job->rank[r].drained = 1; /* nobody waits for it any more */
		if (s->expect_death[r])
			continue;
		if (ending && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		s->crashes++;
		fprintf(stderr, "p3soak: rank %d (incarnation %u) %s %d by itself (see %s/r%d.log)\n", r,
		        s->job->rank[r].inc, WIFEXITED(st) ? "exited with" : "died of signal",
		        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), s->job->dir, r);
		if (!ending) { /* keep the soak going: a new incarnation */
			s->job->rank[r].kills++; /* its peers may see failures */
			s->restart_at[r] = soak_now_ns() + 1000000000ull;
		}
	}
}

static void kill_one(struct super *s)
{
	unsigned r = (unsigned)(super_rand(s) % s->job->nranks);
	struct soak_rank_ctl *c = &s->job->rank[r];

	if (!s->pid[r] || !c->ready)
		return; /* down or starting: another time */
	c->alive = 0;
	c->kills++;
	s->expect_death[r] = 1;
	kill(-s->pid[r], SIGKILL);
	s->kills++;
	/* restart after 0.2 .. 2 s (peers meanwhile see it dead) */
	s->restart_at[r] = soak_now_ns() + 200000000ull + super_rand(s) % 1800000000ull;
}

static void restarts(struct super *s, uint64_t now)
{
	for (unsigned r = 0; r < s->job->nranks; r++)
		if (s->restart_at[r] && now >= s->restart_at[r] && !s->pid[r]) {
			s->restart_at[r] = 0;
			s->job->rank[r].inc++;
			(void)spawn(s, r);
		}
}

static void nap_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int all(struct super *s, int drained)
{
	for (unsigned r = 0; r < s->job->nranks; r++)
		if (drained ? (s->pid[r] && !s->job->rank[r].drained) : s->pid[r] != 0)
			return 0;
	return 1;
}

static void run(struct super *s)
{
	uint64_t t0 = soak_now_ns(), end = t0 + (uint64_t)(s->duration * 1e9);
	uint64_t kill_end = end - (uint64_t)(s->quiet * 1e9), next_kill = 0, deadline;

	if (s->kill_every > 0)
		next_kill = t0 + (uint64_t)(s->kill_every * 1e9 * (0.5 + (double)(super_rand(s) % 1000) / 1000));
	while (!interrupted) {
		uint64_t now = soak_now_ns();
		reap(s, 0);
		restarts(s, now);
		if (now >= end)
			break;
		if (next_kill && now >= next_kill && now < kill_end) {
			kill_one(s);
			next_kill = now + (uint64_t)(s->kill_every * 1e9 * (0.5 + (double)(super_rand(s) % 1000) / 1000));
		}
		nap_ms(50);
	}
	/* ranks still waiting for their restart come back first */
	for (unsigned r = 0; r < s->job->nranks; r++)
		if (s->restart_at[r] && !s->pid[r]) {
			s->restart_at[r] = 0;
			s->job->rank[r].inc++;
			(void)spawn(s, r);
		}
	s->job->stop = 1;
	deadline = soak_now_ns() + (uint64_t)(s->job->op_timeout_ms + 20000) * 1000000ull;
	while (!all(s, 1) && soak_now_ns() < deadline && !interrupted) {
		reap(s, 1);
		nap_ms(50);
	}
	s->job->finish = 1;
	deadline = soak_now_ns() + 15000000000ull;
	while (!all(s, 0) && soak_now_ns() < deadline) {
		reap(s, 1);
		nap_ms(50);
	}
	for (unsigned r = 0; r < s->job->nranks; r++)
		if (s->pid[r]) {
			fprintf(stderr, "p3soak: rank %u did not end: killed\n", r);
			s->expect_death[r] = 1;
			s->crashes++;
			kill(-s->pid[r], SIGKILL);
		}
	while (!all(s, 0)) {
		reap(s, 1);
		nap_ms(20);
	}
}

static unsigned parse_ops(const char *l)
{
	unsigned m = 0;
	char buf[128], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", l);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		m |= !strcmp(t, "put") ? 1u << SOAK_PUT : !strcmp(t, "get") ? 1u << SOAK_GET
		     : !strcmp(t, "getput") ? 1u << SOAK_GETPUT : 1u << 31;
	return m;
}

#define SP "p3soak" /* the program named in the messages of a bad number */

static int parse(struct super *s, struct soak_job *j, int argc, char **argv)
{
	static const struct option lo[] = {
	    {"ranks", 1, 0, 'n'},   {"nal", 1, 0, 'N'},       {"duration", 1, 0, 'd'},
	    {"seed", 1, 0, 's'},    {"kill-every", 1, 0, 'k'}, {"quiet", 1, 0, 'q'},
	    {"ops", 1, 0, 'o'},     {"max-size", 1, 0, 'm'},   {"window", 1, 0, 'W'},
	    {"op-timeout", 1, 0, 't'}, {"progress", 1, 0, 'p'}, {"netns-tag", 1, 0, 'T'},
	    {"hosts", 1, 0, 'H'},   {"cross", 0, 0, 'c'},      {"work", 1, 0, 'w'},
	    {"report", 1, 0, 'r'},  {"help", 0, 0, 'h'},       {0, 0, 0, 0}};
	int c;
	const char *work = NULL;

	j->nranks = 4;
	j->hosts = 1;
	j->ops = 7;
	j->max_size = 65536;
	j->window = 4;
	j->op_timeout_ms = 30000;
	j->seed = 1;
	s->nal = "shmem";
	s->duration = 60;
	s->kill_every = 10;
	s->quiet = -1;
	while ((c = getopt_long(argc, argv, "n:d:s:w:r:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n': j->nranks = (uint32_t)p3num_arg_u64(SP, "--ranks", optarg, 2, SOAK_MAX_RANKS, 0); break;
		case 'N': s->nal = optarg; break;
		case 'd': s->duration = p3num_arg_dbl(SP, "--duration", optarg, 0.001, 1e7); break;
		case 's': j->seed = p3num_arg_u64(SP, "--seed", optarg, 0, UINT64_MAX, P3NUM_BASE0); break;
		case 'k': s->kill_every = p3num_arg_dbl(SP, "--kill-every", optarg, 0, 1e7); break;
		case 'q': s->quiet = p3num_arg_dbl(SP, "--quiet", optarg, 0, 1e7); break;
		case 'o': j->ops = parse_ops(optarg); break;
		case 'm': j->max_size = (uint32_t)p3num_arg_u64(SP, "--max-size", optarg, 1, 16u << 20, P3NUM_BASE0); break;
		case 'W': j->window = (uint32_t)p3num_arg_u64(SP, "--window", optarg, 1, 65536, 0); break;
		case 't': j->op_timeout_ms = (uint32_t)(p3num_arg_dbl(SP, "--op-timeout", optarg, 1, 4e6) * 1000); break;
		case 'p': s->progress = optarg; break;
		case 'T': s->netns_tag = optarg; if (j->hosts < 2) j->hosts = 2; break;
		case 'H': j->hosts = (uint32_t)p3num_arg_u64(SP, "--hosts", optarg, 1, SOAK_MAX_RANKS, 0); break;
		case 'c': j->cross_only = 1; break;
		case 'w': work = optarg; break;
		case 'r': s->report = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (j->nranks < 2 || j->nranks > SOAK_MAX_RANKS || !j->ops || (j->ops >> SOAK_NOPS) ||
	    j->max_size < 1 || j->max_size > (16u << 20) || j->window < 1 || s->duration <= 0 ||
	    j->hosts < 1 || j->op_timeout_ms < 1000 || optind != argc) {
		fprintf(stderr, "p3soak: bad arguments\n");
		usage(stderr);
		return -1;
	}
	if (s->quiet < 0)
		s->quiet = s->duration / 4 < 20 ? s->duration / 4 : 20;
	if (work)
		snprintf(j->dir, sizeof(j->dir), "%s", work);
	else
		snprintf(j->dir, sizeof(j->dir), "/tmp/p3soak.%u", (unsigned)getpid());
	return 0;
}

int soak_super_main(int argc, char **argv)
{
	static struct super S;
	struct super *s = &S;
	struct soak_job tmp;
	uint64_t fails;
	double t0;

	memset(&tmp, 0, sizeof(tmp));
	if (parse(s, &tmp, argc, argv) != 0)
		return 2;
	if (mkdir(tmp.dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "p3soak: mkdir %s: %s\n", tmp.dir, strerror(errno));
		return 2;
	}
	snprintf(s->job_path, sizeof(s->job_path), "%s/job", tmp.dir);
	s->job = soak_map(s->job_path, sizeof(*s->job), 1);
	if (!s->job) {
		fprintf(stderr, "p3soak: cannot create %s\n", s->job_path);
		return 2;
	}
	*s->job = tmp;
	s->job->magic = SOAK_JOB_MAGIC;
	s->rng = soak_mix(tmp.seed ^ 0x4b494c4cull);
	ssize_t l = readlink("/proc/self/exe", s->self, sizeof(s->self) - 1);
	if (l <= 0) {
		fprintf(stderr, "p3soak: cannot find my own executable\n");
		return 2;
	}
	s->self[l] = 0;
	if (make_maps(s) != 0)
		return 2;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	printf("p3soak: %u ranks over %s%s%s, %.0f s, seed %llu, kill every ~%.0f s, work %s\n",
	       s->job->nranks, s->nal, s->netns_tag ? " in namespace bed " : "",
	       s->netns_tag ? s->netns_tag : "", s->duration, (unsigned long long)tmp.seed,
	       s->kill_every, tmp.dir);
	fflush(stdout);
	t0 = (double)soak_now_ns();
	for (unsigned r = 0; r < s->job->nranks; r++)
		if (spawn(s, r) != 0) {
			interrupted = 1;
			break;
		}
	run(s);
	double secs = ((double)soak_now_ns() - t0) / 1e9;
	fails = soak_report(s->job, stdout, secs, s->kills, s->crashes, s->nal);
	if (s->report) {
		FILE *f = fopen(s->report, "w");
		if (f) {
			(void)soak_report(s->job, f, secs, s->kills, s->crashes, s->nal);
			fclose(f);
		}
	}
	if (interrupted)
		fprintf(stderr, "p3soak: interrupted\n");
	return fails || interrupted ? 1 : 0;
}
