/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aclprobe - who may talk to you (issue 18 item 4): processes of another job
 * or another uid put into a target whose ACL (entry 0, the default: same uid
 * and job) does not admit them.  tests/wire/acl.sh runs it on every NAL.
 *
 * Two ranks of a runtime job (PTL_MY_RID, PTL_NIDMAP, PTL_PIDMAP, PTL_NAL);
 * the intruders run with rank 1's environment but their own PTL_MY_JID or
 * uid (setpriv), one after the other.
 *
 *   aclprobe target READY DONE DROPS   rank 0: one ME (any source, ac 0)
 *        over 16 KiB of zeros; writes READY; then waits (30 s at most) for
 *        DROPS drops (PTL_SR_DROP_COUNT) and for the file DONE, then for
 *        one admitted 4 KiB put of the member at offset 0.  Checks: exactly
 *        DROPS drops, no event but the member's, bytes 4096.. still zero.
 *   aclprobe intruder READY N           N puts of 4 KiB of 0xA5 at offset
 *        8192 (PTL_NOACK_REQ); waits for their SEND_END.  Nothing is
 *        checked on this side: refusal is silent in Portals 3.3.
 *   aclprobe member READY               rank 1 of the target's job: one 4 KiB
 *        put of 0x11 at offset 0 (the target checks it landed).
 *   aclprobe lo                         lo NAL, one process (the NI talks to
 *        itself): entry 1 admits only another job, entry 2 only another
 *        uid; puts through both are dropped, then one through entry 0 lands.
 *
 * With ACLPROBE_HOLD=FILE the target and the member, after the member's
 * put, wait for FILE (30 s at most) before they close: tests/wire/auth.sh
 * injects forged and replayed frames into the live connection meanwhile.
 *
 * Prints "aclprobe <role>: ..." lines; exit 0 = the checks passed.
 */
#include <portals3.h>
#include <p3rt/p3rt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PT         4
#define BUFLEN     16384
#define MSGLEN     4096
#define INTRUDE_AT 8192
#define WAIT_MS    30000

static const char *role = "?";

static void die(const char *what, int rc)
{
	fprintf(stderr, "aclprobe %s: FAIL: %s: %s\n", role, what, rc >= 0 ? PtlErrorStr(rc) : "");
	exit(1);
}

static void check(int rc, const char *what)
{
	if (rc != PTL_OK)
		die(what, rc);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void wait_file(const char *path)
{
	uint64_t end = now_ms() + WAIT_MS;
	while (access(path, F_OK) != 0) {
		if (now_ms() > end)
			die("no READY file from the target", -1);
		usleep(20000);
	}
}

/* ACLPROBE_HOLD: wait for its file, driving progress with `eq` (if any). */
static void hold(ptl_handle_eq_t *eq, int *extra_puts)
{
	const char *f = getenv("ACLPROBE_HOLD");
	uint64_t end = now_ms() + WAIT_MS;
	while (f && *f && access(f, F_OK) != 0 && now_ms() < end) {
		ptl_event_t ev;
		int which;
		if (eq && PtlEQPoll(eq, 1, 20, &ev, &which) == PTL_OK &&
		    ev.type == PTL_EVENT_PUT_END)
			++*extra_puts;
		if (!eq)
			usleep(20000);
	}
}

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f || fclose(f) != 0)
		die("cannot write the READY file", -1);
}

static ptl_handle_ni_t open_ni(void)
{
	int max_if;
	ptl_handle_ni_t ni;
	check(PtlInit(&max_if), "PtlInit");
	check(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1), "PtlSetRank");
	check(PtlNIInit(PTL_IFACE_AUTO, PTL_PID_ANY, NULL, NULL, &ni), "PtlNIInit");
	return ni;
}

static ptl_sr_value_t drops(ptl_handle_ni_t ni)
{
	ptl_sr_value_t d = 0;
	check(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &d), "PtlNIStatus");
	return d;
}

