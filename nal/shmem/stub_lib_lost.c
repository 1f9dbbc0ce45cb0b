/* SPDX-License-Identifier: BSD-3-Clause */
/* stub_lib_lost.c - the LIB's lost-ACK and lost-REPLY callbacks (nal.h) as
 * no-ops, for the programs that run the shmem NAL under a stub LIB
 * (test_hostile.c, bench_nal.c): they keep no state for ACKs or REPLYs,
 * so a lost one has nothing to update. */
#include "config.h"

#include "shmem.h"

void p3_lib_ack_lost(struct p3_lib *lib, ptl_process_id_t peer, ptl_handle_md_t mdh, uint64_t link,
                     ptl_ni_fail_t status)
{
	(void)lib;
	(void)peer;
	(void)mdh;
	(void)link;
	(void)status;
}

void p3_lib_reply_lost(struct p3_lib *lib, ptl_process_id_t peer, ptl_handle_md_t mdh,
                       uint64_t offset, ptl_ni_fail_t status)
{
	(void)lib;
	(void)peer;
	(void)mdh;
	(void)offset;
	(void)status;
}
