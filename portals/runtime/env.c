/* SPDX-License-Identifier: BSD-3-Clause */
/* env.c - the reference runtime's launcher environment: PTL_MY_RID,
 * PTL_NIDMAP, PTL_PIDMAP (colon-separated, one entry per rank), PTL_MY_JID.
 * Parsing is strict: a malformed value is an error naming the variable and
 * the offending token, never a silent default. */
#include "config.h"

#include "rt.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy at most 40 bytes of a token for an error message. */
static void rt_token(char *dst, size_t dstlen, const char *s, size_t len)
{
	size_t n = len < 40 ? len : 40;

	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
	if (n < len && dstlen > n + 3)
		strcat(dst, "...");
}

/* Parse s[0..len) as an unsigned 32-bit number; 0 or -1. */
static int rt_parse_num(const char *s, size_t len, uint32_t *out_p)
{
	uint64_t v = 0;
	size_t i = 0;
	int base = 10;

	if (len == 0)
		return -1;
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	for (; i < len; i++) {
		int d;
		char c = s[i];

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
		if (v > UINT32_MAX)
			return -1;
	}
	*out_p = (uint32_t)v;
	return 0;
}

/* Parse s[0..len) as a dotted IPv4 address (host byte order); 0 or -1. */
static int rt_parse_ipv4(const char *s, size_t len, uint32_t *out_p)
{
	char buf[INET_ADDRSTRLEN];
	struct in_addr a;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -1;
	*out_p = ntohl(a.s_addr);
	return 0;
}

int p3_rt_parse_u32(const char *var, const char *s, uint32_t *out_p, char *err, size_t errlen)
{
	char tok[48];
	size_t len = strlen(s);

	if (rt_parse_num(s, len, out_p) == 0)
		return 0;
	rt_token(tok, sizeof(tok), s, len);
	snprintf(err, errlen, "%s: bad value '%s': expected an unsigned 32-bit number", var, tok);
	return -1;
}

int p3_rt_parse_map(const char *var, const char *s, int allow_ipv4, uint32_t **map_p,
                    unsigned int *n_p, char *err, size_t errlen)
{
	unsigned int n = 1, i = 0;
	uint32_t *map;
	const char *p;

	if (*s == '\0') {
		snprintf(err, errlen, "%s: empty", var);
		return -1;
	}
	for (p = s; *p; p++) {
		if (*p == ':' && ++n > P3_RT_MAX_RANKS) {
			snprintf(err, errlen, "%s: more than %u entries", var, P3_RT_MAX_RANKS);
			return -1;
		}
	}
	map = calloc(n, sizeof(*map));
	if (!map) {
		snprintf(err, errlen, "%s: out of memory for %u entries", var, n);
		return -1;
	}
	for (p = s;; i++) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char tok[48];

		if (rt_parse_num(p, len, &map[i]) != 0 &&
		    !(allow_ipv4 && rt_parse_ipv4(p, len, &map[i]) == 0)) {
			rt_token(tok, sizeof(tok), p, len);
			snprintf(err, errlen, "%s: bad entry '%s' (entry %u of %u): expected %s",
			         var, tok, i, n,
			         allow_ipv4 ? "a number or an IPv4 address" : "a number");
			free(map);
			return -1;
		}
		if (map[i] == UINT32_MAX) {
			rt_token(tok, sizeof(tok), p, len);
			snprintf(
			    err, errlen,
			    "%s: bad entry '%s' (entry %u of %u): 0xffffffff is reserved (ANY)",
			    var, tok, i, n);
			free(map);
			return -1;
		}
		if (!end)
			break;
		p = end + 1;
	}
	*map_p = map;
	*n_p = n;
	return 0;
}

int p3_rt_env_read(struct p3_rt_env *env, char *err, size_t errlen)
{
	const char *rid = getenv("PTL_MY_RID");
	const char *nids = getenv("PTL_NIDMAP");
	const char *pids = getenv("PTL_PIDMAP");
	const char *jid = getenv("PTL_MY_JID");
	unsigned int nn = 0, np = 0;
	uint32_t v;

	memset(env, 0, sizeof(*env));
	if (jid) {
		if (p3_rt_parse_u32("PTL_MY_JID", jid, &v, err, errlen) != 0)
			return -1;
		env->re_have_jid = 1;
		env->re_jid = v;
	}
	if (!rid && !nids && !pids)
		return 0;
	if (!rid || !nids || !pids) {
		snprintf(err, errlen, "%s is not set but %s is: the launcher must set all three",
		         !rid    ? "PTL_MY_RID"
		         : !nids ? "PTL_NIDMAP"
		                 : "PTL_PIDMAP",
		         rid    ? "PTL_MY_RID"
		         : nids ? "PTL_NIDMAP"
		                : "PTL_PIDMAP");
		return -1;
	}
	if (p3_rt_parse_u32("PTL_MY_RID", rid, &v, err, errlen) != 0)
		return -1;
	if (p3_rt_parse_map("PTL_NIDMAP", nids, 1, &env->re_nidmap, &nn, err, errlen) != 0)
		return -1;
	if (p3_rt_parse_map("PTL_PIDMAP", pids, 0, &env->re_pidmap, &np, err, errlen) != 0)
		goto free_nidmap;
	if (nn != np) {
		snprintf(err, errlen, "PTL_NIDMAP has %u entries but PTL_PIDMAP has %u", nn, np);
		goto free_pidmap;
	}
	if (v >= nn) {
		snprintf(err, errlen, "PTL_MY_RID: bad value '%s': the maps have only %u entries",
		         rid, nn);
		goto free_pidmap;
	}
	env->re_present = 1;
	env->re_rank = v;
	env->re_nranks = nn;
	return 0;

free_pidmap:
	free(env->re_pidmap);
free_nidmap:
	free(env->re_nidmap);
	memset(env, 0, sizeof(*env));
	return -1;
}

void p3_rt_env_free(struct p3_rt_env *env)
{
	free(env->re_nidmap);
	free(env->re_pidmap);
	memset(env, 0, sizeof(*env));
}
