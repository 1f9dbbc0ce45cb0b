/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - ptlbench: options, start-up (Portals or --ref-only), dispatch.
 */
#include "config.h"

#include "ptlbench.h"
#include "ptlbench-commit.h"
#include "rmpp.h" /* RMPP_COUNTERS: the xdp NAL's status registers */
#include "p3num.h"

#include <p3rt/oversub.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *const pb_test_name[PB_NTESTS] = {"lat", "get", "bw", "bibw", "rate", "getbw"};

static int pb_rank_for_errors = -1;

void pb_die(const struct pb_ctx *c, const char *fmt, ...)
{
	va_list ap;
	int rank = c ? c->rank : pb_rank_for_errors;

	fflush(stdout);
	if (rank >= 0)
		fprintf(stderr, "ptlbench: rank %d: ", rank);
	else
		fprintf(stderr, "ptlbench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pb_seg_cleanup_name();
	exit(EXIT_FAILURE);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ptlrun -n 2 [--cpus 0,1] [--nal NAL] [--progress app|thread] ptlbench [options]\n"
		"       ptlbench --ref-only [options]      (references only; forks its peer when not launched)\n"
		"\n"
		"Portals 3.3 put/get latency, bandwidth, bidirectional bandwidth and message rate\n"
		"between two ranks, beside references measured in the same run by the same two\n"
		"processes (shared-memory flag ping-pong and ring floor, memcpy bandwidth; raw UDP\n"
		"over the network NALs).\n"
		"\n"
		"options:\n"
		"  -t, --tests LIST     lat,get,bw,bibw,rate,getbw or all (default: all but getbw)\n"
		"  -m, --sizes [MIN:]MAX  message sizes, powers of two (K, M suffixes; default 0:64M)\n"
		"  -i, --iterations N   timed iterations per size (default: by size, OSU-like)\n"
		"  -x, --warmup N       untimed warm-up iterations per size (default: by size)\n"
		"  -w, --window N       outstanding puts in bw, bibw and rate, gets in getbw (default 64)\n"
		"  -r, --repeat N       run each size's timed loop N times, report the best (default 1:\n"
		"                       the mean of one loop, as OSU); for machines with other load\n"
		"  -q, --quick          fewer iterations (and MAX 4M unless -m is given)\n"
		"      --csv            CSV (test,nal,progress,size,value,unit,reference,ratio,host,commit)\n"
		"      --ref-only       measure and print only the references\n"
		"      --no-ref         do not measure the references\n"
		"      --verify         verify the data once per size, outside timing (default)\n"
		"      --no-verify      skip the verification\n"
		"      --ack            bw/rate: complete a window by acks (default: a final message)\n"
		"      --poll wait|get  wait for events in PtlEQWait (default) or spin in PtlEQGet\n"
		"  -h, --help           this text\n"
		"  -V, --version        print the version and commit\n");
}

/* A number of bytes up to 2G with K/M/G suffixes (p3num.h), or exit 2. */
static size_t parse_size(const char *s, const char *what)
{
	return (size_t)p3num_arg_u64("ptlbench", what, s, 0, 1ull << 31, P3NUM_SIZE);
}

/* An integer in [min, INT_MAX], or exit 2 naming the option. */
static long parse_count(const char *s, const char *what, long min)
{
	return (long)p3num_arg_u64("ptlbench", what, s, (uint64_t)min, INT_MAX, 0);
}

static unsigned int parse_tests(const char *s)
{
	unsigned int m = 0;
	char *dup = strdup(s), *save = NULL, *tok;

	if (!dup)
		exit(EXIT_FAILURE);
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int t, found = 0;

		if (strcmp(tok, "all") == 0) {
			m |= (1u << PB_NTESTS) - 1;
			continue;
		}
		for (t = 0; t < PB_NTESTS; t++)
			if (strcmp(tok, pb_test_name[t]) == 0) {
				m |= 1u << t;
				found = 1;
			}
		if (!found) {
			fprintf(stderr, "ptlbench: unknown test '%s' (lat, get, bw, bibw, rate, getbw, all)\n", tok);
			exit(EXIT_FAILURE);
		}
	}
	free(dup);
	if (!m) {
		fprintf(stderr, "ptlbench: no test selected\n");
		exit(EXIT_FAILURE);
	}
	return m;
}

