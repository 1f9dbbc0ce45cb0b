/* SPDX-License-Identifier: BSD-3-Clause */
/* stub_lib_lost.c - the LIB's lost-ACK and lost-REPLY callbacks (nal.h) as
 * no-ops, for the programs that run the shmem NAL under a stub LIB
 * (test_hostile.c, bench_nal.c): they keep no state for ACKs or REPLYs,
 * so a lost one has nothing to update.  Their LIB takes no eager put
 * itself either (every header goes through their p3_lib_parse) and runs
 * no EQ handlers. */
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

int p3_lib_parse_eager(struct p3_lib *lib, const struct p3_hdr *hdr, const void *payload,
                       uint64_t *delivered)
{
	(void)lib;
	(void)hdr;
	(void)payload;
	(void)delivered;
	return 0;
}

int p3_lib_runs_handlers(const struct p3_lib *lib)
{
	(void)lib;
	return 0;
}
