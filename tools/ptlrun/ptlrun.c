/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ptlrun.c - start an N-rank Portals job on this machine.
 *
 * Each rank is a child process in its own process group (owned by
 * ptlrun), started with the reference runtime's environment: PTL_MY_RID,
 * PTL_NIDMAP, PTL_PIDMAP, PTL_MY_JID (= ptlrun's pid), PTL_NAL and, when
 * asked for, PTL_PROGRESS.  ptlrun forwards the ranks' output (tagged
 * "[rank] " per line unless --no-tag), forwards SIGINT/SIGTERM/SIGHUP,
 * tears the job down when a rank fails or the --timeout expires (SIGTERM
 * to every rank's process group, SIGKILL 2 s later), removes the job's
 * shared-memory segments and exits with the worst rank status.
 *
 * Ranks that exited are observed with waitid(WNOWAIT) and reaped only at
 * the very end: a zombie keeps its pid, so the number of a rank's process
 * group cannot be recycled while ptlrun may still signal it.
 */
#include "config.h"

#include "hosts.h"
#include "nic.h"
#include "nic_place.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "p3num.h"

#define PTLRUN_MAX_RANKS       4096
#define PTLRUN_KILL_GRACE_MS   2000  /* SIGTERM -> SIGKILL */
#define PTLRUN_DRAIN_MS        1000  /* output drain after the last rank exited */
#define PTLRUN_TEARDOWN_MAX_MS 4000  /* hard cap on teardown, output included */
#define PTLRUN_LINE_MAX        65536 /* longer lines are split */
#define PTLRUN_EXIT_USAGE      2
#define PTLRUN_EXIT_TIMEOUT    124
#define PTLRUN_EXIT_EXEC       127

/* ---- options ----------------------------------------------------------- */

struct ptlrun_opts {
	int po_nranks;
	const char *po_nal;
	const char *po_progress; /* NULL: inherit PTL_PROGRESS */
	double po_timeout;       /* seconds, 0: none */
	int po_tag;
	int *po_cpus; /* rank i -> po_cpus[i % po_ncpus] */
	int po_hosts;            /* --hosts H, 0: one host */
	const char *po_netns_tag; /* --netns-tag T: an existing bed */
	int po_ncpus;
	int po_nic_cpus[64]; /* --nic-cpus: NIC i -> po_nic_cpus[i % po_nnic_cpus] */
	int po_nnic_cpus;
	char **po_argv;
};

/* ---- per-NAL launch rules ---------------------------------------------- */
/*
 * The only NAL-specific knowledge in ptlrun: how rank i's process id
 * {nid, pid} is formed.  To support a new NAL (or multi-host --hosts),
 * add a row here; the function fills nid[i]/pid[i] for i < n or returns
 * -1 after printing why the NAL cannot be launched.
 */
typedef int (*ptlrun_maps_fn)(int n, const struct ptlrun_hosts *h, uint32_t *nid,
                              uint32_t *pid);

/* shmem (and lo): one node, nid 0; pid = rank. */
static int ptlrun_maps_local(int n, const struct ptlrun_hosts *h, uint32_t *nid, uint32_t *pid)
{
	if (h->ph_n > 1) {
		fprintf(stderr, "ptlrun: --hosts %d: the shmem and lo NALs reach only one host; "
		                "use --nal udp or ether for multi-host jobs\n",
		        h->ph_n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		nid[i] = 0;
		pid[i] = (uint32_t)i;
	}
	return 0;
}

/* Are the UDP ports of pids base .. base+n-1 free on loopback?  The udp NAL
 * binds port P3_RMPP_BASE_PORT (21000) + pid. */
static int udp_ports_free(uint32_t base, int n)
{
	const char *e = getenv("P3_RMPP_BASE_PORT");
	long port0 =
	    e && *e ? (long)p3num_arg_u64("ptlrun", "P3_RMPP_BASE_PORT", e, 1, 65535, P3NUM_BASE0)
	            : 21000;
	int ok = 1;

	for (int i = 0; i < n && ok; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET};
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return 1; /* cannot tell: assume free */
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons((uint16_t)(port0 + (long)base + i));
		ok = port0 + (long)base + i <= 65535 &&
		     bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
	}
	return ok;
}

/* First pid base (0, n, 2n, ...) whose ports are all free, so that two
 * single-host udp jobs (two users, a benchmark beside a test run) do not
 * collide on 21000+rank.  Racy against a job starting at the same instant;
 * the NAL then reports the busy port.  P3_PTLRUN_PID_BASE forces a base. */
static uint32_t udp_pid_base(int n)
{
	const char *e = getenv("P3_PTLRUN_PID_BASE");

	if (e && *e)
		return (uint32_t)p3num_arg_u64("ptlrun", "P3_PTLRUN_PID_BASE", e, 0, 65535, 0);
	for (uint32_t b = 0; b < 64u * (uint32_t)n; b += (uint32_t)n)
		if (udp_ports_free(b, n))
			return b;
	return 0;
}

/* udp: nid = IPv4 address (host byte order) of the rank's host, pid =
 * rank (+ a base with free ports on a single host).
 * Single host: 127.0.0.1; with --hosts, the rank's namespace's address. */
static int ptlrun_maps_udp(int n, const struct ptlrun_hosts *h, uint32_t *nid, uint32_t *pid)
{
	uint32_t base = h->ph_n ? 0 : udp_pid_base(n);

	for (int i = 0; i < n; i++) {
		nid[i] = h->ph_n ? ptlrun_hosts_nid(h, i) : INADDR_LOOPBACK;
		pid[i] = base + (uint32_t)i;
	}
	return 0;
}

/* ether: nid = the host's IPv4 address (the NAL finds the MAC in the
 * neighbour table), pid = rank.  Raw frames between two processes of one
 * host never reach each other through a real interface, hence --hosts. */
static int ptlrun_maps_ether(int n, const struct ptlrun_hosts *h, uint32_t *nid, uint32_t *pid)
{
	if (!h->ph_n) {
		fprintf(stderr, "ptlrun: --nal ether: raw Ethernet jobs run between network "
		                "namespace hosts: add --hosts N (needs root), e.g. --hosts %d\n",
		        n);
		return -1;
	}
	return ptlrun_maps_udp(n, h, nid, pid);
}

/* xdp: ether's plan; an interface queue takes one AF_XDP socket, so one
 * rank per host. */
static int ptlrun_maps_xdp(int n, const struct ptlrun_hosts *h, uint32_t *nid, uint32_t *pid)
{
	if (!h->ph_n || h->ph_n < n) {
		fprintf(stderr, "ptlrun: --nal xdp: AF_XDP jobs run one rank per network namespace "
		                "host (one AF_XDP socket per interface queue): add --hosts %d (needs "
		                "root)\n",
		        n);
		return -1;
	}
	return ptlrun_maps_udp(n, h, nid, pid);
}

/* myrinet: the udp address plan -- one host: the NIC's wire is rmpp over
 * UDP; --hosts: the ether plan, each host's NIC on raw Ethernet (nic.c
 * starts one per host). */
static int ptlrun_maps_myrinet(int n, const struct ptlrun_hosts *h, uint32_t *nid, uint32_t *pid)
{
	return ptlrun_maps_udp(n, h, nid, pid);
}

static const struct ptlrun_nal {
	const char *pn_name;
	ptlrun_maps_fn pn_maps;
	const char *pn_why; /* for unsupported NALs */
} ptlrun_nals[] = {
    {"shmem", ptlrun_maps_local, NULL},
    {"lo", ptlrun_maps_local, NULL},
    {"udp", ptlrun_maps_udp, NULL},
    {"ether", ptlrun_maps_ether, NULL},
    {"xdp", ptlrun_maps_xdp, NULL},
    {"myrinet", ptlrun_maps_myrinet, NULL},
};

static const char *const ptlrun_progress_modes[] = {"app", "thread", "interrupt", "offload"};

/* ---- ranks ------------------------------------------------------------- */

struct ptlrun_buf {
	int pb_fd;    /* read end of the rank's pipe, -1 once closed */
	int pb_outfd; /* 1 or 2 */
	size_t pb_len;
	char pb_data[PTLRUN_LINE_MAX];
};

struct ptlrun_rank {
	int rk_rank;
	pid_t rk_pid;  /* also the process group id */
	int rk_exited; /* exit observed (still a zombie until reaped) */
	int rk_reaped;
	int rk_code;                 /* CLD_EXITED / CLD_KILLED / CLD_DUMPED */
	int rk_status;               /* exit code or signal number */
	int rk_ours;                 /* died of the SIGTERM/SIGKILL of ptlrun's teardown */
	struct ptlrun_buf rk_out[2]; /* stdout, stderr (tag mode only) */
};

static struct ptlrun_rank *ptlrun_ranks;
static int ptlrun_nranks;
static int ptlrun_out_dead[3]; /* our stdout/stderr went away (EPIPE) */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: ptlrun -n N [options] [--] program [args...]\n"
	           "Start an N-rank Portals job on this machine.\n"
	           "\n"
	           "Options:\n"
	           "  -n, --np N              number of ranks (default 1)\n"
	           "      --nal NAME          network layer: shmem (default), lo, udp, ether,\n"
	           "                          xdp (ether and xdp need --hosts; xdp one rank per\n"
	           "                          host), myrinet (ptlrun starts the emulated NIC,\n"
	           "                          mcpd(8), one per host, and stops it)\n"
	           "      --progress MODE     Portals progress: app, thread (myrinet also:\n"
	           "                          interrupt, offload); default: inherit PTL_PROGRESS\n"
	           "      --timeout SEC       terminate the job after SEC seconds (exit 124)\n"
	           "      --tag               prefix each output line with \"[rank] \" (default)\n"
	           "      --no-tag            pass the ranks' output through untouched\n"
	           "      --cpus LIST         pin rank i to the i-th CPU of LIST (e.g. 0,1 or\n"
	           "                          0-3; reused cyclically); default: no pinning\n"
	           "      --nic-cpus LIST     myrinet: pin NIC i (mcpd) to the i-th CPU of LIST;\n"
	           "                          a NIC on a rank's CPU does not spin (benchmark\n"
	           "                          placement: --cpus 0,1 --nic-cpus 1); default:\n"
	           "                          the NIC is not pinned\n"
	           "      --hosts H           place rank i on host i %% H: H network namespaces\n"
	           "                          made with p3-netns for the job and removed after\n"
	           "                          it (needs root; udp, ether, xdp, myrinet: its\n"
	           "                          NICs over raw Ethernet)\n"
	           "      --netns-tag T       use the existing p3-netns bed T (e.g. with loss\n"
	           "                          rules) instead of making one; all its hosts\n"
	           "                          unless --hosts says fewer\n"
	           "  -h, --help              show this help\n"
	           "  -V, --version           show the version\n"
	           "\n"
	           "Environment: P3_PTLRUN_NAL, P3_PTLRUN_PROGRESS, P3_PTLRUN_TIMEOUT,\n"
	           "P3_PTLRUN_CPUS and P3_PTLRUN_TAG (0/1) give defaults for the options;\n"
	           "PTL_NAL is used when neither --nal nor P3_PTLRUN_NAL is given.\n"
	           "\n"
	           "Each rank gets PTL_MY_RID, PTL_NIDMAP, PTL_PIDMAP, PTL_MY_JID (ptlrun's\n"
	           "pid), PTL_NAL and PTL_PROGRESS.  Exit status: the worst rank status\n"
	           "(128+N for a rank killed by signal N), not counting ranks killed by the\n"
	           "teardown after a failure; 124 on --timeout; 128+N when ptlrun got signal N;\n"
	           "127 if the program cannot be executed; 2 for usage errors; 77 when --hosts\n"
	           "lacks the privileges for network namespaces.\n");
}

