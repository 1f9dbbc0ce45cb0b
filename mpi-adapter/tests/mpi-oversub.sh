#!/bin/sh
# Oversubscription by default (issue 18 item 6): 4 MPI ranks on 2 CPUs over
# ptl3/shmem, no variable set.  The adapter must see it (the OSU header's
# "# p3stack ptl3: ... oversubscribed" line) and osu_allreduce 64 B must stay
# stay near the 2-rank figure (busy-polling ranks took 11-17 ms, 4000x).
# Runs alternate 2 and 4 ranks, OVERSUB_ROUNDS (default 3) times each; the
# best figure of each is compared, and a busy-polling run is the reference.
# Gross guards (the machine is shared): 4 ranks within 25x of 2 ranks when
# the machine is not loaded by others, and >= 4x faster than busy polling
# always.  Issue 18 asks 5x, which tools/oversub/oversub-measure measures
# (alternated variants, the floor of 4 processes handing off in the same
# run: mpi-adapter/README.md); a test on a shared machine guards only
# against gross regressions.  Pinned ranks (an MPMD launch, taskset per
# rank) are checked too.  ~25 s.
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
grep -q '^# p3stack ptl3: 4 local ranks (MPI_LOCALNRANKS) on 2 CPUs ([a-z ]*): oversubscribed' "$TMPD/out.4.1" ||
	{ cat "$TMPD/out.4.1"; fail "4 ranks on 2 CPUs: the header does not say oversubscribed"; }
if grep -q '^# p3stack' "$TMPD/out.2.1"; then
	cat "$TMPD/out.2.1"
	fail "2 ranks on 2 CPUs: a p3stack note in the header (not oversubscribed)"
fi
# Pinned ranks (as bench/compare runs OSU: an MPMD launch, each rank under
# taskset on one CPU) see one CPU each: the node's CPUs are the union of the
# local ranks' masks (portals/runtime/affinity_board.c).  2 ranks on CPUs a
# and b: not oversubscribed; 4 ranks on a, b, a, b: oversubscribed.
a=${cpus%%,*} b=${cpus#*,}
pinned() { # out-file cpu... : one rank per CPU given
	out=$1
	shift
	cmd=""
	for c in "$@"; do
		cmd="$cmd${cmd:+ :} -n 1 taskset -c $c $osu -m 64:64 -i 200"
	done
	# shellcheck disable=SC2086
	"$P3MPIRUN" --nal shmem --timeout 60 $cmd >"$out" 2>&1 || { cat "$out"; fail "pinned osu_allreduce ($*) failed"; }
}
pinned "$TMPD/out.pin2" "$a" "$b"
if grep -q '^# p3stack' "$TMPD/out.pin2"; then
	cat "$TMPD/out.pin2"
	fail "2 ranks pinned to CPUs $a and $b: called oversubscribed (each sees 1 CPU)"
fi
pinned "$TMPD/out.pin4" "$a" "$b" "$a" "$b"
grep -q "^# p3stack ptl3: 4 local ranks (MPI_LOCALNRANKS) on 2 CPUs (local ranks' affinity): oversubscribed" "$TMPD/out.pin4" ||
	{ cat "$TMPD/out.pin4"; fail "4 ranks pinned to CPUs $a,$b,$a,$b: not called oversubscribed on 2 CPUs"; }
echo "pinned: 2 ranks on CPUs $a,$b not oversubscribed ($(awk '$1 == 64 { print $2 }' "$TMPD/out.pin2") us); 4 ranks on $a,$b,$a,$b oversubscribed ($(awk '$1 == 64 { print $2 }' "$TMPD/out.pin4") us)"
ratio=$(awk -v a="$best4" -v b="$best2" 'BEGIN { printf "%.1f", a / b }')
echo "osu_allreduce 64 B, best of $rounds: 2 ranks $best2 us, 4 ranks $best4 us: ${ratio}x"
# The reference: the same 4 ranks busy-polling (detection forced off), as
# before oversubscription was detected (11-17 ms, thousands of times the
# 2-rank figure).
P3_OVERSUBSCRIBED=0 taskset -c "$cpus" "$P3MPIRUN" -n 4 --nal shmem --timeout 60 "$osu" -m 64:64 -i 200 \
	>"$TMPD/out.busy" 2>&1 || { cat "$TMPD/out.busy"; fail "osu_allreduce, busy polling, failed"; }
busy=$(awk '$1 == 64 { print $2 }' "$TMPD/out.busy")
gain=$(awk -v a="$busy" -v b="$best4" 'BEGIN { printf "%.1f", a / b }')
echo "busy polling (P3_OVERSUBSCRIBED=0): $busy us, ${gain}x slower than the default"
# Gross guards with a wide margin (the machine is shared): the default must
# be within 25x of 2 ranks (issue 18 asks 5x; see mpi-adapter/README.md for
# what was measured) unless other processes hold the CPUs (1-min load above
# the CPU count), and always >= 4x faster than busy polling.
load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l <= 2) }'; then
	awk -v r="$ratio" 'BEGIN { exit !(r <= 25) }' ||
		fail "4 ranks on 2 CPUs ${ratio}x the 2-rank figure (guard 25x; load $load)"
else
	echo "machine loaded (1-min load $load > 2 CPUs): the 25x guard against 2 ranks is not asserted"
fi
awk -v g="$gain" 'BEGIN { exit !(g >= 4) }' || fail "the default is only ${gain}x faster than busy polling (guard 4x)"
echo "PASS: oversubscription detected; 4 ranks ${ratio}x 2 ranks, ${gain}x faster than busy polling"
