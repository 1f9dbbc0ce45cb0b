#!/bin/sh
# test_hostile.sh - run test_hostile against a private mcpd, then check the
# NIC survived.  Bounded: 60 s.
set -u
P3_MYRI_NIC="hostile-$$"
export P3_MYRI_NIC
./mcpd --nic "$P3_MYRI_NIC" &
nic=$!
trap 'kill $nic 2>/dev/null; wait $nic 2>/dev/null' EXIT INT TERM
i=0
until ./mcpd --counters >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 300 ] || { echo "FAIL: mcpd did not start"; exit 1; }
	sleep 0.01
done
timeout 60 ./test_hostile
rc=$?
./mcpd --counters || { echo "FAIL: the NIC died"; exit 1; }
exit $rc
