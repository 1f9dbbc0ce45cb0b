#!/bin/sh
# bench/osu: run every OSU-style program with tiny sizes/iterations under
# mpiexec and check the 3.6 output format with p3bench_check.py.
# Bandwidth runs start at 1 KiB: with two iterations on a busy 2-core box a
# 1-byte bandwidth can legitimately round to 0.00, which the checker rejects.
# Environment: MPIEXEC (default mpiexec.mpich or mpiexec), OSU_TIMEOUT (s).
srcdir=${srcdir:-$(dirname "$0")}
MPIEXEC=${MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)}
T=${OSU_TIMEOUT:-120}
if [ -z "$MPIEXEC" ]; then echo "SKIP: no mpiexec found"; exit 77; fi
if [ ! -x ./osu_latency ]; then echo "SKIP: OSU programs not built (no mpicc at configure time)"; exit 77; fi
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
CHECK="python3 $srcdir/p3bench_check.py osu"
out=$(mktemp -d /tmp/osu-test.XXXXXX) || exit 99
trap 'rm -rf "$out"' EXIT
fails=0
# run NP PROGRAM CHECKARGS -- PROGARGS
run() {
    np=$1; prog=$2; shift 2
    cargs=""
    while [ "$1" != "--" ]; do cargs="$cargs $1"; shift; done
    shift
    f="$out/$prog.$np.out"
    if ! timeout "$T" "$MPIEXEC" -n "$np" "./$prog" "$@" >"$f" 2>"$f.err"; then
        echo "FAIL: $prog -n $np $*: exit status $?"; cat "$f" "$f.err"; fails=$((fails + 1)); return
    fi
    if ! $CHECK "$prog" "$f" $cargs; then
        echo "FAIL: $prog -n $np $*"; cat "$f"; fails=$((fails + 1)); return
    fi
    echo "ok: $prog -n $np $*"
}

# point-to-point, exactly two processes
run 2 osu_latency --min 0 --max 16384 -- -m 0:16384 -i 20 -x 2
run 2 osu_latency --min 0 --max 64 --hd -- -m 64 -i 5 -x 1 H H
run 2 osu_bw --min 1024 --max 16384 -- -m 1024:16384 -i 2 -x 1 -W 8
run 2 osu_bibw --min 1024 --max 16384 -- -m 1024:16384 -i 2 -x 1 -W 8
run 2 osu_latency_mt --min 0 --max 16384 -- -m 16384 -i 10 -x 2
run 2 osu_multi_lat --min 0 --max 16384 -- -m 16384 -i 10 -x 2
run 4 osu_multi_lat --min 0 --max 1024 -- -m 1024 -i 4 -x 1
run 2 osu_mbw_mr --min 1024 --max 16384 -- -m 1024:16384 -i 2 -x 1 -w 8
run 2 osu_mbw_mr --min 2048 --max 4096 --rate 0 -- -m 2048:4096 -i 2 -x 1 -r 0
run 2 osu_mbw_mr --min 4096 --max 8192 --vary -- -m 4096:8192 -i 1 -x 0 -v
run 4 osu_mbw_mr --min 4096 --max 8192 -- -m 4096:8192 -i 2 -x 1 -w 4 -p 2
# one-sided, default synchronisation and every -s mode on a few programs
for p in osu_put_latency osu_get_latency osu_acc_latency osu_passive_put_latency \
         osu_passive_get_latency osu_passive_acc_latency; do
    run 2 $p --min 0 --max 16384 -- -m 0:16384 -i 5 -x 1
done
for p in osu_put_bw osu_get_bw osu_put_bibw osu_passive_put_bw osu_passive_get_bw; do
    run 2 $p --min 1024 --max 16384 -- -m 1024:16384 -i 2 -x 1 -W 4
done
for s in fence lock flush; do
    # non-default synchronisation adds a '# Synchronization:' line
    run 2 osu_put_latency --min 8 --max 64 --sync -- -m 8:64 -i 5 -x 1 -s $s
    run 2 osu_get_bw --min 4096 --max 8192 --sync -- -m 4096:8192 -i 2 -x 1 -W 4 -s $s
    run 2 osu_put_bibw --min 4096 --max 8192 --sync -- -m 4096:8192 -i 2 -x 1 -W 4 -s $s
done
run 2 osu_passive_put_bw --min 4096 --max 8192 --sync -- -m 4096:8192 -i 2 -x 1 -W 4 -s pscw
# collectives on 2 and 4 processes
for c in allgather allgatherv allreduce alltoall alltoallv bcast gather gatherv reduce \
         reduce_scatter scatter scatterv; do
    run 2 osu_$c --max 16384 -- -m 16384 -i 3 -x 1
    run 4 osu_$c --max 1024 --full -- -m 1024 -i 2 -x 1 -f
done
run 2 osu_barrier -- -i 5 -x 1
run 4 osu_barrier --full -- -i 3 -x 1 -f

# error paths: wrong process count, device buffers, help/version
for p in osu_latency osu_put_bw; do
    if "$MPIEXEC" -n 3 ./$p -m 1 -i 1 >"$out/e.out" 2>"$out/e.err"; then
        echo "FAIL: $p accepted 3 processes"; fails=$((fails + 1))
    elif ! grep -qx "This test requires exactly two processes" "$out/e.err"; then
        echo "FAIL: $p wrong-count message"; cat "$out/e.err"; fails=$((fails + 1))
    else echo "ok: $p rejects 3 processes"; fi
done
if "$MPIEXEC" -n 1 ./osu_bcast -m 1 -i 1 >"$out/e.out" 2>"$out/e.err" ||
   ! grep -qx "This test requires at least two processes" "$out/e.err"; then
    echo "FAIL: osu_bcast with 1 process"; cat "$out/e.err"; fails=$((fails + 1))
else echo "ok: osu_bcast rejects 1 process"; fi
if "$MPIEXEC" -n 2 ./osu_bw D D >"$out/e.out" 2>"$out/e.err" || ! grep -q "no CUDA" "$out/e.err"; then
    echo "FAIL: osu_bw D D"; cat "$out/e.err"; fails=$((fails + 1))
else echo "ok: osu_bw refuses D buffers"; fi
if ! "$MPIEXEC" -n 2 ./osu_allreduce -v >"$out/v.out" ||
   ! grep -qx "# OSU Allreduce Latency Test v3.6" "$out/v.out"; then
    echo "FAIL: osu_allreduce -v"; fails=$((fails + 1))
else echo "ok: osu_allreduce -v"; fi
if ! "$MPIEXEC" -n 2 ./osu_latency -h >"$out/h.out" || ! grep -q "^Usage:" "$out/h.out"; then
    echo "FAIL: osu_latency -h"; fails=$((fails + 1))
else echo "ok: osu_latency -h"; fi

echo "osu-test: $fails failure(s)"
[ "$fails" -eq 0 ]
