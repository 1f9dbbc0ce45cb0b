/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak.h - shared pieces of p3soak (tools/soak/README.md).
 *
 * p3soak runs as a supervisor that starts N worker ranks of one Portals job,
 * kills and restarts them (each restart is a new incarnation, "inc"), and as
 * those workers.  The two talk through files only, so that a SIGKILLed worker
 * loses nothing it already counted:
 *   job file   (struct soak_job)   written by the supervisor: configuration,
 *                                  per-rank incarnation, kill count, stop;
 *   stats file (struct soak_stats) one per (rank, incarnation), MAP_SHARED,
 *                                  written by that worker as it goes.
 * Every byte moved is derived from (seed, source, incarnation, sequence,
 * offset), so the receiver checks it without any other information.
 */
#ifndef P3_SOAK_H
#define P3_SOAK_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#define SOAK_MAX_RANKS 64
#define SOAK_NREGS     64
#define SOAK_JOB_MAGIC 0x50335350414b4a31ull  /* "P3SPAKJ1" */
#define SOAK_ST_MAGIC  0x50335350414b5331ull  /* "P3SPAKS1" */

/* operation kinds (bit i of soak_job.ops) */
enum soak_op { SOAK_PUT = 0, SOAK_GET = 1, SOAK_GETPUT = 2, SOAK_NOPS };

/* Target memory: match bits of the three MEs every worker attaches. */
#define SOAK_PT        6
#define SOAK_BITS_PUT  1
#define SOAK_BITS_GET  2
#define SOAK_BITS_SWAP 3
#define SOAK_PUT_SLOTS 8          /* per source: puts rotate over these */
#define SOAK_GET_AREA  (256u << 10)
#define SOAK_SWAP_SLOT 4096u      /* per source, for GetPut records */
#define SOAK_REC_HDR   32u        /* GetPut record header (soak_rec_*) */

struct soak_rank_ctl {
	volatile uint32_t inc;     /* current incarnation (0, 1, ...) */
	volatile uint32_t alive;   /* 0 between a kill and the restart */
	volatile uint32_t ready;   /* the incarnation attached its MEs */
	volatile uint32_t kills;   /* times the supervisor killed it */
	volatile uint32_t drained; /* stopped issuing, nothing in flight */
	volatile int32_t ospid;
};

struct soak_job {
	uint64_t magic;
	uint64_t seed;
	uint32_t nranks;
	uint32_t hosts;        /* rank r on host r % hosts (1: one host) */
	uint32_t cross_only;   /* talk only to ranks on other hosts (ether) */
	uint32_t ops;          /* mask of 1 << enum soak_op */
	uint32_t max_size;     /* largest put/get (the put slot size) */
	uint32_t window;       /* operations in flight per rank */
	uint32_t op_timeout_ms;
	volatile uint32_t stop;   /* 1: stop issuing and drain */
	volatile uint32_t finish; /* 1: everyone drained: finalize */
	struct soak_rank_ctl rank[SOAK_MAX_RANKS];
	char dir[512]; /* work directory: stats files, logs */
};

/* Per peer, as initiator towards it (i_*) and as target of it (t_*). */
struct soak_peer {
	uint64_t i_issued[SOAK_NOPS], i_ok[SOAK_NOPS], i_bytes[SOAK_NOPS];
	uint64_t i_failed_kill[SOAK_NOPS]; /* failed or abandoned: a rank died */
	uint64_t i_failed[SOAK_NOPS];      /* failed with no kill to explain it */
	uint64_t i_stuck[SOAK_NOPS];       /* no completion, no kill */
	uint64_t i_corrupt[SOAK_NOPS];     /* get/getput data, ack length */
	uint64_t i_lost;                   /* getput: the last record vanished */
	uint64_t t_put, t_put_bytes, t_put_corrupt, t_put_dup, t_put_stale, t_put_overwritten;
	uint64_t t_swap, t_swap_dup, t_get;
	uint64_t t_bad_initiator; /* the event's initiator is not the rank in hdr_data */
	uint64_t t_failed;        /* PUT_END/GETPUT_END with ni_fail_type set */
};

struct soak_stats {
	uint64_t magic;
	uint32_t rank, inc;
	volatile uint32_t finished; /* clean exit after the drain */
	uint32_t nregs;
	uint64_t eq_dropped, late_events, odd_events, drain_abandoned;
	uint64_t regs[SOAK_NREGS]; /* PtlNIStatus(PTL_SR_NAL_BASE + i) at the end */
	struct soak_peer peer[SOAK_MAX_RANKS];
};

/* ---- content (soak_pattern.c) ------------------------------------------ */

uint64_t soak_mix(uint64_t x);
/* key of one message's bytes */
uint64_t soak_key(uint64_t seed, unsigned src, unsigned inc, uint64_t seq, enum soak_op op);
/* key of rank `rank`'s (constant) get area */
uint64_t soak_get_key(uint64_t seed, unsigned rank);
/* byte `off` of the stream `key` */
unsigned char soak_byte(uint64_t key, uint64_t off);
void soak_fill(unsigned char *buf, size_t len, uint64_t key, uint64_t off);
/* index of the first wrong byte, or -1 */
long soak_check(const unsigned char *buf, size_t len, uint64_t key, uint64_t off);

/* hdr_data: source rank (16 bits) | incarnation (16) | sequence (32) */
uint64_t soak_hdr(unsigned src, unsigned inc, uint64_t seq);
void soak_hdr_split(uint64_t h, unsigned *src, unsigned *inc, uint64_t *seq);

/* GetPut records: {magic, src, inc, seq, len} then soak_key bytes */
void soak_rec_fill(unsigned char *buf, size_t len, uint64_t seed, unsigned src, unsigned inc,
                   uint64_t seq);
/* What `buf` (len bytes read back) holds: 0 all zero (never written),
 * 1 a record whose readable part is intact (fields returned), -1 garbage. */
int soak_rec_parse(const unsigned char *buf, size_t len, uint64_t seed, unsigned *src,
                   unsigned *inc, uint64_t *seq);

/* ---- files and time (soak_util.c) -------------------------------------- */

uint64_t soak_now_ns(void);
/* map a file of `size` bytes (created and zeroed when `create`) */
void *soak_map(const char *path, size_t size, int create);
void soak_stats_path(char *out, size_t n, const char *dir, unsigned rank, unsigned inc);

/* ---- the two roles ----------------------------------------------------- */

int soak_worker_main(const char *job_path);
int soak_super_main(int argc, char **argv);
/* report over every stats file of `job`; returns the number of failures */
uint64_t soak_report(const struct soak_job *job, FILE *out, double seconds, unsigned kills,
                     unsigned crashes, const char *nal);

#endif
