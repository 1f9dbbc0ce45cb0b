/* SPDX-License-Identifier: BSD-3-Clause */
/* fi_test_util.c - the check tally of fi_test_util.h. */
#include "fi_test_util.h"

int fi_test_checks, fi_test_failures;

int fi_test_report(const char *prefix)
{
	printf("%s%d checks, %d failures\n", prefix, fi_test_checks, fi_test_failures);
	return fi_test_failures ? 1 : 0;
}
