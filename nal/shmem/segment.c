/* SPDX-License-Identifier: BSD-3-Clause */
/* segment.c - create, validate, map and clean up shmem segments (no core
 * dependency: the unit tests link it alone). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shmem.h"

void shm_seg_name(char *buf, size_t len, uint32_t uid, uint32_t jid, uint32_t pid)
{
	snprintf(buf, len, "/%s-%u-%u-%u", SHM_NAME_PREFIX, uid, jid, pid);
}

static uint64_t shm_ring_stride(uint32_t ring_size)
{
	return sizeof(struct shm_ring_ctl) + (uint64_t)ring_size;
}

static uint64_t shm_claims_size(uint32_t max_peers)
{
	uint64_t n = (uint64_t)max_peers * sizeof(struct shm_claim);

	return (n + 4095) & ~(uint64_t)4095;
}

size_t shm_seg_total_size(const struct shm_seg_geom *geom)
{
	return SHM_HDR_AREA + shm_claims_size(geom->gm_max_peers) +
	       (uint64_t)geom->gm_max_peers * shm_ring_stride(geom->gm_ring_size);
}

/* Field 22 of /proc/<pid>/stat: start time in clock ticks since boot.
 * Together with the pid it identifies a process across pid reuse. */
uint64_t shm_proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* comm may contain spaces and ')' */
	if (!p)
		return 0;
	/* after ") " come fields 3..: state is field 3, starttime field 22 */
	int field = 2;
	for (p++; *p && field < 21; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

int shm_seg_owner_alive(const struct shm_seg_hdr *hdr)
{
	pid_t pid = (pid_t)hdr->sh_owner_ospid;

	if (pid <= 0)
		return 0;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 0;
	if (hdr->sh_owner_start != 0) {
		uint64_t st = shm_proc_start_time(pid);

		if (st != 0 && st != hdr->sh_owner_start)
			return 0; /* pid reused by another process */
	}
	return 1;
}

/* A dead owner's segment is marked CLOSED before it is unlinked: peers
 * that still map it (the owner was SIGKILLed, so it never said so) check
 * the state on every send and reconnect to the successor instead of
 * writing into a ring nobody reads any more (found by tools/soak: puts to
 * a restarted rank vanished until the dead ring filled). */
static void shm_seg_mark_closed(struct shm_seg_hdr *hdr)
{
	uint32_t alive = SHM_SEG_ALIVE;
	atomic_compare_exchange_strong(&hdr->sh_state, &alive, SHM_SEG_CLOSED);
}

/* 1: the existing segment `name` is stale (owner dead, closed, or never
 * finished creating it), 0: a live process owns it, <0: -errno. */
static int shm_seg_is_stale(const char *name)
{
	for (int attempt = 0; attempt < 20; attempt++) {
		struct stat st;
		int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);

		if (fd < 0)
			return errno == ENOENT ? 1 : -errno;
		if (fstat(fd, &st) < 0) {
			int err = -errno;
			close(fd);
			return err;
		}
		if ((size_t)st.st_size >= sizeof(struct shm_seg_hdr)) {
			struct shm_seg_hdr *hdr =
			    mmap(NULL, sizeof(*hdr), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

			close(fd);
			if (hdr == MAP_FAILED)
				return -errno;
			int live = 0, known = 0;
			if (hdr->sh_owner_ospid != 0) {
				known = 1;
				live = shm_seg_owner_alive(hdr) &&
				       atomic_load(&hdr->sh_state) != SHM_SEG_CLOSED;
				if (!live)
					shm_seg_mark_closed(hdr);
			}
			munmap(hdr, sizeof(*hdr));
			if (known)
				return !live;
		} else {
			close(fd);
		}
		/* being created right now (or abandoned mid-way): give the
		 * creator up to ~100 ms to record its pid */
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return 1;
}

int shm_seg_create(struct shm_seg *seg, const char *name, const struct shm_seg_geom *geom,
                   int *stale)
{
	size_t size = shm_seg_total_size(geom);
	int fd = -1;

	*stale = 0;
	for (int attempt = 0; attempt < 4 && fd < 0; attempt++) {
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST)
			return -errno;
		int r = shm_seg_is_stale(name);
		if (r < 0)
			return r;
		if (r == 0)
			return -EADDRINUSE;
		if (shm_unlink(name) < 0 && errno != ENOENT)
			return -errno;
		*stale = 1;
	}
	if (fd < 0)
		return -EADDRINUSE;

	int err;
	if (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)size) < 0) {
		err = -errno;
		goto err_unlink;
	}
	void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto err_unlink;
	}
	/* a forked child must never see its parent's rings (portals/fork.c) */
	madvise(base, size, MADV_DONTFORK);

	struct shm_seg_hdr *hdr = base;
	/* The pid first: a concurrent creator checking staleness needs it. */
	hdr->sh_owner_ospid = (uint32_t)getpid();
	hdr->sh_owner_start = shm_proc_start_time(getpid());
	hdr->sh_version = SHM_LAYOUT_VERSION;
	hdr->sh_seg_size = size;
	hdr->sh_hdr_size = sizeof(*hdr);
	hdr->sh_max_peers = geom->gm_max_peers;
	hdr->sh_ring_size = geom->gm_ring_size;
	hdr->sh_max_record = geom->gm_ring_size / 4;
	hdr->sh_claims_off = SHM_HDR_AREA;
	hdr->sh_rings_off = SHM_HDR_AREA + shm_claims_size(geom->gm_max_peers);
	hdr->sh_ring_stride = shm_ring_stride(geom->gm_ring_size);
	atomic_store(&hdr->sh_state, SHM_SEG_CREATING);
	atomic_store(&hdr->sh_nclaimed, 0);
	atomic_store(&hdr->sh_doorbell, 0);
	atomic_store(&hdr->sh_sleepers, 0);
	/* ftruncate zero-filled the claims and ring control blocks */

	seg->sg_base = base;
	seg->sg_size = size;
	seg->sg_fd = fd;
	snprintf(seg->sg_name, sizeof(seg->sg_name), "%s", name);
	shm_cleanup_register(name);
	return 0;

