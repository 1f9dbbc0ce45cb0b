/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nic.c - ptlrun's emulated NICs: one mcpd per host of the job -- the single
 * host, or with --hosts one per namespace host, inside the namespace, on the
 * raw-Ethernet wire (mcpd --link ether on eth0) -- under a name of its own
 * (so that it never meets a NIC somebody else started), stopped with the
 * ranks.  If one dies while the job runs, ptlrun ends the job and says which
 * NIC it was.
 */
#include "config.h"

#include "nic.h"
#include "nic_place.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NIC_READY_MS 3000
#define NIC_STOP_MS  2000

static pid_t nic_pid[PTLRUN_HOSTS_MAX];
static int nic_count;
static char nic_name[64];

static const char *mcpd_path(void)
{
	const char *e = getenv("P3_MCPD");
	if (e && *e)
		return e;
	if (access(P3_MCPD_BUILDDIR, X_OK) == 0)
		return P3_MCPD_BUILDDIR;
	return P3_MCPD_INSTALLED;
}

/* Does the NIC of this network namespace answer? */
static int nic_answers_here(void)
{
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "p3-mcpd-%u-%s",
	                 (unsigned)getuid(), nic_name);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int ok = connect(fd, (struct sockaddr *)&sa,
	                 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0;
	close(fd);
	return ok;
}

/* The NIC of host i answers (abstract socket names belong to the network
 * namespace: ptlrun, single-threaded, steps into the host's and back). */
static int nic_answers(const struct ptlrun_hosts *h, int i)
{
	if (!h || !h->ph_n)
		return nic_answers_here();
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0)
		return 0;
	int ok = 0;
	if (ptlrun_hosts_enter(h, i) == 0) {
		ok = nic_answers_here();
		if (setns(home, CLONE_NEWNET) != 0) {
			fprintf(stderr, "ptlrun: cannot return to its network namespace: %s\n",
			        strerror(errno));
			_exit(1); /* nothing sensible can follow in a foreign namespace */
		}
	}
	close(home);
	return ok;
}

/* One key for every NIC of a --hosts job (made here, before they are
 * forked): their frames cross a network, so they are authenticated as the
 * udp/ether ranks' are (P3_RMPP_AUTH), unless the environment says off. */
static int nic_auth_env(void)
{
	uint8_t key[32];
	char hex[65];
	if (getenv("P3_RMPP_AUTH_KEY") && *getenv("P3_RMPP_AUTH_KEY"))
		return setenv("P3_RMPP_AUTH", "on", 0);
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return -1;
	for (size_t i = 0; i < sizeof(key); i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	return setenv("P3_RMPP_AUTH_KEY", hex, 1) || setenv("P3_RMPP_AUTH", "on", 0);
}

static pid_t nic_spawn(const struct ptlrun_hosts *h, int i, const char *path)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	setpgid(0, 0); /* the job's signals are not the NIC's */
	ptlrun_nic_place(i);
	if (h && h->ph_n) {
		if (ptlrun_hosts_enter(h, i) != 0) {
			fprintf(stderr, "ptlrun: the NIC of host %d: %s\n", i, strerror(errno));
			_exit(127);
		}
		execl(path, "mcpd", "--nic", nic_name, "--link", "ether", "--ifname", "eth0",
		      (char *)NULL);
	} else {
		execl(path, "mcpd", "--nic", nic_name, (char *)NULL);
	}
	fprintf(stderr, "ptlrun: cannot run the NIC %s: %s\n", path, strerror(errno));
	_exit(127);
}

/* Wait until NIC i answers: 0, or -1 with a message (it is then reaped). */
static int nic_wait_ready(const struct ptlrun_hosts *h, int i)
{
	for (int waited = 0; waited < NIC_READY_MS; waited += 10) {
		int st;
		if (nic_answers(h, i))
			return 0;
		if (waitpid(nic_pid[i], &st, WNOHANG) == nic_pid[i]) {
			fprintf(stderr, "ptlrun: the NIC (mcpd %s of host %d) exited at start\n",
			        nic_name, i);
			nic_pid[i] = -1;
			return -1;
		}
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	fprintf(stderr, "ptlrun: the NIC (mcpd %s of host %d) did not answer within %d ms\n",
	        nic_name, i, NIC_READY_MS);
	return -1;
}

int ptlrun_nic_start(const struct ptlrun_hosts *h)
{
	const char *path = mcpd_path();
	snprintf(nic_name, sizeof(nic_name), "ptlrun-%d", (int)getpid());
	setenv("P3_MYRI_NIC", nic_name, 1);
	fflush(NULL);
	nic_count = h && h->ph_n ? h->ph_n : 1;
	if (h && h->ph_n && nic_auth_env() != 0) {
		fprintf(stderr, "ptlrun: getrandom: %s (the NICs' frame-authentication key)\n",
		        strerror(errno));
		return -1;
	}
	for (int i = 0; i < nic_count; i++)
		nic_pid[i] = -1;
	for (int i = 0; i < nic_count; i++) {
		nic_pid[i] = nic_spawn(h, i, path);
		if (nic_pid[i] < 0) {
			fprintf(stderr, "ptlrun: fork for the NIC: %s\n", strerror(errno));
			ptlrun_nic_stop();
			return -1;
		}
	}
	for (int i = 0; i < nic_count; i++)
		if (nic_wait_ready(h, i) != 0) {
			ptlrun_nic_stop();
			return -1;
		}
	return 0;
}

int ptlrun_nic_died(void)
{
	for (int i = 0; i < nic_count; i++) {
		int st;
		if (nic_pid[i] <= 0 || waitpid(nic_pid[i], &st, WNOHANG) != nic_pid[i])
			continue;
		char host[32] = "";
		if (nic_count > 1)
			snprintf(host, sizeof(host), " of host %d", i);
		if (WIFSIGNALED(st))
			fprintf(stderr,
			        "ptlrun: the NIC mcpd %s%s (pid %d) was killed by signal %d (%s); "
			        "terminating the job\n",
			        nic_name, host, (int)nic_pid[i], WTERMSIG(st),
			        strsignal(WTERMSIG(st)));
		else
			fprintf(stderr,
			        "ptlrun: the NIC mcpd %s%s (pid %d) exited with %d; terminating "
			        "the job\n",
			        nic_name, host, (int)nic_pid[i], WEXITSTATUS(st));
		nic_pid[i] = -1;
		return 1;
	}
	return 0;
}

void ptlrun_nic_stop(void)
{
	int st, left = 0;
	for (int i = 0; i < nic_count; i++)
		if (nic_pid[i] > 0) {
			kill(nic_pid[i], SIGTERM);
			left++;
		}
	for (int waited = 0; left && waited < NIC_STOP_MS; waited += 10) {
		for (int i = 0; i < nic_count; i++)
			if (nic_pid[i] > 0 && waitpid(nic_pid[i], &st, WNOHANG) == nic_pid[i]) {
				nic_pid[i] = -1;
				left--;
			}
		struct timespec d = {0, 10 * 1000 * 1000};
		if (left)
			nanosleep(&d, NULL);
	}
	for (int i = 0; i < nic_count; i++)
		if (nic_pid[i] > 0) {
			kill(nic_pid[i], SIGKILL);
			waitpid(nic_pid[i], &st, 0);
			nic_pid[i] = -1;
		}
	nic_count = 0;
}
