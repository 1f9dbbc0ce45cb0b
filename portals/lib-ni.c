/* SPDX-License-Identifier: BSD-3-Clause */
/* lib-ni.c - LIB side of one network interface: bring-up, teardown, status
 * registers, and the table of entry points the API side calls. */
#include "lib.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

/* What this library supports, before the NAL's and the user's limits. */
static const ptl_ni_limits_t p3_lib_max_limits = {
	.max_mes = 65536,
	.max_mds = 65536,
	.max_eqs = 4096,
	.max_ac_index = 63,
	.max_pt_index = 63,
	.max_md_iovecs = 1024,
	.max_me_list = 65536,
	.max_getput_md = 4096,
};

static int p3_limit_min(int a, int b)
{
	/* <= 0 means "no limit" for the NAL's and "no preference" for desired */
	if (b <= 0)
		return a;
	return b < a ? b : a;
}

static void p3_limits_combine(ptl_ni_limits_t *out, const ptl_ni_limits_t *nal,
			      const ptl_ni_limits_t *desired)
{
	*out = p3_lib_max_limits;
#define P3_LIM(f)                                                                                \
	do {                                                                                     \
		out->f = p3_limit_min(out->f, nal->f);                                           \
		if (desired)                                                                     \
			out->f = p3_limit_min(out->f, desired->f);                               \
	} while (0)
	P3_LIM(max_mes);
	P3_LIM(max_mds);
	P3_LIM(max_eqs);
	P3_LIM(max_me_list);
	P3_LIM(max_md_iovecs);
	P3_LIM(max_getput_md);
	/* Index limits are inclusive, but a desired value of 0 is still read as
	 * "no preference" so that a partially filled struct does not shrink the
	 * portal table to one entry. */
	P3_LIM(max_ac_index);
	P3_LIM(max_pt_index);
#undef P3_LIM
}

struct p3_eq_ring *p3_ring_alloc_heap(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes))
		return NULL;
	return p;
}

static void p3_ring_free_heap(struct p3_eq_ring *ring, size_t bytes)
{
	(void)bytes;
	free(ring);
}

static void p3_lib_free_tables(struct p3_lib *lib)
{
	p3_objtab_fini(&lib->lib_mes);
	p3_objtab_fini(&lib->lib_mds);
	p3_objtab_fini(&lib->lib_eqs);
	free(lib->lib_ptl);
	free(lib->lib_acl);
	p3_msg_pool_fini(lib);
	pthread_mutex_destroy(&lib->lib_lock);
	free(lib);
}

/* PTL_PROGRESS as PtlNIDescribe reports it. */
static const char *p3_lib_mode_name(const struct p3_lib *lib)
{
	return lib->lib_thread_mode == P3_PROGRESS_INTERRUPT ? "interrupt"
	       : lib->lib_thread_mode			     ? "thread"
							     : "app";
}

static int p3_lib_open(const struct p3_lib_open_args *args, struct p3_lib **libp,
		       struct p3_lib_open_result *res)
{
	const struct p3_runtime *rt = p3_runtime_get();
	struct p3_nal_init_args nargs;
	struct p3_nal_info info;
	struct p3_lib *lib;
	int rc;

	lib = calloc(1, sizeof(*lib));
	if (!lib)
		return PTL_NO_SPACE;
	pthread_mutex_init(&lib->lib_lock, NULL);
	lib->lib_nal = args->nal;
	lib->lib_ni = args->ni_index;
	lib->lib_ni_gen = args->ni_gen;
	lib->lib_thread_mode = args->progress_thread;
	lib->lib_uid = (ptl_uid_t)getuid();
	lib->lib_jid = rt->jid;
	lib->lib_ring_alloc = p3_ring_alloc_heap;
	lib->lib_ring_free = p3_ring_free_heap;
	atomic_store(&lib->lib_debug, args->debug_mask);
	lib->lib_id.nid = PTL_NID_ANY;
	lib->lib_id.pid = PTL_PID_ANY;

