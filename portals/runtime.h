/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * runtime.h - the process-global job runtime (rank, size, rank -> nid/pid
 * maps, job id) that p3rt.h exposes and that PtlNIInit hands to the NAL.
 *
 * Implemented in portals/runtime/ (env.c: PTL_MY_RID, PTL_NIDMAP,
 * PTL_PIDMAP, PTL_MY_JID; pmi.c: a PMI-1 client for hydra/Slurm; p3rt.c:
 * the PtlSet and PtlGet calls).  The core (portals/api-*.c) calls only the
 * functions below; the runtime calls only p3_api_initialized() and
 * p3_api_ni_check() from the core.
 */
#ifndef P3_RUNTIME_H
#define P3_RUNTIME_H

#include <portals3.h>

struct p3_runtime {
	int rank;           /* -1: no runtime (single process, maps unknown) */
	int nranks;         /* 0 when rank == -1 */
	ptl_nid_t *nidmap;  /* nranks entries, or NULL until known */
	ptl_pid_t *pidmap;  /* nranks entries, or NULL until known */
	ptl_jid_t jid;      /* PTL_JID_ANY when unknown */
	int needs_exchange; /* 1: maps come from PMI, exchanged after NAL init */
};

/* Resolve the runtime once: values set through p3rt.h calls, else the
 * PTL_* environment, else PMI-1 (PMI_RANK/PMI_SIZE/PMI_FD), else none.
 * Idempotent and thread-safe.  0 on success; -1 after printing to stderr
 * which variable is malformed. */
int p3_runtime_load(void);

/* The resolved runtime (after p3_runtime_load). Never NULL. */
const struct p3_runtime *p3_runtime_get(void);

/* When needs_exchange: publish my_id through PMI, barrier, fetch everyone's,
 * fill the maps.  Called by PtlNIInit right after the NAL's init.
 * 0 on success, -1 (message printed) on PMI failure. */
int p3_runtime_exchange(ptl_process_id_t my_id);

/* Forget everything (PtlFini of the last user). */
void p3_runtime_reset(void);

/* Held across fork() (portals/fork.c) so the child's copy is consistent. */
void p3_runtime_fork_lock(void);
void p3_runtime_fork_unlock(void);

/* ---- provided by the core for the runtime ---- */
/* 1 if PtlInit has been called (and not undone by PtlFini). */
int p3_api_initialized(void);
/* PTL_OK if ni names an open NI, else PTL_NI_INVALID. */
int p3_api_ni_check(ptl_handle_ni_t ni);

#endif
