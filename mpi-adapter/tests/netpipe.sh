#!/bin/sh
# Debian's NetPIPE (NPmpich2, built against Debian's libmpich.so.12) runs over
# the adapter through LD_LIBRARY_PATH alone.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
np=$(command -v NPmpich2 || true)
[ -n "$np" ] || { echo "SKIP: NPmpich2 not installed (netpipe-mpich2)"; exit 77; }
cd "$TMPD"
MPIR_CVAR_DEBUG_SUMMARY=1 "$P3MPIRUN" -n 2 --nal "$TESTNAL" --counters --timeout 300 \
	"$np" -p 0 -u 1048576 -o "$TMPD/np.out" >"$TMPD/out" 2>&1 || { tail -30 "$TMPD/out"; fail "NPmpich2 failed"; }
grep -q 'libfabric provider: ptl3' "$TMPD/out" || { tail -30 "$TMPD/out"; fail "provider is not ptl3"; }
if grep 'ptl3 counters' "$TMPD/out" | grep -qv 'portals_drop_count 0 '; then fail "drops"; fi
lines=$(wc -l <"$TMPD/np.out")
[ "$lines" -ge 20 ] || fail "NetPIPE wrote only $lines result lines"
head -3 "$TMPD/np.out"
tail -2 "$TMPD/np.out"
echo "PASS: NPmpich2 over ptl3/$TESTNAL ($lines sizes)"
