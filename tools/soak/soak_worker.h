/* SPDX-License-Identifier: BSD-3-Clause */
/* soak_worker.h - state of one p3soak worker rank (internal). */
#ifndef P3_SOAK_WORKER_H
#define P3_SOAK_WORKER_H

#include "soak.h"

#include <portals3.h>

/* need bits: events an initiator operation waits for */
#define NEED_SEND  1u /* SEND_END of the put MD */
#define NEED_ACK   2u
#define NEED_REPLY 4u /* REPLY_END of the get MD */

/* One initiator operation slot per peer: at most one operation in flight
 * per (initiator, target) pair, so the target's slot contents are known. */
struct soak_slot {
	int busy;
	int parked; /* finished, but an MD could not be unlinked yet */
	enum soak_op op;
	uint64_t serial, seq, off;
	size_t len;
	uint64_t start_ns;
	uint32_t peer_kills0;     /* the target's kill count when it started */
	uint32_t peer_kills_seen; /* ... when we last completed an op to it */
	unsigned need;
	ptl_handle_md_t md[2];
	int nmd;
	unsigned char *sbuf, *rbuf;
};

/* what this initiator knows of its GetPut record at each target */
struct soak_swap_state {
	int have;         /* a GetPut to it completed in this incarnation */
	uint64_t seq;     /* ... with this sequence */
	uint32_t kills;   /* the target's kill count when it completed */
	int uncertain;    /* a later GetPut failed: it may or may not have landed */
	uint64_t pending; /* ... that one's sequence */
};

struct soak_w {
	struct soak_job *job;
	struct soak_stats *st;
	unsigned me, inc, n;
	uint64_t seed, rng, serial;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;  /* our operations' events, polled */
	ptl_handle_eq_t teq; /* the target MDs': checked by its handler (soak_target.c) */
	ptl_process_id_t id[SOAK_MAX_RANKS];
	unsigned char *put_area, *get_area, *swap_area;
	size_t put_per_src; /* SOAK_PUT_SLOTS * max_size */
	size_t max_size, max_swap;
	unsigned inflight;
	uint64_t seq[SOAK_MAX_RANKS][SOAK_NOPS];
	struct soak_swap_state swap[SOAK_MAX_RANKS];
	uint32_t kills_seen[SOAK_MAX_RANKS]; /* per peer, see soak_ops.c */
	/* target side: last (incarnation, sequence) seen per source and kind */
	int t_seen[SOAK_MAX_RANKS][SOAK_NOPS];
	unsigned t_inc[SOAK_MAX_RANKS][SOAK_NOPS];
	uint64_t t_seq[SOAK_MAX_RANKS][SOAK_NOPS];
	struct soak_slot slot[SOAK_MAX_RANKS];
};

uint64_t soak_rand(struct soak_w *w);
void soak_log(struct soak_w *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* soak_ops.c: the initiator side */
int soak_issue(struct soak_w *w, unsigned peer);
void soak_op_event(struct soak_w *w, const ptl_event_t *ev);
void soak_check_timeouts(struct soak_w *w, int draining);
void soak_retry_parked(struct soak_w *w);

/* soak_target.c: the target side (events checked as they are posted) */
int soak_target_setup(struct soak_w *w);
void soak_target_event(struct soak_w *w, const ptl_event_t *ev);

#endif
