/* SPDX-License-Identifier: BSD-3-Clause */
/* check_p3num.c - the strict number parser of include/p3num.h: what it
 * accepts (whole string, range bounds, suffixes, bases) and what it refuses
 * with which message (empty, sign on unsigned, overflow, trailing text). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "p3num.h"

static char msg[256];

static int u(const char *s, uint64_t min, uint64_t max, unsigned fl, uint64_t *v)
{
	msg[0] = '\0';
	return p3num_u64("--opt", s, min, max, fl, v, msg, sizeof(msg));
}

START_TEST(u_accepts_whole_decimal)
{
	uint64_t v = 7;
	ck_assert_int_eq(u("0", 0, 10, 0, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(u("100000", 0, 100000, 0, &v), 0);
	ck_assert_uint_eq(v, 100000);
	ck_assert_int_eq(u("18446744073709551615", 0, UINT64_MAX, 0, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(u("010", 0, 100, 0, &v), 0); /* decimal unless BASE0 */
	ck_assert_uint_eq(v, 10);
}
END_TEST

START_TEST(u_refuses_garbage)
{
	uint64_t v = 7;
	const char *bad[] = {"", "abc", "12x", " 12", "12 ", "0x10", "1.5", "+3", "--1", "K"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(u(bad[i], 0, 100, 0, &v), -1);
		ck_assert_ptr_nonnull(strstr(msg, "is not a number"));
	}
	ck_assert_uint_eq(v, 7); /* untouched on failure */
	ck_assert_int_eq(u(NULL, 0, 100, 0, &v), -1);
	u("abc", 0, 100000, 0, &v);
	ck_assert_str_eq(msg, "--opt: \"abc\" is not a number (expected 0-100000)");
}
END_TEST

START_TEST(u_refuses_negative)
{
	uint64_t v = 7;
	ck_assert_int_eq(u("-1", 0, UINT64_MAX, 0, &v), -1);
	ck_assert_str_eq(msg, "--opt: \"-1\" is negative (expected at least 0)");
	ck_assert_int_eq(u("-0", 0, 10, 0, &v), -1);
	ck_assert_int_eq(u("-99999999999999999999999", 0, 10, 0, &v), -1);
	ck_assert_ptr_nonnull(strstr(msg, "is negative"));
}
END_TEST

START_TEST(u_range_and_overflow)
{
	uint64_t v = 7;
	ck_assert_int_eq(u("0", 1, 10, 0, &v), -1);
	ck_assert_str_eq(msg, "--opt: \"0\" is out of range (expected 1-10)");
	ck_assert_int_eq(u("1", 1, 10, 0, &v), 0);
	ck_assert_int_eq(u("10", 1, 10, 0, &v), 0);
	ck_assert_int_eq(u("11", 1, 10, 0, &v), -1);
	ck_assert_int_eq(u("18446744073709551616", 0, UINT64_MAX, 0, &v), -1);
	ck_assert_ptr_nonnull(strstr(msg, "is out of range"));
	ck_assert_int_eq(u("99999999999999999999999999", 0, UINT64_MAX, 0, &v), -1);
	ck_assert_ptr_nonnull(strstr(msg, "is out of range"));
}
END_TEST

