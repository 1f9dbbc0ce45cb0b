/* SPDX-License-Identifier: BSD-3-Clause */
/* check_ni.c - network interfaces: pids, limits, handles, status registers,
 * PtlNIFini (§7 Init/NI).  Each test runs over lo and shmem (app, thread). */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* §7: PTL_PID_ANY assigns a pid that PtlGetId reports. */
START_TEST(pid_any_assigns)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_process_id_t id = {PTL_NID_ANY, PTL_PID_ANY};
	ptl_uid_t uid;
	unsigned long dist = 99;

	H_OK(PtlGetId(ni, &id));
	H_NE(id.pid, PTL_PID_ANY);
	H_NE(id.nid, PTL_NID_ANY);
	H_OK(PtlGetUid(ni, &uid));
	H_EQ(uid, getuid());
	H_OK(PtlNIDist(ni, id, &dist));
	H_EQ(dist, 0);
	h_close(ni);
}
END_TEST

/* §7: pid in use -> PTL_PID_INVALID (another process holds it). */
START_TEST(pid_in_use)
{
	int pfd[2], cfd[2];
	ptl_process_id_t held;
	pid_t child;
	int n, st;
	ptl_handle_ni_t ni;
	ptl_jid_t jid = h_new_jid();
	char c = 0;

	H_TRUE(pipe(pfd) == 0 && pipe(cfd) == 0);
	child = fork();
	H_TRUE(child >= 0);
	if (child == 0) {
		h_set_env_mode(_i, 0, 1, jid);
		if (PtlInit(&n) != PTL_OK || PtlSetRank(PTL_INVALID_HANDLE, -1, -1) != PTL_OK ||
		    PtlNIInit(h_mode_iface(_i), PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK ||
		    PtlGetId(ni, &held) != PTL_OK)
			_exit(2);
		if (write(cfd[1], &held, sizeof(held)) != sizeof(held))
			_exit(3);
		if (read(pfd[0], &c, 1) != 1)
			_exit(4);
		PtlNIFini(ni);
		PtlFini();
		_exit(0);
	}
	if (read(cfd[0], &held, sizeof(held)) != sizeof(held)) {
		waitpid(child, &st, 0);
		h_shm_cleanup(jid);
		h_fail(__FILE__, __LINE__, "child could not open a shmem NI (status 0x%x)", st);
	}
	h_set_env_mode(_i, 0, 1, jid);
	H_OK(PtlInit(&n));
	H_OK(PtlSetRank(PTL_INVALID_HANDLE, -1, -1));
	int rc = PtlNIInit(h_mode_iface(_i), held.pid, NULL, NULL, &ni);
	if (rc == PTL_OK)
		PtlNIFini(ni);
	PtlFini();
	if (write(pfd[1], &c, 1) != 1)
		kill(child, SIGKILL);
	waitpid(child, &st, 0);
	h_shm_cleanup(jid);
	H_RC(rc, PTL_PID_INVALID);
	H_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* §7: second NIInit of the same interface returns the same handle. */
START_TEST(second_init_same_handle)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL), ni2 = PTL_INVALID_HANDLE;
	ptl_process_id_t a, b;

	H_OK(PtlNIInit(h_mode_iface(_i), PTL_PID_ANY, NULL, NULL,
	               &ni2));
	H_EQ(PtlHandleIsEqual(ni, ni2), 1);
	H_OK(PtlGetId(ni, &a));
	H_OK(PtlGetId(ni2, &b));
	H_EQ(a.pid, b.pid);
	h_leak_check(ni);
	H_OK(PtlNIFini(ni));
	PtlFini(); /* closes it if the second init was counted */
}
END_TEST