	memset(&nargs, 0, sizeof(nargs));
	nargs.iface = args->nal->iface;
	nargs.requested_pid = args->pid;
	nargs.jid = rt->jid;
	nargs.rank = rt->rank;
	nargs.nranks = rt->nranks;
	nargs.nidmap = rt->nidmap;
	nargs.pidmap = rt->pidmap;
	nargs.progress_thread = args->progress_thread;
	memset(&info, 0, sizeof(info));
	rc = args->nal->init(lib, &nargs, &info, &lib->lib_nal_priv);
	if (rc < 0) {
		if (rc == -EADDRINUSE || rc == -EINVAL) {
			/* PTL_PID_ANY was resolved by the NAL (the job's pid map,
			 * or a free pid): name the rank rather than 4294967295 */
			if (args->pid == PTL_PID_ANY)
				p3_log(1, "PtlNIInit: the pid PTL_PID_ANY resolved to for rank %d is %s on NAL %s",
				       (int)rt->rank, rc == -EADDRINUSE ? "already in use" : "out of range",
				       args->nal->name);
			else
				p3_log(1, "PtlNIInit: pid %u is %s on NAL %s", (unsigned)args->pid,
				       rc == -EADDRINUSE ? "already in use" : "out of range",
				       args->nal->name);
			rc = PTL_PID_INVALID;
		} else if (rc == -EDOM) {
			/* the NAL named the variable and its accepted values */
			p3_log(0, "PtlNIInit: NAL %s not started: a parameter in the "
				  "environment is invalid (the message above names it)",
			       args->nal->name);
			rc = PTL_FAIL;
		} else {
			p3_log(0, "PtlNIInit: NAL %s failed to start: %s", args->nal->name,
			       strerror(-rc));
			rc = rc == -ENOMEM ? PTL_NO_SPACE : PTL_FAIL;
		}
		pthread_mutex_destroy(&lib->lib_lock);
		free(lib);
		return rc;
	}
	lib->lib_id = info.id;
	lib->lib_transfer_mode = info.transfer_mode;
	if (lib->lib_thread_mode == P3_PROGRESS_INTERRUPT && !info.interrupt_handler) {
		p3_log(0, "PtlNIInit: PTL_PROGRESS=interrupt needs a NIC that interrupts "
			  "(the myrinet NAL); NAL %s runs with a progress thread (thread)",
		       args->nal->name);
		lib->lib_thread_mode = 1;
	}
	p3_limits_combine(&lib->lib_limits, &info.limits, args->desired);

	/* The loopback NAL carries our messages to ourselves. */
	if (args->nal == &p3_nal_lo_ops) {
		lib->lib_lo_priv = lib->lib_nal_priv;
	} else {
		struct p3_nal_info loinfo;
		nargs.iface = PTL_IFACE_LO;
		nargs.requested_pid = info.id.pid;
		rc = p3_nal_lo_ops.init(lib, &nargs, &loinfo, &lib->lib_lo_priv);
		if (rc < 0)
			goto fail_nal;
	}

	if (rt->needs_exchange && p3_runtime_exchange(lib->lib_id) != 0) {
		rc = -EIO;
		goto fail_lo;
	}

	lib->lib_ptl = calloc((size_t)lib->lib_limits.max_pt_index + 1, sizeof(*lib->lib_ptl));
	lib->lib_acl = calloc((size_t)lib->lib_limits.max_ac_index + 1, sizeof(*lib->lib_acl));
	if (!lib->lib_ptl || !lib->lib_acl ||
	    p3_objtab_init(&lib->lib_mes, P3_HT_ME, lib->lib_ni, lib->lib_ni_gen, sizeof(struct p3_me),
			   (uint32_t)lib->lib_limits.max_mes) ||
	    p3_objtab_init(&lib->lib_mds, P3_HT_MD, lib->lib_ni, lib->lib_ni_gen, sizeof(struct p3_md),
			   (uint32_t)lib->lib_limits.max_mds) ||
	    p3_objtab_init(&lib->lib_eqs, P3_HT_EQ, lib->lib_ni, lib->lib_ni_gen, sizeof(struct p3_eq),
			   (uint32_t)lib->lib_limits.max_eqs)) {
		rc = -ENOMEM;
		goto fail_tables;
	}
	p3_acl_init(lib);

