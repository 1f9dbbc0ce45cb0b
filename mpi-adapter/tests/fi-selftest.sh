#!/bin/sh
# provider-level checks through libfabric in one process (sends to self).
# Run twice: with the default parameters, and with unexpected buffers so
# small (and fewer inject staging slots than injects in flight) that most
# unexpected messages arrive header-only and are pulled from the sender:
# staged injects from the stage ME, the others from their own PT_RDV entry.
. "$(dirname "$0")/common.sh"
need_provider
exe="$P3_BUILDDIR/mpi-adapter/tests/fi_selftest"
[ -x "$exe" ] || fail "$exe not built"
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
	FI_PTL3_COUNTERS=1 timeout 120 "$exe" || fail "fi_selftest (default parameters) failed"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
	FI_PTL3_COUNTERS=1 FI_PTL3_EAGER=1024 FI_PTL3_EBUF_SIZE=4096 FI_PTL3_EBUF_COUNT=2 \
	FI_PTL3_STAGE_SLOTS=64 timeout 120 "$exe" >"$log" 2>&1
rc=$?
cat "$log"
[ "$rc" -eq 0 ] || fail "fi_selftest (tiny unexpected buffers) failed"
hdr=$(sed -n 's/.*unexpected_header \([0-9]*\).*/\1/p' "$log" | head -1)
staged=$(sed -n 's/.* staged \([0-9]*\).*/\1/p' "$log" | head -1)
drops=$(sed -n 's/.*portals_drop_count \([0-9]*\).*/\1/p' "$log" | head -1)
[ "${hdr:-0}" -gt 300 ] || fail "tiny unexpected buffers: only ${hdr:-0} header-only arrivals (expected > 300: the pull path was not exercised)"
[ "${staged:-0}" -ge 64 ] || fail "tiny unexpected buffers: only ${staged:-0} injects staged (expected >= 64)"
[ "${drops:-1}" -eq 0 ] || fail "tiny unexpected buffers: Portals dropped ${drops} requests"
echo "ok: tiny unexpected buffers: $hdr header-only arrivals pulled ($staged injects staged), no drops"
