/* SPDX-License-Identifier: BSD-3-Clause */
/* p3nal_xdp.h - select the xdp NAL (rmpp over AF_XDP) as this program's
 * default interface, like the other per-NAL headers. */
#ifndef P3NAL_XDP_H
#define P3NAL_XDP_H
#include <portals3.h>
#undef PTL_IFACE_DEFAULT
#define PTL_IFACE_DEFAULT PTL_IFACE_XDP
#endif
