/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_test_util.h - the scaffolding shared by the one-process provider
 * tests (fi_selftest.c, fi_multiep.c, fi_atomic.c): CHECK counts a check
 * and reports a failed one without stopping, TRY stops the program on a
 * libfabric call that returns an error, fi_test_report prints the tally and
 * gives the exit status; fi_test_wait waits for one operation's completion
 * on a CQ. */
#ifndef FI_TEST_UTIL_H
#define FI_TEST_UTIL_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>

/* checks made and failed so far (fi_test_util.c) */
extern int fi_test_checks, fi_test_failures;

/* CHECK(cond, printf format, ...): count a check; print FAIL with the
 * place and the message when cond is false, and go on */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		fi_test_checks++;                                                                  \
		if (!(cond)) {                                                                     \
			fi_test_failures++;                                                        \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                                \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

/* TRY(call): a negative return (-FI_E...) is fatal: print it and exit(1) */
#define TRY(call)                                                                                  \
	do {                                                                                       \
		int rc_ = (int)(call);                                                             \
		if (rc_ < 0) {                                                                     \
			printf("FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
			       fi_strerror(-rc_));                                                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Print "<prefix>N checks, M failures" and return the exit status: 0 when
 * nothing failed, else 1. */
int fi_test_report(const char *prefix);

/* Wait (10 s at most, else print FATAL and exit 1) for the completion of
 * the operation whose context is ctx on cq: 0 with the entry in *out (when
 * out is not NULL), or its positive error with the error entry in *errout.
 * Completions of other operations read meanwhile are kept for their own
 * wait (the stash is shared by every CQ: contexts tell them apart); error
 * entries of other operations are dropped. */
int fi_test_wait(struct fid_cq *cq, void *ctx, struct fi_cq_tagged_entry *out,
                 struct fi_cq_err_entry *errout);

/* Read cq `polls` times as an idle application would: completions are kept
 * for fi_test_wait, error entries dropped, so the provider's idle-time work
 * runs and the CQ is seen empty. */
void fi_test_cq_idle(struct fid_cq *cq, int polls);

#endif
