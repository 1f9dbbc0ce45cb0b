/* SPDX-License-Identifier: BSD-3-Clause */
/* harness.c - job runner, barriers, assertions and event helpers shared by
 * the Check suites (see harness.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setns */
#endif
#include "harness.h"

#include <fcntl.h>
#include <sched.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const ptl_process_id_t h_any_id = {PTL_NID_ANY, PTL_PID_ANY};

/* 1 in a forked rank process: failures go to shared memory + _exit. */
static int h_in_child;
static int h_no_progress_in_sync; /* P3_TEST_SYNC_NOPROGRESS=1 (debugging) */
ptl_jid_t h_last_jid;
int h_last_leftover;
static struct h_shared *h_cur_sh;
static __thread struct h_ctx *h_cur_ctx;

static const char *const h_mode_names[H_NMODES] = {
    "lo", "shmem/app", "shmem/thread", "udp/app", "udp/thread", "ether/app", "ether/thread"};

const char *h_mode_name(int mode)
{
	return (mode >= 0 && mode < H_NMODES) ? h_mode_names[mode] : "?";
}

const char *h_rcstr(int rc)
{
	if (rc < 0 || rc >= PTL_MAX_ERRNO)
		return "(not a Portals return code)";
	const char *s = PtlErrorStr((unsigned)rc);
	return s ? s : "(null)";
}

const char *h_evstr(int kind)
{
	if (kind < 0 || kind >= PTL_EVENT_KIND_MAX)
		return "(not an event kind)";
	const char *s = PtlEventKindStr((ptl_event_kind_t)kind);
	return s ? s : "(null)";
}

