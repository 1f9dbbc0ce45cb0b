/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-acl.c - the access control list: which processes may reach which
 * portals through each ac_index. */
#include "lib.h"

void p3_acl_init(struct p3_lib *lib)
{
	/* DECISION (portals3.h): entry 0 admits any process of the same uid and
	 * job to every portal; the other entries admit nothing until set. */
	struct p3_ac *ac = &lib->lib_acl[0];

	ac->ac_valid = 1;
	ac->ac_id.nid = PTL_NID_ANY;
	ac->ac_id.pid = PTL_PID_ANY;
	ac->ac_uid = lib->lib_uid;
	ac->ac_jid = lib->lib_jid; /* PTL_JID_ANY when there is no job id */
	ac->ac_pt = PTL_PT_INDEX_ANY;
}

int p3_lib_ac_entry(struct p3_lib *lib, ptl_ac_index_t ac, ptl_process_id_t id, ptl_uid_t uid,
		    ptl_jid_t jid, ptl_pt_index_t pt)
{
	struct p3_ac *e;

	if (ac > (uint32_t)lib->lib_limits.max_ac_index)
		return PTL_AC_INDEX_INVALID;
	if (pt != PTL_PT_INDEX_ANY && pt > (uint32_t)lib->lib_limits.max_pt_index)
		return PTL_PT_INDEX_INVALID;
	p3_lib_lock(lib);
	e = &lib->lib_acl[ac];
	e->ac_valid = 1;
	e->ac_id = id;
	e->ac_uid = uid;
	e->ac_jid = jid;
	e->ac_pt = pt;
	p3_lib_unlock(lib);
	return PTL_OK;
}

