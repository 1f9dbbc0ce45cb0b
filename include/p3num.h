/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file p3num.h
 * @brief Strict parsing of the numbers a user gives p3stack: command-line
 * options, environment variables, configuration strings.  Internal (not
 * installed).
 *
 * atoi() and strtoul(s, NULL, 0) read "abc" as 0 and "12x" as 12 without a
 * word; a misspelt option then runs a benchmark with the wrong setting.
 * These helpers accept a value only when:
 *   - the whole string is the number (no leading blanks, no trailing text);
 *   - an unsigned value has no sign ("-1" is refused, not wrapped);
 *   - it fits the type (overflow is refused, not saturated);
 *   - it lies in [min, max];
 *   - with P3NUM_SIZE, an optional K, M or G (powers of 1024, either case)
 *     may follow, optionally as KiB/KB/Kb; a lone B is accepted as well;
 *   - with P3NUM_BASE0, 0x (hex) and leading-0 (octal) forms are read as
 *     strtoul(s, NULL, 0) does; otherwise the number is decimal.
 *
 * A refused value gets one message naming the option or variable, the value
 * and what is accepted:
 *     --slice-us: "abc" is not a number (expected 0-100000)
 * The p3num_arg_* and p3num_env_* forms are for programs: they print
 * "PROG: " and that message on stderr and exit with status 2 (usage
 * error).  Libraries call p3num_u64()/p3num_i64()/p3num_dbl() and report
 * the message their own way (nal/shmem: PtlNIInit fails; rmpp: a warning
 * and the default).
 *
 * Header-only (static inline) on purpose: the programs, the convenience
 * libraries and libportals3 each get their own copy, so no link order or
 * duplicate-symbol question arises between them.
 */
#ifndef P3NUM_H
#define P3NUM_H

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h> /* the INT_MAX, LONG_MAX ... callers give as bounds */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/** Also read 0x hex and leading-0 octal (as strtoul base 0). */
#define P3NUM_BASE0 0x1u
/** Accept a K/M/G (x1024^n) suffix, optionally followed by "iB", "B" or "b". */
#define P3NUM_SIZE 0x2u

/** Why a value was refused (0: accepted). */
enum p3num_err { P3NUM_OK = 0, P3NUM_NOT_A_NUMBER, P3NUM_NEGATIVE, P3NUM_OUT_OF_RANGE };

static inline const char *p3num_reason(enum p3num_err e)
{
	return e == P3NUM_NEGATIVE       ? "is negative"
	       : e == P3NUM_OUT_OF_RANGE ? "is out of range"
	                                 : "is not a number";
}

/* The multiplier of a size suffix at *pp (advanced past it), 1 if none. */
static inline uint64_t p3num_suffix(const char **pp)
{
	const char *p = *pp;
	uint64_t mul = 1;

	switch (*p) {
	case 'k':
	case 'K':
		mul = 1ull << 10;
		p++;
		break;
	case 'm':
	case 'M':
		mul = 1ull << 20;
		p++;
		break;
	case 'g':
	case 'G':
		mul = 1ull << 30;
		p++;
		break;
	default:
		break;
	}
	if (mul > 1 && *p == 'i' && p[1] == 'B')
		p++;
	if (*p == 'B' || (mul > 1 && *p == 'b'))
		p++;
	*pp = p;
	return mul;
}

/* Reads the digits of S (no sign) into *V: 0 or why not. */
static inline enum p3num_err p3num_digits(const char *s, unsigned flags, uint64_t *v,
                                          const char **endp)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return P3NUM_NOT_A_NUMBER;
	errno = 0;
	unsigned long long x = strtoull(s, &end, (flags & P3NUM_BASE0) ? 0 : 10);
	if (errno == ERANGE)
		return P3NUM_OUT_OF_RANGE;
	if (errno || end == s)
		return P3NUM_NOT_A_NUMBER;
	*v = x;
	*endp = end;
	return P3NUM_OK;
}

/* Magnitude of S with its suffix applied; *NEG says a '-' led it. */
static inline enum p3num_err p3num_magnitude(const char *s, unsigned flags, uint64_t *mag, int *neg)
{
	const char *p = s ? s : "";
	uint64_t v = 0;

	*neg = *p == '-';
	if (*p == '-' || *p == '+')
		p++;
	enum p3num_err e = p3num_digits(p, flags, &v, &p);
	if (e)
		return e;
	if (flags & P3NUM_SIZE) {
		uint64_t mul = p3num_suffix(&p);
		if (v > UINT64_MAX / mul)
			return *p ? P3NUM_NOT_A_NUMBER : P3NUM_OUT_OF_RANGE;
		v *= mul;
	}
	if (*p)
		return P3NUM_NOT_A_NUMBER;
	*mag = v;
	return P3NUM_OK;
}

/* "expected MIN-MAX" (or "at least MIN" when MAX is the type's limit). */
static inline void p3num_msg_u(char *msg, size_t len, const char *name, const char *s,
                               enum p3num_err e, uint64_t min, uint64_t max, unsigned flags)
{
	const char *unit = (flags & P3NUM_SIZE) ? ", K/M/G suffixes" : "";

