/* SPDX-License-Identifier: BSD-3-Clause */
/* pmix.c - the runtime's PMIx backend: OpenPMIx's libpmix (srun --mpi=pmix,
 * prterun), loaded with dlopen when the launcher asks for it (rt.h says
 * why).  The library finds its server from PMIX_* variables itself.
 *
 * Keys are put with PMIX_GLOBAL scope and fetched from the rank that put
 * them; the fence collects the data (PMIX_COLLECT_DATA), so the gets that
 * follow are answered locally.  P3_RUNTIME_PMI_TIMEOUT bounds the fence and
 * every get (PMIX_TIMEOUT). */
#include "config.h"

#ifdef HAVE_PMIX

#include "rt.h"

#include <dlfcn.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef P3_PMIX_SONAME
#define P3_PMIX_SONAME "libpmix.so.2"
#endif

#define PMIX_DEFAULT_TIMEOUT_S 120

/* Entry points, typed by the library's own header. */
struct pmix_fns {
	__typeof__(PMIx_Init) *init;
	__typeof__(PMIx_Finalize) *finalize;
	__typeof__(PMIx_Put) *put;
	__typeof__(PMIx_Commit) *commit;
	__typeof__(PMIx_Fence) *fence;
	__typeof__(PMIx_Get) *get;
	__typeof__(PMIx_Value_destruct) *value_destruct;
	__typeof__(PMIx_Error_string) *error_string;
};

static const char *const pmix_names[] = {
    "PMIx_Init", "PMIx_Finalize",       "PMIx_Put",          "PMIx_Commit", "PMIx_Fence",
    "PMIx_Get",  "PMIx_Value_destruct", "PMIx_Error_string",
};

static struct pmix_fns pmix_fns; /* one session per process */
static pmix_proc_t pmix_me;
static int pmix_timeout_s = PMIX_DEFAULT_TIMEOUT_S; /* 0: forever */

static const char *pmix_lib_name(void)
{
	const char *v = getenv("P3_PMIX_LIB");

	return v && *v ? v : P3_PMIX_SONAME;
}

/* Fill a pmix_info_t by hand: the library's PMIX_INFO_LOAD is a call into
 * it, and the plain types below need no copy. */
static void pmix_info_bool(pmix_info_t *info, const char *key, bool flag)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->key, sizeof(info->key), "%s", key);
	info->value.type = PMIX_BOOL;
	info->value.data.flag = flag;
}

static void pmix_info_int(pmix_info_t *info, const char *key, int v)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->key, sizeof(info->key), "%s", key);
	info->value.type = PMIX_INT;
	info->value.data.integer = v;
}

static void pmix_release(pmix_value_t *val)
{
	if (!val)
		return;
	pmix_fns.value_destruct(val);
	free(val);
}

static int pmix_job_size(int *size_p, char *err, size_t errlen)
{
	pmix_proc_t wild = pmix_me;
	pmix_value_t *val = NULL;
	pmix_status_t rc;

	wild.rank = PMIX_RANK_WILDCARD;
	rc = pmix_fns.get(&wild, PMIX_JOB_SIZE, NULL, 0, &val);
	if (rc != PMIX_SUCCESS || !val) {
		snprintf(err, errlen, "PMIx: no job size (PMIX_JOB_SIZE): %s",
		         pmix_fns.error_string(rc));
		return -1;
	}
	if (val->type != PMIX_UINT32 || val->data.uint32 == 0 ||
	    val->data.uint32 > P3_RT_MAX_RANKS) {
		snprintf(err, errlen, "PMIx: PMIX_JOB_SIZE of type %d is not a job size",
		         (int)val->type);
		pmix_release(val);
		return -1;
	}
	*size_p = (int)val->data.uint32;
	pmix_release(val);
	return 0;
}

static int pmix_open(struct p3_pmi_session *s, char *err, size_t errlen)
{
	void *fns[sizeof(pmix_names) / sizeof(pmix_names[0])];
	const char *tmo = getenv("P3_RUNTIME_PMI_TIMEOUT");
	pmix_status_t rc;
	uint32_t v;
	int size;

	_Static_assert(sizeof(fns) == sizeof(pmix_fns), "one name per entry point");
	if (tmo) {
		if (p3_rt_parse_u32("P3_RUNTIME_PMI_TIMEOUT", tmo, &v, err, errlen) != 0)
			return -1;
		pmix_timeout_s = v > INT32_MAX ? 0 : (int)v;
	}
	if (p3_pmi_dlopen("PMIx", pmix_lib_name(), pmix_names, fns, sizeof(fns) / sizeof(fns[0]),
	                  &s->ps_lib, err, errlen) != 0)
		return -1;
	memcpy(&pmix_fns, fns, sizeof(pmix_fns));
	s->ps_priv = &pmix_fns;
	rc = pmix_fns.init(&pmix_me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		snprintf(err, errlen, "PMIx: PMIx_Init failed: %s", pmix_fns.error_string(rc));
		goto fail;
	}
	if (pmix_job_size(&size, err, errlen) != 0)
		goto fail_fini;
	if (pmix_me.rank >= (pmix_rank_t)size) {
		snprintf(err, errlen, "PMIx: rank %u of %d is not a valid position in a job",
		         pmix_me.rank, size);
		goto fail_fini;
	}
	s->ps_rank = (int)pmix_me.rank;
	s->ps_size = size;
	snprintf(s->ps_kvsname, sizeof(s->ps_kvsname), "%s", pmix_me.nspace);
	return 0;

fail_fini:
	pmix_fns.finalize(NULL, 0);
fail:
	dlclose(s->ps_lib);
	s->ps_lib = NULL;
	return -1;
}

