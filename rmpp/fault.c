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
 *   burst_us=T   ...or the frames of its first T microseconds, whichever
 *                ends first (default 10000; 0: the count alone ends it)
 *   dup=P        deliver the frame twice
 *   reorder=P    hold the frame back delay_us (later frames overtake it)
 *   delay_us=D   hold time for reorder (default 200)
 *   corrupt=P    flip one random bit anywhere in the frame
 *   truncate=P   cut the frame to a random shorter length
 *   pad=P        append 1..64 zero bytes (link padding)
 *   seed=N       PRNG seed (default 1); same seed, same faults
 *   only=K+K..   the faults above act only on frames of these kinds (hello,
 *                ack, probe, reset, close, data, eager, rts, cts, rdata,
 *                done, nak, rnr); other frames pass untouched and draw no
 *                random numbers, so a seed replays the same drops
 *   maxlen=N     drop every frame longer than N bytes, whatever its kind
 *                (a path-MTU black hole)
 * P is a probability in [0,1].  "off" or "" disables.
 */
#include "rmpp_int.h"
#include "p3num.h"

#include <stdlib.h>
#include <string.h>

struct rmpp_held {
	struct rmpp_held *next;
	uint64_t release;
	size_t len;
	struct rmpp_addr src;
	uint8_t data[];
};

/* Frame kinds for only=; a frame has one packet-type kind and, for DATA and
 * RNR acks, one message-operation kind as well. */
static const char *const kind_names[] = {"hello", "ack", "probe", "reset", "close", "data", "eager",
					 "rts",   "cts", "rdata", "done",  "nak",   "rnr"};
enum {
	K_HELLO = 1u << 0,
	K_ACK = 1u << 1,
	K_PROBE = 1u << 2,
	K_RESET = 1u << 3,
	K_CLOSE = 1u << 4,
	K_DATA = 1u << 5,
	K_EAGER = 1u << 6,
	K_RTS = 1u << 7,
	K_CTS = 1u << 8,
	K_RDATA = 1u << 9,
	K_DONE = 1u << 10,
	K_NAK = 1u << 11,
	K_RNR = 1u << 12,
};

/* "ack+cts+done" -> kind mask; 0 on an unknown name. */
static unsigned parse_kinds(const char *v)
{
	unsigned mask = 0;
	while (*v) {
		size_t n = strcspn(v, "+");
		unsigned bit = 0;
		for (unsigned i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
			if (strlen(kind_names[i]) == n && !strncmp(v, kind_names[i], n))
				bit = 1u << i;
		if (!bit)
			return 0;
		mask |= bit;
		v += n;
		if (*v == '+')
			v++;
	}
	return mask;
}

static unsigned mop_kind(unsigned mop)
{
	switch (mop) {
	case RMPP_MOP_EAGER_FIRST:
	case RMPP_MOP_EAGER_CONT:
		return K_EAGER;
	case RMPP_MOP_RTS:
		return K_RTS;
	case RMPP_MOP_CTS:
		return K_CTS;
	case RMPP_MOP_RDATA:
		return K_RDATA;
	case RMPP_MOP_DONE:
		return K_DONE;
	case RMPP_MOP_NAK:
		return K_NAK;
	case RMPP_MOP_RNR:
		return K_RNR;
	default:
		return 0;
	}
}

/* Kind mask of a parsed view (0: unparsable, matches nothing). */
static unsigned view_kinds(const struct rmpp_fault_view *v)
{
	switch (v->type) {
	case RMPP_PKT_HELLO:
	case RMPP_PKT_HELLO_ACK:
		return K_HELLO;
	case RMPP_PKT_ACK:
		return K_ACK | mop_kind(v->mop);
	case RMPP_PKT_PROBE:
		return K_PROBE;
	case RMPP_PKT_RESET:
		return K_RESET;
	case RMPP_PKT_CLOSE:
		return K_CLOSE;
	case RMPP_PKT_DATA:
		return K_DATA | mop_kind(v->mop);
	default:
		return 0;
	}
}

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
	n.burst_us = RMPP_FAULT_BURST_US;
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
				if (p3num_dbl(k, v, 0, 1, p, NULL, 0))
					goto bad;
			} else if (!strcmp(k, "burst_us")) {
				if (p3num_u64(k, v, 0, UINT64_MAX, P3NUM_BASE0, &n.burst_us, NULL,
				              0))
					goto bad;
			} else if (!strcmp(k, "delay_us")) {
				if (p3num_u64(k, v, 0, UINT64_MAX, P3NUM_BASE0, &n.delay_us, NULL, 0))
					goto bad;
			} else if (!strcmp(k, "seed")) {
				if (p3num_u64(k, v, 0, UINT64_MAX, P3NUM_BASE0, &n.seed, NULL, 0))
					goto bad;
			} else if (!strcmp(k, "only")) {
				n.only = parse_kinds(v);
				if (!n.only)
					goto bad;
			} else if (!strcmp(k, "maxlen")) {
				if (p3num_u64(k, v, RMPP_HDR_LEN, UINT64_MAX, P3NUM_BASE0, &n.maxlen,
					      NULL, 0))
					goto bad;
			} else if (!strcmp(k, "burst")) {
				char lo[16];
				const char *dash = strchr(v, '-');
				size_t len = dash ? (size_t)(dash - v) : strlen(v);
				uint64_t a, b;
				if (len >= sizeof(lo))
					goto bad;
				snprintf(lo, sizeof(lo), "%.*s", (int)len, v);
				if (p3num_u64(k, lo, 1, 1000000, P3NUM_BASE0, &a, NULL, 0) ||
				    p3num_u64(k, dash ? dash + 1 : lo, a, 1000000, P3NUM_BASE0, &b,
					      NULL, 0))
					goto bad;
				n.burst_min = (unsigned)a;
				n.burst_max = (unsigned)b;
			} else {
				goto bad;
			}
		}
		free(dup);
		n.enabled = n.drop > 0 || n.dup > 0 || n.reorder > 0 || n.corrupt > 0 ||
			    n.truncate > 0 || n.pad > 0 || n.maxlen > 0;
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

