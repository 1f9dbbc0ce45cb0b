/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_worker.c - one rank of a p3soak job (started by the supervisor as
 * "p3soak --worker JOBFILE" with the runtime's PTL_* environment).
 *
 * Loop: start operations to idle peers that are up (at most `window` in
 * flight), block in PtlEQPoll (never spin), check what arrives; when the
 * job file says stop, drain, say so, keep serving until every rank has
 * drained, then record the NAL counters and finalize.
 */
#include "soak_worker.h"
#include "p3num.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <p3rt/p3rt.h>

#define POLL_MS 100

static struct soak_w W;

uint64_t soak_rand(struct soak_w *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

void soak_log(struct soak_w *w, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "p3soak rank %u.%u: ", w->me, w->inc);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int eligible(struct soak_w *w, unsigned p)
{
	const struct soak_job *j = w->job;
	if (p == w->me || w->slot[p].busy || w->slot[p].parked)
		return 0;
	if (j->cross_only && p % j->hosts == w->me % j->hosts)
		return 0;
	return j->rank[p].alive && j->rank[p].ready;
}

/* start operations towards random idle peers, up to the window */
static void issue_some(struct soak_w *w)
{
	unsigned tries = 0;
	while (w->inflight < w->job->window && tries++ < 2 * w->n) {
		unsigned p = (unsigned)(soak_rand(w) % w->n);
		if (eligible(w, p))
			(void)soak_issue(w, p);
	}
}

static void handle(struct soak_w *w, const ptl_event_t *ev)
{
	soak_op_event(w, ev); /* target events go to the handler of w->teq */
}

/* one blocking poll; returns 0, or -1 on a fatal EQ error */
static int poll_once(struct soak_w *w, unsigned ms)
{
	ptl_event_t ev;
	int which, rc = PtlEQPoll(&w->eq, 1, ms, &ev, &which);

	if (rc == PTL_EQ_EMPTY)
		return 0;
	if (rc == PTL_EQ_DROPPED) {
		w->st->eq_dropped++;
		soak_log(w, "event queue overflowed: events lost");
	} else if (rc != PTL_OK) {
		soak_log(w, "PtlEQPoll: %s", PtlErrorStr((unsigned)rc));
		return -1;
	}
	handle(w, &ev);
	/* take whatever else is queued without blocking */
	for (int i = 0; i < 64 && (rc = PtlEQGet(w->eq, &ev)) != PTL_EQ_EMPTY; i++) {
		if (rc == PTL_EQ_DROPPED)
			w->st->eq_dropped++;
		else if (rc != PTL_OK)
			return -1;
		handle(w, &ev);
	}
	return 0;
}

static int init(struct soak_w *w, const char *job_path)
{
	char path[600];
	int max_if, rc;
	unsigned rank, nranks;
	ptl_ni_limits_t lim;

	w->job = soak_map(job_path, sizeof(*w->job), 0);
	if (!w->job || w->job->magic != SOAK_JOB_MAGIC) {
		fprintf(stderr, "p3soak worker: cannot map the job file %s\n", job_path);
		return -1;
	}
	w->inc = (unsigned)p3num_env_u64("p3soak worker", "P3SOAK_INC", 0, 0, UINT32_MAX, 0);
	if ((rc = PtlInit(&max_if)) != PTL_OK ||
	    (rc = PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1)) != PTL_OK ||
	    (rc = PtlNIInit(PTL_IFACE_AUTO, PTL_PID_ANY, NULL, &lim, &w->ni)) != PTL_OK ||
	    (rc = PtlGetRank(w->ni, &rank, &nranks)) != PTL_OK) {
		fprintf(stderr, "p3soak worker: Portals start-up: %s\n", PtlErrorStr((unsigned)rc));
		return -1;
	}
	w->me = rank;
	w->n = nranks;
	if (nranks != w->job->nranks || nranks > SOAK_MAX_RANKS) {
		soak_log(w, "job of %u ranks, the job file says %u", nranks, w->job->nranks);
		return -1;
	}
	soak_stats_path(path, sizeof(path), w->job->dir, w->me, w->inc);
	w->st = soak_map(path, sizeof(*w->st), 1);
	if (!w->st) {
		soak_log(w, "cannot create %s", path);
		return -1;
	}
	w->st->magic = SOAK_ST_MAGIC;
	w->st->rank = w->me;
	w->st->inc = w->inc;
	w->seed = w->job->seed;
	w->rng = soak_mix(w->seed ^ ((uint64_t)w->me << 20) ^ ((uint64_t)w->inc << 40)) | 1;
	w->max_size = w->job->max_size;
	w->max_swap = SOAK_SWAP_SLOT;
	if (lim.max_getput_md > 0 && (size_t)lim.max_getput_md < w->max_swap)
		w->max_swap = (size_t)lim.max_getput_md;
	if (w->max_swap < SOAK_REC_HDR)
		w->job->ops &= ~(1u << SOAK_GETPUT);
	for (unsigned p = 0; p < w->n; p++)
		if ((rc = PtlGetRankId(w->ni, p, &w->id[p])) != PTL_OK) {
			soak_log(w, "PtlGetRankId(%u): %s", p, PtlErrorStr((unsigned)rc));
			return -1;
		}
	for (unsigned p = 0; p < w->n; p++)
		w->kills_seen[p] = w->job->rank[p].kills; /* we know nothing older */
	for (unsigned p = 0; p < w->n; p++) {
		size_t b = w->max_size > SOAK_SWAP_SLOT ? w->max_size : SOAK_SWAP_SLOT;
		w->slot[p].sbuf = malloc(b);
		w->slot[p].rbuf = malloc(b);
		if (!w->slot[p].sbuf || !w->slot[p].rbuf) {
			soak_log(w, "out of memory");
			return -1;
		}
	}
	/* a completion per op needs at most 4 events */
	rc = PtlEQAlloc(w->ni, 8 * w->job->window + 1024, PTL_EQ_HANDLER_NONE, &w->eq);
	if (rc != PTL_OK) {
		soak_log(w, "PtlEQAlloc: %s", PtlErrorStr((unsigned)rc));
		return -1;
	}
	return soak_target_setup(w);
}

static void save_regs(struct soak_w *w)
{
	unsigned i;
	for (i = 0; i < SOAK_NREGS; i++) {
		ptl_sr_value_t v;
		if (PtlNIStatus(w->ni, (ptl_sr_index_t)(PTL_SR_NAL_BASE + i), &v) != PTL_OK)
			break;
		w->st->regs[i] = v;
	}
	w->st->nregs = i;
}

int soak_worker_main(const char *job_path)
{
	struct soak_w *w = &W;
	uint64_t next_check = 0, drain_end = 0;

	if (init(w, job_path) != 0)
		return 1;
	w->job->rank[w->me].ready = 1;
	while (!w->job->stop || w->inflight > 0) {
		uint64_t now = soak_now_ns();
		if (!w->job->stop)
			issue_some(w);
		else if (!drain_end)
			drain_end = now + (uint64_t)(w->job->op_timeout_ms + 5000) * 1000000ull;
		if (poll_once(w, POLL_MS) != 0)
			return 1;
		if (now >= next_check) {
			int over = drain_end && now > drain_end;
			if (over)
				w->st->drain_abandoned += w->inflight;
			soak_check_timeouts(w, over ? 2 : 0);
			soak_retry_parked(w);
			next_check = now + POLL_MS * 1000000ull;
		}
	}
	w->job->rank[w->me].drained = 1;
	/* keep serving the others until every rank has drained */
	while (!w->job->finish)
		if (poll_once(w, POLL_MS) != 0)
			return 1;
	save_regs(w);
	w->st->finished = 1;
	PtlNIFini(w->ni);
	PtlFini();
	return 0;
}
