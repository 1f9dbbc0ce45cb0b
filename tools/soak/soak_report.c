/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_report.c - p3soak's end-of-run report: every stats file of every
 * incarnation summed per (initiator, target) pair and checked.
 *
 * Failures (the run passes only with 0):
 *   corrupted   a byte, length or header that is not what the sender sent
 *   duplicated  a put or GetPut delivered twice to one incarnation
 *   lost        a GetPut record that vanished without a kill of its target;
 *               more puts acknowledged than the target recorded (beyond one
 *               per kill of the target: acked, then killed before it looked);
 *               for pairs never killed: acknowledged != recorded
 *   failed      an operation that failed with no kill to explain it
 *   stuck       an operation that neither completed nor failed in time
 *   crashed     a worker that exited by itself (not killed by us) or did not
 *               finish cleanly; event-queue overflows; unexpected events
 */
#include "soak.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "rmpp.h"

static const char *const rmpp_names[] = {
#define SOAK_RMPP_NAME(name, help) #name,
    RMPP_COUNTERS(SOAK_RMPP_NAME)
#undef SOAK_RMPP_NAME
};

struct pair_sum {
	struct soak_peer i; /* initiator's view (s -> d) */
	struct soak_peer t; /* target's view (d of s) */
};

struct report_sum {
	struct pair_sum pair[SOAK_MAX_RANKS][SOAK_MAX_RANKS];
	uint64_t regs[SOAK_NREGS];
	unsigned nregs, finished_incs, incs, unfinished;
	uint64_t eq_dropped, late, odd, drain_abandoned;
};

static struct report_sum R;

static void add_peer(struct soak_peer *a, const struct soak_peer *b)
{
	uint64_t *x = (uint64_t *)a;
	const uint64_t *y = (const uint64_t *)b;
	for (size_t k = 0; k < sizeof(*a) / sizeof(uint64_t); k++)
		x[k] += y[k];
}

static void add_file(const struct soak_job *job, unsigned r, const struct soak_stats *st, int last)
{
	R.incs++;
	if (st->finished) {
		R.finished_incs++;
		for (unsigned i = 0; i < st->nregs && i < SOAK_NREGS; i++)
			R.regs[i] += st->regs[i];
		if (st->nregs > R.nregs)
			R.nregs = st->nregs;
	} else if (last) {
		R.unfinished++; /* the last incarnation must end cleanly */
	}
	R.eq_dropped += st->eq_dropped;
	R.late += st->late_events;
	R.odd += st->odd_events;
	R.drain_abandoned += st->drain_abandoned;
	for (unsigned p = 0; p < job->nranks; p++) {
		add_peer(&R.pair[r][p].i, &st->peer[p]); /* r initiated towards p */
		add_peer(&R.pair[p][r].t, &st->peer[p]); /* r was the target of p */
	}
}

static uint64_t sum_op(uint64_t (*f)(const struct soak_peer *, int), int op, unsigned n, int tgt)
{
	uint64_t s = 0;
	for (unsigned a = 0; a < n; a++)
		for (unsigned b = 0; b < n; b++)
			s += f(tgt ? &R.pair[a][b].t : &R.pair[a][b].i, op);
	return s;
}
#define FIELD_FN(name, expr) \
	static uint64_t name(const struct soak_peer *p, int op) { (void)op; return (expr); }
FIELD_FN(f_issued, p->i_issued[op])
FIELD_FN(f_ok, p->i_ok[op])
FIELD_FN(f_bytes, p->i_bytes[op])
FIELD_FN(f_fkill, p->i_failed_kill[op])
FIELD_FN(f_failed, p->i_failed[op])
FIELD_FN(f_stuck, p->i_stuck[op])
FIELD_FN(f_corrupt, p->i_corrupt[op])
FIELD_FN(f_lost, p->i_lost)
FIELD_FN(f_tput, p->t_put)
FIELD_FN(f_tputb, p->t_put_bytes)
FIELD_FN(f_tcorrupt, p->t_put_corrupt + p->t_bad_initiator)
FIELD_FN(f_tdup, p->t_put_dup + p->t_swap_dup)
FIELD_FN(f_tstale, p->t_put_stale)
FIELD_FN(f_tover, p->t_put_overwritten)
FIELD_FN(f_tswap, p->t_swap)
FIELD_FN(f_tget, p->t_get)
FIELD_FN(f_tfailed, p->t_failed)

