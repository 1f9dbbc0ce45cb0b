/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_nal.c - the shmem NAL alone, under a stub LIB (no matching, no
 * events): what the NAL itself costs.  Two forked processes, both polling
 * with progress(0).  Prints the 8-byte half round trip, the 8-byte message
 * rate with a window of 64 and the 4 MiB bandwidth against memcpy.
 * Not a test (not in TESTS): `make -C nal/shmem bench_shmem_nal`;
 * BENCH_PIN=1 puts each rank on its own core; --self measures the CPU cost
 * per message of one process sending to itself.  Both ranks spin: on a busy
 * 2-core machine the two-process numbers mean little.
 */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stub_lib.h"

/* ---- stub LIB (stub_lib.h) ------------------------------------------------ */

static struct p3_msg recv_msg, send_msg;

int p3_lib_parse(struct p3_lib *lib, const struct p3_hdr *hdr, void *nal_ctx)
{
	struct iovec iov = {lib->rbuf, lib->rlen};
	lib->nrecv++;
	return p3_nal_shmem_ops.recv(lib->priv, &recv_msg, nal_ctx, &iov, 1, 0, hdr->payload_len,
	                             hdr->payload_len);
}

void p3_lib_finalize(struct p3_lib *lib, struct p3_msg *msg, ptl_ni_fail_t status)
{
	if (status != PTL_NI_OK) {
		fprintf(stderr, "finalize status %u\n", status);
		exit(1);
	}
	if (msg == &send_msg)
		lib->nfinal++;
	else
		lib->nrdone++;
}

/* ---- harness -------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct p3_lib lib;
static ptl_process_id_t peer;

static void up(int rank, uint32_t jid, size_t rlen)
{
	static const ptl_nid_t nids[2] = {0, 0};
	static const ptl_pid_t pids[2] = {0, 1};
	struct p3_nal_init_args a = {.iface = PTL_IFACE_SHMEM,
	                             .requested_pid = PTL_PID_ANY,
	                             .jid = jid,
	                             .rank = rank,
	                             .nranks = 2,
	                             .nidmap = nids,
	                             .pidmap = pids};
	struct p3_nal_info info;

	lib.rlen = rlen;
	lib.rbuf = malloc(rlen);
	memset(lib.rbuf, 1, rlen);
	if (p3_nal_shmem_ops.init(&lib, &a, &info, &lib.priv) != 0) {
		fprintf(stderr, "init failed\n");
		exit(1);
	}
	lib.id = info.id;
	peer.nid = 0;
	peer.pid = (ptl_pid_t)(1 - rank);
}

static void send_to_peer(const void *buf, uint64_t len)
{
	struct p3_hdr h;
	struct iovec iov = {(void *)buf, len};
	memset(&h, 0, sizeof(h));
	h.type = P3_MSG_PUT;
	h.src = lib.id;
	h.dst = peer;
	h.rlength = len;
	h.payload_len = len;
	if (p3_nal_shmem_ops.send(lib.priv, &send_msg, &h, &iov, 1, 0, len) != 0) {
		fprintf(stderr, "send failed\n");
		exit(1);
	}
}

static void wait_recv(uint64_t n)
{
	while (lib.nrecv < n)
		p3_nal_shmem_ops.progress(lib.priv, 0);
}

static void wait_final(uint64_t n)
{
	while (lib.nfinal < n)
		p3_nal_shmem_ops.progress(lib.priv, 0);
}

#define PP_ITERS  200000
#define RATE_MSGS 2000000
#define WINDOW    64
#define BW_SIZE   (4u << 20)
#define BW_ITERS  200

static void rank_main(int rank, uint32_t jid)
{
	static uint8_t small[8];
	uint8_t *big = malloc(BW_SIZE);
	memset(big, 2, BW_SIZE);
	up(rank, jid, BW_SIZE);

	/* hello both ways so the CMA verdicts are in */
	send_to_peer(small, 8);
	wait_recv(1);
	uint64_t base = 1;

	/* ping-pong */
	double t0 = now_s();
	for (int i = 0; i < PP_ITERS; i++) {
		if (rank == 0) {
			send_to_peer(small, 8);
			wait_recv(base + (uint64_t)i + 1);
		} else {
			wait_recv(base + (uint64_t)i + 1);
			send_to_peer(small, 8);
		}
	}
	double pp = (now_s() - t0) / PP_ITERS / 2 * 1e6;
	base += PP_ITERS;

	/* message rate: windows of 64, one 0-byte ack per window */
	t0 = now_s();
	for (int w = 0; w < RATE_MSGS / WINDOW; w++) {
		if (rank == 0) {
			for (int k = 0; k < WINDOW; k++)
				send_to_peer(small, 8);
			wait_recv(base + (uint64_t)w + 1);
		} else {
			wait_recv(base + (uint64_t)(w + 1) * WINDOW);
			send_to_peer(small, 0);
		}
	}
	double rate = RATE_MSGS / (now_s() - t0) / 1e6;
	base += rank == 0 ? RATE_MSGS / WINDOW : RATE_MSGS;

	/* bandwidth: 4 MiB puts back to back, one ack at the end */
	uint64_t f0 = lib.nfinal;
	t0 = now_s();
	if (rank == 0) {
		for (int i = 0; i < BW_ITERS; i++)
			send_to_peer(big, BW_SIZE);
		wait_recv(base + 1);
		wait_final(f0 + BW_ITERS);
	} else {
		wait_recv(base + BW_ITERS);
		while (lib.nrdone < base + BW_ITERS) /* pipeline data still flowing */
			p3_nal_shmem_ops.progress(lib.priv, 0);
		send_to_peer(small, 0);
	}
	double bw = (double)BW_SIZE * BW_ITERS / (now_s() - t0) / 1e9;

	if (rank == 0) {
		t0 = now_s();
		for (int i = 0; i < BW_ITERS; i++)
			memcpy(lib.rbuf, big, BW_SIZE);
		double mc = (double)BW_SIZE * BW_ITERS / (now_s() - t0) / 1e9;
		printf("shmem NAL (stub LIB): 8 B half round trip %.3f us, 8 B rate (window %d) "
		       "%.2f M/s, 4 MiB bandwidth %.2f GB/s = %.2f x memcpy (%.2f GB/s)\n",
		       pp, WINDOW, rate, bw, bw / mc, mc);
		ptl_sr_value_t v[SHM_CTR_COUNT];
		for (int i = 0; i < SHM_CTR_COUNT; i++)
			p3_nal_shmem_ops.status(lib.priv, PTL_SR_NAL_BASE + (ptl_sr_index_t)i,
			                        &v[i]);
		printf("  rank 0: eager sent %llu, cma sent %llu, pipe sent %llu, stalls %llu, "
		       "futex waits %llu wakes %llu\n",
		       (unsigned long long)v[SHM_CTR_EAGER_MSGS_SENT],
		       (unsigned long long)v[SHM_CTR_CMA_MSGS_SENT],
		       (unsigned long long)v[SHM_CTR_PIPE_MSGS_SENT],
		       (unsigned long long)v[SHM_CTR_RING_FULL_STALLS],
		       (unsigned long long)v[SHM_CTR_FUTEX_WAITS],
		       (unsigned long long)v[SHM_CTR_FUTEX_WAKES]);
	}
	p3_nal_shmem_ops.stop(lib.priv);
	p3_nal_shmem_ops.destroy(lib.priv);
	free(big);
	free(lib.rbuf);
}

