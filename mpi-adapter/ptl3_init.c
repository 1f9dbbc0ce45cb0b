/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_init.c - provider entry point, tunables, and "not supported" stubs. */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ptl3.h"

#include <p3rt/oversub.h>

struct ptl3_params ptl3_params;
int ptl3_trace;

static void ptl3_cleanup(void)
{
}

struct fi_provider ptl3_prov = {
	.version = PTL3_PROV_VERSION,
	.fi_version = PTL3_FI_VERSION,
	.name = PTL3_PROV_NAME,
	.getinfo = ptl3_getinfo,
	.fabric = ptl3_fabric_open,
	.cleanup = ptl3_cleanup,
};

ptl_interface_t ptl3_nal_iface(const char *name)
{
	if (!name || !*name || !strcasecmp(name, "auto"))
		return PTL_IFACE_AUTO;
	if (!strcasecmp(name, "shmem"))
		return PTL_IFACE_SHMEM;
	if (!strcasecmp(name, "udp"))
		return PTL_IFACE_UDP;
	if (!strcasecmp(name, "ether"))
		return PTL_IFACE_ETHER;
	if (!strcasecmp(name, "xdp"))
		return PTL_IFACE_XDP;
	if (!strcasecmp(name, "myrinet"))
		return PTL_IFACE_MYRINET;
	if (!strcasecmp(name, "lo"))
		return PTL_IFACE_LO;
	return (ptl_interface_t)-1;
}

static void get_str(const char *name, char *dst, size_t n, const char *def)
{
	char *v = NULL;
	if (fi_param_get_str(&ptl3_prov, name, &v) == FI_SUCCESS && v && *v)
		snprintf(dst, n, "%s", v);
	else
		snprintf(dst, n, "%s", def);
}

static void get_size(const char *name, size_t *dst, size_t def, size_t min)
{
	int v;
	*dst = def;
	if (fi_param_get_int(&ptl3_prov, name, &v) == FI_SUCCESS && v >= 0 && (size_t)v >= min)
		*dst = (size_t)v;
}

/* MPICH polls the CQ without ever blocking: on an oversubscribed node
 * (more local ranks than CPUs, <p3rt/oversub.h>) a rank that spins holds
 * the core its peer needs, and a 64-byte allreduce on 4 ranks over 2 cores
 * takes milliseconds instead of microseconds.  There, wait in PtlEQPoll
 * after an empty read (FI_PTL3_YIELD_POLLS, FI_PTL3_BLOCK_MS): Portals
 * yields briefly, then sleeps until the event (P3_OVERSUB_WAIT). */
static int ptl3_oversubscribed(void)
{
	struct ptl_oversub os;
	return ptl_oversub_detect(&os);
}

