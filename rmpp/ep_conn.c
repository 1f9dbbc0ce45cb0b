/* SPDX-License-Identifier: BSD-3-Clause */
/* ep_conn.c - an endpoint's connection table: lookup by peer address and,
 * for direct frames, by node, endpoint id and epoch; creation; the work list
 * of connections with output pending. */
#include "rmpp_int.h"

#include <stdlib.h>

static unsigned addr_hash(const struct rmpp_addr *a)
{
	uint32_t h = a->ra_link * 31u + a->ra_ep;
	if (a->ra_link == RMPP_LINK_UDP)
		h = h * 2654435761u ^ a->u.udp.ip ^ ((uint32_t)a->u.udp.port << 16);
	else
		for (int i = 0; i < 6; i++)
			h = h * 31u + a->u.mac[i];
	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return h % RMPP_CONN_HASH;
}

struct rmpp_conn *rmpp_conn_find(struct rmpp_ep *ep, const struct rmpp_addr *peer)
{
	for (struct rmpp_conn *c = ep->hash[addr_hash(peer)]; c; c = c->hnext)
		if (rmpp_addr_equal(&c->peer, peer))
			return c;
	return NULL;
}

/* Connections by (ip or MAC, endpoint id), whatever the port: a peer's
 * direct frames come from its connected send socket's ephemeral port. */
static unsigned node_hash(const struct rmpp_addr *a)
{
	struct rmpp_addr k = *a;
	if (k.ra_link == RMPP_LINK_UDP)
		k.u.udp.port = 0;
	return addr_hash(&k);
}

/* The connection a direct frame from src belongs to: same node and endpoint
 * id, and the peer's current epoch (so a frame of a former incarnation, or
 * of an unrelated endpoint that reuses the id on another port, never
 * matches a live connection). */
struct rmpp_conn *rmpp_conn_find_direct(struct rmpp_ep *ep, const struct rmpp_addr *src,
                                        uint32_t src_epoch)
{
	if (src->ra_link != RMPP_LINK_UDP || !src_epoch)
		return NULL;
	for (struct rmpp_conn *c = ep->nhash[node_hash(src)]; c; c = c->nhnext)
		if (c->peer_known && c->peer_epoch == src_epoch && c->peer.ra_ep == src->ra_ep &&
		    c->peer.u.udp.ip == src->u.udp.ip) {
			ep->ctr.rx_direct++;
			return c;
		}
	return NULL;
}

struct rmpp_conn *rmpp_conn_create(struct rmpp_ep *ep, const struct rmpp_addr *peer)
{
	struct rmpp_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->peer = *peer;
	if (rmpp_rel_conn_init(ep, c) != 0) {
		free(c);
		return NULL;
	}
	unsigned h = addr_hash(peer);
	c->hnext = ep->hash[h];
	ep->hash[h] = c;
	h = node_hash(peer);
	c->nhnext = ep->nhash[h];
	ep->nhash[h] = c;
	c->lnext = ep->conns;
	ep->conns = c;
	ep->nconns++;
	return c;
}

void rmpp_conn_want_output(struct rmpp_ep *ep, struct rmpp_conn *c)
{
	if (c->in_work)
		return;
	c->in_work = true;
	c->wnext = ep->work;
	ep->work = c;
}
