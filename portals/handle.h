/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.h - encoding of the 32-bit Portals handles.
 *
 *   31..29  type        1 NI, 2 ME, 3 MD, 4 EQ (7 is reserved for the
 *                       special values PTL_INVALID_HANDLE / PTL_HANDLE_NONE)
 *   28..26  NI index    which open NI of this process the object belongs to
 *   25..16  generation  bumped every time the slot is freed, so a stale
 *                       handle (and a stale MD handle echoed in an ack or a
 *                       reply) never validates against a reused slot
 *   15..0   index       slot in the NI's object table (0 for NI handles)
 *
 * Decoding is pure arithmetic; validation (does the slot hold the same
 * generation?) is done by whoever owns the table.
 */
#ifndef P3_HANDLE_H
#define P3_HANDLE_H

#include <portals3.h>
#include <stdint.h>

enum p3_htype {
	P3_HT_NONE = 0,
	P3_HT_NI = 1,
	P3_HT_ME = 2,
	P3_HT_MD = 3,
	P3_HT_EQ = 4,
	P3_HT_SPECIAL = 7,
};

#define P3_MAX_NIS 8u         /* 3 bits of NI index */
#define P3_HANDLE_GEN_MASK 0x3FFu
#define P3_HANDLE_IDX_MAX 0xFFFFu

static inline ptl_handle_any_t p3_handle_make(unsigned int type, unsigned int ni, unsigned int gen,
					      unsigned int idx)
{
	return ((ptl_handle_any_t)type << 29) | ((ptl_handle_any_t)(ni & 7u) << 26) |
	       ((ptl_handle_any_t)(gen & P3_HANDLE_GEN_MASK) << 16) | (idx & 0xFFFFu);
}

static inline unsigned int p3_handle_type(ptl_handle_any_t h)
{
	return h >> 29;
}

static inline unsigned int p3_handle_ni(ptl_handle_any_t h)
{
	return (h >> 26) & 7u;
}

static inline unsigned int p3_handle_gen(ptl_handle_any_t h)
{
	return (h >> 16) & P3_HANDLE_GEN_MASK;
}

static inline unsigned int p3_handle_idx(ptl_handle_any_t h)
{
	return h & 0xFFFFu;
}

#endif