/* §7: actual <= desired, field by field; NULL desired gives positive limits. */
START_TEST(actual_le_desired)
{
	ptl_ni_limits_t want = {.max_mes = 10,
	                        .max_mds = 11,
	                        .max_eqs = 4,
	                        .max_ac_index = 3,
	                        .max_pt_index = 7,
	                        .max_md_iovecs = 5,
	                        .max_me_list = 6,
	                        .max_getput_md = 8};
	ptl_ni_limits_t got;
	memset(&got, 0xff, sizeof(got));
	ptl_handle_ni_t ni = h_open_mode(_i, &want, &got);

	H_LE(got.max_mes, want.max_mes);
	H_LE(got.max_mds, want.max_mds);
	H_LE(got.max_eqs, want.max_eqs);
	H_LE(got.max_ac_index, want.max_ac_index);
	H_LE(got.max_pt_index, want.max_pt_index);
	H_LE(got.max_md_iovecs, want.max_md_iovecs);
	H_LE(got.max_me_list, want.max_me_list);
	H_LE(got.max_getput_md, want.max_getput_md);
	H_TRUE(got.max_mes > 0 && got.max_mds > 0 && got.max_eqs > 0);
	H_TRUE(got.max_ac_index >= 0 && got.max_pt_index >= 0);
	h_close(ni);

	memset(&got, 0, sizeof(got));
	ni = h_open_mode(_i, NULL, &got);
	H_TRUE(got.max_mes > 0 && got.max_mds > 0 && got.max_eqs > 0 && got.max_md_iovecs > 0);
	H_TRUE(got.max_pt_index >= 7 && got.max_ac_index >= 0 && got.max_me_list > 0);
	H_TRUE(got.max_getput_md >= 8);
	h_close(ni);
}
END_TEST

/* The limits are enforced: max_eqs EQs, then PTL_NO_SPACE. */
START_TEST(limits_enforced)
{
	ptl_ni_limits_t want = {.max_mes = 4,
	                        .max_mds = 4,
	                        .max_eqs = 2,
	                        .max_ac_index = 3,
	                        .max_pt_index = 7,
	                        .max_md_iovecs = 4,
	                        .max_me_list = 4,
	                        .max_getput_md = 8};
	ptl_ni_limits_t got;
	ptl_handle_ni_t ni = h_open_mode(_i, &want, &got);
	ptl_handle_eq_t eq[3];
	ptl_handle_md_t md[5];
	char buf[8];

	for (int i = 0; i < got.max_eqs; i++)
		H_OK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &eq[i]));
	H_RC(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &eq[2]), PTL_NO_SPACE);
	for (int i = 0; i < got.max_mds; i++)
		H_OK(PtlMDBind(ni, h_md(buf, sizeof(buf), 1, 0, PTL_EQ_NONE), PTL_RETAIN, &md[i]));
	H_RC(PtlMDBind(ni, h_md(buf, sizeof(buf), 1, 0, PTL_EQ_NONE), PTL_RETAIN, &md[4]),
	     PTL_NO_SPACE);
	for (int i = 0; i < got.max_mds; i++)
		H_OK(PtlMDUnlink(md[i]));
	for (int i = 0; i < got.max_eqs; i++)
		H_OK(PtlEQFree(eq[i]));
	h_close(ni);
}
END_TEST

/* §7: PtlNIHandle on each object kind. */
START_TEST(nihandle_each_kind)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL), got;
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t md, bmd;
	char buf[16];

	H_OK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &eq));
	H_OK(PtlMEAttach(ni, H_PT, h_any_id, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	H_OK(PtlMDAttach(me, h_md(buf, sizeof(buf), 1, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md));
	H_OK(PtlMDBind(ni, h_md(buf, sizeof(buf), 1, 0, eq), PTL_RETAIN, &bmd));
	got = PTL_INVALID_HANDLE;
	H_OK(PtlNIHandle(ni, &got));
	H_EQ(PtlHandleIsEqual(got, ni), 1);
	got = PTL_INVALID_HANDLE;
	H_OK(PtlNIHandle(eq, &got));
	H_EQ(PtlHandleIsEqual(got, ni), 1);
	got = PTL_INVALID_HANDLE;
	H_OK(PtlNIHandle(me, &got));
	H_EQ(PtlHandleIsEqual(got, ni), 1);
	got = PTL_INVALID_HANDLE;
	H_OK(PtlNIHandle(md, &got));
	H_EQ(PtlHandleIsEqual(got, ni), 1);
	got = PTL_INVALID_HANDLE;
	H_OK(PtlNIHandle(bmd, &got));
	H_EQ(PtlHandleIsEqual(got, ni), 1);
	H_OK(PtlMDUnlink(bmd));
	H_OK(PtlMEUnlink(me));
	H_OK(PtlEQFree(eq));
	/* a freed object's handle is stale */
	H_RC(PtlNIHandle(eq, &got), PTL_HANDLE_INVALID);
	H_RC(PtlNIHandle(md, &got), PTL_HANDLE_INVALID);
	h_close(ni);
}
END_TEST

/* §7: bad handle -> PTL_HANDLE_INVALID. */
START_TEST(bad_handle_invalid)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL), got;

	H_RC(PtlNIHandle(PTL_INVALID_HANDLE, &got), PTL_HANDLE_INVALID);
	H_RC(PtlNIHandle(PTL_HANDLE_NONE, &got), PTL_HANDLE_INVALID);
	H_RC(PtlNIHandle(0x00000000u, &got), PTL_HANDLE_INVALID);
	H_RC(PtlNIHandle(0x5A5A5A5Au, &got), PTL_HANDLE_INVALID);
	H_RC(PtlNIHandle(0xC0000123u, &got), PTL_HANDLE_INVALID);
	h_close(ni);
}
END_TEST

