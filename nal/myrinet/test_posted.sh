#!/bin/sh
# test_posted.sh - run test_posted (offload's posted calls, through the real
# host driver) against a private mcpd (ports 28001-32096: the NIC picks pids
# 1-4096, below the ephemeral range).  Bounded: 60 s (~1 s).
set -u
. "$(dirname "$0")/with-nic.sh"
with_nic posted 28000 ./test_posted 200
