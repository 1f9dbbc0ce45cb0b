/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * farewell.c - rmpp NALs: a process that exits with an NI open still sends
 * what its peers wait for.
 *
 * PtlNIFini (rnal_stop) destroys the rmpp endpoint, which sends the held
 * messages (Portals ACKs waiting to ride on the next message, rmpp
 * LAZY_US) and a CLOSE to every peer.  A process that calls exit(3)
 * without closing its NI (a test that ends at once after receiving, an
 * MPI program that skips MPI_Finalize) would otherwise take its held ACKs
 * with it, and its peers would learn only by keepalive, after the
 * peer-death timeout, that the ACKs are lost.  So every live instance is
 * listed here and an atexit hook says farewell on each (rmpp_ep_farewell:
 * held messages, then CLOSE, nothing freed: other threads may still run).
 * Only the process that opened an endpoint says farewell on it: a forked
 * child that exits leaves its parent's connections alone.
 */
#include "rmpp_nal.h"
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rnal *live;
static pthread_once_t hook_once = PTHREAD_ONCE_INIT;

static void farewell_all(void)
{
	pthread_mutex_lock(&live_lock);
	for (struct rnal *rn = live; rn; rn = rn->rn_live_next)
		if (rn->rn_owner == getpid() && rn->rn_ep)
			rmpp_ep_farewell(rn->rn_ep);
	pthread_mutex_unlock(&live_lock);
}

static void hook_register(void)
{
	atexit(farewell_all);
}

void rnal_live_add(struct rnal *rn)
{
	pthread_once(&hook_once, hook_register);
	rn->rn_owner = getpid();
	pthread_mutex_lock(&live_lock);
	rn->rn_live_next = live;
	live = rn;
	pthread_mutex_unlock(&live_lock);
}

void rnal_live_remove(struct rnal *rn)
{
	pthread_mutex_lock(&live_lock);
	for (struct rnal **pp = &live; *pp; pp = &(*pp)->rn_live_next)
		if (*pp == rn) {
			*pp = rn->rn_live_next;
			break;
		}
	pthread_mutex_unlock(&live_lock);
}
