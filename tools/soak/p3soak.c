/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p3soak - a soak test of p3stack: N Portals ranks doing seeded random puts,
 * gets and GetPuts to each other, every byte checked, while ranks are
 * SIGKILLed and restarted (tools/soak/README.md; p3soak --help).  The same
 * program is the supervisor and, with --worker, each rank.
 */
#include "soak.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--worker") == 0)
		return soak_worker_main(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--analyze") == 0) { /* report of a kept work dir */
		char path[600];
		snprintf(path, sizeof(path), "%s/job", argv[2]);
		const struct soak_job *job = soak_map(path, sizeof(*job), 0);
		if (!job || job->magic != SOAK_JOB_MAGIC) {
			fprintf(stderr, "p3soak: %s is no p3soak job file\n", path);
			return 2;
		}
		unsigned kills = 0;
		for (unsigned r = 0; r < job->nranks && r < SOAK_MAX_RANKS; r++)
			kills += job->rank[r].kills;
		return soak_report(job, stdout, 0, kills, 0, "?") ? 1 : 0;
	}
	return soak_super_main(argc, argv);
}
