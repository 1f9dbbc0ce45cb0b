/* SPDX-License-Identifier: BSD-3-Clause */
/* nic_place.h - where ptlrun's NICs run: --nic-cpus (nic_place.c). */
#ifndef PTLRUN_NIC_PLACE_H
#define PTLRUN_NIC_PLACE_H

/* Before the NICs start: NIC i will run on nic_cpus[i % n] (n 0: wherever
 * the scheduler puts it); whether it spins, mcpd decides (rank_cpus and
 * nrank are not used since).  0, or -1 with a message. */
int ptlrun_nic_placement(const int *nic_cpus, int n, const int *rank_cpus, int nrank);
/* In NIC i's child, before exec: pin it as ptlrun_nic_placement said. */
void ptlrun_nic_place(int i);

#endif
