/* SPDX-License-Identifier: BSD-3-Clause */
/* init.c - shmem NAL: configuration, ops table, init/stop/destroy, the
 * segment of this NI, dist() and status(). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmem.h"
#include "p3num.h"

#include <p3rt/oversub.h>

/* ---- configuration ----------------------------------------------------- */

struct shm_param {
	const char *pm_env;
	size_t pm_off; /* in struct shm_config */
	uint32_t pm_def, pm_min, pm_max;
	const char *pm_help;
};

#define SHM_CF(f) offsetof(struct shm_config, f)

static const struct shm_param shm_params[] = {
    {"P3_SHMEM_EAGER_MAX", SHM_CF(cf_eager_max), 16384, 0, 1u << 28,
     "largest payload copied through the ring; larger messages use single copy"},
    {"P3_SHMEM_RING_SIZE", SHM_CF(cf_ring_size), 256 * 1024, 16 * 1024, 1u << 30,
     "bytes of each inbound ring (rounded up to a power of two); a record is at most 1/4 of it"},
    {"P3_SHMEM_MAX_PEERS", SHM_CF(cf_max_peers), 64, 1, 65536,
     "inbound rings in this NI's segment: how many processes can send to it"},
    {"P3_SHMEM_SPIN_US", SHM_CF(cf_spin_us), 30, 0, 100000,
     "microseconds progress() polls before blocking on the doorbell"},
    {"P3_SHMEM_COOP_MIN", SHM_CF(cf_coop_min), 256u * 1024u, 0, 0xffffffffu,
     "single-copy messages from this size on are copied by both sides at once (the sender "
     "pushes from the back); 0 = the receiver pulls alone"},
    {"P3_SHMEM_COOP_DENY", SHM_CF(cf_coop_deny), 0, 0, 1,
     "testing: the sender's pushes fail as if process_vm_writev were denied"},
    {"P3_SHMEM_CONNECT_TIMEOUT", SHM_CF(cf_connect_timeout_ms), 10000, 0, 3600000,
     "milliseconds a send waits for a peer's segment to appear before PTL_NI_PEER_DEAD"},
    {"P3_SHMEM_PREFAULT", SHM_CF(cf_prefault), 2u << 20, 0, 0xffffffffu,
     "bytes of rings this NI pre-faults when it first sends into or reads from them (whole "
     "rings, first come first served); 0 = none, each ring page faults on its first lap"},
};

static int shm_config_load(struct p3_lib *lib, struct shm_config *cf)
{
	for (size_t i = 0; i < sizeof(shm_params) / sizeof(shm_params[0]); i++) {
		const struct shm_param *pm = &shm_params[i];
		uint32_t *field = (uint32_t *)((char *)cf + pm->pm_off);
		const char *s = getenv(pm->pm_env);

		*field = pm->pm_def;
		if (!s || !*s)
			continue;
		uint64_t v;
		char msg[256];
		if (p3num_u64(pm->pm_env, s, pm->pm_min, pm->pm_max, P3NUM_BASE0, &v, msg,
		              sizeof(msg))) {
			p3_lib_log(lib, 0, "shmem: %s (%s)", msg, pm->pm_help);
			return -EDOM;
		}
		*field = (uint32_t)v;
	}
	const char *cma = getenv("P3_SHMEM_CMA");
	cf->cf_cma =
	    !(cma && (strcmp(cma, "0") == 0 || strcmp(cma, "no") == 0 || strcmp(cma, "off") == 0));

	cf->cf_ring_size = shm_ring_round_size(cf->cf_ring_size);
	uint32_t max_eager = cf->cf_ring_size / 4 - (uint32_t)SHM_MSG_HDR_LEN;
	max_eager &= ~(uint32_t)(SHM_RING_ALIGN - 1);
	if (cf->cf_eager_max > max_eager) {
		p3_lib_log(lib, getenv("P3_SHMEM_EAGER_MAX") ? 1 : 3,
		           "shmem: P3_SHMEM_EAGER_MAX=%u does not fit a %u-byte ring; using %u",
		           cf->cf_eager_max, cf->cf_ring_size, max_eager);
		cf->cf_eager_max = max_eager;
	}
	return 0;
}