/* §7: DROP_COUNT readable (0 on a fresh NI); bad SR index -> SR_INDEX_INVALID. */
START_TEST(status_registers)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_sr_value_t v = 77;

	H_OK(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &v));
	H_EQ(v, 0);
	for (ptl_sr_index_t r = 0; r < PTL_SR_LAST_STD; r++)
		H_OK(PtlNIStatus(ni, r, &v));
	H_RC(PtlNIStatus(ni, 0xFF, &v), PTL_SR_INDEX_INVALID);
	H_RC(PtlNIStatus(ni, 0x7FFFFFFF, &v), PTL_SR_INDEX_INVALID);
	H_RC(PtlNIStatus(ni, 0xFFFFFFFFu, &v), PTL_SR_INDEX_INVALID);
	H_RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, NULL), PTL_SEGV);
	h_close(ni);
}
END_TEST

/* §7: NIFini frees all objects; old handles invalid. */
START_TEST(nifini_frees_all)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t md, bmd;
	ptl_event_t ev;
	static char buf[64];
	ptl_sr_value_t v;

	H_OK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &eq));
	H_OK(PtlMEAttach(ni, H_PT, h_any_id, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
	H_OK(PtlMDAttach(me, h_md(buf, sizeof(buf), 1, PTL_MD_OP_PUT, eq), PTL_RETAIN, &md));
	H_OK(PtlMDBind(ni, h_md(buf, sizeof(buf), 1, 0, eq), PTL_RETAIN, &bmd));
	H_OK(PtlNIFini(ni));
	H_RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &v), PTL_NI_INVALID);
	H_RC(PtlEQGet(eq, &ev), PTL_EQ_INVALID);
	H_RC(PtlMEUnlink(me), PTL_ME_INVALID);
	H_RC(PtlMDUnlink(md), PTL_MD_INVALID);
	H_RC(PtlMDUnlink(bmd), PTL_MD_INVALID);
	PtlFini();
	/* reopen: the new NI starts empty and the old handles stay invalid */
	ni = h_open_mode(_i, NULL, NULL);
	H_RC(PtlEQFree(eq), PTL_EQ_INVALID);
	H_RC(PtlMEUnlink(me), PTL_ME_INVALID);
	H_RC(PtlMDUnlink(bmd), PTL_MD_INVALID);
	h_close(ni);
}
END_TEST

/* §7: NULL outputs -> PTL_SEGV (NI calls). */
START_TEST(null_outputs_segv)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	ptl_process_id_t self;

	H_OK(PtlGetId(ni, &self));
	H_RC(PtlNIInit(h_mode_iface(_i), PTL_PID_ANY, NULL, NULL,
	               NULL),
	     PTL_SEGV);
	H_RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, NULL), PTL_SEGV);
	H_RC(PtlNIDist(ni, self, NULL), PTL_SEGV);
	H_RC(PtlNIHandle(ni, NULL), PTL_SEGV);
	H_RC(PtlGetId(ni, NULL), PTL_SEGV);
	H_RC(PtlGetUid(ni, NULL), PTL_SEGV);
	H_RC(PtlGetJid(ni, NULL), PTL_SEGV);
	H_RC(PtlNIWaitSpin(ni, NULL), PTL_SEGV);
	h_close(ni);
}
END_TEST

