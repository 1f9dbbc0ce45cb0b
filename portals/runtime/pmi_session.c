/* SPDX-License-Identifier: BSD-3-Clause */
/* pmi_session.c - which PMI the launcher speaks (p3_pmi_detect), the PMI-1
 * client of pmi.c behind the common session interface, and the dlopen
 * helper of the PMI-2 and PMIx backends. */
#include "config.h"

#include "rt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- PMI-1: pmi.c's wire-protocol client ------------------------------ */

static int pmi1_open(struct p3_pmi_session *s, char *err, size_t errlen)
{
	if (p3_pmi_open_env(&s->ps_pmi1, err, errlen) != 0)
		return -1;
	s->ps_rank = s->ps_pmi1.pm_rank;
	s->ps_size = s->ps_pmi1.pm_size;
	snprintf(s->ps_kvsname, sizeof(s->ps_kvsname), "%s", s->ps_pmi1.pm_kvsname);
	return 0;
}

static int pmi1_put(struct p3_pmi_session *s, const char *key, const char *value, char *err,
                    size_t errlen)
{
	return p3_pmi_put(&s->ps_pmi1, key, value, err, errlen);
}

static int pmi1_fence(struct p3_pmi_session *s, char *err, size_t errlen)
{
	return p3_pmi_barrier(&s->ps_pmi1, err, errlen);
}

static int pmi1_get(struct p3_pmi_session *s, int src, const char *key, char *value, size_t vallen,
                    char *err, size_t errlen)
{
	(void)src; /* one key space per job: the rank is in the key */
	return p3_pmi_get(&s->ps_pmi1, key, value, vallen, err, errlen);
}

static void pmi1_close(struct p3_pmi_session *s)
{
	p3_pmi_close(&s->ps_pmi1);
}

const struct p3_pmi_ops p3_pmi1_ops = {
    .name = "PMI-1",
    .open = pmi1_open,
    .put = pmi1_put,
    .fence = pmi1_fence,
    .get = pmi1_get,
    .close = pmi1_close,
};

/* ---- detection --------------------------------------------------------- */

static int env_set(const char *var)
{
	const char *v = getenv(var);

	return v && *v;
}

static const struct p3_pmi_ops *want_pmix(char *err, size_t errlen)
{
#ifdef HAVE_PMIX
	(void)err;
	(void)errlen;
	return &p3_pmix_ops;
#else
	snprintf(err, errlen,
	         "PMIx was asked for (PMIX_NAMESPACE or P3_PMI=pmix) but this libportals3 was "
	         "built without PMIx (install libpmix-dev and run configure again)");
	return NULL;
#endif
}

static const struct p3_pmi_ops *want_pmi2(char *err, size_t errlen)
{
#ifdef HAVE_PMI2
	(void)err;
	(void)errlen;
	return &p3_pmi2_ops;
#else
	snprintf(err, errlen,
	         "PMI-2 was asked for (SLURM_MPI_TYPE=pmi2 or P3_PMI=pmi2) but this libportals3 "
	         "was built "
	         "without PMI-2 (install libpmi2-0-dev and run configure again)");
	return NULL;
#endif
}

const struct p3_pmi_ops *p3_pmi_detect(char *err, size_t errlen)
{
	const char *force = getenv("P3_PMI");
	const char *slurm_mpi = getenv("SLURM_MPI_TYPE");
	int pmi1_env = (env_set("PMI_FD") && env_set("PMI_RANK") && env_set("PMI_SIZE")) ||
	               (env_set("PMI_PORT") && env_set("PMI_ID"));

	err[0] = '\0';
	if (force && *force) {
		if (strcmp(force, "pmix") == 0)
			return want_pmix(err, errlen);
		if (strcmp(force, "pmi2") == 0)
			return want_pmi2(err, errlen);
		if (strcmp(force, "pmi1") == 0)
			return &p3_pmi1_ops;
		if (strcmp(force, "none") == 0)
			return NULL;
		snprintf(err, errlen, "P3_PMI=%.32s: expected pmi1, pmi2, pmix or none", force);
		return NULL;
	}
	if (env_set("PMIX_NAMESPACE") && env_set("PMIX_RANK"))
		return want_pmix(err, errlen);
	/* Slurm's mpi/pmi2 sets PMI_FD, PMI_RANK and PMI_SIZE as hydra does:
	 * the step's MPI type and PMI_JOBID (hydra sets none) tell them apart. */
	if (slurm_mpi && strncmp(slurm_mpi, "pmi2", 4) == 0 && env_set("PMI_FD") &&
	    env_set("PMI_JOBID"))
		return want_pmi2(err, errlen);
	if (pmi1_env)
		return &p3_pmi1_ops;
	return NULL;
}

/* ---- dlopen of a PMI library ---------------------------------------- */

int p3_pmi_dlopen(const char *what, const char *soname, const char *const *names, void **fns,
                  size_t n, void **lib_p, char *err, size_t errlen)
{
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (!lib) {
		snprintf(err, errlen, "%s: cannot load %s: %s", what, soname, dlerror());
		return -1;
	}
	for (i = 0; i < n; i++) {
		fns[i] = dlsym(lib, names[i]);
		if (!fns[i]) {
			snprintf(err, errlen, "%s: %s has no %s", what, soname, names[i]);
			dlclose(lib);
			return -1;
		}
	}
	*lib_p = lib;
	return 0;
}
