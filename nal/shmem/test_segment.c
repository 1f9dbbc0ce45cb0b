/* SPDX-License-Identifier: BSD-3-Clause */
/* test_segment.c - unit tests of shmem segments: creation and layout, mode
 * 0600, in-use detection, stale-segment cleanup, removal at exit and on a
 * fatal signal, validation of a peer's segment. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shmem.h"

static const struct shm_seg_geom test_geom = {8, 16384};

/* A name no other test run uses: jid = our pid, pid = a per-test number. */
static void test_name(char *buf, size_t len, uint32_t n)
{
	shm_seg_name(buf, len, (uint32_t)getuid(), (uint32_t)getpid(), n);
}

static int shm_exists(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	return stat(path, &st) == 0;
}

static void create_ok(struct shm_seg *seg, const char *name)
{
	int stale = -1;

	memset(seg, 0, sizeof(*seg));
	seg->sg_fd = -1;
	ck_assert_int_eq(shm_seg_create(seg, name, &test_geom, &stale), 0);
	ck_assert_int_eq(stale, 0);
	shm_seg_publish(seg);
}

START_TEST(test_seg_create_layout)
{
	char name[SHM_NAME_MAX], path[128];
	struct shm_seg seg, peer = {.sg_fd = -1};
	struct stat st;

	test_name(name, sizeof(name), 1);
	create_ok(&seg, name);
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_uint_eq((size_t)st.st_size, shm_seg_total_size(&test_geom));
	ck_assert(strncmp(name, "/p3shm-", 7) == 0);

	struct shm_seg_hdr *hdr = seg.sg_base;
	ck_assert_uint_eq(hdr->sh_magic, SHM_MAGIC);
	ck_assert_uint_eq(hdr->sh_version, SHM_LAYOUT_VERSION);
	ck_assert_uint_eq(hdr->sh_owner_ospid, (uint32_t)getpid());
	ck_assert_uint_eq(atomic_load(&hdr->sh_state), SHM_SEG_ALIVE);
	ck_assert(shm_seg_owner_alive(hdr));

	/* a peer maps and validates it; every ring is inside the mapping */
	ck_assert_int_eq(shm_seg_open(&peer, name), 0);
	for (uint32_t i = 0; i < test_geom.gm_max_peers; i++) {
		uint8_t *ctl = (uint8_t *)shm_seg_ring_ctl(&peer, i);
		ck_assert_ptr_nonnull(ctl);
		ck_assert_uint_eq((uintptr_t)ctl % SHM_CACHE_LINE, 0);
		ck_assert(ctl + sizeof(struct shm_ring_ctl) + test_geom.gm_ring_size <=
		          (uint8_t *)peer.sg_base + peer.sg_size);
		ck_assert_ptr_nonnull(shm_seg_claim(&peer, i));
	}
	ck_assert_ptr_null(shm_seg_ring_ctl(&peer, test_geom.gm_max_peers));
	ck_assert_ptr_null(shm_seg_claim(&peer, test_geom.gm_max_peers));
	shm_seg_close(&peer);

	shm_seg_unlink(&seg);
	ck_assert(!shm_exists(name));
	ck_assert_int_eq(shm_seg_open(&peer, name), -ENOENT);
	shm_seg_close(&seg);
}
END_TEST

START_TEST(test_seg_in_use)
{
	char name[SHM_NAME_MAX];
	struct shm_seg seg, again = {.sg_fd = -1};
	int stale;

	test_name(name, sizeof(name), 2);
	create_ok(&seg, name);
	ck_assert_int_eq(shm_seg_create(&again, name, &test_geom, &stale), -EADDRINUSE);
	ck_assert(shm_exists(name));
	shm_seg_unlink(&seg);
	shm_seg_close(&seg);
}
END_TEST

START_TEST(test_seg_stale_cleanup)
{
	char name[SHM_NAME_MAX];
	struct shm_seg seg = {.sg_fd = -1};
	int status, stale = 0;

	test_name(name, sizeof(name), 3);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct shm_seg s = {.sg_fd = -1};
		if (shm_seg_create(&s, name, &test_geom, &stale) != 0)
			_exit(1);
		shm_seg_publish(&s);
		_exit(0); /* no atexit: the segment stays behind, like after SIGKILL */
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert(shm_exists(name));

	ck_assert_int_eq(shm_seg_create(&seg, name, &test_geom, &stale), 0);
	ck_assert_int_eq(stale, 1);
	shm_seg_publish(&seg);
	ck_assert_uint_eq(((struct shm_seg_hdr *)seg.sg_base)->sh_owner_ospid, (uint32_t)getpid());
	shm_seg_unlink(&seg);
	shm_seg_close(&seg);
	ck_assert(!shm_exists(name));
}
END_TEST