/* The progress mode comes from PTL_PROGRESS at NI init (PtlNIDescribe). */
START_TEST(progress_mode_from_env)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	const char *nal = NULL, *mode = NULL;

	H_OK(PtlNIDescribe(ni, &nal, &mode));
	H_TRUE(nal != NULL && mode != NULL);
	if (_i == H_MODE_LO) {
		H_TRUE(strcmp(nal, "lo") == 0);
	} else {
		if (strcmp(nal, h_mode_nal(_i)) != 0)
			h_fail(__FILE__, __LINE__, "NAL is \"%s\", expected %s", nal,
			       h_mode_nal(_i));
		const char *want = h_mode_progress(_i);
		if (strcmp(mode, want) != 0)
			h_fail(__FILE__, __LINE__, "PTL_PROGRESS=%s but the NI runs \"%s\"", want,
			       mode);
	}
	H_RC(PtlNIDescribe(PTL_INVALID_HANDLE, &nal, &mode), PTL_NI_INVALID);
	/* how its waits spin: a budget for any NI, 0 only when they sleep at
	 * once (myrinet offload beside its NIC, an oversubscribed "sleep") */
	unsigned int spin_us = 12345;
	H_OK(PtlNIWaitSpin(ni, &spin_us));
	H_TRUE(spin_us <= 100000);
	H_RC(PtlNIWaitSpin(PTL_INVALID_HANDLE, &spin_us), PTL_NI_INVALID);
	h_close(ni);
}
END_TEST

/* The shmem NI of a runtime job reports rank, size, pid map and job id. */
START_TEST(runtime_maps)
{
	ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
	unsigned r = 9, n = 9;
	ptl_process_id_t me, id0;
	ptl_jid_t jid;

	H_OK(PtlGetId(ni, &me));
	if (_i != H_MODE_LO) {
		H_OK(PtlGetRank(ni, &r, &n));
		H_EQ(r, 0);
		H_EQ(n, 1);
		H_OK(PtlGetRankId(ni, 0, &id0));
		H_EQ(id0.pid, me.pid);
		H_EQ(id0.nid, me.nid);
		H_EQ(me.pid, strtoul(getenv("PTL_PIDMAP"), NULL, 10)); /* rank 0 of PTL_PIDMAP */
		H_RC(PtlGetRankId(ni, 1, &id0), PTL_PROCESS_INVALID);
		H_OK(PtlGetJID(ni, &jid));
		H_OK(PtlGetJid(ni, &jid));
		H_EQ(jid, (ptl_jid_t)strtoul(getenv("PTL_MY_JID"), NULL, 10));
	}
	h_close(ni);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ni");
	TCase *tc = tcase_create("ni");
	tcase_set_timeout(tc, 30);
	H_ADD(tc, pid_any_assigns);
	/* KNOWN BUG (udp, ether): rmpp/link_udp.c sets SO_REUSEADDR before
	 * bind(), so a second process binds the same port, and the ether link
	 * takes any endpoint id on the interface: PtlNIInit(pid in use) succeeds.
	 * P3_TEST_KNOWN_BUGS=1 runs it over udp and ether anyway. */
	if (getenv("P3_TEST_KNOWN_BUGS"))
		H_ADD_X(tc, pid_in_use, H_X_LO,
		        "lo is in-process only: no other process can hold a pid");
	else
		H_ADD_X(tc, pid_in_use, H_X_LO | H_X_RMPP,
		        "lo is in-process only; udp/ether: KNOWN BUG, a second process gets the "
		        "same pid (udp: SO_REUSEADDR in rmpp/link_udp.c; ether: no endpoint "
		        "ownership); P3_TEST_KNOWN_BUGS=1 runs it");
	H_ADD(tc, second_init_same_handle);
	H_ADD(tc, actual_le_desired);
	H_ADD(tc, limits_enforced);
	H_ADD(tc, nihandle_each_kind);
	H_ADD(tc, bad_handle_invalid);
	H_ADD(tc, status_registers);
	H_ADD(tc, nifini_frees_all);
	H_ADD(tc, null_outputs_segv);
	H_ADD(tc, progress_mode_from_env);
	H_ADD(tc, runtime_maps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
