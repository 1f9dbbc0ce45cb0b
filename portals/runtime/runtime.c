/* SPDX-License-Identifier: BSD-3-Clause */
/* runtime.c - resolves the job runtime (rank, size, rank -> nid/pid maps,
 * job id) from, in order of precedence: values set through the p3rt.h
 * calls, the PTL_* launcher environment (env.c), and the launcher's PMI:
 * PMI-1 (pmi.c), PMI-2 (pmi2.c) or PMIx (pmix.c), chosen by pmi_session.c.
 *
 * PMI is consulted only after the application asked for the environment
 * with PtlSetRank(..., -1, -1): a program that merely opens an NI under
 * mpiexec or srun (the MPICH adapter inside an MPI program, whose PMI
 * session belongs to MPICH) must not start a second PMI conversation.
 *
 * Map arrays handed out through p3_runtime_get() stay valid until
 * p3_runtime_reset(): replaced arrays are retired, not freed. */
#include "config.h"

#include "rt.h"
#include "runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* rt_lock protects every variable below.  It is a leaf lock: nothing is
 * called with it held except env.c/pmi.c helpers and libc. */
static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;

static struct p3_runtime rt_cur = {
    .rank = -1,
    .nranks = 0,
    .nidmap = NULL,
    .pidmap = NULL,
    .jid = PTL_JID_ANY,
    .needs_exchange = 0,
};

static int rt_env_loaded; /* rt_env holds the PTL_* environment */
static struct p3_rt_env rt_env;
static int rt_pmi_wanted;  /* PtlSetRank(.., -1, -1) was called */
static int rt_pmi_open;    /* rt_pmi is a live session (kept across reset) */
static pid_t rt_pmi_owner; /* the process that opened it (not a fork child) */
static struct p3_pmi_session rt_pmi;
static unsigned int rt_xgen; /* exchanges done by this process (key suffix) */
static ptl_nid_t *rt_xnid;   /* maps from the PMI exchange */
static ptl_pid_t *rt_xpid;

/* Explicit values from the p3rt.h calls. */
static int rt_ex_rank_set;
static unsigned int rt_ex_rank, rt_ex_size;
static ptl_nid_t *rt_ex_nid;
static unsigned int rt_ex_nid_n;
static ptl_pid_t *rt_ex_pid;
static unsigned int rt_ex_pid_n;
static int rt_ex_jid_set;
static ptl_jid_t rt_ex_jid;

/* Retired arrays, freed at reset. */
struct rt_retired {
	struct rt_retired *rr_next;
	void *rr_ptr;
};
static struct rt_retired *rt_graveyard;

static void rt_retire_locked(void *p)
{
	struct rt_retired *r;

	if (!p)
		return;
	r = malloc(sizeof(*r));
	if (!r)
		return; /* leak rather than free memory a reader may hold */
	r->rr_ptr = p;
	r->rr_next = rt_graveyard;
	rt_graveyard = r;
}

static void rt_err(const char *msg)
{
	fprintf(stderr, "p3stack: runtime: %s\n", msg);
}

static ptl_jid_t rt_hash_jid(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h == PTL_JID_ANY ? h - 1 : h;
}

