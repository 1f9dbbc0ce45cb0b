/* SPDX-License-Identifier: BSD-3-Clause */
/* p3rt.c - the <p3rt/p3rt.h> calls: argument and handle checks in front of
 * runtime.c.
 *
 * Every call returns PTL_NO_INIT before PtlInit.  `ni` may be
 * PTL_INVALID_HANDLE (the runtime is process-wide and usually set before
 * PtlNIInit); any other value must name an open NI (PTL_NI_INVALID).
 *
 * Without any runtime (no PtlSetRank, no PTL_* environment, no PMI) the
 * process is a job of one: PtlGetRank says rank 0 of 1 and PtlGetRankId(ni,
 * 0) is the NI's own id (PtlGetId), so programs written for N ranks also run
 * standalone. */
#include "config.h"

#include "rt.h"
#include "runtime.h"

#include <p3rt/p3rt.h>
#include <stdlib.h>

static int p3rt_check(ptl_handle_ni_t ni)
{
	if (!p3_api_initialized())
		return PTL_NO_INIT;
	if (ni != PTL_INVALID_HANDLE && p3_api_ni_check(ni) != PTL_OK)
		return PTL_NI_INVALID;
	return PTL_OK;
}

P3_RT_EXPORT int PtlSetRank(ptl_handle_ni_t ni, unsigned int rank, unsigned int size)
{
	int rc = p3rt_check(ni);

	if (rc != PTL_OK)
		return rc;
	if (rank == (unsigned int)-1 && size == (unsigned int)-1)
		return p3_rt_use_env() == 0 ? PTL_OK : PTL_FAIL;
	if (size == 0 || size > P3_RT_MAX_RANKS || rank >= size)
		return PTL_FAIL;
	return p3_rt_set_rank(rank, size) == 0 ? PTL_OK : PTL_FAIL;
}

static int p3rt_set_map(ptl_handle_ni_t ni, int which, const uint32_t *map, unsigned int size)
{
	int rc = p3rt_check(ni);

	if (rc != PTL_OK)
		return rc;
	if (!map)
		return PTL_SEGV;
	if (size == 0 || size > P3_RT_MAX_RANKS)
		return PTL_FAIL;
	return p3_rt_set_map(which, map, size) == 0 ? PTL_OK : PTL_NO_SPACE;
}

P3_RT_EXPORT int PtlSetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned int size)
{
	return p3rt_set_map(ni, P3_RT_NIDMAP, map, size);
}

P3_RT_EXPORT int PtlSetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned int size)
{
	return p3rt_set_map(ni, P3_RT_PIDMAP, map, size);
}

P3_RT_EXPORT int PtlSetJID(ptl_handle_ni_t ni, ptl_jid_t jid)
{
	int rc = p3rt_check(ni);

	if (rc != PTL_OK)
		return rc;
	p3_rt_set_jid(jid);
	return PTL_OK;
}

P3_RT_EXPORT int PtlGetRank(ptl_handle_ni_t ni, unsigned int *rank, unsigned int *size)
{
	struct p3_rt_view v;
	int rc = p3rt_check(ni);

	if (rc != PTL_OK)
		return rc;
	if (!rank || !size)
		return PTL_SEGV;
	if (p3_rt_view(&v) != 0)
		return PTL_FAIL;
	if (v.rv_rank < 0) {
		*rank = 0;
		*size = 1;
	} else {
		*rank = (unsigned int)v.rv_rank;
		*size = (unsigned int)v.rv_nranks;
	}
	return PTL_OK;
}

P3_RT_EXPORT int PtlGetRankId(ptl_handle_ni_t ni, unsigned int rank, ptl_process_id_t *id)
{
	struct p3_rt_view v;
	int rc = p3rt_check(ni);

	if (rc != PTL_OK)
		return rc;
	if (!id)
		return PTL_SEGV;
	if (p3_rt_view(&v) != 0)
		return PTL_FAIL;
	if (v.rv_rank < 0) {
		/* standalone: a job of one, whose only member is this NI */
		if (rank != 0)
			return PTL_PROCESS_INVALID;
		if (ni == PTL_INVALID_HANDLE)
			return PTL_FAIL;
		return PtlGetId(ni, id) == PTL_OK ? PTL_OK : PTL_FAIL;
	}
	if (rank >= (unsigned int)v.rv_nranks)
		return PTL_PROCESS_INVALID;
	/* maps unknown: the PMI exchange happens in PtlNIInit */
	return p3_rt_rank_id(rank, id) == 0 ? PTL_OK : PTL_FAIL;
}

static int p3rt_get_map(ptl_handle_ni_t ni, int which, uint32_t *map, unsigned int size)
{
	struct p3_rt_view v;
	int rc = p3rt_check(ni);

	if (rc != PTL_OK)
		return rc;
	if (!map)
		return PTL_SEGV;
	if (p3_rt_view(&v) != 0 || v.rv_rank < 0 || !v.rv_maps_known ||
	    size != (unsigned int)v.rv_nranks)
		return PTL_FAIL;
	return p3_rt_copy_map(which, map, size) == 0 ? PTL_OK : PTL_FAIL;
}

P3_RT_EXPORT int PtlGetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned int size)
{
	return p3rt_get_map(ni, P3_RT_NIDMAP, map, size);
}

P3_RT_EXPORT int PtlGetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned int size)
{
	return p3rt_get_map(ni, P3_RT_PIDMAP, map, size);
}

P3_RT_EXPORT int PtlGetJID(ptl_handle_ni_t ni, ptl_jid_t *jid)
{
	struct p3_rt_view v;
	int rc = p3rt_check(ni);

	if (rc != PTL_OK)
		return rc;
	if (!jid)
		return PTL_SEGV;
	if (p3_rt_view(&v) != 0)
		return PTL_FAIL;
	*jid = v.rv_jid;
	return PTL_OK;
}
