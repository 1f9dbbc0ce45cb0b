/* SPDX-License-Identifier: BSD-3-Clause */
/* ptl3_atomic_math.c - the fi_atomic(3) operations on one datatype, applied
 * at the target by its provider (ptl3_atomic.c): which (datatype, op) pairs
 * are offered, and applying one to an array in registered memory.
 *
 * Offered: the eight integer types with every operation; float and double
 * with min/max/sum/prod, the logical ones, read/write and the compare-swap
 * family (no bitwise ops, no mswap: not defined on floating point); float
 * and double complex with sum/prod, read/write, cswap and cswap_ne (the
 * orderings are not defined on complex numbers).  128-bit integers and long
 * double are not offered.  Elements are copied in and out with memcpy: a
 * region's offset need not be aligned for the type.  Signed integer sums and
 * products wrap (computed in the unsigned type), as the hardware providers'. */
#include "config.h"

#include <complex.h>
#include <string.h>

#include "ptl3.h"

#define CSWAP_CASES(d, s, c)                                                                       \
	case FI_CSWAP:                                                                             \
		if ((c) == (d))                                                                    \
			(d) = (s);                                                                 \
		break;                                                                             \
	case FI_CSWAP_NE:                                                                          \
		if ((c) != (d))                                                                    \
			(d) = (s);                                                                 \
		break

#define ORDER_CASES(d, s, c)                                                                       \
	case FI_MIN:                                                                               \
		if ((s) < (d))                                                                     \
			(d) = (s);                                                                 \
		break;                                                                             \
	case FI_MAX:                                                                               \
		if ((s) > (d))                                                                     \
			(d) = (s);                                                                 \
		break;                                                                             \
	case FI_CSWAP_LE:                                                                          \
		if ((c) <= (d))                                                                    \
			(d) = (s);                                                                 \
		break;                                                                             \
	case FI_CSWAP_LT:                                                                          \
		if ((c) < (d))                                                                     \
			(d) = (s);                                                                 \
		break;                                                                             \
	case FI_CSWAP_GE:                                                                          \
		if ((c) >= (d))                                                                    \
			(d) = (s);                                                                 \
		break;                                                                             \
	case FI_CSWAP_GT:                                                                          \
		if ((c) > (d))                                                                     \
			(d) = (s);                                                                 \
		break;                                                                             \
	case FI_LOR:                                                                               \
		(d) = ((d) != 0) || ((s) != 0);                                                    \
		break;                                                                             \
	case FI_LAND:                                                                              \
		(d) = ((d) != 0) && ((s) != 0);                                                    \
		break;                                                                             \
	case FI_LXOR:                                                                              \
		(d) = ((d) != 0) != ((s) != 0);                                                    \
		break

/* sum and product in T itself (floating point, complex) */
#define ARITH_CASES(d, s)                                                                          \
	case FI_SUM:                                                                               \
		(d) = (d) + (s);                                                                   \
		break;                                                                             \
	case FI_PROD:                                                                              \
		(d) = (d) * (s);                                                                   \
		break

/* The function name(op, dst, src, cmp, old, n) applying op to the n
 * elements of type T at dst: each element is read into d (and copied to old
 * when asked), with its operand s and comparand c (0 without src or cmp);
 * the cases given after T (switch labels on op that update d and break) or
 * FI_ATOMIC_WRITE set the new value, which is written back; FI_ATOMIC_READ
 * leaves dst as is. */
#define APPLY_LOOP(name, T, ...)                                                                   \
	static void name(enum fi_op op, char *dst, const char *src, const char *cmp, char *old,    \
	                 size_t n)                                                                 \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			T d, s = 0, c = 0;                                                         \
			memcpy(&d, dst + i * sizeof(T), sizeof(T));                                \
			if (old)                                                                   \
				memcpy(old + i * sizeof(T), &d, sizeof(T));                        \
			if (src)                                                                   \
				memcpy(&s, src + i * sizeof(T), sizeof(T));                        \
			if (cmp)                                                                   \
				memcpy(&c, cmp + i * sizeof(T), sizeof(T));                        \
			switch (op) {                                                              \
				__VA_ARGS__;                                                       \
			case FI_ATOMIC_WRITE:                                                      \
				d = s;                                                             \
				break;                                                             \
			default: /* FI_ATOMIC_READ */                                              \
				continue;                                                          \
			}                                                                          \
			memcpy(dst + i * sizeof(T), &d, sizeof(T));                                \
		}                                                                                  \
	}

/* the integer-only cases: T the type, U its unsigned twin (wrapping
 * arithmetic) */
