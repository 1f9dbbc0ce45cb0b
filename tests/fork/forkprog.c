/* SPDX-License-Identifier: BSD-3-Clause */
/* forkprog.c - one rank of a two-rank job (ptlrun -n 2) that forks, or
 * calls system(), in the middle of a transfer (fork.sh runs it).
 *
 *   forkprog fork     both ranks fork while puts are in flight; each child
 *                     starts Portals afresh (PtlInit, PtlSetRank,
 *                     PtlSetNIDMap, PtlSetPIDMap with other pids, PtlNIInit)
 *                     and exchanges data with the other rank's child; the
 *                     parents finish their own exchange meanwhile.
 *   forkprog system   both ranks call system("sleep 1") mid-transfer.
 *
 * Every exchange is a ping-pong of puts at sizes that take every data path
 * (eager, single copy, pipelined); each received byte is checked against a
 * pattern naming the generation (parent or child), sender, round and offset.
 * Exit 0 only when the parent's and the child's data were all right.
 *
 * The send of the fork round ends in an EQ handler that holds the thread
 * posting it for 200 ms: in PTL_PROGRESS=thread that is the progress
 * thread, in the middle of the NAL's completion (rmpp: between the
 * SEND_END upcall and the free of its send descriptor), so the fork lands
 * there every time unless the library pauses the thread first
 * (portals/fork.c).  Under ASan a child forked there saw that descriptor
 * only on a stack that is nobody's in the child: LeakSanitizer reported it
 * at the child's exit, the child exited 23, the job failed. */
#include <portals3.h>
#include <p3rt/p3rt.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PT            4
#define MAXSZ         (1u << 20)
#define ROUNDS        24
#define FORK_ROUND    6 /* fork/system() after this many rounds (puts in flight) */
#define CHILD_PID_OFS 2000 /* + 2 * (job id % 1000): see child_pid_ofs */

struct job {
	const char *who; /* "parent" / "child", for messages */
	int gen;         /* 0 parent, 1 child: part of the data pattern */
	unsigned rank;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_process_id_t peer;
	unsigned char *rx, *tx;
	ptl_handle_md_t txmd;
	ptl_handle_eq_t syncq;   /* the ready handshake's events */
	ptl_handle_md_t syncmd;  /* target of ready puts */
	ptl_handle_md_t syncsrc; /* their source (no EQ: syncq sees only PUT_ENDs) */
	uint64_t syncbuf;
	int sends_ended;           /* SEND_END events not yet consumed */
	int puts_ended;            /* PUT_END events not yet consumed */
	ptl_size_t put_mlength[4]; /* their mlengths, oldest first */
};

static const size_t sizes[] = {8, 4000, 16384, 70000, MAXSZ};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* set before the fork round's send; its SEND_END's handler then sleeps */
static atomic_int slow_send_end;

static void fork_round_handler(ptl_event_t *ev)
{
	if (ev->type == PTL_EVENT_SEND_END && atomic_exchange(&slow_send_end, 0))
		usleep(200000);
}

static unsigned char pattern(int gen, unsigned src, int round, size_t off)
{
	return (unsigned char)(gen * 131 + src * 37 + (unsigned)round * 11 + off * 7 + (off >> 9));
}

static void die(struct job *j, const char *what, int rc)
{
	fprintf(stderr, "forkprog: rank %u %s: %s failed: %s\n", j->rank, j->who, what,
	        PtlErrorStr(rc));
	_exit(3);
}

/* Events of both kinds arrive in any order (a single-copy put ends only
 * after the peer pulled it, maybe after the peer's answer): count them. */
static void wait_kind(struct job *j, ptl_event_kind_t kind)
{
	int *have = kind == PTL_EVENT_SEND_END ? &j->sends_ended : &j->puts_ended;
	while (*have == 0) {
		ptl_event_t ev;
		int rc = PtlEQWait(j->eq, &ev);
		if (rc != PTL_OK)
			die(j, "PtlEQWait", rc);
		if (ev.ni_fail_type != PTL_NI_OK)
			die(j, "event", PTL_FAIL);
		if (ev.type == PTL_EVENT_SEND_END)
			j->sends_ended++;
		if (ev.type == PTL_EVENT_PUT_END && j->puts_ended < 4)
			j->put_mlength[j->puts_ended++] = ev.mlength;
	}
	(*have)--;
}

/* A put to a process that has not attached its ME yet is dropped: before
 * the data, each side puts "ready" every 10 ms until it got the other's,
 * then once more (the other may have come up after our last one). */
