/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p3.h - included first by every file of libportals3.
 *
 * The library is compiled with -fvisibility=hidden; the public headers are
 * included here under "visibility push(default)" so that exactly the
 * functions they declare (Ptl*, ptl_err_str) are exported.  The linker
 * version script (libportals3.map) enforces the same from the other side.
 */
#ifndef P3_P3_H
#define P3_P3_H

#pragma GCC visibility push(default)
#include <portals3.h>
#include <p3api/debug.h>
#include <p3rt/p3rt.h>
#pragma GCC visibility pop

#include <errno.h>
#include <stdint.h>

#define P3_LIKELY(x) __builtin_expect(!!(x), 1)
#define P3_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* 1 while the process has only ever had one thread (glibc's
 * __libc_single_threaded; 0 where it is not known): nothing can then race
 * the holder of a process-private lock, and LIB's lock is skipped -- two
 * locked instructions per section, each of which waits for the store
 * buffer to drain (glibc's stdio skips its locks the same way).  Safe
 * because a section that skips it never runs code that could start a
 * thread: LIB runs EQ handlers and NAL methods only after unlocking. */
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define P3_SINGLE_THREADED() (__libc_single_threaded != 0)
#endif
#endif
#ifndef P3_SINGLE_THREADED
#define P3_SINGLE_THREADED() 0
#endif

/* log.c: process-wide messages (no NI yet).  level 0 error, 1 warning,
 * 2 info, 3 debug.  Always prefixed "p3stack: ". */
void p3_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* PTL_DEBUG parsed once: the initial PtlNIDebug mask of every NI. */
unsigned int p3_debug_env_mask(void);

/* futex helpers (progress.c); shared (non-private) futexes so the word may
 * live in shared memory. */
int p3_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms);
void p3_futex_wake(_Atomic uint32_t *word);
/* Wait until any words[i] != vals[i] (futex_waitv; 1 ms slices without). */
int p3_futex_waitv(_Atomic uint32_t *const *words, const uint32_t *vals, int n, int timeout_ms);

/* Monotonic clock in microseconds. */
uint64_t p3_now_us(void);

static inline void p3_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif
