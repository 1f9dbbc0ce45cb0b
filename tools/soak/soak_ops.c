/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_ops.c - the initiator side of a p3soak worker: one operation in
 * flight per peer (put with ack, get, or GetPut), random sizes, completion
 * and checks, and what happens when a peer is killed under an operation.
 *
 * An operation that does not complete is "explained" only when its target
 * was killed after it started (the job file's kill count).  One that fails
 * with PTL_NI_PEER_DEAD or PTL_NI_PEER_RESTARTED is explained when the
 * target was killed since our last completed operation to it: the first
 * message after a restart may still carry the old epoch (rmpp learns of a
 * restart from the peer's next frame), and the restarted rank refuses it.
 * Anything else is a failure of the soak.
 */
#include "soak_worker.h"

#include <stdlib.h>
#include <string.h>

/* An operation whose target was killed after it started must still end with
 * an event (success, or PTL_NI_PEER_DEAD / PTL_NI_PEER_RESTARTED) within this
 * bound of its start: the target is restarted within 2 s, and both NALs fail
 * the old incarnation's operations within a few retransmission timeouts
 * (rmpp) or liveness checks (shmem) of that.  Past it the operation is stuck. */
#define KILL_BOUND_NS 10000000000ull

static void *tag_of(unsigned peer, uint64_t serial)
{
	return (void *)(uintptr_t)(((uint64_t)(peer + 1) << 48) | (serial & 0xffffffffffffull));
}

static size_t pick_size(struct soak_w *w, size_t max)
{
	uint64_t r = soak_rand(w) % 100;
	size_t s = r < 60   ? soak_rand(w) % 4097            /* small, eager */
	           : r < 85 ? 4096 + soak_rand(w) % 16385    /* around the eager limit */
	                    : soak_rand(w) % (max + 1);       /* rendezvous / single copy */
	return s > max ? max : s;
}

static int bind(struct soak_w *w, struct soak_slot *s, unsigned peer, void *buf, size_t len)
{
	ptl_md_t d;
	memset(&d, 0, sizeof(d));
	d.start = buf;
	d.length = len;
	d.threshold = PTL_MD_THRESH_INF;
	d.eq_handle = w->eq;
	d.user_ptr = tag_of(peer, s->serial);
	return PtlMDBind(w->ni, d, PTL_RETAIN, &s->md[s->nmd++]);
}

static enum soak_op pick_op(struct soak_w *w)
{
	for (;;) {
		enum soak_op op = (enum soak_op)(soak_rand(w) % SOAK_NOPS);
		if (w->job->ops & (1u << op))
			return op;
	}
}

int soak_issue(struct soak_w *w, unsigned peer)
{
	struct soak_slot *s = &w->slot[peer];
	struct soak_peer *p = &w->st->peer[peer];
	ptl_process_id_t tgt = w->id[peer];
	int rc;

	memset(s->md, 0, sizeof(s->md));
	s->nmd = 0;
	s->op = pick_op(w);
	s->serial = ++w->serial;
	s->seq = w->seq[peer][s->op]++;
	s->start_ns = soak_now_ns();
	s->peer_kills0 = w->job->rank[peer].kills;
	s->peer_kills_seen = w->kills_seen[peer];
	p->i_issued[s->op]++; /* before it can leave: we may be killed right after */
	switch (s->op) {
	case SOAK_PUT:
		s->len = pick_size(w, w->max_size);
		s->off = w->me * SOAK_PUT_SLOTS * w->max_size + (s->seq % SOAK_PUT_SLOTS) * w->max_size;
		soak_fill(s->sbuf, s->len, soak_key(w->seed, w->me, w->inc, s->seq, SOAK_PUT), 0);
		s->need = NEED_SEND | NEED_ACK;
		rc = bind(w, s, peer, s->sbuf, s->len);
		if (rc == PTL_OK)
			rc = PtlPut(s->md[0], PTL_ACK_REQ, tgt, SOAK_PT, 0, SOAK_BITS_PUT, s->off,
			            soak_hdr(w->me, w->inc, s->seq));
		break;
	case SOAK_GET:
		s->len = pick_size(w, w->max_size < SOAK_GET_AREA ? w->max_size : SOAK_GET_AREA);
		s->off = soak_rand(w) % (SOAK_GET_AREA - s->len + 1);
		memset(s->rbuf, 0xA5, s->len);
		s->need = NEED_REPLY;
		rc = bind(w, s, peer, s->rbuf, s->len);
		if (rc == PTL_OK)
			rc = PtlGet(s->md[0], tgt, SOAK_PT, 0, SOAK_BITS_GET, s->off);
		break;
	default:
		s->len = SOAK_REC_HDR + soak_rand(w) % (w->max_swap - SOAK_REC_HDR + 1);
		s->off = (uint64_t)w->me * SOAK_SWAP_SLOT;
		soak_rec_fill(s->sbuf, s->len, w->seed, w->me, w->inc, s->seq);
		memset(s->rbuf, 0xA5, s->len);
		s->need = NEED_SEND | NEED_REPLY;
		rc = bind(w, s, peer, s->rbuf, s->len);
		if (rc == PTL_OK)
			rc = bind(w, s, peer, s->sbuf, s->len);
		if (rc == PTL_OK)
			rc = PtlGetPut(s->md[0], s->md[1], tgt, SOAK_PT, 0, SOAK_BITS_SWAP, s->off,
			               soak_hdr(w->me, w->inc, s->seq));
		break;
	}
	if (rc != PTL_OK) {
		soak_log(w, "starting a %s to rank %u: %s", s->op == SOAK_PUT ? "put" : s->op == SOAK_GET ? "get" : "getput",
		         peer, PtlErrorStr((unsigned)rc));
		for (int i = 0; i < s->nmd; i++)
			(void)PtlMDUnlink(s->md[i]);
		p->i_issued[s->op]--; /* it never started */
		p->i_failed[s->op]++;
		return -1;
	}
	s->busy = 1;
	w->inflight++;
	return 0;
}

/* MDs unlinked: the slot is free (else parked until they can be) */
static void release(struct soak_w *w, struct soak_slot *s)
{
	int left = 0;
	for (int i = 0; i < s->nmd; i++) {
		if (PtlHandleIsEqual(s->md[i], PTL_INVALID_HANDLE))
			continue;
		int rc = PtlMDUnlink(s->md[i]);
		if (rc == PTL_MD_IN_USE)
			left++;
		else
			s->md[i] = PTL_INVALID_HANDLE;
	}
	if (s->busy) {
		s->busy = 0;
		w->inflight--;
	}
	s->parked = left > 0; /* not reused (nor its buffers) until unlinked */
	if (s->parked)        /* events of it from now on are late ones */
		s->serial = ++w->serial;
}

void soak_retry_parked(struct soak_w *w)
{
	for (unsigned p = 0; p < w->n; p++)
		if (w->slot[p].parked)
			release(w, &w->slot[p]);
}

static int killed_since(struct soak_w *w, unsigned peer)
{
	return w->job->rank[peer].kills != w->slot[peer].peer_kills0;
}

/* the operation did not complete normally; epoch: it failed with
 * PEER_DEAD/PEER_RESTARTED */
static void fail(struct soak_w *w, unsigned peer, const char *why, int stuck, int epoch)
{
	struct soak_slot *s = &w->slot[peer];
	struct soak_peer *p = &w->st->peer[peer];

	if (killed_since(w, peer) ||
	    (epoch && w->job->rank[peer].kills != s->peer_kills_seen)) {
		p->i_failed_kill[s->op]++;
	} else {
		if (stuck)
			p->i_stuck[s->op]++;
		else
			p->i_failed[s->op]++;
		soak_log(w, "%s to rank %u (seq %llu, %zu bytes) %s, no kill to explain it",
		         s->op == SOAK_PUT ? "put" : s->op == SOAK_GET ? "get" : "getput", peer,
		         (unsigned long long)s->seq, s->len, why);
	}
	if (s->op == SOAK_GETPUT) { /* it may have swapped or not */
		w->swap[peer].uncertain = 1;
		w->swap[peer].pending = s->seq;
	}
	release(w, s);
}

/* no event within KILL_BOUND_NS although the target was killed: stuck */
static void stuck_after_kill(struct soak_w *w, unsigned peer)
{
	struct soak_slot *s = &w->slot[peer];

	w->st->peer[peer].i_stuck[s->op]++;
	soak_log(w, "%s to rank %u (seq %llu, %zu bytes) had no event %llu s after rank %u was killed",
	         s->op == SOAK_PUT ? "put" : s->op == SOAK_GET ? "get" : "getput", peer,
	         (unsigned long long)s->seq, s->len, KILL_BOUND_NS / 1000000000ull, peer);
	if (s->op == SOAK_GETPUT) {
		w->swap[peer].uncertain = 1;
		w->swap[peer].pending = s->seq;
	}
	release(w, s);
}

static void check_swap(struct soak_w *w, unsigned peer, const ptl_event_t *ev)
{
	struct soak_slot *s = &w->slot[peer];
	struct soak_peer *p = &w->st->peer[peer];
	struct soak_swap_state *ss = &w->swap[peer];
	unsigned src = 0, inc = 0;
	uint64_t seq = 0;
	int r = ev->mlength == s->len ? soak_rec_parse(s->rbuf, s->len, w->seed, &src, &inc, &seq) : -1;
	/* kills when it started: a kill during the GetPut may have wiped it */
	uint32_t kills = s->peer_kills0;
	int ok;

	if (r < 0 || (r == 1 && src != w->me)) {
		p->i_corrupt[SOAK_GETPUT]++;
		soak_log(w, "CORRUPT getput reply from rank %u (seq %llu, %zu bytes, mlength %llu)", peer,
		         (unsigned long long)s->seq, s->len, (unsigned long long)ev->mlength);
		return;
	}
	/* What must be there: our last record, unless the target restarted
	 * since (then nothing) or a GetPut failed since (then that one's, maybe). */
	if (!ss->have)
		ok = r == 0 || inc < w->inc || (ss->uncertain && inc == w->inc && seq == ss->pending);
	else if (w->job->rank[peer].kills != ss->kills)
		ok = r == 0 || (inc == w->inc && (seq == ss->seq || (ss->uncertain && seq == ss->pending)));
	else
		ok = r == 1 && inc == w->inc && (seq == ss->seq || (ss->uncertain && seq == ss->pending));
	if (!ok) {
		if (r == 0 || inc != w->inc || seq < ss->seq)
			p->i_lost++;
		else
			p->i_corrupt[SOAK_GETPUT]++;
		soak_log(w, "getput to rank %u (seq %llu) found %s inc %u seq %llu, expected our seq %llu (have %d, uncertain %d)",
		         peer, (unsigned long long)s->seq, r == 0 ? "nothing" : "a record", inc,
		         (unsigned long long)seq, (unsigned long long)ss->seq, ss->have, ss->uncertain);
	}
	ss->have = 1;
	ss->seq = s->seq;
	ss->kills = kills;
	ss->uncertain = 0;
}

static void complete(struct soak_w *w, unsigned peer, const ptl_event_t *last)
{
	struct soak_slot *s = &w->slot[peer];
	struct soak_peer *p = &w->st->peer[peer];
	long bad;

	switch (s->op) {
	case SOAK_PUT:
		break; /* the ACK's mlength was checked when it came */
	case SOAK_GET:
		bad = soak_check(s->rbuf, s->len, soak_get_key(w->seed, peer), s->off);
		if (bad >= 0) {
			p->i_corrupt[SOAK_GET]++;
			soak_log(w, "CORRUPT get from rank %u (offset %llu, %zu bytes): byte %ld", peer,
			         (unsigned long long)s->off, s->len, bad);
			release(w, s);
			return;
		}
		break;
	default:
		check_swap(w, peer, last);
		break;
	}
	p->i_ok[s->op]++;
	p->i_bytes[s->op] += s->len;
	w->kills_seen[peer] = s->peer_kills0;
	release(w, s);
}

void soak_op_event(struct soak_w *w, const ptl_event_t *ev)
{
	uint64_t tag = (uint64_t)(uintptr_t)ev->md.user_ptr;
	unsigned peer = (unsigned)(tag >> 48) - 1;
	struct soak_slot *s;

	if (peer >= w->n || !w->slot[peer].busy ||
	    (w->slot[peer].serial & 0xffffffffffffull) != (tag & 0xffffffffffffull)) {
		w->st->late_events++;
		return;
	}
	s = &w->slot[peer];
	if (ev->ni_fail_type != PTL_NI_OK) {
		char why[64];
		snprintf(why, sizeof(why), "failed (%s, ni_fail_type %u)", PtlEventKindStr(ev->type),
		         (unsigned)ev->ni_fail_type);
		fail(w, peer, why, 0,
		     ev->ni_fail_type == PTL_NI_PEER_DEAD || ev->ni_fail_type == PTL_NI_PEER_RESTARTED);
		return;
	}
	switch (ev->type) {
	case PTL_EVENT_SEND_END:
		s->need &= ~NEED_SEND;
		break;
	case PTL_EVENT_ACK:
		if (ev->mlength != s->len) {
			w->st->peer[peer].i_corrupt[SOAK_PUT]++;
			soak_log(w, "put to rank %u: ACK mlength %llu for %zu bytes", peer,
			         (unsigned long long)ev->mlength, s->len);
		}
		s->need &= ~NEED_ACK;
		break;
	case PTL_EVENT_REPLY_END:
		s->need &= ~NEED_REPLY;
		break;
	case PTL_EVENT_SEND_START:
	case PTL_EVENT_REPLY_START:
		return;
	default:
		w->st->odd_events++;
		soak_log(w, "unexpected %s on an initiator MD", PtlEventKindStr(ev->type));
		return;
	}
	if (!s->need)
		complete(w, peer, ev);
}

void soak_check_timeouts(struct soak_w *w, int draining)
{
	uint64_t now = soak_now_ns();
	uint64_t limit = (uint64_t)w->job->op_timeout_ms * 1000000ull;

	for (unsigned p = 0; p < w->n; p++) {
		struct soak_slot *s = &w->slot[p];
		if (!s->busy)
			continue;
		if (killed_since(w, p) && now - s->start_ns > KILL_BOUND_NS)
			stuck_after_kill(w, p);
		else if (now - s->start_ns > limit || draining > 1)
			fail(w, p, draining > 1 ? "still in flight at the end of the drain" : "timed out", 1, 0);
	}
}
