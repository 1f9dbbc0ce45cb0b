/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nic_place.c - where ptlrun's emulated NICs run (--nic-cpus).  The
 * benchmark placement puts the measured rank alone on one core and
 * everything else -- its NIC, the peer, the peer's NIC -- on the other
 * (ptlrun --cpus 0,1 --nic-cpus 1), so that the host CPU the measured rank
 * has is measured honestly.  ptlrun passes the list to the NICs' children
 * through the environment, and each pins itself before it becomes mcpd.
 * Whether a NIC spins is its own decision (mcpd.c spin_update): not at
 * all where every CPU it may use is the only CPU of a rank it serves.
 * ptlrun used to start every NIC sharing a CPU with any rank with
 * P3_MCPD_SPIN_US=0; between two namespace hosts that also stopped NIC 0
 * (its rank on CPU 0) from spinning on CPU 1, which made offload slower
 * (nal/myrinet/README.md §3.5).
 */
#define _GNU_SOURCE 1 /* sched_setaffinity */
#include "nic_place.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIC_CPUS_ENV "P3_PTLRUN_NIC_CPUS"

int ptlrun_nic_placement(const int *nic_cpus, int n, const int *rank_cpus, int nrank)
{
	char buf[1024];
	size_t off = 0;
	(void)rank_cpus;
	(void)nrank;
	if (n <= 0)
		return 0;
	for (int i = 0; i < n; i++) {
		int w = snprintf(buf + off, sizeof(buf) - off, "%s%d", i ? "," : "", nic_cpus[i]);
		if (w < 0 || (size_t)w >= sizeof(buf) - off) {
			fprintf(stderr, "ptlrun: --nic-cpus: list too long\n");
			return -1;
		}
		off += (size_t)w;
	}
	if (setenv(NIC_CPUS_ENV, buf, 1) != 0)
		return -1;
	return 0;
}

void ptlrun_nic_place(int i)
{
	const char *s = getenv(NIC_CPUS_ENV);
	if (!s || !*s)
		return;
	int n = 1;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	const char *p = s;
	for (int k = i % n; k > 0; k--)
		p = strchr(p, ',') + 1;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(atoi(p), &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perror("ptlrun: --nic-cpus: sched_setaffinity");
}
