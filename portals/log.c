/* SPDX-License-Identifier: BSD-3-Clause */
/* log.c - messages to stderr: p3_log (process-wide), p3_lib_log (NALs, per
 * NI) and p3_dbg (PTL_DEBUG / PtlNIDebug categories). */
#include "lib.h"
#include "p3num.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const p3_level_name[] = {"error", "warning", "info", "debug"};

static void p3_vlog(const char *who, const struct p3_lib *lib, int level, const char *fmt,
		    va_list ap)
{
	char buf[512];
	int saved = errno;
	int n;

	if (level < 0)
		level = 0;
	if (level > 3)
		level = 3;
	if (lib && lib->lib_id.pid != PTL_PID_ANY)
		n = snprintf(buf, sizeof(buf), "p3stack[%s] %u:%u %s: ", who,
			     (unsigned)lib->lib_id.nid, (unsigned)lib->lib_id.pid,
			     p3_level_name[level]);
	else
		n = snprintf(buf, sizeof(buf), "p3stack[%s] %s: ", who, p3_level_name[level]);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = 0;
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	/* one write per message so lines from ranks do not interleave */
	fprintf(stderr, "%s\n", buf);
	errno = saved;
}

void p3_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level >= 3 && !p3_debug_env_mask())
		return;
	va_start(ap, fmt);
	p3_vlog("core", NULL, level, fmt, ap);
	va_end(ap);
}

void p3_lib_log(const struct p3_lib *lib, int level, const char *fmt, ...)
{
	va_list ap;

	/* lib may be NULL: a NAL's host driver with no local LIB (offload) */
	if (level >= 3 && !(lib ? atomic_load_explicit(&((struct p3_lib *)lib)->lib_debug,
						       memory_order_relaxed)
				: p3_debug_env_mask()))
		return;
	va_start(ap, fmt);
	p3_vlog(lib && lib->lib_nal ? lib->lib_nal->name : "core", lib, level, fmt, ap);
	va_end(ap);
}

void p3_dbg(const struct p3_lib *lib, unsigned int mask, const char *fmt, ...)
{
	va_list ap;

	(void)mask;
	va_start(ap, fmt);
	p3_vlog("core", lib, 3, fmt, ap);
	va_end(ap);
}

static const struct {
	const char *name;
	unsigned int mask;
} p3_dbg_names[] = {
	{"none", PTL_DBG_NONE},   {"drop", PTL_DBG_DROP},   {"request", PTL_DBG_REQUEST},
	{"delivery", PTL_DBG_DELIVERY}, {"md", PTL_DBG_MD}, {"me", PTL_DBG_ME},
	{"eq", PTL_DBG_EQ},       {"parse", PTL_DBG_PARSE}, {"nal", PTL_DBG_NI_ALL},
	{"ni", PTL_DBG_NI_ALL},   {"all", PTL_DBG_ALL},
};

static unsigned int p3_debug_parse(const char *s)
{
	unsigned int mask = 0;
	char buf[256], *tok, *save = NULL;
	uint64_t v;

	if (!p3num_u64("PTL_DEBUG", s, 0, UINT_MAX, P3NUM_BASE0, &v, NULL, 0))
		return (unsigned int)v;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",:+ ", &save); tok; tok = strtok_r(NULL, ",:+ ", &save)) {
		size_t i;
		for (i = 0; i < sizeof(p3_dbg_names) / sizeof(p3_dbg_names[0]); i++)
			if (!strcasecmp(tok, p3_dbg_names[i].name))
				break;
		if (i == sizeof(p3_dbg_names) / sizeof(p3_dbg_names[0])) {
			fprintf(stderr,
				"p3stack[core] warning: PTL_DEBUG: unknown category '%s' ignored "
				"(known: drop request delivery md me eq parse nal all, or a number)\n",
				tok);
			continue;
		}
		mask |= p3_dbg_names[i].mask;
	}
	return mask;
}

unsigned int p3_debug_env_mask(void)
{
	static _Atomic int done;
	static _Atomic unsigned int mask;

	if (!atomic_load_explicit(&done, memory_order_acquire)) {
		const char *s = getenv("PTL_DEBUG");
		atomic_store(&mask, s ? p3_debug_parse(s) : 0);
		atomic_store_explicit(&done, 1, memory_order_release);
	}
	return atomic_load_explicit(&mask, memory_order_relaxed);
}
