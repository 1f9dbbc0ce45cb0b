/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hosts.c - multi-host jobs: a p3-netns bed and the ranks placed in it.
 *
 * ptlrun does not build namespaces itself: tools/p3-netns owns the layout
 * (one script for tests, benchmarks and users), ptlrun runs it and then only
 * needs the namespace names and the address rule.  The bed is removed at the
 * end of the job; a ptlrun killed with SIGKILL leaves it behind, and
 * `p3-netns destroy --tag r<pid>` removes it (the tag is printed).
 */
#include "config.h"

#include "hosts.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOST_ADDR_BASE 0x0A4D0001u /* 10.77.0.1: host 0 */

/* Which p3-netns: $P3_NETNS, the installed one, the source tree's, PATH. */
static void find_netns(char *out, size_t len)
{
	const char *cands[] = {getenv("P3_NETNS"), P3_NETNS_INSTALLED, P3_NETNS_SRCDIR};

	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (cands[i] && *cands[i] && access(cands[i], R_OK) == 0) {
			snprintf(out, len, "%s", cands[i]);
			return;
		}
	snprintf(out, len, "p3-netns");
}

/* Run argv with stdout discarded; its exit status, or -1. */
static int run_quiet(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int netns_cmd(const struct ptlrun_hosts *h, const char *verb, const char *count)
{
	char *argv[] = {"sh", (char *)h->ph_netns, (char *)verb, (char *)count, "--tag",
	                (char *)h->ph_tag, NULL};

	if (!count) { /* destroy: no count */
		argv[3] = "--tag";
		argv[4] = (char *)h->ph_tag;
		argv[5] = NULL;
	}
	return run_quiet(argv);
}

static int count_hosts(const char *tag)
{
	char path[128];
	struct stat st;
	int n = 0;

	while (n < PTLRUN_HOSTS_MAX) {
		snprintf(path, sizeof(path), "/run/netns/%s-h%d", tag, n);
		if (stat(path, &st) != 0)
			break;
		n++;
	}
	return n;
}

/* Static neighbour entries: every host knows every other host's MAC, so
 * raw-Ethernet NALs (which resolve nid -> MAC from the neighbour table)
 * and UDP need no ARP exchange. */
static int fill_neighbours(const struct ptlrun_hosts *h)
{
	for (int i = 0; i < h->ph_n; i++)
		for (int j = 0; j < h->ph_n; j++) {
			char ns[64], ip[32], mac[32];
			char *argv[] = {"ip", "-n", ns, "neigh", "replace", ip, "dev", "eth0",
			                "lladdr", mac, "nud", "permanent", NULL};

			if (i == j)
				continue;
			snprintf(ns, sizeof(ns), "%s-h%d", h->ph_tag, i);
			snprintf(ip, sizeof(ip), "10.77.0.%d", j + 1);
			snprintf(mac, sizeof(mac), "02:70:33:00:00:%02x", j + 1);
			if (run_quiet(argv) != 0) {
				fprintf(stderr, "ptlrun: --hosts: ip -n %s neigh replace %s failed\n",
				        ns, ip);
				return -1;
			}
		}
	return 0;
}

int ptlrun_hosts_setup(struct ptlrun_hosts *h, int n, const char *tag)
{
	char count[16];
	int rc;

	memset(h, 0, sizeof(*h));
	find_netns(h->ph_netns, sizeof(h->ph_netns));
	if (geteuid() != 0) {
		fprintf(stderr, "ptlrun: --hosts: network namespaces need root (run as root or "
		                "with sudo); single-host jobs need no --hosts\n");
		return PTLRUN_EXIT_NOPRIV;
	}
	if (tag) { /* an existing bed, e.g. with fault rules set up by the user */
		snprintf(h->ph_tag, sizeof(h->ph_tag), "%s", tag);
		h->ph_n = count_hosts(tag);
		if (h->ph_n == 0) {
			fprintf(stderr, "ptlrun: --netns-tag %s: no namespace /run/netns/%s-h0 "
			                "(create the bed with: p3-netns create N --tag %s)\n",
			        tag, tag, tag);
			return 2;
		}
		if (n > 0 && n < h->ph_n)
			h->ph_n = n;
		if (n > h->ph_n) {
			fprintf(stderr, "ptlrun: --hosts %d: bed %s has only %d hosts\n", n, tag,
			        h->ph_n);
			return 2;
		}
		return fill_neighbours(h) == 0 ? 0 : 1;
	}
	snprintf(h->ph_tag, sizeof(h->ph_tag), "r%05d", (int)(getpid() % 100000));
	snprintf(count, sizeof(count), "%d", n);
	h->ph_n = n;
	rc = netns_cmd(h, "create", count);
	if (rc != 0) {
		fprintf(stderr, "ptlrun: --hosts %d: '%s create %d --tag %s' failed (exit %d)\n", n,
		        h->ph_netns, n, h->ph_tag, rc);
		netns_cmd(h, "destroy", NULL);
		return rc == PTLRUN_EXIT_NOPRIV ? PTLRUN_EXIT_NOPRIV : 1;
	}
	h->ph_created = 1;
	if (fill_neighbours(h) != 0) {
		ptlrun_hosts_teardown(h);
		return 1;
	}
	return 0;
}

uint32_t ptlrun_hosts_nid(const struct ptlrun_hosts *h, int rank)
{
	return HOST_ADDR_BASE + (uint32_t)(rank % h->ph_n);
}

int ptlrun_hosts_enter(const struct ptlrun_hosts *h, int rank)
{
	char path[128];
	int fd, rc;

	snprintf(path, sizeof(path), "/run/netns/%s-h%d", h->ph_tag, rank % h->ph_n);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

void ptlrun_hosts_teardown(struct ptlrun_hosts *h)
{
	if (!h->ph_created)
		return;
	if (netns_cmd(h, "destroy", NULL) != 0)
		fprintf(stderr, "ptlrun: could not remove the test bed; run: p3-netns destroy --tag %s\n",
		        h->ph_tag);
	h->ph_created = 0;
}
