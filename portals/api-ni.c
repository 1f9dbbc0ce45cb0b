/* SPDX-License-Identifier: BSD-3-Clause */
/* api-ni.c - PtlInit/PtlFini and the network interface calls (API side). */
#include "api.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

#include <p3rt/oversub.h>

struct p3_api_ni p3_api_nis[P3_MAX_NIS];
pthread_mutex_t p3_api_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic int p3_api_refs;

/* ---- for the runtime (runtime.h) ---- */
int p3_api_initialized(void)
{
	return p3_api_up();
}

int p3_api_ni_check(ptl_handle_ni_t ni)
{
	return p3_api_ni_get(ni) ? PTL_OK : PTL_NI_INVALID;
}

int PtlInit(int *max_interfaces)
{
	if (!max_interfaces)
		return PTL_SEGV;
	p3_fork_init();
	pthread_mutex_lock(&p3_api_lock);
	atomic_fetch_add(&p3_api_refs, 1);
	pthread_mutex_unlock(&p3_api_lock);
	*max_interfaces = (int)P3_MAX_NIS;
	return PTL_OK;
}

void p3_api_ni_close(struct p3_api_ni *ni)
{
	/* Handles go invalid first, then the LIB side is torn down. */
	atomic_store_explicit(&ni->ni_handle, 0, memory_order_release);
	ni->ni_if->close(ni->ni_lib);
	p3_api_eq_table_free(ni);
	ni->ni_lib = NULL;
	ni->ni_nal = NULL;
	ni->ni_pass = NULL;
	ni->ni_pass_priv = NULL;
	ni->ni_ev_count = NULL;
	ni->ni_refs = 0;
}

void PtlFini(void)
{
	pthread_mutex_lock(&p3_api_lock);
	if (atomic_load(&p3_api_refs) > 0 && atomic_fetch_sub(&p3_api_refs, 1) == 1) {
		for (unsigned int i = 0; i < P3_MAX_NIS; i++)
			if (atomic_load(&p3_api_nis[i].ni_handle))
				p3_api_ni_close(&p3_api_nis[i]);
		p3_runtime_reset();
	}
	pthread_mutex_unlock(&p3_api_lock);
}

/* Names of the built NALs, for error messages. */
static void p3_nal_names(char *buf, size_t len)
{
	static const char *const all[] = {"lo", "shmem", "udp", "ether", "myrinet"};
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (p3_nal_find_by_name(all[i]) && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "", all[i]);
}

static const struct p3_nal_ops *p3_api_resolve_nal(ptl_interface_t iface)
{
	const struct p3_nal_ops *ops;
	char names[64];
	const char *env;

	if (iface != PTL_IFACE_AUTO) {
		ops = p3_nal_find_by_iface(iface);
		if (!ops) {
			p3_nal_names(names, sizeof(names));
			p3_log(1, "PtlNIInit: interface %u names no NAL of this build (built: %s)",
			       (unsigned)iface, names);
		}
		return ops;
	}
	env = getenv("PTL_NAL");
	if (env && *env) {
		ops = p3_nal_find_by_name(env);
		if (!ops) {
			p3_nal_names(names, sizeof(names));
			p3_log(0, "PtlNIInit: PTL_NAL=%s names no NAL (built: %s)", env, names);
		}
		return ops;
	}
	ops = p3_nal_find_by_name("shmem");
	if (!ops) {
		static _Atomic int warned;
		if (!atomic_exchange(&warned, 1))
			p3_log(1, "PtlNIInit: the shmem NAL is not built; using lo "
				  "(this process only). Set PTL_NAL to choose a NAL.");
		ops = &p3_nal_lo_ops;
	}
	return ops;
}

/* PTL_PROGRESS: 0 app, 1 thread, P3_PROGRESS_INTERRUPT (the progress thread
 * as a NIC's interrupt handler), P3_API_PROGRESS_OFFLOAD (LIB in the NIC:
 * myrinet only; never passed to a NAL, it selects the API's LIB interface). */
#define P3_API_PROGRESS_OFFLOAD 3
static int p3_progress_mode(const struct p3_nal_ops *ops)
{
	const char *s = getenv("PTL_PROGRESS");

	if (!s || !*s || !strcmp(s, "app"))
		return 0;
	if (!strcmp(s, "thread"))
		return 1;
	if (!strcmp(s, "interrupt")) /* a NAL without an interrupting NIC: thread */
		return P3_PROGRESS_INTERRUPT;
	if (!strcmp(s, "offload")) {
		if (ops->iface == PTL_IFACE_MYRINET && &p3_myri_offload_iface)
			return P3_API_PROGRESS_OFFLOAD;
		p3_log(1, "PtlNIInit: PTL_PROGRESS=offload needs a NIC that runs Portals "
			  "(the myrinet NAL); NAL %s runs app", ops->name);
		return 0;
	}
	p3_log(1, "PtlNIInit: PTL_PROGRESS=%s is not a progress mode of this NAL "
		  "(use app, thread, interrupt, or offload with myrinet); using app", s);
	return 0;
}

