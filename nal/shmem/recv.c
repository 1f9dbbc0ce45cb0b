/* SPDX-License-Identifier: BSD-3-Clause */
/* recv.c - shmem NAL data path, receiving side: one record from an inbound
 * ring, the recv() method LIB calls from p3_lib_parse(), and pipeline
 * reassembly. */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "shmem.h"

#define SHM_RX_MAX_IOV 1024

/* ---- iovec helpers ---------------------------------------------------- */

void shm_iov_copy_in(const struct iovec *iov, size_t niov, uint64_t offset, const void *src,
                     uint64_t len)
{
	const uint8_t *s = src;

	if (len == 0) /* zero-length MDs may have a NULL start */
		return;
	if (niov == 1 && offset + len <= iov[0].iov_len) {
		memcpy((uint8_t *)iov[0].iov_base + offset, s, len);
		return;
	}
	for (size_t i = 0; i < niov && len > 0; i++) {
		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		uint64_t n = iov[i].iov_len - offset;
		if (n > len)
			n = len;
		memcpy((uint8_t *)iov[i].iov_base + offset, s, n);
		s += n;
		len -= n;
		offset = 0;
	}
}

void shm_iov_copy_out(void *dst, const struct iovec *iov, size_t niov, uint64_t offset,
                      uint64_t len)
{
	uint8_t *d = dst;

	if (len == 0)
		return;
	if (niov == 1 && offset + len <= iov[0].iov_len) {
		memcpy(d, (const uint8_t *)iov[0].iov_base + offset, len);
		return;
	}
	for (size_t i = 0; i < niov && len > 0; i++) {
		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		uint64_t n = iov[i].iov_len - offset;
		if (n > len)
			n = len;
		memcpy(d, (const uint8_t *)iov[i].iov_base + offset, n);
		d += n;
		len -= n;
		offset = 0;
	}
}

/* ---- recv() ------------------------------------------------------------ *
 * Receive counters are written with the progress lock held only. */

/* What recv() needs to know about the record being parsed. */
struct shm_rx_ctx {
	struct shm_ni *rc_ni;
	struct shm_rx *rc_rx;
	enum shm_rec_kind rc_kind;
	const uint8_t *rc_payload; /* EAGER: in the ring */
	uint64_t rc_len;           /* payload_len of the header */
	uint64_t rc_seq;           /* CMA / PIPE */
	const struct shm_cma_iov *rc_riov;
	size_t rc_rniov;
	int rc_called;
};

static ptl_ni_fail_t shm_cma_status(int err)
{
	switch (err) {
	case 0:
		return PTL_NI_OK;
	case -ESRCH:
		return PTL_NI_PEER_DEAD;
	default:
		return PTL_NI_FAIL;
	}
}

/* The destination as one piece of memory, or NULL. */
static uint8_t *shm_iov_contig(const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len)
{
	for (size_t i = 0; i < niov; i++) {
		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		return iov[i].iov_len - offset >= len ? (uint8_t *)iov[i].iov_base + offset : NULL;
	}
	return NULL;
}

#define SHM_COOP_CHUNK_MIN (128u * 1024u)
#define SHM_COOP_SPLIT     16u
#define SHM_COOP_WAIT_NS   (30ull * 1000000000ull) /* a claimed chunk, at most */

/* Copy chunk c of a cooperative pull ourselves. */
static int shm_coop_pull_chunk(struct shm_rx *rx, const struct shm_rx_ctx *ctx,
                               const struct iovec *iov, size_t niov, uint64_t offset,
                               uint64_t mlen, uint64_t chunk, uint32_t c)
{
	uint64_t off = (uint64_t)c * chunk;
	uint64_t n = mlen - off < chunk ? mlen - off : chunk;
	return shm_cma_copy(rx->rx_ospid, 0, iov, niov, offset + off, ctx->rc_riov, ctx->rc_rniov,
	                    off, n);
}

/*
 * A large single-copy message with the sender's help (shmem.h, "Cooperative
 * copy"): open a slot, send COOP, pull chunks from the front, then wait for
 * the chunks the sender claimed (copying any it gave back).  The wait is
 * for a copy in progress in a live process; a sender that dies ends it with
 * -ESRCH.  Nothing of the sender's can write into the buffer after return:
 * every chunk is DONE, or was never claimed by it.
 */
static int shm_coop_pull(struct shm_ni *ni, struct shm_rx *rx, const struct shm_rx_ctx *ctx,
                         const struct iovec *iov, size_t niov, uint64_t offset, uint64_t mlen,
                         uint8_t *dest)
{
	uint32_t slot = 0;
	while (slot < SHM_COOP_SLOTS && (ni->ni_coop_busy & (1u << slot)))
		slot++;
	if (slot == SHM_COOP_SLOTS)
		return shm_cma_read(rx->rx_ospid, iov, niov, offset, ctx->rc_riov, ctx->rc_rniov,
		                    mlen);
	/* 16 chunks (the imbalance at the end is at most one), not below
	 * 128 KiB (a system call and two atomics per chunk) */
	uint64_t chunk = (mlen + SHM_COOP_SPLIT - 1) / SHM_COOP_SPLIT;
	if (chunk < SHM_COOP_CHUNK_MIN)
		chunk = SHM_COOP_CHUNK_MIN;
	chunk = (chunk + 4095) & ~(uint64_t)4095;
	uint32_t nchunks = (uint32_t)((mlen + chunk - 1) / chunk);
	uint32_t gen = ni->ni_coop_gen[slot] = (ni->ni_coop_gen[slot] + 1) & 0x3fffffffu;
	_Atomic uint32_t *word = shm_coop_words(ni->ni_hdr, slot);
	/* every word, not only nchunks of them: a stale COOP with more chunks
	 * must find no word of its old generation still FREE */
	for (uint32_t c = 0; c < SHM_COOP_CHUNKS; c++)
		atomic_store_explicit(&word[c], gen << 2 | SHM_COOP_FREE, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	ni->ni_coop_busy |= 1u << slot;
	struct shm_coop cp = {.cp_seq = ctx->rc_seq,
	                      .cp_dest = (uint64_t)(uintptr_t)dest,
	                      .cp_len = mlen,
	                      .cp_chunk = chunk,
	                      .cp_slot = slot,
	                      .cp_gen = gen,
	                      .cp_nchunks = nchunks};
	shm_send_coop(ni, rx->rx_peer, &cp); /* if it fails, we copy everything */

	int err = 0;
	uint32_t c = 0;
	for (; c < nchunks && !err; c++) {
		if (!shm_coop_claim(&word[c], gen))
			break; /* the sender has the rest */
		err = shm_coop_pull_chunk(rx, ctx, iov, niov, offset, mlen, chunk, c);
		shm_coop_settle(&word[c], gen, SHM_COOP_DONE);
	}
	/* the sender's chunks: wait, or take back the ones it returned */
	uint64_t spins = 0, since = 0;
	for (; c < nchunks; c++) {
		since = 0;
		for (;;) {
			uint32_t v = atomic_load_explicit(&word[c], memory_order_acquire);
			if ((v & 3) == SHM_COOP_DONE)
				break;
			if ((v & 3) == SHM_COOP_FREE && shm_coop_claim(&word[c], gen)) {
				/* handed back by the sender: ours now */
				if (!err)
					err = shm_coop_pull_chunk(rx, ctx, iov, niov, offset, mlen,
					                          chunk, c);
				shm_coop_settle(&word[c], gen, SHM_COOP_DONE);
				break;
			}
			if ((++spins & 1023) == 0) {
				if (kill((pid_t)rx->rx_ospid, 0) < 0 && errno == ESRCH) {
					err = -ESRCH; /* its copy died with it */
					goto out;
				}
				uint64_t now = shm_now_ns();
				if (!since) {
					since = now;
				} else if (now - since > SHM_COOP_WAIT_NS) {
					/* no copy of one chunk takes this long: a peer that
					 * holds a claim and does nothing is not trusted again */
					p3_lib_log(ni->ni_lib, 0,
					           "shmem: os pid %u held a cooperative-copy chunk for "
					           "%llu s: message failed, no longer reading from it",
					           rx->rx_ospid,
					           (unsigned long long)(SHM_COOP_WAIT_NS / 1000000000u));
					rx->rx_broken = 1;
					err = -ETIMEDOUT;
					goto out;
				}
				sched_yield();
			}
		}
	}
out:
	ni->ni_coop_busy &= ~(1u << slot);
	shm_ctr_inc(&ni->ni_ctr[SHM_CTR_COOP_MSGS_RECV], 1);
	return err;
}

/* Pull a single-copy message: alone, or with the sender's help. */
static int shm_cma_pull(struct shm_ni *ni, struct shm_rx *rx, const struct shm_rx_ctx *ctx,
                        const struct iovec *iov, size_t niov, uint64_t offset, uint64_t mlen)
{
	uint8_t *dest;
	if (ni->ni_cf.cf_coop_min && mlen >= ni->ni_cf.cf_coop_min && rx->rx_coop && rx->rx_peer &&
	    (dest = shm_iov_contig(iov, niov, offset, mlen)) != NULL)
		return shm_coop_pull(ni, rx, ctx, iov, niov, offset, mlen, dest);
	return shm_cma_read(rx->rx_ospid, iov, niov, offset, ctx->rc_riov, ctx->rc_rniov, mlen);
}

int shm_recv(void *priv, struct p3_msg *msg, void *nal_ctx, const struct iovec *iov, size_t niov,
             uint64_t offset, uint64_t mlen, uint64_t rlen)
{
	struct shm_ni *ni = priv;
	struct shm_rx_ctx *ctx = nal_ctx;
	struct shm_rx *rx = ctx->rc_rx;

	(void)rlen; /* the record knows how many bytes follow */
	if (ctx->rc_called++)
		return -EALREADY;
	if (!msg)
		mlen = 0;
	if (mlen > ctx->rc_len)
		mlen = ctx->rc_len;
	if (mlen && !iov)
		return -EINVAL;

	switch (ctx->rc_kind) {
	case SHM_REC_EAGER:
		if (mlen)
			shm_iov_copy_in(iov, niov, offset, ctx->rc_payload, mlen);
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_EAGER_MSGS_RECV], 1);
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_EAGER_BYTES_RECV], mlen);
		if (msg)
			p3_lib_finalize(ni->ni_lib, msg, PTL_NI_OK);
		return 0;

	case SHM_REC_CMA_RTS: {
		int err = 0;
		if (mlen)
			err = shm_cma_pull(ni, rx, ctx, iov, niov, offset, mlen);
		if (err) {
			p3_lib_log(ni->ni_lib, 1, "shmem: single copy from os pid %u failed: %s",
			           rx->rx_ospid, strerror(-err));
			if (err == -EPERM)
				/* ptrace policy changed under us: stop offering CMA */
				atomic_store(&rx->rx_ring.rg_ctl->rc_cma, SHM_CMA_NO);
		}
		ptl_ni_fail_t st = shm_cma_status(err);
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_CMA_MSGS_RECV], 1);
		if (!err)
			shm_ctr_inc(&ni->ni_ctr[SHM_CTR_CMA_BYTES_RECV], mlen);
		if (msg)
			p3_lib_finalize(ni->ni_lib, msg, st);
		if (rx->rx_peer)
			shm_send_done(ni, rx->rx_peer, ctx->rc_seq, st, err ? 0 : mlen);
		return 0;
	}

	case SHM_REC_PIPE_RTS: {
		struct shm_pipe_rx *px = &rx->rx_pipe;
		px->px_active = 1;
		px->px_msg = msg;
		px->px_seq = ctx->rc_seq;
		px->px_rlen = ctx->rc_len;
		px->px_mlen = mlen;
		px->px_got = 0;
		px->px_offset = offset;
		px->px_niov = 0;
		if (mlen) {
			struct iovec *copy = realloc(px->px_iov, niov * sizeof(*iov));
			if (!copy) {
				/* cannot remember where to put it: deliver nothing */
				px->px_mlen = 0;
				px->px_msg = NULL;
				if (msg)
					p3_lib_finalize(ni->ni_lib, msg, PTL_NI_FAIL);
				return -ENOMEM;
			}
			memcpy(copy, iov, niov * sizeof(*iov));
			px->px_iov = copy;
			px->px_niov = niov;
		}
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_PIPE_MSGS_RECV], 1);
		return 0;
	}

	default:
		return -EINVAL;
	}
}

