/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_target.c - what a p3soak worker exposes and checks as a target.
 *
 * Three MEs on SOAK_PT, any initiator, each with one MANAGE_REMOTE MD:
 *   put  area: per source SOAK_PUT_SLOTS slots of max_size; put number seq
 *              of a source lands in slot seq % SOAK_PUT_SLOTS, so a put is
 *              overwritten only SOAK_PUT_SLOTS puts later by its own source;
 *   get  area: SOAK_GET_AREA constant bytes (soak_get_key of this rank);
 *   swap area: per source SOAK_SWAP_SLOT bytes for its GetPut records.
 * On PUT_END every delivered byte is checked against the stream the header
 * data names; a sequence seen twice (same source incarnation) is a
 * duplicate delivery.
 *
 * The checks run in the MDs' event-queue handler, when the event is posted,
 * in whichever thread runs the LIB side: with PTL_PROGRESS=thread the
 * target's data and events move while the worker is busy elsewhere, so a
 * check made later, from the queue, could find a put already overwritten by
 * the source's next one into the slot (the ACK went out long ago) and the
 * queue overflowed (no flow control between the sources and our polling).
 * While the handler runs, that thread takes nothing more off the wire.
 */
#include "soak_worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The worker whose target side the handler checks (one per process), and
 * the lock that keeps two LIB threads from checking at once (app progress:
 * every API caller runs the LIB side). */
static struct soak_w *target_w;
static pthread_mutex_t target_lock = PTHREAD_MUTEX_INITIALIZER;

static void target_handler(ptl_event_t *ev)
{
	pthread_mutex_lock(&target_lock);
	soak_target_event(target_w, ev);
	pthread_mutex_unlock(&target_lock);
}

static int attach(struct soak_w *w, ptl_match_bits_t bits, void *start, size_t len,
                  unsigned options)
{
	ptl_process_id_t any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	ptl_md_t d;
	int rc = PtlMEAttach(w->ni, SOAK_PT, any, bits, 0, PTL_RETAIN, PTL_INS_AFTER, &me);

	if (rc != PTL_OK) {
		soak_log(w, "PtlMEAttach: %s", PtlErrorStr((unsigned)rc));
		return -1;
	}
	memset(&d, 0, sizeof(d));
	d.start = start;
	d.length = len;
	d.threshold = PTL_MD_THRESH_INF;
	d.options = options | PTL_MD_MANAGE_REMOTE;
	d.eq_handle = w->teq;
	d.user_ptr = NULL; /* target MDs: user_ptr 0 */
	rc = PtlMDAttach(me, d, PTL_RETAIN, &md);
	if (rc != PTL_OK) {
		soak_log(w, "PtlMDAttach: %s", PtlErrorStr((unsigned)rc));
		return -1;
	}
	return 0;
}

int soak_target_setup(struct soak_w *w)
{
	size_t n = w->n;
	int rc;

	w->put_per_src = SOAK_PUT_SLOTS * w->max_size;
	w->put_area = calloc(n, w->put_per_src);
	w->get_area = malloc(SOAK_GET_AREA);
	w->swap_area = calloc(n, SOAK_SWAP_SLOT);
	if (!w->put_area || !w->get_area || !w->swap_area) {
		soak_log(w, "out of memory for the target areas");
		return -1;
	}
	soak_fill(w->get_area, SOAK_GET_AREA, soak_get_key(w->seed, w->me), 0);
	/* The handler sees every event; the queue's own copies are never
	 * read (a small ring that wraps, harmlessly). */
	target_w = w;
	rc = PtlEQAlloc(w->ni, 64, target_handler, &w->teq);
	if (rc != PTL_OK) {
		soak_log(w, "PtlEQAlloc (target): %s", PtlErrorStr((unsigned)rc));
		return -1;
	}
	if (attach(w, SOAK_BITS_PUT, w->put_area, n * w->put_per_src, PTL_MD_OP_PUT) ||
	    attach(w, SOAK_BITS_GET, w->get_area, SOAK_GET_AREA, PTL_MD_OP_GET) ||
	    attach(w, SOAK_BITS_SWAP, w->swap_area, n * SOAK_SWAP_SLOT, PTL_MD_OP_PUT | PTL_MD_OP_GET))
		return -1;
	return 0;
}

/* 1: a new (incarnation, sequence) of src for kind op; 0: seen before */
static int fresh(struct soak_w *w, unsigned src, enum soak_op op, unsigned inc, uint64_t seq,
                 struct soak_peer *p)
{
	if (!w->t_seen[src][op] || inc > w->t_inc[src][op]) {
		w->t_seen[src][op] = 1;
		w->t_inc[src][op] = inc;
		w->t_seq[src][op] = seq;
		return 1;
	}
	if (inc < w->t_inc[src][op]) { /* from a killed incarnation, after its successor */
		p->t_put_stale++;
		return 1;
	}
	if (seq <= w->t_seq[src][op])
		return 0;
	w->t_seq[src][op] = seq;
	return 1;
}

/* Diagnosis of a corrupted put: do the wrong bytes belong to an older put
 * of the same source into this slot (a stale or duplicated delivery)? */