int PtlNIInit(ptl_interface_t iface, ptl_pid_t pid, ptl_ni_limits_t *desired,
	      ptl_ni_limits_t *actual, ptl_handle_ni_t *ni_handle)
{
	struct p3_lib_open_args args;
	const struct p3_nal_ops *ops;
	struct p3_api_ni *ni = NULL;
	unsigned int slot;
	int rc;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!ni_handle)
		return PTL_SEGV;
	ops = p3_api_resolve_nal(iface);
	if (!ops)
		return PTL_IFACE_INVALID;

	pthread_mutex_lock(&p3_api_lock);
	/* A second init of the same interface returns the open NI (counted:
	 * each PtlNIInit is matched by a PtlNIFini). */
	for (slot = 0; slot < P3_MAX_NIS; slot++) {
		struct p3_api_ni *o = &p3_api_nis[slot];
		if (atomic_load(&o->ni_handle) && o->ni_nal == ops) {
			if (pid != PTL_PID_ANY && pid != o->ni_info.id.pid) {
				rc = PTL_PID_INVALID;
			} else {
				o->ni_refs++;
				*ni_handle = atomic_load(&o->ni_handle);
				if (actual)
					*actual = o->ni_info.limits;
				rc = PTL_OK;
			}
			goto out;
		}
		if (!ni && !atomic_load(&o->ni_handle))
			ni = o;
	}
	if (!ni) {
		rc = PTL_NO_SPACE;
		goto out;
	}
	if (p3_runtime_load() != 0) {
		rc = PTL_FAIL;
		goto out;
	}
	slot = (unsigned int)(ni - p3_api_nis);
	memset(&args, 0, sizeof(args));
	args.nal = ops;
	args.ni_index = slot;
	args.ni_gen = (ni->ni_gen + 1) & P3_HANDLE_GEN_MASK;
	args.pid = pid;
	args.desired = desired;
	int mode = p3_progress_mode(ops);
	args.progress_thread = mode == P3_API_PROGRESS_OFFLOAD ? 0 : mode;
	args.debug_mask = p3_debug_env_mask();
	ni->ni_if = mode == P3_API_PROGRESS_OFFLOAD ? &p3_myri_offload_iface : &p3_lib_local_iface;
	rc = ni->ni_if->open(&args, &ni->ni_lib, &ni->ni_info);
	if (rc != PTL_OK)
		goto out;
	ni->ni_neqs = (uint32_t)ni->ni_info.limits.max_eqs;
	ni->ni_eqs = calloc(ni->ni_neqs ? ni->ni_neqs : 1, sizeof(*ni->ni_eqs));
	if (!ni->ni_eqs) {
		ni->ni_if->close(ni->ni_lib);
		rc = PTL_NO_SPACE;
		goto out;
	}
	ni->ni_nal = ops;
	ni->ni_pass = NULL;
	ni->ni_pass_priv = NULL;
	ni->ni_ev_count = NULL;
	if (ni->ni_if == &p3_lib_local_iface) {
		p3_lib_local_pass(ni->ni_lib, &ni->ni_pass, &ni->ni_pass_priv);
		ni->ni_ev_count = p3_lib_local_ev_count(ni->ni_lib);
	}
	ni->ni_thread = ni->ni_if->progress_thread(ni->ni_lib);
	struct ptl_oversub os;
	ni->ni_oversub = ptl_oversub_detect(&os);
	p3_handoff_set_local_ranks(os.local_ranks);
	ni->ni_oversub_wait = ptl_oversub_wait_policy();
	ni->ni_handoff_us = ptl_oversub_handoff_us();
	ni->ni_spin_us = P3_SPIN_US;
	ni->ni_spin_yield = 0;
	if (ni->ni_if->wait_policy)
		ni->ni_if->wait_policy(ni->ni_lib, &ni->ni_spin_us, &ni->ni_spin_yield);
	ni->ni_refs = 1;
	ni->ni_gen = args.ni_gen ? args.ni_gen : 1;
	*ni_handle = p3_handle_make(P3_HT_NI, slot, ni->ni_gen, 0);
	if (actual)
		*actual = ni->ni_info.limits;
	atomic_store_explicit(&ni->ni_handle, *ni_handle, memory_order_release);
out:
	pthread_mutex_unlock(&p3_api_lock);
	return rc;
}

int PtlNIFini(ptl_handle_ni_t h)
{
	struct p3_api_ni *ni;
	int rc = PTL_OK;

	if (!p3_api_up())
		return PTL_NO_INIT;
	pthread_mutex_lock(&p3_api_lock);
	ni = p3_api_ni_get(h);
	if (!ni)
		rc = PTL_NI_INVALID;
	else if (--ni->ni_refs == 0)
		p3_api_ni_close(ni);
	pthread_mutex_unlock(&p3_api_lock);
	return rc;
}

int PtlNIStatus(ptl_handle_ni_t h, ptl_sr_index_t reg, ptl_sr_value_t *status)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!status)
		return PTL_SEGV;
	return ni->ni_if->status(ni->ni_lib, reg, status);
}

