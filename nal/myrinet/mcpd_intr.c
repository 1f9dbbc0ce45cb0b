/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcpd_intr.c - the NIC's interrupt line.  By default the NIC raises it
 * only when the host said it is about to block (host_sleeping), so that a
 * polling host pays no system call.  PTL_PROGRESS=interrupt asks, with
 * MYRI_CMD_INTR_CTL, for one interrupt per arriving header as the paper's
 * P3 MCP raised for kernel processing: the host's handler thread then
 * matches the header and tells the NIC where the data goes (DELIVER), and
 * the NIC moves it.  Also: the host driver's handler counters in mcpd
 * --counters.
 */
#include "mcpd.h"

#include <unistd.h>

int mcpd_intr_ctl(struct mcpd_ep *ep, const struct myri_cmd *cmd)
{
	/* mcpd_cmd_check has bounded offset to the known modes */
	ep->intr_per_hdr = cmd->offset == MYRI_INTR_PER_HDR;
	return 0;
}

static void intr_write(struct mcpd_ep *ep)
{
	uint64_t one = 1;
	if (write(ep->intr_fd, &one, sizeof(one)) == sizeof(one))
		mcpd_count(ep, MYRI_C_interrupts, 1);
}

/* Events were put in the ring, hdrs of them RX_HDR. */
void mcpd_intr_raise(struct mcpd_ep *ep, uint64_t hdrs)
{
	if (ep->intr_per_hdr && hdrs) {
		/* one interrupt per header: the handler's eventfd read sees
		 * how many arrived since its last pass */
		for (uint64_t i = 0; i < hdrs; i++)
			intr_write(ep);
		return;
	}
	if (atomic_load(&ep->seg->host_sleeping))
		intr_write(ep);
}

void mcpd_intr_print(const struct mcpd *nic, FILE *out)
{
	static const char *const names[] = {
#define MYRI_HOST_COUNTER_NAME(n) "host_" #n,
	    MYRI_HOST_COUNTERS(MYRI_HOST_COUNTER_NAME)
#undef MYRI_HOST_COUNTER_NAME
	};
	for (int i = 0; i < MYRI_NHOST_COUNTERS; i++) {
		uint64_t sum = nic->stats.host_counters[i];
		for (const struct mcpd_ep *ep = nic->eps; ep; ep = ep->next)
			sum += atomic_load(&ep->seg->host_counters[i]);
		fprintf(out, "%s %llu\n", names[i], (unsigned long long)sum);
	}
}
