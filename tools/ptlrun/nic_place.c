/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nic_place.c - where ptlrun's emulated NICs run (--nic-cpus).  The
 * benchmark placement puts the measured rank alone on one core and
 * everything else -- its NIC, the peer, the peer's NIC -- on the other
 * (ptlrun --cpus 0,1 --nic-cpus 1), so that the host CPU the measured rank
 * has is measured honestly.  ptlrun passes the list to the NICs' children
 * through the environment, and each pins itself before it becomes mcpd.
 * A NIC placed on a rank's CPU must not spin there (it would hold that
 * rank off, and yielding hands the core to any other job): it is started
 * with P3_MCPD_SPIN_US=0 unless the user set that variable.
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
	int shared = 0;
	if (n <= 0)
		return 0;
	for (int i = 0; i < n; i++) {
		int w = snprintf(buf + off, sizeof(buf) - off, "%s%d", i ? "," : "", nic_cpus[i]);
		if (w < 0 || (size_t)w >= sizeof(buf) - off) {
			fprintf(stderr, "ptlrun: --nic-cpus: list too long\n");
			return -1;
		}
		off += (size_t)w;
		for (int j = 0; j < nrank; j++)
			shared |= rank_cpus[j] == nic_cpus[i];
	}
	if (setenv(NIC_CPUS_ENV, buf, 1) != 0)
		return -1;
	if (shared && setenv("P3_MCPD_SPIN_US", "0", 0) != 0)
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
