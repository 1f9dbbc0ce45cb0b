/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init.c - the rmpp NALs "udp", "ether" and "xdp" (ether's frames through
 * rmpp's AF_XDP link): configuration, address plan, init/stop/destroy,
 * dist(), status() and the three ops tables.
 *
 * Runtime parameters (besides librmpp's P3_RMPP_* table):
 *   P3_RMPP_BASE_PORT  UDP port of pid 0 (default 21000): port = base + pid
 *   P3_RMPP_IFNAME     ether, xdp: interface (default "lo")
 *   P3_RMPP_ADDR       this node's IPv4 address when no runtime nid map is
 *                      given (default: the address of P3_RMPP_IFNAME for ether,
 *                      and for udp when P3_RMPP_IFNAME is set; else 127.0.0.1)
 */
#include "rmpp_nal.h"
#include "p3num.h"

#include <p3rt/oversub.h>

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define RNAL_DEFAULT_BASE_PORT 21000

static const char *rnal_link_name(enum rmpp_link_type link)
{
	return link == RMPP_LINK_UDP ? "udp" : link == RMPP_LINK_XDP ? "xdp" : "ether";
}

static int rnal_init_common(struct p3_lib *lib, const struct p3_nal_init_args *args,
			    struct p3_nal_info *info, void **privp, enum rmpp_link_type link)
{
	struct rnal *rn = calloc(1, sizeof(*rn));
	if (!rn)
		return -ENOMEM;
	rn->rn_lib = lib;
	rn->rn_link = link;
	pthread_mutex_init(&rn->rn_macs_lock, NULL);
	pthread_mutex_init(&rn->rn_ack_lock, NULL);
	const char *s = getenv("P3_RMPP_BASE_PORT");
	uint64_t port = RNAL_DEFAULT_BASE_PORT;
	char msg[160];
	if (s && *s &&
	    p3num_u64("P3_RMPP_BASE_PORT", s, 1, 65535, P3NUM_BASE0, &port, msg, sizeof(msg))) {
		p3_lib_log(lib, 0, "rmpp: %s", msg);
		free(rn);
		return -EDOM;
	}
	rn->rn_base_port = (unsigned)port;
	s = getenv("P3_RMPP_IFNAME");
	snprintf(rn->rn_ifname, sizeof(rn->rn_ifname), "%s", s && *s ? s : "lo");

	/* nid: runtime map, else P3_RMPP_ADDR, else loopback / the interface */
	ptl_nid_t nid = 0x7f000001u;
	if (args->rank >= 0 && args->nidmap) {
		nid = args->nidmap[args->rank];
	} else if ((s = getenv("P3_RMPP_ADDR")) && *s) {
		struct in_addr in;
		if (inet_pton(AF_INET, s, &in) != 1) {
			p3_lib_log(lib, 0, "rmpp: P3_RMPP_ADDR=%s is not an IPv4 address", s);
			free(rn);
			return -EDOM;
		}
		nid = ntohl(in.s_addr);
	} else if ((link != RMPP_LINK_UDP || getenv("P3_RMPP_IFNAME")) &&
		   rmpp_iface_ipv4(rn->rn_ifname, &nid) != 0) {
		/* udp with P3_RMPP_IFNAME (a PMI launch: one environment for every
		 * node, the maps are exchanged after init) binds the interface's */
		nid = 0x7f000001u;
	}
	int pid_any = args->requested_pid == PTL_PID_ANY;
	ptl_pid_t pid = args->requested_pid;
	if (pid_any && args->rank >= 0 && args->pidmap) {
		pid = args->pidmap[args->rank];
		pid_any = 0;
	}
	if (pid_any)
		pid = (ptl_pid_t)(getpid() % 4096) + 1;
	char ip[INET_ADDRSTRLEN];
	struct in_addr in = {.s_addr = htonl(nid)};
	inet_ntop(AF_INET, &in, ip, sizeof(ip));

	/* A LIB progress thread spins in progress() beside the application's own
	 * wait (which yields in thread mode): spin with sched_yield rather than
	 * pause, or a rank pinned to one core starves the other thread.  So
	 * does a rank on an oversubscribed node (<p3rt/oversub.h>), whose peer
	 * may be waiting for this very core. */
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	struct ptl_oversub os;
	if ((args->progress_thread || ptl_oversub_detect(&os)) && !getenv("P3_RMPP_SPIN_YIELD"))
		cfg.spin_yield = 1;
	struct rmpp_ep_attr attr = {
		.link = link,
		.cfg = &cfg,
		.udp_addr = ip,
		.ifname = rn->rn_ifname,
		.cb = {.rx_hdr = rnal_rx_hdr,
		       .rx_done = rnal_rx_done,
		       .tx_done = rnal_tx_done,
		       .peer_event = rnal_peer_event,
		       .arg = rn},
	};
	int rc = -EINVAL;
	ptl_pid_t tried = pid; /* the last pid tried (the loop moves pid past it) */
	for (int attempt = 0; attempt < (pid_any ? 64 : 1); attempt++, pid++) {
		if (pid > 0xffff || (link == RMPP_LINK_UDP && rn->rn_base_port + pid > 65535)) {
			rc = -EINVAL;
			break;
		}
		tried = pid;
		attr.ep_id = (uint16_t)pid;
		attr.udp_port = (uint16_t)(rn->rn_base_port + pid);
		rc = rmpp_ep_create(&attr, &rn->rn_ep);
		if (rc != -EADDRINUSE)
			break;
	}
	if (rc) {
		p3_lib_log(lib, 0, "rmpp: cannot open the %s endpoint (pid %u): %s%s",
		           rnal_link_name(link), tried, strerror(-rc),
		           link == RMPP_LINK_XDP ? " (the line above says which call failed)" : "");
		free(rn);
		return rc;
	}
	rn->rn_id.nid = nid;
	rn->rn_id.pid = pid;
	rnal_live_add(rn);
	memset(info, 0, sizeof(*info));
	info->id = rn->rn_id;
	info->max_msg_size = UINT32_MAX;
	if (link == RMPP_LINK_XDP) {
		char d[64];
		snprintf(rn->rn_transfer, sizeof(rn->rn_transfer), "rmpp over AF_XDP (%s)",
			 rmpp_ep_link_desc(rn->rn_ep, d, sizeof(d)));
		info->transfer_mode = rn->rn_transfer;
	} else {
		info->transfer_mode = link == RMPP_LINK_UDP
					      ? "rmpp over UDP (eager / RTS-CTS)"
					      : "rmpp over raw Ethernet (eager / RTS-CTS)";
	}
	*privp = rn;
	return 0;
}

static int rnal_init_udp(struct p3_lib *lib, const struct p3_nal_init_args *args,
			 struct p3_nal_info *info, void **privp)
{
	return rnal_init_common(lib, args, info, privp, RMPP_LINK_UDP);
}

static int rnal_init_ether(struct p3_lib *lib, const struct p3_nal_init_args *args,
			   struct p3_nal_info *info, void **privp)
{
	return rnal_init_common(lib, args, info, privp, RMPP_LINK_ETHER);
}

static int rnal_init_xdp(struct p3_lib *lib, const struct p3_nal_init_args *args,
			 struct p3_nal_info *info, void **privp)
{
	return rnal_init_common(lib, args, info, privp, RMPP_LINK_XDP);
}

static int rnal_dist(void *priv, ptl_process_id_t id, unsigned long *distance)
{
	struct rnal *rn = priv;
	if (id.nid == rn->rn_id.nid)
		*distance = id.pid == rn->rn_id.pid ? 0 : 1;
	else
		*distance = 2;
	return 0;
}

/* Status registers PTL_SR_NAL_BASE + i: the i-th librmpp counter, in the
 * order of RMPP_COUNTERS (rmpp/README.md). */
static int rnal_status(void *priv, ptl_sr_index_t reg, ptl_sr_value_t *value)
{
	struct rnal *rn = priv;
	struct rmpp_counters c;
	const size_t n = sizeof(c) / sizeof(uint64_t);
	if (reg < PTL_SR_NAL_BASE || reg - PTL_SR_NAL_BASE >= n || !rn->rn_ep)
		return -ENOENT;
	rmpp_counters_get(rn->rn_ep, &c);
	uint64_t v[sizeof(c) / sizeof(uint64_t)];
	memcpy(v, &c, sizeof(c));
	*value = v[reg - PTL_SR_NAL_BASE];
	return 0;
}

/* Fail everything in flight (finalize with PTL_NI_UNLINKED), close the link. */
static void rnal_stop(void *priv)
{
	struct rnal *rn = priv;
	rn->rn_stopped = 1;
	rnal_live_remove(rn);
	if (rn->rn_ep) {
		if (getenv("P3_RMPP_STATS")) {
			struct rmpp_counters c;
			rmpp_counters_get(rn->rn_ep, &c);
			rmpp_counters_print(&c, stderr);
		}
		rmpp_ep_destroy(rn->rn_ep);
		rn->rn_ep = NULL;
	}
	rnal_ackwait_clear(rn); /* the MDs waiting go with the NI */
}

static void rnal_destroy(void *priv)
{
	struct rnal *rn = priv;
	rnal_stop(rn);
	free(rn->rn_macs);
	pthread_mutex_destroy(&rn->rn_macs_lock);
	pthread_mutex_destroy(&rn->rn_ack_lock);
	free(rn);
}

const struct p3_nal_ops p3_nal_udp_ops = {
	.size = sizeof(struct p3_nal_ops),
	.name = "udp",
	.iface = PTL_IFACE_UDP,
	.init = rnal_init_udp,
	.send = rnal_send,
	.recv = rnal_recv,
	.progress = rnal_progress,
	.wakeup = rnal_wakeup,
	.dist = rnal_dist,
	.status = rnal_status,
	.stop = rnal_stop,
	.destroy = rnal_destroy,
};

const struct p3_nal_ops p3_nal_ether_ops = {
	.size = sizeof(struct p3_nal_ops),
	.name = "ether",
	.iface = PTL_IFACE_ETHER,
	.init = rnal_init_ether,
	.send = rnal_send,
	.recv = rnal_recv,
	.progress = rnal_progress,
	.wakeup = rnal_wakeup,
	.dist = rnal_dist,
	.status = rnal_status,
	.stop = rnal_stop,
	.destroy = rnal_destroy,
};

const struct p3_nal_ops p3_nal_xdp_ops = {
	.size = sizeof(struct p3_nal_ops),
	.name = "xdp",
	.iface = PTL_IFACE_XDP,
	.init = rnal_init_xdp,
	.send = rnal_send,
	.recv = rnal_recv,
	.progress = rnal_progress,
	.wakeup = rnal_wakeup,
	.dist = rnal_dist,
	.status = rnal_status,
	.stop = rnal_stop,
	.destroy = rnal_destroy,
};
