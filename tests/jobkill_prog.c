/* SPDX-License-Identifier: BSD-3-Clause */
/* jobkill_prog.c - a rank for jobkill.sh: every rank opens its NI (so its
 * shared-memory segment exists), prints its job id, then waits for an event
 * that never comes; the rank named on the command line SIGKILLs itself. */
#include <portals3.h>
#include <p3rt/p3rt.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int victim = argc > 1 ? atoi(argv[1]) : 2;
	int nif;
	unsigned rank, size;
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_event_t ev;
	ptl_jid_t jid = 0;

	if (PtlInit(&nif) != PTL_OK || PtlSetRank(PTL_INVALID_HANDLE, -1, -1) != PTL_OK ||
	    PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK ||
	    PtlGetRank(ni, &rank, &size) != PTL_OK || PtlGetJID(ni, &jid) != PTL_OK ||
	    PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq) != PTL_OK) {
		fprintf(stderr, "jobkill_prog: Portals start-up failed\n");
		return 3;
	}
	printf("jobkill_prog: rank %u of %u up, jid %u\n", rank, size, (unsigned)jid);
	fflush(stdout);
	if ((int)rank == victim) {
		usleep(300000); /* let every rank come up */
		printf("jobkill_prog: rank %u kills itself\n", rank);
		fflush(stdout);
		raise(SIGKILL);
	}
	PtlEQWait(eq, &ev); /* never returns normally */
	return 0;
}
