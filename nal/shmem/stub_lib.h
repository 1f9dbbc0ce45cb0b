/* SPDX-License-Identifier: BSD-3-Clause */
/* stub_lib.h - the stub LIB under which test_hostile.c and bench_nal.c run
 * the shmem NAL alone (no matching, no events): its state, and the LIB
 * callbacks both programs share (stub_lib.c).  Each program writes its own
 * p3_lib_parse and p3_lib_finalize (what it counts and checks). */
#ifndef P3_SHMEM_STUB_LIB_H
#define P3_SHMEM_STUB_LIB_H

#include "shmem.h"

struct p3_lib {
	void *priv;                     /* the NAL's instance (init's *priv) */
	ptl_process_id_t id;            /* what p3_lib_id returns */
	uint8_t *rbuf;                  /* where received payloads go */
	size_t rlen;                    /* ... and its size */
	uint64_t nrecv, nfinal, nrdone; /* parse calls, finalized sends, finalized receives */
};
struct p3_msg {
	int dummy;
};

/* p3_lib_log prints the messages of level <= this to stderr (default -1:
 * none; the hostile test's input makes the NAL complain on purpose) */
extern int stub_lib_log_max;

#endif