START_TEST(test_seg_closed_is_stale)
{
	char name[SHM_NAME_MAX];
	struct shm_seg seg = {.sg_fd = -1};
	int stale = 0;

	/* a live owner that closed its NI but whose name is still there
	 * (e.g. the unlink was lost) does not block a new owner */
	test_name(name, sizeof(name), 4);
	create_ok(&seg, name);
	atomic_store(&((struct shm_seg_hdr *)seg.sg_base)->sh_state, SHM_SEG_CLOSED);
	struct shm_seg seg2 = {.sg_fd = -1};
	ck_assert_int_eq(shm_seg_create(&seg2, name, &test_geom, &stale), 0);
	ck_assert_int_eq(stale, 1);
	shm_seg_close(&seg);
	shm_seg_unlink(&seg2);
	shm_seg_close(&seg2);
	ck_assert(!shm_exists(name));
}
END_TEST

START_TEST(test_seg_removed_at_exit)
{
	char name[SHM_NAME_MAX];
	int status, stale;

	test_name(name, sizeof(name), 5);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct shm_seg s = {.sg_fd = -1};
		if (shm_seg_create(&s, name, &test_geom, &stale) != 0)
			_exit(1);
		shm_seg_publish(&s);
		exit(0); /* atexit hook removes it */
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert(!shm_exists(name));
}
END_TEST

static void sig_child(const char *name, int sig, int *status)
{
	int stale;
	int pfd[2];

	ck_assert_int_eq(pipe(pfd), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct shm_seg s = {.sg_fd = -1};
		close(pfd[0]);
		/* a plain program: Check's own SIGTERM handler kills the group */
		signal(sig, SIG_DFL);
		if (shm_seg_create(&s, name, &test_geom, &stale) != 0)
			_exit(1);
		shm_seg_publish(&s);
		if (sig == SIGSEGV) {
			volatile uintptr_t bad = 16;
			*(volatile int *)bad = 1; /* a real fault */
		}
		raise(sig);
		_exit(2);
	}
	close(pfd[1]);
	close(pfd[0]);
	ck_assert_int_eq(waitpid(child, status, 0), child);
}

START_TEST(test_seg_removed_on_signal)
{
	char name[SHM_NAME_MAX];
	int status;

	test_name(name, sizeof(name), 6);
	sig_child(name, SIGTERM, &status);
	/* the default action still happens after the cleanup */
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGTERM);
	ck_assert(!shm_exists(name));

	sig_child(name, SIGABRT, &status);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGABRT);
	ck_assert(!shm_exists(name));
}
END_TEST

START_TEST(test_seg_removed_on_fault)
{
	char name[SHM_NAME_MAX];
	int status;

	test_name(name, sizeof(name), 7);
	sig_child(name, SIGSEGV, &status);
	ck_assert(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
	ck_assert(!shm_exists(name));
}
END_TEST

START_TEST(test_seg_other_user_denied)
{
	char name[SHM_NAME_MAX];
	struct shm_seg seg;
	int status;

	if (geteuid() != 0)
		return; /* needs root to become another user */
	test_name(name, sizeof(name), 8);
	create_ok(&seg, name);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		int fd = shm_open(name, O_RDWR, 0);
		_exit(fd < 0 && errno == EACCES ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	shm_seg_unlink(&seg);
	shm_seg_close(&seg);
}
END_TEST

START_TEST(test_seg_open_rejects_garbage)
{
	char name[SHM_NAME_MAX];
	struct shm_seg seg = {.sg_fd = -1}, peer = {.sg_fd = -1};

	test_name(name, sizeof(name), 9);
	create_ok(&seg, name);
	struct shm_seg_hdr *hdr = seg.sg_base;

	hdr->sh_version = 99;
	ck_assert_int_eq(shm_seg_open(&peer, name), -EPROTO);
	hdr->sh_version = SHM_LAYOUT_VERSION;
	hdr->sh_ring_stride = 1u << 30; /* would point outside */
	ck_assert_int_eq(shm_seg_open(&peer, name), -EPROTO);
	hdr->sh_ring_stride = sizeof(struct shm_ring_ctl) + test_geom.gm_ring_size;
	hdr->sh_max_peers = 1000;
	ck_assert_int_eq(shm_seg_open(&peer, name), -EPROTO);
	hdr->sh_max_peers = test_geom.gm_max_peers;
	hdr->sh_magic = 0x12345678;
	ck_assert_int_eq(shm_seg_open(&peer, name), -EPROTO);
	hdr->sh_magic = SHM_MAGIC;
	ck_assert_int_eq(shm_seg_open(&peer, name), 0);

	/* scribbled after validation: accessors still stay inside */
	hdr->sh_max_peers = 1u << 20;
	ck_assert_ptr_null(shm_seg_ring_ctl(&peer, 1u << 19));
	ck_assert_ptr_null(shm_seg_claim(&peer, 1u << 19));
	shm_seg_close(&peer);

	/* a segment not yet published: "try again" */
	hdr->sh_magic = 0;
	ck_assert_int_eq(shm_seg_open(&peer, name), -EAGAIN);
	shm_seg_unlink(&seg);
	shm_seg_close(&seg);
}
END_TEST

/* 1 if the page at `addr` is mapped in this process (/proc/self/pagemap
 * bit 63, readable without privileges), -1 if pagemap cannot be read. */
static int page_present(const void *addr)
{
	uint64_t ent = 0;
	long page = sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, &ent, sizeof(ent), (off_t)((uintptr_t)addr / (uintptr_t)page) * 8);
	close(fd);
	return n == (ssize_t)sizeof(ent) ? (int)(ent >> 63) : -1;
}

/* 1 if the tmpfs page behind `addr` exists (mincore: in the page cache). */
static int page_allocated(const void *addr)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec = 0;

	ck_assert_int_eq(mincore((void *)((uintptr_t)addr & ~(uintptr_t)(page - 1)), 1, &vec), 0);
	return vec & 1;
}

