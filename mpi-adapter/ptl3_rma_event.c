/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_rma_event.c - FI_RMA_EVENT: the target of fi_write/fi_read counts
 * them.  Granted only when the hints ask for it (MPICH does not), so the
 * default path keeps its regions event-free.  In a domain opened with
 * FI_RMA_EVENT every region exposed on PT_RMA posts its END events (PUT_END
 * for a remote write, GET_END for a remote read; START disabled) to one
 * Portals EQ of the domain, allocated with the first such region; the
 * endpoint's progress drains it into the counters bound with
 * FI_REMOTE_WRITE / FI_REMOTE_READ (errors for failed transfers). */
#include "config.h"

#include <stdlib.h>

#include "ptl3.h"

ptl_handle_eq_t ptl3_rma_event_eq_locked(struct ptl3_domain *dom)
{
	if (!dom->rma_event)
		return PTL_EQ_NONE;
	if (!dom->rma_eq_valid) {
		int rc = PtlEQAlloc(dom->ni, (ptl_size_t)ptl3_params.eq_size, PTL_EQ_HANDLER_NONE,
		                    &dom->rma_eq);
		if (rc != PTL_OK) {
			PTL3_WARN(FI_LOG_MR, "PtlEQAlloc (FI_RMA_EVENT): %s\n", PtlErrorStr(rc));
			return PTL_EQ_NONE;
		}
		dom->rma_eq_valid = 1;
	}
	return dom->rma_eq;
}

void ptl3_rma_event_drain_locked(struct ptl3_ep *ep)
{
	struct ptl3_domain *dom = ep->dom;
	if (!dom->rma_eq_valid)
		return;
	ptl_event_t ev;
	for (;;) {
		int rc = PtlEQGetNoProgress(dom->rma_eq, &ev);
		if (rc == PTL_EQ_EMPTY)
			return;
		if (rc == PTL_EQ_DROPPED) {
			fprintf(stderr, "ptl3: FATAL: FI_RMA_EVENT event queue overflowed "
			                "(raise FI_PTL3_EQ_SIZE)\n");
			abort();
		}
		if (rc != PTL_OK)
			return;
		int fail = ev.ni_fail_type != PTL_NI_OK;
		if (ev.type == PTL_EVENT_PUT_END)
			ptl3_cntr_inc_locked(ep->rwrite_cntr, fail);
		else if (ev.type == PTL_EVENT_GET_END)
			ptl3_cntr_inc_locked(ep->rread_cntr, fail);
	}
}
