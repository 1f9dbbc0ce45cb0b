#!/bin/sh
# MPICH's own test suite, reduced fast subset (tests/mpich-ci.txt), over ptl3
# on the udp NAL (rmpp over UDP on 127.0.0.1: every rank its own port,
# P3_RMPP_BASE_PORT + Portals pid).  The three slowest programs of the list
# are left out to keep this under a few minutes on 2 cores (each takes 40-60 s
# over udp, 20-70 s over shmem under load); they pass over udp in the full
# run: run-mpich-tests --subset full --nal udp.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
"$P3_SRCDIR/mpi-adapter/run-mpich-tests" --subset ci --nal udp --timeout 120 \
	--exclude pt2pt/large_message,comm/cmfree,pt2pt/probe_unexp \
	--results "$TMPD/results"