static int parse_count(const char *opt, const char *s, int *out)
{
	char msg[256];
	uint64_t v;

	if (p3num_u64(opt, s, 1, PTLRUN_MAX_RANKS, 0, &v, msg, sizeof(msg))) {
		fprintf(stderr, "ptlrun: %s\n", msg);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_timeout(const char *opt, const char *s, double *out)
{
	char msg[256];
	double v;

	if (p3num_dbl(opt, s, 0, 1e7, &v, msg, sizeof(msg))) {
		fprintf(stderr, "ptlrun: %s (seconds, e.g. 30 or 0.5)\n", msg);
		return -1;
	}
	*out = v;
	return 0;
}

static const struct ptlrun_nal *find_nal(const char *opt, const char *name)
{
	for (size_t i = 0; i < sizeof(ptlrun_nals) / sizeof(ptlrun_nals[0]); i++)
		if (strcmp(ptlrun_nals[i].pn_name, name) == 0)
			return &ptlrun_nals[i];
	fprintf(stderr, "ptlrun: %s: unknown NAL '%s' (known: shmem, lo, udp, ether, xdp, myrinet)\n",
	        opt, name);
	return NULL;
}

static int check_progress(const char *opt, const char *mode)
{
	for (size_t i = 0; i < sizeof(ptlrun_progress_modes) / sizeof(ptlrun_progress_modes[0]);
	     i++)
		if (strcmp(ptlrun_progress_modes[i], mode) == 0)
			return 0;
	fprintf(stderr,
	        "ptlrun: %s: unknown progress mode '%s' (known: app, thread, interrupt, "
	        "offload)\n",
	        opt, mode);
	return -1;
}

/* "0,2,4-7" -> array; every CPU must be one ptlrun may run on. */
static int parse_cpus(const char *opt, const char *s, int **cpus_p, int *n_p)
{
	cpu_set_t allowed;
	int *cpus = NULL, n = 0;
	const char *p = s;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		CPU_ZERO(&allowed);
	if (!*s)
		goto bad;
	while (*p) {
		char *end;
		long lo, hi;

		if (*p < '0' || *p > '9')
			goto bad;
		lo = strtol(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			if (*p < '0' || *p > '9')
				goto bad;
			hi = strtol(p, &end, 10);
		}
		if (lo > hi || hi >= CPU_SETSIZE || (*end && *end != ','))
			goto bad;
		for (long c = lo; c <= hi; c++) {
			int *grown;

			if (!CPU_ISSET((int)c, &allowed)) {
				fprintf(stderr,
				        "ptlrun: %s: CPU %ld is not available to this "
				        "process\n",
				        opt, c);
				free(cpus);
				return -1;
			}
			grown = realloc(cpus, (size_t)(n + 1) * sizeof(*cpus));
			if (!grown) {
				free(cpus);
				fprintf(stderr, "ptlrun: out of memory\n");
				return -1;
			}
			cpus = grown;
			cpus[n++] = (int)c;
		}
		p = *end ? end + 1 : end;
		if (*end == ',' && !*p)
			goto bad;
	}
	*cpus_p = cpus;
	*n_p = n;
	return 0;

bad:
	free(cpus);
	fprintf(stderr, "ptlrun: %s: bad CPU list '%s': expected e.g. 0,2 or 0-3\n", opt, s);
	return -1;
}

static int parse_tag_env(const char *s, int *tag)
{
	if (strcmp(s, "1") == 0 || strcmp(s, "yes") == 0) {
		*tag = 1;
		return 0;
	}
	if (strcmp(s, "0") == 0 || strcmp(s, "no") == 0) {
		*tag = 0;
		return 0;
	}
	fprintf(stderr, "ptlrun: P3_PTLRUN_TAG: bad value '%s': expected 0 or 1\n", s);
	return -1;
}

static int parse_options(int argc, char **argv, struct ptlrun_opts *o,
                         const struct ptlrun_nal **nal_p)
{
	enum {
		OPT_NAL = 256,
		OPT_PROGRESS,
		OPT_TIMEOUT,
		OPT_TAG,
		OPT_NO_TAG,
		OPT_CPUS,
		OPT_HOSTS,
		OPT_NETNS_TAG,
		OPT_NIC_CPUS
	};
	static const struct option longopts[] = {
	    {"np", required_argument, NULL, 'n'},
	    {"nal", required_argument, NULL, OPT_NAL},
	    {"progress", required_argument, NULL, OPT_PROGRESS},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"tag", no_argument, NULL, OPT_TAG},
	    {"no-tag", no_argument, NULL, OPT_NO_TAG},
	    {"cpus", required_argument, NULL, OPT_CPUS},
	    {"hosts", required_argument, NULL, OPT_HOSTS},
	    {"netns-tag", required_argument, NULL, OPT_NETNS_TAG},
	    {"nic-cpus", required_argument, NULL, OPT_NIC_CPUS},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	const char *nal_opt = "PTL_NAL", *s;
	int c;

	memset(o, 0, sizeof(*o));
	o->po_nranks = 1;
	o->po_tag = 1;
	o->po_nal = "shmem";
	if ((s = getenv("PTL_NAL")) && *s)
		o->po_nal = s;
	if ((s = getenv("P3_PTLRUN_NAL")) && *s) {
		o->po_nal = s;
		nal_opt = "P3_PTLRUN_NAL";
	}
	if ((s = getenv("P3_PTLRUN_PROGRESS")) && *s) {
		if (check_progress("P3_PTLRUN_PROGRESS", s) != 0)
			return -1;
		o->po_progress = s;
	}
	if ((s = getenv("P3_PTLRUN_TIMEOUT")) && *s &&
	    parse_timeout("P3_PTLRUN_TIMEOUT", s, &o->po_timeout) != 0)
		return -1;
	if ((s = getenv("P3_PTLRUN_TAG")) && *s && parse_tag_env(s, &o->po_tag) != 0)
		return -1;
	if ((s = getenv("P3_PTLRUN_CPUS")) && *s &&
	    parse_cpus("P3_PTLRUN_CPUS", s, &o->po_cpus, &o->po_ncpus) != 0)
		return -1;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:n:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_count("-n", optarg, &o->po_nranks) != 0)
				return -1;
			break;
		case OPT_NAL:
			o->po_nal = optarg;
			nal_opt = "--nal";
			break;
		case OPT_PROGRESS:
			if (check_progress("--progress", optarg) != 0)
				return -1;
			o->po_progress = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_timeout("--timeout", optarg, &o->po_timeout) != 0)
				return -1;
			break;
		case OPT_TAG:
			o->po_tag = 1;
			break;
		case OPT_NO_TAG:
			o->po_tag = 0;
			break;
		case OPT_CPUS:
			free(o->po_cpus);
			o->po_cpus = NULL;
			if (parse_cpus("--cpus", optarg, &o->po_cpus, &o->po_ncpus) != 0)
				return -1;
			break;
		case OPT_NIC_CPUS: {
			int *nc = NULL, nn = 0;
			if (parse_cpus("--nic-cpus", optarg, &nc, &nn) != 0)
				return -1;
			o->po_nnic_cpus = nn < 64 ? nn : 64;
			memcpy(o->po_nic_cpus, nc, (size_t)o->po_nnic_cpus * sizeof(*nc));
			free(nc);
			break;
		}
		case OPT_HOSTS:
			if (parse_count("--hosts", optarg, &o->po_hosts) != 0)
				return -1;
			if (o->po_hosts > PTLRUN_HOSTS_MAX) {
				fprintf(stderr, "ptlrun: --hosts %d: at most %d hosts\n", o->po_hosts,
				        PTLRUN_HOSTS_MAX);
				return -1;
			}
			break;
		case OPT_NETNS_TAG:
			o->po_netns_tag = optarg;
			if (!*optarg || strlen(optarg) > 12 || strpbrk(optarg, "/ \t")) {
				fprintf(stderr, "ptlrun: --netns-tag '%s': expected a p3-netns tag "
				                "(1..12 characters, no '/' or blanks)\n",
				        optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("ptlrun (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
			exit(0);
		case ':':
			fprintf(stderr, "ptlrun: option '%s' needs a value\n", argv[optind - 1]);
			goto usage_hint;
		default:
			if (optopt && optopt < 256)
				fprintf(stderr, "ptlrun: unknown option '-%c'\n", optopt);
			else
				fprintf(stderr, "ptlrun: unknown option '%s'\n", argv[optind - 1]);
			goto usage_hint;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "ptlrun: no program given\n");
		goto usage_hint;
	}
	o->po_argv = argv + optind;
	*nal_p = find_nal(nal_opt, o->po_nal);
	if (!*nal_p)
		return -1;
	return 0;

usage_hint:
	fprintf(stderr, "Try 'ptlrun --help' for more information.\n");
	return -1;
}

/* ---- output forwarding ------------------------------------------------- */

static void write_out(int fd, const char *buf, size_t len)
{
	while (len > 0 && !ptlrun_out_dead[fd]) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};

			poll(&pfd, 1, 100);
			continue;
		}
		if (n <= 0) {
			ptlrun_out_dead[fd] = 1; /* EPIPE or worse: drop output */
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* Emit one tagged line (newline added). */
static void emit_line(const struct ptlrun_rank *rk, int outfd, const char *line, size_t len)
{
	char *out = malloc(len + 32);
	int n;

	if (!out)
		return;
	n = snprintf(out, 32, "[%d] ", rk->rk_rank);
	memcpy(out + n, line, len);
	out[(size_t)n + len] = '\n';
	write_out(outfd, out, (size_t)n + len + 1);
	free(out);
}

/* Flush complete lines; at_eof also flushes a trailing partial line. */
static void flush_lines(struct ptlrun_rank *rk, struct ptlrun_buf *b, int at_eof)
{
	size_t start = 0;

	for (;;) {
		char *nl = memchr(b->pb_data + start, '\n', b->pb_len - start);

		if (!nl)
			break;
		emit_line(rk, b->pb_outfd, b->pb_data + start, (size_t)(nl - (b->pb_data + start)));
		start = (size_t)(nl - b->pb_data) + 1;
	}
	if (start == 0 && b->pb_len == sizeof(b->pb_data)) {
		/* one line longer than the buffer: split it */
		emit_line(rk, b->pb_outfd, b->pb_data, b->pb_len);
		start = b->pb_len;
	}
	if (at_eof && start < b->pb_len) {
		emit_line(rk, b->pb_outfd, b->pb_data + start, b->pb_len - start);
		start = b->pb_len;
	}
	memmove(b->pb_data, b->pb_data + start, b->pb_len - start);
	b->pb_len -= start;
}

static void close_buf(struct ptlrun_rank *rk, struct ptlrun_buf *b)
{
	if (b->pb_fd < 0)
		return;
	flush_lines(rk, b, 1);
	close(b->pb_fd);
	b->pb_fd = -1;
}

static void read_buf(struct ptlrun_rank *rk, struct ptlrun_buf *b)
{
	ssize_t n = read(b->pb_fd, b->pb_data + b->pb_len, sizeof(b->pb_data) - b->pb_len);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close_buf(rk, b);
		return;
	}
	b->pb_len += (size_t)n;
	flush_lines(rk, b, 0);
}

