/* SPDX-License-Identifier: BSD-3-Clause */
/* test_hdr_codec.c - the core's Portals header codec, compiled into the glue
 * test so that it runs without libportals3. */
#include "hdr.c"