static void parse_opts(struct pb_ctx *c, int argc, char **argv)
{
	enum { O_CSV = 256, O_REF_ONLY, O_NO_REF, O_VERIFY, O_NO_VERIFY, O_ACK, O_POLL };
	static const struct option lo[] = {
		{"tests", required_argument, NULL, 't'},
		{"sizes", required_argument, NULL, 'm'},
		{"iterations", required_argument, NULL, 'i'},
		{"warmup", required_argument, NULL, 'x'},
		{"window", required_argument, NULL, 'w'},
		{"quick", no_argument, NULL, 'q'},
		{"repeat", required_argument, NULL, 'r'},
		{"csv", no_argument, NULL, O_CSV},
		{"ref-only", no_argument, NULL, O_REF_ONLY},
		{"no-ref", no_argument, NULL, O_NO_REF},
		{"verify", no_argument, NULL, O_VERIFY},
		{"no-verify", no_argument, NULL, O_NO_VERIFY},
		{"ack", no_argument, NULL, O_ACK},
		{"poll", required_argument, NULL, O_POLL},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct pb_opts *o = &c->o;
	int sizes_given = 0, ch;

	o->tests = PB_DEFAULT_TESTS;
	o->min_size = 0;
	o->max_size = 64u << 20;
	o->iters = -1;
	o->skip = -1;
	o->window = 64;
	o->verify = 1;
	o->repeat = 1;
	while ((ch = getopt_long(argc, argv, "t:m:i:x:w:r:qhV", lo, NULL)) != -1) {
		switch (ch) {
		case 't': o->tests = parse_tests(optarg); break;
		case 'm': {
			const char *colon = strchr(optarg, ':');

			if (colon) {
				char min[32];
				size_t n = (size_t)(colon - optarg);

				if (n >= sizeof(min))
					n = sizeof(min) - 1;
				memcpy(min, optarg, n);
				min[n] = '\0';
				o->min_size = n ? parse_size(min, "-m (minimum size)") : 0;
				o->max_size = parse_size(colon + 1, "-m (maximum size)");
			} else {
				o->max_size = parse_size(optarg, "-m");
			}
			if (o->min_size > o->max_size) {
				fprintf(stderr, "ptlbench: -m %s: minimum above maximum\n", optarg);
				exit(EXIT_FAILURE);
			}
			sizes_given = 1;
			break;
		}
		case 'i': o->iters = parse_count(optarg, "-i", 1); break;
		case 'x': o->skip = parse_count(optarg, "-x", 0); break;
		case 'w': o->window = (int)parse_count(optarg, "-w", 1); break;
		case 'q': o->quick = 1; break;
		case 'r': o->repeat = (int)parse_count(optarg, "-r", 1); break;
		case O_CSV: o->csv = 1; break;
		case O_REF_ONLY: o->ref_only = 1; break;
		case O_NO_REF: o->no_ref = 1; break;
		case O_VERIFY: o->verify = 1; break;
		case O_NO_VERIFY: o->verify = 0; break;
		case O_ACK: o->ack = 1; break;
		case O_POLL:
			if (strcmp(optarg, "wait") == 0) {
				o->poll_get = 0;
			} else if (strcmp(optarg, "get") == 0) {
				o->poll_get = 1;
			} else {
				fprintf(stderr, "ptlbench: --poll wants 'wait' or 'get', not '%s'\n", optarg);
				exit(EXIT_FAILURE);
			}
			break;
		case 'h': usage(stdout); exit(EXIT_SUCCESS);
		case 'V': printf("ptlbench (%s) %s, commit %s\n", PACKAGE_NAME, PACKAGE_VERSION, PTLBENCH_COMMIT); exit(EXIT_SUCCESS);
		default: usage(stderr); exit(EXIT_FAILURE);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ptlbench: unexpected argument '%s' (see --help)\n", argv[optind]);
		exit(EXIT_FAILURE);
	}
	if (o->ref_only && o->no_ref) {
		fprintf(stderr, "ptlbench: --ref-only and --no-ref contradict each other\n");
		exit(EXIT_FAILURE);
	}
	if (o->quick && !sizes_given)
		o->max_size = 4u << 20;
}

int pb_sizes(const struct pb_ctx *c, enum pb_test t, size_t *sizes)
{
	size_t s, min = c->o.min_size;
	int n = 0;

	if (t == PB_RATE) {
		sizes[0] = 8;
		return 1;
	}
	if (t == PB_BW || t == PB_BIBW || t == PB_GETBW)
		min = min ? min : 1; /* a bandwidth of nothing is not a figure */
	if (min == 0) {
		sizes[n++] = 0;
		min = 1;
	}
	for (s = 1; s < min; s <<= 1)
		;
	for (; s <= c->o.max_size && n < PB_MAX_SIZES; s <<= 1)
		sizes[n++] = s;
	return n;
}

static void set_date(struct pb_ctx *c)
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(c->date, sizeof(c->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The rmpp counter xdp_mode (status register PTL_SR_NAL_BASE + its index in
 * RMPP_COUNTERS, nal/rmpp/init.c): how the AF_XDP link runs. */
static const char *xdp_mode(struct pb_ctx *c)
{
	enum {
#define PB_RMPP_CTR(name, help) PB_CTR_##name,
		RMPP_COUNTERS(PB_RMPP_CTR)
#undef PB_RMPP_CTR
	};
	ptl_sr_value_t v = 0;
	if (c->ni == PTL_INVALID_HANDLE ||
	    PtlNIStatus(c->ni, PTL_SR_NAL_BASE + PB_CTR_xdp_mode, &v) != PTL_OK)
		return "unknown";
	return v == 1 ? "generic copy" : v == 2 ? "native copy" : v == 3 ? "native zero-copy" : "unknown";
}

static void set_transfer(struct pb_ctx *c)
{
	const char *eager = getenv("P3_SHMEM_EAGER_MAX");
	const char *cma = getenv("P3_SHMEM_CMA");

	if (strcmp(c->nal, "xdp") == 0) {
		snprintf(c->transfer, sizeof(c->transfer), "af_xdp %s", xdp_mode(c));
		return;
	}
	if (strcmp(c->nal, "shmem") != 0) {
		snprintf(c->transfer, sizeof(c->transfer), "default");
		return;
	}
	snprintf(c->transfer, sizeof(c->transfer), "eager-max=%s cma=%s", eager && *eager ? eager : "nal-default",
		 cma && *cma ? cma : "nal-default");
}

/* This rank's CPU affinity as a bit mask (CPUs 0..63), for the header. */
static uint64_t my_cpu_mask(void)
{
	cpu_set_t set;
	uint64_t m = 0;
	int i;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (i = 0; i < 64; i++)
		if (CPU_ISSET(i, &set))
			m |= 1ull << i;
	return m;
}

static void mask_str(uint64_t m, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < 64 && o + 4 < len; i++)
		if (m & (1ull << i))
			o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", i);
	if (!o)
		snprintf(buf, len, "?");
}

static void exchange_cpus(struct pb_ctx *c)
{
	struct ptl_oversub os;
	ptl_oversub_detect(&os);
	ptl_oversub_describe(&os, c->oversub, sizeof(c->oversub));

	uint64_t mine = my_cpu_mask(), peer = 0;
	char a[24], b[24];

	c->ctrl->barrier(c, mine, &peer);
	mask_str(c->rank == 0 ? mine : peer, a, sizeof(a));
	mask_str(c->rank == 0 ? peer : mine, b, sizeof(b));
	snprintf(c->cpus, sizeof(c->cpus), "rank0 %s, rank1 %s%s", a, b,
		 (__builtin_popcountll(mine) > 1 || __builtin_popcountll(peer) > 1) ? " (not pinned)" : "");
}

static int env_count_entries(const char *v)
{
	int n = 1;

	if (!v || !*v)
		return 0;
	for (; *v; v++)
		if (*v == ':')
			n++;
	return n;
}

static void pb_copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src && *src ? src : "unknown");
}

/* --ref-only: ranks from the launcher's environment, or fork the peer. */
static int run_ref_only(struct pb_ctx *c)
{
	const char *rid = getenv("PTL_MY_RID");
	const char *jid = getenv("PTL_MY_JID");
	pid_t child = -1;
	int status = 0;

	if (rid) {
		c->rank = (int)p3num_arg_u64("ptlbench", "PTL_MY_RID", rid, 0, 1, 0);
		c->nranks = env_count_entries(getenv("PTL_NIDMAP"));
		if (!c->nranks)
			c->nranks = env_count_entries(getenv("PTL_PIDMAP"));
		if (c->nranks != 2)
			pb_die(c, "needs exactly 2 ranks; run under ptlrun -n 2");
		c->jid = jid ? (ptl_jid_t)p3num_arg_u64("ptlbench", "PTL_MY_JID", jid, 0, UINT32_MAX, 0) : 0;
	} else {
		/* No launcher: become rank 0 and fork rank 1. */
		c->nranks = 2;
		c->jid = (ptl_jid_t)getpid();
		fflush(NULL);
		child = fork();
		if (child < 0)
			pb_die(c, "fork: %s", strerror(errno));
		c->rank = child == 0 ? 1 : 0;
	}
	pb_rank_for_errors = c->rank;
	pb_copy(c->nal, sizeof(c->nal), getenv("PTL_NAL") ? getenv("PTL_NAL") : "none");
	pb_copy(c->progress, sizeof(c->progress), getenv("PTL_PROGRESS") ? getenv("PTL_PROGRESS") : "none");
	set_transfer(c);
	c->ctrl = &pb_ctrl_shm;
	pb_seg_attach(c);
	exchange_cpus(c);
	pb_refs_measure(c);
	if (c->rank == 0)
		pb_refs_report(c);
	c->ctrl->barrier(c, 0, NULL);
	pb_refs_release(c);
	pb_seg_detach(c);
	if (child == 0)
		_exit(EXIT_SUCCESS);
	if (child > 0) {
		if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "ptlbench: rank 1 (pid %d) failed\n", (int)child);
			return EXIT_FAILURE;
		}
	}
	return EXIT_SUCCESS;
}

