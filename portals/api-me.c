/* SPDX-License-Identifier: BSD-3-Clause */
/* api-me.c - match entry calls (API side). */
#include "api.h"

int PtlMEAttach(ptl_handle_ni_t h, ptl_pt_index_t pt, ptl_process_id_t match_id,
		ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
		ptl_ins_pos_t pos, ptl_handle_me_t *me)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!me)
		return PTL_SEGV;
	if (pt == PTL_PT_INDEX_ANY)
		return PTL_PT_INDEX_INVALID;
	return ni->ni_if->me_insert(ni->ni_lib, PTL_INVALID_HANDLE, pt, match_id, match_bits,
				    ignore_bits, unlink, pos, NULL, me);
}

int PtlMEAttachAny(ptl_handle_ni_t h, ptl_pt_index_t *pt, ptl_process_id_t match_id,
		   ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits,
		   ptl_unlink_t unlink, ptl_handle_me_t *me)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!me || !pt)
		return PTL_SEGV;
	return ni->ni_if->me_insert(ni->ni_lib, PTL_INVALID_HANDLE, PTL_PT_INDEX_ANY, match_id,
				    match_bits, ignore_bits, unlink, PTL_INS_AFTER, pt, me);
}

int PtlMEInsert(ptl_handle_me_t base, ptl_process_id_t match_id, ptl_match_bits_t match_bits,
		ptl_match_bits_t ignore_bits, ptl_unlink_t unlink, ptl_ins_pos_t pos,
		ptl_handle_me_t *me)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_obj_ni(base, P3_HT_ME)))
		return PTL_ME_INVALID;
	if (!me)
		return PTL_SEGV;
	return ni->ni_if->me_insert(ni->ni_lib, base, 0, match_id, match_bits, ignore_bits, unlink,
				    pos, NULL, me);
}

int PtlMEUnlink(ptl_handle_me_t meh)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_obj_ni(meh, P3_HT_ME)))
		return PTL_ME_INVALID;
	return ni->ni_if->me_unlink(ni->ni_lib, meh);
}

int PtlMEUnlinkNoWait(ptl_handle_me_t meh)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_obj_ni(meh, P3_HT_ME)))
		return PTL_ME_INVALID;
	if (ni->ni_if->me_unlink_nowait)
		return ni->ni_if->me_unlink_nowait(ni->ni_lib, meh);
	return ni->ni_if->me_unlink(ni->ni_lib, meh);
}

/* PtlMEMDPost's and PtlMEMDPostNoWait's argument checks: PTL_OK and the
 * NI of base, or the error to return. */
static int memdpost_check(ptl_handle_me_t base, ptl_handle_eq_t test_eq, const ptl_handle_me_t *me,
			  const ptl_handle_md_t *md_handle, struct p3_api_ni **ni)
{
	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(*ni = p3_api_obj_ni(base, P3_HT_ME)))
		return PTL_ME_INVALID;
	if (!me || !md_handle)
		return PTL_SEGV;
	if (test_eq != PTL_EQ_NONE && p3_handle_type(test_eq) != P3_HT_EQ)
		return PTL_EQ_INVALID;
	return PTL_OK;
}

int PtlMEMDPost(ptl_handle_me_t base, ptl_process_id_t match_id, ptl_match_bits_t match_bits,
		ptl_match_bits_t ignore_bits, ptl_unlink_t unlink, ptl_ins_pos_t pos, ptl_md_t md,
		ptl_unlink_t md_unlink, ptl_handle_eq_t test_eq, ptl_handle_me_t *me,
		ptl_handle_md_t *md_handle)
{
	struct p3_api_ni *ni;
	int rc = memdpost_check(base, test_eq, me, md_handle, &ni);

	if (rc != PTL_OK)
		return rc;
	return ni->ni_if->me_md_post(ni->ni_lib, base, match_id, match_bits, ignore_bits, unlink,
				     pos, &md, md_unlink, test_eq, me, md_handle);
}

int PtlMEMDPostNoWait(ptl_handle_me_t base, ptl_process_id_t match_id,
		      ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits,
		      ptl_unlink_t unlink, ptl_ins_pos_t pos, ptl_md_t md, ptl_unlink_t md_unlink,
		      ptl_handle_eq_t test_eq, ptl_handle_me_t *me, ptl_handle_md_t *md_handle)
{
	struct p3_api_ni *ni;
	int rc = memdpost_check(base, test_eq, me, md_handle, &ni);

	if (rc != PTL_OK)
		return rc;
	if (!ni->ni_if->me_md_post_nowait)
		return ni->ni_if->me_md_post(ni->ni_lib, base, match_id, match_bits, ignore_bits,
					     unlink, pos, &md, md_unlink, test_eq, me, md_handle);
	return ni->ni_if->me_md_post_nowait(ni->ni_lib, base, match_id, match_bits, ignore_bits,
					    unlink, pos, &md, md_unlink, test_eq, me, md_handle);
}

int PtlMEMDPostSync(ptl_handle_ni_t h)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	return ni->ni_if->me_md_post_sync ? ni->ni_if->me_md_post_sync(ni->ni_lib) : PTL_OK;
}
