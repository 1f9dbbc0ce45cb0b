/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_test_util.c - the check tally and the completion waits of
 * fi_test_util.h. */
#include "fi_test_util.h"

#include <string.h>
#include <time.h>

int fi_test_checks, fi_test_failures;

int fi_test_report(const char *prefix)
{
	printf("%s%d checks, %d failures\n", prefix, fi_test_checks, fi_test_failures);
	return fi_test_failures ? 1 : 0;
}

/* completions read while waiting for another context */
enum { STASH_MAX = 1024 };
static struct fi_cq_tagged_entry stash[STASH_MAX];
static int nstash;

static int unstash(void *ctx, struct fi_cq_tagged_entry *out)
{
	for (int i = 0; i < nstash; i++) {
		if (stash[i].op_context == ctx) {
			if (out)
				*out = stash[i];
			stash[i] = stash[--nstash];
			return 1;
		}
	}
	return 0;
}

/* one read of cq: 1 a completion (in *e), -1 an error entry (in *ee), 0 nothing */
static int read_one(struct fid_cq *cq, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *ee)
{
	ssize_t r = fi_cq_read(cq, e, 1);
	if (r == 1)
		return 1;
	if (r != -FI_EAVAIL)
		return 0;
	memset(ee, 0, sizeof(*ee));
	fi_cq_readerr(cq, ee, 0);
	return -1;
}

int fi_test_wait(struct fid_cq *cq, void *ctx, struct fi_cq_tagged_entry *out,
                 struct fi_cq_err_entry *errout)
{
	struct timespec t0, t;
	if (unstash(ctx, out))
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry ee;
		int r = read_one(cq, &e, &ee);
		if (r == 1 && e.op_context == ctx) {
			if (out)
				*out = e;
			return 0;
		}
		if (r == 1 && nstash < STASH_MAX)
			stash[nstash++] = e; /* another operation's */
		if (r == -1 && ee.op_context == ctx) {
			if (errout)
				*errout = ee;
			return ee.err;
		}
		if (r != 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			printf("FATAL: timeout waiting for a completion\n");
			exit(1);
		}
	}
}

void fi_test_cq_idle(struct fid_cq *cq, int polls)
{
	for (int i = 0; i < polls; i++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry ee;
		if (read_one(cq, &e, &ee) == 1 && nstash < STASH_MAX)
			stash[nstash++] = e;
	}
}