/* Forward what a rank has already written (without waiting for more), so
 * its last words come before ptlrun's verdict on it. */
static void drain_rank(struct ptlrun_rank *rk)
{
	for (int j = 0; j < 2; j++) {
		struct ptlrun_buf *b = &rk->rk_out[j];

		for (int k = 0; k < 64 && b->pb_fd >= 0; k++) {
			struct pollfd pfd = {.fd = b->pb_fd, .events = POLLIN};

			if (poll(&pfd, 1, 0) <= 0)
				break;
			read_buf(rk, b);
		}
	}
}

/* ---- process management ------------------------------------------------ */

static void describe_status(const struct ptlrun_rank *rk, char *buf, size_t len)
{
	if (rk->rk_code == CLD_EXITED)
		snprintf(buf, len, "exited with status %d", rk->rk_status);
	else
		snprintf(buf, len, "killed by signal %d (%s)%s", rk->rk_status,
		         strsignal(rk->rk_status),
		         rk->rk_code == CLD_DUMPED ? " (core dumped)" : "");
}

static int rank_exit_value(const struct ptlrun_rank *rk)
{
	return rk->rk_code == CLD_EXITED ? rk->rk_status : 128 + rk->rk_status;
}

static void signal_groups(int sig)
{
	for (int i = 0; i < ptlrun_nranks; i++)
		if (ptlrun_ranks[i].rk_pid > 0 && !ptlrun_ranks[i].rk_reaped)
			kill(-ptlrun_ranks[i].rk_pid, sig);
}