/* The parsed view handed to the hook and to only= (type 0 if unparsable). */
static void fault_view(struct rmpp_ep *ep, const struct rmpp_rxframe *fr, struct rmpp_fault_view *v)
{
	struct rmpp_pkt pkt;
	memset(v, 0, sizeof(*v));
	if (rmpp_pkt_parse(fr->data, fr->len, 0, &pkt) == 0) {
		v->type = pkt.type;
		v->flags = pkt.flags;
		v->psn = pkt.psn;
		v->payload_len = pkt.payload_len;
		v->tsecr = pkt.tsecr;
		if (pkt.flags & RMPP_F_MSG) {
			v->mop = pkt.m.mop;
			v->msn = pkt.m.msn;
			v->offset = pkt.m.offset;
		}
	}
	v->now_us = ep->now;
	v->index = ep->fault.index;
	v->frame_len = (uint32_t)fr->len;
}

/* The seeded random faults; returns the action (PASS, or the frame was
 * consumed by the pad fault when *held is set). */
static int fault_random(struct rmpp_ep *ep, const struct rmpp_rxframe *fr, bool *held)
{
	struct rmpp_fault *f = &ep->fault;
	if (f->burst_left && f->burst_us && ep->now >= f->burst_end)
		f->burst_left = 0; /* the loss event is over: see RMPP_FAULT_BURST_US */
	if (f->burst_left) {
		f->burst_left--;
		return RMPP_FAULT_DROP;
	}
	if (f->drop > 0 && rng_unit(f) < f->drop) {
		unsigned span = f->burst_max - f->burst_min + 1;
		f->burst_left = f->burst_min - 1 + (unsigned)(rng_next(f) % span);
		f->burst_end = ep->now + f->burst_us;
		return RMPP_FAULT_DROP;
	}
	if (f->dup > 0 && rng_unit(f) < f->dup)
		return RMPP_FAULT_DUP;
	if (f->corrupt > 0 && rng_unit(f) < f->corrupt)
		return RMPP_FAULT_CORRUPT;
	if (f->truncate > 0 && rng_unit(f) < f->truncate)
		return RMPP_FAULT_TRUNCATE;
	if (f->reorder > 0 && rng_unit(f) < f->reorder)
		return RMPP_FAULT_DELAY;
	if (f->pad > 0 && rng_unit(f) < f->pad) {
		hold(ep, fr->data, fr->len, 1 + rng_next(f) % 64, &fr->src, ep->now);
		*held = true;
	}
	return RMPP_FAULT_PASS;
}

/* Hook first, then the black hole (maxlen), then the random faults on the
 * frames selected by only=. */
static int fault_decide(struct rmpp_ep *ep, const struct rmpp_rxframe *fr, bool *held)
{
	struct rmpp_fault *f = &ep->fault;
	struct rmpp_fault_view v;
	bool viewed = false;
	if (f->hook) {
		fault_view(ep, fr, &v);
		viewed = true;
		int action = f->hook(f->hook_arg, &v);
		if (action != RMPP_FAULT_PASS)
			return action;
	}
	if (!f->enabled)
		return RMPP_FAULT_PASS;
	if (f->maxlen && fr->len > f->maxlen)
		return RMPP_FAULT_DROP;
	if (f->only) {
		if (!viewed)
			fault_view(ep, fr, &v);
		if (!(view_kinds(&v) & f->only))
			return RMPP_FAULT_PASS;
	}
	return fault_random(ep, fr, held);
}

void rmpp_fault_rx(struct rmpp_ep *ep, const struct rmpp_rxframe *fr)
{
	struct rmpp_fault *f = &ep->fault;
	bool held = false;
	f->index++;
	int action = fault_decide(ep, fr, &held);
	if (held)
		return;
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
