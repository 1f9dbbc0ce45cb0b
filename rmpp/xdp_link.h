/* SPDX-License-Identifier: BSD-3-Clause */
/* xdp_link.h - private to the AF_XDP link (link_xdp.c rings, xdp_prog.c the
 * XDP program).  See README.md, "Links", xdp. */
#ifndef RMPP_XDP_LINK_H
#define RMPP_XDP_LINK_H

#include "rmpp_int.h"

#include <net/if.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

struct xdp_state {
	char ifname[IF_NAMESIZE];
	int ifindex;
	unsigned queue;
	struct bpf_object *obj;
	struct xdp_program *prog;
	enum xdp_attach_mode mode; /* XDP_MODE_NATIVE or XDP_MODE_SKB once attached */
	bool attached;
	bool frags; /* load the program as multi-buffer aware (frames > one UMEM frame) */
	int eps_fd; /* the endpoint-id map, -1 until registered */
};

/* Open the embedded object and attach it to x->ifindex (native mode unless
 * skb_only, generic if native is refused); logs which call failed, why and
 * what to do.  0 or -errno. */
int rmpp_xdp_prog_attach(struct rmpp_link *l, struct xdp_state *x, bool skb_only);
/* Steer x->queue's rmpp frames for ep_id to xsk. */
int rmpp_xdp_prog_register(struct rmpp_link *l, struct xdp_state *x, struct xsk_socket *xsk,
                           uint16_t ep_id);
/* Unregister, detach and close (idempotent). */
void rmpp_xdp_prog_detach(struct xdp_state *x);

#endif