static int pmix_put(struct p3_pmi_session *s, const char *key, const char *value, char *err,
                    size_t errlen)
{
	pmix_value_t val;
	pmix_status_t rc;

	(void)s;
	if (strlen(key) >= PMIX_MAX_KEYLEN) {
		snprintf(err, errlen, "PMIx: key '%.64s' is too long", key);
		return -1;
	}
	memset(&val, 0, sizeof(val));
	val.type = PMIX_STRING;
	val.data.string = (char *)value; /* PMIx_Put copies it */
	rc = pmix_fns.put(PMIX_GLOBAL, key, &val);
	if (rc != PMIX_SUCCESS) {
		snprintf(err, errlen, "PMIx: PMIx_Put(%.64s): %s", key, pmix_fns.error_string(rc));
		return -1;
	}
	return 0;
}

static int pmix_fence(struct p3_pmi_session *s, char *err, size_t errlen)
{
	pmix_info_t info[2];
	size_t ninfo = 1;
	pmix_status_t rc;

	(void)s;
	rc = pmix_fns.commit();
	if (rc != PMIX_SUCCESS) {
		snprintf(err, errlen, "PMIx: PMIx_Commit: %s", pmix_fns.error_string(rc));
		return -1;
	}
	pmix_info_bool(&info[0], PMIX_COLLECT_DATA, true);
	if (pmix_timeout_s > 0)
		pmix_info_int(&info[ninfo++], PMIX_TIMEOUT, pmix_timeout_s);
	/* NULL procs: every process of my namespace */
	rc = pmix_fns.fence(NULL, 0, info, ninfo);
	if (rc != PMIX_SUCCESS) {
		snprintf(err, errlen, "PMIx: PMIx_Fence: %s%s", pmix_fns.error_string(rc),
		         rc == PMIX_ERR_TIMEOUT ? " (P3_RUNTIME_PMI_TIMEOUT)" : "");
		return -1;
	}
	return 0;
}

static int pmix_get(struct p3_pmi_session *s, int src, const char *key, char *value, size_t vallen,
                    char *err, size_t errlen)
{
	pmix_proc_t proc = pmix_me;
	pmix_value_t *val = NULL;
	pmix_info_t info;
	pmix_status_t rc;
	size_t len;

	if (src < 0 || src >= s->ps_size) {
		snprintf(err, errlen, "PMIx: get %.64s: rank %d is not in the job", key, src);
		return -1;
	}
	proc.rank = (pmix_rank_t)src;
	pmix_info_int(&info, PMIX_TIMEOUT, pmix_timeout_s);
	rc = pmix_fns.get(&proc, key, pmix_timeout_s > 0 ? &info : NULL, pmix_timeout_s > 0 ? 1 : 0,
	                  &val);
	if (rc != PMIX_SUCCESS || !val) {
		snprintf(err, errlen, "PMIx: PMIx_Get(rank %d, %.64s): %s", src, key,
		         pmix_fns.error_string(rc));
		return -1;
	}
	if (val->type != PMIX_STRING || !val->data.string) {
		snprintf(err, errlen, "PMIx: %.64s of rank %d: value of type %d, not a string", key,
		         src, (int)val->type);
		pmix_release(val);
		return -1;
	}
	len = strlen(val->data.string);
	if (len >= vallen) {
		snprintf(err, errlen, "PMIx: %.64s of rank %d: value longer than %zu bytes", key,
		         src, vallen - 1);
		pmix_release(val);
		return -1;
	}
	memcpy(value, val->data.string, len + 1);
	pmix_release(val);
	return 0;
}

static void pmix_close(struct p3_pmi_session *s)
{
	if (!s->ps_lib)
		return;
	pmix_fns.finalize(NULL, 0);
	/* libpmix leaves handlers behind: keep it mapped */
	s->ps_lib = NULL;
}

const struct p3_pmi_ops p3_pmix_ops = {
    .name = "PMIx",
    .open = pmix_open,
    .put = pmix_put,
    .fence = pmix_fence,
    .get = pmix_get,
    .close = pmix_close,
};

#endif /* HAVE_PMIX */
