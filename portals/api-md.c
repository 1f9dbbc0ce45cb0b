/* SPDX-License-Identifier: BSD-3-Clause */
/* api-md.c - memory descriptor calls (API side). */
#include "api.h"

int PtlMDAttach(ptl_handle_me_t meh, ptl_md_t md, ptl_unlink_t unlink, ptl_handle_md_t *md_handle)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_obj_ni(meh, P3_HT_ME)))
		return PTL_ME_INVALID;
	if (!md_handle)
		return PTL_SEGV;
	return ni->ni_if->md_attach(ni->ni_lib, meh, &md, unlink, md_handle);
}

int PtlMDBind(ptl_handle_ni_t h, ptl_md_t md, ptl_unlink_t unlink, ptl_handle_md_t *md_handle)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!md_handle)
		return PTL_SEGV;
	return ni->ni_if->md_attach(ni->ni_lib, PTL_INVALID_HANDLE, &md, unlink, md_handle);
}

int PtlMDUnlink(ptl_handle_md_t mdh)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_obj_ni(mdh, P3_HT_MD)))
		return PTL_MD_INVALID;
	return ni->ni_if->md_unlink(ni->ni_lib, mdh);
}

int PtlMDUpdate(ptl_handle_md_t mdh, ptl_md_t *old_md, ptl_md_t *new_md, ptl_handle_eq_t test_eq)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_obj_ni(mdh, P3_HT_MD)))
		return PTL_MD_INVALID;
	if (test_eq != PTL_EQ_NONE && p3_handle_type(test_eq) != P3_HT_EQ)
		return PTL_EQ_INVALID;
	return ni->ni_if->md_update(ni->ni_lib, mdh, old_md, new_md, test_eq);
}
