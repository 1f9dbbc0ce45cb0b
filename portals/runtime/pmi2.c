/* SPDX-License-Identifier: BSD-3-Clause */
/* pmi2.c - the runtime's PMI-2 backend: Slurm's libpmi2 (srun --mpi=pmi2),
 * loaded with dlopen when the launcher asks for it (rt.h says why).  The
 * library reads PMI_FD, PMI_RANK, PMI_SIZE itself. */
#include "config.h"

#ifdef HAVE_PMI2

#include "rt.h"

#include <dlfcn.h>
#include <slurm/pmi2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef P3_PMI2_SONAME
#define P3_PMI2_SONAME "libpmi2.so.0"
#endif

/* Entry points, typed by the library's own header. */
struct pmi2_fns {
	__typeof__(PMI2_Init) *init;
	__typeof__(PMI2_Finalize) *finalize;
	__typeof__(PMI2_Job_GetId) *job_getid;
	__typeof__(PMI2_KVS_Put) *kvs_put;
	__typeof__(PMI2_KVS_Fence) *kvs_fence;
	__typeof__(PMI2_KVS_Get) *kvs_get;
};

static const char *const pmi2_names[] = {
    "PMI2_Init",    "PMI2_Finalize",  "PMI2_Job_GetId",
    "PMI2_KVS_Put", "PMI2_KVS_Fence", "PMI2_KVS_Get",
};

static struct pmi2_fns pmi2_fns; /* one session per process */

static const char *pmi2_lib_name(void)
{
	const char *v = getenv("P3_PMI2_LIB");

	return v && *v ? v : P3_PMI2_SONAME;
}

static int pmi2_open(struct p3_pmi_session *s, char *err, size_t errlen)
{
	void *fns[sizeof(pmi2_names) / sizeof(pmi2_names[0])];
	int spawned = 0, size = 0, rank = -1, appnum = 0, rc;

	_Static_assert(sizeof(fns) == sizeof(pmi2_fns), "one name per entry point");
	if (p3_pmi_dlopen("PMI-2", pmi2_lib_name(), pmi2_names, fns, sizeof(fns) / sizeof(fns[0]),
	                  &s->ps_lib, err, errlen) != 0)
		return -1;
	memcpy(&pmi2_fns, fns, sizeof(pmi2_fns));
	s->ps_priv = &pmi2_fns;
	rc = pmi2_fns.init(&spawned, &size, &rank, &appnum);
	if (rc != PMI2_SUCCESS) {
		snprintf(err, errlen, "PMI-2: PMI2_Init failed (%d)", rc);
		goto fail;
	}
	if (rank < 0 || size <= 0 || rank >= size || (unsigned int)size > P3_RT_MAX_RANKS) {
		snprintf(err, errlen, "PMI-2: rank %d of %d is not a valid position in a job", rank,
		         size);
		goto fail_fini;
	}
	rc = pmi2_fns.job_getid(s->ps_kvsname, (int)sizeof(s->ps_kvsname));
	if (rc != PMI2_SUCCESS || s->ps_kvsname[0] == '\0') {
		snprintf(err, errlen, "PMI-2: PMI2_Job_GetId failed (%d)", rc);
		goto fail_fini;
	}
	s->ps_rank = rank;
	s->ps_size = size;
	return 0;

fail_fini:
	pmi2_fns.finalize();
fail:
	dlclose(s->ps_lib);
	s->ps_lib = NULL;
	return -1;
}

static int pmi2_put(struct p3_pmi_session *s, const char *key, const char *value, char *err,
                    size_t errlen)
{
	int rc;

	(void)s;
	if (strlen(key) >= PMI2_MAX_KEYLEN || strlen(value) >= PMI2_MAX_VALLEN) {
		snprintf(err, errlen, "PMI-2: key '%.64s' or its value is too long", key);
		return -1;
	}
	rc = pmi2_fns.kvs_put(key, value);
	if (rc != PMI2_SUCCESS) {
		snprintf(err, errlen, "PMI-2: PMI2_KVS_Put(%.64s) failed (%d)", key, rc);
		return -1;
	}
	return 0;
}

static int pmi2_fence(struct p3_pmi_session *s, char *err, size_t errlen)
{
	int rc = pmi2_fns.kvs_fence();

	(void)s;
	if (rc != PMI2_SUCCESS) {
		snprintf(err, errlen, "PMI-2: PMI2_KVS_Fence failed (%d)", rc);
		return -1;
	}
	return 0;
}

static int pmi2_get(struct p3_pmi_session *s, int src, const char *key, char *value, size_t vallen,
                    char *err, size_t errlen)
{
	int len = 0, rc;

	if (vallen > PMI2_MAX_VALLEN)
		vallen = PMI2_MAX_VALLEN;
	/* the source rank is only a hint, which we do not give: the rank is in
	 * the key, and the job's whole key space answers */
	(void)src;
	rc = pmi2_fns.kvs_get(s->ps_kvsname, PMI2_ID_NULL, key, value, (int)vallen, &len);
	if (rc != PMI2_SUCCESS) {
		snprintf(err, errlen, "PMI-2: PMI2_KVS_Get(%.64s) failed (%d)", key, rc);
		return -1;
	}
	if (len < 0 || (size_t)len >= vallen) {
		snprintf(err, errlen, "PMI-2: %.64s: value longer than %zu bytes", key, vallen - 1);
		return -1;
	}
	value[len] = '\0';
	return 0;
}

static void pmi2_close(struct p3_pmi_session *s)
{
	if (!s->ps_lib)
		return;
	pmi2_fns.finalize();
	/* the library may have threads or handlers of its own: keep it mapped */
	s->ps_lib = NULL;
}

const struct p3_pmi_ops p3_pmi2_ops = {
    .name = "PMI-2",
    .open = pmi2_open,
    .put = pmi2_put,
    .fence = pmi2_fence,
    .get = pmi2_get,
    .close = pmi2_close,
};

#endif /* HAVE_PMI2 */
