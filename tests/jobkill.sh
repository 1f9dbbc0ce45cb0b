#!/bin/sh
# jobkill.sh - the job-kill requirement: in a 4-rank ptlrun job over shmem
# where rank 2 SIGKILLs itself, ptlrun must end the job within 5 s with a
# message naming rank 2, exit non-zero, and leave no /dev/shm/p3shm-* segment
# of that job behind.  Runs once per progress mode.  Exit 77 (skip) only
# when ptlrun is not built.
set -u
top_builddir=${top_builddir:-..}
PTLRUN="$top_builddir/tools/ptlrun/ptlrun"
PROG="./jobkill_prog"
[ -x "$PROG" ] || PROG="$top_builddir/tests/jobkill_prog"

if [ ! -x "$PTLRUN" ]; then
	echo "SKIP: $PTLRUN is not built (tools/ptlrun)"
	exit 77
fi
[ -x "$PROG" ] || { echo "FAIL: $PROG not built"; echo "0 passed, 1 failed"; exit 1; }

uid=$(id -u)
pass=0
nfail=0
for mode in app thread; do
	t0=$(date +%s%N)
	out=$(timeout 30 "$PTLRUN" -n 4 --nal shmem --progress "$mode" "$PROG" 2 2>&1)
	rc=$?
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	echo "$out"
	echo "ptlrun exit $rc after $ms ms (progress $mode)"
	ok=1
	if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
		echo "FAIL: ptlrun exit status $rc: expected the failure of rank 2 (not 0, not a timeout)"
		ok=0
	fi
	if [ $ms -ge 5000 ]; then
		echo "FAIL: the job took $ms ms to end after a rank was killed (limit 5000 ms)"
		ok=0
	fi
	if ! echo "$out" | grep -E 'ptlrun:.*rank 2[^0-9]' >/dev/null; then
		echo "FAIL: no ptlrun message naming rank 2"
		ok=0
	fi
	jid=$(echo "$out" | sed -n 's/.*jobkill_prog: rank [0-9]* of 4 up, jid \([0-9][0-9]*\).*/\1/p' | head -n 1)
	if [ -z "$jid" ]; then
		echo "FAIL: could not learn the job id from the ranks' output"
		ok=0
	else
		left=0
		for f in /dev/shm/p3shm-"$uid"-"$jid"-*; do
			[ -e "$f" ] || continue
			echo "left behind: $f"
			rm -f "$f"
			left=$((left + 1))
		done
		if [ "$left" -ne 0 ]; then
			echo "FAIL: $left /dev/shm/p3shm-$uid-$jid-* segment(s) left behind"
			ok=0
		fi
	fi
	if [ $ok -eq 1 ]; then
		echo "PASS: job kill, progress $mode"
		pass=$((pass + 1))
	else
		nfail=$((nfail + 1))
	fi
done
echo "$pass passed, $nfail failed"
[ $nfail -eq 0 ]
