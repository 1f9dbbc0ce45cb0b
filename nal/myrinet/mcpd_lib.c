/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcpd_lib.c - the Portals LIB side (portals/lib-*.c), compiled into the NIC
 * for the offload processing mode: the same code the host runs in app and
 * thread modes, not a copy.  The NIC has no job runtime (the endpoint's
 * nid/pid come from the attach, the job id from the host's LIB_OPEN), so the
 * two runtime entry points LIB uses are answered here.
 */
#include "lib-ni.c"
#include "lib-me.c"
#include "lib-md.c"
#include "lib-eq.c"
#include "lib-acl.c"
#include "lib-match.c"
#include "lib-move.c"
#include "lib-parse.c"
#include "lib-msg.c"
#include "handle.c"
#include "errstr.c"
#include "hdr.c"
#include "log.c"
#include "progress.c"
#include "lo/lo.c"
#include "nal_stubs.c"
#include "nal_fail.c" /* p3_nal_fail_kind: the NIC's NAL maps wire status the same way */

const struct p3_runtime *p3_runtime_get(void)
{
	static const struct p3_runtime none = {.rank = -1, .jid = PTL_JID_ANY};
	return &none;
}

int p3_runtime_exchange(ptl_process_id_t my_id)
{
	(void)my_id;
	return 0; /* needs_exchange is never set here */
}
