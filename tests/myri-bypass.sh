#!/bin/sh
# myri-bypass.sh - application bypass over myrinet in PTL_PROGRESS=offload
# (myri_bypass.c): a target in a compute loop with no Portals call receives
# 1000 8-byte puts and one 64 MiB put; every byte and event must be there
# and its CPU time must be the loop's alone.  One private mcpd, loopback.
# Bounded: 180 s (~5 s on a loaded 2-core machine).
. "$(dirname "$0")/myri-lib.sh"
myri_prog myri_bypass
P3_MYRI_NIC="bypass-$$"
export P3_MYRI_NIC
# ports 61001-65096 (the NIC picks pids 1-4096): outside the kernel's
# ephemeral range and the udp NAL's plan, so busy neighbours cannot hold them
"$MCPD" --nic "$P3_MYRI_NIC" --base-port 61000 2>mcpd-bypass.log &
nic=$!
trap 'kill $nic 2>/dev/null; wait $nic 2>/dev/null' EXIT INT TERM
myri_wait_nic "$P3_MYRI_NIC" || { echo "FAIL: mcpd did not come up"; exit 1; }
timeout 180 "$PROG" "${MYRI_BYPASS_MIB:-64}"
rc=$?
"$MCPD" --nic "$P3_MYRI_NIC" --counters >mcpd-bypass.counters 2>&1 ||
	{ echo "FAIL: the NIC died"; rc=1; }
grep -E '^(cmds_rejected|dma_write_bytes|dma_faults|interrupts) ' mcpd-bypass.counters
exit $rc