	if (lib->lib_thread_mode && p3_progress_thread_start(lib) != 0) {
		rc = -EAGAIN;
		goto fail_tables;
	}

	res->id = lib->lib_id;
	res->uid = lib->lib_uid;
	res->jid = lib->lib_jid;
	res->limits = lib->lib_limits;
	*libp = lib;
	P3_DBG(lib, PTL_DBG_REQUEST, "NI up on NAL %s (%s), progress %s", lib->lib_nal->name,
	       info.transfer_mode ? info.transfer_mode : "-", p3_lib_mode_name(lib));
	return PTL_OK;

fail_tables:
	p3_objtab_fini(&lib->lib_mes);
	p3_objtab_fini(&lib->lib_mds);
	p3_objtab_fini(&lib->lib_eqs);
	free(lib->lib_ptl);
	free(lib->lib_acl);
fail_lo:
	if (lib->lib_lo_priv != lib->lib_nal_priv) {
		p3_nal_lo_ops.stop(lib->lib_lo_priv);
		p3_nal_lo_ops.destroy(lib->lib_lo_priv);
	}
fail_nal:
	args->nal->stop(lib->lib_nal_priv);
	args->nal->destroy(lib->lib_nal_priv);
	pthread_mutex_destroy(&lib->lib_lock);
	free(lib);
	return rc == -ENOMEM ? PTL_NO_SPACE : PTL_FAIL;
}

static void p3_lib_eq_destroy_cb(void *obj, void *arg)
{
	p3_eq_destroy_locked(arg, obj);
}

static void p3_lib_close(struct p3_lib *lib)
{
	atomic_store(&lib->lib_closing, 1);
	if (lib->lib_thread_started)
		p3_progress_thread_stop(lib);
	/* stop() fails every in-flight message through p3_lib_finalize. */
	lib->lib_nal->stop(lib->lib_nal_priv);
	if (lib->lib_lo_priv != lib->lib_nal_priv)
		p3_nal_lo_ops.stop(lib->lib_lo_priv);
	lib->lib_nal->destroy(lib->lib_nal_priv);
	if (lib->lib_lo_priv != lib->lib_nal_priv)
		p3_nal_lo_ops.destroy(lib->lib_lo_priv);

	p3_lib_lock(lib);
	/* MEs, MDs and iovec copies live in the tables; rings need freeing. */
	p3_objtab_foreach(&lib->lib_eqs, p3_lib_eq_destroy_cb, lib);
	for (uint32_t i = 0; i < lib->lib_mds.ot_next_new; i++) {
		struct p3_md *md = (struct p3_md *)((char *)lib->lib_mds
							    .ot_chunks[i >> P3_CHUNK_SHIFT] +
						    (i & (P3_CHUNK_SIZE - 1)) * sizeof(*md));
		if (md->md_obj.obj_handle && md->md_iov != &md->md_iov1)
			free(md->md_iov);
	}
	p3_lib_unlock(lib);
	p3_lib_free_tables(lib);
}

static int p3_lib_status(struct p3_lib *lib, ptl_sr_index_t reg, ptl_sr_value_t *value)
{
	if (reg >= PTL_SR_NAL_BASE) {
		int rc = lib->lib_nal->status(lib->lib_nal_priv, reg, value);
		return rc < 0 ? PTL_SR_INDEX_INVALID : PTL_OK;
	}
	if (reg >= PTL_SR_LAST_STD)
		return PTL_SR_INDEX_INVALID;
	p3_lib_lock(lib);
	switch (reg) {
	case PTL_SR_MES_ALLOCATED:
		*value = lib->lib_mes.ot_inuse;
		break;
	case PTL_SR_MDS_ALLOCATED:
		*value = lib->lib_mds.ot_inuse;
		break;
	case PTL_SR_EQS_ALLOCATED:
		*value = lib->lib_eqs.ot_inuse;
		break;
	case PTL_SR_EQ_DROPPED:
		*value = p3_eq_dropped_total_locked(lib);
		break;
	default:
		*value = lib->lib_sr[reg];
		break;
	}
	p3_lib_unlock(lib);
	return PTL_OK;
}