err_unlink:
	shm_unlink(name);
	close(fd);
	return err;
}

void shm_seg_publish(struct shm_seg *seg)
{
	struct shm_seg_hdr *hdr = seg->sg_base;

	atomic_store_explicit(&hdr->sh_state, SHM_SEG_ALIVE, memory_order_relaxed);
	__atomic_store_n(&hdr->sh_magic, SHM_MAGIC, __ATOMIC_RELEASE);
}

int shm_seg_open(struct shm_seg *seg, const char *name)
{
	struct stat st;
	int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	int err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto err_close;
	}
	if ((size_t)st.st_size < SHM_HDR_AREA) {
		err = -EAGAIN;
		goto err_close;
	}
	size_t size = (size_t)st.st_size;
	void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	madvise(base, size, MADV_DONTFORK); /* as for our own segment */

	/* Validate once: these fields are written before the magic and never
	 * change afterwards; copy what we use so a later scribble cannot move
	 * our bounds (shm_seg_claim/ring use sg_size for every access). */
	const struct shm_seg_hdr *hdr = base;
	uint32_t magic = __atomic_load_n(&hdr->sh_magic, __ATOMIC_ACQUIRE);
	if (magic == 0) {
		err = atomic_load(&((struct shm_seg_hdr *)base)->sh_state) == SHM_SEG_CLOSED
		          ? -ENOENT
		          : -EAGAIN;
		goto err_unmap;
	}
	err = -EPROTO;
	if (magic != SHM_MAGIC || hdr->sh_version != SHM_LAYOUT_VERSION ||
	    hdr->sh_hdr_size != sizeof(*hdr) || hdr->sh_seg_size != size)
		goto err_unmap;
	struct shm_seg_geom geom = {hdr->sh_max_peers, hdr->sh_ring_size};
	if (geom.gm_max_peers == 0 || geom.gm_max_peers > 65536 || geom.gm_ring_size < 4096 ||
	    (geom.gm_ring_size & (geom.gm_ring_size - 1)) != 0 || geom.gm_ring_size > (1u << 30) ||
	    hdr->sh_max_record != geom.gm_ring_size / 4 || shm_seg_total_size(&geom) != size ||
	    hdr->sh_claims_off != SHM_HDR_AREA ||
	    hdr->sh_rings_off != SHM_HDR_AREA + shm_claims_size(geom.gm_max_peers) ||
	    hdr->sh_ring_stride != shm_ring_stride(geom.gm_ring_size))
		goto err_unmap;

	seg->sg_base = base;
	seg->sg_size = size;
	seg->sg_fd = fd;
	snprintf(seg->sg_name, sizeof(seg->sg_name), "%s", name);
	return 0;

