/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * floor_app.c - p3-nicfloor's application processes.  Posting is the
 * offload host's command write (host_offload_link.c off_cmd_push): publish
 * the count, ring the doorbell only when the NIC sleeps, taking its sleep
 * word so that later posts do not ring again.  Waiting is the offload EQ
 * wait (portals/api-eq.c p3_poll_wait with the myrinet wait_policy): spin
 * as cpu_share.c says -- 20 us when the NIC runs on other cores, 50 us
 * yielding when it may share ours, one look only when it runs on our only
 * core -- then set the waiting word, look again and sleep on the interrupt
 * eventfd.
 */
#include "floor.h"

#include "cpu_share.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

struct app {
	struct floor_shared *sh;
	struct floor_node *node;
	enum myri_spin spin;
	unsigned spin_us;
};

static void post(struct app *a)
{
	struct floor_node *d = a->node;
	atomic_fetch_add(&d->cmd_tail, 1); /* seq_cst, then the sleep word */
	if (atomic_load(&d->nic_sleeping) && atomic_exchange(&d->nic_sleeping, 0)) {
		uint64_t one = 1;
		if (write(d->doorbell_fd, &one, sizeof(one)) != sizeof(one))
			atomic_store(&a->sh->failed, 1);
	}
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static int arrived(const struct app *a, uint64_t want)
{
	return atomic_load(&a->node->evt_tail) >= want;
}

/* Until the NIC delivered `want` tokens; 0, or -1 when the run stops. */
static int wait_token(struct app *a, uint64_t want)
{
	uint64_t start = floor_now_ns(), now = start;
	unsigned spins = 0;
	do {
		if (arrived(a, want))
			return 0;
		if (a->spin == MYRI_SPIN_YIELD)
			sched_yield();
		else
			cpu_relax();
		if ((++spins & 15u) == 0)
			now = floor_now_ns();
	} while (a->spin != MYRI_SPIN_NONE && now - start < (uint64_t)a->spin_us * 1000u);
	atomic_store(&a->node->host_waiting, 1);
	while (!arrived(a, want) && !atomic_load(&a->sh->stop)) {
		struct pollfd p = {.fd = a->node->intr_fd, .events = POLLIN};
		uint64_t v;
		if (poll(&p, 1, 10) > 0 && read(a->node->intr_fd, &v, sizeof(v)) != sizeof(v))
			continue; /* nothing to take after all: look again */
	}
	atomic_store(&a->node->host_waiting, 0);
	return arrived(a, want) ? 0 : -1;
}

static int check_token(struct app *a, uint64_t expect)
{
	uint64_t t = atomic_load(&a->node->evt_token);
	if (t == expect)
		return 0;
	fprintf(stderr, "p3-nicfloor: token %llu arrived, %llu expected\n", (unsigned long long)t,
	        (unsigned long long)expect);
	return -1;
}

static int nic_ready(struct app *a)
{
	for (int i = 0; i < 10000 && !atomic_load(&a->sh->stop); i++) {
		pid_t nic = (pid_t)atomic_load(&a->node->nic_pid);
		if (nic && atomic_load(&a->sh->node[0].addr_ready) &&
		    atomic_load(&a->sh->node[1].addr_ready)) {
			/* the offload host's policy, its P3_MYRI_SPIN and
			 * P3_MYRI_SPIN_US included (host_offload_link.c) */
			a->spin = myri_spin_policy_env(nic);
			a->spin_us = a->spin == MYRI_SPIN ? myri_spin_budget_env(FLOOR_APP_SPIN_US)
			                                  : FLOOR_YIELD_SPIN_US;
			return 0;
		}
		usleep(1000);
	}
	return -1;
}

int floor_app_main(struct floor_shared *sh, int k, const struct floor_opts *o)
{
	struct app a = {.sh = sh, .node = &sh->node[k]};
	floor_pin(o->app_cpu[k]);
	atomic_store(&a.node->app_pid, (int32_t)getpid());
	if (nic_ready(&a) != 0)
		return 1;
	/* the NICs look at our affinity once they see our pid: let them */
	usleep(20000);
	long n = o->warmup + o->iters;
	for (long i = 0; i < n; i++) {
		uint64_t t0 = floor_now_ns();
		if (k == 0)
			post(&a);
		if (wait_token(&a, (uint64_t)i + 1) != 0 || check_token(&a, (uint64_t)i) != 0)
			return 1;
		if (k == 1)
			post(&a);
		else if (i >= o->warmup)
			sh->rtt_us[i - o->warmup] = (double)(floor_now_ns() - t0) / 1000.0;
	}
	return atomic_load(&sh->failed) ? 1 : 0;
}