/* Recompute rt_cur from the sources.  0, or -1 with err filled. */
static int rt_resolve_locked(char *err, size_t errlen)
{
	struct p3_runtime r = {.rank = -1, .jid = PTL_JID_ANY};
	int from_pmi = 0;

	if (rt_ex_rank_set) {
		r.rank = (int)rt_ex_rank;
		r.nranks = (int)rt_ex_size;
	} else if (rt_env.re_present) {
		r.rank = (int)rt_env.re_rank;
		r.nranks = (int)rt_env.re_nranks;
	} else if (rt_pmi_open) {
		r.rank = rt_pmi.ps_rank;
		r.nranks = rt_pmi.ps_size;
	}
	if (r.rank >= 0) {
		unsigned int n = (unsigned int)r.nranks;

		if (rt_ex_nid && rt_ex_nid_n != n) {
			snprintf(err, errlen,
			         "the NID map set by PtlSetNIDMap has %u entries but "
			         "the job has %u ranks",
			         rt_ex_nid_n, n);
			return -1;
		}
		if (rt_ex_pid && rt_ex_pid_n != n) {
			snprintf(err, errlen,
			         "the PID map set by PtlSetPIDMap has %u entries but "
			         "the job has %u ranks",
			         rt_ex_pid_n, n);
			return -1;
		}
		if (rt_env.re_present && rt_env.re_nranks == n) {
			r.nidmap = rt_env.re_nidmap;
			r.pidmap = rt_env.re_pidmap;
		} else if (rt_pmi_open && (unsigned int)rt_pmi.ps_size == n) {
			r.nidmap = rt_xnid;
			r.pidmap = rt_xpid;
			from_pmi = 1;
		}
		if (rt_ex_nid)
			r.nidmap = rt_ex_nid;
		if (rt_ex_pid)
			r.pidmap = rt_ex_pid;
		if (!r.nidmap || !r.pidmap) {
			r.nidmap = NULL;
			r.pidmap = NULL;
			r.needs_exchange = from_pmi;
		}
	}
	if (rt_ex_jid_set)
		r.jid = rt_ex_jid;
	else if (rt_env.re_have_jid)
		r.jid = rt_env.re_jid;
	else if (rt_pmi_open)
		r.jid = rt_hash_jid(rt_pmi.ps_kvsname);
	rt_cur = r;
	return 0;
}

void p3_runtime_fork_lock(void)
{
	pthread_mutex_lock(&rt_lock);
}

void p3_runtime_fork_unlock(void)
{
	pthread_mutex_unlock(&rt_lock);
}

static void rt_atexit(void)
{
	/* a thread stuck in a PMI call holds the lock: skip finalize then */
	if (pthread_mutex_trylock(&rt_lock) != 0)
		return;
	/* a forked child shares the descriptor: only the owner finalizes */
	if (rt_pmi_open && rt_pmi_owner == getpid()) {
		rt_pmi.ps_ops->close(&rt_pmi);
		rt_pmi_open = 0;
	}
	pthread_mutex_unlock(&rt_lock);
}

/* Read the PTL_* environment (again if reread), open PMI if wanted and
 * possible, resolve.  0 or -1 (message printed). */
static int rt_load_locked(int reread)
{
	static int atexit_done;
	char err[P3_RT_ERRLEN];

	if (!rt_env_loaded || reread) {
		struct p3_rt_env env;

		if (p3_rt_env_read(&env, err, sizeof(err)) != 0) {
			rt_err(err);
			return -1;
		}
		rt_retire_locked(rt_env.re_nidmap);
		rt_retire_locked(rt_env.re_pidmap);
		rt_env = env;
		rt_env_loaded = 1;
	}
	if (rt_pmi_wanted && !rt_pmi_open && !rt_env.re_present) {
		const struct p3_pmi_ops *ops = p3_pmi_detect(err, sizeof(err));

		if (!ops && err[0]) {
			rt_err(err);
			return -1;
		}
		if (!ops)
			goto resolve;
		memset(&rt_pmi, 0, sizeof(rt_pmi));
		rt_pmi.ps_ops = ops;
		if (ops->open(&rt_pmi, err, sizeof(err)) != 0) {
			rt_err(err);
			return -1;
		}
		rt_pmi_open = 1;
		rt_pmi_owner = getpid();
		/* the job key before any NAL endpoint is made (once per session:
		 * PMI-1 cannot start twice) */
		if (p3_rt_pmi_authkey(&rt_pmi, err, sizeof(err)) != 0) {
			rt_err(err);
			return -1;
		}
		if (!atexit_done && atexit(rt_atexit) == 0)
			atexit_done = 1;
	}
resolve:
	if (rt_resolve_locked(err, sizeof(err)) != 0) {
		rt_err(err);
		return -1;
	}
	return 0;
}

int p3_runtime_load(void)
{
	int rc;

	pthread_mutex_lock(&rt_lock);
	rc = rt_load_locked(0);
	pthread_mutex_unlock(&rt_lock);
	return rc;
}