/* Observe exits without reaping.  Returns the number of newly exited ranks;
 * *first_bad_p gets the first newly exited rank that failed. */
static int poll_children(struct ptlrun_rank **first_bad_p, int teardown)
{
	int found = 0;

	*first_bad_p = NULL;
	for (int i = 0; i < ptlrun_nranks; i++) {
		struct ptlrun_rank *rk = &ptlrun_ranks[i];
		siginfo_t si;

		if (rk->rk_pid <= 0 || rk->rk_exited)
			continue;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)rk->rk_pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
		    si.si_pid != rk->rk_pid)
			continue;
		rk->rk_exited = 1;
		rk->rk_code = si.si_code;
		rk->rk_status = si.si_status;
		rk->rk_ours = teardown && si.si_code != CLD_EXITED &&
		              (si.si_status == SIGTERM || si.si_status == SIGKILL);
		found++;
		if (!*first_bad_p && (si.si_code != CLD_EXITED || si.si_status != 0))
			*first_bad_p = rk;
	}
	return found;
}

static void reap_all(void)
{
	for (int i = 0; i < ptlrun_nranks; i++) {
		struct ptlrun_rank *rk = &ptlrun_ranks[i];
		int st;

		if (rk->rk_pid <= 0 || rk->rk_reaped)
			continue;
		while (waitpid(rk->rk_pid, &st, 0) < 0 && errno == EINTR)
			;
		rk->rk_reaped = 1;
	}
}

