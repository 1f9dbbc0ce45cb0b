/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lo.c - the loopback NAL: messages from a process to itself.
 *
 * This is the executable specification of the NAL contract (nal.h):
 *   send()  hands the header straight to p3_lib_parse(), with a context
 *           that holds the source iovec;
 *   recv()  (called by LIB from inside p3_lib_parse) copies the accepted
 *           bytes from the source iovec into the destination iovec, then
 *           finalizes the sender's message (its buffer is reusable) and the
 *           receiver's (the data is in place) - in that order, so SEND_END
 *           precedes the ACK the receiver's completion triggers.
 * Everything completes synchronously inside send().  progress() has nothing
 * to poll; with a timeout it blocks until wakeup() (a sticky wake-up: one
 * that arrives before the block still ends it).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nal.h"

struct lo_priv {
	struct p3_lib *lo_lib;
	ptl_process_id_t lo_id;   /* id chosen at init (when lo is the NI's NAL) */
	_Atomic uint32_t lo_wake; /* bumped by wakeup(); futex word */
	_Atomic uint32_t lo_seen; /* last lo_wake value progress() consumed */
};

/* The sender's side of one message, seen by recv(). */
struct lo_ctx {
	const struct iovec *lc_iov;
	size_t lc_niov;
	uint64_t lc_offset;
	struct p3_msg *lc_msg;
	int lc_done;
};

static int lo_init(struct p3_lib *lib, const struct p3_nal_init_args *args,
		   struct p3_nal_info *info, void **privp)
{
	struct lo_priv *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->lo_lib = lib;
	if (args->requested_pid != PTL_PID_ANY)
		p->lo_id.pid = args->requested_pid;
	else if (args->rank >= 0 && args->pidmap)
		p->lo_id.pid = args->pidmap[args->rank];
	else
		p->lo_id.pid = (ptl_pid_t)getpid();
	p->lo_id.nid = args->rank >= 0 && args->nidmap ? args->nidmap[args->rank] : 0;
	memset(info, 0, sizeof(*info));
	info->id = p->lo_id;
	info->transfer_mode = "memcpy";
	*privp = p;
	return 0;
}

/* Copy len bytes from (siov, soff) to (diov, doff). */
static void lo_copy(const struct iovec *diov, size_t dn, uint64_t doff, const struct iovec *siov,
		    size_t sn, uint64_t soff, uint64_t len)
{
	size_t di = 0, si = 0;

	while (di < dn && doff >= diov[di].iov_len)
		doff -= diov[di++].iov_len;
	while (si < sn && soff >= siov[si].iov_len)
		soff -= siov[si++].iov_len;
	while (len && di < dn && si < sn) {
		uint64_t n = len;
		if (n > diov[di].iov_len - doff)
			n = diov[di].iov_len - doff;
		if (n > siov[si].iov_len - soff)
			n = siov[si].iov_len - soff;
		memcpy((char *)diov[di].iov_base + doff, (const char *)siov[si].iov_base + soff, n);
		len -= n;
		doff += n;
		soff += n;
		if (doff == diov[di].iov_len) {
			di++;
			doff = 0;
		}
		if (soff == siov[si].iov_len) {
			si++;
			soff = 0;
		}
	}
}

static int lo_send(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr,
		   const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len)
{
	struct lo_priv *p = priv;
	ptl_process_id_t me = p3_lib_id(p->lo_lib);
	struct lo_ctx ctx = {iov, niov, offset, msg, 0};

	(void)len; /* == hdr->payload_len */
	if (hdr->dst.nid != me.nid || hdr->dst.pid != me.pid)
		return -EHOSTUNREACH; /* lo reaches this process only */
	p3_lib_parse(p->lo_lib, hdr, &ctx);
	if (!ctx.lc_done && msg) /* recv() not called: contract breach, complete anyway */
		p3_lib_finalize(p->lo_lib, msg, PTL_NI_OK);
	return 0;
}

static int lo_recv(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov,
		   size_t niov, uint64_t offset, uint64_t mlen, uint64_t rlen)
{
	struct lo_priv *p = priv;
	struct lo_ctx *ctx = nal_ctx;

	(void)rlen; /* the rest of the payload is simply not copied */
	if (msg && mlen)
		lo_copy(iov, niov, offset, ctx->lc_iov, ctx->lc_niov, ctx->lc_offset, mlen);
	ctx->lc_done = 1;
	if (ctx->lc_msg)
		p3_lib_finalize(p->lo_lib, ctx->lc_msg, PTL_NI_OK);
	if (msg)
		p3_lib_finalize(p->lo_lib, msg, PTL_NI_OK);
	return 0;
}

static int lo_progress(void *priv, int timeout_ms)
{
	struct lo_priv *p = priv;
	uint32_t w = atomic_load(&p->lo_wake);
	struct timespec ts, *tsp = NULL;

	if (timeout_ms == 0)
		return 0; /* nothing to poll; leave pending wake-ups to blockers */
	if (w != p->lo_seen) {
		p->lo_seen = w;
		return 0;
	}
	if (timeout_ms > 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		tsp = &ts;
	}
	syscall(SYS_futex, (uint32_t *)&p->lo_wake, FUTEX_WAIT_PRIVATE, w, tsp, NULL, 0);
	p->lo_seen = atomic_load(&p->lo_wake);
	return 0;
}

static void lo_wakeup(void *priv)
{
	struct lo_priv *p = priv;

	atomic_fetch_add(&p->lo_wake, 1);
	syscall(SYS_futex, (uint32_t *)&p->lo_wake, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static int lo_dist(void *priv, ptl_process_id_t id, unsigned long *distance)
{
	struct lo_priv *p = priv;
	ptl_process_id_t me = p3_lib_id(p->lo_lib);

	if (id.nid != me.nid || id.pid != me.pid)
		return -EHOSTUNREACH;
	*distance = 0;
	return 0;
}

static void lo_stop(void *priv)
{
	(void)priv; /* nothing is ever in flight */
}

static void lo_destroy(void *priv)
{
	free(priv);
}

const struct p3_nal_ops p3_nal_lo_ops = {
	.size = sizeof(struct p3_nal_ops),
	.name = "lo",
	.iface = PTL_IFACE_LO,
	.init = lo_init,
	.send = lo_send,
	.recv = lo_recv,
	.progress = lo_progress,
	.wakeup = lo_wakeup,
	.dist = lo_dist,
	.status = p3_nal_nosys_status,
	.stop = lo_stop,
	.destroy = lo_destroy,
};
