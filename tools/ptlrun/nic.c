/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nic.c - ptlrun's emulated NIC: one mcpd per job on the single host, under
 * a name of its own (so that it never meets a NIC somebody else started),
 * placed beside the ranks, stopped with them.  If it dies while the job
 * runs, ptlrun ends the job and says which NIC it was.
 */
#include "nic.h"
#include "nic_place.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NIC_READY_MS 3000
#define NIC_STOP_MS  2000

static pid_t nic_pid = -1;
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

static int nic_answers(void)
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

int ptlrun_nic_start(void)
{
	const char *path = mcpd_path();
	snprintf(nic_name, sizeof(nic_name), "ptlrun-%d", (int)getpid());
	setenv("P3_MYRI_NIC", nic_name, 1);
	fflush(NULL);
	nic_pid = fork();
	if (nic_pid < 0) {
		fprintf(stderr, "ptlrun: fork for the NIC: %s\n", strerror(errno));
		return -1;
	}
	if (nic_pid == 0) {
		setpgid(0, 0); /* the job's signals are not the NIC's */
		ptlrun_nic_place(0);
		execl(path, "mcpd", "--nic", nic_name, (char *)NULL);
		fprintf(stderr, "ptlrun: cannot run the NIC %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	for (int waited = 0; waited < NIC_READY_MS; waited += 10) {
		int st;
		if (nic_answers())
			return 0;
		if (waitpid(nic_pid, &st, WNOHANG) == nic_pid) {
			fprintf(stderr, "ptlrun: the NIC (mcpd %s) exited at start\n", nic_name);
			nic_pid = -1;
			return -1;
		}
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	fprintf(stderr, "ptlrun: the NIC (mcpd %s) did not answer within %d ms\n", nic_name,
	        NIC_READY_MS);
	ptlrun_nic_stop();
	return -1;
}

int ptlrun_nic_died(void)
{
	int st;
	if (nic_pid <= 0 || waitpid(nic_pid, &st, WNOHANG) != nic_pid)
		return 0;
	if (WIFSIGNALED(st))
		fprintf(stderr,
		        "ptlrun: the NIC mcpd %s (pid %d) was killed by signal %d (%s); "
		        "terminating the job\n",
		        nic_name, (int)nic_pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		fprintf(stderr,
		        "ptlrun: the NIC mcpd %s (pid %d) exited with %d; terminating "
		        "the job\n",
		        nic_name, (int)nic_pid, WEXITSTATUS(st));
	nic_pid = -1;
	return 1;
}

void ptlrun_nic_stop(void)
{
	int st;
	if (nic_pid <= 0)
		return;
	kill(nic_pid, SIGTERM);
	for (int waited = 0; waited < NIC_STOP_MS; waited += 10) {
		if (waitpid(nic_pid, &st, WNOHANG) == nic_pid) {
			nic_pid = -1;
			return;
		}
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	kill(nic_pid, SIGKILL);
	waitpid(nic_pid, &st, 0);
	nic_pid = -1;
}
