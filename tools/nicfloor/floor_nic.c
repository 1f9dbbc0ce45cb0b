/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * floor_nic.c - p3-nicfloor's NIC: mcpd's event loop (nal/myrinet/mcpd.c)
 * with no Portals work.  Every turn one epoll_wait(0) says whether the
 * doorbell rang or the wire has a frame (but for the turn right after a
 * blocking wait, which said it already); a token the host posted goes out
 * as a frame, a frame's token goes to the host (interrupt only when the
 * host sleeps).  After the last work the NIC spins as mcpd does -- 50 us,
 * yielding, or not at all when every CPU it may use is the only CPU of its
 * host (cpu_share.c) -- then sets its sleep word, looks at the command
 * counter once more and blocks in epoll_wait.
 */
#include "floor.h"

#include "cpu_share.h"
#include "p3num.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

struct nic {
	struct floor_shared *sh;
	struct floor_node *node;
	struct floor_wire wire;
	int epfd;
	uint64_t seen; /* commands taken */
	int wire_ready;
};

/* The NIC's namespace host (ether); 0 or -1 with a message. */
static int enter_netns(const char *name)
{
	char path[256];
	if (!name || !*name)
		return 0;
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
		fprintf(stderr, "p3-nicfloor: network namespace %s: %s\n", name, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* The NIC's idle spin as mcpd decides it: --nic-spin-us, else
 * P3_MCPD_SPIN_US as mcpd takes it (set and not empty), else mcpd's own rule
 * (mcpd.c spin_update): none when every CPU the NIC may use is the only CPU
 * of its host, else FLOOR_NIC_SPIN_US. */
static unsigned spin_budget_us(const struct floor_opts *o, pid_t host)
{
	cpu_set_t mine, h, taken;
	const char *e = getenv("P3_MCPD_SPIN_US");
	if (o->nic_spin_us >= 0)
		return (unsigned)o->nic_spin_us;
	if (e && *e)
		return (unsigned)p3num_arg_u64("p3-nicfloor", "P3_MCPD_SPIN_US", e, 0, 100000,
		                               P3NUM_BASE0);
	CPU_ZERO(&taken);
	if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
		return FLOOR_NIC_SPIN_US;
	if (sched_getaffinity(host, sizeof(h), &h) == 0 && CPU_COUNT(&h) == 1)
		CPU_OR(&taken, &taken, &h);
	return myri_cpus_covered(&mine, &taken) ? 0 : FLOOR_NIC_SPIN_US;
}

static int take_ready(struct nic *n, int timeout_ms)
{
	struct epoll_event evs[4];
	int k = epoll_wait(n->epfd, evs, 4, timeout_ms);
	for (int i = 0; i < k; i++) {
		if (evs[i].data.fd == n->node->doorbell_fd) {
			n->node->doorbells++;
		} else {
			n->wire_ready = 1;
		}
	}
	return k > 0;
}

/* Commands out, the wire's frame in; how many tokens moved, -1 on error. */
static int pass(struct nic *n)
{
	int work = 0;
	struct floor_node *d = n->node;
	while (n->seen != atomic_load(&d->cmd_tail)) {
		if (floor_wire_send(&n->wire, n->seen) != 0)
			return -1;
		n->seen++;
		work++;
	}
	if (n->wire_ready) {
		uint64_t token;
		n->wire_ready = 0;
		int r = floor_wire_recv(&n->wire, &token);
		if (r < 0)
			return -1;
		if (r > 0) {
			d->frames++;
			atomic_store(&d->evt_token, token);
			atomic_fetch_add(&d->evt_tail, 1); /* seq_cst, then the sleep word */
			uint64_t one = 1;
			if (atomic_load(&d->host_waiting) &&
			    write(d->intr_fd, &one, sizeof(one)) == sizeof(one))
				d->interrupts++;
			work++;
		}
	}
	return work;
}

static void run(struct nic *n, unsigned spin_us)
{
	uint64_t last = floor_now_ns();
	int fresh = 0; /* the blocking wait just took what was ready (mcpd.c run) */
	while (!atomic_load(&n->sh->stop)) {
		int ready = fresh ? 1 : take_ready(n, 0);
		fresh = 0;
		int w = pass(n);
		if (w < 0) {
			atomic_store(&n->sh->failed, 1);
			return;
		}
		if (w || ready)
			last = floor_now_ns();
		if (spin_us && floor_now_ns() - last < (uint64_t)spin_us * 1000u) {
			if (!w && !ready)
				sched_yield(); /* a host or the other NIC may share this core */
			continue;
		}
		atomic_store(&n->node->nic_sleeping, 1);
		if (n->seen == atomic_load(&n->node->cmd_tail)) {
			fresh = take_ready(n, 200); /* bounded: the stop flag is looked at */
			n->node->wakeups++;
		}
		atomic_store(&n->node->nic_sleeping, 0);
		last = floor_now_ns();
	}
}

static int nic_setup(struct nic *n, int k, const struct floor_opts *o)
{
	struct floor_node *d = n->node;
	if (o->wire == FLOOR_WIRE_ETHER && enter_netns(o->netns[k]) != 0)
		return -1;
	if (floor_wire_open(&n->wire, o) != 0)
		return -1;
	memcpy(d->addr, n->wire.self, sizeof(d->addr));
	atomic_store(&d->addr_ready, 1);
	n->epfd = epoll_create1(EPOLL_CLOEXEC);
	/* the doorbell edge-triggered, nothing read back: as mcpd (ep_watch) */
	struct epoll_event e1 = {.events = EPOLLIN | EPOLLET, .data.fd = d->doorbell_fd};
	struct epoll_event e2 = {.events = EPOLLIN, .data.fd = n->wire.fd};
	if (n->epfd < 0 || epoll_ctl(n->epfd, EPOLL_CTL_ADD, d->doorbell_fd, &e1) != 0 ||
	    epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->wire.fd, &e2) != 0) {
		perror("p3-nicfloor: epoll");
		return -1;
	}
	/* the peer NIC's address and the host's pid (bounded: 10 s) */
	struct floor_node *peer = &n->sh->node[1 - k];
	for (int i = 0; i < 10000; i++) {
		if (atomic_load(&n->sh->stop))
			return -1;
		if (atomic_load(&peer->addr_ready) && atomic_load(&d->app_pid))
			return 0;
		usleep(1000);
	}
	fprintf(stderr, "p3-nicfloor: NIC %d: the peer NIC or the host did not come up\n", k);
	return -1;
}

void floor_nic_main(struct floor_shared *sh, int k, const struct floor_opts *o)
{
	struct nic n = {.sh = sh, .node = &sh->node[k]};
	floor_pin(o->nic_cpu);
	atomic_store(&n.node->nic_pid, (int32_t)getpid());
	if (nic_setup(&n, k, o) != 0) {
		atomic_store(&sh->failed, 1);
		atomic_store(&sh->stop, 1);
		_exit(1);
	}
	floor_wire_peer(&n.wire, sh->node[1 - k].addr);
	run(&n, spin_budget_us(o, (pid_t)atomic_load(&n.node->app_pid)));
	_exit(atomic_load(&sh->failed) ? 1 : 0);
}
