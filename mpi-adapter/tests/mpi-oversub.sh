#!/bin/sh
# Oversubscription by default (issue 18 item 6): 4 MPI ranks on 2 CPUs over
# ptl3/shmem, no variable set.  The adapter must see it (the OSU header's
# "# p3stack ptl3: ... oversubscribed" line) and osu_allreduce 64 B must stay
# within 5x of the 2-rank figure (busy-polling ranks took 11-17 ms, 4000x).
# Runs alternate 2 and 4 ranks, OVERSUB_ROUNDS (default 3) times each; the
# best figure of each is compared.  The machine is shared: when its 1-minute
# load is above the CPU count the 5x is not asserted, only a gross guard of
# 50x (busy polling is still caught), and the test says so.  ~15 s.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
osu="$P3_BUILDDIR/bench/osu/osu_allreduce"
[ -x "$osu" ] || { echo "SKIP: $osu not built (no mpicc)"; exit 77; }
command -v taskset >/dev/null || { echo "SKIP: no taskset (util-linux)"; exit 77; }
cpus=$(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' | awk -F- '{ if (NF == 2) for (i = $1; i <= $2; i++) print i; else print $1 }' | head -2 | paste -sd,)
case "$cpus" in *,*) ;; *) echo "SKIP: needs 2 CPUs (have $cpus)"; exit 77 ;; esac
unset FI_PTL3_YIELD_POLLS FI_PTL3_BLOCK_MS P3_OVERSUBSCRIBED P3_LOCAL_RANKS P3_NODE_CPUS \
	P3_SHMEM_SPIN_YIELD P3_RMPP_SPIN_YIELD

one() { # np round -> latency (us) of 64 B on stdout
	taskset -c "$cpus" "$P3MPIRUN" -n "$1" --nal shmem --timeout 60 "$osu" -m 64:64 -i 2000 \
		>"$TMPD/out.$1.$2" 2>&1 || { cat "$TMPD/out.$1.$2"; fail "osu_allreduce on $1 ranks failed"; }
	awk '$1 == 64 { print $2 }' "$TMPD/out.$1.$2"
}
rounds=${OVERSUB_ROUNDS:-3}
best2="" best4=""
r=1
while [ $r -le "$rounds" ]; do
	a=$(one 2 $r)
	b=$(one 4 $r)
	echo "round $r: 2 ranks $a us, 4 ranks $b us"
	best2=$(echo "${best2:-$a} $a" | awk '{ print ($2 < $1) ? $2 : $1 }')
	best4=$(echo "${best4:-$b} $b" | awk '{ print ($2 < $1) ? $2 : $1 }')
	r=$((r + 1))
done
grep -q '^# p3stack ptl3: 4 local ranks (MPI_LOCALNRANKS) on 2 CPUs: oversubscribed' "$TMPD/out.4.1" ||
	{ cat "$TMPD/out.4.1"; fail "4 ranks on 2 CPUs: the header does not say oversubscribed"; }
if grep -q '^# p3stack' "$TMPD/out.2.1"; then
	cat "$TMPD/out.2.1"
	fail "2 ranks on 2 CPUs: a p3stack note in the header (not oversubscribed)"
fi
ratio=$(awk -v a="$best4" -v b="$best2" 'BEGIN { printf "%.1f", a / b }')
echo "osu_allreduce 64 B, best of $rounds: 2 ranks $best2 us, 4 ranks $best4 us: ${ratio}x"
if awk -v r="$ratio" 'BEGIN { exit !(r <= 5) }'; then
	echo "PASS: 4 ranks on 2 CPUs within 5x of 2 ranks, no variable set (${ratio}x)"
	exit 0
fi
load=$(cut -d' ' -f1 /proc/loadavg)
awk -v l="$load" 'BEGIN { exit !(l > 2) }' || fail "4 ranks on 2 CPUs ${ratio}x the 2-rank figure (limit 5x; load $load)"
# Other processes hold the CPUs: every rank waits for them, and the 5x says
# nothing.  Guard against busy polling instead: the same run with the
# detection forced off must be at least 4x slower.
P3_OVERSUBSCRIBED=0 taskset -c "$cpus" "$P3MPIRUN" -n 4 --nal shmem --timeout 60 "$osu" -m 64:64 -i 200 \
	>"$TMPD/out.busy" 2>&1 || { cat "$TMPD/out.busy"; fail "osu_allreduce, busy polling, failed"; }
busy=$(awk '$1 == 64 { print $2 }' "$TMPD/out.busy")
gain=$(awk -v a="$busy" -v b="$best4" 'BEGIN { printf "%.1f", a / b }')
echo "machine loaded (1-min load $load > 2 CPUs): 5x not asserted; busy polling (P3_OVERSUBSCRIBED=0) $busy us, ${gain}x slower than the default"
awk -v g="$gain" 'BEGIN { exit !(g >= 4) }' || fail "the default is only ${gain}x faster than busy polling (limit 4x)"
echo "PASS (loaded machine): oversubscription detected, ${gain}x faster than busy polling"