void shm_rx_fail_pipe(struct shm_ni *ni, struct shm_rx *rx, ptl_ni_fail_t status)
{
	struct shm_pipe_rx *px = &rx->rx_pipe;
	struct p3_msg *msg = px->px_msg;

	if (!px->px_active)
		return;
	px->px_active = 0;
	px->px_msg = NULL;
	if (msg)
		p3_lib_finalize(ni->ni_lib, msg, status);
}

/* ---- one inbound record --------------------------------------------------- */

static int shm_rx_hello(struct shm_ni *ni, uint32_t idx, struct shm_rx *rx,
                        const struct shm_rec *rec, uint32_t len)
{
	struct shm_hello he;

	if (len < sizeof(he))
		return -EPROTO;
	memcpy(&he, rec, sizeof(he));
	struct shm_claim *cl = shm_seg_claim(&ni->ni_seg, idx);
	if (!cl || cl->cl_nid != he.he_nid || cl->cl_pid != he.he_pid || he.he_ospid == 0)
		return -EPROTO;

	ptl_process_id_t id = {he.he_nid, he.he_pid};
	if (rx->rx_hello &&
	    (rx->rx_ospid != he.he_ospid || rx->rx_incarnation != he.he_incarnation)) {
		/* the sender restarted: what its predecessor left half done is lost */
		shm_rx_fail_pipe(ni, rx, PTL_NI_PEER_DEAD);
	}
	rx->rx_key = shm_peer_key(id);
	rx->rx_ospid = he.he_ospid;
	rx->rx_incarnation = he.he_incarnation;
	rx->rx_coop = !!(he.he_flags & SHM_SEG_F_COOP);
	rx->rx_hello = 1;
	rx->rx_peer = shm_peer_lookup(ni, id, 1);

	uint32_t verdict = SHM_CMA_NO;
	if (ni->ni_cma && (he.he_flags & SHM_SEG_F_CMA)) {
		int err = shm_cma_probe_peer(he.he_ospid, he.he_probe_addr, he.he_probe_value);
		if (err == 0)
			verdict = SHM_CMA_OK;
		else
			p3_lib_log(ni->ni_lib, 3,
			           "shmem: process_vm_readv from %u:%u denied (%s): two-copy "
			           "pipeline for it",
			           he.he_nid, he.he_pid, strerror(-err));
	}
	atomic_store_explicit(&rx->rx_ring.rg_ctl->rc_cma, verdict, memory_order_release);
	return 0;
}