static int p3_lib_dist(struct p3_lib *lib, ptl_process_id_t id, unsigned long *distance)
{
	int rc;

	if (id.nid == lib->lib_id.nid && id.pid == lib->lib_id.pid) {
		*distance = 0;
		return PTL_OK;
	}
	rc = lib->lib_nal->dist(lib->lib_nal_priv, id, distance);
	return rc < 0 ? PTL_PROCESS_INVALID : PTL_OK;
}

static unsigned int p3_lib_debug(struct p3_lib *lib, unsigned int mask)
{
	return atomic_exchange(&lib->lib_debug, mask);
}

static int p3_lib_describe(struct p3_lib *lib, const char **nal_name, const char **mode)
{
	*nal_name = lib->lib_nal->name;
	*mode = p3_lib_mode_name(lib);
	return PTL_OK;
}

static int p3_lib_progress(struct p3_lib *lib, int timeout_ms)
{
	lib->lib_nal->progress(lib->lib_nal_priv, timeout_ms);
	return PTL_OK;
}

void p3_lib_local_pass(struct p3_lib *lib, int (**pass)(void *priv, int timeout_ms), void **priv)
{
	*pass = lib->lib_nal->progress; /* what p3_lib_progress calls */
	*priv = lib->lib_nal_priv;
}

const _Atomic uint32_t *p3_lib_local_ev_count(const struct p3_lib *lib)
{
	return &lib->lib_ev_count;
}

static int p3_lib_progress_thread(struct p3_lib *lib)
{
	return lib->lib_thread_mode;
}

static void p3_lib_wakeup(struct p3_lib *lib)
{
	lib->lib_nal->wakeup(lib->lib_nal_priv);
}

static int p3_lib_handle_check(struct p3_lib *lib, ptl_handle_any_t h)
{
	const struct p3_objtab *t;
	int ok;

	switch (p3_handle_type(h)) {
	case P3_HT_ME:
		t = &lib->lib_mes;
		break;
	case P3_HT_MD:
		t = &lib->lib_mds;
		break;
	case P3_HT_EQ:
		t = &lib->lib_eqs;
		break;
	default:
		return PTL_HANDLE_INVALID;
	}
	p3_lib_lock(lib);
	ok = p3_obj_lookup_locked(t, h) != NULL;
	p3_lib_unlock(lib);
	return ok ? PTL_OK : PTL_HANDLE_INVALID;
}

ptl_process_id_t p3_lib_id(const struct p3_lib *lib)
{
	return lib->lib_id;
}

const struct p3_lib_iface p3_lib_local_iface = {
	.open = p3_lib_open,
	.close = p3_lib_close,
	.status = p3_lib_status,
	.dist = p3_lib_dist,
	.debug = p3_lib_debug,
	.describe = p3_lib_describe,
	.progress = p3_lib_progress,
	.progress_thread = p3_lib_progress_thread,
	.me_insert = p3_lib_me_insert,
	.me_unlink = p3_lib_me_unlink,
	.me_md_post = p3_lib_me_md_post,
	.md_attach = p3_lib_md_attach,
	.md_unlink = p3_lib_md_unlink,
	.md_update = p3_lib_md_update,
	.eq_alloc = p3_lib_eq_alloc,
	.eq_free = p3_lib_eq_free,
	.ac_entry = p3_lib_ac_entry,
	.put = p3_lib_put,
	.get = p3_lib_get,
	.getput = p3_lib_getput,
	.handle_check = p3_lib_handle_check,
	.wakeup = p3_lib_wakeup,
	.fork_hold = p3_progress_thread_hold,
	.fork_release = p3_progress_thread_release,
};
