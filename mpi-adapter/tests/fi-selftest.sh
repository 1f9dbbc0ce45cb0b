#!/bin/sh
# provider-level checks through libfabric in one process (sends to self).
. "$(dirname "$0")/common.sh"
need_provider
exe="$P3_BUILDDIR/mpi-adapter/tests/fi_selftest"
[ -x "$exe" ] || fail "$exe not built"
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
	FI_PTL3_COUNTERS=1 timeout 120 "$exe"
