/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcpd_wire.c - the NIC's wire: each endpoint's rmpp endpoint and the address
 * of a peer endpoint (nid, pid).
 *
 *   udp   (default; no privileges): endpoint (nid, pid) is rmpp endpoint pid
 *         at UDP nid:(base port + pid), the udp NAL's plan on other ports.
 *   ether (mcpd --link ether, between p3-netns namespace hosts; CAP_NET_RAW):
 *         rmpp endpoint pid on the NIC's interface, raw frames of EtherType
 *         0x88B5 to the MAC of nid, found in the interface's neighbour table
 *         (static entries: ptlrun --hosts and p3-netns neigh write them) --
 *         the ether NAL's plan.  A nid's MAC is looked up once per NIC.
 *         Endpoints of one NIC cannot reach each other over ether (a frame
 *         to one's own MAC does not come back from the switch), as between
 *         two ether NAL processes of one namespace host.
 */
#include "mcpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MCPD_DEAD_TIMEOUTS 3u

static int mac_of(struct mcpd_ep *ep, uint32_t nid, uint8_t mac[6])
{
	struct mcpd *nic = ep->nic;
	for (size_t i = 0; i < nic->nmacs; i++)
		if (nic->macs[i].nid == nid) {
			memcpy(mac, nic->macs[i].mac, 6);
			return 0;
		}
	if (nid == ep->nid) {
		struct rmpp_addr self;
		rmpp_ep_addr(ep->wire, &self);
		memcpy(mac, self.u.mac, 6);
	} else {
		int rc = rmpp_neigh_lookup(nic->ifname, nid, mac);
		if (rc) {
			fprintf(stderr, "mcpd: no neighbour entry for nid %u.%u.%u.%u on %s\n",
			        nid >> 24, (nid >> 16) & 255, (nid >> 8) & 255, nid & 255,
			        nic->ifname);
			return rc;
		}
	}
	struct mcpd_mac *t = realloc(nic->macs, (nic->nmacs + 1) * sizeof(*t));
	if (t) { /* else looked up again next time */
		nic->macs = t;
		nic->macs[nic->nmacs].nid = nid;
		memcpy(nic->macs[nic->nmacs++].mac, mac, 6);
	}
	return 0;
}

uint64_t mcpd_wire_linger_us(void)
{
	struct rmpp_config cfg;
	rmpp_config_init(&cfg);
	return cfg.linger_us;
}

int mcpd_wire_addr(struct mcpd_ep *ep, uint32_t nid, uint32_t pid, struct rmpp_addr *out)
{
	if (pid > 0xffff)
		return -EHOSTUNREACH;
	if (ep->nic->link == RMPP_LINK_UDP) {
		if (ep->base_port + pid > 65535)
			return -EHOSTUNREACH;
		rmpp_addr_udp(out, htonl(nid), htons((uint16_t)(ep->base_port + pid)),
		              (uint16_t)pid);
		return 0;
	}
	uint8_t mac[6];
	int rc = mac_of(ep, nid, mac);
	if (rc)
		return rc;
	rmpp_addr_ether(out, mac, (uint16_t)pid);
	return 0;
}

/* UDP says when a port is taken; on ether the NIC keeps its endpoint ids
 * apart itself (other processes' ids on the interface are not its own). */
static int pid_taken(const struct mcpd *nic, uint32_t pid)
{
	if (nic->link == RMPP_LINK_UDP)
		return 0;
	for (const struct mcpd_ep *e = nic->eps; e; e = e->next)
		if (e->wire && e->pid == pid)
			return 1;
	return 0;
}

/* rmpp's settings (P3_RMPP_*), but a silent peer is dead after
 * --peer-dead-ms, not rmpp's 30 s: that long is for a peer host in app
 * progress, which may compute for seconds without acknowledging; the peer
 * here is a NIC, which acknowledges from its event loop whatever its hosts
 * do.  DEAD_TIMEOUTS goes from 15 to 3: with the retransmit timeout backed
 * off from a loaded machine's RTT (hundreds of ms, doubling up to
 * RTO_MAX_US, 1 s) 15 or even 8 unanswered timeouts took 4-7 s; with 3 the
 * time decides: a peer is declared dead --peer-dead-ms after its first
 * unanswered timeout (itself at most one retransmit timeout after the last
 * frame), plus at most one more: --peer-dead-ms + 2 s at worst (mcpd(8)). */
static void wire_config(const struct mcpd *nic, struct rmpp_config *cfg)
{
	rmpp_config_init(cfg);
	cfg->dead_min_us = (uint64_t)nic->peer_dead_ms * 1000u;
	cfg->linger_us = 0; /* a gone host's sends drain without blocking the NIC (mcpd.c) */
	if (!getenv("P3_RMPP_DEAD_TIMEOUTS") && cfg->dead_timeouts > MCPD_DEAD_TIMEOUTS)
		cfg->dead_timeouts = MCPD_DEAD_TIMEOUTS;
}

int mcpd_wire_open(struct mcpd_ep *ep, uint32_t want_pid, const struct rmpp_callbacks *cb)
{
	struct mcpd *nic = ep->nic;
	char ip[INET_ADDRSTRLEN];
	struct in_addr in = {.s_addr = htonl(ep->nid)};
	inet_ntop(AF_INET, &in, ip, sizeof(ip));
	struct rmpp_config cfg;
	wire_config(nic, &cfg);
	struct rmpp_ep_attr attr = {
	    .link = nic->link, .udp_addr = ip, .ifname = nic->ifname, .cfg = &cfg, .cb = *cb};
	int any = want_pid == UINT32_MAX;
	uint32_t pid = any ? (uint32_t)(ep->ospid % 4096) + 1 : want_pid;
	int rc = -EINVAL;
	for (int attempt = 0; attempt < (any ? 64 : 1); attempt++, pid++) {
		if (pid > 0xffff || (nic->link == RMPP_LINK_UDP && ep->base_port + pid > 65535))
			return -EINVAL;
		attr.ep_id = (uint16_t)pid;
		attr.udp_port = (uint16_t)(ep->base_port + pid);
		rc = pid_taken(nic, pid) ? -EADDRINUSE : rmpp_ep_create(&attr, &ep->wire);
		if (rc != -EADDRINUSE)
			break;
	}
	if (rc == 0)
		ep->pid = pid;
	return rc;
}