/* puts acknowledged to s by d vs puts d recorded from s */
static uint64_t pair_losses(const struct soak_job *job, FILE *out)
{
	uint64_t lost = 0;
	for (unsigned s = 0; s < job->nranks; s++)
		for (unsigned d = 0; d < job->nranks; d++) {
			const struct pair_sum *ps = &R.pair[s][d];
			uint64_t acked = ps->i.i_ok[SOAK_PUT];
			uint64_t got = ps->t.t_put + ps->t.t_put_overwritten + ps->t.t_put_corrupt;
			uint64_t slack = job->rank[d].kills;
			int strict = job->rank[s].kills == 0 && job->rank[d].kills == 0;
			if (acked > got + slack || (strict && acked != got)) {
				fprintf(out, "LOST: rank %u -> %u: %llu puts acknowledged, %llu recorded by the target (%u kills of it)\n",
				        s, d, (unsigned long long)acked, (unsigned long long)got, job->rank[d].kills);
				lost += acked > got ? acked - got : 1;
			}
			if (got > ps->i.i_issued[SOAK_PUT]) {
				fprintf(out, "DUPLICATED: rank %u -> %u: %llu puts recorded, %llu issued\n", s, d,
				        (unsigned long long)got, (unsigned long long)ps->i.i_issued[SOAK_PUT]);
				lost += got - ps->i.i_issued[SOAK_PUT];
			}
		}
	return lost;
}

static void print_regs(FILE *out, const char *nal)
{
	int rmpp = strcmp(nal, "udp") == 0 || strcmp(nal, "ether") == 0;
	size_t nn = sizeof(rmpp_names) / sizeof(rmpp_names[0]);
	fprintf(out, "nal counters (sum over %u cleanly finished incarnations):", R.finished_incs);
	for (unsigned i = 0; i < R.nregs; i++)
		if (R.regs[i]) {
			if (rmpp && i < nn)
				fprintf(out, " %s=%llu", rmpp_names[i], (unsigned long long)R.regs[i]);
			else
				fprintf(out, " nal[%u]=%llu", i, (unsigned long long)R.regs[i]);
		}
	fputc('\n', out);
	if (rmpp && nn > 40) {
		uint64_t f[5] = {0};
		for (unsigned i = 0; i < nn && i < R.nregs; i++) {
			const char *k = rmpp_names[i];
			f[0] += strcmp(k, "fault_drops") == 0 ? R.regs[i] : 0;
			f[1] += strcmp(k, "fault_dups") == 0 ? R.regs[i] : 0;
			f[2] += strcmp(k, "fault_reorders") == 0 ? R.regs[i] : 0;
			f[3] += strcmp(k, "fault_corrupts") == 0 ? R.regs[i] : 0;
			f[4] += strcmp(k, "csum_drops") == 0 ? R.regs[i] : 0;
		}
		fprintf(out, "faults (in-process shim): dropped %llu duplicated %llu reordered %llu corrupted %llu; crc drops %llu\n",
		        (unsigned long long)f[0], (unsigned long long)f[1], (unsigned long long)f[2],
		        (unsigned long long)f[3], (unsigned long long)f[4]);
	}
}

