/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hosts.h - ptlrun's multi-host jobs: ranks placed in the network
 * namespaces ("hosts") of a p3-netns test bed.
 *
 * Host i of bed TAG is the namespace TAG-h<i> with interface eth0, IPv4
 * 10.77.0.(i+1) and MAC 02:70:33:00:00:(i+1) (tools/p3-netns).  Rank r
 * runs on host r % nhosts; its nid is the host's IPv4 address, as the udp
 * and ether NALs expect.
 */
#ifndef PTLRUN_HOSTS_H
#define PTLRUN_HOSTS_H

#include <stdint.h>

#define PTLRUN_HOSTS_MAX   200 /* p3-netns addresses hosts 10.77.0.1 .. .200 */
#define PTLRUN_EXIT_NOPRIV 77  /* no privileges for namespaces (tests: skip) */

struct ptlrun_hosts {
	int ph_n;         /* number of hosts, 0: single-host job */
	int ph_created;   /* ptlrun made the bed (and removes it) */
	char ph_tag[32];  /* bed tag */
	char ph_netns[512]; /* the p3-netns script used */
};

/* Create a private bed of n hosts (tag "r<pid>"), or adopt the existing bed
 * `tag` (n = 0: count its hosts).  Static neighbour entries are written so
 * that no ARP is needed.  0, or an exit status after printing why. */
int ptlrun_hosts_setup(struct ptlrun_hosts *h, int n, const char *tag);

/* Host address (host byte order) of rank r. */
uint32_t ptlrun_hosts_nid(const struct ptlrun_hosts *h, int rank);

/* In the child: enter rank r's namespace.  0 or -1 with errno set. */
int ptlrun_hosts_enter(const struct ptlrun_hosts *h, int rank);

/* Remove the bed if ptlrun created it. */
void ptlrun_hosts_teardown(struct ptlrun_hosts *h);

#endif