/* Remove /dev/shm/p3shm-<uid>-<jid>-* (the shmem NAL's segments). */
static void cleanup_shm(unsigned int jid)
{
	char prefix[64];
	size_t plen;
	int removed = 0;
	DIR *d;
	struct dirent *de;

	snprintf(prefix, sizeof(prefix), "p3shm-%u-%u-", (unsigned int)getuid(), jid);
	plen = strlen(prefix);
	d = opendir("/dev/shm");
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			removed++;
		else
			fprintf(stderr, "ptlrun: cannot remove /dev/shm/%s: %s\n", de->d_name,
			        strerror(errno));
	}
	closedir(d);
	if (removed)
		fprintf(stderr,
		        "ptlrun: removed %d stale shared-memory segment%s of job %u "
		        "(/dev/shm/%s*)\n",
		        removed, removed == 1 ? "" : "s", jid, prefix);
}

static char *join_map(const uint32_t *map, int n)
{
	size_t cap = (size_t)n * 11 + 1, len = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	s[0] = '\0';
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%" PRIu32, i ? ":" : "", map[i]);
	return s;
}

struct ptlrun_launch {
	const struct ptlrun_opts *pl_opts;
	const struct ptlrun_hosts *pl_hosts;
	const char *pl_nidmap;
	const char *pl_pidmap;
	char pl_jid[16];
	char pl_authkey[65]; /* P3_RMPP_AUTH_KEY: the job's random key, hex */
	const sigset_t *pl_oldmask;
	const struct rlimit *pl_nofile; /* to restore in the ranks, or NULL */
	int pl_stdin_tty;
};

/* Every rank ptlrun starts runs on this machine (--hosts: namespaces of it),
 * on the CPUs of --cpus or of ptlrun's affinity: tell the ranks, so they
 * know whether the node is oversubscribed (<p3rt/oversub.h>).  Variables
 * already set are kept. */
static int export_node_shape(const struct ptlrun_opts *o)
{
	char v[16];
	snprintf(v, sizeof(v), "%d", o->po_nranks);
	if (setenv("P3_LOCAL_RANKS", v, 0) != 0)
		return -1;
	if (o->po_ncpus <= 0)
		return 0;
	int distinct = 0;
	for (int i = 0; i < o->po_ncpus; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = o->po_cpus[j] == o->po_cpus[i];
		distinct += !seen;
	}
	snprintf(v, sizeof(v), "%d", distinct);
	return setenv("P3_NODE_CPUS", v, 0);
}

/* A fresh 32-byte key for the job's rmpp frame authentication
 * (P3_RMPP_AUTH, rmpp/rmpp_auth.h), as 64 hex digits. */
