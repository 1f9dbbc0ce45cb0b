/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_addr.c - ptl3 addresses: what fi_getinfo's node and service name,
 * and their printable form.
 *
 * A ptl3 address is a Portals process id (nid, pid) plus the NAL and the
 * endpoint's first portal index.  The service is the Portals pid (decimal,
 * 1..65534): an endpoint whose fi_info carries a source address with a pid
 * opens its NI at that pid (a server at a well-known "port", as fabtests'
 * default 9228), otherwise at PTL_PID_ANY.  The node gives the nid: over udp
 * and ether the IPv4 address it resolves to (the rmpp NALs' nid), over shmem
 * always 0 (one node); the node must resolve in every case.  The printable
 * form is ptl3://<nid>:<pid> (nid in dotted IPv4 notation over udp and
 * ether, a number otherwise); a node given in that form is parsed back. */
#include "config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ptl3.h"
#include "p3num.h"

static int nal_uses_ip(uint32_t iface)
{
	return iface == (uint32_t)PTL_IFACE_UDP || iface == (uint32_t)PTL_IFACE_ETHER ||
	       iface == (uint32_t)PTL_IFACE_XDP;
}

/* the pid a service names, or PTL_PID_ANY for none; -1 if not a pid */
static long service_pid(const char *service)
{
	if (!service || !*service)
		return (long)PTL_PID_ANY;
	uint64_t v;
	if (p3num_u64("service", service, 1, 65534, 0, &v, NULL, 0) || v == (uint64_t)PTL_PID_ANY)
		return -1;
	return (long)v;
}

static int parse_ptl3_uri(const char *node, uint32_t *nid, uint32_t *pid)
{
	char host[64];
	const char *p = node + strlen(PTL3_ADDR_PREFIX);
	const char *colon = strrchr(p, ':');
	if (!colon || (size_t)(colon - p) >= sizeof(host))
		return -FI_ENODATA;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = 0;
	struct in_addr in;
	if (inet_pton(AF_INET, host, &in) == 1) {
		*nid = ntohl(in.s_addr);
	} else {
		uint64_t v;
		if (p3num_u64("nid", host, 0, UINT32_MAX, P3NUM_BASE0, &v, NULL, 0))
			return -FI_ENODATA;
		*nid = (uint32_t)v;
	}
	long v = service_pid(colon + 1);
	if (v < 0)
		return -FI_ENODATA;
	*pid = (uint32_t)v;
	return 0;
}

static int node_nid(const char *node, uint32_t iface, uint32_t *nid)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	if (getaddrinfo(node, NULL, &hints, &res) || !res)
		return -FI_ENODATA;
	uint32_t ip = ntohl(((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr);
	freeaddrinfo(res);
	*nid = nal_uses_ip(iface) ? ip : 0;
	return 0;
}

/* the nid this process gets when no node is named */
static uint32_t default_nid(uint32_t iface)
{
	if (!nal_uses_ip(iface))
		return 0;
	const char *s = getenv("P3_RMPP_ADDR");
	struct in_addr in;
	if (s && inet_pton(AF_INET, s, &in) == 1)
		return ntohl(in.s_addr);
	return 0x7f000001u;
}

int ptl3_addr_resolve(const char *node, const char *service, struct ptl3_addr *out)
{
	memset(out, 0, sizeof(*out));
	out->magic = PTL3_ADDR_MAGIC;
	out->version = PTL3_ADDR_VERSION;
	out->pt_base = (uint16_t)ptl3_params.pt_base;
	out->iface = (uint32_t)ptl3_nal_iface(ptl3_params.nal);
	if (node && !strncmp(node, PTL3_ADDR_PREFIX, strlen(PTL3_ADDR_PREFIX))) {
		if (service && *service)
			return -FI_ENODATA; /* the pid is in the node string */
		return parse_ptl3_uri(node, &out->nid, &out->pid);
	}
	long pid = service_pid(service);
	if (pid < 0)
		return -FI_ENODATA;
	out->pid = (uint32_t)pid;
	if (!node || !*node) {
		out->nid = default_nid(out->iface);
		return 0;
	}
	return node_nid(node, out->iface, &out->nid);
}

int ptl3_addr_valid(const void *addr, size_t len)
{
	const struct ptl3_addr *a = addr;
	return addr && len == sizeof(*a) && a->magic == PTL3_ADDR_MAGIC &&
	       a->version == PTL3_ADDR_VERSION;
}

size_t ptl3_addr_print(const struct ptl3_addr *a, char *buf, size_t len)
{
	char host[INET_ADDRSTRLEN];
	if (nal_uses_ip(a->iface)) {
		struct in_addr in = {.s_addr = htonl(a->nid)};
		inet_ntop(AF_INET, &in, host, sizeof(host));
	} else {
		snprintf(host, sizeof(host), "%u", a->nid);
	}
	int n;
	if (a->pid == (uint32_t)PTL_PID_ANY)
		n = snprintf(buf, len, "%s%s:any", PTL3_ADDR_PREFIX, host);
	else
		n = snprintf(buf, len, "%s%s:%u", PTL3_ADDR_PREFIX, host, a->pid);
	/* the domain's second and later endpoints (display only) */
	if (n >= 0 && a->ep_index) {
		size_t used = (size_t)n < len ? (size_t)n : (len ? len - 1 : 0);
		int m = snprintf(buf ? buf + used : NULL, len - used, "/ep%u", a->ep_index);
		n = m < 0 ? n : n + m;
	}
	return n < 0 ? 0 : (size_t)n;
}
