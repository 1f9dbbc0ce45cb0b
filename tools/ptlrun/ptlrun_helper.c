/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ptlrun_helper.c - a scriptable rank for the ptlrun tests.  Arguments are
 * commands run in order; "rank:R" makes the following commands apply only
 * to rank R (from PTL_MY_RID), "all" to every rank again.
 *
 *   out:TEXT   line to stdout        err:TEXT   line to stderr
 *   partial:TEXT  stdout without newline (flushed)
 *   sleep:MS   sleep                 exit:CODE  exit now
 *   kill:SIG   raise signal SIG      ignterm    ignore SIGTERM
 *   shm        create /dev/shm/p3shm-<uid>-<PTL_MY_JID>-<rank> and keep it
 *   env        print PTL_MY_RID/NIDMAP/PIDMAP/MY_JID/NAL/PROGRESS
 *   cpus       print the CPUs this rank may run on
 *   stdin      copy stdin to stdout
 */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *rid = getenv("PTL_MY_RID");
	int rank = rid ? atoi(rid) : -1, active = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "rank:", 5) == 0) {
			active = atoi(a + 5) == rank;
		} else if (strcmp(a, "all") == 0) {
			active = 1;
		} else if (!active) {
			continue;
		} else if (strncmp(a, "out:", 4) == 0) {
			printf("%s\n", a + 4);
		} else if (strncmp(a, "err:", 4) == 0) {
			fprintf(stderr, "%s\n", a + 4);
		} else if (strncmp(a, "partial:", 8) == 0) {
			printf("%s", a + 8);
			fflush(stdout);
		} else if (strncmp(a, "sleep:", 6) == 0) {
			long ms = atol(a + 6);
			struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

			while (nanosleep(&ts, &ts) != 0)
				;
		} else if (strncmp(a, "exit:", 5) == 0) {
			fflush(NULL);
			_exit(atoi(a + 5));
		} else if (strncmp(a, "kill:", 5) == 0) {
			fflush(NULL);
			signal(atoi(a + 5), SIG_DFL);
			raise(atoi(a + 5));
		} else if (strcmp(a, "ignterm") == 0) {
			signal(SIGTERM, SIG_IGN);
		} else if (strcmp(a, "shm") == 0) {
			char name[96];
			const char *jid = getenv("PTL_MY_JID");
			int fd;

			snprintf(name, sizeof(name), "/p3shm-%u-%s-%d", (unsigned int)getuid(),
			         jid ? jid : "0", rank);
			fd = shm_open(name, O_CREAT | O_RDWR, 0600);
			if (fd < 0) {
				perror("shm_open");
				return 1;
			}
			close(fd);
		} else if (strcmp(a, "env") == 0) {
			const char *vars[] = {"PTL_MY_RID", "PTL_NIDMAP", "PTL_PIDMAP",
			                      "PTL_MY_JID", "PTL_NAL",    "PTL_PROGRESS",
			                      "P3_RMPP_IFNAME"};

			for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]); v++) {
				const char *s = getenv(vars[v]);

				printf("%s=%s\n", vars[v], s ? s : "(unset)");
			}
		} else if (strcmp(a, "cpus") == 0) {
			cpu_set_t set;

			if (sched_getaffinity(0, sizeof(set), &set) != 0)
				return 1;
			printf("cpus:");
			for (int c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &set))
					printf(" %d", c);
			printf("\n");
		} else if (strcmp(a, "stdin") == 0) {
			char buf[4096];
			ssize_t n;

			while ((n = read(0, buf, sizeof(buf))) > 0)
				fwrite(buf, 1, (size_t)n, stdout);
		} else {
			fprintf(stderr, "ptlrun_helper: unknown command '%s'\n", a);
			return 2;
		}
	}
	return 0;
}