static const char *older_origin(struct soak_w *w, const unsigned char *at, size_t len,
                                unsigned src, unsigned inc, uint64_t seq)
{
	static char why[160];
	uint64_t key = soak_key(w->seed, src, inc, seq, SOAK_PUT);
	size_t wrong = 0, first = len, last = 0;

	for (size_t k = 0; k < len; k++)
		if (at[k] != soak_byte(key, k)) {
			wrong++;
			first = first < k ? first : k;
			last = k;
		}
	snprintf(why, sizeof(why), "%zu wrong bytes in [%zu, %zu]", wrong, first, last);
	for (uint64_t old = seq; old >= SOAK_PUT_SLOTS && old + 8 * SOAK_PUT_SLOTS > seq;) {
		old -= SOAK_PUT_SLOTS;
		if (soak_check(at + first, last - first + 1,
		               soak_key(w->seed, src, inc, old, SOAK_PUT), first) < 0) {
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
			         ", all of them those of the older put seq %llu", (unsigned long long)old);
			break;
		}
	}
	return why;
}

static void check_put(struct soak_w *w, const ptl_event_t *ev, unsigned src, unsigned inc,
                      uint64_t seq, struct soak_peer *p)
{
	uint64_t want_off = src * w->put_per_src + (seq % SOAK_PUT_SLOTS) * w->max_size;
	const unsigned char *at = w->put_area + ev->offset;
	long bad;

	if (!fresh(w, src, SOAK_PUT, inc, seq, p)) {
		p->t_put_dup++;
		soak_log(w, "DUPLICATE put from rank %u inc %u seq %llu", src, inc,
		         (unsigned long long)seq);
		return;
	}
	if (ev->offset != want_off || ev->mlength != ev->rlength ||
	    ev->mlength > w->max_size) {
		p->t_put_corrupt++;
		soak_log(w, "put from rank %u seq %llu: offset %llu mlength %llu rlength %llu, want offset %llu",
		         src, (unsigned long long)seq, (unsigned long long)ev->offset,
		         (unsigned long long)ev->mlength, (unsigned long long)ev->rlength,
		         (unsigned long long)want_off);
		return;
	}
	bad = soak_check(at, ev->mlength, soak_key(w->seed, src, inc, seq, SOAK_PUT), 0);
	if (bad >= 0) {
		/* the source may have moved on: a later put of its own in this slot */
		for (uint64_t later = seq + SOAK_PUT_SLOTS; later < seq + 4 * SOAK_PUT_SLOTS;
		     later += SOAK_PUT_SLOTS)
			if (soak_byte(soak_key(w->seed, src, inc, later, SOAK_PUT), (uint64_t)bad) ==
			    at[bad]) {
				p->t_put_overwritten++;
				return;
			}
		p->t_put_corrupt++;
		soak_log(w, "CORRUPT put from rank %u inc %u seq %llu len %llu: byte %ld is 0x%02x, want 0x%02x; %s",
		         src, inc, (unsigned long long)seq, (unsigned long long)ev->mlength, bad, at[bad],
		         soak_byte(soak_key(w->seed, src, inc, seq, SOAK_PUT), (uint64_t)bad),
		         older_origin(w, at, ev->mlength, src, inc, seq));
		return;
	}
	p->t_put++;
	p->t_put_bytes += ev->mlength;
}

void soak_target_event(struct soak_w *w, const ptl_event_t *ev)
{
	unsigned src, inc;
	uint64_t seq;
	struct soak_peer *p;

	if (ev->type != PTL_EVENT_PUT_END && ev->type != PTL_EVENT_GET_END &&
	    ev->type != PTL_EVENT_GETPUT_END)
		return; /* the START events carry nothing to check */
	soak_hdr_split(ev->hdr_data, &src, &inc, &seq);
	if (ev->type == PTL_EVENT_GET_END) { /* gets carry no header data */
		for (src = 0; src < w->n; src++)
			if (w->id[src].nid == ev->initiator.nid && w->id[src].pid == ev->initiator.pid)
				break;
		if (src < w->n)
			w->st->peer[src].t_get++;
		return;
	}
	if (src >= w->n || w->id[src].nid != ev->initiator.nid ||
	    w->id[src].pid != ev->initiator.pid) {
		p = &w->st->peer[src < w->n ? src : w->me];
		p->t_bad_initiator++;
		soak_log(w, "event %s: header says rank %u, initiator is %u/%u",
		         PtlEventKindStr(ev->type), src, (unsigned)ev->initiator.nid,
		         (unsigned)ev->initiator.pid);
		return;
	}
	p = &w->st->peer[src];
	if (ev->ni_fail_type != PTL_NI_OK) {
		/* the NAL says the data did not all arrive (its sender died or
		 * restarted mid-message): nothing to check, nothing delivered */
		p->t_failed++;
		return;
	}
	if (ev->type == PTL_EVENT_PUT_END) {
		check_put(w, ev, src, inc, seq, p);
		return;
	}
	/* GETPUT_END: the initiator checks the contents (it knows what it left) */
	if (!fresh(w, src, SOAK_GETPUT, inc, seq, p)) {
		p->t_swap_dup++;
		soak_log(w, "DUPLICATE getput from rank %u inc %u seq %llu", src, inc,
		         (unsigned long long)seq);
		return;
	}
	p->t_swap++;
}
