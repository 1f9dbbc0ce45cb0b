/* SPDX-License-Identifier: BSD-3-Clause */
/* api-acl.c - PtlACEntry (API side). */
#include "api.h"

int PtlACEntry(ptl_handle_ni_t h, ptl_ac_index_t ac, ptl_process_id_t match_id, ptl_uid_t uid,
	       ptl_jid_t jid, ptl_pt_index_t pt)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	return ni->ni_if->ac_entry(ni->ni_lib, ac, match_id, uid, jid, pt);
}