err_unmap:
	munmap(base, size);
err_close:
	close(fd);
	return err;
}

/* Bounds are recomputed from the validated geometry each time, from fields
 * a hostile peer could rewrite after validation: check them against the
 * mapping size, which it cannot change. */
struct shm_claim *shm_seg_claim(const struct shm_seg *seg, uint32_t idx)
{
	const struct shm_seg_hdr *hdr = seg->sg_base;
	uint64_t off = SHM_HDR_AREA + (uint64_t)idx * sizeof(struct shm_claim);

	if (idx >= hdr->sh_max_peers || off + sizeof(struct shm_claim) > seg->sg_size)
		return NULL;
	return (struct shm_claim *)((uint8_t *)seg->sg_base + off);
}

struct shm_ring_ctl *shm_seg_ring_ctl(const struct shm_seg *seg, uint32_t idx)
{
	const struct shm_seg_hdr *hdr = seg->sg_base;
	uint64_t stride = shm_ring_stride(hdr->sh_ring_size);
	uint64_t off = hdr->sh_rings_off + (uint64_t)idx * stride;

	if (idx >= hdr->sh_max_peers || hdr->sh_rings_off < SHM_HDR_AREA ||
	    off + stride > seg->sg_size || off + stride < off)
		return NULL;
	return (struct shm_ring_ctl *)((uint8_t *)seg->sg_base + off);
}

uint8_t *shm_seg_ring_data(const struct shm_seg *seg, uint32_t idx)
{
	uint8_t *ctl = (uint8_t *)shm_seg_ring_ctl(seg, idx);

	return ctl ? ctl + sizeof(struct shm_ring_ctl) : NULL;
}

/* Take `bytes` from *budget if it holds that much. */
static int shm_budget_take(_Atomic uint64_t *budget, uint64_t bytes)
{
	uint64_t left = atomic_load_explicit(budget, memory_order_relaxed);

	do {
		if (left < bytes)
			return 0;
	} while (!atomic_compare_exchange_weak(budget, &left, left - bytes));
	return 1;
}

/* Pre-fault whole pages [start, end) of a shared mapping without writing
 * to them: the other side may be using them already. */
static int shm_populate(uintptr_t start, uintptr_t end, uintptr_t page)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno; /* ENOMEM, EFAULT (tmpfs full), EINTR, ... */
#endif
	/* the kernel does not know MADV_POPULATE_WRITE (< 5.14): a read
	 * fault allocates a tmpfs page and maps it writable (a shared
	 * mapping needs no write fault for dirty tracking) */
	for (uintptr_t p = start; p < end; p += page)
		(void)*(volatile const uint8_t *)p;
	return 0;
}

