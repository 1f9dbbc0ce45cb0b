/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plain_test.h - the assertion of the test programs that are a plain main()
 * (not Check suites, which use harness.h): each check either holds or the
 * function reporting it stops with "FAIL: <what>" on stderr and returns 1,
 * which main() passes on as the exit status (0 pass, 1 fail).
 * Used by tests/myri_bypass.c and nal/myrinet/test_posted.c.
 */
#ifndef P3_PLAIN_TEST_H
#define P3_PLAIN_TEST_H

#include <stdio.h>

/* CHECK(cond, printf format, ...): when cond is false, print "FAIL: " and
 * the message on stderr and return 1 from the calling function (which
 * must return int). */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL: " __VA_ARGS__);                                     \
			fputc('\n', stderr);                                                       \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

#endif
