/* SPDX-License-Identifier: BSD-3-Clause */
/* soak_util.c - clock and the shared files of p3soak (soak.h). */
#include "soak.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

uint64_t soak_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void *soak_map(const char *path, size_t size, int create)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0600);
	void *p;

	if (fd < 0)
		return NULL;
	if (create && ftruncate(fd, (off_t)size) != 0) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

void soak_stats_path(char *out, size_t n, const char *dir, unsigned rank, unsigned inc)
{
	snprintf(out, n, "%s/r%u.i%u.stats", dir, rank, inc);
}
