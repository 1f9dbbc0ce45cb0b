/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * myri_peerdeath.c - a peer that dies between a request and its answer, over
 * the myrinet NAL (run by myri-peerdeath.sh: two NICs, no ptlrun).
 *
 *   myri_peerdeath target PID [--big-mib N]
 *       attaches a get MD and a put MD, says "ready" and makes no Portals
 *       call again; the script stops it (SIGSTOP), so that in any
 *       PTL_PROGRESS (the script uses interrupt: the NIC interrupts per
 *       header, no handler runs) its NIC holds what arrives and nothing is
 *       answered; it waits for its SIGKILL.
 *   myri_peerdeath bystander PID
 *       PTL_PROGRESS=offload: an MD its NIC serves gets from alone; says
 *       "ready", then waits.
 *   myri_peerdeath initiator NID PID [--pid MYPID] [--bystander BPID] [--big-mib N]
 *                  [--wait-ms MS]
 *       any PTL_PROGRESS, its own Portals pid MYPID (default: the NIC's
 *       choice): a get (4 KiB) and a put with ACK (4 KiB) to
 *       (NID, PID); once the put's SEND_END says the target's NIC has it, a
 *       put with ACK of N MiB (default 16); then "pending".  The script
 *       kills the target process or its NIC (SIGKILL).  The get's REPLY_END
 *       and the puts' ACK (for the big one, its SEND_END when it was still
 *       on the wire) must come, each with a failure kind, within MS (default
 *       20000) of "pending"; each prints "fail: WHAT EVENT KIND at WALL_MS".
 *       With --bystander, gets from BPID -- another endpoint of the target's
 *       NIC -- go on meanwhile, one at a time, until 500 ms after the last
 *       failure: each must succeed; "bystander: N gets, longest gap G ms".
 *   myri_peerdeath sender NID PID [--pid MYPID] [--big-mib N]
 *       puts of N MiB to (NID, PID)'s put MD (a target that is not
 *       stopped), one after the other, for ever; says "sending" once the
 *       first is through.  The script kills it with the target: a host that
 *       dies with a send on the wire (its NIC drains it in the background).
 * Prints "peerdeath: ok" when every check held; MYRI_PD_VERBOSE=1 prints
 * every event of the initiator's wait on stderr, and the bystander's gaps of
 * 50 ms or more are listed ("bystander gap: G ms from WALL_MS").
 */
#include "myri_util.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#define PT          4
#define BITS_GET    1
#define BITS_PUT    2
#define BITS_BY     3
#define SMALL       4096
#define BY_LEN      64
#define TAIL_MS     500 /* the bystander goes on this long after the last failure */
#define NIC_TOOK_MS 10000
#define GAP_NOTE_MS 50 /* bystander gaps this long are listed */
#define GAP_NOTES   32
/* every request lands at the remote offset it names (0): without
 * MANAGE_REMOTE the MD's offset moves on and the second one no longer fits
 * (Portals drops it: no reply, no ACK) */
#define OPS_GET (PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE)
#define OPS_PUT (PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE)

enum op { OP_GET, OP_PUT, OP_BIG, NOPS };
static char *g_bigbuf;
static const char *const op_name[NOPS] = {"get", "put", "big put"};

struct init_state {
	ptl_handle_md_t md[NOPS], by_md;
	int done[NOPS];
	int failures;
	ptl_process_id_t by;
	int by_on;
	unsigned by_gets;
	uint64_t by_last, by_gap;
	/* gaps of GAP_NOTE_MS or more: when they began (wall ms), how long */
	uint64_t gap_at[GAP_NOTES], gap_len[GAP_NOTES];
	unsigned ngaps;
};

__attribute__((format(printf, 2, 3))) static void fail(struct init_state *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "myri_peerdeath: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	s->failures++;
}

_Noreturn static void wait_forever(void)
{
	printf("ready\n");
	for (;;)
		pause();
}

static int serve(const char *role, ptl_pid_t pid, size_t big)
{
	mu_init_ni("myri_peerdeath", PTL_IFACE_MYRINET, pid, 64);
	if (strcmp(role, "bystander") == 0) {
		static char by[BY_LEN];
		memset(by, 0x42, sizeof(by));
		mu_attach(PT, BITS_BY, by, sizeof(by), PTL_MD_THRESH_INF, OPS_GET);
		wait_forever();
	}
	static char get[SMALL];
	char *put = malloc(big); /* never touched: the host never takes the data */
	if (!put)
		return 1;
	mu_attach(PT, BITS_GET, get, sizeof(get), PTL_MD_THRESH_INF, OPS_GET);
	mu_attach(PT, BITS_PUT, put, big, PTL_MD_THRESH_INF, OPS_PUT);
	wait_forever();
	return 0;
}

