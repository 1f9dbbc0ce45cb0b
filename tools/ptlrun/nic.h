/* SPDX-License-Identifier: BSD-3-Clause */
/* nic.h - ptlrun's emulated NICs (mcpd) for --nal myrinet: start them before
 * the ranks, notice when one dies, stop them after them (nic.c). */
#ifndef PTLRUN_NIC_H
#define PTLRUN_NIC_H

#include "hosts.h"

/* Start a private mcpd (named ptlrun-<our pid>, exported to the ranks as
 * P3_MYRI_NIC) on the single host (h NULL or h->ph_n 0), or one in each
 * namespace host of h on the raw-Ethernet wire (mcpd --link ether --ifname
 * eth0, frames authenticated with one key for the job's NICs), and wait
 * until each answers.  0, or -1 with a message (none left running). */
int ptlrun_nic_start(const struct ptlrun_hosts *h);
/* After SIGCHLD: 1 if a NIC has died (a message naming it is printed). */
int ptlrun_nic_died(void);
/* SIGTERM, then SIGKILL after 2 s; reaps them.  No-op if none was started. */
void ptlrun_nic_stop(void);

#endif
