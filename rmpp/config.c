/* SPDX-License-Identifier: BSD-3-Clause */
/* config.c - configuration table, counters, logging and address helpers. */
#include "rmpp_int.h"
#include "p3num.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct cfg_desc {
	const char *name;
	size_t off;
	uint64_t def, min, max;
	const char *help;
};

static const struct cfg_desc cfg_table[] = {
#define RMPP_CFG_DESC(NAME, field, def, min, max, help)                                          \
	{#NAME, offsetof(struct rmpp_config, field), def, min, max, help},
	RMPP_CONFIG_TABLE(RMPP_CFG_DESC)
#undef RMPP_CFG_DESC
};

int rmpp_config_init(struct rmpp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < sizeof(cfg_table) / sizeof(cfg_table[0]); i++) {
		const struct cfg_desc *d = &cfg_table[i];
		uint64_t v = d->def;
		char env[64];
		snprintf(env, sizeof(env), "P3_RMPP_%s", d->name);
		const char *s = getenv(env);
		if (s && *s) {
			uint64_t x;
			char msg[200];
			if (p3num_u64(env, s, 0, UINT64_MAX, P3NUM_BASE0, &x, NULL, 0)) {
				/* not a number: the message with the table's range */
				p3num_u64(env, s, d->min, d->max, P3NUM_BASE0, &x, msg, sizeof(msg));
				rmpp_log_emit(RMPP_LOG_WARN, NULL, NULL, "%s, using %" PRIu64, msg,
					      v);
			} else {
				v = x;
				if (v < d->min || v > d->max) {
					uint64_t c = v < d->min ? d->min : d->max;
					rmpp_log_emit(RMPP_LOG_WARN, NULL, NULL,
						      "%s=%s out of range [%" PRIu64 ", %" PRIu64
						      "], using %" PRIu64,
						      env, s, d->min, d->max, c);
					v = c;
				}
			}
		}
		*(uint64_t *)((char *)cfg + d->off) = v;
	}
	return 0;
}

void rmpp_config_print(const struct rmpp_config *cfg, FILE *out)
{
	struct rmpp_config def;
	if (!cfg) {
		rmpp_config_init(&def);
		cfg = &def;
	}
	fprintf(out, "# rmpp configuration (environment P3_RMPP_<NAME>)\n");
	fprintf(out, "# %-20s %12s %12s %12s  %s\n", "NAME", "value", "default", "max", "help");
	for (size_t i = 0; i < sizeof(cfg_table) / sizeof(cfg_table[0]); i++) {
		const struct cfg_desc *d = &cfg_table[i];
		uint64_t v = *(const uint64_t *)((const char *)cfg + d->off);
		fprintf(out, "P3_RMPP_%-18s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "  %s\n", d->name,
			v, d->def, d->max, d->help);
	}
	fprintf(out, "P3_RMPP_FAULT            %s\n",
		getenv("P3_RMPP_FAULT") ? getenv("P3_RMPP_FAULT") : "(off)");
}

static const char *const ctr_names[] = {
#define RMPP_CTR_NAME(name, help) #name,
	RMPP_COUNTERS(RMPP_CTR_NAME)
#undef RMPP_CTR_NAME
};
static const char *const ctr_help[] = {
#define RMPP_CTR_HELP(name, help) help,
	RMPP_COUNTERS(RMPP_CTR_HELP)
#undef RMPP_CTR_HELP
};

void rmpp_counters_print(const struct rmpp_counters *c, FILE *out)
{
	const uint64_t *v = (const uint64_t *)c;
	for (size_t i = 0; i < sizeof(ctr_names) / sizeof(ctr_names[0]); i++)
		if (v[i])
			fprintf(out, "  %-18s %12" PRIu64 "  %s\n", ctr_names[i], v[i], ctr_help[i]);
}

void rmpp_log_emit(int level, const struct rmpp_ep *ep, const struct rmpp_addr *peer,
		   const char *fmt, ...)
{
	static const char *const lvl[] = {"error", "warn", "info", "debug", "trace"};
	char pbuf[64], msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level < 0)
		level = 0;
	if (level > 4)
		level = 4;
	fprintf(stderr, "rmpp[%s] ep %u%s%s: %s\n", lvl[level], ep ? ep->ep_id : 0,
		peer ? " peer " : "", peer ? rmpp_addr_str(peer, pbuf, sizeof(pbuf)) : "", msg);
}

void rmpp_addr_udp(struct rmpp_addr *addr, uint32_t ip_be, uint16_t port_be, uint16_t ep_id)
{
	memset(addr, 0, sizeof(*addr));
	addr->ra_link = RMPP_LINK_UDP;
	addr->ra_ep = ep_id;
	addr->u.udp.ip = ip_be;
	addr->u.udp.port = port_be;
}

void rmpp_addr_ether(struct rmpp_addr *addr, const uint8_t mac[6], uint16_t ep_id)
{
	memset(addr, 0, sizeof(*addr));
	addr->ra_link = RMPP_LINK_ETHER;
	addr->ra_ep = ep_id;
	memcpy(addr->u.mac, mac, 6);
}

int rmpp_addr_equal(const struct rmpp_addr *a, const struct rmpp_addr *b)
{
	if (a->ra_link != b->ra_link || a->ra_ep != b->ra_ep)
		return 0;
	if (a->ra_link == RMPP_LINK_UDP)
		return a->u.udp.ip == b->u.udp.ip && a->u.udp.port == b->u.udp.port;
	return memcmp(a->u.mac, b->u.mac, 6) == 0;
}

const char *rmpp_addr_str(const struct rmpp_addr *addr, char *buf, size_t len)
{
	if (addr->ra_link == RMPP_LINK_UDP) {
		char ip[INET_ADDRSTRLEN];
		struct in_addr in = {.s_addr = addr->u.udp.ip};
		inet_ntop(AF_INET, &in, ip, sizeof(ip));
		snprintf(buf, len, "udp:%s:%u/%u", ip, ntohs(addr->u.udp.port), addr->ra_ep);
	} else {
		const uint8_t *m = addr->u.mac;
		snprintf(buf, len, "ether:%02x:%02x:%02x:%02x:%02x:%02x/%u", m[0], m[1], m[2], m[3],
			 m[4], m[5], addr->ra_ep);
	}
	return buf;
}

const char *rmpp_peer_event_name(enum rmpp_peer_event ev)
{
	switch (ev) {
	case RMPP_PEER_DEAD:
		return "dead";
	case RMPP_PEER_RESTARTED:
		return "restarted";
	case RMPP_PEER_CLOSED:
		return "closed";
	case RMPP_PEER_RESET:
		return "reset";
	}
	return "?";
}
