/* SPDX-License-Identifier: BSD-3-Clause */
/* rt_stubs.c - see rt_stubs.h. */
#include "rt_stubs.h"

#include "runtime.h"

int stub_initialized = 1;
int stub_ni_open = 1;
ptl_process_id_t stub_my_id = {.nid = 7, .pid = 42};

int p3_api_initialized(void)
{
	return stub_initialized;
}

int p3_api_ni_check(ptl_handle_ni_t ni)
{
	return stub_ni_open && ni == STUB_NI ? PTL_OK : PTL_NI_INVALID;
}

int PtlGetId(ptl_handle_ni_t ni, ptl_process_id_t *id)
{
	if (p3_api_ni_check(ni) != PTL_OK)
		return PTL_NI_INVALID;
	*id = stub_my_id;
	return PTL_OK;
}