static int shm_rx_data(struct shm_ni *ni, struct shm_rx *rx, const struct shm_rec *rec,
                       uint32_t len)
{
	struct shm_pipe_rx *px = &rx->rx_pipe;
	struct shm_data da;

	if (len < SHM_DATA_HDR_LEN)
		return -EPROTO;
	memcpy(&da, rec, sizeof(da));
	if (!px->px_active || da.da_seq != px->px_seq || da.da_offset != px->px_got ||
	    da.da_len == 0 || da.da_len > len - SHM_DATA_HDR_LEN ||
	    da.da_len > px->px_rlen - px->px_got)
		return -EPROTO;

	const uint8_t *src = (const uint8_t *)rec + SHM_DATA_HDR_LEN;
	if (px->px_got < px->px_mlen) {
		uint64_t n = px->px_mlen - px->px_got;
		if (n > da.da_len)
			n = da.da_len;
		shm_iov_copy_in(px->px_iov, px->px_niov, px->px_offset + px->px_got, src, n);
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_PIPE_BYTES_RECV], n);
	}
	px->px_got += da.da_len;
	if (px->px_got == px->px_rlen) {
		struct p3_msg *msg = px->px_msg;
		px->px_active = 0;
		px->px_msg = NULL;
		if (msg)
			p3_lib_finalize(ni->ni_lib, msg, PTL_NI_OK);
		return 1;
	}
	return 0;
}

