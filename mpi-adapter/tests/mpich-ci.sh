#!/bin/sh
# MPICH's own test suite, reduced fast subset (tests/mpich-ci.txt), over ptl3.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
"$P3_SRCDIR/mpi-adapter/run-mpich-tests" --subset ci --nal "$TESTNAL" --timeout 120 \
	--results "$TMPD/results" || exit $?
# the programs that need their own number of processes (up to 33 ranks)
"$P3_SRCDIR/mpi-adapter/run-mpich-tests" --subset wide --maxnp 33 --nal "$TESTNAL" \
	--timeout 120 --results "$TMPD/wide"
