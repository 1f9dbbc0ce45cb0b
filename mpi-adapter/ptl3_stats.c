/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_stats.c - the provider's counters, printed on stderr when an
 * endpoint closes (FI_PTL3_COUNTERS=1; the tests read them by name). */
#include "config.h"

#include <unistd.h>

#include "ptl3.h"

void ptl3_ep_print_counters_locked(struct ptl3_ep *ep)
{
	ptl_sr_value_t drops = 0, droplen = 0, mes = 0, mds = 0;
	if (ep->dom->ni_open) {
		PtlNIStatus(ep->dom->ni, PTL_SR_DROP_COUNT, &drops);
		PtlNIStatus(ep->dom->ni, PTL_SR_DROP_LENGTH, &droplen);
		PtlNIStatus(ep->dom->ni, PTL_SR_MES_ALLOCATED, &mes);
		PtlNIStatus(ep->dom->ni, PTL_SR_MDS_ALLOCATED, &mds);
	}
	const struct ptl3_stats *s = &ep->st;
	fprintf(stderr,
	        "ptl3 counters [pid %d nid %u ptl_pid %u nal %s progress %s]: puts %llu gets %llu "
	        "acks %llu get_ends %llu replies %llu unexpected_eager %llu unexpected_header %llu "
	        "unexpected_matched %llu mdupdate_retries %llu ebuf_reposts %llu bytes_sent %llu "
	        "bytes_recv %llu truncated %llu cancelled %llu staged %llu releases_sent %llu "
	        "releases_recv %llu slots_released %llu releases_bad %llu stale_data %llu "
	        "atomics_applied %llu atomics_refused %llu atomics_dropped %llu "
	        "portals_drop_count %llu "
	        "portals_drop_length %llu mes_allocated %llu mds_allocated %llu "
	        "soft_posted %llu soft_matched %llu soft_flushed %llu\n",
	        (int)getpid(), ep->dom->id.nid, ep->dom->id.pid, ep->dom->nal_name,
	        ep->dom->progress_name, (unsigned long long)s->puts, (unsigned long long)s->gets,
	        (unsigned long long)s->acks, (unsigned long long)s->get_ends,
	        (unsigned long long)s->replies, (unsigned long long)s->ux_eager,
	        (unsigned long long)s->ux_header, (unsigned long long)s->ux_matched,
	        (unsigned long long)s->mdupdate_retries, (unsigned long long)s->ebuf_reposts,
	        (unsigned long long)s->bytes_sent, (unsigned long long)s->bytes_recv,
	        (unsigned long long)s->truncated, (unsigned long long)s->cancelled,
	        (unsigned long long)s->staged, (unsigned long long)s->releases_sent,
	        (unsigned long long)s->releases_recv, (unsigned long long)s->slots_released,
	        (unsigned long long)s->releases_bad, (unsigned long long)s->stale_data,
	        (unsigned long long)ep->dom->atomics_applied,
	        (unsigned long long)ep->dom->atomics_refused,
	        (unsigned long long)ep->dom->atomics_dropped, (unsigned long long)drops,
	        (unsigned long long)droplen, (unsigned long long)mes, (unsigned long long)mds,
	        (unsigned long long)s->soft_posted, (unsigned long long)s->soft_matched,
	        (unsigned long long)s->soft_flushed);
	ptl3_wait_print_locked(ep->dom);
	if (drops)
		fprintf(stderr, "ptl3: WARNING: the Portals NI dropped %llu incoming requests\n",
		        (unsigned long long)drops);
}
