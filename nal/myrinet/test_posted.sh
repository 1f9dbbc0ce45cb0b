#!/bin/sh
# test_posted.sh - run test_posted (offload's posted calls, through the real
# host driver) against a private mcpd (ports 28001-32096: the NIC picks pids
# 1-4096, below the ephemeral range).  Bounded: 60 s (~1 s).
set -u
P3_MYRI_NIC="posted-$$"
export P3_MYRI_NIC
./mcpd --nic "$P3_MYRI_NIC" --base-port 28000 &
nic=$!
trap 'kill $nic 2>/dev/null; wait $nic 2>/dev/null' EXIT INT TERM
i=0
until ./mcpd --counters >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 300 ] || { echo "FAIL: mcpd did not start"; exit 1; }
	sleep 0.01
done
timeout 60 ./test_posted 200
rc=$?
./mcpd --counters >/dev/null || { echo "FAIL: the NIC died"; exit 1; }
exit $rc