static int job_auth_key(char hex[65])
{
	uint8_t key[32];
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return -1;
	for (size_t i = 0; i < sizeof(key); i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	return 0;
}

/* The key goes to every rank (unless the environment has one); frames are
 * authenticated by default in --hosts jobs, whose frames cross a network
 * (P3_RMPP_AUTH, unless set), not on a single host's loopback. */
static int export_auth(const struct ptlrun_launch *l)
{
	if (setenv("P3_RMPP_AUTH_KEY", l->pl_authkey, 0) != 0)
		return -1;
	return l->pl_hosts->ph_n ? setenv("P3_RMPP_AUTH", "on", 0) : 0;
}

/* In the child: never returns. */
static void child_exec(const struct ptlrun_launch *l, int rank, int out_w, int err_w, int status_w)
{
	const struct ptlrun_opts *o = l->pl_opts;
	char rid[16];
	int err[2]; /* stage, errno */

	err[0] = 1;

	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, l->pl_oldmask, NULL);
	if (out_w >= 0 && (dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0))
		goto fail;
	if (l->pl_stdin_tty || rank != 0) {
		int fd = open("/dev/null", O_RDONLY);

		if (fd < 0 || dup2(fd, 0) < 0)
			goto fail;
		if (fd != 0)
			close(fd);
	}
	err[0] = 2;
	if (o->po_ncpus > 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o->po_cpus[rank % o->po_ncpus], &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0)
			goto fail;
	}
	err[0] = 4;
	if (l->pl_hosts->ph_n && (ptlrun_hosts_enter(l->pl_hosts, rank) != 0 ||
	                          setenv("P3_RMPP_IFNAME", "eth0", 0) != 0))
		goto fail;
	err[0] = 3;
	snprintf(rid, sizeof(rid), "%d", rank);
	if (setenv("PTL_MY_RID", rid, 1) || setenv("PTL_NIDMAP", l->pl_nidmap, 1) ||
	    setenv("PTL_PIDMAP", l->pl_pidmap, 1) || setenv("PTL_MY_JID", l->pl_jid, 1) ||
	    setenv("PTL_NAL", o->po_nal, 1) ||
	    (o->po_progress && setenv("PTL_PROGRESS", o->po_progress, 1)) ||
	    export_node_shape(o) != 0 || export_auth(l) != 0)
		goto fail;
	/* shmem: one inbound ring per sender, 64 by default (nal/shmem); a
	 * larger job gets one per rank unless the user chose (the rings are
	 * sparse: a ring's pages are touched on first contact only) */
	if (strcmp(o->po_nal, "shmem") == 0 && o->po_nranks > 64) {
		char peers[16];
		snprintf(peers, sizeof(peers), "%d", o->po_nranks);
		if (setenv("P3_SHMEM_MAX_PEERS", peers, 0) != 0)
			goto fail;
	}
	/* last: until exec closes them we hold every rank's pipes */
	if (l->pl_nofile)
		setrlimit(RLIMIT_NOFILE, l->pl_nofile);
	err[0] = 0;
	execvp(o->po_argv[0], o->po_argv);
fail:
	err[1] = errno;
	if (write(status_w, err, sizeof(err)) < 0)
		_exit(PTLRUN_EXIT_EXEC);
	_exit(PTLRUN_EXIT_EXEC);
}

/* Start rank `rank`.  0, or -1 (message printed). */
static int start_rank(const struct ptlrun_launch *l, struct ptlrun_rank *rk)
{
	static const char *const stages[] = {"cannot execute", "cannot set up the I/O of",
	                                     "cannot pin to its CPU",
	                                     "cannot set the environment of",
	                                     "cannot enter the network namespace of"};
	int out[2] = {-1, -1}, errp[2] = {-1, -1}, st[2] = {-1, -1};
	int err[2] = {0, 0};
	ssize_t n;
	pid_t pid;

	if (pipe2(st, O_CLOEXEC) != 0)
		goto pipe_fail;
	if (l->pl_opts->po_tag && (pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0))
		goto pipe_fail;
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ptlrun: cannot start rank %d: fork: %s\n", rk->rk_rank,
		        strerror(errno));
		goto close_pipes;
	}
	if (pid == 0)
		child_exec(l, rk->rk_rank, out[1], errp[1], st[1]);
	setpgid(pid, pid); /* as the child does: whoever runs first wins */
	rk->rk_pid = pid;
	close(st[1]);
	st[1] = -1;
	if (out[1] >= 0) {
		close(out[1]);
		close(errp[1]);
		rk->rk_out[0].pb_fd = out[0];
		rk->rk_out[1].pb_fd = errp[0];
	}
	do
		n = read(st[0], err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(st[0]);
	if (n == (ssize_t)sizeof(err)) {
		fprintf(stderr, "ptlrun: %s '%s' (rank %d): %s\n",
		        stages[err[0] >= 0 && err[0] < 5 ? err[0] : 0], l->pl_opts->po_argv[0],
		        rk->rk_rank, strerror(err[1]));
		return -1;
	}
	return 0;

pipe_fail:
	fprintf(stderr, "ptlrun: cannot start rank %d: pipe: %s\n", rk->rk_rank, strerror(errno));
close_pipes:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
		if (st[i] >= 0)
			close(st[i]);
	}
	return -1;
}

/* The test bed (--hosts) and the nid/pid maps as PTL_NIDMAP/PTL_PIDMAP
 * strings.  0, or an exit status after printing why (nothing left behind). */
static int prepare_maps(const struct ptlrun_opts *o, const struct ptlrun_nal *nal,
                        struct ptlrun_hosts *hosts, char **nidstr, char **pidstr)
{
	uint32_t *nid = calloc((size_t)o->po_nranks, sizeof(*nid));
	uint32_t *pid = calloc((size_t)o->po_nranks, sizeof(*pid));
	int rc = 0;