long shm_seg_ring_populate(const struct shm_seg *seg, uint32_t idx, _Atomic uint64_t *budget)
{
	const struct shm_seg_hdr *hdr = seg->sg_base;
	uint32_t ring_size = hdr->sh_ring_size; /* read once: the owner may rewrite it */
	uint8_t *ctl = (uint8_t *)shm_seg_ring_ctl(seg, idx);
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!ctl)
		return -EINVAL;
	uintptr_t map_end = ((uintptr_t)seg->sg_base + seg->sg_size + page - 1) & ~(page - 1);
	uintptr_t start = (uintptr_t)ctl & ~(page - 1);
	uintptr_t end = ((uintptr_t)ctl + shm_ring_stride(ring_size) + page - 1) & ~(page - 1);
	if (end > map_end || end < start)
		end = map_end;
	if (!shm_budget_take(budget, end - start))
		return 0;
	int err = shm_populate(start, end, page);
	if (err) {
		atomic_fetch_add(budget, end - start);
		return err;
	}
	return (long)(end - start);
}

void shm_seg_unlink(struct shm_seg *seg)
{
	if (!seg->sg_base || !seg->sg_name[0])
		return;
	struct shm_seg_hdr *hdr = seg->sg_base;
	/* Unlink first: once a checker can see CLOSED, the name is free. */
	shm_unlink(seg->sg_name);
	shm_cleanup_unregister(seg->sg_name);
	atomic_store(&hdr->sh_state, SHM_SEG_CLOSED);
	seg->sg_name[0] = '\0';
}

void shm_seg_close(struct shm_seg *seg)
{
	if (seg->sg_base)
		munmap(seg->sg_base, seg->sg_size);
	if (seg->sg_fd >= 0)
		close(seg->sg_fd);
	seg->sg_base = NULL;
	seg->sg_size = 0;
	seg->sg_fd = -1;
}

/* Remove segments of this user whose owner is dead (left by SIGKILL, or by
 * a launcher that did not clean up).  Only segments with a recorded owner
 * are considered; the inode is checked again right before the unlink so a
 * segment that replaced the stale one in the meantime survives. */
int shm_seg_sweep(uint32_t uid, unsigned int max_check)
{
	char prefix[64];
	int removed = 0;
	unsigned int checked = 0;
	DIR *dir = opendir("/dev/shm");

	if (!dir)
		return 0;
	int plen = snprintf(prefix, sizeof(prefix), "%s-%u-", SHM_NAME_PREFIX, uid);
	struct dirent *de;
	while ((de = readdir(dir)) != NULL && checked < max_check) {
		if (strncmp(de->d_name, prefix, (size_t)plen) != 0)
			continue;
		checked++;
		char name[sizeof(de->d_name) + 2];
		struct stat st, st2;
		snprintf(name, sizeof(name), "/%s", de->d_name);
		int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct shm_seg_hdr) ||
		    st.st_uid != uid) {
			close(fd);
			continue;
		}
		struct shm_seg_hdr *hdr =
		    mmap(NULL, sizeof(*hdr), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (hdr == MAP_FAILED)
			continue;
		int stale = hdr->sh_owner_ospid != 0 && !shm_seg_owner_alive(hdr);
		if (stale)
			shm_seg_mark_closed(hdr);
		munmap(hdr, sizeof(*hdr));
		char path[sizeof(name) + 16];
		snprintf(path, sizeof(path), "/dev/shm%s", name);
		if (stale && stat(path, &st2) == 0 && st2.st_ino == st.st_ino && unlink(path) == 0)
			removed++;
	}
	closedir(dir);
	return removed;
}

/* ---- cleanup at exit and on fatal signals ----------------------------
 *
 * A fixed table of "/dev/shm/<name>" paths, usable from a signal handler
 * (unlink(2) is async-signal-safe, shm_unlink is not listed).  Entries
 * record the creating OS pid so a forked child never removes its parent's
 * segments. */

#define SHM_CLEANUP_SLOTS 32

static struct {
	_Atomic int cu_used; /* 0 free, 1 being written, 2 valid */
	pid_t cu_owner;
	char cu_path[SHM_NAME_MAX + 16];
} shm_cleanup_tab[SHM_CLEANUP_SLOTS];

static const int shm_fatal_signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGILL,  SIGABRT,
                                        SIGBUS,  SIGFPE,  SIGSEGV, SIGTERM, SIGUSR1,
                                        SIGUSR2, SIGPIPE, SIGALRM, SIGXCPU, SIGXFSZ};