#define INT_CASES(d, s, c, T, U)                                                                   \
	case FI_SUM:                                                                               \
		(d) = (T)((U)(d) + (U)(s));                                                        \
		break;                                                                             \
	case FI_PROD:                                                                              \
		(d) = (T)(U)((uint64_t)(U)(d) * (uint64_t)(U)(s)); /* no int promotion */          \
		break;                                                                             \
	case FI_BOR:                                                                               \
		(d) = (T)((d) | (s));                                                              \
		break;                                                                             \
	case FI_BAND:                                                                              \
		(d) = (T)((d) & (s));                                                              \
		break;                                                                             \
	case FI_BXOR:                                                                              \
		(d) = (T)((d) ^ (s));                                                              \
		break;                                                                             \
	case FI_MSWAP:                                                                             \
		(d) = (T)(((s) & (c)) | ((d) & (T) ~(c)));                                         \
		break

/* integers: every op */
#define INT_APPLY(name, T, U)                                                                      \
	APPLY_LOOP(name, T, ORDER_CASES(d, s, c); CSWAP_CASES(d, s, c); INT_CASES(d, s, c, T, U))

/* float and double: no bitwise ops, no mswap */
#define REAL_APPLY(name, T)                                                                        \
	APPLY_LOOP(name, T, ORDER_CASES(d, s, c); CSWAP_CASES(d, s, c); ARITH_CASES(d, s))

/* complex: no orderings */
#define COMPLEX_APPLY(name, T) APPLY_LOOP(name, T, CSWAP_CASES(d, s, c); ARITH_CASES(d, s))

INT_APPLY(apply_i8, int8_t, uint8_t)
INT_APPLY(apply_u8, uint8_t, uint8_t)
INT_APPLY(apply_i16, int16_t, uint16_t)
INT_APPLY(apply_u16, uint16_t, uint16_t)
INT_APPLY(apply_i32, int32_t, uint32_t)
INT_APPLY(apply_u32, uint32_t, uint32_t)
INT_APPLY(apply_i64, int64_t, uint64_t)
INT_APPLY(apply_u64, uint64_t, uint64_t)
REAL_APPLY(apply_float, float)
REAL_APPLY(apply_double, double)
COMPLEX_APPLY(apply_cfloat, float complex)
COMPLEX_APPLY(apply_cdouble, double complex)

typedef void (*apply_fn)(enum fi_op, char *, const char *, const char *, char *, size_t);

static const struct {
	size_t size;
	apply_fn fn;
	int kind; /* 0 integer, 1 real, 2 complex */
} types[] = {
    [FI_INT8] = {1, apply_i8, 0},
    [FI_UINT8] = {1, apply_u8, 0},
    [FI_INT16] = {2, apply_i16, 0},
    [FI_UINT16] = {2, apply_u16, 0},
    [FI_INT32] = {4, apply_i32, 0},
    [FI_UINT32] = {4, apply_u32, 0},
    [FI_INT64] = {8, apply_i64, 0},
    [FI_UINT64] = {8, apply_u64, 0},
    [FI_FLOAT] = {sizeof(float), apply_float, 1},
    [FI_DOUBLE] = {sizeof(double), apply_double, 1},
    [FI_FLOAT_COMPLEX] = {sizeof(float complex), apply_cfloat, 2},
    [FI_DOUBLE_COMPLEX] = {sizeof(double complex), apply_cdouble, 2},
};

size_t ptl3_atomic_size(enum fi_datatype dt)
{
	if ((unsigned)dt >= sizeof(types) / sizeof(types[0]) || !types[dt].fn)
		return 0;
	return types[dt].size;
}

int ptl3_atomic_offered(enum fi_datatype dt, enum fi_op op)
{
	if (!ptl3_atomic_size(dt) || (unsigned)op >= FI_ATOMIC_OP_LAST)
		return 0;
	switch (types[dt].kind) {
	case 0:
		return 1;
	case 1:
		return op != FI_BOR && op != FI_BAND && op != FI_BXOR && op != FI_MSWAP;
	default:
		return op == FI_SUM || op == FI_PROD || op == FI_ATOMIC_READ ||
		       op == FI_ATOMIC_WRITE || op == FI_CSWAP || op == FI_CSWAP_NE;
	}
}

void ptl3_atomic_apply(enum fi_datatype dt, enum fi_op op, void *dst, const void *src,
                       const void *cmp, void *old, size_t count)
{
	types[dt].fn(op, dst, src, cmp, old, count);
}