	memset(hosts, 0, sizeof(*hosts));
	*nidstr = *pidstr = NULL;
	if (!nid || !pid) {
		fprintf(stderr, "ptlrun: out of memory\n");
		rc = 1;
		goto out;
	}
	if (o->po_hosts || o->po_netns_tag) {
		if (nal->pn_maps != ptlrun_maps_udp && nal->pn_maps != ptlrun_maps_ether &&
		    nal->pn_maps != ptlrun_maps_xdp && nal->pn_maps != ptlrun_maps_myrinet) {
			fprintf(stderr, "ptlrun: --hosts: NAL %s reaches only one host; use udp, "
			                "ether, xdp or myrinet\n",
			        nal->pn_name);
			rc = PTLRUN_EXIT_USAGE;
			goto out;
		}
		rc = ptlrun_hosts_setup(hosts, o->po_hosts, o->po_netns_tag);
		if (rc != 0)
			goto out;
		fprintf(stderr, "ptlrun: %d rank%s on %d namespace host%s (bed %s%s)\n", o->po_nranks,
		        o->po_nranks == 1 ? "" : "s", hosts->ph_n, hosts->ph_n == 1 ? "" : "s",
		        hosts->ph_tag, hosts->ph_created ? ", removed at exit" : "");
	}
	if (nal->pn_maps(o->po_nranks, hosts, nid, pid) != 0) {
		rc = PTLRUN_EXIT_USAGE;
		goto out;
	}
	*nidstr = join_map(nid, o->po_nranks);
	*pidstr = join_map(pid, o->po_nranks);
	if (!*nidstr || !*pidstr) {
		fprintf(stderr, "ptlrun: out of memory\n");
		rc = 1;
	}
out:
	if (rc != 0) {
		ptlrun_hosts_teardown(hosts);
		free(*nidstr);
		free(*pidstr);
		*nidstr = *pidstr = NULL;
	}
	free(nid);
	free(pid);
	return rc;
}

