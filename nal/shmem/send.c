/* SPDX-License-Identifier: BSD-3-Clause */
/* send.c - shmem NAL data path, sending side: peers (attach, ring claim,
 * liveness), send() and the local queue of sends waiting for ring space. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "shmem.h"

#define SHM_CONNECT_RETRY_NS (1000ull * 1000) /* 1 ms between attach attempts */
#define SHM_CMA_MAX_IOV      1024             /* iovecs in one CMA_RTS */

/* ---- peer table ------------------------------------------------------- */

static uint32_t shm_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (uint32_t)key & (SHM_PEER_HASH - 1);
}

struct shm_peer *shm_peer_lookup(struct shm_ni *ni, ptl_process_id_t id, int create)
{
	uint64_t key = shm_peer_key(id);
	struct shm_peer *p = atomic_load_explicit(&ni->ni_last_peer, memory_order_acquire);

	if (p && p->pr_key == key)
		return p; /* peers live until destroy: a stale hint is still a peer */
	uint32_t h = shm_hash(key);
	for (uint32_t i = 0; i < SHM_PEER_HASH; i++) {
		p = atomic_load_explicit(&ni->ni_peer_hash[(h + i) & (SHM_PEER_HASH - 1)],
		                         memory_order_acquire);
		if (!p)
			break;
		if (p->pr_key == key) {
			atomic_store_explicit(&ni->ni_last_peer, p, memory_order_release);
			return p;
		}
	}
	if (!create)
		return NULL;

	pthread_mutex_lock(&ni->ni_peers_lock);
	uint32_t slot = UINT32_MAX;
	for (uint32_t i = 0; i < SHM_PEER_HASH; i++) {
		uint32_t s = (h + i) & (SHM_PEER_HASH - 1);
		p = atomic_load_explicit(&ni->ni_peer_hash[s], memory_order_relaxed);
		if (!p) {
			slot = s;
			break;
		}
		if (p->pr_key == key) {
			pthread_mutex_unlock(&ni->ni_peers_lock);
			return p;
		}
	}
	p = NULL;
	if (slot != UINT32_MAX && atomic_load(&ni->ni_npeers) < SHM_PEER_HASH * 3 / 4)
		p = calloc(1, sizeof(*p));
	if (p) {
		p->pr_key = key;
		p->pr_id = id;
		p->pr_seg.sg_fd = -1;
		p->pr_state = SHM_PEER_NEW;
		pthread_mutex_init(&p->pr_lock, NULL);
		p->pr_next_all = atomic_load(&ni->ni_peers);
		atomic_store(&ni->ni_peers, p);
		atomic_fetch_add(&ni->ni_npeers, 1);
		atomic_store_explicit(&ni->ni_peer_hash[slot], p, memory_order_release);
	}
	pthread_mutex_unlock(&ni->ni_peers_lock);
	return p;
}

void shm_peer_set_busy_locked(struct shm_ni *ni, struct shm_peer *peer)
{
	/* answers owed (await.c) keep it busy: its liveness is checked */
	int busy = peer->pr_q_head != NULL || peer->pr_w_head != NULL || peer->pr_await_unsent.aq_head != NULL ||
	           peer->pr_await_sent.aq_head != NULL;

	if (atomic_load_explicit(&peer->pr_busy, memory_order_relaxed) != busy) {
		atomic_store(&peer->pr_busy, busy);
		atomic_fetch_add(&ni->ni_busy_peers, busy ? 1 : -1);
	}
}

static void shm_peer_unmap_locked(struct shm_peer *peer)
{
	shm_seg_close(&peer->pr_seg);
	peer->pr_hdr = NULL;
	peer->pr_claimed = 0;
	peer->pr_hello_sent = 0;
}

/* Claim (or take back) our inbound ring in the peer's segment. */
static int shm_peer_claim_locked(struct shm_ni *ni, struct shm_peer *peer)
{
	struct shm_seg_hdr *hdr = peer->pr_hdr;
	uint32_t nmax = hdr->sh_max_peers;
	uint32_t idx = UINT32_MAX;

	for (uint32_t i = 0; i < nmax && idx == UINT32_MAX; i++) {
		struct shm_claim *cl = shm_seg_claim(&peer->pr_seg, i);
		if (!cl)
			return -EPROTO;
		if (atomic_load_explicit(&cl->cl_state, memory_order_acquire) != SHM_CLAIM_TAKEN ||
		    cl->cl_nid != ni->ni_id.nid || cl->cl_pid != ni->ni_id.pid)
			continue;
		uint32_t owner = atomic_load(&cl->cl_ospid);
		if (owner == ni->ni_ospid) {
			idx = i;
			break;
		}
		/* a previous incarnation of this Portals id: take over if dead */
		if (owner != 0 && kill((pid_t)owner, 0) == 0)
			return -EADDRINUSE;
		if (atomic_compare_exchange_strong(&cl->cl_ospid, &owner, ni->ni_ospid))
			idx = i;
	}
	for (uint32_t i = 0; i < nmax && idx == UINT32_MAX; i++) {
		struct shm_claim *cl = shm_seg_claim(&peer->pr_seg, i);
		uint32_t expected = SHM_CLAIM_FREE;

		if (!cl)
			return -EPROTO;
		if (!atomic_compare_exchange_strong(&cl->cl_state, &expected, SHM_CLAIM_BUSY))
			continue;
		cl->cl_nid = ni->ni_id.nid;
		cl->cl_pid = ni->ni_id.pid;
		atomic_store(&cl->cl_ospid, ni->ni_ospid);
		atomic_store_explicit(&cl->cl_state, SHM_CLAIM_TAKEN, memory_order_release);
		uint32_t n = atomic_load(&hdr->sh_nclaimed);
		while (n < i + 1 && !atomic_compare_exchange_weak(&hdr->sh_nclaimed, &n, i + 1))
			;
		idx = i;
	}
	if (idx == UINT32_MAX)
		return -ENOSPC;

	struct shm_ring_ctl *ctl = shm_seg_ring_ctl(&peer->pr_seg, idx);
	uint8_t *data = shm_seg_ring_data(&peer->pr_seg, idx);
	if (!ctl || !data)
		return -EPROTO;
	shm_ring_attach_producer(&peer->pr_tx, ctl, data, hdr->sh_ring_size);
	shm_ring_prefault(ni, &peer->pr_seg, idx);
	peer->pr_ring_idx = idx;
	peer->pr_claimed = 1;
	peer->pr_hello_sent = 0;
	return 0;
}

