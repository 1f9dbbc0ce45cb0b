/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcpd_dma.c - the NIC's DMA engine: turn a command's registration run into
 * host addresses (refusing anything outside a registered region) and move
 * bytes with process_vm_readv/writev against the endpoint's own process.
 */
#include "mcpd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The [offset, offset + len) window of the command's run, as host iovecs.
 * Each entry is copied out of the shared segment once, so a host that
 * rewrites it concurrently cannot make the NIC check one value and use
 * another. */
int mcpd_run_iov(struct mcpd_ep *ep, const struct myri_cmd *cmd, struct iovec **out, size_t *nout)
{
	*out = NULL;
	*nout = 0;
	if (cmd->len == 0)
		return 0;
	struct iovec *v = calloc(cmd->nreg, sizeof(*v));
	if (!v)
		return -ENOMEM;
	uint64_t skip = cmd->offset, want = cmd->len;
	size_t n = 0;
	for (uint32_t i = 0; i < cmd->nreg && want; i++) {
		struct myri_reg r;
		memcpy(&r, &ep->seg->reg[(cmd->reg_first + i) % MYRI_NREG], sizeof(r));
		if (!r.valid || r.key != cmd->key || r.addr + r.len < r.addr) {
			free(v);
			return -EACCES;
		}
		if (skip >= r.len) {
			skip -= r.len;
			continue;
		}
		uint64_t take = r.len - skip < want ? r.len - skip : want;
		v[n].iov_base = (void *)(uintptr_t)(r.addr + skip);
		v[n].iov_len = take;
		n++;
		want -= take;
		skip = 0;
	}
	if (want) { /* the window runs past the registered regions */
		free(v);
		return -EACCES;
	}
	*out = v;
	*nout = n;
	return 0;
}

#define MCPD_DMA_BATCH 64 /* remote iovecs per system call (IOV_MAX is larger) */

int mcpd_dma(struct mcpd_ep *ep, int write, void *local, uint64_t len, const struct iovec *remote,
             size_t nremote)
{
	uint64_t done = 0;
	size_t at = 0;
	while (done < len && at < nremote) {
		size_t nr = nremote - at < MCPD_DMA_BATCH ? nremote - at : MCPD_DMA_BATCH;
		uint64_t chunk = 0;
		for (size_t i = 0; i < nr; i++)
			chunk += remote[at + i].iov_len;
		struct iovec l = {(char *)local + done, chunk};
		ssize_t got = write ? process_vm_writev(ep->ospid, &l, 1, remote + at, nr, 0)
		                    : process_vm_readv(ep->ospid, &l, 1, remote + at, nr, 0);
		if (got < 0 || (uint64_t)got != chunk) {
			/* a partial transfer: the host unmapped a registered region
			 * (its own fault); counted, the operation fails */
			mcpd_count(ep, MYRI_C_dma_faults, 1);
			return got < 0 ? -errno : -EFAULT;
		}
		done += chunk;
		at += nr;
	}
	mcpd_count(ep, write ? MYRI_C_dma_write_bytes : MYRI_C_dma_read_bytes, done);
	return done == len ? 0 : -EFAULT;
}