/* The target's ME and MD: 16 KiB of zeros, remote-managed offsets. */
static ptl_handle_eq_t expose(ptl_handle_ni_t ni, unsigned char *buf)
{
	ptl_process_id_t any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_md_t d;
	memset(buf, 0, BUFLEN);
	check(PtlEQAlloc(ni, 256, PTL_EQ_HANDLER_NONE, &eq), "PtlEQAlloc");
	check(PtlMEAttach(ni, PT, any, 0, ~0ull, PTL_RETAIN, PTL_INS_AFTER, &me), "PtlMEAttach");
	memset(&d, 0, sizeof(d));
	d.start = buf;
	d.length = BUFLEN;
	d.threshold = PTL_MD_THRESH_INF;
	d.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE;
	d.eq_handle = eq;
	check(PtlMDAttach(me, d, PTL_RETAIN, &md), "PtlMDAttach");
	return eq;
}

/* Bytes of buf[from, BUFLEN) that are not zero. */
static size_t written_beyond(const unsigned char *buf, size_t from)
{
	size_t n = 0;
	for (size_t i = from; i < BUFLEN; i++)
		n += buf[i] != 0;
	return n;
}

/* Put n messages of `fill` at `off` through ac index `ac`; wait for SEND_END
 * (and the ACK with ack != 0).  Returns the acks that came back. */
static int put_n(ptl_handle_ni_t ni, ptl_process_id_t to, ptl_ac_index_t ac, int n, int fill,
                 ptl_size_t off, int ack)
{
	static unsigned char src[MSGLEN];
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	ptl_md_t d;
	ptl_event_t ev;
	int sends = 0, acks = 0;
	memset(src, fill, sizeof(src));
	check(PtlEQAlloc(ni, 256, PTL_EQ_HANDLER_NONE, &eq), "PtlEQAlloc");
	memset(&d, 0, sizeof(d));
	d.start = src;
	d.length = MSGLEN;
	d.threshold = PTL_MD_THRESH_INF;
	d.eq_handle = eq;
	check(PtlMDBind(ni, d, PTL_RETAIN, &md), "PtlMDBind");
	for (int i = 0; i < n; i++)
		check(PtlPut(md, ack ? PTL_ACK_REQ : PTL_NOACK_REQ, to, PT, ac, 0, off, 0),
		      "PtlPut");
	uint64_t end = now_ms() + WAIT_MS;
	while ((sends < n || (ack && acks < n)) && now_ms() < end) {
		int which;
		int rc = PtlEQPoll(&eq, 1, 100, &ev, &which);
		if (rc == PTL_EQ_EMPTY)
			continue;
		check(rc, "PtlEQPoll");
		sends += ev.type == PTL_EVENT_SEND_END;
		acks += ev.type == PTL_EVENT_ACK && ev.ni_fail_type == PTL_NI_OK;
	}
	if (sends < n)
		die("SEND_END missing", -1);
	PtlMDUnlink(md);
	PtlEQFree(eq);
	return acks;
}

static int run_target(const char *ready, const char *done, long want)
{
	static unsigned char buf[BUFLEN];
	ptl_handle_ni_t ni = open_ni();
	ptl_handle_eq_t eq = expose(ni, buf);
	ptl_sr_value_t d0 = drops(ni);
	ptl_uid_t uid;
	ptl_jid_t jid;
	int puts = 0, bad = 0;
	check(PtlGetUid(ni, &uid), "PtlGetUid");
	check(PtlGetJID(ni, &jid), "PtlGetJID");
	touch(ready);
	uint64_t end = now_ms() + WAIT_MS;
	/* the intruders, then the member's one admitted put */
	while (now_ms() < end && (access(done, F_OK) != 0 || puts < 1)) {
		ptl_event_t ev;
		int which, rc = PtlEQPoll(&eq, 1, 50, &ev, &which);
		if (rc == PTL_EQ_EMPTY)
			continue;
		check(rc, "PtlEQPoll");
		if (ev.type != PTL_EVENT_PUT_END)
			continue;
		if (ev.offset == 0 && ev.mlength == MSGLEN && ev.uid == uid && ev.jid == jid)
			puts++;
		else
			bad++;
	}
	hold(&eq, &bad);
	/* linger a second: the member's put completes when our NAL acks it */
	for (uint64_t linger = now_ms() + 1000; now_ms() < linger;) {
		ptl_event_t ev;
		int which;
		if (PtlEQPoll(&eq, 1, 50, &ev, &which) == PTL_OK && ev.type == PTL_EVENT_PUT_END)
			bad++;
	}
	long got = (long)(drops(ni) - d0);
	size_t beyond = written_beyond(buf, MSGLEN);
	int member_ok = puts == 1 && buf[0] == 0x11 && buf[MSGLEN - 1] == 0x11;
	printf("aclprobe target: uid %u jid %u: drops %ld (expected %ld), bytes written by "
	       "intruders %zu, intruder events %d, member puts %d (%s)\n",
	       uid, jid, got, want, beyond, bad, puts, member_ok ? "landed" : "MISSING");
	fflush(stdout);
	PtlNIFini(ni); /* P3_RMPP_STATS prints the NAL's counters here */
	PtlFini();
	return got == want && beyond == 0 && bad == 0 && member_ok ? 0 : 1;
}