/* Map the peer's segment and claim a ring.  0: UP; -EAGAIN: not there yet
 * (or a dead incarnation's leftover); other -errno: unreachable. */
static int shm_peer_connect_locked(struct shm_ni *ni, struct shm_peer *peer)
{
	int err;

	if (peer->pr_seg.sg_base) {
		if (atomic_load(&peer->pr_hdr->sh_state) == SHM_SEG_ALIVE &&
		    shm_seg_owner_alive(peer->pr_hdr))
			goto claim;
		shm_peer_unmap_locked(peer);
	}
	if (peer->pr_id.nid != ni->ni_id.nid)
		return -EHOSTUNREACH;

	char name[SHM_NAME_MAX];
	shm_seg_name(name, sizeof(name), ni->ni_uid, ni->ni_jid, peer->pr_id.pid);
	err = shm_seg_open(&peer->pr_seg, name);
	if (err == -ENOENT || err == -EAGAIN)
		return -EAGAIN;
	if (err)
		return err;
	struct shm_seg_hdr *hdr = peer->pr_seg.sg_base;
	peer->pr_hdr = hdr;
	if (hdr->sh_pid != peer->pr_id.pid || hdr->sh_nid != peer->pr_id.nid ||
	    hdr->sh_jid != ni->ni_jid) {
		shm_peer_unmap_locked(peer);
		return -EPROTO;
	}
	if (atomic_load(&hdr->sh_state) != SHM_SEG_ALIVE || !shm_seg_owner_alive(hdr)) {
		shm_peer_unmap_locked(peer);
		return -EAGAIN;
	}
	peer->pr_ospid = hdr->sh_owner_ospid;
	peer->pr_incarnation = hdr->sh_incarnation;
	uint32_t maxrec = hdr->sh_max_record;
	uint32_t eager = maxrec - (uint32_t)SHM_MSG_HDR_LEN;
	peer->pr_eager_max = ni->ni_cf.cf_eager_max < eager ? ni->ni_cf.cf_eager_max : eager;
	peer->pr_chunk = maxrec - SHM_DATA_HDR_LEN;
	uint32_t niov =
	    (maxrec - (uint32_t)SHM_MSG_HDR_LEN - (uint32_t)sizeof(struct shm_cma_desc)) /
	    (uint32_t)sizeof(struct shm_cma_iov);
	peer->pr_cma_max_iov = niov < SHM_CMA_MAX_IOV ? niov : SHM_CMA_MAX_IOV;
	shm_ctr_add(ni, SHM_CTR_PEERS_CONNECTED, 1);

claim:
	if (!peer->pr_claimed) {
		err = shm_peer_claim_locked(ni, peer);
		if (err) {
			if (err == -ENOSPC)
				p3_lib_log(ni->ni_lib, 0,
				           "shmem: %u:%u has no free inbound ring (raise "
				           "P3_SHMEM_MAX_PEERS for it)",
				           peer->pr_id.nid, peer->pr_id.pid);
			shm_peer_unmap_locked(peer);
			return err;
		}
	}
	peer->pr_state = SHM_PEER_UP;
	return 0;
}

/* Bring the peer to UP if possible.  Returns its state afterwards. */
static enum shm_peer_state shm_peer_ensure_locked(struct shm_ni *ni, struct shm_peer *peer,
                                                  uint64_t now)
{
	if (peer->pr_state == SHM_PEER_UP &&
	    atomic_load_explicit(&peer->pr_hdr->sh_state, memory_order_relaxed) == SHM_SEG_ALIVE)
		return SHM_PEER_UP;
	if (peer->pr_state == SHM_PEER_UP) {
		/* It closed its NI: whatever it had not read is lost.  Report
		 * DEAD once without reconnecting, so the caller fails what was
		 * queued or awaited for this incarnation (shm_peer_fail);
		 * the next call attaches to a successor if there is one. */
		shm_peer_unmap_locked(peer);
		peer->pr_state = SHM_PEER_DEAD;
		shm_ctr_add(ni, SHM_CTR_PEERS_DEAD, 1);
		return SHM_PEER_DEAD;
	}
	if (peer->pr_state == SHM_PEER_CONNECTING && now < peer->pr_retry_ns)
		return SHM_PEER_CONNECTING;

	int err = shm_peer_connect_locked(ni, peer);
	if (err == 0)
		return SHM_PEER_UP;
	if (err == -EAGAIN && peer->pr_state != SHM_PEER_DEAD) {
		if (peer->pr_state == SHM_PEER_NEW)
			peer->pr_deadline_ns =
			    now + (uint64_t)ni->ni_cf.cf_connect_timeout_ms * 1000000ull;
		peer->pr_state = SHM_PEER_CONNECTING;
		peer->pr_retry_ns = now + SHM_CONNECT_RETRY_NS;
		if (now < peer->pr_deadline_ns)
			return SHM_PEER_CONNECTING;
	}
	if (peer->pr_state != SHM_PEER_DEAD) {
		p3_lib_log(ni->ni_lib, 2, "shmem: peer %u:%u unreachable: %s", peer->pr_id.nid,
		           peer->pr_id.pid, err == -EAGAIN ? "no segment" : strerror(-err));
		shm_ctr_add(ni, SHM_CTR_PEERS_DEAD, 1);
	}
	peer->pr_state = SHM_PEER_DEAD;
	return SHM_PEER_DEAD;
}