uint64_t shm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void shm_ring_prefault(struct shm_ni *ni, const struct shm_seg *seg, uint32_t idx)
{
	long n = shm_seg_ring_populate(seg, idx, &ni->ni_prefault_left);

	if (n > 0)
		shm_ctr_add(ni, SHM_CTR_PREFAULT_BYTES, (uint64_t)n);
	else if (n < 0)
		p3_lib_log(ni->ni_lib, 2, "shmem: cannot pre-fault ring %u of %s: %s", idx,
		           seg->sg_name[0] ? seg->sg_name : "a peer's segment", strerror((int)-n));
}

/* Whether the progress spin yields the CPU instead of pausing:
 * P3_SHMEM_SPIN_YIELD=0|1 if set, else with a progress thread (it shares the
 * application thread's core when the rank is pinned) or on an
 * oversubscribed node (<p3rt/oversub.h>). */
static int shm_spin_yield(int progress_thread)
{
	const char *s = getenv("P3_SHMEM_SPIN_YIELD");
	if (s && (!strcmp(s, "0") || !strcmp(s, "1")))
		return s[0] == '1';
	struct ptl_oversub o;
	return progress_thread || ptl_oversub_detect(&o);
}

/* progress()'s spin budget on an oversubscribed node (<p3rt/oversub.h>,
 * P3_OVERSUB_WAIT), unless P3_SHMEM_SPIN_US is set: "sleep" sleeps on the
 * doorbell at once; "handoff" too when the application's thread drives
 * progress (its PtlEQPoll/PtlEQWait already yielded for the handoff budget
 * before it came here: a second spin would double the budget), and a
 * progress thread yields for the handoff budget itself; "yield" keeps the
 * configured spin.  Returns the budget in us. */
static uint32_t shm_oversub_spin_us(uint32_t spin_us, int progress_thread)
{
	const char *s = getenv("P3_SHMEM_SPIN_US");
	struct ptl_oversub o;
	if ((s && *s) || !ptl_oversub_detect(&o))
		return spin_us;
	switch (ptl_oversub_wait_policy()) {
	case PTL_OVERSUB_WAIT_SLEEP:
		return 0;
	case PTL_OVERSUB_WAIT_YIELD:
		return spin_us;
	default:
		if (!progress_thread)
			return 0;
		return ptl_oversub_handoff_us() < spin_us ? ptl_oversub_handoff_us() : spin_us;
	}
}

static uint64_t shm_random64(void)
{
	uint64_t v = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			v = 0;
		close(fd);
	}
	return v ^ shm_now_ns() ^ ((uint64_t)getpid() << 32);
}

/* ---- init / stop / destroy ------------------------------------------- */

static int shm_init(struct p3_lib *lib, const struct p3_nal_init_args *args,
                    struct p3_nal_info *info, void **priv)
{
	struct shm_ni *ni;
	int err;

	ni = calloc(1, sizeof(*ni));
	if (!ni)
		return -ENOMEM;
	ni->ni_lib = lib;
	ni->ni_seg.sg_fd = -1;
	err = shm_config_load(lib, &ni->ni_cf);
	if (err)
		goto err_free;

	if (args->rank >= 0 && args->nidmap && args->pidmap && args->rank < args->nranks) {
		ni->ni_id.nid = args->nidmap[args->rank];
		ni->ni_id.pid = args->pidmap[args->rank];
	} else if (args->requested_pid != PTL_PID_ANY) {
		ni->ni_id.nid = 0;
		ni->ni_id.pid = args->requested_pid;
	} else {
		ni->ni_id.nid = 0;
		ni->ni_id.pid = (ptl_pid_t)getpid();
	}
	if (ni->ni_id.pid == PTL_PID_ANY) {
		err = -EINVAL;
		goto err_free;
	}
	ni->ni_uid = (uint32_t)getuid();
	ni->ni_jid = args->jid == PTL_JID_ANY ? 0 : args->jid;
	ni->ni_progress_thread = args->progress_thread;
	ni->ni_spin_yield = shm_spin_yield(args->progress_thread);
	ni->ni_cf.cf_spin_us = shm_oversub_spin_us(ni->ni_cf.cf_spin_us, args->progress_thread);
	ni->ni_ospid = (uint32_t)getpid();
	atomic_store(&ni->ni_prefault_left, ni->ni_cf.cf_prefault);

