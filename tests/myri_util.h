/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * myri_util.h - the Portals scaffolding the myrinet test programs share
 * (myri_dmafail.c, myri_lastack.c, myri_intr.c, myri_peerdeath.c): one NI
 * and one EQ per process, the start of a two-rank ptlrun job, MEs and MDs
 * with the options the tests use, bounded event waits and the "sync put"
 * handshake (a zero-byte put repeated until the peer acknowledges it).
 * Every helper stops the program (exit 1, with the call and its error on
 * stderr) when a Portals call fails: a test's own checks are its business.
 */
#ifndef P3_MYRI_UTIL_H
#define P3_MYRI_UTIL_H

#include <portals3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The process's NI and EQ (mu_init_pair / mu_init_ni). */
extern ptl_handle_ni_t mu_ni;
extern ptl_handle_eq_t mu_eq;
/* The program's name in messages. */
extern const char *mu_prog;

/* MU_CHECK(call): a Portals call that must return PTL_OK, else exit(1). */
#define MU_CHECK(call)                                                                             \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != PTL_OK) {                                                               \
			fprintf(stderr, "%s: %s: %s\n", mu_prog, #call, PtlErrorStr(rc_));         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Match any bits / header data in the waits below. */
#define MU_ANY ((uint64_t)-1)

/* A ptlrun job of two ranks: PtlInit, the runtime's rank (PtlSetRank), the
 * default interface, an EQ of eq_len entries.  Returns this rank (0 or 1)
 * and the other one's id in *peer; exits if the job is not two ranks. */
unsigned mu_init_pair(const char *prog, unsigned eq_len, ptl_process_id_t *peer);
/* Without a runtime: PtlInit, the NI of iface with pid, an EQ of eq_len. */
void mu_init_ni(const char *prog, ptl_interface_t iface, ptl_pid_t pid, unsigned eq_len);
/* PtlNIFini and PtlFini. */
void mu_fini(void);

/* An ME matching bits exactly (any source) on pt, after the others, with an
 * MD over buf that posts to mu_eq; returns the MD. */
ptl_handle_md_t mu_attach(ptl_pt_index_t pt, ptl_match_bits_t bits, void *buf, size_t len,
                          int threshold, unsigned options);
/* A free-floating MD over buf (infinite threshold, events to mu_eq). */
ptl_handle_md_t mu_bind(void *buf, size_t len);

/* One event within ms: 1, or 0 if none came (a dropped event is fatal). */
int mu_poll(ptl_event_t *ev, int ms);
/* The next event of kind whose match bits are bits (MU_ANY: any) within ms,
 * other events passing: 1, or 0 if none came. */
int mu_wait_event(ptl_event_kind_t kind, uint64_t bits, ptl_event_t *ev, int ms);
/* The next PUT_END with these match bits and header data (MU_ANY: any)
 * within ms: 1, or 0. */
int mu_wait_put(uint64_t bits, uint64_t hdr_data, int ms);
/* A zero-byte put with ACK to peer's (pt, bits) carrying hdr_data, repeated
 * (up to 100 times, 200 ms apart) until an ACK without failure comes: the
 * peer may not have attached its ME yet, and Portals drops what matches
 * nothing.  Exits if it never comes. */
void mu_sync_put(ptl_process_id_t peer, ptl_pt_index_t pt, ptl_match_bits_t bits,
                 ptl_hdr_data_t hdr_data);

/* Milliseconds of CLOCK_REALTIME (to set beside `date +%s%3N` in a script)
 * and of CLOCK_MONOTONIC. */
uint64_t mu_wall_ms(void);
uint64_t mu_mono_ms(void);

#endif