uint64_t soak_report(const struct soak_job *job, FILE *out, double seconds, unsigned kills,
                     unsigned crashes, const char *nal)
{
	static const char *const opname[SOAK_NOPS] = {"put", "get", "getput"};
	unsigned n = job->nranks;
	uint64_t corrupt, dup, lost, failed, stuck, ops = 0, bytes = 0, fails;

	memset(&R, 0, sizeof(R));
	for (unsigned r = 0; r < n; r++)
		for (unsigned inc = 0; inc <= job->rank[r].inc; inc++) {
			char path[600];
			struct soak_stats *st;
			soak_stats_path(path, sizeof(path), job->dir, r, inc);
			st = soak_map(path, sizeof(*st), 0);
			if (!st || st->magic != SOAK_ST_MAGIC) {
				/* killed before it created its file: nothing was counted */
				if (st)
					munmap(st, sizeof(*st));
				continue;
			}
			add_file(job, r, st, inc == job->rank[r].inc);
			munmap(st, sizeof(*st));
		}
	fprintf(out, "p3soak report: nal %s, %u ranks, seed %llu, %.0f s, %u kills/restarts, %u incarnations\n",
	        nal, n, (unsigned long long)job->seed, seconds, kills, R.incs);
	for (int op = 0; op < SOAK_NOPS; op++) {
		if (!(job->ops & (1u << op)))
			continue;
		fprintf(out, "%-7s issued %llu ok %llu bytes %llu; failed under a kill %llu\n", opname[op],
		        (unsigned long long)sum_op(f_issued, op, n, 0), (unsigned long long)sum_op(f_ok, op, n, 0),
		        (unsigned long long)sum_op(f_bytes, op, n, 0), (unsigned long long)sum_op(f_fkill, op, n, 0));
		ops += sum_op(f_ok, op, n, 0);
		bytes += sum_op(f_bytes, op, n, 0);
	}
	fprintf(out, "target  puts verified %llu (%llu bytes), overwritten before checked %llu, from a dead incarnation %llu; getputs %llu; gets served %llu; arrivals failed by the NAL %llu\n",
	        (unsigned long long)sum_op(f_tput, 0, n, 1), (unsigned long long)sum_op(f_tputb, 0, n, 1),
	        (unsigned long long)sum_op(f_tover, 0, n, 1), (unsigned long long)sum_op(f_tstale, 0, n, 1),
	        (unsigned long long)sum_op(f_tswap, 0, n, 1), (unsigned long long)sum_op(f_tget, 0, n, 1),
	        (unsigned long long)sum_op(f_tfailed, 0, n, 1));
	print_regs(out, nal);
	corrupt = sum_op(f_tcorrupt, 0, n, 1);
	failed = stuck = 0;
	for (int op = 0; op < SOAK_NOPS; op++) {
		corrupt += sum_op(f_corrupt, op, n, 0);
		failed += sum_op(f_failed, op, n, 0);
		stuck += sum_op(f_stuck, op, n, 0);
	}
	dup = sum_op(f_tdup, 0, n, 1);
	lost = sum_op(f_lost, 0, n, 0) + pair_losses(job, out);
	fails = corrupt + dup + lost + failed + stuck + crashes + R.unfinished + R.eq_dropped + R.odd;
	fprintf(out, "operations completed %llu, bytes verified %llu (late events ignored %llu)\n",
	        (unsigned long long)ops, (unsigned long long)bytes, (unsigned long long)R.late);
	fprintf(out, "failures: corrupted %llu duplicated %llu lost %llu failed %llu stuck %llu crashed %u unfinished %u eq-overflow %llu odd-events %llu\n",
	        (unsigned long long)corrupt, (unsigned long long)dup, (unsigned long long)lost,
	        (unsigned long long)failed, (unsigned long long)stuck, crashes, R.unfinished,
	        (unsigned long long)R.eq_dropped, (unsigned long long)R.odd);
	fprintf(out, "p3soak: %s\n", fails == 0 && ops > 0 ? "PASS" : "FAIL");
	return fails + (ops == 0);
}
