/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_intr.c - PTL_PROGRESS=interrupt over the emulated Myrinet NIC: the
 * NIC does reliability and flow control and raises its interrupt line (an
 * eventfd) once per arriving header (MYRI_CMD_INTR_CTL, MYRI_INTR_PER_HDR);
 * the host runs the LIB side in an "interrupt handler" - LIB's progress
 * thread, bound to the core the application ran on at PtlNIInit, so that
 * its CPU time is taken from the application as a kernel handler's is.  The
 * handler never spins: it sleeps on the interrupt line, matches each header
 * (p3_lib_parse), tells the NIC where the data goes (DELIVER) and goes back
 * to sleep; the NIC moves the bytes by DMA into the registered region.
 * Application threads never process events here (PtlProgress is a no-op).
 *
 * Counters (segment host_counters, PtlNIStatus(PTL_SR_NAL_BASE +
 * MYRI_NCOUNTERS + i)): handler passes, headers handled, wall time in the
 * handler; one more register, + MYRI_NHOST_COUNTERS, is the handler
 * thread's CPU time (ns), read from its CPU-time clock.
 *
 * Parameters: P3_MYRI_INTR_CPU=N puts the handler on CPU N instead;
 * P3_MYRI_INTR_SLICE_US (default 100, 0 = the kernel's) is the handler's
 * scheduling slice (sched_slice.c): a kernel handler runs when its
 * interrupt arrives, not when the computing application's slice ends.
 */
#include "myri_host.h"
#include "cpu_share.h"
#include "p3num.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The application's core: its only CPU if it is pinned to one, else the
 * one it runs on now; P3_MYRI_INTR_CPU overrides. */
static int app_cpu(struct myri_host *h)
{
	const char *s = getenv("P3_MYRI_INTR_CPU");
	if (s && *s) {
		char msg[160];
		uint64_t c;
		if (!p3num_u64("P3_MYRI_INTR_CPU", s, 0, CPU_SETSIZE - 1, 0, &c, msg, sizeof(msg)))
			return (int)c;
		p3_lib_log(h->lib, 1, "myrinet: %s; ignored", msg);
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				return c;
	return sched_getcpu();
}

int myri_intr_init(struct myri_host *h, const struct p3_nal_init_args *args,
                   struct p3_nal_info *info)
{
	if (args->progress_thread != P3_PROGRESS_INTERRUPT)
		return 0;
	struct myri_cmd cmd;
	memset(&cmd, 0, sizeof(cmd));
	cmd.op = MYRI_CMD_INTR_CTL;
	cmd.offset = MYRI_INTR_PER_HDR;
	int rc = myri_io_post_cmd(h, &cmd);
	if (rc) {
		p3_lib_log(h->lib, 0, "myrinet: cannot enable per-header interrupts: %s",
		           strerror(-rc));
		return rc;
	}
	h->intr.on = 1;
	h->intr.cpu = app_cpu(h);
	info->interrupt_handler = 1;
	info->transfer_mode = "emulated Myrinet NIC (mcpd): an interrupt per header, LIB in a "
	                      "handler thread on the application's core";
	return 0;
}

#define MYRI_INTR_SLICE_US 100

/* The handler's scheduling slice (above); said only when asked for. */
static void handler_slice(struct myri_host *h)
{
	int given;
	char msg[160];
	unsigned us =
	    myri_slice_env("P3_MYRI_INTR_SLICE_US", MYRI_INTR_SLICE_US, &given, msg, sizeof(msg));
	if (given < 0)
		p3_lib_log(h->lib, 1, "myrinet: %s; using %u", msg, us);
	int r = myri_sched_set_slice(us);
	if (r < 0)
		p3_lib_log(h->lib, given ? 1 : 3,
		           "myrinet: P3_MYRI_INTR_SLICE_US=%u: the kernel kept its own slice "
		           "for the interrupt handler (%s)",
		           us,
		           r == -ENOSYS ? "custom slices need Linux 6.12 or later" : strerror(-r));
}

/* First pass of the handler: onto the application's core, with a short
 * scheduling slice. */
static void handler_bind(struct myri_host *h)
{
	h->intr.bound = 1;
	h->intr.have_clock = pthread_getcpuclockid(pthread_self(), &h->intr.clock) == 0;
	handler_slice(h);
	if (h->intr.cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(h->intr.cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		p3_lib_log(h->lib, 1, "myrinet: cannot bind the interrupt handler to CPU %d: %s",
		           h->intr.cpu, strerror(errno));
	else
		p3_lib_log(h->lib, 3, "myrinet: interrupt handler on CPU %d", h->intr.cpu);
}

static void host_count(struct myri_host *h, enum myri_host_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&h->seg->host_counters[c], n, memory_order_relaxed);
}

int myri_intr_progress(struct myri_host *h, int timeout_ms)
{
	if (!p3_lib_in_progress_thread(h->lib)) {
		/* the application's own calls: events belong to the handler */
		if (timeout_ms == 0)
			myri_io_check_nic(h);
		return 0;
	}
	if (!h->intr.bound)
		handler_bind(h);
	myri_io_wait(h, timeout_ms); /* asleep until the NIC interrupts */
	uint64_t t0 = mono_ns();
	int n = myri_io_drain(h);
	uint64_t t1 = mono_ns();
	host_count(h, MYRI_H_intr_handled, 1);
	host_count(h, MYRI_H_intr_hdrs, h->rx_hdrs - h->intr.hdrs_seen);
	host_count(h, MYRI_H_handler_ns, t1 - t0);
	h->intr.hdrs_seen = h->rx_hdrs;
	return n;
}

/* The driver's registers after the NIC's: MYRI_HOST_COUNTERS, then the
 * handler thread's CPU time. */
int myri_intr_status(struct myri_host *h, unsigned idx, ptl_sr_value_t *value)
{
	if (idx < MYRI_NHOST_COUNTERS) {
		*value = (ptl_sr_value_t)atomic_load(&h->seg->host_counters[idx]);
		return 0;
	}
	if (idx != MYRI_NHOST_COUNTERS)
		return -ENOENT;
	struct timespec ts = {0, 0};
	if (h->intr.on && h->intr.have_clock && clock_gettime(h->intr.clock, &ts) != 0)
		ts = (struct timespec){0, 0};
	*value = (ptl_sr_value_t)ts.tv_sec * 1000000000 + (ptl_sr_value_t)ts.tv_nsec;
	return 0;
}
