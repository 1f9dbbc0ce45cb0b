/* SPDX-License-Identifier: BSD-3-Clause */
/* test_env.c - env.c parsing (good and malformed), the p3rt.h calls and
 * the precedence rules of runtime.c, against stub core hooks. */
#include "config.h"

#include "rt.h"
#include "rt_stubs.h"
#include "runtime.h"

#include <check.h>
#include <p3rt/p3rt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char err[P3_RT_ERRLEN];

static void clear_env(void)
{
	unsetenv("PTL_MY_RID");
	unsetenv("PTL_NIDMAP");
	unsetenv("PTL_PIDMAP");
	unsetenv("PTL_MY_JID");
	unsetenv("PMI_FD");
	unsetenv("PMI_RANK");
	unsetenv("PMI_SIZE");
	unsetenv("PMI_PORT");
	unsetenv("PMI_ID");
	p3_runtime_reset();
	stub_initialized = 1;
	stub_ni_open = 1;
}

static void set_job(const char *rid, const char *nids, const char *pids, const char *jid)
{
	clear_env();
	if (rid)
		setenv("PTL_MY_RID", rid, 1);
	if (nids)
		setenv("PTL_NIDMAP", nids, 1);
	if (pids)
		setenv("PTL_PIDMAP", pids, 1);
	if (jid)
		setenv("PTL_MY_JID", jid, 1);
}

#define ck_assert_err_has(s) ck_assert_msg(strstr(err, (s)) != NULL, "'%s' lacks '%s'", err, (s))

START_TEST(parse_u32_good)
{
	uint32_t v;

	ck_assert_int_eq(p3_rt_parse_u32("X", "0", &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(p3_rt_parse_u32("X", "4294967294", &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, 4294967294u);
	ck_assert_int_eq(p3_rt_parse_u32("X", "0x1F", &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, 31);
	ck_assert_int_eq(p3_rt_parse_u32("X", "007", &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(parse_u32_bad)
{
	static const char *const bad[] = {"",    "-1", "+1",  " 1",         "1 ",
	                                  "12a", "0x", "0xg", "4294967296", "99999999999999999999",
	                                  "1.5"};
	uint32_t v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(p3_rt_parse_u32("PTL_MY_JID", bad[i], &v, err, sizeof(err)) == -1,
		              "'%s' accepted", bad[i]);
		ck_assert_err_has("PTL_MY_JID");
		ck_assert_msg(strstr(err, bad[i]) != NULL, "'%s' not named in '%s'", bad[i], err);
	}
}
END_TEST

START_TEST(parse_map_good)
{
	uint32_t *map;
	unsigned int n;

	ck_assert_int_eq(p3_rt_parse_map("PTL_PIDMAP", "5", 0, &map, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(map[0], 5);
	free(map);
	ck_assert_int_eq(p3_rt_parse_map("PTL_PIDMAP", "0:1:0x10:3", 0, &map, &n, err, sizeof(err)),
	                 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(map[2], 16);
	ck_assert_uint_eq(map[3], 3);
	free(map);
	ck_assert_int_eq(
	    p3_rt_parse_map("PTL_NIDMAP", "10.0.0.1:127.0.0.1:3", 1, &map, &n, err, sizeof(err)),
	    0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(map[0], 0x0a000001u);
	ck_assert_uint_eq(map[1], 0x7f000001u);
	ck_assert_uint_eq(map[2], 3);
	free(map);
}
END_TEST

START_TEST(parse_map_bad)
{
	static const struct {
		const char *in, *token;
	} bad[] = {
	    {"", "empty"},
	    {"1::2", "''"},
	    {"1:2:", "''"},
	    {":1", "''"},
	    {"1:x7:2", "'x7'"},
	    {"1:-2", "'-2'"},
	    {"1:2 ", "'2 '"},
	    {"0xffffffff", "reserved"},
	    {"1:4294967296", "'4294967296'"},
	};
	uint32_t *map;
	unsigned int n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(
		    p3_rt_parse_map("PTL_PIDMAP", bad[i].in, 0, &map, &n, err, sizeof(err)) == -1,
		    "'%s' accepted", bad[i].in);
		ck_assert_err_has("PTL_PIDMAP");
		ck_assert_err_has(bad[i].token);
	}
	/* dotted quads only where allowed */
	ck_assert_int_eq(p3_rt_parse_map("PTL_PIDMAP", "10.0.0.1", 0, &map, &n, err, sizeof(err)),
	                 -1);
	ck_assert_int_eq(p3_rt_parse_map("PTL_NIDMAP", "10.0.0.256", 1, &map, &n, err, sizeof(err)),
	                 -1);
	ck_assert_err_has("'10.0.0.256'");
}
END_TEST

START_TEST(env_good)
{
	struct p3_rt_env env;

	set_job("2", "0:0:0", "5:6:7", "1234");
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), 0);
	ck_assert_int_eq(env.re_present, 1);
	ck_assert_uint_eq(env.re_rank, 2);
	ck_assert_uint_eq(env.re_nranks, 3);
	ck_assert_uint_eq(env.re_pidmap[2], 7);
	ck_assert_int_eq(env.re_have_jid, 1);
	ck_assert_uint_eq(env.re_jid, 1234);
	p3_rt_env_free(&env);

	set_job(NULL, NULL, NULL, "0x10");
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), 0);
	ck_assert_int_eq(env.re_present, 0);
	ck_assert_uint_eq(env.re_jid, 16);
	p3_rt_env_free(&env);

	set_job(NULL, NULL, NULL, NULL);
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), 0);
	ck_assert_int_eq(env.re_present, 0);
	ck_assert_int_eq(env.re_have_jid, 0);
}
END_TEST

START_TEST(env_bad)
{
	struct p3_rt_env env;

	set_job("3", "0:0:0", "0:1:2", NULL);
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), -1);
	ck_assert_err_has("PTL_MY_RID");
	ck_assert_err_has("'3'");
	set_job("1", "0:0", "0:1:2", NULL);
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), -1);
	ck_assert_err_has("PTL_NIDMAP has 2 entries but PTL_PIDMAP has 3");
	set_job("1", "0:0", NULL, NULL);
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), -1);
	ck_assert_err_has("PTL_PIDMAP is not set");
	set_job(NULL, "0:0", "0:1", NULL);
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), -1);
	ck_assert_err_has("PTL_MY_RID is not set");
	set_job("one", "0:0", "0:1", NULL);
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), -1);
	ck_assert_err_has("PTL_MY_RID: bad value 'one'");
	set_job("0", "0:zz", "0:1", NULL);
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), -1);
	ck_assert_err_has("PTL_NIDMAP: bad entry 'zz' (entry 1 of 2)");
	set_job("0", "0:0", "0:1", "job7");
	ck_assert_int_eq(p3_rt_env_read(&env, err, sizeof(err)), -1);
	ck_assert_err_has("PTL_MY_JID: bad value 'job7'");
}
END_TEST

