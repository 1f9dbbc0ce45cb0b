/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c - the NALs built into this library.
 *
 * Every NAL but lo is referenced through a weak, hidden symbol: a NAL that
 * is not linked in leaves its address NULL and is simply not offered, so
 * the core builds and runs with any subset of nal/ present.
 */
#include <string.h>

#include "nal.h"

#define P3_WEAK_NAL __attribute__((weak, visibility("hidden")))
extern const struct p3_nal_ops p3_nal_shmem_ops P3_WEAK_NAL;
extern const struct p3_nal_ops p3_nal_udp_ops P3_WEAK_NAL;
extern const struct p3_nal_ops p3_nal_ether_ops P3_WEAK_NAL;
extern const struct p3_nal_ops p3_nal_myrinet_ops P3_WEAK_NAL;
extern const struct p3_nal_ops p3_nal_xdp_ops P3_WEAK_NAL;

static const struct p3_nal_ops *p3_nal_table(unsigned int i)
{
	switch (i) {
	case 0:
		return &p3_nal_lo_ops;
	case 1:
		return &p3_nal_shmem_ops;
	case 2:
		return &p3_nal_udp_ops;
	case 3:
		return &p3_nal_ether_ops;
	case 4:
		return &p3_nal_myrinet_ops;
	case 5:
		return &p3_nal_xdp_ops;
	default:
		return NULL;
	}
}
#define P3_NAL_SLOTS 6u

/* A table built against another nal.h is refused (size is the ABI check). */
static const struct p3_nal_ops *p3_nal_usable(const struct p3_nal_ops *ops)
{
	if (!ops || ops->size != sizeof(struct p3_nal_ops))
		return NULL;
	return ops;
}

const struct p3_nal_ops *p3_nal_find_by_iface(ptl_interface_t iface)
{
	for (unsigned int i = 0; i < P3_NAL_SLOTS; i++) {
		const struct p3_nal_ops *ops = p3_nal_usable(p3_nal_table(i));
		if (ops && ops->iface == iface)
			return ops;
	}
	return NULL;
}

const struct p3_nal_ops *p3_nal_find_by_name(const char *name)
{
	if (!name)
		return NULL;
	for (unsigned int i = 0; i < P3_NAL_SLOTS; i++) {
		const struct p3_nal_ops *ops = p3_nal_usable(p3_nal_table(i));
		if (ops && ops->name && !strcmp(ops->name, name))
			return ops;
	}
	return NULL;
}