/* A SMALL record: the Portals header it stands for (shmem.h), then LIB
 * takes it as an eager PUT (p3_lib_parse_eager, or p3_lib_parse for what
 * that leaves, e.g. a closing NI). */
static int shm_rx_small(struct shm_ni *ni, struct shm_rx *rx, const struct shm_rec *rec,
                        uint32_t len)
{
	struct shm_small sm;

	if (len < sizeof(sm))
		return -EPROTO;
	memcpy(&sm, rec, sizeof(sm));
	if (sm.sm_rec.r_aux > SHM_SMALL_MAX || rx->rx_pipe.px_active)
		return -EPROTO;
	struct p3_hdr hdr;
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = P3_MSG_PUT;
	hdr.src.nid = (ptl_nid_t)(rx->rx_key >> 32);
	hdr.src.pid = (ptl_pid_t)rx->rx_key;
	hdr.dst = ni->ni_id;
	hdr.src_uid = sm.sm_uid;
	hdr.src_jid = sm.sm_jid;
	hdr.pt_index = sm.sm_pt;
	hdr.ac_index = sm.sm_ac;
	hdr.match_bits = sm.sm_mbits;
	hdr.hdr_data = sm.sm_hdr_data;
	hdr.remote_offset = sm.sm_roff;
	hdr.rlength = sm.sm_rec.r_aux;
	hdr.payload_len = sm.sm_rec.r_aux;
	hdr.md_handle = PTL_MD_NONE;
	uint64_t got;
	if (p3_lib_parse_eager(ni->ni_lib, &hdr, sm.sm_data, &got)) {
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_EAGER_MSGS_RECV], 1);
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_EAGER_BYTES_RECV], got);
		return 1;
	}
	struct shm_rx_ctx ctx = {
	    .rc_ni = ni,
	    .rc_rx = rx,
	    .rc_kind = SHM_REC_EAGER,
	    .rc_payload = sm.sm_data,
	    .rc_len = hdr.payload_len,
	};
	p3_lib_parse(ni->ni_lib, &hdr, &ctx);
	if (!ctx.rc_called) /* LIB broke its promise: act as for a drop */
		shm_recv(ni, NULL, &ctx, NULL, 0, 0, 0, hdr.payload_len);
	return 1;
}