const struct p3_runtime *p3_runtime_get(void)
{
	return &rt_cur;
}

/* Fetch and parse every rank's "nid:pid". */
static int rt_exchange_locked(ptl_process_id_t my_id, char *err, size_t errlen)
{
	const struct p3_pmi_ops *ops = rt_pmi.ps_ops;
	unsigned int n = (unsigned int)rt_pmi.ps_size, i;
	char key[64], val[64];
	ptl_nid_t *nid;
	ptl_pid_t *pid;

	if (rt_xgen == 0)
		snprintf(key, sizeof(key), "p3id-%d", rt_pmi.ps_rank);
	else
		snprintf(key, sizeof(key), "p3id-%d-%u", rt_pmi.ps_rank, rt_xgen);
	snprintf(val, sizeof(val), "%u:%u", my_id.nid, my_id.pid);
	if (ops->put(&rt_pmi, key, val, err, errlen) != 0 || ops->fence(&rt_pmi, err, errlen) != 0)
		return -1;
	nid = calloc(n, sizeof(*nid));
	pid = calloc(n, sizeof(*pid));
	if (!nid || !pid) {
		snprintf(err, errlen, "out of memory for the maps of %u ranks", n);
		goto free_maps;
	}
	for (i = 0; i < n; i++) {
		char *colon;
		uint32_t v;

		if (rt_xgen == 0)
			snprintf(key, sizeof(key), "p3id-%u", i);
		else
			snprintf(key, sizeof(key), "p3id-%u-%u", i, rt_xgen);
		if (ops->get(&rt_pmi, (int)i, key, val, sizeof(val), err, errlen) != 0)
			goto free_maps;
		colon = strchr(val, ':');
		if (!colon)
			goto bad_value;
		*colon = '\0';
		if (p3_rt_parse_u32(key, val, &v, err, errlen) != 0)
			goto bad_value;
		nid[i] = v;
		if (p3_rt_parse_u32(key, colon + 1, &v, err, errlen) != 0)
			goto bad_value;
		pid[i] = v;
	}
	rt_xgen++;
	rt_retire_locked(rt_xnid);
	rt_retire_locked(rt_xpid);
	rt_xnid = nid;
	rt_xpid = pid;
	return 0;

bad_value:
	snprintf(err, errlen, "PMI: %s: value is not nid:pid", key);
free_maps:
	free(nid);
	free(pid);
	return -1;
}

int p3_runtime_exchange(ptl_process_id_t my_id)
{
	char err[P3_RT_ERRLEN];
	int rc = 0;

	pthread_mutex_lock(&rt_lock);
	if (rt_cur.needs_exchange && rt_pmi_open && rt_pmi_owner != getpid()) {
		rt_err("PMI: the PMI session belongs to the parent of this forked process");
		rc = -1;
	} else if (rt_cur.needs_exchange && rt_pmi_open) {
		rc = rt_exchange_locked(my_id, err, sizeof(err));
		if (rc == 0)
			rc = rt_resolve_locked(err, sizeof(err));
		if (rc != 0)
			rt_err(err);
	}
	pthread_mutex_unlock(&rt_lock);
	return rc;
}

void p3_runtime_reset(void)
{
	pthread_mutex_lock(&rt_lock);
	p3_rt_env_free(&rt_env);
	rt_env_loaded = 0;
	rt_pmi_wanted = 0;
	free(rt_xnid);
	free(rt_xpid);
	rt_xnid = NULL;
	rt_xpid = NULL;
	rt_ex_rank_set = 0;
	free(rt_ex_nid);
	free(rt_ex_pid);
	rt_ex_nid = NULL;
	rt_ex_pid = NULL;
	rt_ex_nid_n = rt_ex_pid_n = 0;
	rt_ex_jid_set = 0;
	while (rt_graveyard) {
		struct rt_retired *r = rt_graveyard;

		rt_graveyard = r->rr_next;
		free(r->rr_ptr);
		free(r);
	}
	rt_cur = (struct p3_runtime){.rank = -1, .jid = PTL_JID_ANY};
	pthread_mutex_unlock(&rt_lock);
}

/* ---- backends of the p3rt.h calls ------------------------------------ */

int p3_rt_set_rank(unsigned int rank, unsigned int size)
{
	int rc;

	pthread_mutex_lock(&rt_lock);
	rt_ex_rank_set = 1;
	rt_ex_rank = rank;
	rt_ex_size = size;
	rc = rt_load_locked(0);
	pthread_mutex_unlock(&rt_lock);
	return rc;
}

int p3_rt_use_env(void)
{
	int rc;

	pthread_mutex_lock(&rt_lock);
	rt_ex_rank_set = 0;
	rt_pmi_wanted = 1;
	rc = rt_load_locked(1);
	pthread_mutex_unlock(&rt_lock);
	return rc;
}

int p3_rt_set_map(int which, const uint32_t *map, unsigned int size)
{
	uint32_t *copy = malloc(size * sizeof(*copy));
	char err[P3_RT_ERRLEN];

	if (!copy)
		return -1;
	memcpy(copy, map, size * sizeof(*copy));
	pthread_mutex_lock(&rt_lock);
	if (which == P3_RT_NIDMAP) {
		rt_retire_locked(rt_ex_nid);
		rt_ex_nid = copy;
		rt_ex_nid_n = size;
	} else {
		rt_retire_locked(rt_ex_pid);
		rt_ex_pid = copy;
		rt_ex_pid_n = size;
	}
	/* A map set before the rank may not match the size yet: an
	 * inconsistency is reported by the next load, not here. */
	if (rt_env_loaded)
		(void)rt_resolve_locked(err, sizeof(err));
	pthread_mutex_unlock(&rt_lock);
	return 0;
}

void p3_rt_set_jid(ptl_jid_t jid)
{
	char err[P3_RT_ERRLEN];

	pthread_mutex_lock(&rt_lock);
	rt_ex_jid_set = 1;
	rt_ex_jid = jid;
	if (rt_env_loaded)
		(void)rt_resolve_locked(err, sizeof(err));
	pthread_mutex_unlock(&rt_lock);
}

int p3_rt_view(struct p3_rt_view *view)
{
	int rc;

	pthread_mutex_lock(&rt_lock);
	rc = rt_load_locked(0);
	if (rc == 0) {
		view->rv_rank = rt_cur.rank;
		view->rv_nranks = rt_cur.nranks;
		view->rv_maps_known = rt_cur.nidmap && rt_cur.pidmap;
		view->rv_jid = rt_cur.jid;
	}
	pthread_mutex_unlock(&rt_lock);
	return rc;
}

int p3_rt_copy_map(int which, uint32_t *out, unsigned int n)
{
	int rc = -1;

	pthread_mutex_lock(&rt_lock);
	if (rt_load_locked(0) == 0 && rt_cur.nidmap && rt_cur.pidmap &&
	    n == (unsigned int)rt_cur.nranks) {
		memcpy(out, which == P3_RT_NIDMAP ? rt_cur.nidmap : rt_cur.pidmap,
		       n * sizeof(*out));
		rc = 0;
	}
	pthread_mutex_unlock(&rt_lock);
	return rc;
}

int p3_rt_rank_id(unsigned int rank, ptl_process_id_t *id)
{
	int rc = -1;

	pthread_mutex_lock(&rt_lock);
	if (rt_load_locked(0) == 0 && rt_cur.nidmap && rt_cur.pidmap &&
	    rank < (unsigned int)rt_cur.nranks) {
		id->nid = rt_cur.nidmap[rank];
		id->pid = rt_cur.pidmap[rank];
		rc = 0;
	}
	pthread_mutex_unlock(&rt_lock);
	return rc;
}

const char *p3_rt_pmi_name(void)
{
	const char *name = NULL;

	pthread_mutex_lock(&rt_lock);
	if (rt_pmi_open)
		name = rt_pmi.ps_ops->name;
	pthread_mutex_unlock(&rt_lock);
	return name;
}
