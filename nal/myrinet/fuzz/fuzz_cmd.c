/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_cmd.c - libFuzzer target: the NIC's command-queue parser.  The input
 * is one command entry (160 bytes, zero-padded) followed by registration
 * entries written into the registration table from index 0 on.  The NIC's
 * entry check (mcpd_cmd_check) and run resolution (mcpd_run_iov) must never
 * crash, and whatever they accept must lie inside valid regions of the run
 * carrying the command's key and add up to the command's length.
 */
#include "../mcpd.h"

#include <stdlib.h>
#include <string.h>

/* DMA is not fuzzed (mcpd_dma needs a process); its counter hook is. */
void mcpd_count(struct mcpd_ep *ep, enum myri_counter c, uint64_t n)
{
	(void)ep, (void)c, (void)n;
}

static int inside_run(const struct myri_seg *seg, const struct myri_cmd *cmd, const struct iovec *v)
{
	uint64_t a = (uint64_t)(uintptr_t)v->iov_base;
	for (uint32_t i = 0; i < cmd->nreg; i++) {
		const struct myri_reg *r = &seg->reg[(cmd->reg_first + i) % MYRI_NREG];
		if (r->valid && r->key == cmd->key && a >= r->addr && a - r->addr <= r->len &&
		    v->iov_len <= r->len - (a - r->addr))
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct myri_seg *seg;
	static struct mcpd_ep ep;
	if (!seg && !(seg = calloc(1, sizeof(*seg))))
		return 0;
	struct myri_cmd cmd;
	memset(&cmd, 0, sizeof(cmd));
	memcpy(&cmd, data, size < sizeof(cmd) ? size : sizeof(cmd));
	size_t nreg = size > sizeof(cmd) ? (size - sizeof(cmd)) / sizeof(struct myri_reg) : 0;
	if (nreg > MYRI_NREG)
		nreg = MYRI_NREG;
	memset(seg->reg, 0, sizeof(seg->reg));
	if (nreg)
		memcpy(seg->reg, data + sizeof(cmd), nreg * sizeof(struct myri_reg));
	ep.seg = seg;
	/* LIB commands (offload) name MD memory through mcpd_offload.c's own
	 * run check, not mcpd_run_iov: fuzz_lib.c fuzzes those */
	if (mcpd_cmd_check(&cmd) != 0 || cmd.op == MYRI_CMD_DISCARD || cmd.op == MYRI_CMD_LIB)
		return 0;
	struct iovec *v;
	size_t n;
	if (mcpd_run_iov(&ep, &cmd, &v, &n) != 0)
		return 0;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (!inside_run(seg, &cmd, &v[i]))
			abort(); /* the NIC would touch unregistered memory */
		total += v[i].iov_len;
	}
	if (total != cmd.len)
		abort();
	free(v);
	return 0;
}
