/* SPDX-License-Identifier: BSD-3-Clause */
/* api-move.c - data movement calls (API side).  In app progress mode each
 * call also gives the NAL one non-blocking pass. */
#include "api.h"

static inline void p3_api_kick(struct p3_api_ni *ni)
{
	if (!ni->ni_thread)
		p3_api_progress(ni, 0);
}

int PtlPut(ptl_handle_md_t md, ptl_ack_req_t ack, ptl_process_id_t target, ptl_pt_index_t pt,
	   ptl_ac_index_t ac, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
	   ptl_hdr_data_t hdr_data)
{
	struct p3_api_ni *ni;
	int rc;

	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	if (P3_UNLIKELY(!(ni = p3_api_obj_ni(md, P3_HT_MD))))
		return PTL_MD_INVALID;
	rc = ni->ni_if->put(ni->ni_lib, md, 1, 0, 0, ack, target, pt, ac, match_bits,
			    remote_offset, hdr_data);
	p3_api_kick(ni);
	return rc;
}

int PtlPutRegion(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack,
		 ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
		 ptl_match_bits_t match_bits, ptl_size_t remote_offset, ptl_hdr_data_t hdr_data)
{
	struct p3_api_ni *ni;
	int rc;

	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	if (P3_UNLIKELY(!(ni = p3_api_obj_ni(md, P3_HT_MD))))
		return PTL_MD_INVALID;
	rc = ni->ni_if->put(ni->ni_lib, md, 0, local_offset, length, ack, target, pt, ac,
			    match_bits, remote_offset, hdr_data);
	p3_api_kick(ni);
	return rc;
}

int PtlGet(ptl_handle_md_t md, ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
	   ptl_match_bits_t match_bits, ptl_size_t remote_offset)
{
	struct p3_api_ni *ni;
	int rc;

	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	if (P3_UNLIKELY(!(ni = p3_api_obj_ni(md, P3_HT_MD))))
		return PTL_MD_INVALID;
	rc = ni->ni_if->get(ni->ni_lib, md, 1, 0, 0, target, pt, ac, match_bits, remote_offset);
	p3_api_kick(ni);
	return rc;
}

int PtlGetRegion(ptl_handle_md_t md, ptl_size_t local_offset, ptl_size_t length,
		 ptl_process_id_t target, ptl_pt_index_t pt, ptl_ac_index_t ac,
		 ptl_match_bits_t match_bits, ptl_size_t remote_offset)
{
	struct p3_api_ni *ni;
	int rc;

	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	if (P3_UNLIKELY(!(ni = p3_api_obj_ni(md, P3_HT_MD))))
		return PTL_MD_INVALID;
	rc = ni->ni_if->get(ni->ni_lib, md, 0, local_offset, length, target, pt, ac, match_bits,
			    remote_offset);
	p3_api_kick(ni);
	return rc;
}

int PtlGetPut(ptl_handle_md_t get_md, ptl_handle_md_t put_md, ptl_process_id_t target,
	      ptl_pt_index_t pt, ptl_ac_index_t ac, ptl_match_bits_t match_bits,
	      ptl_size_t remote_offset, ptl_hdr_data_t hdr_data)
{
	struct p3_api_ni *ni;
	int rc;

	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	if (!(ni = p3_api_obj_ni(get_md, P3_HT_MD)) || p3_api_obj_ni(put_md, P3_HT_MD) != ni)
		return PTL_MD_INVALID;
	rc = ni->ni_if->getput(ni->ni_lib, get_md, put_md, target, pt, ac, match_bits,
			       remote_offset, hdr_data);
	p3_api_kick(ni);
	return rc;
}