static void ready_handshake(struct job *j)
{
	for (int tries = 0;; tries++) {
		ptl_event_t ev;
		int which, rc;

		if (tries == 3000)
			die(j, "ready handshake (30 s)", PTL_FAIL);
		rc = PtlPut(j->syncsrc, PTL_NOACK_REQ, j->peer, PT, 0, 0x5EEE, 0, 0);
		if (rc != PTL_OK)
			die(j, "PtlPut", rc);
		rc = PtlEQPoll(&j->syncq, 1, 10, &ev, &which);
		while (rc == PTL_OK || rc == PTL_EQ_DROPPED) {
			if (ev.type == PTL_EVENT_PUT_END) {
				if ((rc = PtlPut(j->syncsrc, PTL_NOACK_REQ, j->peer, PT, 0, 0x5EEE,
				                 0, 0)) != PTL_OK)
					die(j, "PtlPut", rc);
				return;
			}
			rc = PtlEQPoll(&j->syncq, 1, 0, &ev, &which);
		}
		if (rc != PTL_EQ_EMPTY)
			die(j, "PtlEQPoll", rc);
	}
}

static void setup(struct job *j)
{
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_md_t d;
	int rc;

	if ((rc = PtlGetRankId(j->ni, 1 - j->rank, &j->peer)) != PTL_OK)
		die(j, "PtlGetRankId", rc);
	j->rx = malloc(MAXSZ);
	j->tx = malloc(MAXSZ);
	if (!j->rx || !j->tx)
		die(j, "malloc", PTL_NO_SPACE);
	if ((rc = PtlEQAlloc(j->ni, 256, fork_round_handler, &j->eq)) != PTL_OK)
		die(j, "PtlEQAlloc", rc);
	if ((rc = PtlMEAttach(j->ni, PT, j->peer, 0x5EED, 0, PTL_RETAIN, PTL_INS_AFTER, &me)) !=
	    PTL_OK)
		die(j, "PtlMEAttach", rc);
	memset(&d, 0, sizeof(d));
	d.start = j->rx;
	d.length = MAXSZ;
	d.threshold = PTL_MD_THRESH_INF;
	d.options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE;
	d.eq_handle = j->eq;
	if ((rc = PtlMDAttach(me, d, PTL_RETAIN, &md)) != PTL_OK)
		die(j, "PtlMDAttach", rc);
	d.start = j->tx;
	if ((rc = PtlMDBind(j->ni, d, PTL_RETAIN, &j->txmd)) != PTL_OK)
		die(j, "PtlMDBind", rc);
	if ((rc = PtlEQAlloc(j->ni, 64, PTL_EQ_HANDLER_NONE, &j->syncq)) != PTL_OK)
		die(j, "PtlEQAlloc", rc);
	if ((rc = PtlMEAttach(j->ni, PT, j->peer, 0x5EEE, 0, PTL_RETAIN, PTL_INS_AFTER, &me)) !=
	    PTL_OK)
		die(j, "PtlMEAttach", rc);
	d.start = &j->syncbuf;
	d.length = sizeof(j->syncbuf);
	d.eq_handle = j->syncq;
	if ((rc = PtlMDAttach(me, d, PTL_RETAIN, &j->syncmd)) != PTL_OK)
		die(j, "PtlMDAttach", rc);
	d.eq_handle = PTL_EQ_NONE;
	if ((rc = PtlMDBind(j->ni, d, PTL_RETAIN, &j->syncsrc)) != PTL_OK)
		die(j, "PtlMDBind", rc);
	ready_handshake(j);
}

static void send_round(struct job *j, int round, size_t sz)
{
	int rc;
	for (size_t o = 0; o < sz; o++)
		j->tx[o] = pattern(j->gen, j->rank, round, o);
	rc = PtlPutRegion(j->txmd, 0, sz, PTL_NOACK_REQ, j->peer, PT, 0, 0x5EED, 0, 0);
	if (rc != PTL_OK)
		die(j, "PtlPutRegion", rc);
	wait_kind(j, PTL_EVENT_SEND_END);
}

static int recv_round(struct job *j, int round, size_t sz)
{
	ptl_size_t mlength;

	wait_kind(j, PTL_EVENT_PUT_END);
	mlength = j->put_mlength[0];
	memmove(j->put_mlength, j->put_mlength + 1,
	        sizeof(j->put_mlength) - sizeof(j->put_mlength[0]));
	if (mlength != sz) {
		fprintf(stderr, "forkprog: rank %u %s: round %d: %llu bytes, expected %zu\n",
		        j->rank, j->who, round, (unsigned long long)mlength, sz);
		return 1;
	}
	for (size_t o = 0; o < sz; o++)
		if (j->rx[o] != pattern(j->gen, 1 - j->rank, round, o)) {
			fprintf(stderr, "forkprog: rank %u %s: round %d: byte %zu wrong\n", j->rank,
			        j->who, round, o);
			return 1;
		}
	return 0;
}

/* Rank 0 puts first and rank 1 answers, so one put of each round is in
 * flight (or half copied) whenever a rank returns from send_round(). */
