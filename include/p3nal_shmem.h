/* SPDX-License-Identifier: BSD-3-Clause */
/* p3nal_shmem.h - select the shmem NAL as this program's default interface
 * (source compatibility with the Sandia 3.3 reference's per-NAL headers). */
#ifndef P3NAL_SHMEM_H
#define P3NAL_SHMEM_H
#include <portals3.h>
#undef PTL_IFACE_DEFAULT
#define PTL_IFACE_DEFAULT PTL_IFACE_SHMEM
#endif