/* ---- pushing records ---------------------------------------------------- */

/* Count the iovec entries covering [offset, offset + len). */
static size_t shm_iov_span(const struct iovec *iov, size_t niov, uint64_t offset, uint64_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < niov && len > 0; i++) {
		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		uint64_t take = iov[i].iov_len - offset;
		if (take > len)
			take = len;
		len -= take;
		offset = 0;
		if (take)
			n++;
	}
	return n;
}

static int shm_push_hello_locked(struct shm_ni *ni, struct shm_peer *peer)
{
	struct shm_rec *rec;
	int r = shm_ring_reserve(&peer->pr_tx, sizeof(struct shm_hello), &rec);

	if (r != SHM_RING_OK)
		return r == SHM_RING_FULL ? 0 : -EPROTO;
	struct shm_hello *he = (struct shm_hello *)rec;
	he->he_rec.r_kind = SHM_REC_HELLO;
	he->he_rec.r_aux = 0;
	he->he_rec.r_aux2 = 0;
	he->he_nid = ni->ni_id.nid;
	he->he_pid = ni->ni_id.pid;
	he->he_ospid = ni->ni_ospid;
	he->he_flags = (ni->ni_cma ? SHM_SEG_F_CMA : 0) | (ni->ni_cf.cf_coop_min ? SHM_SEG_F_COOP : 0);
	he->he_incarnation = ni->ni_hdr->sh_incarnation;
	he->he_probe_addr = shm_cma_probe_addr();
	he->he_probe_value = shm_cma_probe_value();
	peer->pr_hello_sent = 1;
	peer->pr_need_wake = 1;
	return 1;
}

static void shm_msg_rec_fill(struct shm_rec *rec, enum shm_rec_kind kind, const struct p3_hdr *hdr)
{
	struct shm_msg_rec *mr = (struct shm_msg_rec *)rec;

	mr->mr_rec.r_kind = (uint16_t)kind;
	mr->mr_rec.r_aux = 0;
	mr->mr_rec.r_aux2 = 0;
	memcpy(&mr->mr_hdr, hdr, sizeof(*hdr));
}

/* Decide how a send travels, once the peer is known. */
static void shm_txq_resolve(struct shm_ni *ni, struct shm_peer *peer, struct shm_txq *e)
{
	if (e->tq_kind != SHM_TX_EAGER || e->tq_seq != UINT64_MAX)
		return; /* already decided (or a DONE) */
	e->tq_seq = 0;
	if (e->tq_len <= peer->pr_eager_max)
		return;
	e->tq_seq = peer->pr_seq++;
	if (ni->ni_cma &&
	    atomic_load_explicit(&peer->pr_tx.rg_ctl->rc_cma, memory_order_acquire) == SHM_CMA_OK &&
	    shm_iov_span(e->tq_iov, e->tq_niov, e->tq_off, e->tq_len) <= peer->pr_cma_max_iov)
		e->tq_kind = SHM_TX_CMA;
	else
		e->tq_kind = SHM_TX_PIPE;
}

/* Push (the rest of) one entry.  1: fully out; 0: ring full, call again;
 * <0: the ring is unusable or no memory (nothing of e was published). */