void h_fail(const char *file, int line, const char *fmt, ...)
{
	char msg[1536];
	char full[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (h_cur_ctx)
		snprintf(full, sizeof(full), "[%s rank %d/%d] %s:%d: %s",
		         h_mode_name(h_cur_ctx->mode), h_cur_ctx->rank, h_cur_ctx->nranks, file,
		         line, msg);
	else
		snprintf(full, sizeof(full), "%s:%d: %s", file, line, msg);
	fprintf(stderr, "FAIL %s\n", full);
	fflush(stderr);
	if (h_cur_sh) {
		int expected = 0;
		if (atomic_compare_exchange_strong(&h_cur_sh->failed, &expected, 1))
			snprintf(h_cur_sh->msg, sizeof(h_cur_sh->msg), "%s", full);
	}
	if (h_in_child)
		_exit(1);
	ck_abort_msg("%s", full);
	abort(); /* not reached: Check exits the forked test */
}

uint64_t h_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- barrier and value exchange ------------------------------------------- */

void h_sync(struct h_ctx *c)
{
	struct h_shared *sh = c->sh;
	unsigned gen = atomic_load(&sh->bar_gen);
	uint64_t deadline = h_now_ms() + 60000;

	if (atomic_fetch_add(&sh->bar_count, 1) == (unsigned)c->nranks - 1) {
		atomic_store(&sh->bar_count, 0);
		atomic_fetch_add(&sh->bar_gen, 1);
		return;
	}
	while (atomic_load(&sh->bar_gen) == gen) {
		if (atomic_load(&sh->failed))
			h_fail(__FILE__, __LINE__, "another rank failed while this one waited");
		if (h_now_ms() > deadline)
			h_fail(__FILE__, __LINE__, "barrier timed out after 60 s");
		if (!h_no_progress_in_sync)
			(void)PtlProgress(c->ni, 0);
		usleep(c->nranks > 2 ? 200 : 20);
	}
}

void h_pub(struct h_ctx *c, int i, uint64_t v)
{
	c->sh->val[c->rank][i] = v;
}

uint64_t h_val(struct h_ctx *c, int rank, int i)
{
	return c->sh->val[rank][i];
}

/* ---- job runner ------------------------------------------------------------ */

static struct h_shared *h_shared_new(void)
{
	void *p = mmap(NULL, sizeof(struct h_shared) + H_SCRATCH, PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		ck_abort_msg("mmap of the shared area failed: %s", strerror(errno));
	memset(p, 0, sizeof(struct h_shared));
	return p;
}

struct h_thread_arg {
	struct h_ctx ctx;
	h_rank_fn fn;
};

static void *h_rank_thread(void *arg)
{
	struct h_thread_arg *a = arg;
	h_cur_ctx = &a->ctx;
	h_sync(&a->ctx);
	a->fn(&a->ctx);
	h_sync(&a->ctx);
	h_cur_ctx = NULL;
	return NULL;
}

struct h_pair_fns {
	h_rank_fn target, initiator;
};
static struct h_pair_fns h_pair_cur;

static void h_pair_dispatch(struct h_ctx *c)
{
	if (c->rank == 0)
		h_pair_cur.target(c);
	else
		h_pair_cur.initiator(c);
}

static void h_run_lo(int nranks, h_rank_fn fn, struct h_shared *sh)
{
	struct h_thread_arg args[H_MAX_RANKS];
	pthread_t th[H_MAX_RANKS];
	ptl_handle_ni_t ni;
	ptl_process_id_t me;
	ptl_uid_t uid;
	ptl_jid_t jid;

	ni = h_open(PTL_IFACE_LO, NULL, NULL);
	H_OK(PtlGetId(ni, &me));
	H_OK(PtlGetUid(ni, &uid));
	H_OK(PtlGetJid(ni, &jid));
	for (int r = 0; r < nranks; r++) {
		struct h_ctx *c = &args[r].ctx;
		memset(c, 0, sizeof(*c));
		c->mode = H_MODE_LO;
		c->rank = r;
		c->nranks = nranks;
		c->ni = ni;
		c->me = me;
		for (int k = 0; k < nranks; k++)
			c->id[k] = me;
		c->uid = uid;
		c->jid = jid;
		c->sh = sh;
		args[r].fn = fn;
	}
	for (int r = 1; r < nranks; r++)
		if (pthread_create(&th[r], NULL, h_rank_thread, &args[r]) != 0)
			ck_abort_msg("pthread_create failed");
	h_rank_thread(&args[0]);
	for (int r = 1; r < nranks; r++)
		pthread_join(th[r], NULL);
	h_close(ni);
}

/* PTL_PROGRESS of a mode: P3_TEST_THREAD_PROGRESS=interrupt runs the thread
 * modes in the myrinet NAL's interrupt mode (tests/myri-conformance.sh). */
/* P3_TEST_UDP_NAL=myrinet runs the udp modes over the myrinet NAL instead
 * (same address plan; a NIC, mcpd, must be running: tests/myri-conformance.sh). */
static int h_udp_is_myrinet(void)
{
	const char *s = getenv("P3_TEST_UDP_NAL");
	return s && strcmp(s, "myrinet") == 0;
}

/* P3_TEST_ETHER_NAL=xdp: the ether modes run over the xdp NAL (the same
 * frames through rmpp's AF_XDP link; tests/wire/xdp-conformance.sh). */
static int h_ether_is_xdp(void)
{
	const char *s = getenv("P3_TEST_ETHER_NAL");
	return s && strcmp(s, "xdp") == 0;
}

/* P3_TEST_ETHER_NAL=myrinet: the ether modes run over the myrinet NAL, the
 * NICs (one mcpd --link ether per namespace host) owning the raw-Ethernet
 * wire (tests/myri-conformance.sh, its ether passes). */
static int h_ether_is_myrinet(void)
{
	const char *s = getenv("P3_TEST_ETHER_NAL");
	return s && strcmp(s, "myrinet") == 0;
}

static int h_mode_is_ether(int mode)
{
	return mode == H_MODE_ETHER_APP || mode == H_MODE_ETHER_THREAD;
}

ptl_interface_t h_mode_iface(int mode)
{
	if (h_mode_is_ether(mode) && h_ether_is_myrinet())
		return PTL_IFACE_MYRINET;
	if ((mode == H_MODE_ETHER_APP || mode == H_MODE_ETHER_THREAD) && h_ether_is_xdp())
		return PTL_IFACE_XDP;
	if ((mode == H_MODE_UDP_APP || mode == H_MODE_UDP_THREAD) && h_udp_is_myrinet())
		return PTL_IFACE_MYRINET;
	switch (mode) {
	case H_MODE_LO: return PTL_IFACE_LO;
	case H_MODE_UDP_APP:
	case H_MODE_UDP_THREAD: return PTL_IFACE_UDP;
	case H_MODE_ETHER_APP:
	case H_MODE_ETHER_THREAD: return PTL_IFACE_ETHER;
	default: return PTL_IFACE_SHMEM;
	}
}

const char *h_mode_nal(int mode)
{
	if (h_mode_is_ether(mode) && h_ether_is_myrinet())
		return "myrinet";
	if ((mode == H_MODE_ETHER_APP || mode == H_MODE_ETHER_THREAD) && h_ether_is_xdp())
		return "xdp";
	if ((mode == H_MODE_UDP_APP || mode == H_MODE_UDP_THREAD) && h_udp_is_myrinet())
		return "myrinet";
	switch (mode) {
	case H_MODE_LO: return "lo";
	case H_MODE_UDP_APP:
	case H_MODE_UDP_THREAD: return "udp";
	case H_MODE_ETHER_APP:
	case H_MODE_ETHER_THREAD: return "ether";
	default: return "shmem";
	}
}

int h_mode_thread(int mode)
{
	return mode == H_MODE_SHMEM_THREAD || mode == H_MODE_UDP_THREAD ||
	       mode == H_MODE_ETHER_THREAD;
}

/* PTL_PROGRESS of a mode.  P3_TEST_MYRI_PROGRESS=offload (with
 * P3_TEST_UDP_NAL=myrinet, or P3_TEST_ETHER_NAL=myrinet for the ether modes)
 * runs the udp (ether) modes with the LIB side in the NIC
 * (tests/myri-conformance.sh). */
const char *h_mode_progress(int mode)
{
	/* P3_TEST_MYRI_PROGRESS (e.g. offload) replaces the progress of both
	 * udp modes when they run over myrinet; P3_TEST_THREAD_PROGRESS (e.g.
	 * interrupt) replaces "thread" in every thread mode. */
	const char *myri = getenv("P3_TEST_MYRI_PROGRESS");
	const char *thr = getenv("P3_TEST_THREAD_PROGRESS");
	int over_myri =
	    ((mode == H_MODE_UDP_APP || mode == H_MODE_UDP_THREAD) && h_udp_is_myrinet()) ||
	    (h_mode_is_ether(mode) && h_ether_is_myrinet());
	if (over_myri && myri && *myri)
		return myri;
	if (!h_mode_thread(mode))
		return "app";
	return thr && *thr ? thr : "thread";
}

/* pid = base + rank, UDP port = P3_RMPP_BASE_PORT (21000) + pid, and
 * nal/rmpp accepts pid <= 65535 - base port = 44535.  Every Check test runs
 * in its own forked process, so deriving the base from that process' pid
 * keeps concurrently running test binaries apart (8 pids per process). */
/* P3_TEST_PID_SLOTS=N (default 5000) narrows the pid range to 1000 +
 * [0, N) * H_MAX_RANKS: myri-conformance.sh keeps its NIC's ports
 * (base + pid) in a band other jobs of a shared machine do not crowd. */
/* Another process may hold one of those ports (another job's endpoint, or
 * any socket the kernel gave that port as an ephemeral one: check_acl once
 * failed so), and the NAL binds without SO_REUSEADDR: the base is the
 * first slot, from the pid's on, whose ports are all free on 127.0.0.1 now;
 * one taken between this probe and the rank's bind fails PtlNIInit with
 * PTL_PID_INVALID, and the job runs again on the next free slot
 * (h_run_job, at most H_PORT_TRIES times). */
#define H_PID_PROBES 64 /* slots probed for free ports */
#define H_PORT_TRIES 4  /* runs of a job whose port was taken meanwhile */
static unsigned h_pid_base_v;
static unsigned h_pid_slot_v; /* the slot of h_pid_base_v */

static unsigned h_pid_slots(void)
{
	const char *s = getenv("P3_TEST_PID_SLOTS");
	return s && atoi(s) > 0 && atoi(s) <= 5000 ? (unsigned)atoi(s) : 5000u;
}

/* Are the UDP ports of pids base .. base + H_MAX_RANKS - 1 free on
 * 127.0.0.1?  (1 also when no socket can be made to tell: the NAL will.) */
static int h_udp_ports_free(unsigned base)
{
	const char *e = getenv("P3_RMPP_BASE_PORT");
	unsigned long port0 = e && *e ? strtoul(e, NULL, 0) : 21000ul;

	for (unsigned r = 0; r < H_MAX_RANKS; r++) {
		unsigned long port = port0 + base + r;
		struct sockaddr_in a = {.sin_family = AF_INET};
		int fd, ok;

		if (port > 65535)
			return 0;
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return 1;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons((uint16_t)port);
		ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
		if (!ok)
			return 0;
	}
	return 1;
}

/* The first slot from `from` on (cyclically) whose ports are all free; if
 * none of H_PID_PROBES is, `from` (the NAL then names the busy port). */
static void h_pid_base_pick(unsigned from)
{
	unsigned slots = h_pid_slots();

	for (unsigned i = 0; i < slots && i < H_PID_PROBES; i++) {
		unsigned slot = (from + i) % slots;
		if (h_udp_ports_free(1000u + slot * H_MAX_RANKS)) {
			h_pid_slot_v = slot;
			h_pid_base_v = 1000u + slot * H_MAX_RANKS;
			return;
		}
	}
	h_pid_slot_v = from % slots;
	h_pid_base_v = 1000u + h_pid_slot_v * H_MAX_RANKS;
}

unsigned h_pid_base(void)
{
	if (!h_pid_base_v)
		h_pid_base_pick((unsigned)getpid() % h_pid_slots());
	return h_pid_base_v;
}

/* A port of this base was taken after the probe: the next free slot. */
static void h_pid_base_next(void)
{
	(void)h_pid_base();
	h_pid_base_pick(h_pid_slot_v + 1);
}

/* Does this mode bind UDP ports of the pid map (PTL_PID_INVALID from
 * PtlNIInit then means "another process holds the port")? */
static int h_mode_binds_udp(int mode)
{
	return mode == H_MODE_UDP_APP || mode == H_MODE_UDP_THREAD;
}

/* The namespace of a rank over ether: rank % (entries of P3_TEST_NETNS);
 * its nid is 10.77.0.(ns + 1) (tools/p3-netns host ns). */
static int h_ether_ns(int rank)
{
	const char *list = getenv("P3_TEST_NETNS");
	int n = 1;

	if (!list || !*list)
		return 0;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	return rank % n;
}

static void h_enter_netns(int rank)
{
	const char *list = getenv("P3_TEST_NETNS");
	char names[256], path[512];
	char *save = NULL, *tok;
	int want = h_ether_ns(rank), i = 0, fd;

	if (!list || !*list)
		h_fail(__FILE__, __LINE__, "ether modes need P3_TEST_NETNS=ns0,ns1");
	snprintf(names, sizeof(names), "%s", list);
	for (tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save), i++)
		if (i == want)
			break;
	if (!tok)
		h_fail(__FILE__, __LINE__, "P3_TEST_NETNS=%s has no namespace %d", list, want);
	snprintf(path, sizeof(path), "/run/netns/%s", tok);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		h_fail(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
	if (setns(fd, CLONE_NEWNET) != 0)
		h_fail(__FILE__, __LINE__, "setns %s: %s", path, strerror(errno));
	close(fd);
}

void h_set_env_mode(int mode, int rank, int nranks, ptl_jid_t jid)
{
	char buf[512];
	size_t n = 0;
	int ether = mode == H_MODE_ETHER_APP || mode == H_MODE_ETHER_THREAD;
	unsigned base = h_pid_base();

	if (mode == H_MODE_SHMEM_APP || mode == H_MODE_SHMEM_THREAD || mode == H_MODE_LO) {
		h_set_env(rank, nranks, jid, h_mode_progress(mode));
		return;
	}
	h_set_env(rank, nranks, jid, h_mode_progress(mode));
	setenv("PTL_NAL", h_mode_nal(mode), 1);
	for (int r = 0; r < nranks; r++) {
		if (ether)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s10.77.0.%d",
			                      r ? ":" : "", h_ether_ns(r) + 1);
		else
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s127.0.0.1",
			                      r ? ":" : "");
	}
	setenv("PTL_NIDMAP", buf, 1);
	n = 0;
	for (int r = 0; r < nranks; r++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%u", r ? ":" : "", base + r);
	setenv("PTL_PIDMAP", buf, 1);
	if (ether) {
		if (!getenv("P3_RMPP_IFNAME"))
			setenv("P3_RMPP_IFNAME", "eth0", 1);
		h_enter_netns(rank);
	}
}

void h_set_env(int rank, int nranks, ptl_jid_t jid, const char *progress)
{
	char buf[256];
	size_t n = 0;

	setenv("PTL_NAL", "shmem", 1);
	snprintf(buf, sizeof(buf), "%d", rank);
	setenv("PTL_MY_RID", buf, 1);
	buf[0] = 0;
	for (int r = 0; r < nranks; r++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s0", r ? ":" : "");
	setenv("PTL_NIDMAP", buf, 1);
	n = 0;
	for (int r = 0; r < nranks; r++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d", r ? ":" : "", r);
	setenv("PTL_PIDMAP", buf, 1);
	snprintf(buf, sizeof(buf), "%u", (unsigned)jid);
	setenv("PTL_MY_JID", buf, 1);
	if (progress)
		setenv("PTL_PROGRESS", progress, 1);
}

static void h_rank_child(int mode, int rank, int nranks, ptl_jid_t jid, h_rank_fn fn,
                         struct h_shared *sh)
{
	struct h_ctx ctx;
	struct h_ctx *c = &ctx;
	int max_if, rc;
	unsigned r, n;

	h_in_child = 1;
	memset(c, 0, sizeof(*c));
	c->mode = mode;
	c->rank = rank;
	c->nranks = nranks;
	c->sh = sh;
	h_cur_ctx = c;
	h_set_env_mode(mode, rank, nranks, jid);
	h_no_progress_in_sync = h_mode_thread(mode) && getenv("P3_TEST_SYNC_NOPROGRESS");
	H_OK(PtlInit(&max_if));
	H_OK(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
	rc = PtlNIInit(h_mode_iface(mode), PTL_PID_ANY, NULL, NULL, &c->ni);
	if (rc == PTL_PID_INVALID && h_mode_binds_udp(mode)) {
		/* the port was free when h_pid_base() probed it: h_run_job
		 * runs the job again on other ports */
		snprintf(sh->msg, sizeof(sh->msg),
		         "PtlNIInit: the udp port of pid %u (rank %d) is held by another process",
		         h_pid_base() + (unsigned)rank, rank);
		atomic_store(&sh->port_busy, 1);
		_exit(1);
	}
	H_RC(rc, PTL_OK);
	H_OK(PtlGetRank(c->ni, &r, &n));
	H_EQ(r, rank);
	H_EQ(n, nranks);
	H_OK(PtlGetId(c->ni, &c->me));
	H_OK(PtlGetUid(c->ni, &c->uid));
	H_OK(PtlGetJid(c->ni, &c->jid));
	for (int k = 0; k < nranks; k++)
		H_OK(PtlGetRankId(c->ni, (unsigned)k, &c->id[k]));
	H_EQ(c->id[rank].nid, c->me.nid);
	H_EQ(c->id[rank].pid, c->me.pid);
	h_sync(c);
	fn(c);
	h_sync(c);
	h_leak_check(c->ni);
	H_OK(PtlNIFini(c->ni));
	PtlFini();
	_exit(0);
}

/* Returns 1 (nothing asserted) when the job failed only because a rank's udp
 * port was taken and may run again (may_retry); fails the test otherwise. */
static int h_run_procs(int mode, int nranks, h_rank_fn fn, int timeout_s, struct h_shared *sh,
                       int may_retry)
{
	pid_t pids[H_MAX_RANKS];
	int status[H_MAX_RANKS];
	int alive = nranks, bad = -1;
	ptl_jid_t jid = h_new_jid();
	uint64_t deadline = h_now_ms() + (uint64_t)timeout_s * 1000u;
	char why[256] = "";

	h_cur_sh = sh;
	(void)h_pid_base(); /* fixed before the fork: every rank sees the same map */
	fflush(stdout);
	fflush(stderr);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			ck_abort_msg("fork failed: %s", strerror(errno));
		if (pids[r] == 0)
			h_rank_child(mode, r, nranks, jid, fn, sh);
		status[r] = -1;
	}
	while (alive > 0) {
		int progressed = 0;
		for (int r = 0; r < nranks; r++) {
			int st;
			if (status[r] != -1)
				continue;
			pid_t p = waitpid(pids[r], &st, WNOHANG);
			if (p == pids[r]) {
				status[r] = st;
				alive--;
				progressed = 1;
				if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && bad < 0) {
					bad = r;
					if (WIFSIGNALED(st))
						snprintf(why, sizeof(why),
						         "rank %d killed by signal %d", r,
						         WTERMSIG(st));
					else
						snprintf(why, sizeof(why), "rank %d exited with %d",
						         r, WEXITSTATUS(st));
				}
			}
		}
		if (bad >= 0 || h_now_ms() > deadline) {
			if (bad < 0)
				snprintf(why, sizeof(why), "job timed out after %d s", timeout_s);
			for (int r = 0; r < nranks; r++)
				if (status[r] == -1) {
					kill(pids[r], SIGKILL);
					waitpid(pids[r], &status[r], 0);
				}
			break;
		}
		if (!progressed)
			usleep(2000);
	}
	h_last_jid = jid;
	h_last_leftover = h_shm_count(jid);
	h_shm_cleanup(jid);
	if (why[0] && may_retry && atomic_load(&sh->port_busy))
		return 1;
	if (why[0])
		ck_abort_msg("%s over %s, %d ranks: %s", why, h_mode_name(mode), nranks,
		             sh->msg[0] ? sh->msg : "(no assertion message; see stderr)");
	return 0;
}

void h_run_job(int mode, int nranks, h_rank_fn fn, int timeout_s)
{
	ck_assert_int_le(nranks, H_MAX_RANKS);
	for (int run = 1;; run++) {
		struct h_shared *sh = h_shared_new();
		int port_busy = 0;

		if (mode == H_MODE_LO) {
			h_cur_sh = sh;
			h_run_lo(nranks, fn, sh);
		} else {
			port_busy =
			    h_run_procs(mode, nranks, fn, timeout_s, sh, run < H_PORT_TRIES);
		}
		if (port_busy)
			fprintf(stderr, "harness: %s; running the job again on other ports\n",
			        sh->msg);
		munmap(sh, sizeof(struct h_shared) + H_SCRATCH);
		h_cur_sh = NULL;
		if (!port_busy)
			return;
		h_pid_base_next();
	}
}

void h_run_pair(int mode, h_rank_fn target, h_rank_fn initiator)
{
	h_pair_cur.target = target;
	h_pair_cur.initiator = initiator;
	h_run_job(mode, 2, h_pair_dispatch, 60);
}

/* P3_TEST_ONLY=name runs only the tests whose name contains `name`;
 * P3_TEST_MODES=lo,app,thread,udp,udpthread,ether,etherthread (a comma list)
 * chooses the transports; default: all but the ether ones, which need the
 * namespaces of P3_TEST_NETNS (tests/wire/ether-conformance.sh). */
#define H_DEFAULT_MODES "lo,app,thread,udp,udpthread"
static int h_selected(const TTest *tt, int m)
{
	const char *only = getenv("P3_TEST_ONLY");
	const char *modes = getenv("P3_TEST_MODES");
	static const char *const short_names[H_NMODES] = {
	    "lo", "app", "thread", "udp", "udpthread", "ether", "etherthread"};
	char list[256], *save = NULL, *tok;

	if (only && *only && !strstr(tt->name, only))
		return 0;
	if (!modes || !*modes)
		modes = H_DEFAULT_MODES;
	snprintf(list, sizeof(list), "%s", modes);
	for (tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
		if (strcmp(tok, short_names[m]) == 0)
			return 1;
	return 0;
}

void h_add(TCase *tc, const TTest *tt, unsigned exclude, const char *why)
{
	for (int m = 0; m < H_NMODES; m++) {
		if (!h_selected(tt, m))
			continue;
		if (exclude & (1u << m)) {
			printf("note: %s not run over %s: %s\n", tt->name, h_mode_name(m),
			       why ? why : "excluded");
			continue;
		}
		_tcase_add_test(tc, tt, 0, 0, m, m + 1);
	}
}

int h_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}

/* ---- single-process helpers -------------------------------------------------- */

ptl_handle_ni_t h_open(ptl_interface_t iface, ptl_ni_limits_t *desired, ptl_ni_limits_t *actual)
{
	int max_if;
	ptl_handle_ni_t ni;

	H_OK(PtlInit(&max_if));
	H_OK(PtlNIInit(iface, PTL_PID_ANY, desired, actual, &ni));
	return ni;
}

static ptl_jid_t h_single_jid;

ptl_handle_ni_t h_open_mode(int mode, ptl_ni_limits_t *desired, ptl_ni_limits_t *actual)
{
	int max_if;
	ptl_handle_ni_t ni;

	if (mode == H_MODE_LO)
		return h_open(PTL_IFACE_LO, desired, actual);
	h_single_jid = h_new_jid();
	for (int run = 1;; run++) {
		int rc;

		h_set_env_mode(mode, 0, 1, h_single_jid);
		H_OK(PtlInit(&max_if));
		H_OK(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
		rc = PtlNIInit(h_mode_iface(mode), PTL_PID_ANY, desired, actual, &ni);
		if (rc == PTL_PID_INVALID && h_mode_binds_udp(mode) && run < H_PORT_TRIES) {
			/* the port was free when h_pid_base() probed it */
			fprintf(stderr,
			        "harness: PtlNIInit: the udp port of pid %u is held by another "
			        "process; opening the NI again on other ports\n",
			        h_pid_base());
			PtlFini();
			h_pid_base_next();
			continue;
		}
		H_RC(rc, PTL_OK);
		return ni;
	}
}

void h_close(ptl_handle_ni_t ni)
{
	h_leak_check(ni);
	H_OK(PtlNIFini(ni));
	PtlFini();
	if (h_single_jid)
		h_shm_cleanup(h_single_jid);
}

void h_ctx_single(struct h_ctx *c, ptl_handle_ni_t ni)
{
	memset(c, 0, sizeof(*c));
	c->mode = H_MODE_LO;
	c->nranks = 1;
	c->ni = ni;
	c->sh = h_shared_new();
	H_OK(PtlGetId(ni, &c->me));
	c->id[0] = c->me;
	H_OK(PtlGetUid(ni, &c->uid));
	H_OK(PtlGetJid(ni, &c->jid));
}

/* ---- objects ------------------------------------------------------------------ */

ptl_md_t h_md(void *start, ptl_size_t length, int threshold, unsigned options, ptl_handle_eq_t eq)
{
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	md.start = start;
	md.length = length;
	md.threshold = threshold;
	md.max_size = 0;
	md.options = options;
	md.user_ptr = NULL;
	md.eq_handle = eq;
	return md;
}

ptl_handle_eq_t h_eq(struct h_ctx *c, ptl_size_t count)
{
	ptl_handle_eq_t eq;
	H_OK(PtlEQAlloc(c->ni, count, PTL_EQ_HANDLER_NONE, &eq));
	return eq;
}

ptl_handle_me_t h_me_md(struct h_ctx *c, ptl_pt_index_t pt, ptl_process_id_t src,
                        ptl_match_bits_t bits, ptl_match_bits_t ignore, ptl_unlink_t me_unlink,
                        ptl_md_t md, ptl_unlink_t md_unlink, ptl_handle_md_t *mdh)
{
	ptl_handle_me_t me;
	ptl_handle_md_t h;
	H_OK(PtlMEAttach(c->ni, pt, src, bits, ignore, me_unlink, PTL_INS_AFTER, &me));
	H_OK(PtlMDAttach(me, md, md_unlink, &h));
	if (mdh)
		*mdh = h;
	return me;
}

ptl_handle_md_t h_bind(struct h_ctx *c, ptl_md_t md, ptl_unlink_t unlink)
{
	ptl_handle_md_t h;
	H_OK(PtlMDBind(c->ni, md, unlink, &h));
	return h;
}

ptl_sr_value_t h_sr_ni(ptl_handle_ni_t ni, ptl_sr_index_t reg)
{
	ptl_sr_value_t v = 0;
	H_OK(PtlNIStatus(ni, reg, &v));
	return v;
}

ptl_sr_value_t h_sr(struct h_ctx *c, ptl_sr_index_t reg)
{
	return h_sr_ni(c->ni, reg);
}

void h_wait_sr_(const char *f, int l, struct h_ctx *c, ptl_sr_index_t reg, ptl_sr_value_t value)
{
	uint64_t deadline = h_now_ms() + H_EV_TIMEOUT_MS;
	ptl_sr_value_t v = 0;
	for (;;) {
		int rc = PtlNIStatus(c->ni, reg, &v);
		if (rc != PTL_OK)
			h_fail(f, l, "PtlNIStatus(%u) returned %d (%s)", reg, rc, h_rcstr(rc));
		if (v >= value)
			return;
		if (h_now_ms() > deadline)
			h_fail(f, l, "status register %u stayed at %llu, expected >= %llu", reg,
			       (unsigned long long)v, (unsigned long long)value);
		(void)PtlProgress(c->ni, 1);
	}
}

/* A line of NI counters for timeout messages: what the NI did so far. */
static const char *h_diag(ptl_handle_eq_t eq)
{
	static __thread char buf[256];
	ptl_handle_ni_t ni;
	ptl_sr_value_t v[PTL_SR_LAST_STD];
	const char *nal = "?", *prog = "?";

	if (PtlNIHandle(eq, &ni) != PTL_OK)
		return "(NI unknown)";
	for (int i = 0; i < PTL_SR_LAST_STD; i++)
		if (PtlNIStatus(ni, (ptl_sr_index_t)i, &v[i]) != PTL_OK)
			v[i] = 0;
	(void)PtlNIDescribe(ni, &nal, &prog);
	snprintf(
	    buf, sizeof(buf),
	    "[NI %s/%s: drops %llu, recv %llu (%llu B), sent %llu (%llu B), in flight %llu, "
	    "acks dropped %llu, EQ overwrites %llu]",
	    nal, prog, (unsigned long long)v[PTL_SR_DROP_COUNT],
	    (unsigned long long)v[PTL_SR_RECV_COUNT], (unsigned long long)v[PTL_SR_RECV_LENGTH],
	    (unsigned long long)v[PTL_SR_SEND_COUNT], (unsigned long long)v[PTL_SR_SEND_LENGTH],
	    (unsigned long long)v[PTL_SR_MSGS_INFLIGHT], (unsigned long long)v[PTL_SR_ACK_DROPPED],
	    (unsigned long long)v[PTL_SR_EQ_DROPPED]);
	return buf;
}

int h_next_(const char *f, int l, ptl_handle_eq_t eq, ptl_event_t *ev)
{
	int which = -1;
	int rc = PtlEQPoll(&eq, 1, H_EV_TIMEOUT_MS, ev, &which);
	if (rc == PTL_EQ_EMPTY)
		h_fail(f, l, "no event within %d ms %s", H_EV_TIMEOUT_MS, h_diag(eq));
	if (rc != PTL_OK && rc != PTL_EQ_DROPPED)
		h_fail(f, l, "PtlEQPoll returned %d (%s)", rc, h_rcstr(rc));
	if (which != 0)
		h_fail(f, l, "PtlEQPoll set which=%d for a single EQ", which);
	return rc;
}

void h_expect_(const char *f, int l, ptl_handle_eq_t eq, int kind, ptl_event_t *ev)
{
	ptl_event_t tmp;
	int which = -1;
	if (!ev)
		ev = &tmp;
	int rc = PtlEQPoll(&eq, 1, H_EV_TIMEOUT_MS, ev, &which);
	if (rc == PTL_EQ_EMPTY)
		h_fail(f, l, "no event within %d ms, expected %s %s", H_EV_TIMEOUT_MS,
		       h_evstr(kind), h_diag(eq));
	if (rc != PTL_OK)
		h_fail(f, l, "PtlEQPoll returned %d (%s) waiting for %s", rc, h_rcstr(rc),
		       h_evstr(kind));
	if ((int)ev->type != kind)
		h_fail(f, l, "got event %s (mlength %llu, ni_fail %u), expected %s",
		       h_evstr((int)ev->type), (unsigned long long)ev->mlength,
		       (unsigned)ev->ni_fail_type, h_evstr(kind));
}

void h_expect_none_(const char *f, int l, ptl_handle_eq_t eq, unsigned ms)
{
	ptl_event_t ev;
	int which = -1;
	int rc = PtlEQPoll(&eq, 1, ms, &ev, &which);
	if (rc != PTL_EQ_EMPTY)
		h_fail(f, l, "expected no event, PtlEQPoll returned %d (%s) with event %s", rc,
		       h_rcstr(rc),
		       rc == PTL_OK || rc == PTL_EQ_DROPPED ? h_evstr((int)ev.type) : "-");
}

void h_collect_(const char *f, int l, ptl_handle_eq_t eq, int n, int *counts)
{
	memset(counts, 0, sizeof(int) * PTL_EVENT_KIND_MAX);
	for (int i = 0; i < n; i++) {
		ptl_event_t ev;
		int which = -1;
		int rc = PtlEQPoll(&eq, 1, H_EV_TIMEOUT_MS, &ev, &which);
		if (rc != PTL_OK)
			h_fail(f, l, "event %d of %d: PtlEQPoll returned %d (%s) %s", i + 1, n, rc,
			       h_rcstr(rc), h_diag(eq));
		if ((int)ev.type < 0 || ev.type >= PTL_EVENT_KIND_MAX)
			h_fail(f, l, "event %d of %d has bad kind %d", i + 1, n, (int)ev.type);
		counts[ev.type]++;
	}
}

void h_idle(struct h_ctx *c, unsigned ms)
{
	uint64_t end = h_now_ms() + ms;
	while (h_now_ms() < end)
		(void)PtlProgress(c->ni, 1);
}

void h_leak_check_(const char *f, int l, ptl_handle_ni_t ni)
{
	static const struct {
		ptl_sr_index_t reg;
		const char *name;
	} regs[] = {{PTL_SR_MES_ALLOCATED, "MEs"},
	            {PTL_SR_MDS_ALLOCATED, "MDs"},
	            {PTL_SR_EQS_ALLOCATED, "EQs"}};
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		ptl_sr_value_t v = 0;
		int rc = PtlNIStatus(ni, regs[i].reg, &v);
		if (rc != PTL_OK)
			h_fail(f, l, "PtlNIStatus(%s allocated) returned %d (%s)", regs[i].name, rc,
			       h_rcstr(rc));
		if (v != 0)
			h_fail(f, l, "leak: %llu %s still allocated at the end of the test",
			       (unsigned long long)v, regs[i].name);
	}
}

/* ---- data patterns -------------------------------------------------------------- */

unsigned char h_pat(uint32_t seed, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0xC2B2AE3D27D4EB4Full);
	x ^= x >> 29;
	return (unsigned char)(x ^ (x >> 8));
}

void h_fill(void *buf, size_t len, uint32_t seed, uint64_t off0)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = h_pat(seed, off0 + i);
}

