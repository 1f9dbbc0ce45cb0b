/* SPDX-License-Identifier: BSD-3-Clause */
/* nal_fail.c - the failure kind of a transfer that ended with an errno-style
 * status, shared by the NALs whose transport reports one (rmpp: udp and
 * ether; the myrinet NIC's completion events carry the same codes). */
#include <errno.h>

#include "nal.h"

ptl_ni_fail_t p3_nal_fail_kind(int status)
{
	switch (status) {
	case 0:
		return PTL_NI_OK;
	case -ETIMEDOUT:
		return PTL_NI_PEER_DEAD;
	case -ECONNRESET:
		return PTL_NI_PEER_RESTARTED;
	case -ECANCELED:
		return PTL_NI_UNLINKED;
	default:
		return PTL_NI_FAIL;
	}
}