static int shm_push_locked(struct shm_ni *ni, struct shm_peer *peer, struct shm_txq *e,
                           const struct p3_hdr *hdr)
{
	struct shm_ring *tx = &peer->pr_tx;
	struct shm_rec *rec;
	int r;

	if (!peer->pr_hello_sent) {
		r = shm_push_hello_locked(ni, peer);
		if (r <= 0)
			return r;
	}
	shm_txq_resolve(ni, peer, e);

	switch (e->tq_kind) {
	case SHM_TX_EAGER:
		r = shm_ring_reserve(tx, (uint32_t)(SHM_MSG_HDR_LEN + e->tq_len), &rec);
		if (r != SHM_RING_OK)
			break;
		shm_msg_rec_fill(rec, SHM_REC_EAGER, hdr);
		shm_iov_copy_out((uint8_t *)rec + SHM_MSG_HDR_LEN, e->tq_iov, e->tq_niov, e->tq_off,
		                 e->tq_len);
		shm_ctr_inc(&peer->pr_ctr[SHM_CTR_EAGER_MSGS_SENT], 1);
		shm_ctr_inc(&peer->pr_ctr[SHM_CTR_EAGER_BYTES_SENT], e->tq_len);
		peer->pr_need_wake = 1;
		return 1;

	case SHM_TX_CMA: {
		size_t n = shm_iov_span(e->tq_iov, e->tq_niov, e->tq_off, e->tq_len);
		struct shm_cma_wait *w = malloc(sizeof(*w) + n * sizeof(struct iovec));
		if (!w)
			return -ENOMEM;
		r = shm_ring_reserve(tx,
		                     (uint32_t)(SHM_MSG_HDR_LEN + sizeof(struct shm_cma_desc) +
		                                n * sizeof(struct shm_cma_iov)),
		                     &rec);
		if (r != SHM_RING_OK) {
			free(w);
			break;
		}
		shm_msg_rec_fill(rec, SHM_REC_CMA_RTS, hdr);
		struct shm_cma_desc *cd = (struct shm_cma_desc *)((uint8_t *)rec + SHM_MSG_HDR_LEN);
		struct shm_cma_iov *ci = (struct shm_cma_iov *)(cd + 1);
		cd->cd_seq = e->tq_seq;
		cd->cd_ospid = ni->ni_ospid;
		cd->cd_niov = (uint32_t)n;
		uint64_t off = e->tq_off, left = e->tq_len;
		size_t k = 0;
		for (size_t i = 0; i < e->tq_niov && left > 0; i++) {
			if (off >= e->tq_iov[i].iov_len) {
				off -= e->tq_iov[i].iov_len;
				continue;
			}
			uint64_t take = e->tq_iov[i].iov_len - off;
			if (take > left)
				take = left;
			if (take) {
				ci[k].ci_addr = (uint64_t)(uintptr_t)e->tq_iov[i].iov_base + off;
				ci[k].ci_len = take;
				w->cw_iov[k].iov_base = (uint8_t *)e->tq_iov[i].iov_base + off;
				w->cw_iov[k].iov_len = take;
				k++;
			}
			left -= take;
			off = 0;
		}
		w->cw_next = NULL;
		w->cw_msg = e->tq_msg;
		w->cw_seq = e->tq_seq;
		w->cw_len = e->tq_len;
		w->cw_niov = k;
		if (peer->pr_w_tail)
			peer->pr_w_tail->cw_next = w;
		else
			peer->pr_w_head = w;
		peer->pr_w_tail = w;
		shm_ctr_inc(&peer->pr_ctr[SHM_CTR_CMA_MSGS_SENT], 1);
		shm_ctr_inc(&peer->pr_ctr[SHM_CTR_CMA_BYTES_SENT], e->tq_len);
		peer->pr_need_wake = 1;
		return 1;
	}

	case SHM_TX_PIPE:
		if (!e->tq_rts_sent) {
			r = shm_ring_reserve(tx, (uint32_t)(SHM_MSG_HDR_LEN + sizeof(uint64_t)),
			                     &rec);
			if (r != SHM_RING_OK)
				break;
			shm_msg_rec_fill(rec, SHM_REC_PIPE_RTS, hdr);
			memcpy((uint8_t *)rec + SHM_MSG_HDR_LEN, &e->tq_seq, sizeof(uint64_t));
			e->tq_rts_sent = 1;
			peer->pr_need_wake = 1;
			shm_ctr_inc(&peer->pr_ctr[SHM_CTR_PIPE_MSGS_SENT], 1);
		}
		while (e->tq_sent < e->tq_len) {
			uint64_t n = e->tq_len - e->tq_sent;
			if (n > peer->pr_chunk)
				n = peer->pr_chunk;
			r = shm_ring_reserve(tx, (uint32_t)(SHM_DATA_HDR_LEN + n), &rec);
			if (r != SHM_RING_OK)
				goto pipe_blocked;
			struct shm_data *da = (struct shm_data *)rec;
			da->da_rec.r_kind = SHM_REC_DATA;
			da->da_seq = e->tq_seq;
			da->da_offset = e->tq_sent;
			da->da_len = (uint32_t)n;
			shm_iov_copy_out((uint8_t *)rec + SHM_DATA_HDR_LEN, e->tq_iov, e->tq_niov,
			                 e->tq_off + e->tq_sent, n);
			e->tq_sent += n;
			/* let the receiver start on this chunk while we copy the next */
			shm_ring_publish(tx);
			peer->pr_need_wake = 1;
			shm_ctr_inc(&peer->pr_ctr[SHM_CTR_PIPE_BYTES_SENT], n);
		}
		return 1;
	pipe_blocked:
		if (r != SHM_RING_FULL)
			return -EPROTO; /* a partial message: the peer is dead to us */
		return 0;

	case SHM_TX_DONE: {
		r = shm_ring_reserve(tx, sizeof(struct shm_done), &rec);
		if (r != SHM_RING_OK)
			break;
		struct shm_done *dn = (struct shm_done *)rec;
		dn->dn_rec.r_kind = SHM_REC_CMA_DONE;
		dn->dn_seq = e->tq_seq;
		dn->dn_status = e->tq_status;
		dn->dn_bytes = e->tq_bytes;
		peer->pr_need_wake = 1;
		return 1;
	}

	case SHM_TX_COOP: {
		r = shm_ring_reserve(tx, sizeof(struct shm_coop), &rec);
		if (r != SHM_RING_OK)
			break;
		/* the body only: the ring owns the record header's length */
		memcpy((uint8_t *)rec + sizeof(struct shm_rec),
		       (const uint8_t *)&e->tq_coop + sizeof(struct shm_rec),
		       sizeof(e->tq_coop) - sizeof(struct shm_rec));
		rec->r_kind = SHM_REC_COOP;
		peer->pr_need_wake = 1;
		return 1;
	}
	}
	return r == SHM_RING_FULL ? 0 : -EPROTO;
}

/* Publish what was pushed and ring the peer's doorbell if it sleeps. */
static void shm_peer_flush_locked(struct shm_ni *ni, struct shm_peer *peer)
{
	if (!peer->pr_need_wake)
		return;
	peer->pr_need_wake = 0;
	shm_ring_publish(&peer->pr_tx);
	/* Pairs with the fence after sh_sleepers++ in progress(): either the
	 * sleeper sees our head or we see its count. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&peer->pr_hdr->sh_sleepers, memory_order_relaxed))
		shm_doorbell_ring(ni, peer->pr_hdr);
}

/* Heap copy of a send for the queue. */
static struct shm_txq *shm_txq_dup(const struct shm_txq *e, const struct p3_hdr *hdr)
{
	struct shm_txq *q = malloc(sizeof(*q));

	if (!q)
		return NULL;
	*q = *e;
	q->tq_next = NULL;
	if (hdr)
		q->tq_hdr = *hdr;
	if (e->tq_niov <= 2) {
		q->tq_iov = q->tq_iov_inline;
		if (e->tq_niov)
			memcpy(q->tq_iov_inline, e->tq_iov, e->tq_niov * sizeof(struct iovec));
	} else {
		q->tq_iov = malloc(e->tq_niov * sizeof(struct iovec));
		if (!q->tq_iov) {
			free(q);
			return NULL;
		}
		memcpy(q->tq_iov, e->tq_iov, e->tq_niov * sizeof(struct iovec));
	}
	return q;
}

static void shm_txq_free(struct shm_txq *q)
{
	if (q->tq_iov != q->tq_iov_inline)
		free(q->tq_iov);
	free(q);
}

static void shm_txq_append_locked(struct shm_peer *peer, struct shm_txq *q)
{
	if (peer->pr_q_tail)
		peer->pr_q_tail->tq_next = q;
	else
		peer->pr_q_head = q;
	peer->pr_q_tail = q;
}

/* Ask the receiver for a wakeup when it frees space, then look once more
 * (it may have consumed between our failed reserve and the flag). */
static void shm_peer_want_space_locked(struct shm_peer *peer)
{
	atomic_store_explicit(&peer->pr_tx.rg_ctl->rc_want_space, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

/* Something was queued: a thread of ours sleeping in progress() without a
 * time limit must notice (it drains queues, and sleeps only briefly while
 * any are non-empty). */
static void shm_kick_self(struct shm_ni *ni)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&ni->ni_hdr->sh_sleepers, memory_order_relaxed))
		shm_doorbell_ring(NULL, ni->ni_hdr);
}