size_t h_check_pat(const void *buf, size_t len, uint32_t seed, uint64_t off0)
{
	const unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		if (p[i] != h_pat(seed, off0 + i))
			return i;
	return (size_t)-1;
}

/* ---- jobs and /dev/shm --------------------------------------------------------------- */

ptl_jid_t h_new_jid(void)
{
	static unsigned counter;
	return (ptl_jid_t)(((unsigned)getpid() & 0x3FFFFFu) << 6 | (counter++ & 0x3Fu)) + 1000u;
}

int h_shm_count(ptl_jid_t jid)
{
	char pfx[64];
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	snprintf(pfx, sizeof(pfx), "p3shm-%u-%u-", (unsigned)getuid(), (unsigned)jid);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, pfx, strlen(pfx)) == 0)
			n++;
	closedir(d);
	return n;
}

void h_shm_cleanup(ptl_jid_t jid)
{
	char pfx[64];
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	if (!d)
		return;
	/* nal/shmem names its segments p3shm-<uid>-<jid>-<pid> */
	snprintf(pfx, sizeof(pfx), "p3shm-%u-%u-", (unsigned)getuid(), (unsigned)jid);
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, pfx, strlen(pfx)) != 0)
			continue;
		char path[512];
		snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
		unlink(path);
	}
	closedir(d);
}