START_TEST(api_no_init)
{
	unsigned int r, s;
	ptl_process_id_t id;
	ptl_jid_t jid;
	ptl_nid_t map[1] = {0};

	clear_env();
	stub_initialized = 0;
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_NO_INIT);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, 0, 1), PTL_NO_INIT);
	ck_assert_int_eq(PtlSetNIDMap(PTL_INVALID_HANDLE, map, 1), PTL_NO_INIT);
	ck_assert_int_eq(PtlSetPIDMap(PTL_INVALID_HANDLE, map, 1), PTL_NO_INIT);
	ck_assert_int_eq(PtlSetJID(PTL_INVALID_HANDLE, 1), PTL_NO_INIT);
	ck_assert_int_eq(PtlGetRank(PTL_INVALID_HANDLE, &r, &s), PTL_NO_INIT);
	ck_assert_int_eq(PtlGetRankId(PTL_INVALID_HANDLE, 0, &id), PTL_NO_INIT);
	ck_assert_int_eq(PtlGetNIDMap(PTL_INVALID_HANDLE, map, 1), PTL_NO_INIT);
	ck_assert_int_eq(PtlGetPIDMap(PTL_INVALID_HANDLE, map, 1), PTL_NO_INIT);
	ck_assert_int_eq(PtlGetJID(PTL_INVALID_HANDLE, &jid), PTL_NO_INIT);
}
END_TEST