int shm_send(void *priv, struct p3_msg *msg, const struct p3_hdr *hdr, const struct iovec *iov,
             size_t niov, uint64_t offset, uint64_t len)
{
	struct shm_ni *ni = priv;
	struct shm_peer *peer;

	if (atomic_load_explicit(&ni->ni_stopping, memory_order_relaxed))
		return -ESHUTDOWN;
	if (len != hdr->payload_len || (len && !iov))
		return -EINVAL;
	peer = shm_peer_lookup(ni, hdr->dst, 1);
	if (!peer)
		return -ENOMEM;

	/* Field by field: a designated initializer would zero the whole
	 * entry (header copy included) on every send. */
	struct shm_txq e;
	e.tq_next = NULL;
	e.tq_kind = SHM_TX_EAGER;
	e.tq_msg = msg;
	e.tq_len = len;
	e.tq_sent = 0;
	e.tq_rts_sent = 0;
	e.tq_seq = UINT64_MAX; /* undecided */
	e.tq_status = 0;
	e.tq_bytes = 0;
	e.tq_niov = niov;
	e.tq_iov = (struct iovec *)iov; /* read only */
	e.tq_off = offset;

	pthread_mutex_lock(&peer->pr_lock);
	enum shm_peer_state st = SHM_PEER_UP;
	if (peer->pr_state != SHM_PEER_UP ||
	    atomic_load_explicit(&peer->pr_hdr->sh_state, memory_order_relaxed) != SHM_SEG_ALIVE)
		st = shm_peer_ensure_locked(ni, peer, shm_now_ns());
	if (st == SHM_PEER_DEAD) {
		pthread_mutex_unlock(&peer->pr_lock);
		shm_peer_fail(ni, peer, PTL_NI_PEER_DEAD); /* earlier sends to it */
		/* This message is addressed to the Portals id, not to the dead
		 * incarnation: if a successor is up already, it goes there (an
		 * ACK or reply to a restarted initiator must not be lost). */
		pthread_mutex_lock(&peer->pr_lock);
		st = shm_peer_ensure_locked(ni, peer, shm_now_ns());
		if (st == SHM_PEER_DEAD) {
			pthread_mutex_unlock(&peer->pr_lock);
			if (msg)
				p3_lib_finalize(ni->ni_lib, msg, PTL_NI_PEER_DEAD);
			return 0;
		}
	}
	/* an ACK or REPLY will be owed: watch for it before it can come */
	if (msg && p3_hdr_wants_answer(hdr)) {
		if (shm_await_add_locked(peer, msg, hdr) != 0) {
			pthread_mutex_unlock(&peer->pr_lock);
			return -ENOMEM;
		}
		shm_peer_set_busy_locked(ni, peer);
	}
	if (st == SHM_PEER_UP && !peer->pr_q_head) {
		int r = shm_push_locked(ni, peer, &e, hdr);
		if (r == 1) {
			enum shm_txq_kind kind = e.tq_kind;
			if (kind == SHM_TX_CMA)
				shm_peer_set_busy_locked(ni, peer);
			else
				shm_await_sent_locked(peer, msg);
			shm_peer_flush_locked(ni, peer);
			pthread_mutex_unlock(&peer->pr_lock);
			if (kind != SHM_TX_CMA && msg)
				p3_lib_finalize(ni->ni_lib, msg, PTL_NI_OK);
			return 0;
		}
		if (r == -ENOMEM) {
			shm_await_drop_locked(peer, msg);
			shm_peer_set_busy_locked(ni, peer);
			shm_peer_flush_locked(ni, peer);
			pthread_mutex_unlock(&peer->pr_lock);
			return -ENOMEM;
		}
		if (r < 0) {
			shm_await_drop_locked(peer, msg);
			shm_peer_set_busy_locked(ni, peer);
			pthread_mutex_unlock(&peer->pr_lock);
			p3_lib_log(ni->ni_lib, 0, "shmem: ring to %u:%u is corrupt",
			           peer->pr_id.nid, peer->pr_id.pid);
			shm_ctr_add(ni, SHM_CTR_BAD_RECORDS, 1);
			shm_peer_fail(ni, peer, PTL_NI_PEER_DEAD);
			if (msg)
				p3_lib_finalize(ni->ni_lib, msg, PTL_NI_PEER_DEAD);
			return 0;
		}
		/* ring full (maybe after part of a pipeline message): ask the
		 * receiver for a wakeup, then look once more */
		shm_peer_flush_locked(ni, peer);
		shm_ctr_inc(&peer->pr_ctr[SHM_CTR_RING_FULL_STALLS], 1);
		shm_peer_want_space_locked(peer);
		r = shm_push_locked(ni, peer, &e, hdr);
		if (r == 1) {
			enum shm_txq_kind kind = e.tq_kind;
			if (kind == SHM_TX_CMA)
				shm_peer_set_busy_locked(ni, peer);
			else
				shm_await_sent_locked(peer, msg);
			shm_peer_flush_locked(ni, peer);
			pthread_mutex_unlock(&peer->pr_lock);
			if (kind != SHM_TX_CMA && msg)
				p3_lib_finalize(ni->ni_lib, msg, PTL_NI_OK);
			return 0;
		}
		shm_peer_flush_locked(ni, peer);
	}
	struct shm_txq *q = shm_txq_dup(&e, hdr);
	if (!q) {
		/* nothing of it went out unless a pipeline RTS did: then we
		 * cannot take it back; fail it the Portals way */
		shm_await_drop_locked(peer, msg);
		shm_peer_set_busy_locked(ni, peer);
		pthread_mutex_unlock(&peer->pr_lock);
		if (e.tq_rts_sent) {
			if (msg)
				p3_lib_finalize(ni->ni_lib, msg, PTL_NI_FAIL);
			return 0;
		}
		return -ENOMEM;
	}
	shm_txq_append_locked(peer, q);
	shm_peer_set_busy_locked(ni, peer);
	pthread_mutex_unlock(&peer->pr_lock);
	shm_kick_self(ni);
	return 0;
}

