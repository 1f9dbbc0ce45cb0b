/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p3soak - a soak test of p3stack: N Portals ranks doing seeded random puts,
 * gets and GetPuts to each other, every byte checked, while ranks are
 * SIGKILLed and restarted (tools/soak/README.md; p3soak --help).  The same
 * program is the supervisor and, with --worker, each rank.
 */
#include "soak.h"

#include <string.h>

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--worker") == 0)
		return soak_worker_main(argv[2]);
	return soak_super_main(argc, argv);
}
