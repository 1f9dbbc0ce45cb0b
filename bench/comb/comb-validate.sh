#!/bin/sh
# bench/comb: known-answer validation of COMB's availability.
#
# The worker is pinned alone on CPU A, the support process on CPU B.
#  1. No load: availability A0 at a 10 ms poll interval must be >= 95 %.
#  2. comb_load, pinned to CPU A, steals a known CPU-time share F of it
#     during every messaging phase (it consumes F x 20 ms of its own CPU
#     time in every 20 ms period, then sleeps; SIGUSR1/SIGUSR2 from comb
#     switch it on and off around the messaging phase only, so the dry run
#     stays unloaded).  The worker then keeps 1 - F of its CPU, so COMB must
#     report availability (1 - F) A0 +- 5 points (F = 0.25 and 0.10; A0 is
#     the measured no-load figure, i.e. the small MPI overhead at this
#     interval scales with the CPU the worker keeps).
#  3. Post-work-wait, F = 0.25: the work phase takes 1/(1 - F) longer, so
#     100 x work_dry / work = (1 - F) R0 +- 5, R0 the unloaded ratio.
# (A load that spins a fixed *wall-clock* duty d instead, --wall, does not
# give the naive 1 - d/2: CFS credits the sleeper when it wakes, so it gets
# more than half while spinning; measured d = 0.5 -> ~70 %, d = 0.25 ->
# ~81 %.  The CPU-time budget is what makes the expected value exact.)
# On a shared machine other sessions compete for CPU A; as root the worker
# and the load run in their own sessions (autogroups) at nice -15 so that
# they keep the CPU.  comb alternates dry and messaging runs (A B A B ... A,
# 9 messaging runs), measures a disturbed dry run again and reports the
# median, so a burst of other load moves one run, not the figure.  Each check
# still gets three attempts.
#
# Tolerance: COMB_VALIDATE_TOL points (default 5, the known-answer check,
# run it by hand on a quiet machine: `COMB_VALIDATE_TOL=5 ./comb-validate.sh`
# in the build's bench/comb).  Under `make check` (COMB_VALIDATE_TOL=25, set
# in Makefile.am) it is a gross-regression guard only: benchmarks measure,
# and a CI machine shared with other jobs moved these figures by 20 points
# (availability 113 % under load once).  Every figure is printed either way.
MPIEXEC=${MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)}
if [ -z "$MPIEXEC" ]; then echo "SKIP: no mpiexec found"; exit 77; fi
if [ ! -x ./comb ] || [ ! -x ./comb_load ]; then echo "SKIP: comb not built (no mpicc)"; exit 77; fi
cpus=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0))[:2])))' 2>/dev/null)
set -- $cpus
if [ $# -lt 2 ]; then echo "SKIP: need two CPUs to pin worker and support apart"; exit 77; fi
A=$1; B=$2
NICE=""
if [ "$(id -u)" = 0 ]; then NICE="--nice -15"; fi
out=$(mktemp -d /tmp/comb-validate.XXXXXX) || exit 99
LOADPID=""
cleanup() { [ -n "$LOADPID" ] && kill "$LOADPID" 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT
TOL=${COMB_VALIDATE_TOL:-5}
COMB="./comb poll -s 100k -q 4 --unit us --min-interval 10000 --max-interval 10000 --work-us 100000 --dry-runs 3 --reps 9 --cpus $A,$B $NICE"

PWW="./comb pww -s 100k --unit us --min-interval 10000 --max-interval 10000 --iters 10 --dry-runs 3 --reps 9 --cpus $A,$B $NICE"
workratio() {   # PWW: 100 x work_dry / work (the work phase's share of the CPU)
    timeout 120 "$MPIEXEC" -n 2 $PWW "$@" >"$out/p" 2>"$out/e" || { cat "$out/e" >&2; echo -1; return; }
    # A point whose availability came out above 100 % is printed as a
    # '# not published:' row (comb.c), but its work figures are still the
    # ones validated here: read them from that row too.
    sed 's/^# not published: //' "$out/p" |
        awk '!/^#/ && NF >= 8 && $6 > 0 { r = 100 * $8 / $6 } END { print (r == "" ? -1 : r) }'
}
avail() {   # runs comb with extra args, prints the availability column
    timeout 120 "$MPIEXEC" -n 2 $COMB "$@" >"$out/o" 2>"$out/e" || { cat "$out/e" >&2; echo -1; return; }
    awk '!/^#/ && NF == 4 { a = $4 } END { print (a == "" ? -1 : a) }' "$out/o"
}
within() { awk -v m="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(m >= lo && m <= hi) }'; }

fails=0
ok=0
for attempt in 1 2 3; do
    a0=$(avail)
    echo "no load: availability $a0 % (expected >= $((100 - TOL))), attempt $attempt"
    if within "$a0" $((100 - TOL)) $((102 + TOL)); then ok=1; break; fi
done
[ $ok = 1 ] || { echo "FAIL: availability without load"; fails=$((fails + 1)); }
for attempt in 1 2 3; do
    r0=$(workratio)
    echo "pww no load: work_dry/work $r0 % (the same work timed alone and beside messaging: ~100 without load; the 0.25 check's baseline), attempt $attempt"
    within "$r0" 0 1000 && break
done
within "$r0" 0 1000 || { echo "FAIL: pww without load gave no work figure"; fails=$((fails + 1)); }

for share in 0.25 0.10; do
    expect=$(awk -v f=$share -v a0="$a0" 'BEGIN { if (a0 > 100) a0 = 100; printf "%.1f", a0 * (1 - f) }')
    lo=$(awk -v e="$expect" -v t="$TOL" 'BEGIN { print e - t }'); hi=$(awk -v e="$expect" -v t="$TOL" 'BEGIN { print e + t }')
    rm -f "$out/pid"
    ./comb_load --cpu "$A" --share "$share" --period-ms 20 $NICE --pidfile "$out/pid" &
    LOADPID=$!
    for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$out/pid" ] && break; sleep 0.1; done
    ok=0
    for attempt in 1 2 3; do
        a=$(avail --load-pid "$LOADPID")
        echo "load share $share: availability $a % (expected $expect +- $TOL), attempt $attempt"
        if within "$a" "$lo" "$hi"; then ok=1; break; fi
    done
    [ $ok = 1 ] || { echo "FAIL: availability with load share $share"; fails=$((fails + 1)); }
    if [ "$share" = 0.25 ]; then
        # PWW: the work phase is inflated by the stolen share
        pexp=$(awk -v f=$share -v r="$r0" 'BEGIN { if (r > 100) r = 100; printf "%.1f", r * (1 - f) }')
        ok=0
        for attempt in 1 2 3; do
            r=$(workratio --load-pid "$LOADPID")
            echo "pww load share $share: work_dry/work $r % (expected $pexp +- $TOL), attempt $attempt"
            if within "$r" "$(awk -v e=$pexp -v t=$TOL 'BEGIN{print e-t}')" "$(awk -v e=$pexp -v t=$TOL 'BEGIN{print e+t}')"; then
                ok=1; break; fi
        done
        [ $ok = 1 ] || { echo "FAIL: pww work phase with load share $share"; fails=$((fails + 1)); }
    fi
    kill "$LOADPID"; wait "$LOADPID" 2>/dev/null; LOADPID=""
done
echo "comb-validate: $fails failure(s)"
[ "$fails" -eq 0 ]