/* ---- initiator helpers ----------------------------------------------------------------- */

ptl_size_t h_put_(const char *f, int l, struct h_ctx *c, ptl_process_id_t tgt, ptl_pt_index_t pt,
                  ptl_match_bits_t bits, ptl_size_t roff, const void *buf, ptl_size_t len,
                  ptl_ack_req_t ack, ptl_hdr_data_t hdr)
{
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	int rc, want = ack == PTL_ACK_REQ ? 3 : 2;
	int seen[PTL_EVENT_KIND_MAX] = {0};
	ptl_size_t acked = 0;

	rc = PtlEQAlloc(c->ni, 8, PTL_EQ_HANDLER_NONE, &eq);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlEQAlloc: %s", h_rcstr(rc));
	rc = PtlMDBind(c->ni, h_md((void *)buf, len, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN, &md);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlMDBind: %s", h_rcstr(rc));
	rc = PtlPut(md, ack, tgt, pt, 0, bits, roff, hdr);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlPut: %d (%s)", rc, h_rcstr(rc));
	for (int i = 0; i < want; i++) {
		ptl_event_t ev;
		int which;
		rc = PtlEQPoll(&eq, 1, H_EV_TIMEOUT_MS, &ev, &which);
		if (rc != PTL_OK)
			h_fail(f, l, "put: event %d of %d: PtlEQPoll %d (%s) %s", i + 1, want, rc,
			       h_rcstr(rc), h_diag(eq));
		if ((int)ev.type != PTL_EVENT_SEND_START && ev.type != PTL_EVENT_SEND_END &&
		    ev.type != PTL_EVENT_ACK)
			h_fail(f, l, "put: unexpected event %s", h_evstr((int)ev.type));
		if (seen[ev.type]++)
			h_fail(f, l, "put: event %s twice", h_evstr((int)ev.type));
		if (ev.type == PTL_EVENT_ACK)
			acked = ev.mlength;
		if (ev.ni_fail_type != PTL_NI_OK)
			h_fail(f, l, "put: %s with ni_fail_type %u", h_evstr((int)ev.type),
			       ev.ni_fail_type);
	}
	rc = PtlMDUnlink(md);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlMDUnlink after put: %s", h_rcstr(rc));
	rc = PtlEQFree(eq);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlEQFree: %s", h_rcstr(rc));
	return acked;
}

ptl_size_t h_getdata_(const char *f, int l, struct h_ctx *c, ptl_process_id_t tgt,
                      ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_size_t roff, void *buf,
                      ptl_size_t len)
{
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	ptl_event_t ev;
	int rc, which;
	ptl_size_t got;

	rc = PtlEQAlloc(c->ni, 8, PTL_EQ_HANDLER_NONE, &eq);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlEQAlloc: %s", h_rcstr(rc));
	rc = PtlMDBind(c->ni, h_md(buf, len, PTL_MD_THRESH_INF, 0, eq), PTL_RETAIN, &md);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlMDBind: %s", h_rcstr(rc));
	rc = PtlGet(md, tgt, pt, 0, bits, roff);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlGet: %d (%s)", rc, h_rcstr(rc));
	rc = PtlEQPoll(&eq, 1, H_EV_TIMEOUT_MS, &ev, &which);
	if (rc != PTL_OK || ev.type != PTL_EVENT_REPLY_START)
		h_fail(f, l, "get: PtlEQPoll %s, event %s, expected REPLY_START %s", h_rcstr(rc),
		       rc == PTL_OK ? h_evstr((int)ev.type) : "-", h_diag(eq));
	rc = PtlEQPoll(&eq, 1, H_EV_TIMEOUT_MS, &ev, &which);
	if (rc != PTL_OK || ev.type != PTL_EVENT_REPLY_END)
		h_fail(f, l, "get: PtlEQPoll %s, event %s, expected REPLY_END %s", h_rcstr(rc),
		       rc == PTL_OK ? h_evstr((int)ev.type) : "-", h_diag(eq));
	if (ev.ni_fail_type != PTL_NI_OK)
		h_fail(f, l, "get: REPLY_END with ni_fail_type %u", ev.ni_fail_type);
	got = ev.mlength;
	rc = PtlMDUnlink(md);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlMDUnlink after get: %s", h_rcstr(rc));
	rc = PtlEQFree(eq);
	if (rc != PTL_OK)
		h_fail(f, l, "PtlEQFree: %s", h_rcstr(rc));
	return got;
}