START_TEST(test_seg_ring_populate)
{
	char name[SHM_NAME_MAX];
	struct shm_seg seg = {.sg_fd = -1}, peer = {.sg_fd = -1};
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	test_name(name, sizeof(name), 11);
	create_ok(&seg, name);
	ck_assert_int_eq(shm_seg_open(&peer, name), 0);
	/* the owner wrote one record's worth into ring 2: populating it from
	 * the other mapping must leave that alone */
	uint8_t *own = shm_seg_ring_data(&seg, 2);
	memset(own, 0xa5, SHM_CACHE_LINE);
	uintptr_t start = (uintptr_t)shm_seg_ring_ctl(&peer, 2) & ~(page - 1);
	uintptr_t end =
	    ((uintptr_t)shm_seg_ring_data(&peer, 2) + test_geom.gm_ring_size + page - 1) &
	    ~(page - 1);
	uint8_t *ring4 = shm_seg_ring_data(&peer, 4);

	/* a budget smaller than the ring: nothing done, nothing taken */
	_Atomic uint64_t budget = end - start - 1;
	ck_assert_int_eq(shm_seg_ring_populate(&peer, 2, &budget), 0);
	ck_assert_uint_eq(atomic_load(&budget), end - start - 1);
	ck_assert(!page_allocated((uint8_t *)end - 1));

	atomic_store(&budget, 1u << 20);
	ck_assert_int_eq(shm_seg_ring_populate(&peer, 2, &budget), (long)(end - start));
	ck_assert_uint_eq(atomic_load(&budget), (1u << 20) - (end - start));
	for (uintptr_t p = start; p < end; p += page) {
		ck_assert_int_eq(page_allocated((void *)p), 1);
		/* mapped in this mapping (or pagemap unreadable: -1) */
		ck_assert_int_ne(page_present((void *)p), 0);
	}
	ck_assert(!page_allocated(ring4 + page)); /* another ring: untouched */
	const uint8_t *mine = shm_seg_ring_data(&peer, 2);
	for (int i = 0; i < SHM_CACHE_LINE; i++)
		ck_assert_uint_eq(mine[i], 0xa5);
	ck_assert_uint_eq(mine[SHM_CACHE_LINE], 0);

	/* a ring the segment does not have */
	ck_assert_int_eq(shm_seg_ring_populate(&peer, test_geom.gm_max_peers, &budget), -EINVAL);
	shm_seg_close(&peer);
	shm_seg_unlink(&seg);
	shm_seg_close(&seg);
}
END_TEST

START_TEST(test_seg_sweep)
{
	char dead[SHM_NAME_MAX], live[SHM_NAME_MAX];
	struct shm_seg seg;
	int status, stale;

	test_name(dead, sizeof(dead), 10);
	test_name(live, sizeof(live), 11);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct shm_seg s = {.sg_fd = -1};
		if (shm_seg_create(&s, dead, &test_geom, &stale) != 0)
			_exit(1);
		shm_seg_publish(&s);
		_exit(0); /* left behind */
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(shm_exists(dead));
	create_ok(&seg, live);
	ck_assert_int_ge(shm_seg_sweep((uint32_t)getuid(), 100000), 1);
	ck_assert(!shm_exists(dead));
	ck_assert(shm_exists(live)); /* ours: alive */
	shm_seg_unlink(&seg);
	shm_seg_close(&seg);
}
END_TEST

static Suite *segment_suite(void)
{
	Suite *s = suite_create("shmem_segment");
	TCase *tc = tcase_create("segment");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_seg_create_layout);
	tcase_add_test(tc, test_seg_in_use);
	tcase_add_test(tc, test_seg_stale_cleanup);
	tcase_add_test(tc, test_seg_closed_is_stale);
	tcase_add_test(tc, test_seg_removed_at_exit);
	tcase_add_test(tc, test_seg_removed_on_signal);
	tcase_add_test(tc, test_seg_removed_on_fault);
	tcase_add_test(tc, test_seg_other_user_denied);
	tcase_add_test(tc, test_seg_open_rejects_garbage);
	tcase_add_test(tc, test_seg_sweep);
	tcase_add_test(tc, test_seg_ring_populate);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(segment_suite());
	int failed;

	/* each test forks anyway; keep CK_FORK so a crash fails one test */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