START_TEST(api_bad_args)
{
	unsigned int r, s;
	ptl_process_id_t id;
	ptl_nid_t map[2] = {0, 0};

	set_job("1", "0:0", "0:1", NULL);
	ck_assert_int_eq(PtlSetRank(0x20000099u, -1, -1), PTL_NI_INVALID);
	ck_assert_int_eq(PtlGetRank(0x20000099u, &r, &s), PTL_NI_INVALID);
	ck_assert_int_eq(PtlGetRankId(0x20000099u, 0, &id), PTL_NI_INVALID);
	ck_assert_int_eq(PtlSetJID(0x20000099u, 3), PTL_NI_INVALID);
	ck_assert_int_eq(PtlGetRank(STUB_NI, NULL, &s), PTL_SEGV);
	ck_assert_int_eq(PtlGetRankId(STUB_NI, 0, NULL), PTL_SEGV);
	ck_assert_int_eq(PtlSetNIDMap(STUB_NI, NULL, 2), PTL_SEGV);
	ck_assert_int_eq(PtlGetPIDMap(STUB_NI, NULL, 2), PTL_SEGV);
	ck_assert_int_eq(PtlSetNIDMap(STUB_NI, map, 0), PTL_FAIL);
	ck_assert_int_eq(PtlSetRank(STUB_NI, 2, 2), PTL_FAIL);
	ck_assert_int_eq(PtlSetRank(STUB_NI, 0, 0), PTL_FAIL);
	ck_assert_int_eq(PtlSetRank(STUB_NI, -1, -1), PTL_OK);
	ck_assert_int_eq(PtlGetRankId(STUB_NI, 2, &id), PTL_PROCESS_INVALID);
	ck_assert_int_eq(PtlGetNIDMap(STUB_NI, map, 1), PTL_FAIL); /* wrong size */
}
END_TEST

START_TEST(api_env_job)
{
	unsigned int r, s;
	ptl_process_id_t id;
	ptl_nid_t nids[3];
	ptl_pid_t pids[3];
	ptl_jid_t jid;
	const struct p3_runtime *rt;

	set_job("1", "10.0.0.1:10.0.0.2:0x0a000003", "0:1:2", "99");
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_OK);
	ck_assert_int_eq(PtlGetRank(STUB_NI, &r, &s), PTL_OK);
	ck_assert_uint_eq(r, 1);
	ck_assert_uint_eq(s, 3);
	ck_assert_int_eq(PtlGetRankId(PTL_INVALID_HANDLE, 2, &id), PTL_OK);
	ck_assert_uint_eq(id.nid, 0x0a000003u);
	ck_assert_uint_eq(id.pid, 2);
	ck_assert_int_eq(PtlGetNIDMap(STUB_NI, nids, 3), PTL_OK);
	ck_assert_int_eq(PtlGetPIDMap(STUB_NI, pids, 3), PTL_OK);
	ck_assert_uint_eq(nids[1], 0x0a000002u);
	ck_assert_uint_eq(pids[1], 1);
	ck_assert_int_eq(PtlGetJID(STUB_NI, &jid), PTL_OK);
	ck_assert_uint_eq(jid, 99);

	ck_assert_int_eq(p3_runtime_load(), 0);
	rt = p3_runtime_get();
	ck_assert_int_eq(rt->rank, 1);
	ck_assert_int_eq(rt->nranks, 3);
	ck_assert_ptr_nonnull(rt->nidmap);
	ck_assert_uint_eq(rt->pidmap[2], 2);
	ck_assert_uint_eq(rt->jid, 99);
	ck_assert_int_eq(rt->needs_exchange, 0);
	/* no exchange needed: a no-op */
	ck_assert_int_eq(p3_runtime_exchange((ptl_process_id_t){1, 1}), 0);
}
END_TEST

START_TEST(api_env_malformed)
{
	set_job("0", "0:0", "0:q", NULL);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_FAIL);
	ck_assert_int_eq(p3_runtime_load(), -1);
}
END_TEST

START_TEST(api_standalone)
{
	unsigned int r = 9, s = 9;
	ptl_process_id_t id;
	ptl_jid_t jid = 0;
	ptl_nid_t map[1];
	const struct p3_runtime *rt;

	clear_env();
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_OK);
	ck_assert_int_eq(p3_runtime_load(), 0);
	rt = p3_runtime_get();
	ck_assert_int_eq(rt->rank, -1);
	ck_assert_int_eq(rt->nranks, 0);
	ck_assert_ptr_null(rt->nidmap);
	ck_assert_uint_eq(rt->jid, PTL_JID_ANY);
	ck_assert_int_eq(rt->needs_exchange, 0);
	ck_assert_int_eq(PtlGetRank(STUB_NI, &r, &s), PTL_OK);
	ck_assert_uint_eq(r, 0);
	ck_assert_uint_eq(s, 1);
	ck_assert_int_eq(PtlGetRankId(STUB_NI, 0, &id), PTL_OK);
	ck_assert_uint_eq(id.nid, stub_my_id.nid);
	ck_assert_uint_eq(id.pid, stub_my_id.pid);
	ck_assert_int_eq(PtlGetRankId(STUB_NI, 1, &id), PTL_PROCESS_INVALID);
	ck_assert_int_eq(PtlGetNIDMap(STUB_NI, map, 1), PTL_FAIL);
	ck_assert_int_eq(PtlGetJID(STUB_NI, &jid), PTL_OK);
	ck_assert_uint_eq(jid, PTL_JID_ANY);
}
END_TEST

