/* SPDX-License-Identifier: BSD-3-Clause */
/* pmi_probe.c - the runtime's PMI bootstrap under a real launcher (hydra's
 * mpiexec; srun with PMI-2 or PMIx), without the rest of the library: PtlSetRank(-1, -1), exchange
 * a made-up id {1000 + rank, 2000 + rank}, check every rank's id, twice
 * (with p3_runtime_reset in between, as PtlFini + PtlInit would).
 * Prints "probe: rank R of N jid J round K ok" per round; exit 0 on success.
 * With P3_RMPP_AUTH=on the runtime hands out the job's frame-authentication
 * key through PMI (pmi_authkey.c): then also "probe: rank R auth key H",
 * H a hash of P3_RMPP_AUTH_KEY (equal on every rank, new every job). */
#include "config.h"

#include "rt.h"
#include "rt_stubs.h"
#include "runtime.h"

#include <p3rt/p3rt.h>
#include <stdio.h>
#include <stdlib.h>

static int round_trip(int round)
{
	const struct p3_runtime *rt;
	unsigned int rank, size;
	ptl_process_id_t id;
	ptl_jid_t jid;

	if (PtlSetRank(PTL_INVALID_HANDLE, -1, -1) != PTL_OK) {
		fprintf(stderr, "probe: PtlSetRank(-1, -1) failed\n");
		return -1;
	}
	rt = p3_runtime_get();
	if (rt->rank < 0 || !rt->needs_exchange) {
		fprintf(stderr, "probe: no PMI runtime (rank %d, needs_exchange %d)\n", rt->rank,
		        rt->needs_exchange);
		return -1;
	}
	if (p3_runtime_exchange((ptl_process_id_t){.nid = 1000u + (unsigned int)rt->rank,
	                                           .pid = 2000u + (unsigned int)rt->rank +
	                                                  (unsigned int)round}) != 0)
		return -1;
	if (PtlGetRank(STUB_NI, &rank, &size) != PTL_OK || PtlGetJID(STUB_NI, &jid) != PTL_OK)
		return -1;
	for (unsigned int r = 0; r < size; r++) {
		if (PtlGetRankId(STUB_NI, r, &id) != PTL_OK || id.nid != 1000 + r ||
		    id.pid != 2000 + r + (unsigned int)round) {
			fprintf(stderr, "probe: rank %u: bad id of rank %u: %u:%u\n", rank, r,
			        id.nid, id.pid);
			return -1;
		}
	}
	printf("probe: rank %u of %u jid %u via %s round %d ok\n", rank, size, jid,
	       p3_rt_pmi_name() ? p3_rt_pmi_name() : "none", round);
	fflush(stdout);
	return 0;
}

/* FNV-1a of the key: comparable between ranks, the key itself not printed */
static void print_key_hash(void)
{
	const char *k = getenv("P3_RMPP_AUTH_KEY");
	unsigned int h = 2166136261u;
	if (!k)
		return;
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 16777619u;
	printf("probe: rank %d auth key %08x\n", p3_runtime_get()->rank, h);
	fflush(stdout);
}

int main(void)
{
	if (round_trip(0) != 0)
		return 1;
	print_key_hash();
	p3_runtime_reset();
	if (round_trip(1) != 0)
		return 1;
	return 0;
}
