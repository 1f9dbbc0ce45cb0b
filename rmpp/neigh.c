/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * neigh.c - an interface's IPv4 address, and IPv4 address -> MAC address
 * from the kernel's neighbour table (/proc/net/arp), for users of the raw-Ethernet link that name
 * peers by IPv4 address: the ether NAL (nal/rmpp) and the emulated NIC (nal/myrinet mcpd). Nothing
 * ARPs for raw 0x88B5 frames, so the entries are static ones (tools/p3-netns neigh, ptlrun --hosts)
 * or left by other traffic.
 */
#include "rmpp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int rmpp_iface_ipv4(const char *ifname, uint32_t *ip)
{
	struct ifreq ifr;
	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return -ENODEV;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	int rc = ioctl(s, SIOCGIFADDR, &ifr);
	close(s);
	if (rc != 0)
		return -ENODEV;
	struct sockaddr_in sin;
	memcpy(&sin, &ifr.ifr_addr, sizeof(sin));
	*ip = ntohl(sin.sin_addr.s_addr);
	return 0;
}

#define NEIGH_FLAG_COMPLETE 0x2 /* ATF_COM: the entry has a hardware address */

int rmpp_neigh_lookup(const char *ifname, uint32_t ip, uint8_t mac[6])
{
	FILE *f = fopen("/proc/net/arp", "r");
	char line[256], addr[64], hw[64], mask[64], dev[64];
	unsigned type, flags;
	int rc = -EHOSTUNREACH;
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f)) { /* the column titles */
		fclose(f);
		return rc;
	}
	while (rc != 0 && fgets(line, sizeof(line), f)) {
		struct in_addr in;
		unsigned m[6];
		if (sscanf(line, "%63s 0x%x 0x%x %63s %63s %63s", addr, &type, &flags, hw, mask,
		           dev) != 6)
			continue;
		if (strcmp(dev, ifname) != 0 || inet_pton(AF_INET, addr, &in) != 1 ||
		    ntohl(in.s_addr) != ip || !(flags & NEIGH_FLAG_COMPLETE))
			continue;
		if (sscanf(hw, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
			continue;
		for (int i = 0; i < 6; i++)
			mac[i] = (uint8_t)m[i];
		rc = 0;
	}
	fclose(f);
	return rc;
}