int PtlNIDist(ptl_handle_ni_t h, ptl_process_id_t process, unsigned long *distance)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!distance)
		return PTL_SEGV;
	return ni->ni_if->dist(ni->ni_lib, process, distance);
}

int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *nih)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!nih)
		return PTL_SEGV;
	switch (p3_handle_type(handle)) {
	case P3_HT_NI:
		if (!p3_api_ni_get(handle))
			return PTL_HANDLE_INVALID;
		*nih = handle;
		return PTL_OK;
	case P3_HT_ME:
	case P3_HT_MD:
	case P3_HT_EQ:
		ni = p3_api_ni_of(handle);
		if (!ni || ni->ni_if->handle_check(ni->ni_lib, handle) != PTL_OK)
			return PTL_HANDLE_INVALID;
		*nih = atomic_load(&ni->ni_handle);
		return PTL_OK;
	default:
		return PTL_HANDLE_INVALID;
	}
}

int PtlGetId(ptl_handle_ni_t h, ptl_process_id_t *id)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!id)
		return PTL_SEGV;
	*id = ni->ni_info.id;
	return PTL_OK;
}

int PtlGetUid(ptl_handle_ni_t h, ptl_uid_t *uid)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!uid)
		return PTL_SEGV;
	*uid = ni->ni_info.uid;
	return PTL_OK;
}

int PtlGetJid(ptl_handle_ni_t h, ptl_jid_t *jid)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!jid)
		return PTL_SEGV;
	*jid = ni->ni_info.jid;
	return PTL_OK;
}

unsigned int PtlNIDebug(ptl_handle_ni_t h, unsigned int mask)
{
	struct p3_api_ni *ni;

	if (!p3_api_up() || !(ni = p3_api_ni_get(h)))
		return 0;
	return ni->ni_if->debug(ni->ni_lib, mask);
}

int PtlNIDescribe(ptl_handle_ni_t h, const char **nal_name, const char **progress_mode)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!nal_name || !progress_mode)
		return PTL_SEGV;
	return ni->ni_if->describe(ni->ni_lib, nal_name, progress_mode);
}

/* The spin budget p3_poll_wait (api-eq.c) takes for this NI alone, without
 * the oversubscription handoff (a yield, not a spin) unless it sleeps. */
int PtlNIWaitSpin(ptl_handle_ni_t h, unsigned int *spin_us)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	if (!spin_us)
		return PTL_SEGV;
	int yield;
	unsigned int budget = p3_api_ni_spin_budget(ni, &yield);
	if (ni->ni_oversub && ni->ni_oversub_wait == PTL_OVERSUB_WAIT_SLEEP)
		budget = 0;
	*spin_us = budget;
	return PTL_OK;
}

int PtlProgress(ptl_handle_ni_t h, ptl_time_t timeout)
{
	struct p3_api_ni *ni;

	if (!p3_api_up())
		return PTL_NO_INIT;
	if (!(ni = p3_api_ni_get(h)))
		return PTL_NI_INVALID;
	int ms = timeout == PTL_TIME_FOREVER ? -1 : timeout > INT_MAX ? INT_MAX : (int)timeout;
	if (ni->ni_pass) {
		ni->ni_pass(ni->ni_pass_priv, ms);
		return PTL_OK; /* what p3_lib_progress returns */
	}
	return ni->ni_if->progress(ni->ni_lib, ms);
}

/* PtlProgress, then the NI's event count (portals3.h), read after the
 * pass (acquire: the events it counts are published); where LIB runs
 * elsewhere, a number that moves on every call (the caller drains). */
int PtlProgressEvents(ptl_handle_ni_t h, ptl_time_t timeout, ptl_seq_t *events)
{
	struct p3_api_ni *ni;

	if (P3_UNLIKELY(!events))
		return PTL_SEGV;
	if (P3_UNLIKELY(!p3_api_up()))
		return PTL_NO_INIT;
	if (P3_UNLIKELY(!(ni = p3_api_ni_get(h))))
		return PTL_NI_INVALID;
	const _Atomic uint32_t *count = ni->ni_ev_count;
	int ms = timeout == PTL_TIME_FOREVER ? -1 : timeout > INT_MAX ? INT_MAX : (int)timeout;
	if (P3_LIKELY(count != NULL)) { /* the in-process LIB: ni_pass is set */
		ni->ni_pass(ni->ni_pass_priv, ms);
		*events = atomic_load_explicit(count, memory_order_acquire);
		return PTL_OK;
	}
	int rc = ni->ni_if->progress(ni->ni_lib, ms);
	if (rc != PTL_OK)
		return rc;
	*events = __atomic_add_fetch(&ni->ni_ev_calls, 1, __ATOMIC_RELAXED);
	return PTL_OK;
}

/* DECISION (portals3.h): 1 if equal, 0 if not; works before PtlInit. */
int PtlHandleIsEqual(ptl_handle_any_t a, ptl_handle_any_t b)
{
	return a == b;
}
