/* SPDX-License-Identifier: BSD-3-Clause */
/* nic.h - ptlrun's emulated NIC (mcpd) for --nal myrinet: start it before
 * the ranks, notice when it dies, stop it after them (nic.c). */
#ifndef PTLRUN_NIC_H
#define PTLRUN_NIC_H

/* Start a private mcpd (named ptlrun-<our pid>, exported to the ranks as
 * P3_MYRI_NIC) and wait until it answers.  0, or -1 with a message. */
int ptlrun_nic_start(void);
/* After SIGCHLD: 1 if the NIC has died (a message naming it is printed). */
int ptlrun_nic_died(void);
/* SIGTERM, then SIGKILL after 2 s; reaps it.  No-op if none was started. */
void ptlrun_nic_stop(void);

#endif