int shm_rx_record(struct shm_ni *ni, uint32_t idx, struct shm_rx *rx, const struct shm_rec *rec,
                  uint32_t len)
{
	uint16_t kind = ((const volatile struct shm_rec *)rec)->r_kind;

	if (kind == SHM_REC_HELLO)
		return shm_rx_hello(ni, idx, rx, rec, len);
	if (!rx->rx_hello)
		return -EPROTO;

	switch (kind) {
	case SHM_REC_DATA:
		return shm_rx_data(ni, rx, rec, len);

	case SHM_REC_SMALL:
		return shm_rx_small(ni, rx, rec, len);

	case SHM_REC_CMA_DONE: {
		struct shm_done dn;
		if (len < sizeof(dn))
			return -EPROTO;
		memcpy(&dn, rec, sizeof(dn));
		ptl_ni_fail_t st = dn.dn_status <= PTL_NI_UNLINKED ? dn.dn_status : PTL_NI_FAIL;
		if (!rx->rx_peer || shm_peer_cma_done(ni, rx->rx_peer, dn.dn_seq, st) < 0) {
			shm_ctr_add(ni, SHM_CTR_BAD_RECORDS, 1);
			return 0; /* a stray completion: ignore it */
		}
		return 1;
	}

	case SHM_REC_COOP: {
		struct shm_coop cp;
		if (len < sizeof(cp))
			return -EPROTO;
		memcpy(&cp, rec, sizeof(cp));
		if (!rx->rx_peer || shm_peer_coop(ni, rx->rx_peer, &cp) < 0)
			shm_ctr_add(ni, SHM_CTR_BAD_RECORDS, 1); /* stray or malformed: ignore */
		return 1;
	}

	case SHM_REC_EAGER:
	case SHM_REC_CMA_RTS:
	case SHM_REC_PIPE_RTS:
		break;
	default:
		return -EPROTO;
	}

	struct p3_hdr hdr;
	struct shm_cma_iov riov_local[16];
	struct shm_cma_iov *riov = NULL;
	struct shm_rx_ctx ctx = {
	    .rc_ni = ni,
	    .rc_rx = rx,
	    .rc_kind = (enum shm_rec_kind)kind,
	};

	if (len < SHM_MSG_HDR_LEN || rx->rx_pipe.px_active)
		return -EPROTO; /* a header inside a pipeline message */
	memcpy(&hdr, (const uint8_t *)rec + offsetof(struct shm_msg_rec, mr_hdr), sizeof(hdr));
	ctx.rc_len = hdr.payload_len;
	const uint8_t *body = (const uint8_t *)rec + SHM_MSG_HDR_LEN;
	uint32_t blen = len - (uint32_t)SHM_MSG_HDR_LEN;

	switch (kind) {
	case SHM_REC_EAGER:
		if (hdr.payload_len > blen)
			return -EPROTO;
		ctx.rc_payload = body;
		break;
	case SHM_REC_PIPE_RTS:
		if (blen < sizeof(uint64_t) || hdr.payload_len == 0)
			return -EPROTO;
		memcpy(&ctx.rc_seq, body, sizeof(uint64_t));
		break;
	case SHM_REC_CMA_RTS: {
		struct shm_cma_desc cd;
		if (blen < sizeof(cd))
			return -EPROTO;
		memcpy(&cd, body, sizeof(cd));
		if (cd.cd_niov > SHM_RX_MAX_IOV ||
		    cd.cd_niov > (blen - sizeof(cd)) / sizeof(struct shm_cma_iov) ||
		    cd.cd_ospid != rx->rx_ospid)
			return -EPROTO;
		riov = cd.cd_niov <= 16 ? riov_local : malloc(cd.cd_niov * sizeof(*riov));
		if (!riov)
			return -ENOMEM;
		memcpy(riov, body + sizeof(cd), cd.cd_niov * sizeof(*riov));
		uint64_t total = 0;
		for (uint32_t i = 0; i < cd.cd_niov; i++) {
			if (riov[i].ci_len > UINT64_MAX - total) {
				total = UINT64_MAX;
				break;
			}
			total += riov[i].ci_len;
		}
		if (total != hdr.payload_len) {
			if (riov != riov_local)
				free(riov);
			return -EPROTO;
		}
		ctx.rc_seq = cd.cd_seq;
		ctx.rc_riov = riov;
		ctx.rc_rniov = cd.cd_niov;
		break;
	}
	}

	if (hdr.type == P3_MSG_ACK || hdr.type == P3_MSG_REPLY)
		shm_await_answered(ni, &hdr);
	/* a small put without an ACK: LIB copies it out of the ring itself */
	uint64_t got;
	if (kind == SHM_REC_EAGER && p3_lib_parse_eager(ni->ni_lib, &hdr, ctx.rc_payload, &got)) {
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_EAGER_MSGS_RECV], 1);
		shm_ctr_inc(&ni->ni_ctr[SHM_CTR_EAGER_BYTES_RECV], got);
		return 1;
	}
	p3_lib_parse(ni->ni_lib, &hdr, &ctx);
	if (!ctx.rc_called) /* LIB broke its promise: act as for a drop */
		shm_recv(ni, NULL, &ctx, NULL, 0, 0, 0, hdr.payload_len);
	if (riov && riov != riov_local)
		free(riov);
	return 1;
}