START_TEST(api_explicit_wins)
{
	ptl_nid_t nids[2] = {4, 5};
	ptl_pid_t pids[2] = {40, 50};
	unsigned int r, s;
	ptl_process_id_t id;
	ptl_jid_t jid;

	set_job("2", "0:0:0", "0:1:2", "77");
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PTL_OK);
	/* maps first, then the rank: a momentarily inconsistent order is fine */
	ck_assert_int_eq(PtlSetNIDMap(PTL_INVALID_HANDLE, nids, 2), PTL_OK);
	ck_assert_int_eq(PtlSetPIDMap(PTL_INVALID_HANDLE, pids, 2), PTL_OK);
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, 1, 2), PTL_OK);
	ck_assert_int_eq(PtlSetJID(STUB_NI, 5), PTL_OK);
	nids[1] = 999; /* the runtime copied the map */
	ck_assert_int_eq(PtlGetRank(STUB_NI, &r, &s), PTL_OK);
	ck_assert_uint_eq(r, 1);
	ck_assert_uint_eq(s, 2);
	ck_assert_int_eq(PtlGetRankId(STUB_NI, 1, &id), PTL_OK);
	ck_assert_uint_eq(id.nid, 5);
	ck_assert_uint_eq(id.pid, 50);
	ck_assert_int_eq(PtlGetJID(STUB_NI, &jid), PTL_OK);
	ck_assert_uint_eq(jid, 5);
	ck_assert_int_eq(p3_runtime_get()->jid, 5);

	/* PtlSetRank(.., -1, -1) takes rank and size from the environment
	 * again; the explicit 2-entry maps no longer fit: load fails */
	ck_assert_int_eq(PtlSetRank(STUB_NI, -1, -1), PTL_FAIL);
}
END_TEST

START_TEST(api_explicit_no_env)
{
	ptl_nid_t nids[2] = {0, 0};
	ptl_pid_t pids[2] = {8, 9};
	const struct p3_runtime *rt;

	clear_env();
	ck_assert_int_eq(PtlSetRank(PTL_INVALID_HANDLE, 0, 2), PTL_OK);
	ck_assert_int_eq(p3_runtime_load(), 0);
	rt = p3_runtime_get();
	ck_assert_int_eq(rt->rank, 0);
	ck_assert_int_eq(rt->nranks, 2);
	ck_assert_ptr_null(rt->nidmap); /* not known yet */
	ck_assert_int_eq(PtlSetNIDMap(PTL_INVALID_HANDLE, nids, 2), PTL_OK);
	ck_assert_int_eq(PtlSetPIDMap(PTL_INVALID_HANDLE, pids, 2), PTL_OK);
	ck_assert_int_eq(p3_runtime_load(), 0);
	rt = p3_runtime_get();
	ck_assert_ptr_nonnull(rt->pidmap);
	ck_assert_uint_eq(rt->pidmap[1], 9);
	p3_runtime_reset();
	rt = p3_runtime_get();
	ck_assert_int_eq(rt->rank, -1);
	ck_assert_ptr_null(rt->pidmap);
}
END_TEST

static Suite *env_suite(void)
{
	Suite *s = suite_create("runtime-env");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, parse_u32_good);
	tcase_add_test(tc, parse_u32_bad);
	tcase_add_test(tc, parse_map_good);
	tcase_add_test(tc, parse_map_bad);
	tcase_add_test(tc, env_good);
	tcase_add_test(tc, env_bad);
	suite_add_tcase(s, tc);
	tc = tcase_create("p3rt");
	tcase_add_test(tc, api_no_init);
	tcase_add_test(tc, api_bad_args);
	tcase_add_test(tc, api_env_job);
	tcase_add_test(tc, api_env_malformed);
	tcase_add_test(tc, api_standalone);
	tcase_add_test(tc, api_explicit_wins);
	tcase_add_test(tc, api_explicit_no_env);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(env_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
