/* SPDX-License-Identifier: BSD-3-Clause */
/* check_init.c - PtlInit/PtlFini, PTL_NO_INIT, the helper strings and the
 * DECISIONs of portals3.h about spellings and PtlHandleIsEqual (§7 Init/NI). */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* §7: PtlInit repeatable (counted; a matched PtlFini releases). */
START_TEST(init_repeatable)
{
	int n1 = -1, n2 = -1;
	ptl_handle_ni_t ni;

	H_OK(PtlInit(&n1));
	H_OK(PtlInit(&n2));
	H_TRUE(n1 > 0);
	H_EQ(n1, n2);
	PtlFini();
	/* still initialised: one PtlInit is unmatched */
	H_OK(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni));
	H_OK(PtlNIFini(ni));
	PtlFini();
	/* and again from scratch */
	H_OK(PtlInit(&n1));
	H_OK(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni));
	H_OK(PtlNIFini(ni));
	PtlFini();
}
END_TEST

START_TEST(init_null_segv)
{
	H_RC(PtlInit(NULL), PTL_SEGV);
}
END_TEST

/* §7: PTL_NO_INIT before init (and again after the last PtlFini). */
START_TEST(no_init_before_init)
{
	ptl_handle_ni_t ni;
	int n;

	H_RC(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni), PTL_NO_INIT);
	H_OK(PtlInit(&n));
	PtlFini();
	H_RC(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni), PTL_NO_INIT);
}
END_TEST

/* PtlFini of the last user closes open NIs: their handles become invalid. */
START_TEST(fini_closes_nis)
{
	int n;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_sr_value_t v;

	H_OK(PtlInit(&n));
	H_OK(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni));
	H_OK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
	PtlFini();
	H_OK(PtlInit(&n));
	H_RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &v), PTL_NI_INVALID);
	H_RC(PtlEQFree(eq), PTL_EQ_INVALID);
	PtlFini();
}
END_TEST

/* PtlFini without PtlInit must be harmless. */
START_TEST(fini_without_init)
{
	PtlFini();
	int n;
	H_OK(PtlInit(&n));
	PtlFini();
}
END_TEST

/* DECISION (portals3.h): PtlHandleIsEqual returns 1 if equal, 0 otherwise. */
START_TEST(handle_is_equal)
{
	int n;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t a, b;

	H_OK(PtlInit(&n));
	H_OK(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni));
	H_OK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &a));
	H_OK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &b));
	H_EQ(PtlHandleIsEqual(a, a), 1);
	H_EQ(PtlHandleIsEqual(a, b), 0);
	H_EQ(PtlHandleIsEqual(PTL_INVALID_HANDLE, PTL_INVALID_HANDLE), 1);
	H_EQ(PtlHandleIsEqual(a, PTL_EQ_NONE), 0);
	H_EQ(PtlHandleIsEqual(ni, a), 0);
	H_OK(PtlEQFree(a));
	H_OK(PtlEQFree(b));
	h_leak_check(ni);
	H_OK(PtlNIFini(ni));
	PtlFini();
}
END_TEST

/* Special values never collide with real handles (type 7 in the top bits). */
START_TEST(special_values)
{
	H_EQ(PTL_INVALID_HANDLE >> 29, 7);
	H_EQ(PTL_HANDLE_NONE >> 29, 7);
	H_EQ(PTL_EQ_NONE, PTL_HANDLE_NONE);
	H_EQ(PTL_MD_NONE, PTL_HANDLE_NONE);
	H_NE(PTL_INVALID_HANDLE, PTL_HANDLE_NONE);
	H_EQ(PTL_MD_THRESH_INF, -1);
	/* DECISION: both ack spellings */
	H_EQ(PTL_NOACK_REQ, PTL_NO_ACK_REQ);
	H_NE(PTL_ACK_REQ, PTL_NO_ACK_REQ);
	/* 3.0/3.2 aliases */
	H_EQ(PTL_NOINIT, PTL_NO_INIT);
	H_EQ(PTL_INV_MD, PTL_MD_INVALID);
	H_EQ(PTL_ILL_MD, PTL_MD_ILLEGAL);
	H_EQ(PTL_NOUPDATE, PTL_MD_NO_UPDATE);
	H_EQ(PTL_ML_TOOLONG, PTL_ME_LIST_TOO_LONG);
}
END_TEST