/* nal.h send_now: an eager record at once, or nothing.  Only when the
 * peer is up and greeted, nothing is queued before it (order) and the ring
 * has room now; everything else (first contact, a full ring, a dead peer,
 * single copy) is send()'s. */
int shm_send_now(void *priv, const struct p3_hdr *hdr, const struct iovec *iov, size_t niov,
                 uint64_t offset, uint64_t len)
{
	struct shm_ni *ni = priv;
	struct shm_peer *peer;
	struct shm_rec *rec;
	int sent = 0;

	if (atomic_load_explicit(&ni->ni_stopping, memory_order_relaxed) ||
	    len != hdr->payload_len || (len && !iov))
		return 0;
	peer = shm_peer_lookup(ni, hdr->dst, 0);
	if (!peer)
		return 0;
	/* a put without an ACK that fits one cache line: a SMALL record (the
	 * receiver misses one line, not two); what it leaves out is implied */
	int small = len <= SHM_SMALL_MAX && hdr->type == P3_MSG_PUT &&
	            hdr->md_handle == PTL_MD_NONE && hdr->rlength == len && hdr->flags == 0 &&
	            hdr->src.nid == ni->ni_id.nid && hdr->src.pid == ni->ni_id.pid;
	uint32_t need = small ? (uint32_t)sizeof(struct shm_small) : (uint32_t)(SHM_MSG_HDR_LEN + len);
	int locked = shm_lock_hot(&peer->pr_lock); /* no callback inside */
	if (peer->pr_state == SHM_PEER_UP && peer->pr_hello_sent && !peer->pr_q_head &&
	    len <= peer->pr_eager_max &&
	    atomic_load_explicit(&peer->pr_hdr->sh_state, memory_order_relaxed) == SHM_SEG_ALIVE &&
	    shm_ring_reserve(&peer->pr_tx, need, &rec) == SHM_RING_OK) {
		if (small) {
			struct shm_small *sm = (struct shm_small *)rec;
			sm->sm_rec.r_kind = SHM_REC_SMALL;
			sm->sm_rec.r_aux = (uint32_t)len;
			sm->sm_rec.r_aux2 = 0;
			sm->sm_uid = hdr->src_uid;
			sm->sm_jid = hdr->src_jid;
			sm->sm_pt = hdr->pt_index;
			sm->sm_ac = hdr->ac_index;
			sm->sm_mbits = hdr->match_bits;
			sm->sm_hdr_data = hdr->hdr_data;
			sm->sm_roff = hdr->remote_offset;
			shm_small_copy_out(sm->sm_data, iov, niov, offset, len);
		} else {
			shm_msg_rec_fill(rec, SHM_REC_EAGER, hdr);
			shm_iov_copy_out((uint8_t *)rec + SHM_MSG_HDR_LEN, iov, niov, offset, len);
		}
		shm_ctr_inc(&peer->pr_ctr[SHM_CTR_EAGER_MSGS_SENT], 1);
		shm_ctr_inc(&peer->pr_ctr[SHM_CTR_EAGER_BYTES_SENT], len);
		peer->pr_need_wake = 1;
		shm_peer_flush_locked(ni, peer);
		sent = 1;
	}
	shm_unlock_hot(&peer->pr_lock, locked);
	return sent;
}

/* A control record (DONE, COOP) to peer: at once, or queued behind its sends. */
static int shm_send_ctrl(struct shm_ni *ni, struct shm_peer *peer, struct shm_txq e)
{
	int ret = 0;

	pthread_mutex_lock(&peer->pr_lock);
	if (shm_peer_ensure_locked(ni, peer, shm_now_ns()) == SHM_PEER_DEAD) {
		pthread_mutex_unlock(&peer->pr_lock);
		shm_peer_fail(ni, peer, PTL_NI_PEER_DEAD);
		return -ESRCH; /* the sender is gone: nobody waits for this */
	}
	if (peer->pr_state == SHM_PEER_UP && !peer->pr_q_head) {
		int r = shm_push_locked(ni, peer, &e, NULL);
		if (r == 1) {
			shm_peer_flush_locked(ni, peer);
			goto out;
		}
		if (r < 0) {
			ret = r;
			goto out;
		}
		shm_ctr_inc(&peer->pr_ctr[SHM_CTR_RING_FULL_STALLS], 1);
		shm_peer_want_space_locked(peer);
	}
	struct shm_txq *q = shm_txq_dup(&e, NULL);
	if (!q) {
		ret = -ENOMEM;
		goto out;
	}
	shm_txq_append_locked(peer, q);
	shm_peer_set_busy_locked(ni, peer);
	shm_kick_self(ni);
out:
	pthread_mutex_unlock(&peer->pr_lock);
	return ret;
}

