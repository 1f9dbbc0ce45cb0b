/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * affinity_board.c - the ranks of a node publish their affinity masks on a
 * shared board and read back the union (see affinity_board.h for why).
 *
 * The board is the POSIX shared-memory object
 *     /dev/shm/p3aff-<uid>-<ppid>-<ppid's start time>
 * Local ranks share their parent under every launcher p3stack supports
 * (hydra's proxy, slurmstepd, ptlrun; taskset and nsenter exec, they do not
 * fork), and the start time makes a reused parent pid another board.  A rank
 * whose parent differs from its peers' (a wrapper that forks) waits alone
 * until P3_AFFINITY_BOARD_WAIT_MS and falls back to its own mask.
 *
 * Layout: a count of ranks that have read the union, then slots claimed by
 * OS pid with a compare-and-swap (a process that asks twice, e.g. through
 * two copies of this file, finds its own slot).  Nothing is trusted beyond
 * the slot array's bounds; a mask is copied out before use.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include "affinity_board.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { SLOT_CLAIMED = 0, SLOT_PUBLISHED = 1, SLOT_READ = 2 };

struct board_slot {
	_Atomic int32_t pid;    /* 0: free; else the publisher's OS pid */
	_Atomic uint32_t state; /* SLOT_* */
	unsigned char mask[sizeof(cpu_set_t)];
};

struct board {
	_Atomic uint32_t readers; /* slots in SLOT_READ */
	uint32_t pad[15];
	struct board_slot slot[P3_AFFINITY_BOARD_SLOTS];
};

/* The parent's start time (field 22 of /proc/<ppid>/stat), or 0. */
static unsigned long long parent_start_time(pid_t ppid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)ppid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the command may hold spaces */
	unsigned long long start = 0;
	if (p && sscanf(p + 1,
	                " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
	                "%*d %*d %*d %llu",
	                &start) != 1)
		start = 0;
	return start;
}

static void board_name(char *name, size_t len)
{
	pid_t ppid = getppid();
	snprintf(name, len, "/p3aff-%u-%d-%llu", (unsigned)getuid(), (int)ppid,
	         parent_start_time(ppid));
}

static struct board *board_map(const char *name)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	struct stat st;
	/* every rank sizes it the same: the first extends, the rest no-op */
	if (fstat(fd, &st) != 0 || (st.st_size < (off_t)sizeof(struct board) &&
	                            ftruncate(fd, sizeof(struct board)) != 0)) {
		close(fd);
		return NULL;
	}
	void *p = mmap(NULL, sizeof(struct board), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* This process's slot, claimed if need be; NULL when the board is full. */
static struct board_slot *claim_slot(struct board *b, pid_t me)
{
	for (int i = 0; i < P3_AFFINITY_BOARD_SLOTS; i++) {
		struct board_slot *s = &b->slot[i];
		int32_t owner = atomic_load_explicit(&s->pid, memory_order_acquire);
		if (owner == me)
			return s;
		if (owner == 0 && atomic_compare_exchange_strong(&s->pid, &owner, me))
			return s;
	}
	return NULL;
}

/* Union of the published masks; returns how many there are. */
static unsigned published_union(struct board *b, cpu_set_t *all)
{
	unsigned n = 0;
	CPU_ZERO(all);
	for (int i = 0; i < P3_AFFINITY_BOARD_SLOTS; i++) {
		struct board_slot *s = &b->slot[i];
		if (atomic_load_explicit(&s->pid, memory_order_acquire) == 0 ||
		    atomic_load_explicit(&s->state, memory_order_acquire) < SLOT_PUBLISHED)
			continue;
		cpu_set_t m;
		memcpy(&m, s->mask, sizeof(m));
		CPU_OR(all, all, &m);
		n++;
	}
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
	nanosleep(&ts, NULL);
}

static int board_exchange(const char *name, struct board *b, unsigned local_ranks,
                          const cpu_set_t *mine, cpu_set_t *all)
{
	pid_t me = getpid();
	struct board_slot *s = claim_slot(b, me);
	if (!s)
		return -1;
	if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_CLAIMED) {
		memcpy(s->mask, mine, sizeof(*mine));
		atomic_store_explicit(&s->state, SLOT_PUBLISHED, memory_order_release);
	}
	cpu_set_t u;
	for (int waited = 0; published_union(b, &u) < local_ranks; waited++) {
		if (waited >= P3_AFFINITY_BOARD_WAIT_MS) {
			/* the others are elsewhere (another parent): leave no
			 * object behind; late arrivals start a board afresh */
			shm_unlink(name);
			return -1;
		}
		sleep_ms(1);
	}
	*all = u;
	uint32_t expect = SLOT_PUBLISHED;
	if (atomic_compare_exchange_strong(&s->state, &expect, SLOT_READ) &&
	    atomic_fetch_add(&b->readers, 1) + 1 >= local_ranks)
		shm_unlink(name); /* the last reader: nobody opens it any more */
	return 0;
}

int p3_affinity_board_union(unsigned local_ranks, const cpu_set_t *mine, cpu_set_t *all)
{
	/* one answer per process (the adapter, every NI and the NALs ask) */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static pid_t cached_pid;
	static unsigned cached_ranks;
	static int cached_rc;
	static cpu_set_t cached;

	if (local_ranks == 0 || local_ranks > P3_AFFINITY_BOARD_SLOTS)
		return -1;
	pthread_mutex_lock(&lock);
	if (cached_pid != getpid() || cached_ranks != local_ranks) {
		char name[96];
		board_name(name, sizeof(name));
		struct board *b = board_map(name);
		cached_rc = b ? board_exchange(name, b, local_ranks, mine, &cached) : -1;
		if (b)
			munmap(b, sizeof(*b));
		cached_pid = getpid();
		cached_ranks = local_ranks;
	}
	int rc = cached_rc;
	if (rc == 0)
		*all = cached;
	pthread_mutex_unlock(&lock);
	return rc;
}