/* A bystander get completed at t (monotonic ms): the gap since the last. */
static void by_gap(struct init_state *s, uint64_t t)
{
	uint64_t gap = t - s->by_last;
	if (gap > s->by_gap)
		s->by_gap = gap;
	if (gap >= GAP_NOTE_MS && s->ngaps < GAP_NOTES) {
		s->gap_at[s->ngaps] = mu_wall_ms() - (mu_mono_ms() - s->by_last);
		s->gap_len[s->ngaps++] = gap;
	}
}

static void by_get(struct init_state *s)
{
	MU_CHECK(PtlGet(s->by_md, s->by, PT, 0, BITS_BY, 0));
}

/* One event of the initiator's wait. */
static void on_event(struct init_state *s, const ptl_event_t *ev)
{
	if (getenv("MYRI_PD_VERBOSE"))
		fprintf(stderr, "event %s md %u fail %s at %llu\n", PtlEventKindStr(ev->type),
		        (unsigned)ev->md_handle, PtlNIFailStr(mu_ni, ev->ni_fail_type),
		        (unsigned long long)mu_mono_ms());
	if (s->by_on && ev->md_handle == s->by_md && ev->type == PTL_EVENT_REPLY_END) {
		if (ev->ni_fail_type != PTL_NI_OK) {
			fail(s, "a get from the bystander failed (%s)",
			     PtlNIFailStr(mu_ni, ev->ni_fail_type));
			s->by_on = 0;
			return;
		}
		uint64_t t = mu_mono_ms();
		by_gap(s, t);
		s->by_last = t;
		s->by_gets++;
		by_get(s);
		return;
	}
	for (int i = 0; i < NOPS; i++) {
		if (ev->md_handle != s->md[i] || s->done[i])
			continue;
		int ends = (i == OP_GET && ev->type == PTL_EVENT_REPLY_END) ||
		           (i != OP_GET && ev->type == PTL_EVENT_ACK) ||
		           (i == OP_BIG && ev->type == PTL_EVENT_SEND_END &&
		            ev->ni_fail_type != PTL_NI_OK);
		if (!ends)
			return;
		s->done[i] = 1;
		if (ev->ni_fail_type == PTL_NI_OK)
			fail(s, "the %s was answered by a target that is gone", op_name[i]);
		else
			printf("fail: %s %s %s at %llu\n", op_name[i], PtlEventKindStr(ev->type),
			       PtlNIFailStr(mu_ni, ev->ni_fail_type),
			       (unsigned long long)mu_wall_ms());
		return;
	}
}

static int all_done(const struct init_state *s)
{
	for (int i = 0; i < NOPS; i++)
		if (!s->done[i])
			return 0;
	return 1;
}

/* The get and the small put out, and the put taken by the target's NIC. */
static void start_ops(struct init_state *s, ptl_process_id_t t)
{
	ptl_event_t ev;
	MU_CHECK(PtlGet(s->md[OP_GET], t, PT, 0, BITS_GET, 0));
	MU_CHECK(PtlPut(s->md[OP_PUT], PTL_ACK_REQ, t, PT, 0, BITS_PUT, 0, 0));
	uint64_t t0 = mu_mono_ms();
	for (;;) {
		if (mu_mono_ms() - t0 > NIC_TOOK_MS) {
			fprintf(stderr, "myri_peerdeath: the target's NIC never took the put\n");
			exit(1);
		}
		if (!mu_poll(&ev, 100))
			continue;
		if (ev.md_handle == s->md[OP_PUT] && ev.type == PTL_EVENT_SEND_END) {
			if (ev.ni_fail_type != PTL_NI_OK) {
				fprintf(stderr,
				        "myri_peerdeath: the put failed before the kill: %s\n",
				        PtlNIFailStr(mu_ni, ev.ni_fail_type));
				exit(1);
			}
			return;
		}
		if (ev.md_handle == s->md[OP_GET] && ev.type == PTL_EVENT_REPLY_END) {
			fprintf(stderr,
			        "myri_peerdeath: the get was answered (the target must not)\n");
			exit(1);
		}
	}
}

static int initiator(ptl_process_id_t t, ptl_pid_t by, size_t big, int wait_ms)
{
	struct init_state s;
	static char get[SMALL], put[SMALL], by_buf[BY_LEN];
	/* freed by main after PtlNIFini: the MD over it lives until then */
	char *bigbuf = g_bigbuf = malloc(big);
	ptl_event_t ev;
	if (!bigbuf)
		return 1;
	memset(&s, 0, sizeof(s));
	memset(bigbuf, 0x17, big);
	s.md[OP_GET] = mu_bind(get, sizeof(get));
	s.md[OP_PUT] = mu_bind(put, sizeof(put));
	s.md[OP_BIG] = mu_bind(bigbuf, big);
	s.by_md = mu_bind(by_buf, sizeof(by_buf));
	s.by.nid = t.nid;
	s.by.pid = by;
	start_ops(&s, t);
	MU_CHECK(PtlPut(s.md[OP_BIG], PTL_ACK_REQ, t, PT, 0, BITS_PUT, 0, 0));
	printf("pending\n");
	uint64_t t0 = mu_mono_ms(), end = 0;
	if (by != PTL_PID_ANY) {
		s.by_on = 1;
		s.by_last = t0;
		by_get(&s);
	}
	while (!end || (s.by_on && mu_mono_ms() < end)) {
		if (mu_mono_ms() - t0 > (uint64_t)wait_ms) {
			for (int i = 0; i < NOPS; i++)
				if (!s.done[i])
					fail(&s, "the %s never ended (a wait without end)",
					     op_name[i]);
			break;
		}
		if (mu_poll(&ev, 50))
			on_event(&s, &ev);
		if (!end && all_done(&s))
			end = mu_mono_ms() + TAIL_MS;
	}
	if (s.by_on) {
		uint64_t now = mu_mono_ms();
		by_gap(&s, now);
		printf("bystander: %u gets, longest gap %llu ms\n", s.by_gets,
		       (unsigned long long)s.by_gap);
		for (unsigned i = 0; i < s.ngaps; i++)
			printf("bystander gap: %llu ms from %llu\n",
			       (unsigned long long)s.gap_len[i], (unsigned long long)s.gap_at[i]);
		if (!s.by_gets)
			fail(&s, "the bystander served no get");
	}
	return s.failures ? 1 : 0;
}

/* Puts of big bytes to t's put MD, one after the other, for ever. */
static int sender(ptl_process_id_t t, size_t big)
{
	char *buf = malloc(big);
	ptl_event_t ev;
	if (!buf)
		return 1;
	memset(buf, 0x29, big);
	ptl_handle_md_t md = mu_bind(buf, big);
	for (unsigned n = 0;; n++) {
		MU_CHECK(PtlPut(md, PTL_NOACK_REQ, t, PT, 0, BITS_PUT, 0, 0));
		if (!mu_wait_event(PTL_EVENT_SEND_END, MU_ANY, &ev, 20000) ||
		    ev.ni_fail_type != PTL_NI_OK) {
			fprintf(stderr, "myri_peerdeath: sender: a put failed\n");
			return 1;
		}
		if (n == 0)
			printf("sending\n"); /* the next one is on the wire */
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: myri_peerdeath target|bystander PID [--big-mib N]\n"
	                "       myri_peerdeath initiator NID PID [--pid MYPID] [--bystander BPID] "
	                "[--big-mib N] [--wait-ms MS]\n"
	                "       myri_peerdeath sender NID PID [--pid MYPID] [--big-mib N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t big = (size_t)16 << 20;
	int wait_ms = 20000;
	ptl_pid_t by = PTL_PID_ANY, me = PTL_PID_ANY;
	if (argc < 3)
		usage();
	int is_sender = strcmp(argv[1], "sender") == 0;
	int init = is_sender || strcmp(argv[1], "initiator") == 0, first_opt = init ? 4 : 3;
	if (init && argc < 4)
		usage();
	for (int i = first_opt; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--pid") == 0)
			me = (ptl_pid_t)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--bystander") == 0)
			by = (ptl_pid_t)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--big-mib") == 0)
			big = (size_t)atoi(argv[i + 1]) << 20;
		else if (strcmp(argv[i], "--wait-ms") == 0)
			wait_ms = atoi(argv[i + 1]);
		else
			usage();
	}
	if (!big)
		big = 1;
	if (!init)
		return serve(argv[1], (ptl_pid_t)atoi(argv[2]), big);
	struct in_addr a;
	if (inet_pton(AF_INET, argv[2], &a) != 1)
		usage();
	ptl_process_id_t t = {.nid = ntohl(a.s_addr), .pid = (ptl_pid_t)atoi(argv[3])};
	mu_init_ni("myri_peerdeath", PTL_IFACE_MYRINET, me, 1024);
	int rc = is_sender ? sender(t, big) : initiator(t, by, big, wait_ms);
	mu_fini();
	free(g_bigbuf);
	if (rc == 0)
		printf("peerdeath: ok\n");
	return rc;
}