int shm_send_done(struct shm_ni *ni, struct shm_peer *peer, uint64_t seq, ptl_ni_fail_t status,
                  uint64_t bytes)
{
	struct shm_txq e = {
	    .tq_kind = SHM_TX_DONE,
	    .tq_seq = seq,
	    .tq_status = status,
	    .tq_bytes = bytes,
	};
	return shm_send_ctrl(ni, peer, e);
}

int shm_send_coop(struct shm_ni *ni, struct shm_peer *peer, const struct shm_coop *cp)
{
	struct shm_txq e = {.tq_kind = SHM_TX_COOP, .tq_coop = *cp};
	return shm_send_ctrl(ni, peer, e);
}

/*
 * Sender side of a cooperative copy: claim chunks from the back and push
 * them into the receiver.  Runs with the peer lock held, so the mapping of
 * the receiver's segment (where the chunk words are) cannot go away.  A
 * record that does not describe one of our waiting sends exactly is
 * ignored; a push that fails gives its chunk back and stops pushes to that
 * peer (the receiver then copies it itself).
 */
int shm_peer_coop(struct shm_ni *ni, struct shm_peer *peer, const struct shm_coop *cp)
{
	pthread_mutex_lock(&peer->pr_lock);
	struct shm_cma_wait *w = peer->pr_w_head;
	while (w && w->cw_seq != cp->cp_seq)
		w = w->cw_next;
	int bad = !w || cp->cp_slot >= SHM_COOP_SLOTS || cp->cp_nchunks == 0 ||
	          cp->cp_nchunks > SHM_COOP_CHUNKS || cp->cp_len > w->cw_len || cp->cp_chunk == 0 ||
	          cp->cp_chunk > cp->cp_len ||
	          (cp->cp_nchunks - 1) * cp->cp_chunk >= cp->cp_len ||
	          cp->cp_nchunks * cp->cp_chunk < cp->cp_len;
	if (bad || peer->pr_state != SHM_PEER_UP || peer->pr_push_denied) {
		pthread_mutex_unlock(&peer->pr_lock);
		return bad ? -EPROTO : 0;
	}
	_Atomic uint32_t *word = shm_coop_words(peer->pr_hdr, cp->cp_slot);
	uint32_t gen = cp->cp_gen & 0x3fffffffu;
	uint64_t pushed = 0;
	for (uint32_t c = cp->cp_nchunks; c-- > 0;) {
		if (!shm_coop_claim(&word[c], gen))
			break; /* the receiver's front got here (or the slot moved on) */
		uint64_t off = (uint64_t)c * cp->cp_chunk;
		uint64_t n = cp->cp_len - off < cp->cp_chunk ? cp->cp_len - off : cp->cp_chunk;
		struct shm_cma_iov dst = {cp->cp_dest, cp->cp_len};
		int err = ni->ni_cf.cf_coop_deny ? -EPERM
		                                 : shm_cma_copy(peer->pr_ospid, 1, w->cw_iov,
		                                                w->cw_niov, off, &dst, 1, off, n);
		if (err) {
			shm_coop_settle(&word[c], gen, SHM_COOP_FREE);
			peer->pr_push_denied = 1;
			p3_lib_log(ni->ni_lib, 2,
			           "shmem: process_vm_writev into os pid %u failed (%s): the receiver "
			           "copies alone from now on",
			           peer->pr_ospid, strerror(-err));
			break;
		}
		shm_coop_settle(&word[c], gen, SHM_COOP_DONE);
		pushed += n;
	}
	shm_ctr_inc(&peer->pr_ctr[SHM_CTR_COOP_BYTES_PUSHED], pushed);
	pthread_mutex_unlock(&peer->pr_lock);
	return 0;
}

/* Push queued entries; finalize completed sends outside the lock. */
int shm_peer_drain(struct shm_ni *ni, struct shm_peer *peer)
{
	struct shm_txq *done = NULL, **done_tail = &done;
	int n = 0, dead = 0;

	pthread_mutex_lock(&peer->pr_lock);
	if (!peer->pr_q_head) {
		pthread_mutex_unlock(&peer->pr_lock);
		return 0;
	}
	enum shm_peer_state st = shm_peer_ensure_locked(ni, peer, shm_now_ns());
	if (st == SHM_PEER_DEAD) {
		pthread_mutex_unlock(&peer->pr_lock);
		shm_peer_fail(ni, peer, PTL_NI_PEER_DEAD);
		return 1;
	}
	while (st == SHM_PEER_UP && peer->pr_q_head) {
		struct shm_txq *q = peer->pr_q_head;
		int r = shm_push_locked(ni, peer, q, &q->tq_hdr);
		if (r == 0) {
			shm_peer_want_space_locked(peer);
			r = shm_push_locked(ni, peer, q, &q->tq_hdr);
			if (r == 0)
				break;
		}
		if (r == -ENOMEM)
			break; /* try again on the next pass */
		if (r < 0) {
			dead = 1;
			break;
		}
		peer->pr_q_head = q->tq_next;
		if (!peer->pr_q_head)
			peer->pr_q_tail = NULL;
		q->tq_next = NULL;
		if (q->tq_kind != SHM_TX_CMA && q->tq_kind != SHM_TX_DONE)
			shm_await_sent_locked(peer, q->tq_msg); /* finalized OK below */
		*done_tail = q;
		done_tail = &q->tq_next;
		n++;
	}
	if (st == SHM_PEER_UP)
		shm_peer_flush_locked(ni, peer);
	shm_peer_set_busy_locked(ni, peer);
	pthread_mutex_unlock(&peer->pr_lock);

	while (done) {
		struct shm_txq *q = done;
		done = q->tq_next;
		if (q->tq_msg && q->tq_kind != SHM_TX_CMA && q->tq_kind != SHM_TX_DONE)
			p3_lib_finalize(ni->ni_lib, q->tq_msg, PTL_NI_OK);
		shm_txq_free(q);
	}
	if (dead) {
		p3_lib_log(ni->ni_lib, 0, "shmem: ring to %u:%u is corrupt", peer->pr_id.nid,
		           peer->pr_id.pid);
		shm_ctr_add(ni, SHM_CTR_BAD_RECORDS, 1);
		shm_peer_fail(ni, peer, PTL_NI_PEER_DEAD);
	}
	return n;
}

