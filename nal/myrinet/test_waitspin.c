/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_waitspin.c - PtlNIWaitSpin over PTL_PROGRESS=offload follows the
 * placement (cpu_share.c, README §3.9): with the NIC (mcpd, pinned to CPU
 * NIC_CPU by test_waitspin.sh) on this process's only CPU it is 0 (waits
 * sleep at once), with this process on another CPU it is P3_MYRI_SPIN_US
 * (20 by default), unpinned (the NIC may share) it is a yielding spin's
 * budget (> 0); the answer changes within the host's policy refresh (5 ms)
 * after sched_setaffinity.  A PtlEQPoll with a 5 ms timeout on an empty
 * queue still returns PTL_EQ_EMPTY after about 5 ms in the sleeping case.
 * Exit 0 pass, 1 fail, 77 skip (fewer than 2 CPUs).  Usage: test_waitspin NIC_CPU.
 */
#include "plain_test.h"

#include <portals3.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	if (cpu < 0) {
		for (int i = 0; i < CPU_SETSIZE && i < sysconf(_SC_NPROCESSORS_ONLN); i++)
			CPU_SET(i, &s);
	} else {
		CPU_SET(cpu, &s);
	}
	return sched_setaffinity(0, sizeof(s), &s);
}

/* PtlNIWaitSpin after the host's policy refresh (5 ms) has seen the mask */
static unsigned int spin_after_pin(ptl_handle_ni_t ni, int cpu)
{
	unsigned int us = 12345;
	if (pin(cpu) != 0)
		return 12345;
	struct timespec d = {0, 20 * 1000 * 1000}; /* > the 5 ms refresh */
	nanosleep(&d, NULL);
	if (PtlNIWaitSpin(ni, &us) != PTL_OK)
		return 12345;
	return us;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int nic_cpu = argc > 1 ? atoi(argv[1]) : 0, nifs;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 2) {
		printf("SKIP: one CPU: no placement to tell apart\n");
		return 77;
	}
	int other = nic_cpu == 0 ? 1 : 0;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	unsigned int us = 0;
	setenv("PTL_PROGRESS", "offload", 1);
	unsetenv("P3_MYRI_SPIN");
	unsetenv("P3_MYRI_SPIN_US");
	unsetenv("P3_OVERSUBSCRIBED");
	CHECK(PtlInit(&nifs) == PTL_OK, "PtlInit");
	int rc = PtlNIInit(PTL_IFACE_MYRINET, PTL_PID_ANY, NULL, NULL, &ni);
	CHECK(rc == PTL_OK, "PtlNIInit: %s (is mcpd running?)", PtlErrorStr(rc));
	CHECK(PtlNIWaitSpin(ni, NULL) == PTL_SEGV, "PtlNIWaitSpin(NULL): PTL_SEGV");
	CHECK(PtlNIWaitSpin(PTL_INVALID_HANDLE, &us) == PTL_NI_INVALID,
	      "PtlNIWaitSpin(invalid): PTL_NI_INVALID");
	CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq) == PTL_OK, "PtlEQAlloc");

	unsigned int shared = spin_after_pin(ni, nic_cpu);
	unsigned int apart = spin_after_pin(ni, other);
	unsigned int unpinned = spin_after_pin(ni, -1);
	unsigned int shared2 = spin_after_pin(ni, nic_cpu);
	printf("test_waitspin: spin us: on the NIC's CPU %u, on CPU %d %u, unpinned %u, back on "
	       "the NIC's CPU %u\n",
	       shared, other, apart, unpinned, shared2);
	CHECK(shared == 0, "on the NIC's only CPU the wait sleeps at once (got %u)", shared);
	CHECK(apart == 20, "on another CPU the wait spins P3_MYRI_SPIN_US = 20 (got %u)", apart);
	CHECK(unpinned > 0 && unpinned != 12345, "unpinned the wait spins (got %u)", unpinned);
	CHECK(shared2 == 0, "pinned back beside the NIC: 0 again (got %u)", shared2);

	/* the sleeping wait still honours its timeout */
	ptl_event_t ev;
	int which = -1;
	double t0 = now_ms();
	rc = PtlEQPoll(&eq, 1, 5, &ev, &which);
	double took = now_ms() - t0;
	printf("test_waitspin: PtlEQPoll(5 ms) on an empty queue beside the NIC: %s after %.1f "
	       "ms\n",
	       PtlErrorStr(rc), took);
	CHECK(rc == PTL_EQ_EMPTY, "PtlEQPoll on an empty EQ: PTL_EQ_EMPTY (got %s)",
	      PtlErrorStr(rc));
	CHECK(took >= 4.5, "PtlEQPoll returned before its timeout (%.2f ms)", took);

	CHECK(PtlEQFree(eq) == PTL_OK, "PtlEQFree");
	CHECK(PtlNIFini(ni) == PTL_OK, "PtlNIFini");
	PtlFini();
	printf("PASS: test_waitspin\n");
	return 0;
}