START_TEST(u_size_suffixes)
{
	uint64_t v = 0, max = 1ull << 31;
	struct {
		const char *s;
		uint64_t want;
	} ok[] = {{"4096", 4096},  {"4k", 4096},         {"4K", 4096},    {"4KiB", 4096},
	          {"4KB", 4096},   {"4Kb", 4096},        {"1m", 1 << 20}, {"2M", 2 << 20},
	          {"1G", 1 << 30}, {"2GiB", 1ull << 31}, {"64B", 64}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_int_eq(u(ok[i].s, 0, max, P3NUM_SIZE, &v), 0);
		ck_assert_uint_eq(v, ok[i].want);
	}
	ck_assert_int_eq(u("3G", 0, max, P3NUM_SIZE, &v), -1);
	ck_assert_str_eq(msg,
	                 "--opt: \"3G\" is out of range (expected 0-2147483648, K/M/G suffixes)");
	const char *bad[] = {"4T", "4KK", "4Kx", "4 K", "k4", "4iB", "4Ki"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(u(bad[i], 0, max, P3NUM_SIZE, &v), -1);
	ck_assert_int_eq(u("4K", 0, max, 0, &v), -1); /* no suffix without the flag */
	ck_assert_int_eq(u("17179869184G", 0, UINT64_MAX, P3NUM_SIZE, &v), -1);
	ck_assert_ptr_nonnull(strstr(msg, "is out of range"));
}
END_TEST

START_TEST(u_base0)
{
	uint64_t v = 0;
	ck_assert_int_eq(u("0x10", 0, 100, P3NUM_BASE0, &v), 0);
	ck_assert_uint_eq(v, 16);
	ck_assert_int_eq(u("010", 0, 100, P3NUM_BASE0, &v), 0);
	ck_assert_uint_eq(v, 8);
	ck_assert_int_eq(u("08", 0, 100, P3NUM_BASE0, &v), -1);
	ck_assert_int_eq(u("0xg", 0, 100, P3NUM_BASE0, &v), -1);
}
END_TEST

START_TEST(i_signed)
{
	int64_t v = 0;
	ck_assert_int_eq(p3num_i64("--nice", "-20", -20, 19, 0, &v, msg, sizeof(msg)), 0);
	ck_assert_int_eq(v, -20);
	ck_assert_int_eq(p3num_i64("--nice", "+19", -20, 19, 0, &v, msg, sizeof(msg)), 0);
	ck_assert_int_eq(v, 19);
	ck_assert_int_eq(p3num_i64("--nice", "-21", -20, 19, 0, &v, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "--nice: \"-21\" is out of range (expected -20 to 19)");
	ck_assert_int_eq(
	    p3num_i64("x", "-9223372036854775808", INT64_MIN, INT64_MAX, 0, &v, msg, sizeof(msg)),
	    0);
	ck_assert(v == INT64_MIN);
	ck_assert_int_eq(
	    p3num_i64("x", "9223372036854775808", INT64_MIN, INT64_MAX, 0, &v, msg, sizeof(msg)),
	    -1);
	ck_assert_ptr_nonnull(strstr(msg, "is out of range"));
	ck_assert_int_eq(p3num_i64("x", "", -5, 5, 0, &v, msg, sizeof(msg)), -1);
	ck_assert_int_eq(p3num_i64("x", "-", -5, 5, 0, &v, msg, sizeof(msg)), -1);
	ck_assert_int_eq(p3num_i64("x", "3z", -5, 5, 0, &v, msg, sizeof(msg)), -1);
	ck_assert_ptr_nonnull(strstr(msg, "is not a number"));
}
END_TEST

START_TEST(d_fraction)
{
	double v = 0;
	ck_assert_int_eq(p3num_dbl("-d", "0.5", 0, 1e7, &v, msg, sizeof(msg)), 0);
	ck_assert(v == 0.5);
	ck_assert_int_eq(p3num_dbl("-d", "1e3", 0, 1e7, &v, msg, sizeof(msg)), 0);
	ck_assert(v == 1000);
	const char *bad[] = {"", " 1", "1 ", "abc", "nan", "inf", "1.5s"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(p3num_dbl("-d", bad[i], 0, 1e7, &v, msg, sizeof(msg)), -1);
	ck_assert_int_eq(p3num_dbl("-d", "-1", 0, 1e7, &v, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "-d: \"-1\" is out of range (expected 0 to 1e+07)");
	ck_assert_int_eq(p3num_dbl("-d", "1e999", 0, 1e7, &v, msg, sizeof(msg)), -1);
	ck_assert_ptr_nonnull(strstr(msg, "is out of range"));
}
END_TEST

/* The program forms print "PROG: message" and exit with status 2. */
START_TEST(arg_exits_2)
{
	p3num_arg_u64("prog", "--slice-us", "abc", 0, 100000, 0);
}
END_TEST

START_TEST(env_exits_2)
{
	setenv("P3NUM_TEST_VAR", "12x", 1);
	p3num_env_u64("prog", "P3NUM_TEST_VAR", 5, 0, 100, 0);
}
END_TEST

START_TEST(env_default_and_value)
{
	unsetenv("P3NUM_TEST_VAR");
	ck_assert_uint_eq(p3num_env_u64("prog", "P3NUM_TEST_VAR", 5, 0, 100, 0), 5);
	setenv("P3NUM_TEST_VAR", "", 1);
	ck_assert_uint_eq(p3num_env_u64("prog", "P3NUM_TEST_VAR", 5, 0, 100, 0), 5);
	setenv("P3NUM_TEST_VAR", "42", 1);
	ck_assert_uint_eq(p3num_env_u64("prog", "P3NUM_TEST_VAR", 5, 0, 100, 0), 42);
	ck_assert_uint_eq(p3num_arg_u64("prog", "-m", "1K", 0, 4096, P3NUM_SIZE), 1024);
	ck_assert_int_eq(p3num_arg_i64("prog", "-x", "-3", -5, 5, 0), -3);
	ck_assert(p3num_arg_dbl("prog", "-t", "2.5", 0, 10) == 2.5);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("p3num");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, u_accepts_whole_decimal);
	tcase_add_test(tc, u_refuses_garbage);
	tcase_add_test(tc, u_refuses_negative);
	tcase_add_test(tc, u_range_and_overflow);
	tcase_add_test(tc, u_size_suffixes);
	tcase_add_test(tc, u_base0);
	tcase_add_test(tc, i_signed);
	tcase_add_test(tc, d_fraction);
	tcase_add_test(tc, env_default_and_value);
	tcase_add_exit_test(tc, arg_exits_2, 2);
	tcase_add_exit_test(tc, env_exits_2, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