	ni->ni_cma = 0;
	if (ni->ni_cf.cf_cma) {
		int r = shm_cma_probe_self();
		if (r == 0)
			ni->ni_cma = 1;
		else
			p3_lib_log(lib, 2,
			           "shmem: process_vm_readv unusable (%s): two-copy pipeline",
			           strerror(-r));
	}

	/* what SIGKILLed predecessors left behind (each is 16 MiB of sparse tmpfs) */
	int swept = shm_seg_sweep(ni->ni_uid, 1024);
	if (swept > 0)
		p3_lib_log(lib, 3, "shmem: removed %d stale segment(s) of dead processes", swept);

	/* the segment */
	struct shm_seg_geom geom = {ni->ni_cf.cf_max_peers, ni->ni_cf.cf_ring_size};
	char name[SHM_NAME_MAX];
	int stale = 0;
	shm_seg_name(name, sizeof(name), ni->ni_uid, ni->ni_jid, ni->ni_id.pid);
	err = shm_seg_create(&ni->ni_seg, name, &geom, &stale);
	if (err) {
		if (err == -EADDRINUSE)
			p3_lib_log(lib, 1,
			           "shmem: pid %u of job %u is in use by a live process (%s)",
			           ni->ni_id.pid, ni->ni_jid, name);
		else
			p3_lib_log(lib, 0, "shmem: cannot create /dev/shm%s: %s", name,
			           strerror(-err));
		goto err_free;
	}
	if (stale)
		p3_lib_log(lib, 2, "shmem: removed stale segment /dev/shm%s", name);
	ni->ni_hdr = ni->ni_seg.sg_base;
	ni->ni_hdr->sh_incarnation = shm_random64();
	ni->ni_hdr->sh_uid = ni->ni_uid;
	ni->ni_hdr->sh_jid = ni->ni_jid;
	ni->ni_hdr->sh_nid = ni->ni_id.nid;
	ni->ni_hdr->sh_pid = ni->ni_id.pid;
	ni->ni_hdr->sh_flags = ni->ni_cma ? SHM_SEG_F_CMA : 0;

	ni->ni_rx = calloc(ni->ni_cf.cf_max_peers, sizeof(*ni->ni_rx));
	ni->ni_rx_ctl = calloc(ni->ni_cf.cf_max_peers, sizeof(*ni->ni_rx_ctl));
	if (!ni->ni_rx || !ni->ni_rx_ctl) {
		free(ni->ni_rx);
		free(ni->ni_rx_ctl);
		err = -ENOMEM;
		goto err_seg;
	}
	for (uint32_t i = 0; i < ni->ni_cf.cf_max_peers; i++)
		ni->ni_rx_ctl[i] = shm_seg_ring_ctl(&ni->ni_seg, i);
	pthread_mutex_init(&ni->ni_progress_lock, NULL);
	pthread_mutex_init(&ni->ni_peers_lock, NULL);
	shm_seg_publish(&ni->ni_seg);

	memset(info, 0, sizeof(*info));
	info->id = ni->ni_id;
	info->max_msg_size = 0;
	info->transfer_mode = ni->ni_cma ? "cma single copy" : "two-copy pipeline";
	p3_lib_log(lib, 3, "shmem: segment /dev/shm%s, %u peers x %u-byte rings, eager <= %u, %s",
	           name, ni->ni_cf.cf_max_peers, ni->ni_cf.cf_ring_size, ni->ni_cf.cf_eager_max,
	           info->transfer_mode);
	*priv = ni;
	return 0;

err_seg:
	shm_seg_unlink(&ni->ni_seg);
	shm_seg_close(&ni->ni_seg);
err_free:
	free(ni);
	return err;
}

