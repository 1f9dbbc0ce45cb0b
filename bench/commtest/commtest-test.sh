#!/bin/sh
# bench/commtest: both programs, SWAP and SENDRECV, all 21 protocols, deadlock
# detection (unsafe order-0 extensions), 4-process runs with every distance
# and node-0 mode.  Rows checked with p3bench_check.py.
srcdir=${srcdir:-$(dirname "$0")}
MPIEXEC=${MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)}
if [ -z "$MPIEXEC" ]; then echo "SKIP: no mpiexec found"; exit 77; fi
if [ ! -x ./commtest ] || [ ! -x ./commtest_prepost ]; then
    echo "SKIP: commtest not built (no mpicc at configure time)"; exit 77; fi
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
CHECK="python3 $srcdir/../osu/p3bench_check.py commtest"
out=$(mktemp -d /tmp/commtest-test.XXXXXX) || exit 99
trap 'rm -rf "$out"' EXIT
fails=0
# run NP PROG "CHECK ARGS" PROG ARGS...
run() {
    np=$1; prog=$2; cargs=$3; shift 3
    if ! timeout 300 "$MPIEXEC" -n "$np" "./$prog" "$@" >"$out/o" 2>"$out/e"; then
        echo "FAIL: $prog -n $np $*"; cat "$out/o" "$out/e"; fails=$((fails + 1)); return
    fi
    if ! eval "$CHECK \"$out/o\" $cargs"; then
        echo "FAIL: $prog -n $np $* (output check)"; cat "$out/o"; fails=$((fails + 1)); return
    fi
    echo "ok: $prog -n $np $* ($(grep -vc '^#' "$out/o") rows)"
}
run 2 commtest "" -s 16384 -l 4096 -i 2 -T 5
run 2 commtest "" -s 16384 -l 8192 -i 2 -T 5 -t sendrecv
run 2 commtest_prepost "" -s 16384 -l 4096 -i 2 -T 5 -t both
# unsafe extensions: Ssend;Recv always deadlocks, Send;Recv above the eager
# limit (1 MiB packets here); the run must report them and carry on.
run 2 commtest "--protocols '0,9' --deadlock '0,11 0,10'" -s 1048576 -l 1048576 -i 1 -T 1 -p 0:11,0:10,0:9
# 4 processes: every distance, both patterns, a few protocols; node 0 mode
run 4 commtest "--protocols '0,3 1,6'" -s 4096 -l 2048 -i 1 -T 5 -t both -d all -p 0:3,1:6
run 4 commtest_prepost "--protocols '0,4 1,5'" -s 4096 -l 4096 -i 1 -T 5 -d 2 -z -p 0:4,1:5
# odd SENDRECV cycle: order-1 protocol 6 cannot complete there (low-low pair)
run 3 commtest "--protocols '1,0' --deadlock '1,6'" -s 4096 -l 4096 -i 1 -T 1 -t sendrecv -p 1:0,1:6
# errors
if "$MPIEXEC" -n 1 ./commtest >/dev/null 2>&1; then echo "FAIL: ran with 1 process"; fails=$((fails + 1)); fi
if "$MPIEXEC" -n 2 ./commtest -p 2:1 >/dev/null 2>&1; then echo "FAIL: bad protocol accepted"; fails=$((fails + 1)); fi
echo "commtest-test: $fails failure(s)"
[ "$fails" -eq 0 ]
