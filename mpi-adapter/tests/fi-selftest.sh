#!/bin/sh
# provider-level checks through libfabric in one process (sends to self).
# Run four times: with the default parameters; with unexpected buffers so
# small (and fewer inject staging slots than injects in flight) that most
# unexpected messages arrive header-only and are pulled from the sender
# (staged injects from the stage ME, the others from their own PT_RDV entry)
# and the smallest Portals EQ, which a burst of reads must not overflow; and
# without FI_RMA (FI_PTL3_RMA=0); and with every receive posted in Portals
# (FI_PTL3_SOFT_RECV=0, as over the myrinet NAL).
. "$(dirname "$0")/common.sh"
need_provider
need_test_prog fi_selftest
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
	FI_PTL3_COUNTERS=1 timeout 120 "$exe" >"$log" 2>&1
rc=$?
cat "$log"
[ "$rc" -eq 0 ] || fail "fi_selftest (default parameters) failed"
# staged injects complete without an ACK; their slots come back in batched
# releases (ptl3_release.c), and releases naming no held slot are counted
want=$(sed -n 's/.*expect releases_bad \([0-9]*\).*/\1/p' "$log")
[ -n "$want" ] || fail "the hostile-release check did not run"
[ "$(counter releases_bad)" = "$want" ] ||
	fail "releases_bad $(counter releases_bad), expected $want (one per slot named but not held)"
[ "$(counter stale_data)" = 0 ] || fail "stale_data $(counter stale_data): data landed for a finished operation"
[ "$(counter slots_released)" -ge 600 ] ||
	fail "only $(counter slots_released) stage slots came back by releases (expected >= 600)"
echo "ok: default parameters: $(counter staged) injects staged, $(counter releases_sent) releases for $(counter slots_released) slots, releases_bad $want as expected"
# small tagged receives are matched by the provider (ptl3_soft.c); a large
# one moves those before it into Portals
[ "$(counter soft_matched)" -ge 5 ] ||
	fail "only $(counter soft_matched) messages matched soft receives (expected >= 5)"
[ "$(counter soft_flushed)" -ge 1 ] || fail "no soft receive was moved into Portals"
echo "ok: $(counter soft_posted) soft receives posted, $(counter soft_matched) matched, $(counter soft_flushed) moved into Portals"
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
	FI_PTL3_COUNTERS=1 FI_PTL3_EAGER=1024 FI_PTL3_EBUF_SIZE=4096 FI_PTL3_EBUF_COUNT=2 \
	FI_PTL3_STAGE_SLOTS=64 FI_PTL3_EQ_SIZE=1024 timeout 120 "$exe" >"$log" 2>&1
rc=$?
cat "$log"
[ "$rc" -eq 0 ] || fail "fi_selftest (tiny unexpected buffers) failed"
hdr=$(counter unexpected_header)
staged=$(counter staged)
drops=$(counter portals_drop_count)
[ "${hdr:-0}" -gt 300 ] || fail "tiny unexpected buffers: only ${hdr:-0} header-only arrivals (expected > 300: the pull path was not exercised)"
[ "${staged:-0}" -ge 64 ] || fail "tiny unexpected buffers: only ${staged:-0} injects staged (expected >= 64)"
[ "${drops:-1}" -eq 0 ] || fail "tiny unexpected buffers: Portals dropped ${drops} requests"
[ "$(counter stale_data)" = 0 ] || fail "tiny unexpected buffers: stale_data $(counter stale_data)"
echo "ok: tiny unexpected buffers: $hdr header-only arrivals pulled ($staged injects staged), no drops"
grep -q "reads without a CQ read completed" "$log" || fail "tiny EQ: the read burst did not run"
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
	FI_PTL3_RMA=0 timeout 120 "$exe" >"$log" 2>&1
rc=$?
cat "$log"
[ "$rc" -eq 0 ] || fail "fi_selftest (FI_PTL3_RMA=0) failed"
! grep -q "FI_RMA checked" "$log" || fail "FI_PTL3_RMA=0 still offers FI_RMA"
echo "ok: FI_PTL3_RMA=0 withdraws FI_RMA"
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
	FI_PTL3_COUNTERS=1 FI_PTL3_SOFT_RECV=0 timeout 120 "$exe" >"$log" 2>&1
rc=$?
cat "$log"
[ "$rc" -eq 0 ] || fail "fi_selftest (FI_PTL3_SOFT_RECV=0) failed"
[ "$(counter soft_posted)" = 0 ] || fail "FI_PTL3_SOFT_RECV=0: $(counter soft_posted) soft receives"
echo "ok: FI_PTL3_SOFT_RECV=0: every receive posted in Portals"
