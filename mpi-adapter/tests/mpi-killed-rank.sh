#!/bin/sh
# A rank killed mid-job makes the whole job fail within a bounded time.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
build_mpi_prog killrank
start=$(date +%s)
rc=0
timeout 90 "$P3MPIRUN" -n 2 --nal "$TESTNAL" "$TMPD/killrank" >"$TMPD/out" 2>&1 || rc=$?
if [ $rc -eq 0 ]; then
	cat "$TMPD/out"
	fail "the job succeeded"
fi
took=$(($(date +%s) - start))
[ $rc -ne 124 ] || fail "the job hung (killed by the 90 s guard)"
[ $took -le 60 ] || fail "took ${took}s to fail"
echo "PASS: killed rank -> job failed (status $rc) in ${took}s"
