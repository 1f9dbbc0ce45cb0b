/* SPDX-License-Identifier: BSD-3-Clause */
/* progress.c - rmpp NALs: progress (spin, then block on the socket/ring),
 * wakeup, peer failures.  Both progress modes work: in "app" mode LIB calls
 * progress() from Portals calls, in "thread" mode a LIB thread blocks in it
 * with timeout -1 and is woken by wakeup() or by sends from other threads. */
#include "rmpp_nal.h"

int rnal_progress(void *priv, int timeout_ms)
{
	struct rnal *rn = priv;
	if (!rn->rn_ep)
		return 0;
	int n = rmpp_progress(rn->rn_ep, timeout_ms);
	return n < 0 ? 0 : n;
}

void rnal_wakeup(void *priv)
{
	struct rnal *rn = priv;
	if (rn->rn_ep)
		rmpp_wakeup(rn->rn_ep);
}

void rnal_peer_event(void *arg, const struct rmpp_addr *peer, enum rmpp_peer_event ev,
		     uint32_t epoch)
{
	struct rnal *rn = arg;
	char buf[64];
	/* An orderly close (the peer destroyed its endpoint, e.g. at the end of
	 * every MPI job) is not news: debug level (PTL_DEBUG), so it does not
	 * pollute the output of programs whose stderr is checked. */
	int level = ev == RMPP_PEER_DEAD ? 1 : ev == RMPP_PEER_CLOSED ? 3 : 2;
	p3_lib_log(rn->rn_lib, level, "rmpp: peer %s %s (epoch %08x)",
		   rmpp_addr_str(peer, buf, sizeof(buf)), rmpp_peer_event_name(ev), epoch);
	/* puts whose ACK this peer owed will not get it (ackwait.c) */
	rnal_ackwait_peer_gone(rn, peer,
			       ev == RMPP_PEER_DEAD ? PTL_NI_PEER_DEAD : PTL_NI_PEER_RESTARTED);
	if (ev == RMPP_PEER_DEAD)
		rmpp_peer_forget(rn->rn_ep, peer); /* a later send starts a new handshake */
}
