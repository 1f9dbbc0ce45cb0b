#!/bin/sh
# myri-nickill.sh - the NIC dies mid-transfer: a 2-rank ptlbench over
# myrinet streams 64 MiB puts; its mcpd gets SIGKILL.  ptlrun must end the
# job within 3 s naming the NIC, exit non-zero, and leave no mcpd behind
# (segments are memfds: nothing can be left in /dev/shm).  Bounded: ~10 s.
set -u
top_builddir=${top_builddir:-..}
PTLRUN="$top_builddir/tools/ptlrun/ptlrun"
BENCH="$top_builddir/bench/ptlbench/ptlbench"
for f in "$PTLRUN" "$BENCH"; do
	[ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$PTLRUN" -n 2 --nal myrinet --progress thread --timeout 60 "$BENCH" -t bw -m 64M:64M \
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
nfail=0
[ "$rc" -ne 0 ] || { echo "FAIL: ptlrun exited 0"; nfail=$((nfail + 1)); }
[ "$ms" -le 3000 ] || { echo "FAIL: the job took $ms ms to end"; nfail=$((nfail + 1)); }
grep -q "the NIC mcpd ptlrun-$job (pid $nic) was killed by signal 9" "$out" ||
	{ echo "FAIL: ptlrun did not name the NIC"; nfail=$((nfail + 1)); }
if kill -0 "$nic" 2>/dev/null; then echo "FAIL: mcpd $nic still there"; nfail=$((nfail + 1)); fi
[ $nfail -eq 0 ] && echo "PASS: job ended in $ms ms, NIC named" 
[ $nfail -eq 0 ]
