#!/bin/sh
# myri-lastack.sh [RUNS] - the last ACK of a job over myrinet (myri_lastack.c):
# RUNS jobs (default 20) of 2 ranks, ranks on CPUs 0 and 1 and the NIC on
# CPU 1 beside the target, which closes its NI right after the put it acks;
# each job must end with the ACK at the initiator.  Modes: interrupt,
# thread, offload (MYRI_LASTACK_MODES).  A race (the NIC finding the
# doorbell and the target's hang-up in one wake-up), so it runs by hand, not
# in make check; test_hostile checks the NIC's side deterministically.
# Bounded: 40 s per job.
set -u
top_builddir=${top_builddir:-..}
PTLRUN="$top_builddir/tools/ptlrun/ptlrun"
PROG=./myri_lastack
[ -x "$PROG" ] || PROG="$top_builddir/tests/myri_lastack"
for f in "$PTLRUN" "$PROG"; do
	[ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
P3_MYRI_BASE_PORT=${P3_MYRI_BASE_PORT:-$((12000 + ($$ % 120) * 16))}
export P3_MYRI_BASE_PORT
runs=${1:-20}
nfail=0
for mode in ${MYRI_LASTACK_MODES:-interrupt thread offload}; do
	ok=0
	for i in $(seq 1 "$runs"); do
		out=$(timeout 60 "$PTLRUN" -n 2 --cpus 0,1 --nic-cpus 1 --nal myrinet \
			--progress "$mode" --timeout 40 "$PROG" 2>&1)
		if [ $? -eq 0 ] && [ "$(echo "$out" | grep -c 'lastack: ok')" -eq 2 ]; then
			ok=$((ok + 1))
		else
			echo "$out" | tail -5
			echo "FAIL: $mode run $i"
		fi
	done
	echo "$mode: $ok of $runs jobs got their last ACK"
	[ $ok -eq "$runs" ] || nfail=$((nfail + 1))
done
[ $nfail -eq 0 ]
