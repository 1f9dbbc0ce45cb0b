#!/bin/sh
# myri-lastack.sh [RUNS] - the last ACK of a job over myrinet (myri_lastack.c):
# RUNS jobs (default 20) of 2 ranks, ranks on CPUs 0 and 1 and the NIC on
# CPU 1 beside the target, which closes its NI right after the put it acks;
# each job must end with the ACK at the initiator.  Modes: interrupt,
# thread, offload (MYRI_LASTACK_MODES).  A race (the NIC finding the
# doorbell and the target's hang-up in one wake-up), so it runs by hand, not
# in make check; test_hostile checks the NIC's side deterministically.
# Bounded: 40 s per job.
. "$(dirname "$0")/myri-lib.sh"
myri_prog myri_lastack
myri_ports 12000 120
runs=${1:-20}
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