static void shm_stop(void *priv)
{
	struct shm_ni *ni = priv;
	struct shm_peer *peer;

	if (atomic_exchange(&ni->ni_stopping, 1))
		return;
	shm_wakeup(ni);
	pthread_mutex_lock(&ni->ni_progress_lock);

	/* Give queued sends a bounded chance to go out (receivers that are
	 * alive drain their rings without our help). */
	uint64_t until = shm_now_ns() + 200ull * 1000 * 1000;
	for (;;) {
		int busy = 0;
		for (peer = atomic_load(&ni->ni_peers); peer; peer = peer->pr_next_all) {
			if (!atomic_load(&peer->pr_busy))
				continue;
			shm_peer_drain(ni, peer);
			pthread_mutex_lock(&peer->pr_lock);
			busy |= peer->pr_q_head != NULL && peer->pr_state == SHM_PEER_UP;
			pthread_mutex_unlock(&peer->pr_lock);
		}
		if (!busy || shm_now_ns() > until)
			break;
		struct timespec ts = {0, 50 * 1000};
		nanosleep(&ts, NULL);
	}

	/* Fail whatever is left: queued sends, single-copy sends awaiting
	 * their DONE, pipeline receives in progress. */
	for (peer = atomic_load(&ni->ni_peers); peer; peer = peer->pr_next_all)
		shm_peer_fail(ni, peer, PTL_NI_UNLINKED);
	for (uint32_t i = 0; i < ni->ni_cf.cf_max_peers; i++)
		if (ni->ni_rx[i].rx_pipe.px_active)
			shm_rx_fail_pipe(ni, &ni->ni_rx[i], PTL_NI_UNLINKED);

	shm_seg_unlink(&ni->ni_seg);
	pthread_mutex_unlock(&ni->ni_progress_lock);
}

static void shm_destroy(void *priv)
{
	struct shm_ni *ni = priv;
	struct shm_peer *peer, *next;

	shm_stop(ni);
	for (peer = atomic_load(&ni->ni_peers); peer; peer = next) {
		next = peer->pr_next_all;
		shm_peer_release(peer);
	}
	for (uint32_t i = 0; i < ni->ni_cf.cf_max_peers; i++)
		free(ni->ni_rx[i].rx_pipe.px_iov);
	free(ni->ni_rx);
	free(ni->ni_rx_ctl);
	shm_seg_close(&ni->ni_seg);
	pthread_mutex_destroy(&ni->ni_progress_lock);
	pthread_mutex_destroy(&ni->ni_peers_lock);
	free(ni);
}

/* ---- dist / status ------------------------------------------------------ */

static int shm_dist(void *priv, ptl_process_id_t id, unsigned long *distance)
{
	struct shm_ni *ni = priv;

	if (id.nid == ni->ni_id.nid && id.pid == ni->ni_id.pid)
		*distance = 0;
	else if (id.nid == ni->ni_id.nid)
		*distance = 1;
	else
		return -EHOSTUNREACH; /* another node: not reachable through shmem */
	return 0;
}

static int shm_status(void *priv, ptl_sr_index_t reg, ptl_sr_value_t *value)
{
	struct shm_ni *ni = priv;

	if (reg < PTL_SR_NAL_BASE || reg >= PTL_SR_NAL_BASE + SHM_CTR_COUNT)
		return -ENOENT;
	unsigned int c = reg - PTL_SR_NAL_BASE;
	uint64_t v = atomic_load_explicit(&ni->ni_ctr[c], memory_order_relaxed);
	for (struct shm_peer *p = atomic_load(&ni->ni_peers); p; p = p->pr_next_all)
		v += atomic_load_explicit(&p->pr_ctr[c], memory_order_relaxed);
	*value = v;
	return 0;
}

const struct p3_nal_ops p3_nal_shmem_ops = {
    .size = sizeof(struct p3_nal_ops),
    .name = "shmem",
    .iface = PTL_IFACE_SHMEM,
    .init = shm_init,
    .send = shm_send,
    .recv = shm_recv,
    .progress = shm_progress,
    .wakeup = shm_wakeup,
    .dist = shm_dist,
    .status = shm_status,
    .stop = shm_stop,
    .destroy = shm_destroy,
    .send_now = shm_send_now,
};
