#!/bin/sh
# FI_ATOMIC in software (ptl3_atomic.c): fi_atomic.c's worked examples and
# error cases in one process, over the shmem and udp NALs (~1 s).  The
# two-process check is fabtests' fi_rdm_atomic in tests/fabtests.sh.
. "$(dirname "$0")/common.sh"
need_provider
need_test_prog fi_atomic
for nal in shmem udp; do
	FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL=$nal \
		FI_PTL3_COUNTERS=1 timeout 120 "$exe" >"$log" 2>&1 || {
		cat "$log"
		fail "fi_atomic over $nal"
	}
	grep checks "$log"
	# the three error cases (key, range, access) are refused by the agent
	[ "$(counter atomics_refused)" = 3 ] && [ "$(counter atomics_dropped)" = 0 ] &&
		[ "$(counter atomics_applied)" -gt 30 ] ||
		fail "$nal: agent counters: applied $(counter atomics_applied), refused $(counter atomics_refused) (expected 3), dropped $(counter atomics_dropped)"
	echo "ok: $nal: $(counter atomics_applied) atomics applied, 3 refused"
done
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" FI_PTL3_RMA=0 \
	timeout 60 "$exe" >/dev/null 2>&1 && fail "FI_PTL3_RMA=0 must withdraw FI_ATOMIC too"
echo "ok: FI_PTL3_RMA=0 withdraws FI_ATOMIC"