int main(int argc, char **argv)
{
	struct ptlrun_opts o;
	const struct ptlrun_nal *nal;
	struct ptlrun_launch l;
	struct ptlrun_hosts hosts;
	sigset_t mask, oldmask;
	struct rlimit nofile;
	char *nidstr, *pidstr;
	int sfd, started, failed_start = 0;
	int teardown = 0; /* SIGTERM sent to the job */
	int64_t teardown_at = 0, all_exited_at = -1, deadline_job = -1;
	int killed = 0, timed_out = 0, got_signal = 0, nic_died = 0;
	int exited = 0, status = 0;

	if (parse_options(argc, argv, &o, &nal) != 0)
		return PTLRUN_EXIT_USAGE;
	if (nal->pn_why) {
		fprintf(stderr, "ptlrun: --nal %s: %s\n", nal->pn_name, nal->pn_why);
		free(o.po_cpus);
		return PTLRUN_EXIT_USAGE;
	}
	status = prepare_maps(&o, nal, &hosts, &nidstr, &pidstr);
	if (status != 0) {
		free(o.po_cpus);
		return status;
	}
	if (nal->pn_maps == ptlrun_maps_myrinet &&
	    (ptlrun_nic_placement(o.po_nic_cpus, o.po_nnic_cpus, o.po_cpus, o.po_ncpus) != 0 ||
	     ptlrun_nic_start(&hosts) != 0)) {
		ptlrun_hosts_teardown(&hosts);
		free(nidstr);
		free(pidstr);
		free(o.po_cpus);
		return PTLRUN_EXIT_EXEC;
	}
	char authkey[65];
	ptlrun_nranks = o.po_nranks;
	ptlrun_ranks = calloc((size_t)o.po_nranks, sizeof(*ptlrun_ranks));
	if (job_auth_key(authkey) != 0) {
		fprintf(stderr, "ptlrun: getrandom: %s (the job's frame-authentication key)\n",
		        strerror(errno));
		free(ptlrun_ranks);
		ptlrun_ranks = NULL;
	}
	if (!ptlrun_ranks) {
		fprintf(stderr, "ptlrun: out of memory\n");
		ptlrun_hosts_teardown(&hosts);
		free(nidstr);
		free(pidstr);
		free(o.po_cpus);
		return 1;
	}

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		fprintf(stderr, "ptlrun: signalfd: %s\n", strerror(errno));
		ptlrun_hosts_teardown(&hosts);
		return 1;
	}

	memset(&l, 0, sizeof(l));
	l.pl_opts = &o;
	l.pl_hosts = &hosts;
	l.pl_nidmap = nidstr;
	l.pl_pidmap = pidstr;
	snprintf(l.pl_jid, sizeof(l.pl_jid), "%u", (unsigned int)getpid());
	memcpy(l.pl_authkey, authkey, sizeof(authkey));
	l.pl_oldmask = &oldmask;
	l.pl_stdin_tty = isatty(0);
	/* two pipes per rank: raise our descriptor limit if needed (the
	 * ranks get the original one back) */
	if (o.po_tag && getrlimit(RLIMIT_NOFILE, &nofile) == 0 &&
	    nofile.rlim_cur < (rlim_t)(2 * o.po_nranks + 64)) {
		struct rlimit more = nofile;

		more.rlim_cur = (rlim_t)(2 * o.po_nranks + 64);
		if (more.rlim_max != RLIM_INFINITY && more.rlim_cur > more.rlim_max)
			more.rlim_cur = more.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			l.pl_nofile = &nofile;
	}
	fflush(NULL);
	for (started = 0; started < o.po_nranks; started++) {
		struct ptlrun_rank *rk = &ptlrun_ranks[started];

		rk->rk_rank = started;
		rk->rk_out[0].pb_fd = rk->rk_out[1].pb_fd = -1;
		rk->rk_out[0].pb_outfd = 1;
		rk->rk_out[1].pb_outfd = 2;
		if (start_rank(&l, rk) != 0) {
			failed_start = 1;
			if (rk->rk_pid > 0)
				started++;
			break;
		}
	}
	ptlrun_nranks = started;
	if (failed_start) {
		teardown = 1;
		teardown_at = now_ms();
		signal_groups(SIGTERM);
	}
	if (o.po_timeout > 0)
		deadline_job = now_ms() + (int64_t)(o.po_timeout * 1000.0 + 0.5);

	for (;;) {
		struct pollfd pfds[1 + 2 * PTLRUN_MAX_RANKS];
		struct ptlrun_buf *bufs[2 * PTLRUN_MAX_RANKS];
		struct ptlrun_rank *owners[2 * PTLRUN_MAX_RANKS];
		int nfds = 1, wait_ms = -1, open_bufs = 0;
		int64_t t = now_ms(), next = -1;

		/* deadlines */
		if (!teardown && deadline_job >= 0 && t >= deadline_job && exited < ptlrun_nranks) {
			fprintf(stderr,
			        "ptlrun: timeout: the job ran longer than %g s; terminating "
			        "the job\n",
			        o.po_timeout);
			timed_out = 1;
			teardown = 1;
			teardown_at = t;
			signal_groups(SIGTERM);
		}
		if (teardown && !killed && t >= teardown_at + PTLRUN_KILL_GRACE_MS) {
			killed = 1;
			signal_groups(SIGKILL);
		}
		for (int i = 0; i < ptlrun_nranks; i++)
			for (int j = 0; j < 2; j++)
				if (ptlrun_ranks[i].rk_out[j].pb_fd >= 0)
					open_bufs++;
		if (exited == ptlrun_nranks) {
			if (all_exited_at < 0)
				all_exited_at = t;
			if (open_bufs == 0 || t >= all_exited_at + PTLRUN_DRAIN_MS ||
			    (teardown && t >= teardown_at + PTLRUN_TEARDOWN_MAX_MS))
				break;
			next = all_exited_at + PTLRUN_DRAIN_MS;
		}
		if (teardown && t >= teardown_at + PTLRUN_TEARDOWN_MAX_MS)
			break; /* unkillable (D state) ranks: give up waiting */
		if (!teardown && deadline_job >= 0)
			next = next < 0 || deadline_job < next ? deadline_job : next;
		if (teardown) {
			int64_t d = killed ? teardown_at + PTLRUN_TEARDOWN_MAX_MS
			                   : teardown_at + PTLRUN_KILL_GRACE_MS;

			next = next < 0 || d < next ? d : next;
		}
		if (next >= 0)
			wait_ms = next > t ? (int)(next - t) : 0;

		pfds[0].fd = sfd;
		pfds[0].events = POLLIN;
		for (int i = 0; i < ptlrun_nranks; i++)
			for (int j = 0; j < 2; j++) {
				struct ptlrun_buf *b = &ptlrun_ranks[i].rk_out[j];

				if (b->pb_fd < 0)
					continue;
				pfds[nfds].fd = b->pb_fd;
				pfds[nfds].events = POLLIN;
				bufs[nfds - 1] = b;
				owners[nfds - 1] = &ptlrun_ranks[i];
				nfds++;
			}
		if (poll(pfds, (nfds_t)nfds, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "ptlrun: poll: %s\n", strerror(errno));
			teardown = 1;
			teardown_at = now_ms();
			signal_groups(SIGKILL);
			break;
		}
		for (int i = 1; i < nfds; i++)
			if (pfds[i].revents)
				read_buf(owners[i - 1], bufs[i - 1]);
		if (pfds[0].revents) {
			struct signalfd_siginfo si;
			int chld = 0;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD) {
					chld = 1;
					continue;
				}
				if (got_signal) {
					/* second signal: no more patience */
					killed = 1;
					signal_groups(SIGKILL);
					continue;
				}
				got_signal = (int)si.ssi_signo;
				fprintf(stderr,
				        "ptlrun: caught signal %d (%s); forwarding it to the "
				        "ranks\n",
				        got_signal, strsignal(got_signal));
				signal_groups(got_signal);
				if (!teardown) {
					teardown = 1;
					teardown_at = now_ms();
				}
			}
			if (chld && ptlrun_nic_died() && !teardown) {
				teardown = 1;
				teardown_at = now_ms();
				nic_died = 1;
				signal_groups(SIGTERM);
			}
			if (chld) {
				struct ptlrun_rank *bad;

				exited += poll_children(&bad, teardown);
				if (bad && !teardown && exited < ptlrun_nranks) {
					char what[128];

					drain_rank(bad);
					describe_status(bad, what, sizeof(what));
					fprintf(stderr,
					        "ptlrun: rank %d (pid %d) %s; terminating the "
					        "job\n",
					        bad->rk_rank, (int)bad->rk_pid, what);
					teardown = 1;
					teardown_at = now_ms();
					signal_groups(SIGTERM);
				} else if (bad && !teardown) {
					char what[128];

					drain_rank(bad);
					describe_status(bad, what, sizeof(what));
					fprintf(stderr, "ptlrun: rank %d (pid %d) %s\n",
					        bad->rk_rank, (int)bad->rk_pid, what);
				}
			}
		}
	}

	/* leftovers in the ranks' process groups (the leaders are zombies at
	 * most, so the group ids are still ours) */
	signal_groups(SIGKILL);
	for (int i = 0; i < ptlrun_nranks; i++)
		for (int j = 0; j < 2; j++)
			close_buf(&ptlrun_ranks[i], &ptlrun_ranks[i].rk_out[j]);
	{
		struct ptlrun_rank *bad;

		exited += poll_children(&bad, 1);
	}
	if (exited == ptlrun_nranks)
		reap_all();
	else
		fprintf(stderr, "ptlrun: %d rank(s) did not exit after SIGKILL\n",
		        ptlrun_nranks - exited);
	cleanup_shm((unsigned int)getpid());
	ptlrun_nic_stop();
	ptlrun_hosts_teardown(&hosts);

	if (failed_start)
		status = PTLRUN_EXIT_EXEC;
	else if (got_signal)
		status = 128 + got_signal;
	else if (timed_out)
		status = PTLRUN_EXIT_TIMEOUT;
	else if (nic_died)
		status = PTLRUN_EXIT_EXEC;
	else
		/* the worst status, not counting ranks that our teardown killed */
		for (int i = 0; i < ptlrun_nranks; i++) {
			const struct ptlrun_rank *rk = &ptlrun_ranks[i];
			int v = !rk->rk_exited ? 1 : rk->rk_ours ? 0 : rank_exit_value(rk);

			if (v > status)
				status = v;
		}
	free(nidstr);
	free(pidstr);
	free(o.po_cpus);
	free(ptlrun_ranks);
	return status > 255 ? 255 : status;
}
