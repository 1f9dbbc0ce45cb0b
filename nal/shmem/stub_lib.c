/* SPDX-License-Identifier: BSD-3-Clause */
/* stub_lib.c - the LIB callbacks (nal.h) that the programs running the shmem
 * NAL under a stub LIB (test_hostile.c, bench_nal.c) share: the NI's id,
 * the log, and the lost-ACK and lost-REPLY callbacks as no-ops (they keep no
 * state for ACKs or REPLYs, so a lost one has nothing to update). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "stub_lib.h"

int stub_lib_log_max = -1;

ptl_process_id_t p3_lib_id(const struct p3_lib *lib)
{
	return lib->id;
}

void p3_lib_log(const struct p3_lib *lib, int level, const char *fmt, ...)
{
	va_list ap;
	(void)lib;
	if (level > stub_lib_log_max)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

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

/* Their LIB takes no eager put itself either (every header goes through
 * their p3_lib_parse) and runs no EQ handlers. */
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
