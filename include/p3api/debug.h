/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file p3api/debug.h
 * @brief Per-NI debug output (compatible with the Sandia 3.3 reference).
 *
 * PtlNIDebug(ni, mask) sets the mask of what is printed to stderr and
 * returns the previous mask.  PTL_DEBUG=<mask> in the environment sets the
 * initial mask of every NI (a number, or names joined by commas: "drop,parse").
 */
#ifndef P3API_DEBUG_H
#define P3API_DEBUG_H

#include <portals3.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTL_DBG_NONE 0x00000000u
#define PTL_DBG_DROP 0x00000001u    /**< every dropped request and why */
#define PTL_DBG_REQUEST 0x00000002u /**< API calls */
#define PTL_DBG_DELIVERY 0x00000004u /**< events posted */
#define PTL_DBG_MD 0x00000008u
#define PTL_DBG_ME 0x00000010u
#define PTL_DBG_EQ 0x00000020u
#define PTL_DBG_PARSE 0x00000040u /**< every incoming header */
#define PTL_DBG_NI_00 0x00010000u /**< NAL-defined bits 16..23 */
#define PTL_DBG_NI_ALL 0x00FF0000u
#define PTL_DBG_ALL 0xFFFFFFFFu

/** @return the previous mask (0 for an invalid handle). */
unsigned int PtlNIDebug(ptl_handle_ni_t ni, unsigned int mask);

#ifdef __cplusplus
}
#endif
#endif