static int run_sender(const char *ready, int n, int member)
{
	wait_file(ready);
	ptl_handle_ni_t ni = open_ni();
	ptl_process_id_t target;
	ptl_uid_t uid;
	ptl_jid_t jid;
	check(PtlGetRankId(ni, 0, &target), "PtlGetRankId");
	check(PtlGetUid(ni, &uid), "PtlGetUid");
	check(PtlGetJID(ni, &jid), "PtlGetJID");
	/* no ack: the rmpp NALs hold it until the target's next message, and
	 * the target's check is what counts */
	put_n(ni, target, 0, n, member ? 0x11 : 0xA5, member ? 0 : INTRUDE_AT, 0);
	printf("aclprobe %s: uid %u jid %u: %d put(s) of %d bytes sent\n", role, uid, jid, n,
	       MSGLEN);
	fflush(stdout);
	if (member)
		hold(NULL, NULL);
	PtlNIFini(ni);
	PtlFini();
	return 0;
}

/* lo: the NI talks to itself; the entries admit another job / another uid. */
static int run_lo(void)
{
	static unsigned char buf[BUFLEN];
	ptl_handle_ni_t ni = open_ni();
	ptl_process_id_t me, any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
	ptl_uid_t uid;
	ptl_jid_t jid;
	check(PtlGetId(ni, &me), "PtlGetId");
	check(PtlGetUid(ni, &uid), "PtlGetUid");
	check(PtlGetJID(ni, &jid), "PtlGetJID");
	ptl_handle_eq_t eq = expose(ni, buf);
	check(PtlACEntry(ni, 1, any, uid, jid + 1, PTL_PT_INDEX_ANY), "PtlACEntry 1");
	check(PtlACEntry(ni, 2, any, uid + 1, jid, PTL_PT_INDEX_ANY), "PtlACEntry 2");
	ptl_sr_value_t d0 = drops(ni);
	put_n(ni, me, 1, 2, 0xA5, INTRUDE_AT, 0); /* we are of another job than entry 1's */
	put_n(ni, me, 2, 2, 0xA5, INTRUDE_AT, 0); /* ... of another uid than entry 2's */
	int acks = put_n(ni, me, 0, 1, 0x11, 0, 1);
	ptl_event_t ev;
	int which, puts = 0;
	while (PtlEQPoll(&eq, 1, 0, &ev, &which) == PTL_OK)
		puts += ev.type == PTL_EVENT_PUT_END;
	long got = (long)(drops(ni) - d0);
	size_t beyond = written_beyond(buf, MSGLEN);
	printf("aclprobe lo: uid %u jid %u: drops %ld (expected 4), bytes written by refused puts "
	       "%zu, admitted puts %d, acks %d\n",
	       uid, jid, got, beyond, puts, acks);
	return got == 4 && beyond == 0 && puts == 1 && acks == 1 && buf[0] == 0x11 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2)
		role = argv[1];
	if (argc == 5 && !strcmp(role, "target"))
		return run_target(argv[2], argv[3], atol(argv[4]));
	if (argc == 4 && !strcmp(role, "intruder"))
		return run_sender(argv[2], atoi(argv[3]), 0);
	if (argc == 3 && !strcmp(role, "member"))
		return run_sender(argv[2], 1, 1);
	if (argc == 2 && !strcmp(role, "lo"))
		return run_lo();
	fprintf(stderr,
	        "usage: aclprobe target READY DONE DROPS | intruder READY N | member READY | lo\n");
	return 2;
}