/* One process sending to itself: the CPU cost of send + poll + recv per
 * message, free of scheduling effects (a busy machine ruins ping-pongs). */
static void self_cost(uint32_t jid)
{
	static uint8_t small[8];
	up(0, jid, 1 << 16);
	peer = lib.id;
	send_to_peer(small, 8);
	wait_recv(1);
	const int n = 4000000;
	double t0 = now_s();
	for (int i = 0; i < n / WINDOW; i++) {
		for (int k = 0; k < WINDOW; k++)
			send_to_peer(small, 8);
		wait_recv(1 + (uint64_t)(i + 1) * WINDOW);
	}
	double t = now_s() - t0;
	printf("shmem NAL (stub LIB), to itself: %.1f ns per 8-byte message (send + poll + "
	       "recv), %.2f M/s on one core\n",
	       t / n * 1e9, n / t / 1e6);
	p3_nal_shmem_ops.stop(lib.priv);
	p3_nal_shmem_ops.destroy(lib.priv);
	free(lib.rbuf);
}

int main(int argc, char **argv)
{
	uint32_t jid = (uint32_t)getpid() + 200000;
	pid_t kids[2];
	int rc = 0;

	stub_lib_log_max = 1; /* the NAL's errors and warnings */

	if (argc > 1 && strcmp(argv[1], "--self") == 0) {
		self_cost(jid);
		return 0;
	}

	for (int r = 0; r < 2; r++) {
		kids[r] = fork();
		if (kids[r] == 0) {
			if (getenv("BENCH_PIN")) { /* one core each */
				cpu_set_t set;
				CPU_ZERO(&set);
				CPU_SET(r, &set);
				sched_setaffinity(0, sizeof(set), &set);
			}
			alarm(300);
			rank_main(r, jid);
			exit(0);
		}
	}
	for (int r = 0; r < 2; r++) {
		int st;
		waitpid(kids[r], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
	}
	return rc;
}