void shm_peer_fail(struct shm_ni *ni, struct shm_peer *peer, ptl_ni_fail_t status)
{
	pthread_mutex_lock(&peer->pr_lock);
	struct shm_txq *q = peer->pr_q_head;
	struct shm_cma_wait *w = peer->pr_w_head;
	struct shm_await *lost = shm_await_take_all_locked(peer);
	peer->pr_q_head = peer->pr_q_tail = NULL;
	peer->pr_w_head = peer->pr_w_tail = NULL;
	if (status == PTL_NI_PEER_DEAD) {
		if (peer->pr_state != SHM_PEER_DEAD)
			shm_ctr_add(ni, SHM_CTR_PEERS_DEAD, 1);
		if (peer->pr_seg.sg_base)
			shm_peer_unmap_locked(peer);
		peer->pr_state = SHM_PEER_DEAD;
	}
	shm_peer_set_busy_locked(ni, peer);
	pthread_mutex_unlock(&peer->pr_lock);

	while (q) {
		struct shm_txq *next = q->tq_next;
		if (q->tq_msg && q->tq_kind != SHM_TX_DONE)
			p3_lib_finalize(ni->ni_lib, q->tq_msg, status);
		shm_txq_free(q);
		q = next;
	}
	while (w) {
		struct shm_cma_wait *next = w->cw_next;
		if (w->cw_msg)
			p3_lib_finalize(ni->ni_lib, w->cw_msg, status);
		free(w);
		w = next;
	}
	/* after the failed sends' own events: answers they were owed */
	shm_await_lost(ni, peer->pr_id, lost, status == PTL_NI_UNLINKED ? 0 : status);
}

/* Periodic liveness check of a peer with work outstanding.  Returns 1 if
 * it was declared dead. */
int shm_peer_check(struct shm_ni *ni, struct shm_peer *peer, uint64_t now)
{
	int dead = 0;

	pthread_mutex_lock(&peer->pr_lock);
	if (peer->pr_state == SHM_PEER_UP && peer->pr_hdr &&
	    (atomic_load(&peer->pr_hdr->sh_state) != SHM_SEG_ALIVE ||
	     !shm_seg_owner_alive(peer->pr_hdr) ||
	     peer->pr_hdr->sh_incarnation != peer->pr_incarnation))
		dead = 1;
	(void)now;
	pthread_mutex_unlock(&peer->pr_lock);
	if (dead) {
		p3_lib_log(ni->ni_lib, 2, "shmem: peer %u:%u is gone", peer->pr_id.nid,
		           peer->pr_id.pid);
		shm_peer_fail(ni, peer, PTL_NI_PEER_DEAD);
	}
	return dead;
}

int shm_peer_cma_done(struct shm_ni *ni, struct shm_peer *peer, uint64_t seq, ptl_ni_fail_t status)
{
	pthread_mutex_lock(&peer->pr_lock);
	struct shm_cma_wait *w = peer->pr_w_head;
	if (!w || w->cw_seq != seq) {
		pthread_mutex_unlock(&peer->pr_lock);
		return -EPROTO;
	}
	peer->pr_w_head = w->cw_next;
	if (!peer->pr_w_head)
		peer->pr_w_tail = NULL;
	if (status == PTL_NI_OK)
		shm_await_sent_locked(peer, w->cw_msg);
	else
		shm_await_drop_locked(peer, w->cw_msg);
	shm_peer_set_busy_locked(ni, peer);
	pthread_mutex_unlock(&peer->pr_lock);
	if (w->cw_msg)
		p3_lib_finalize(ni->ni_lib, w->cw_msg, status);
	free(w);
	return 0;
}

void shm_peer_wake_producer(struct shm_ni *ni, struct shm_peer *peer)
{
	pthread_mutex_lock(&peer->pr_lock);
	enum shm_peer_state st = shm_peer_ensure_locked(ni, peer, shm_now_ns());
	/* only a sleeping producer needs the system call; one that polls
	 * finds the space by itself (the flag is cleared either way) */
	if (st == SHM_PEER_UP &&
	    atomic_load_explicit(&peer->pr_hdr->sh_sleepers, memory_order_relaxed))
		shm_doorbell_ring(ni, peer->pr_hdr);
	pthread_mutex_unlock(&peer->pr_lock);
	if (st == SHM_PEER_DEAD)
		shm_peer_fail(ni, peer, PTL_NI_PEER_DEAD);
}

void shm_peer_release(struct shm_peer *peer)
{
	while (peer->pr_q_head) {
		struct shm_txq *q = peer->pr_q_head;
		peer->pr_q_head = q->tq_next;
		shm_txq_free(q);
	}
	while (peer->pr_w_head) {
		struct shm_cma_wait *w = peer->pr_w_head;
		peer->pr_w_head = w->cw_next;
		free(w);
	}
	shm_await_lost(NULL, peer->pr_id, shm_await_take_all_locked(peer), 0);
	shm_seg_close(&peer->pr_seg);
	pthread_mutex_destroy(&peer->pr_lock);
	free(peer);
}
