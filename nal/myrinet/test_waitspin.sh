#!/bin/sh
# test_waitspin.sh - run test_waitspin (PtlNIWaitSpin over offload follows
# the placement, README §3.9) against a private mcpd pinned to CPU 0
# (ports 36001-40096).  Skips (77) with one CPU or without taskset.
# Bounded: 60 s (~1 s).
set -u
command -v taskset >/dev/null 2>&1 || { echo "SKIP: taskset (util-linux) not found"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU"; exit 77; }
. "$(dirname "$0")/with-nic.sh"
MCPD_PREFIX="taskset -c 0"
with_nic waitspin 36000 ./test_waitspin 0
