/* SPDX-License-Identifier: BSD-3-Clause */
/* mcpd_cmd.c - the command-queue entry check: everything about one entry
 * that can be decided without the registration table or NIC state.  Kept
 * apart (and free of side effects) so that it is the fuzz target
 * (fuzz/fuzz_cmd.c). */
#include "mcpd.h"

#include <errno.h>

int mcpd_cmd_check(const struct myri_cmd *cmd)
{
	switch (cmd->op) {
	case MYRI_CMD_SEND:
	case MYRI_CMD_DELIVER:
		break;
	case MYRI_CMD_DISCARD:
		return 0;
	case MYRI_CMD_INTR_CTL:
		return cmd->nreg || cmd->len || cmd->offset > MYRI_INTR_PER_HDR ? -EINVAL : 0;
	case MYRI_CMD_LIB:
		if (cmd->lib_op == 0 || cmd->lib_op >= MYRI_LIB_NOPS)
			return -EOPNOTSUPP;
		if (cmd->nreg > MYRI_MAX_RUN || cmd->reg_first >= MYRI_NREG)
			return -EINVAL;
		if (cmd->nreg && cmd->key == 0)
			return -EINVAL;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
	if (cmd->nreg > MYRI_MAX_RUN || cmd->reg_first >= MYRI_NREG)
		return -EINVAL;
	if (cmd->len == 0)
		return 0;
	if (cmd->nreg == 0 || cmd->key == 0)
		return -EINVAL;
	if (cmd->offset + cmd->len < cmd->offset || cmd->len > UINT32_MAX)
		return -EMSGSIZE;
	if (cmd->op == MYRI_CMD_SEND && cmd->dst_pid > 0xffff)
		return -EINVAL;
	return 0;
}
