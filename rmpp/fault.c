/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault.c - seeded fault-injection shim between the link and the reliable
 * layer.  Always compiled, off by default.  It acts on received frames (the
 * sender's capture shows what was really sent), as rmpp.md recommends.
 *
 * Grammar (P3_RMPP_FAULT or rmpp_fault_set()): comma-separated key=value
 *   drop=P       probability that a loss event starts at a frame
 *   burst=A-B    each loss event drops A..B consecutive frames (default 1-1);
 *                burst=N means N-N
 *   dup=P        deliver the frame twice
 *   reorder=P    hold the frame back delay_us (later frames overtake it)
 *   delay_us=D   hold time for reorder (default 200)
 *   corrupt=P    flip one random bit anywhere in the frame
 *   truncate=P   cut the frame to a random shorter length
 *   pad=P        append 1..64 zero bytes (link padding)
 *   seed=N       PRNG seed (default 1); same seed, same faults
 * P is a probability in [0,1].  "off" or "" disables.
 */
#include "rmpp_int.h"

#include <stdlib.h>
#include <string.h>

struct rmpp_held {
	struct rmpp_held *next;
	uint64_t release;
	size_t len;
	struct rmpp_addr src;
	uint8_t data[];
};

static uint64_t rng_next(struct rmpp_fault *f)
{
	/* splitmix64 */
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(struct rmpp_fault *f)
{
	return (double)(rng_next(f) >> 11) * (1.0 / 9007199254740992.0);
}

int rmpp_fault_parse(struct rmpp_fault *f, const char *spec)
{
	struct rmpp_fault n = {0};
	n.burst_min = n.burst_max = 1;
	n.delay_us = 200;
	n.seed = 1;
	n.hook = f->hook;
	n.hook_arg = f->hook_arg;
	n.held = f->held;
	if (spec && *spec && strcmp(spec, "off") != 0) {
		char *dup = strdup(spec), *save = NULL;
		if (!dup)
			return -ENOMEM;
		for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');
			if (!eq)
				goto bad;
			*eq = 0;
			const char *k = tok, *v = eq + 1;
			char *end;
			double *p = NULL;
			if (!strcmp(k, "drop"))
				p = &n.drop;
			else if (!strcmp(k, "dup"))
				p = &n.dup;
			else if (!strcmp(k, "reorder"))
				p = &n.reorder;
			else if (!strcmp(k, "corrupt"))
				p = &n.corrupt;
			else if (!strcmp(k, "truncate"))
				p = &n.truncate;
			else if (!strcmp(k, "pad"))
				p = &n.pad;
			if (p) {
				*p = strtod(v, &end);
				if (*end || *p < 0 || *p > 1)
					goto bad;
			} else if (!strcmp(k, "delay_us")) {
				n.delay_us = strtoull(v, &end, 0);
				if (*end)
					goto bad;
			} else if (!strcmp(k, "seed")) {
				n.seed = strtoull(v, &end, 0);
				if (*end)
					goto bad;
			} else if (!strcmp(k, "burst")) {
				unsigned long a = strtoul(v, &end, 0), b = a;
				if (*end == '-')
					b = strtoul(end + 1, &end, 0);
				if (*end || a < 1 || b < a || b > 1000000)
					goto bad;
				n.burst_min = (unsigned)a;
				n.burst_max = (unsigned)b;
			} else {
				goto bad;
			}
		}
		free(dup);
		n.enabled = n.drop > 0 || n.dup > 0 || n.reorder > 0 || n.corrupt > 0 ||
			    n.truncate > 0 || n.pad > 0;
		goto ok;
bad:
		free(dup);
		return -EINVAL;
	}
ok:
	n.rng = n.seed;
	*f = n;
	return 0;
}

int rmpp_fault_set(struct rmpp_ep *ep, const char *spec)
{
	pthread_mutex_lock(&ep->lock);
	int rc = rmpp_fault_parse(&ep->fault, spec);
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

void rmpp_fault_set_hook(struct rmpp_ep *ep, rmpp_fault_fn fn, void *arg)
{
	pthread_mutex_lock(&ep->lock);
	ep->fault.hook = fn;
	ep->fault.hook_arg = arg;
	pthread_mutex_unlock(&ep->lock);
}

static void hold(struct rmpp_ep *ep, const uint8_t *data, size_t len, size_t pad,
		 const struct rmpp_addr *src, uint64_t release)
{
	struct rmpp_held *h = malloc(sizeof(*h) + len + pad);
	if (!h)
		return;
	memcpy(h->data, data, len);
	memset(h->data + len, 0, pad);
	h->len = len + pad;
	h->src = *src;
	h->release = release;
	struct rmpp_held **pp = &ep->fault.held;
	while (*pp && (*pp)->release <= release)
		pp = &(*pp)->next;
	h->next = *pp;
	*pp = h;
}

void rmpp_fault_rx(struct rmpp_ep *ep, const struct rmpp_rxframe *fr)
{
	struct rmpp_fault *f = &ep->fault;
	int action = RMPP_FAULT_PASS;
	f->index++;
	if (f->hook) {
		struct rmpp_pkt pkt;
		struct rmpp_fault_view v = {0};
		if (rmpp_pkt_parse(fr->data, fr->len, 0, &pkt) == 0) {
			v.type = pkt.type;
			v.flags = pkt.flags;
			v.psn = pkt.psn;
			v.payload_len = pkt.payload_len;
			if (pkt.flags & RMPP_F_MSG) {
				v.mop = pkt.m.mop;
				v.msn = pkt.m.msn;
				v.offset = pkt.m.offset;
			}
		}
		v.now_us = ep->now;
		v.index = f->index;
		action = f->hook(f->hook_arg, &v);
	}
	if (action == RMPP_FAULT_PASS && f->enabled) {
		if (f->burst_left) {
			f->burst_left--;
			action = RMPP_FAULT_DROP;
		} else if (f->drop > 0 && rng_unit(f) < f->drop) {
			unsigned span = f->burst_max - f->burst_min + 1;
			f->burst_left = f->burst_min - 1 + (unsigned)(rng_next(f) % span);
			action = RMPP_FAULT_DROP;
		} else if (f->dup > 0 && rng_unit(f) < f->dup) {
			action = RMPP_FAULT_DUP;
		} else if (f->corrupt > 0 && rng_unit(f) < f->corrupt) {
			action = RMPP_FAULT_CORRUPT;
		} else if (f->truncate > 0 && rng_unit(f) < f->truncate) {
			action = RMPP_FAULT_TRUNCATE;
		} else if (f->reorder > 0 && rng_unit(f) < f->reorder) {
			action = RMPP_FAULT_DELAY;
		} else if (f->pad > 0 && rng_unit(f) < f->pad) {
			hold(ep, fr->data, fr->len, 1 + rng_next(f) % 64, &fr->src, ep->now);
			return;
		}
	}
	switch (action) {
	case RMPP_FAULT_DROP:
		ep->ctr.fault_drops++;
		return;
	case RMPP_FAULT_DUP:
		ep->ctr.fault_dups++;
		rmpp_ep_rx_frame(ep, fr->data, fr->len, &fr->src);
		rmpp_ep_rx_frame(ep, fr->data, fr->len, &fr->src);
		return;
	case RMPP_FAULT_CORRUPT:
		if (fr->len) {
			size_t at = rng_next(f) % fr->len;
			fr->data[at] ^= (uint8_t)(1u << (rng_next(f) % 8));
		}
		ep->ctr.fault_corrupts++;
		rmpp_ep_rx_frame(ep, fr->data, fr->len, &fr->src);
		return;
	case RMPP_FAULT_TRUNCATE:
		ep->ctr.fault_truncs++;
		rmpp_ep_rx_frame(ep, fr->data, fr->len ? rng_next(f) % fr->len : 0, &fr->src);
		return;
	case RMPP_FAULT_DELAY:
		ep->ctr.fault_reorders++;
		hold(ep, fr->data, fr->len, 0, &fr->src, ep->now + f->delay_us);
		return;
	default:
		rmpp_ep_rx_frame(ep, fr->data, fr->len, &fr->src);
		return;
	}
}

uint64_t rmpp_fault_poll(struct rmpp_ep *ep, uint64_t now)
{
	while (ep->fault.held && ep->fault.held->release <= now) {
		struct rmpp_held *h = ep->fault.held;
		ep->fault.held = h->next;
		rmpp_ep_rx_frame(ep, h->data, h->len, &h->src);
		free(h);
	}
	return ep->fault.held ? ep->fault.held->release : 0;
}

void rmpp_fault_free(struct rmpp_fault *f)
{
	while (f->held) {
		struct rmpp_held *h = f->held;
		f->held = h->next;
		free(h);
	}
}
