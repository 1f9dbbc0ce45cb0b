/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt.h - private interface between the files of portals/runtime/:
 * env.c (the PTL_* launcher environment), pmi.c (a PMI-1 wire-protocol
 * client) and runtime.c (resolution, precedence, exchange).
 *
 * Nothing here is exported from libportals3: every symbol is hidden.
 */
#ifndef P3_RT_H
#define P3_RT_H

#include <portals3.h>
#include <stddef.h>
#include <stdint.h>

#define P3_RT_HIDDEN __attribute__((visibility("hidden")))
#define P3_RT_EXPORT __attribute__((visibility("default")))

/* Largest job the runtime accepts from the environment or PMI. */
#define P3_RT_MAX_RANKS (1u << 20)

/* Room for one error message ("PTL_NIDMAP: bad entry ..."). */
#define P3_RT_ERRLEN 256

/* ---- env.c ---------------------------------------------------------- */

/* Parse an unsigned 32-bit number: decimal, or hexadecimal with 0x.  No
 * sign, no blanks, no trailing characters.  0 or -1 (err filled, naming
 * `var` and the bad token). */
P3_RT_HIDDEN int p3_rt_parse_u32(const char *var, const char *s, uint32_t *out_p, char *err,
                                 size_t errlen);

/* Parse a colon-separated map ("0:0:0" / "10.0.0.1:10.0.0.2").  With
 * allow_ipv4 a dotted quad is accepted and stored in host byte order.
 * The reserved value 0xffffffff (PTL_NID_ANY / PTL_PID_ANY) is rejected.
 * On success *map_p (malloc'ed) and *n_p are set; 0 or -1 (err filled). */
P3_RT_HIDDEN int p3_rt_parse_map(const char *var, const char *s, int allow_ipv4, uint32_t **map_p,
                                 unsigned int *n_p, char *err, size_t errlen);

/* What the PTL_* launcher environment says. */
struct p3_rt_env {
	int re_present;         /* PTL_MY_RID is set */
	unsigned int re_rank;   /* PTL_MY_RID */
	unsigned int re_nranks; /* entries of the maps */
	ptl_nid_t *re_nidmap;   /* PTL_NIDMAP (malloc'ed) */
	ptl_pid_t *re_pidmap;   /* PTL_PIDMAP (malloc'ed) */
	int re_have_jid;        /* PTL_MY_JID is set */
	ptl_jid_t re_jid;
};

/* Read PTL_MY_RID, PTL_NIDMAP, PTL_PIDMAP and PTL_MY_JID.  PTL_MY_JID may
 * come alone; the other three are all or nothing, the maps must have the
 * same length and PTL_MY_RID must be below it.  0, or -1 with err filled
 * (nothing to free then). */
P3_RT_HIDDEN int p3_rt_env_read(struct p3_rt_env *env, char *err, size_t errlen);
P3_RT_HIDDEN void p3_rt_env_free(struct p3_rt_env *env);

/* ---- pmi.c ---------------------------------------------------------- */

#define P3_PMI_KVSNAME_MAX 256
#define P3_PMI_LINE_MAX    4096

struct p3_pmi {
	int pm_fd;
	int pm_rank;
	int pm_size;
	int pm_timeout_ms; /* per reply; < 0: wait forever */
	int pm_finalized;
	char pm_kvsname[P3_PMI_KVSNAME_MAX];
	int pm_keylen_max;
	int pm_vallen_max;
	size_t pm_inlen; /* bytes buffered in pm_in */
	char pm_in[P3_PMI_LINE_MAX];
};

/* Connect as the environment says (PMI_FD, or PMI_PORT with the PMI_ID
 * handshake), then init, get_maxes, get_my_kvsname.  Timeout from
 * P3_RUNTIME_PMI_TIMEOUT (seconds, default 120).  0 or -1 (err filled). */
P3_RT_HIDDEN int p3_pmi_open_env(struct p3_pmi *pmi, char *err, size_t errlen);

/* Same over an already connected descriptor (tests use a socketpair).
 * rank/size as the launcher announced them. */
P3_RT_HIDDEN int p3_pmi_open_fd(struct p3_pmi *pmi, int fd, int rank, int size, int timeout_ms,
                                char *err, size_t errlen);

P3_RT_HIDDEN int p3_pmi_put(struct p3_pmi *pmi, const char *key, const char *value, char *err,
                            size_t errlen);
P3_RT_HIDDEN int p3_pmi_barrier(struct p3_pmi *pmi, char *err, size_t errlen);
/* value_p receives at most vallen - 1 bytes plus a NUL. */
P3_RT_HIDDEN int p3_pmi_get(struct p3_pmi *pmi, const char *key, char *value, size_t vallen,
                            char *err, size_t errlen);
/* Send finalize (once) and close the descriptor. */
P3_RT_HIDDEN void p3_pmi_close(struct p3_pmi *pmi);

/* ---- pmi_session.c, pmi2.c, pmix.c ------------------------------------ */

/* One PMI conversation with the launcher, whichever PMI it speaks: PMI-1
 * (pmi.c, our client of the wire protocol hydra serves), PMI-2 (Slurm's
 * libpmi2) or PMIx (OpenPMIx's libpmix).  The two libraries are loaded with
 * dlopen when a launcher asks for them, not linked: a program started by
 * ptlrun or hydra never loads libpmix (and its libevent, hwloc, munge), and
 * their PMI2_ and PMIx_ symbols never meet MPICH's own PMI in one process. */