static int exchange(struct job *j, int from, int to, int (*midway)(struct job *, int))
{
	int bad = 0;
	for (int r = from; r < to; r++) {
		size_t sz = sizes[(unsigned)r % NSIZES];
		if (midway && r == FORK_ROUND)
			atomic_store(&slow_send_end, 1);
		if (j->rank == 0) {
			send_round(j, r, sz);
			if (midway && midway(j, r))
				bad = 1;
			bad |= recv_round(j, r, sz);
		} else {
			bad |= recv_round(j, r, sz);
			send_round(j, r, sz);
			if (midway && midway(j, r))
				bad = 1;
		}
	}
	return bad;
}

static ptl_nid_t nids[2];
static ptl_pid_t pids[2];
/* The children's pids are the parents' plus this.  It depends on the job id
 * (ptlrun's pid, the same in both ranks) so that two of these jobs running
 * at once on one host (udp: port 21000 + pid) do not take the same ports. */
static ptl_pid_t child_pid_ofs = CHILD_PID_OFS;

/* The child: Portals afresh, with the parent's nids and other pids. */
static int child_main(unsigned rank)
{
	struct job c = {.who = "child", .gen = 1, .rank = rank};
	ptl_pid_t cpids[2] = {pids[0] + child_pid_ofs, pids[1] + child_pid_ofs};
	int nif, rc, bad;

	if ((rc = PtlInit(&nif)) != PTL_OK)
		die(&c, "PtlInit", rc);
	if ((rc = PtlSetRank(PTL_INVALID_HANDLE, rank, 2)) != PTL_OK)
		die(&c, "PtlSetRank", rc);
	if ((rc = PtlSetNIDMap(PTL_INVALID_HANDLE, nids, 2)) != PTL_OK)
		die(&c, "PtlSetNIDMap", rc);
	if ((rc = PtlSetPIDMap(PTL_INVALID_HANDLE, cpids, 2)) != PTL_OK)
		die(&c, "PtlSetPIDMap", rc);
	if ((rc = PtlNIInit(PTL_IFACE_DEFAULT, cpids[rank], NULL, NULL, &c.ni)) != PTL_OK)
		die(&c, "PtlNIInit", rc);
	setup(&c);
	bad = exchange(&c, 0, ROUNDS, NULL);
	if ((rc = PtlNIFini(c.ni)) != PTL_OK)
		die(&c, "PtlNIFini", rc);
	PtlFini();
	free(c.rx);
	free(c.tx);
	printf("forkprog: rank %u child: %d rounds %s\n", rank, ROUNDS, bad ? "BAD" : "verified");
	fflush(stdout);
	return bad;
}

static pid_t child;
static int use_system;

static int at_midway(struct job *j, int round)
{
	if (round != FORK_ROUND)
		return 0;
	if (use_system) {
		int st = system("sleep 1");
		if (st != 0) {
			fprintf(stderr, "forkprog: rank %u: system() returned %d\n", j->rank, st);
			return 1;
		}
		return 0;
	}
	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror("forkprog: fork");
		return 1;
	}
	if (child == 0)
		exit(child_main(j->rank)); /* exit(): atexit and sanitizers run in the child */
	return 0;
}

int main(int argc, char **argv)
{
	struct job p = {.who = "parent", .gen = 0};
	unsigned size;
	ptl_jid_t jid;
	int nif, rc, bad, st;

	use_system = argc > 1 && strcmp(argv[1], "system") == 0;
	if ((rc = PtlInit(&nif)) != PTL_OK)
		die(&p, "PtlInit", rc);
	if ((rc = PtlSetRank(PTL_INVALID_HANDLE, -1, -1)) != PTL_OK)
		die(&p, "PtlSetRank", rc);
	if ((rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &p.ni)) != PTL_OK)
		die(&p, "PtlNIInit", rc);
	if ((rc = PtlGetRank(p.ni, &p.rank, &size)) != PTL_OK || size != 2)
		die(&p, "PtlGetRank (2 ranks)", rc == PTL_OK ? PTL_FAIL : rc);
	if ((rc = PtlGetNIDMap(p.ni, nids, 2)) != PTL_OK ||
	    (rc = PtlGetPIDMap(p.ni, pids, 2)) != PTL_OK)
		die(&p, "PtlGetNIDMap/PIDMap", rc);
	if ((rc = PtlGetJid(p.ni, &jid)) != PTL_OK)
		die(&p, "PtlGetJid", rc);
	child_pid_ofs = CHILD_PID_OFS + 2 * (ptl_pid_t)(jid % 1000);
	setup(&p);
	bad = exchange(&p, 0, ROUNDS, at_midway);
	if (child > 0) {
		if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "forkprog: rank %u: child failed (status 0x%x)\n", p.rank,
			        st);
			bad = 1;
		}
	}
	if ((rc = PtlNIFini(p.ni)) != PTL_OK)
		die(&p, "PtlNIFini", rc);
	PtlFini();
	free(p.rx);
	free(p.tx);
	printf("forkprog: rank %u parent: %d rounds %s (%s)\n", p.rank, ROUNDS,
	       bad ? "BAD" : "verified", use_system ? "system" : "fork");
	return bad;
}