	if (!msg || !len)
		return;
	if (max == UINT64_MAX)
		snprintf(msg, len, "%s: \"%s\" %s (expected at least %" PRIu64 "%s)", name,
		         s ? s : "", p3num_reason(e), min, unit);
	else
		snprintf(msg, len, "%s: \"%s\" %s (expected %" PRIu64 "-%" PRIu64 "%s)", name,
		         s ? s : "", p3num_reason(e), min, max, unit);
}

/**
 * Parse S as an unsigned integer in [MIN, MAX] (FLAGS: P3NUM_BASE0,
 * P3NUM_SIZE).  Returns 0 and sets *OUT, or -1 with the message in MSG
 * (MSG may be NULL).  NAME is the option or variable the value came from.
 */
static inline int p3num_u64(const char *name, const char *s, uint64_t min, uint64_t max,
                            unsigned flags, uint64_t *out, char *msg, size_t msglen)
{
	uint64_t v = 0;
	int neg = 0;
	enum p3num_err e = p3num_magnitude(s, flags, &v, &neg);

	if (!e && (neg || (s && *s == '+')))
		e = neg ? P3NUM_NEGATIVE : P3NUM_NOT_A_NUMBER;
	if (e == P3NUM_OUT_OF_RANGE && neg)
		e = P3NUM_NEGATIVE;
	if (!e && (v < min || v > max))
		e = P3NUM_OUT_OF_RANGE;
	if (e) {
		p3num_msg_u(msg, msglen, name, s, e, min, max, flags);
		return -1;
	}
	*out = v;
	return 0;
}

/**
 * Parse S as a signed integer in [MIN, MAX] (FLAGS as for p3num_u64; a
 * leading '-' or '+' is allowed).  Returns 0 and sets *OUT, or -1 with the
 * message in MSG.
 */
static inline int p3num_i64(const char *name, const char *s, int64_t min, int64_t max,
                            unsigned flags, int64_t *out, char *msg, size_t msglen)
{
	uint64_t mag = 0;
	int neg = 0;
	int64_t v = 0;
	enum p3num_err e = p3num_magnitude(s, flags, &mag, &neg);

	if (!e && mag > (uint64_t)INT64_MAX + (uint64_t)neg)
		e = P3NUM_OUT_OF_RANGE;
	if (!e) {
		v = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag)
		        : (int64_t)mag;
		if (v < min || v > max)
			e = P3NUM_OUT_OF_RANGE;
	}
	if (e) {
		if (msg && msglen)
			snprintf(msg, msglen, "%s: \"%s\" %s (expected %" PRId64 " to %" PRId64 ")",
			         name, s ? s : "", p3num_reason(e), min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/**
 * Parse S as a finite decimal number in [MIN, MAX] (strtod's forms, no
 * leading blanks, no trailing text, no inf/nan).  Returns 0 and sets *OUT,
 * or -1 with the message in MSG.
 */
static inline int p3num_dbl(const char *name, const char *s, double min, double max, double *out,
                            char *msg, size_t msglen)
{
	enum p3num_err e = P3NUM_OK;
	double v = 0;
	char *end = NULL;

	if (!s || !*s || isspace((unsigned char)*s))
		e = P3NUM_NOT_A_NUMBER;
	if (!e) {
		errno = 0;
		v = strtod(s, &end);
		if (end == s || *end || isnan(v))
			e = P3NUM_NOT_A_NUMBER;
		else if (errno == ERANGE || !isfinite(v) || v < min || v > max)
			e = P3NUM_OUT_OF_RANGE;
	}
	if (e) {
		if (msg && msglen)
			snprintf(msg, msglen, "%s: \"%s\" %s (expected %g to %g)", name, s ? s : "",
			         p3num_reason(e), min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- programs: print "PROG: message" and exit(2) on a refused value ---- */

static inline void p3num_usage_exit(const char *prog, const char *msg)
{
	fprintf(stderr, "%s: %s\n", prog, msg);
	exit(2);
}

/** The value of option NAME (its argument S) in [MIN, MAX], or exit(2). */
static inline uint64_t p3num_arg_u64(const char *prog, const char *name, const char *s,
                                     uint64_t min, uint64_t max, unsigned flags)
{
	char msg[256];
	uint64_t v = 0;

	if (p3num_u64(name, s, min, max, flags, &v, msg, sizeof(msg)))
		p3num_usage_exit(prog, msg);
	return v;
}

/** As p3num_arg_u64 for a signed value. */
static inline int64_t p3num_arg_i64(const char *prog, const char *name, const char *s, int64_t min,
                                    int64_t max, unsigned flags)
{
	char msg[256];
	int64_t v = 0;

	if (p3num_i64(name, s, min, max, flags, &v, msg, sizeof(msg)))
		p3num_usage_exit(prog, msg);
	return v;
}

/** As p3num_arg_u64 for a decimal fraction. */
static inline double p3num_arg_dbl(const char *prog, const char *name, const char *s, double min,
                                   double max)
{
	char msg[256];
	double v = 0;

	if (p3num_dbl(name, s, min, max, &v, msg, sizeof(msg)))
		p3num_usage_exit(prog, msg);
	return v;
}

/** Environment variable VAR in [MIN, MAX]; DEF when unset or empty; else exit(2). */
static inline uint64_t p3num_env_u64(const char *prog, const char *var, uint64_t def, uint64_t min,
                                     uint64_t max, unsigned flags)
{
	const char *s = getenv(var);

	return s && *s ? p3num_arg_u64(prog, var, s, min, max, flags) : def;
}

#endif /* P3NUM_H */
