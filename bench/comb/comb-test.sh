#!/bin/sh
# bench/comb: COMB smoke test: both methods, a short interval sweep, two
# sizes, text and CSV output; rows checked with p3bench_check.py.
srcdir=${srcdir:-$(dirname "$0")}
MPIEXEC=${MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)}
if [ -z "$MPIEXEC" ]; then echo "SKIP: no mpiexec found"; exit 77; fi
if [ ! -x ./comb ]; then echo "SKIP: comb not built (no mpicc at configure time)"; exit 77; fi
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
CHECK="python3 $srcdir/../osu/p3bench_check.py comb"
out=$(mktemp -d /tmp/comb-test.XXXXXX) || exit 99
trap 'rm -rf "$out"' EXIT
fails=0
NICE=""
if [ "$(id -u)" = 0 ]; then NICE="--nice -15"; fi   # see comb-validate.sh
t() {
    mode=$1; shift
    if ! timeout 120 "$MPIEXEC" -n 2 ./comb "$mode" "$@" >"$out/o" 2>"$out/e"; then
        echo "FAIL: comb $mode $*"; cat "$out/o" "$out/e"; fails=$((fails + 1)); return
    fi
    cat "$out/o"
    if ! $CHECK "$out/o" --mode "$mode"; then
        echo "FAIL: comb $mode $* (output check)"; fails=$((fails + 1)); return
    fi
    echo "ok: comb $mode $*"
}
t poll -s 5k,100k -q 4 --min-interval 10000 --max-interval 1000000 --step x10 --work-us 20000 --dry-runs 2 $NICE
t poll -s 1k -q 1 --min-interval 50 --max-interval 200 --step x2 --unit us --work-us 50000 --reps 3 --no-pin
t pww -s 5k,100k --min-interval 10 --max-interval 1000 --step x10 --unit us --iters 10 --dry-runs 2 --reps 2 --run-us 5000 $NICE
# CSV output: medians with their spread; no availability above 100 % published
if timeout 60 "$MPIEXEC" -n 2 ./comb poll -s 4096 --min-interval 100000 --max-interval 100000 --work-us 20000 --reps 3 --csv $NICE >"$out/s" 2>&1 &&
   python3 - "$out/s" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
assert len(rows) == 1, rows
r = rows[0]
assert r["reps"] == "3", r
if r["status"] == "over-100":
    assert r["availability_pct"] == "", r
else:
    a, lo, hi = (float(r[k]) for k in ("availability_pct", "availability_min", "availability_max"))
    assert lo <= a <= hi <= 100.0, r  # no repetition above 100 % is published
    assert 0 < float(r["msg_worker_cpu_share"]) <= 1.0, r
PY
then
    echo "ok: comb --csv spread columns"
else
    echo "FAIL: comb --csv spread columns"; cat "$out/s"; fails=$((fails + 1))
fi
# CSV output
if timeout 60 "$MPIEXEC" -n 2 ./comb pww -s 4096 --min-interval 1000 --max-interval 1000 --iters 5 --csv >"$out/c" 2>&1 &&
   grep -qx 'size,interval,bandwidth_MBps,availability_pct,post_us,work_us,wait_us,work_dry_us,reps,availability_min,availability_max,bandwidth_min,bandwidth_max,dry_redone,dry_disturbed,rep_redone,remeasured,msg_worker_cpu_share,msg_worker_nivcsw,status' "$out/c" &&
   [ "$(grep -c '^4096,1000,' "$out/c")" = 1 ]; then
    echo "ok: comb --csv"
else
    echo "FAIL: comb --csv"; cat "$out/c"; fails=$((fails + 1))
fi
# --calibration: the given work-loop speed is used, and said to be given
if timeout 60 "$MPIEXEC" -n 2 ./comb pww -s 4096 --unit us --min-interval 200 --max-interval 200 --iters 5 --reps 1 --calibration 0.5 >"$out/k" 2>&1 &&
   grep -q '^# calibration: 0.500 work-loop iterations per us (given)' "$out/k"; then
    echo "ok: comb --calibration"
else
    echo "FAIL: comb --calibration"; cat "$out/k"; fails=$((fails + 1))
fi
# usage errors
if "$MPIEXEC" -n 2 ./comb pww --calibration 5 >/dev/null 2>&1; then echo "FAIL: comb --calibration without --unit us accepted"; fails=$((fails + 1)); fi
if "$MPIEXEC" -n 2 ./comb pww --unit us --calibration 0 >/dev/null 2>&1; then echo "FAIL: comb --calibration 0 accepted"; fails=$((fails + 1)); fi
if "$MPIEXEC" -n 2 ./comb bogus >/dev/null 2>&1; then echo "FAIL: comb bogus accepted"; fails=$((fails + 1)); fi
if "$MPIEXEC" -n 1 ./comb poll >/dev/null 2>&1; then echo "FAIL: comb ran with 1 process"; fails=$((fails + 1)); fi
echo "comb-test: $fails failure(s)"
[ "$fails" -eq 0 ]