void ptl3_params_load(void)
{
	int v;
	get_str("nal", ptl3_params.nal, sizeof(ptl3_params.nal), "shmem");
	get_str("progress", ptl3_params.progress, sizeof(ptl3_params.progress), "");
	ptl3_params.counters = 0;
	if (fi_param_get_bool(&ptl3_prov, "counters", &v) == FI_SUCCESS)
		ptl3_params.counters = v;
	get_size("eager", &ptl3_params.eager, 16384, 0);
	/* MPICH injects (copies, completes at once) up to inject_size; a
	 * blocking send above it waits for the Portals ACK, which the rmpp NALs
	 * (udp, ether, xdp) hold until the receiver's next message: there, copying
	 * up to the eager limit wins (8 KiB ping-pong 10.3 -> 6.4 us); over
	 * shmem the ACK is quick and the copy is not (0.75 -> 0.81 us). */
	bool rmpp_nal = !strcmp(ptl3_params.nal, "udp") || !strcmp(ptl3_params.nal, "ether") ||
			!strcmp(ptl3_params.nal, "xdp");
	get_size("inject_size", &ptl3_params.inject_size, rmpp_nal ? ptl3_params.eager : 4096, 0);
	get_size("ebuf_size", &ptl3_params.ebuf_size, 262144, 4096);
	if (ptl3_params.ebuf_size < ptl3_params.eager * 2)
		ptl3_params.ebuf_size = ptl3_params.eager * 2;
	size_t n;
	get_size("ebuf_count", &n, 8, 2);
	ptl3_params.ebuf_count = (int)n;
	get_size("eq_size", &n, 32768, 1024);
	ptl3_params.eq_size = (int)n;
	get_size("close_timeout", &n, 30, 0);
	ptl3_params.close_timeout = (int)n;
	get_size("pt_base", &n, 8, 0);
	ptl3_params.pt_base = (int)n;
	int oversub = ptl3_oversubscribed();
	get_size("yield_polls", &n, oversub ? PTL3_OVERSUB_YIELD_POLLS : 0, 0);
	ptl3_params.yield_polls = (unsigned)n;
	ptl3_params.yield_polls_given = fi_param_get_int(&ptl3_prov, "yield_polls", &v) == FI_SUCCESS;
	get_size("block_ms", &n, oversub ? PTL3_OVERSUB_BLOCK_MS : 0, 0);
	ptl3_params.block_ms = (int)(n > 1000 ? 1000 : n);
	ptl3_params.block_ms_given = fi_param_get_int(&ptl3_prov, "block_ms", &v) == FI_SUCCESS;
	get_size("stage_slots", &n, 256, 0);
	ptl3_params.stage_slots = (int)(n > PTL3_STAGE_SLOT_MASK ? PTL3_STAGE_SLOT_MASK : n);
	ptl3_params.rma = 1;
	if (fi_param_get_bool(&ptl3_prov, "rma", &v) == FI_SUCCESS)
		ptl3_params.rma = v;
	/* -1: on unless the NI's NAL is myrinet (decided at endpoint enable) */
	ptl3_params.soft_recv = -1;
	if (fi_param_get_bool(&ptl3_prov, "soft_recv", &v) == FI_SUCCESS)
		ptl3_params.soft_recv = v;
	get_size("soft_recv_max", &ptl3_params.soft_recv_max, 1024, 0);
	if (ptl3_params.soft_recv_max > ptl3_params.eager)
		ptl3_params.soft_recv_max = ptl3_params.eager;
}

/* the entry point libfabric looks up in a dlopened provider */
struct fi_provider *fi_prov_ini(void);

