#!/bin/sh
# MPI ping-pong over the adapter: MPICH names provider ptl3, data verified,
# Portals drop count 0 on every rank; active-message-only mode, then tagged.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
build_mpi_prog pingpong
for mode in am-only tagged; do
	extra=""
	[ "$mode" = am-only ] && extra=--am-only
	# shellcheck disable=SC2086
	MPIR_CVAR_DEBUG_SUMMARY=1 "$P3MPIRUN" -n 2 --nal "$TESTNAL" --counters --timeout 120 $extra \
		"$TMPD/pingpong" 200 1048576 >"$TMPD/out.$mode" 2>&1 ||
		{ cat "$TMPD/out.$mode"; fail "pingpong ($mode) exited non-zero"; }
	grep -q 'libfabric provider: ptl3' "$TMPD/out.$mode" || { cat "$TMPD/out.$mode"; fail "provider is not ptl3"; }
	grep -q 'pingpong: OK' "$TMPD/out.$mode" || { cat "$TMPD/out.$mode"; fail "pingpong ($mode) not OK"; }
	n=$(grep -c 'ptl3 counters' "$TMPD/out.$mode" || true)
	[ "$n" -ge 2 ] || { cat "$TMPD/out.$mode"; fail "counters not printed by both ranks"; }
	if grep 'ptl3 counters' "$TMPD/out.$mode" | grep -qv 'portals_drop_count 0 '; then
		grep 'ptl3 counters' "$TMPD/out.$mode"
		fail "Portals dropped messages ($mode)"
	fi
	if grep 'ptl3 counters' "$TMPD/out.$mode" | grep -qv 'stale_data 0 '; then
		grep 'ptl3 counters' "$TMPD/out.$mode"
		fail "data landed for finished operations ($mode)"
	fi
	grep 'pingpong:\|ptl3 counters' "$TMPD/out.$mode" | sed "s/^/$mode: /"
done
echo "PASS: MPI ping-pong over ptl3/$TESTNAL (am-only and tagged)"
