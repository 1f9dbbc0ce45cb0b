/* SPDX-License-Identifier: BSD-3-Clause */
/* nal_stubs.c - typed "not supported" methods for NAL ops tables. */
#include <errno.h>

#include "nal.h"

int p3_nal_nosys_dist(void *priv, ptl_process_id_t id, unsigned long *distance)
{
	(void)priv;
	(void)id;
	(void)distance;
	return -ENOSYS;
}

int p3_nal_nosys_status(void *priv, ptl_sr_index_t reg, ptl_sr_value_t *value)
{
	(void)priv;
	(void)reg;
	(void)value;
	return -ENOENT;
}

void p3_nal_nosys_wakeup(void *priv)
{
	(void)priv;
}
