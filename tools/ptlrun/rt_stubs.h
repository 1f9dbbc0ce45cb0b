/* SPDX-License-Identifier: BSD-3-Clause */
/* rt_stubs.h - stand-ins for the core's hooks (p3_api_initialized,
 * p3_api_ni_check, PtlGetId) so the runtime can be tested alone. */
#ifndef RT_STUBS_H
#define RT_STUBS_H

#include <portals3.h>

/* The only handle p3_api_ni_check accepts while stub_ni_open is set. */
#define STUB_NI ((ptl_handle_ni_t)0x20000001u)

extern int stub_initialized;
extern int stub_ni_open;
extern ptl_process_id_t stub_my_id; /* what PtlGetId(STUB_NI) returns */

#endif