struct p3_pmi_session;

struct p3_pmi_ops {
	const char *name; /* "PMI-1", "PMI-2", "PMIx" */
	/* Start the session: fills ps_rank, ps_size, ps_kvsname. */
	int (*open)(struct p3_pmi_session *s, char *err, size_t errlen);
	/* Publish key=value (visible to the others after fence). */
	int (*put)(struct p3_pmi_session *s, const char *key, const char *value, char *err,
	           size_t errlen);
	/* Commit what was put and wait for every rank (a collective). */
	int (*fence)(struct p3_pmi_session *s, char *err, size_t errlen);
	/* Value of key, put by rank src; at most vallen - 1 bytes plus a NUL. */
	int (*get)(struct p3_pmi_session *s, int src, const char *key, char *value, size_t vallen,
	           char *err, size_t errlen);
	/* Finalize (by the process that opened it) and release. */
	void (*close)(struct p3_pmi_session *s);
};

struct p3_pmi_session {
	const struct p3_pmi_ops *ps_ops;
	int ps_rank;
	int ps_size;
	char ps_kvsname[P3_PMI_KVSNAME_MAX]; /* kvsname / PMI-2 job id / PMIx nspace */
	struct p3_pmi ps_pmi1;               /* PMI-1 only */
	void *ps_lib;                        /* PMI-2/PMIx: the dlopen handle */
	void *ps_priv;                       /* PMI-2/PMIx: the library's entry points */
};

/* Which PMI the launcher provides, from its environment (the launcher's
 * own choice is taken):
 *   P3_PMI=pmi1|pmi2|pmix|none   forces one (or none);
 *   PMIX_NAMESPACE + PMIX_RANK   PMIx (srun --mpi=pmix, prterun ...);
 *   SLURM_MPI_TYPE=pmi2 + PMI_FD PMI-2 (srun --mpi=pmi2);
 *   PMI_FD/PMI_RANK/PMI_SIZE or PMI_PORT/PMI_ID   PMI-1 (hydra's mpiexec).
 * Returns the backend, or NULL: *err empty when the environment names no
 * PMI, a message when it names one this build cannot speak. */
P3_RT_HIDDEN const struct p3_pmi_ops *p3_pmi_detect(char *err, size_t errlen);

P3_RT_HIDDEN extern const struct p3_pmi_ops p3_pmi1_ops;
#ifdef HAVE_PMI2
P3_RT_HIDDEN extern const struct p3_pmi_ops p3_pmi2_ops;
#endif
#ifdef HAVE_PMIX
P3_RT_HIDDEN extern const struct p3_pmi_ops p3_pmix_ops;
#endif

/* dlopen `soname` (RTLD_LOCAL) and resolve the n names into fns[]; 0, or
 * -1 with err saying what is missing (nothing left open then). */
P3_RT_HIDDEN int p3_pmi_dlopen(const char *what, const char *soname, const char *const *names,
                               void **fns, size_t n, void **lib_p, char *err, size_t errlen);

/* P3_RMPP_AUTH=on: rank 0 puts a fresh job key in the key space, every
 * rank reads it (a fence) and sets P3_RMPP_AUTH_KEY unless it has one
 * (pmi_authkey.c).  Off: nothing, no fence.  0, or -1 with err filled. */
P3_RT_HIDDEN int p3_rt_pmi_authkey(struct p3_pmi_session *s, char *err, size_t errlen);

/* Name of the PMI the runtime talks to ("PMI-2"), or NULL if none. */
P3_RT_HIDDEN const char *p3_rt_pmi_name(void);

/* ---- runtime.c ------------------------------------------------------ */

/* Backends of the p3rt.h calls (p3rt.c checks arguments and handles). */
P3_RT_HIDDEN int p3_rt_set_rank(unsigned int rank, unsigned int size);
P3_RT_HIDDEN int p3_rt_use_env(void);
P3_RT_HIDDEN int p3_rt_set_map(int which, const uint32_t *map, unsigned int size);
P3_RT_HIDDEN void p3_rt_set_jid(ptl_jid_t jid);

#define P3_RT_NIDMAP 0
#define P3_RT_PIDMAP 1

/* Snapshot for the p3rt.h getters: copies under the lock.  Returns 0, or
 * -1 if the runtime cannot be loaded.  The maps are copied into a
 * caller's buffer by p3_rt_copy_map(). */
struct p3_rt_view {
	int rv_rank;
	int rv_nranks;
	int rv_maps_known;
	ptl_jid_t rv_jid;
};
P3_RT_HIDDEN int p3_rt_view(struct p3_rt_view *view);
/* Copy entries of the map (n must equal the job size); 0, or -1 if the
 * maps are not known yet or n is different. */
P3_RT_HIDDEN int p3_rt_copy_map(int which, uint32_t *out, unsigned int n);
/* Entry `rank` of both maps; 0 or -1 (unknown / out of range). */
P3_RT_HIDDEN int p3_rt_rank_id(unsigned int rank, ptl_process_id_t *id);

#endif