/* Every return code, event kind and failure kind has a distinct name. */
START_TEST(strings)
{
	int n;
	ptl_handle_ni_t ni;

	for (int i = 0; i < PTL_MAX_ERRNO; i++) {
		const char *s = PtlErrorStr((unsigned)i);
		H_TRUE(s != NULL && s[0] != 0);
		H_TRUE(ptl_err_str[i] != NULL);
		H_TRUE(strcmp(ptl_err_str[i], s) == 0);
		for (int j = 0; j < i; j++)
			if (strcmp(PtlErrorStr((unsigned)j), s) == 0)
				h_fail(__FILE__, __LINE__, "codes %d and %d share the name %s", j,
				       i, s);
	}
	H_TRUE(strstr(PtlErrorStr(PTL_OK), "OK") != NULL);
	H_TRUE(PtlErrorStr(1000) != NULL); /* out of range: a string, no crash */
	for (int k = 0; k < PTL_EVENT_KIND_MAX; k++) {
		const char *s = PtlEventKindStr((ptl_event_kind_t)k);
		H_TRUE(s != NULL && s[0] != 0);
		for (int j = 0; j < k; j++)
			H_TRUE(strcmp(PtlEventKindStr((ptl_event_kind_t)j), s) != 0);
	}
	H_TRUE(PtlEventKindStr((ptl_event_kind_t)999) != NULL);
	H_OK(PtlInit(&n));
	H_OK(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni));
	for (ptl_ni_fail_t f = PTL_NI_OK; f <= PTL_NI_UNLINKED; f++)
		H_TRUE(PtlNIFailStr(ni, f) != NULL);
	H_TRUE(PtlNIFailStr(ni, 12345) != NULL);
	H_TRUE(PtlNIFailStr(PTL_INVALID_HANDLE, PTL_NI_FAIL) != NULL);
	H_OK(PtlNIFini(ni));
	PtlFini();
}
END_TEST

/* PTL_IFACE_AUTO selects the NAL named by PTL_NAL. */
START_TEST(iface_auto_follows_ptl_nal)
{
	int n;
	ptl_handle_ni_t ni;
	const char *nal = NULL, *mode = NULL;

	setenv("PTL_NAL", "lo", 1);
	H_OK(PtlInit(&n));
	H_OK(PtlNIInit(PTL_IFACE_AUTO, PTL_PID_ANY, NULL, NULL, &ni));
	H_OK(PtlNIDescribe(ni, &nal, &mode));
	H_TRUE(nal != NULL && mode != NULL);
	if (strcmp(nal, "lo") != 0)
		h_fail(__FILE__, __LINE__, "PTL_NAL=lo gave NAL \"%s\"", nal);
	H_OK(PtlNIFini(ni));
	PtlFini();
}
END_TEST

/* PtlNIDebug returns the previous mask; 0 for an invalid handle. */
START_TEST(ni_debug_mask)
{
	int n;
	ptl_handle_ni_t ni;

	unsetenv("PTL_DEBUG");
	H_OK(PtlInit(&n));
	H_OK(PtlNIInit(PTL_IFACE_LO, PTL_PID_ANY, NULL, NULL, &ni));
	(void)PtlNIDebug(ni, PTL_DBG_NONE);
	H_EQ(PtlNIDebug(ni, PTL_DBG_DROP | PTL_DBG_ME), PTL_DBG_NONE);
	H_EQ(PtlNIDebug(ni, PTL_DBG_NONE), PTL_DBG_DROP | PTL_DBG_ME);
	H_EQ(PtlNIDebug(PTL_INVALID_HANDLE, PTL_DBG_ALL), 0);
	H_OK(PtlNIFini(ni));
	PtlFini();
}
END_TEST

/* An NI opened and closed at once, again and again, with the close landing
 * at every point of a progress thread's start and loop (delays 0..255 us):
 * PtlNIFini must stop the thread each time (a stop that landed between the
 * thread's check of its stop flag and its next blocking progress call was
 * lost, and PtlNIFini waited forever; seen once in CI over shmem). */
START_TEST(ni_open_close_churn)
{
	for (int i = 0; i < 100; i++) {
		ptl_handle_ni_t ni = h_open_mode(_i, NULL, NULL);
		struct timespec d = {0, (long)((i * 37) % 256) * 1000};

		nanosleep(&d, NULL);
		h_close(ni);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("init");
	TCase *tc = tcase_create("init");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, init_repeatable);
	tcase_add_test(tc, init_null_segv);
	tcase_add_test(tc, no_init_before_init);
	tcase_add_test(tc, fini_closes_nis);
	tcase_add_test(tc, fini_without_init);
	tcase_add_test(tc, handle_is_equal);
	tcase_add_test(tc, special_values);
	tcase_add_test(tc, strings);
	tcase_add_test(tc, iface_auto_follows_ptl_nal);
	tcase_add_test(tc, ni_debug_mask);
	H_ADD_SINGLE(tc, ni_open_close_churn);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_main(suite());
}
