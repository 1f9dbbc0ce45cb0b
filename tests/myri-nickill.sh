#!/bin/sh
# myri-nickill.sh - the NIC dies mid-transfer: a 2-rank ptlbench over
# myrinet streams 64 MiB puts; its mcpd gets SIGKILL.  ptlrun must end the
# job within 3 s naming the NIC, exit non-zero, and leave no mcpd behind
# (segments are memfds: nothing can be left in /dev/shm); in `thread` and in
# `offload`.  Then, without ptlrun (myri_bypass --nickill): in `offload`
# the initiator streaming 64 MiB puts and the target waiting in PtlEQWait
# must each see a PTL_NI_FAIL event or an error return within 2 s of the
# SIGKILL, and exit.  Bounded: ~25 s.
. "$(dirname "$0")/myri-lib.sh"
myri_prog myri_bypass # the second part's program
BENCH="$top_builddir/bench/ptlbench/ptlbench"
[ -x "$BENCH" ] || { echo "FAIL: $BENCH not built"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for progress in thread offload; do
echo "--- ptlrun --progress $progress"
"$PTLRUN" -n 2 --nal myrinet --progress $progress --timeout 60 "$BENCH" -t bw -m 64M:64M \
	-i 200 --no-ref --no-verify >"$out" 2>&1 &
job=$!
nic=""
i=0
while [ -z "$nic" ] && [ $i -lt 200 ]; do
	nic=$(pgrep -P "$job" -x mcpd)
	i=$((i + 1))
	sleep 0.02
done
[ -n "$nic" ] || { echo "FAIL: no mcpd child of ptlrun $job"; kill "$job"; exit 1; }
sleep 1.5 # the transfer is under way
t0=$(date +%s%N)
kill -KILL "$nic"
wait "$job"
rc=$?
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
cat "$out"
echo "ptlrun exit $rc, $ms ms after the NIC's SIGKILL"
[ "$rc" -ne 0 ] || { echo "FAIL: ptlrun exited 0"; nfail=$((nfail + 1)); }
[ "$ms" -le 3000 ] || { echo "FAIL: the job took $ms ms to end"; nfail=$((nfail + 1)); }
grep -q "the NIC mcpd ptlrun-$job (pid $nic) was killed by signal 9" "$out" ||
	{ echo "FAIL: ptlrun did not name the NIC"; nfail=$((nfail + 1)); }
if kill -0 "$nic" 2>/dev/null; then echo "FAIL: mcpd $nic still there"; nfail=$((nfail + 1)); fi
[ $nfail -eq 0 ] && echo "PASS ($progress): job ended in $ms ms, NIC named"
done

# offload without ptlrun: the ranks themselves see the failure
P3_MYRI_NIC="nickill-$$"
export P3_MYRI_NIC
"$MCPD" --nic "$P3_MYRI_NIC" --base-port 61000 2>/dev/null & # as in myri-bypass.sh
nic=$!
myri_wait_nic "$P3_MYRI_NIC" || { echo "FAIL: mcpd did not come up"; kill $nic; exit 1; }
timeout 40 "$PROG" --nickill 64 >"$out" 2>&1 &
prog=$!
i=0
until grep -q ready "$out" || [ $i -ge 300 ]; do i=$((i + 1)); sleep 0.05; done
sleep 1 # puts under way
t0=$(date +%s%3N)
kill -KILL $nic
wait $nic 2>/dev/null
wait $prog
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: myri_bypass --nickill exited $rc"; nfail=$((nfail + 1)); }
for role in initiator target; do
	t=$(sed -n "s/^$role: NIC failure seen at \([0-9]*\) ms.*/\1/p" "$out")
	if [ -z "$t" ]; then
		echo "FAIL: the $role saw no failure"
		nfail=$((nfail + 1))
	elif [ $((t - t0)) -gt 2000 ]; then
		echo "FAIL: the $role saw the failure $((t - t0)) ms after the SIGKILL"
		nfail=$((nfail + 1))
	else
		echo "ok: the $role saw the failure $((t - t0)) ms after the SIGKILL"
	fi
done
[ $nfail -eq 0 ] && echo "PASS: NIC kill seen by both processes in offload"
[ $nfail -eq 0 ]
