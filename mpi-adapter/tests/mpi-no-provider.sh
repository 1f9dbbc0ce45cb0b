#!/bin/sh
# With FI_PROVIDER=ptl3 and an empty provider path MPICH must abort, not fall
# back to another provider.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
build_mpi_prog pingpong
mkdir -p "$TMPD/empty"
if P3MPIRUN_ALLOW_MISSING=1 "$P3MPIRUN" -n 2 --provider-path "$TMPD/empty" --timeout 60 "$TMPD/pingpong" 10 64 \
	>"$TMPD/out" 2>&1; then
	cat "$TMPD/out"
	fail "the job ran without the provider"
fi
grep -q 'pingpong: OK' "$TMPD/out" && fail "pingpong ran"
echo "PASS: empty FI_PROVIDER_PATH aborts the job"