FI_EXT_INI
{
	fi_param_define(&ptl3_prov, "nal", FI_PARAM_STRING,
			"Portals NAL to open: shmem, udp, ether, xdp, myrinet, lo or auto (default: "
			"shmem)");
	fi_param_define(&ptl3_prov, "progress", FI_PARAM_STRING,
			"Portals progress mode, app, thread or (myrinet) interrupt "
			"(sets PTL_PROGRESS; default: the library's)");
	fi_param_define(&ptl3_prov, "counters", FI_PARAM_BOOL,
			"print the provider's counters on stderr when an endpoint closes (default: no)");
	fi_param_define(&ptl3_prov, "eager", FI_PARAM_INT,
			"largest message deposited into unexpected buffers; larger ones are pulled (default: 16384)");
	fi_param_define(&ptl3_prov, "inject_size", FI_PARAM_INT,
			"largest send copied and completed at once (tx_attr inject_size; default: "
			"the eager limit over udp, ether and xdp, 4096 otherwise)");
	fi_param_define(&ptl3_prov, "ebuf_size", FI_PARAM_INT,
			"bytes per unexpected-message buffer (default: 262144)");
	fi_param_define(&ptl3_prov, "ebuf_count", FI_PARAM_INT,
			"unexpected-message buffers per receive queue (default: 8)");
	fi_param_define(&ptl3_prov, "eq_size", FI_PARAM_INT,
			"entries per Portals event queue (default: 32768)");
	fi_param_define(&ptl3_prov, "close_timeout", FI_PARAM_INT,
			"seconds fi_close(ep) waits for outstanding operations (default: 30)");
	fi_param_define(&ptl3_prov, "pt_base", FI_PARAM_INT,
			"first Portals table index used by an endpoint (default: 8)");
	fi_param_define(&ptl3_prov, "yield_polls", FI_PARAM_INT,
			"sched_yield() after this many consecutive empty CQ reads, so oversubscribed "
			"ranks let their peers run (0: never; default: 1 when the node has more "
			"local ranks than CPUs (P3_OVERSUBSCRIBED, p3rt/oversub.h), 64 when the NI's "
			"events come from a NIC that may run only on this rank's CPU (PtlNIWaitSpin "
			"0: myrinet offload), else 0)");
	fi_param_define(&ptl3_prov, "block_ms", FI_PARAM_INT,
			"after FI_PTL3_YIELD_POLLS empty CQ reads, wait in PtlEQPoll until an event or "
			"this many milliseconds instead of sched_yield() (how: P3_OVERSUB_WAIT, by "
			"default a short sched_yield handoff, then sleep; 0: yield; default: 1 on an "
			"oversubscribed node or when the NI's NIC may run only on this rank's CPU, "
			"else 0; at most 1000)");
	fi_param_define(&ptl3_prov, "stage_slots", FI_PARAM_INT,
			"inject sends in flight that are staged in one region exposed once, not an ME "
			"and MD each (0: none; default: 256)");
	fi_param_define(&ptl3_prov, "soft_recv", FI_PARAM_BOOL,
			"match small tagged receives in the provider (no Portals ME and MD each; "
			"default: yes, except over the myrinet NAL, which matches on its NIC)");
	fi_param_define(&ptl3_prov, "soft_recv_max", FI_PARAM_INT,
			"largest tagged receive buffer matched in the provider (FI_PTL3_SOFT_RECV; "
			"at most the eager limit; default: 1024)");
	fi_param_define(
	    &ptl3_prov, "rma", FI_PARAM_BOOL,
	    "offer FI_RMA (fi_read/fi_write on PT_RMA; default: yes. MPICH then reads "
	    "long active messages and does MPI_Put/MPI_Get natively; with 0 it uses its "
	    "pipelined active messages, which in MPICH 4.0.2 corrupt a message whose "
	    "first segment is deferred)");
	ptl3_params_load();
	fi_param_define(&ptl3_prov, "trace", FI_PARAM_BOOL,
			"print every Portals event the provider handles on stderr (default: no)");
	int t = 0;
	if (fi_param_get_bool(&ptl3_prov, "trace", &t) == FI_SUCCESS)
		ptl3_trace = t;
	return &ptl3_prov;
}

/* ---- typed "not supported" stubs: no ops table holds NULL */
int ptl3_no_close(struct fid *fid)
{
	return -FI_ENOSYS;
}
int ptl3_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}
const char *ptl3_prov_strerror(int prov_errno, char *buf, size_t len)
{
	const char *s = prov_errno ? PtlErrorStr((unsigned)prov_errno) : "no Portals error";
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}
int ptl3_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}
int ptl3_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	return -FI_ENOSYS;
}
int ptl3_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}
int ptl3_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
	return -FI_ENOSYS;
}

static int no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}
static int no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}
static int no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}
static int no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}
static int no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}
static int no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		   void *context)
{
	return -FI_ENOSYS;
}
static int no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}
static int no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct ptl3_ep *ep = container_of(fid, struct ptl3_ep, ep_fid.fid);
	struct ptl3_addr a;
	size_t want = sizeof(a);
	if (!addrlen)
		return -FI_EINVAL;
	ptl3_lock(ep->dom);
	int rc = ptl3_domain_ni_open_locked(ep->dom);
	if (rc == 0) {
		memset(&a, 0, sizeof(a));
		a.magic = PTL3_ADDR_MAGIC;
		a.version = PTL3_ADDR_VERSION;
		a.pt_base = (uint16_t)ptl3_params.pt_base;
		a.ep_index = ep->ep_index;
		a.iface = ep->dom->iface;
		a.nid = ep->dom->id.nid;
		a.pid = ep->dom->id.pid;
	}
	ptl3_unlock(ep->dom);
	if (rc)
		return rc;
	if (*addrlen < want || !addr) {
		*addrlen = want;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &a, want);
	*addrlen = want;
	return 0;
}

struct fi_ops_cm ptl3_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = no_setname,
	.getname = ep_getname,
	.getpeer = no_getpeer,
	.connect = no_connect,
	.listen = no_listen,
	.accept = no_accept,
	.reject = no_reject,
	.shutdown = no_shutdown,
	.join = no_join,
};