/* A job of 2k ranks is k pairs measured at once: rank r < k with rank r + k
 * (under srun -N 2 block placement, each pair spans the two nodes).  Inside
 * a pair the lower rank plays rank 0 and the other rank 1; pair 0 (ranks 0
 * and k) reports, the other pairs run the same tests silently and say only
 * when something fails (their exit status). */
static void set_pair(struct pb_ctx *c, unsigned int rank, unsigned int size)
{
	unsigned int half = size / 2;

	c->world_rank = (int)rank;
	c->nranks = (int)size;
	c->npairs = (int)half;
	c->pair = (int)(rank % half);
	c->rank = rank < half ? 0 : 1;
	c->partner = rank < half ? rank + half : rank - half;
	pb_rank_for_errors = (int)rank;
	if (c->pair != 0 && !freopen("/dev/null", "w", stdout))
		pb_die(c, "cannot silence the output of pair %d: %s", c->pair, strerror(errno));
}

static int run_portals(struct pb_ctx *c)
{
	const char *nal = NULL, *prog = NULL;
	unsigned int rank = 0, size = 0;
	int max_ifs = 0, rc, t;

	rc = PtlInit(&max_ifs);
	if (rc != PTL_OK)
		pb_die(c, "PtlInit: %s", PtlErrorStr((unsigned)rc));
	rc = PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1);
	if (rc != PTL_OK)
		pb_die(c, "PtlSetRank: %s (needs exactly 2 ranks; run under ptlrun -n 2)",
		       PtlErrorStr((unsigned)rc));
	rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &c->ni);
	if (rc != PTL_OK && rc != PTL_IFACE_DUP)
		pb_die(c, "PtlNIInit(PTL_IFACE_DEFAULT, NAL '%s'): %s", getenv("PTL_NAL") ? getenv("PTL_NAL") : "default",
		       PtlErrorStr((unsigned)rc));
	c->have_ptl = 1;
	rc = PtlGetRank(c->ni, &rank, &size);
	if (rc != PTL_OK || size < 2 || size % 2 != 0)
		pb_die(c, "needs an even number of ranks; run under ptlrun -n 2 (job size %u%s%s)", size,
		       rc != PTL_OK ? ": " : "", rc != PTL_OK ? PtlErrorStr((unsigned)rc) : "");
	set_pair(c, rank, size);
	rc = PtlGetRankId(c->ni, c->partner, &c->peer);
	if (rc != PTL_OK)
		pb_die(c, "PtlGetRankId(%u): %s", c->partner, PtlErrorStr((unsigned)rc));
	if (PtlGetJid(c->ni, &c->jid) != PTL_OK || c->jid == PTL_JID_ANY)
		c->jid = (ptl_jid_t)p3num_env_u64("ptlbench", "PTL_MY_JID", 0, 0, UINT32_MAX, 0);
	if (PtlNIDescribe(c->ni, &nal, &prog) != PTL_OK) {
		nal = getenv("PTL_NAL");
		prog = getenv("PTL_PROGRESS");
	}
	pb_copy(c->nal, sizeof(c->nal), nal);
	pb_copy(c->progress, sizeof(c->progress), prog);
	set_transfer(c);
	if (c->o.poll_get && strcmp(c->progress, "thread") == 0 && c->rank == 0)
		fprintf(stderr, "ptlbench: warning: --poll get spins beside the progress thread; "
				"on 2 cores that is 4 busy threads\n");

	pb_ptl_setup(c);
	c->ctrl = &pb_ctrl_portals;
	exchange_cpus(c);
	if (!c->o.no_ref)
		pb_refs_measure(c);
	for (t = 0; t < PB_NTESTS; t++)
		if (c->o.tests & (1u << t))
			pb_run_test(c, (enum pb_test)t);
	c->ctrl->barrier(c, 0, NULL);
	pb_refs_release(c);
	pb_seg_detach(c);
	pb_ptl_teardown(c);
	PtlFini();
	return c->failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static void on_signal(int sig)
{
	pb_seg_cleanup_name();
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	static struct pb_ctx ctx;
	struct pb_ctx *c = &ctx;

	c->rank = -1;
	c->udp_sock = -1;
	parse_opts(c, argc, argv);
	set_date(c);
	if (gethostname(c->host, sizeof(c->host)) != 0)
		snprintf(c->host, sizeof(c->host), "unknown");
	c->host[sizeof(c->host) - 1] = '\0';
	snprintf(c->commit, sizeof(c->commit), "%s", PTLBENCH_COMMIT);
	if (getloadavg(c->load, 1) != 1)
		c->load[0] = -1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (c->o.ref_only)
		return run_ref_only(c);
	return run_portals(c);
}
