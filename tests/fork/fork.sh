#!/bin/sh
# fork.sh - fork() and system() in a Portals job (issue 18 item 3).  A
# two-rank ptlrun job (tests/fork/forkprog.c) in which both ranks fork in the
# middle of a transfer and the children start Portals afresh with other pids
# and talk to each other, and one in which both ranks call system("sleep 1")
# mid-transfer.  Over shmem and udp with PTL_PROGRESS=app and =thread, and
# over ether between two network-namespace hosts when root (skipped with
# the reason otherwise).  Passes when every job exits 0 within 60 s with
# every parent's and child's data verified.
set -u
top_builddir=${top_builddir:-..}
PTLRUN="$top_builddir/tools/ptlrun/ptlrun"
PROG="$top_builddir/tests/fork/forkprog"
[ -x "$PTLRUN" ] || { echo "SKIP: $PTLRUN is not built (tools/ptlrun)"; exit 77; }
[ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }

pass=0
nfail=0
# run LABEL WHAT EXPECTED-VERIFIED-LINES ptlrun-options...
run() {
	label=$1 what=$2 want=$3
	shift 3
	out=$(timeout 60 "$PTLRUN" -n 2 --timeout 50 "$@" "$PROG" "$what" 2>&1)
	rc=$?
	ok=$(echo "$out" | grep -c 'verified')
	if [ $rc -eq 0 ] && [ "$ok" -eq "$want" ]; then
		echo "PASS: $label $what ($ok verified)"
		pass=$((pass + 1))
	else
		echo "$out"
		echo "FAIL: $label $what: exit $rc, $ok of $want verified lines"
		nfail=$((nfail + 1))
	fi
}

for nal in shmem udp; do
	for mode in app thread; do
		run "$nal/$mode" fork 4 --nal "$nal" --progress "$mode"
		run "$nal/$mode" system 2 --nal "$nal" --progress "$mode"
	done
done
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP (ether part): needs root for network namespaces"
elif ! ip netns list >/dev/null 2>&1; then
	echo "SKIP (ether part): ip netns does not work here"
else
	for mode in app thread; do
		run "ether/$mode" fork 4 --nal ether --progress "$mode" --hosts 2
		run "ether/$mode" system 2 --nal ether --progress "$mode" --hosts 2
	done
fi
echo "$pass passed, $nfail failed"
[ $nfail -eq 0 ]
