/* SPDX-License-Identifier: BSD-3-Clause */
/* fork.c - fork() and system() in a Portals process.
 *
 * The parent's NIs keep working across a fork; the child gets none of them.
 * Its copy of the parent's NI table is emptied at once (pthread_atfork):
 * the parent's LIB state (portal table, messages, EQ rings, the NAL's
 * private state) is neither used nor freed in the child — its locks may
 * have been held by a thread that does not exist there, its progress thread
 * is gone, and its descriptors name the parent's endpoints — so it is only
 * kept reachable on a list (no leak report under ASan: the progress
 * threads are paused for the fork, see p3_fork_each_ni), and PtlInit in
 * the child starts Portals afresh: PtlSetRank/PtlSetNIDMap/PtlSetPIDMap
 * and PtlNIInit with another pid then open a new NI of its own.
 *
 * The NALs add what is theirs: shared-memory segments and packet rings are
 * mapped MADV_DONTFORK (the child never sees the parent's rings), sockets
 * and eventfds are close-on-exec (a command run by system() holds none),
 * and the exit-time segment cleanup checks the owner's OS pid. */
#include "api.h"

#include <stdlib.h>

#include "runtime.h"

/* The parent's NIs as the child inherited them: never touched again. */
struct p3_fork_orphan {
	struct p3_fork_orphan *fo_next;
	struct p3_lib *fo_lib;
	struct p3_eq_ring **fo_eqs;
};
static struct p3_fork_orphan *p3_fork_orphans;

/* Each NI's progress thread pauses where it holds nothing on its stack
 * alone (p3_progress_thread_hold): else a message it was completing at the
 * fork -- an rmpp send descriptor between the SEND_END upcall and its free,
 * say -- would in the child be referenced only from the stack of a thread
 * that does not exist there, and LeakSanitizer reports it lost at the
 * child's exit (tests/fork: 448 bytes of an rmpp txmsg over ether/thread). */
static void p3_fork_each_ni(int hold)
{
	for (unsigned int i = 0; i < P3_MAX_NIS; i++) {
		struct p3_api_ni *ni = &p3_api_nis[i];

		if (!atomic_load(&ni->ni_handle) || !ni->ni_if)
			continue;
		if (hold && ni->ni_if->fork_hold)
			ni->ni_if->fork_hold(ni->ni_lib);
		if (!hold && ni->ni_if->fork_release)
			ni->ni_if->fork_release(ni->ni_lib);
	}
}

static void p3_fork_prepare(void)
{
	pthread_mutex_lock(&p3_api_lock);
	p3_fork_each_ni(1);
	p3_runtime_fork_lock();
}

static void p3_fork_parent(void)
{
	p3_runtime_fork_unlock();
	p3_fork_each_ni(0);
	pthread_mutex_unlock(&p3_api_lock);
}

static void p3_fork_forget_ni(struct p3_api_ni *ni)
{
	struct p3_fork_orphan *o = malloc(sizeof(*o));

	if (o) { /* without memory the state is leaked, never freed */
		o->fo_lib = ni->ni_lib;
		o->fo_eqs = ni->ni_eqs;
		o->fo_next = p3_fork_orphans;
		p3_fork_orphans = o;
	}
	atomic_store(&ni->ni_handle, 0);
	atomic_store(&ni->ni_prog_busy, 0);
	ni->ni_lib = NULL;
	ni->ni_nal = NULL;
	ni->ni_eqs = NULL;
	ni->ni_neqs = 0;
	ni->ni_refs = 0;
	ni->ni_thread = 0;
	ni->ni_spin_yield = 0;
	/* ni_gen is kept: the next NI in this slot gets a new generation, so
	 * the parent's handles do not validate on it */
}

static void p3_fork_child(void)
{
	for (unsigned int i = 0; i < P3_MAX_NIS; i++)
		if (atomic_load(&p3_api_nis[i].ni_handle))
			p3_fork_forget_ni(&p3_api_nis[i]);
	atomic_store(&p3_api_refs, 0);
	p3_runtime_fork_unlock();
	pthread_mutex_unlock(&p3_api_lock);
}

static pthread_once_t p3_fork_once = PTHREAD_ONCE_INIT;

static void p3_fork_register(void)
{
	pthread_atfork(p3_fork_prepare, p3_fork_parent, p3_fork_child);
}

void p3_fork_init(void)
{
	pthread_once(&p3_fork_once, p3_fork_register);
}