#define SHM_NSIG (sizeof(shm_fatal_signals) / sizeof(shm_fatal_signals[0]))
static struct sigaction shm_old_action[SHM_NSIG];
static _Atomic int shm_handlers_installed;

static void shm_cleanup_all(void)
{
	pid_t me = getpid();

	for (int i = 0; i < SHM_CLEANUP_SLOTS; i++) {
		if (atomic_load(&shm_cleanup_tab[i].cu_used) == 2 &&
		    shm_cleanup_tab[i].cu_owner == me)
			unlink(shm_cleanup_tab[i].cu_path);
	}
}

/* Remove our segments when the signal is going to end the process: a
 * fault, or the default action of a termination signal.  A handler
 * installed before us for a termination signal is called as if we were not
 * there (it may not exit; if it does through exit(3), the atexit hook
 * cleans up). */
static void shm_fatal_handler(int sig, siginfo_t *info, void *uctx)
{
	int saved = errno;
	size_t i;

	for (i = 0; i < SHM_NSIG; i++)
		if (shm_fatal_signals[i] == sig)
			break;
	if (i == SHM_NSIG) {
		errno = saved;
		return;
	}
	const struct sigaction *old = &shm_old_action[i];
	/* A fault (or abort) ends the process whatever handler follows ours
	 * (sanitizers report and _exit): clean up first. */
	if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT)
		shm_cleanup_all();
	if (old->sa_flags & SA_SIGINFO) {
		errno = saved;
		old->sa_sigaction(sig, info, uctx);
		return;
	}
	if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		errno = saved;
		old->sa_handler(sig);
		return;
	}
	shm_cleanup_all();
	/* Default action: restore it and re-deliver (a fault re-executes the
	 * faulting instruction; a sent signal is raised again). */
	sigaction(sig, old, NULL);
	raise(sig);
	errno = saved;
}

static void shm_install_handlers(void)
{
	int expected = 0;

	if (!atomic_compare_exchange_strong(&shm_handlers_installed, &expected, 1))
		return;
	atexit(shm_cleanup_all);
	for (size_t i = 0; i < SHM_NSIG; i++) {
		struct sigaction sa, old;

		if (sigaction(shm_fatal_signals[i], NULL, &old) < 0)
			continue;
		/* an ignored signal does not end the process: nothing to do */
		if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
			continue;
		shm_old_action[i] = old;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = shm_fatal_handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		sigaction(shm_fatal_signals[i], &sa, NULL);
	}
}

void shm_cleanup_register(const char *name)
{
	shm_install_handlers();
	for (int i = 0; i < SHM_CLEANUP_SLOTS; i++) {
		int expected = 0;

		if (!atomic_compare_exchange_strong(&shm_cleanup_tab[i].cu_used, &expected, 1))
			continue;
		shm_cleanup_tab[i].cu_owner = getpid();
		snprintf(shm_cleanup_tab[i].cu_path, sizeof(shm_cleanup_tab[i].cu_path),
		         "/dev/shm%s", name);
		atomic_store(&shm_cleanup_tab[i].cu_used, 2);
		return;
	}
	/* table full: the segment is still removed at stop, and by ptlrun */
}

void shm_cleanup_unregister(const char *name)
{
	char path[SHM_NAME_MAX + 16];
	pid_t me = getpid();

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	for (int i = 0; i < SHM_CLEANUP_SLOTS; i++) {
		int expected = 2;

		if (shm_cleanup_tab[i].cu_owner != me ||
		    strcmp(shm_cleanup_tab[i].cu_path, path) != 0)
			continue;
		if (atomic_compare_exchange_strong(&shm_cleanup_tab[i].cu_used, &expected, 1)) {
			shm_cleanup_tab[i].cu_path[0] = '\0';
			atomic_store(&shm_cleanup_tab[i].cu_used, 0);
		}
	}
}
