#!/bin/sh
# MPI over the myrinet NAL (the emulated NIC, nal/myrinet): p3mpirun --nal
# myrinet starts a private mcpd for each job and stops it afterwards.  For
# each progress mode: the ping-pong (every payload verified, eager and long
# sizes, collectives), in offload reorder (3000 messages against receives
# posted four at a time: MPI's matching order, checked), then a short
# osu_latency; Portals drop count 0 and no stale data on both ranks; the
# job's NIC is gone afterwards; in offload also a ping-pong in the benchmark
# placement (ranks on CPUs 0 and 1, the NIC beside rank 1): rank 1 waits in
# PtlEQPoll, rank 0 yields (ptl3_wait.c).  Last, the NIC is SIGKILLed under a running
# job: the job must fail within 10 s and p3mpirun must name the NIC.
# Three processes share 2 cores (two ranks and the NIC): the ranks yield
# after 64 empty polls (FI_PTL3_YIELD_POLLS), as run-mpich-tests does when
# ranks outnumber CPUs.  Bounded: each job has a 120 s limit; 65 s in all
# (3 modes) at load average ~200 on the shared 2-core machine.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
build_mpi_prog pingpong
build_mpi_prog reorder
MODES=${P3_MYRI_MPI_MODES:-app thread interrupt offload}
OSU="$P3_BUILDDIR/bench/osu/osu_latency"
FI_PTL3_YIELD_POLLS=${FI_PTL3_YIELD_POLLS:-64}
export FI_PTL3_YIELD_POLLS
# The jobs' NICs (one host) put Portals pid P on UDP port base + P, P picked
# from the rank's process id (1..4160): a base below the udp and myrinet
# defaults (21000, 23000) that other jobs on a shared machine may crowd.
P3_MYRI_BASE_PORT=${P3_MYRI_BASE_PORT:-8000}
export P3_MYRI_BASE_PORT

check_counters() { # file mode
	n=$(grep -c 'ptl3 counters' "$1" || true)
	[ "$n" -ge 2 ] || { cat "$1"; fail "$2: counters not printed by both ranks"; }
	grep 'ptl3 counters' "$1" | grep -q "nal myrinet progress $2\]" ||
		{ grep 'ptl3 counters' "$1"; fail "$2: the NI is not myrinet/$2"; }
	if grep 'ptl3 counters' "$1" | grep -qv 'portals_drop_count 0 '; then
		grep 'ptl3 counters' "$1"
		fail "$2: Portals dropped messages"
	fi
	if grep 'ptl3 counters' "$1" | grep -qv 'stale_data 0 '; then
		grep 'ptl3 counters' "$1"
		fail "$2: data landed for finished operations"
	fi
}

no_nic_left() { # file: the NIC p3mpirun named (-v) must be gone
	pid=$(sed -n 's/^p3mpirun: NIC mcpd [^ ]* pid \([0-9]*\).*/\1/p' "$1" | head -1)
	[ -n "$pid" ] || { cat "$1"; fail "p3mpirun -v did not name its NIC"; }
	if kill -0 "$pid" 2>/dev/null; then
		fail "the job's NIC (mcpd pid $pid) is still running"
	fi
}

# The benchmark placement (nproc >= 2): rank 0 alone on CPU 0, rank 1 and
# the NIC on CPU 1.  Rank 1's idle CQ reads must wait in PtlEQPoll (its NIC
# may run only on its CPU: PtlNIWaitSpin 0, mpi-adapter/ptl3_wait.c),
# rank 0's must yield as before (FI_PTL3_YIELD_POLLS).
placed_waits() {
	if [ "$(nproc)" -lt 2 ] || ! command -v taskset >/dev/null 2>&1; then
		echo "offload: placed waits skipped (needs 2 CPUs and taskset)"
		return 0
	fi
	out="$TMPD/placed"
	"$P3MPIRUN" -v --nal myrinet --progress offload --nic-cpus 1 --counters --timeout 120 \
		-n 1 taskset -c 0 "$TMPD/pingpong" 100 1048576 : \
		-n 1 taskset -c 1 "$TMPD/pingpong" 100 1048576 >"$out" 2>&1 ||
		{ cat "$out"; fail "placed pingpong over myrinet/offload exited non-zero"; }
	grep -q 'pingpong: OK' "$out" || { cat "$out"; fail "placed pingpong not OK"; }
	check_counters "$out" offload
	no_nic_left "$out"
	grep 'ptl3 waits' "$out" | sed 's/^/offload placed: /'
	[ "$(grep -c 'ptl3 waits' "$out")" -ge 2 ] || { cat "$out"; fail "placed: waits not printed"; }
	grep 'ptl3 waits' "$out" | grep -q 'ni_wait_spin_us 0 yield_polls 64 block_ms 1 (tight loops) .* blocks [1-9]' ||
		{ cat "$out"; fail "placed: the rank beside its NIC did not wait in PtlEQPoll"; }
	grep 'ptl3 waits' "$out" | grep -q 'ni_wait_spin_us 20 yield_polls 64 block_ms 0 yields [1-9][0-9]* blocks 0$' ||
		{ cat "$out"; fail "placed: the rank alone on its CPU did not yield as before"; }
}

for mode in $MODES; do
	out="$TMPD/pp.$mode"
	"$P3MPIRUN" -v -n 2 --nal myrinet --progress "$mode" --counters --timeout 120 \
		"$TMPD/pingpong" 100 1048576 >"$out" 2>&1 ||
		{ cat "$out"; fail "pingpong over myrinet/$mode exited non-zero"; }
	grep -q 'pingpong: OK' "$out" || { cat "$out"; fail "pingpong over myrinet/$mode not OK"; }
	check_counters "$out" "$mode"
	no_nic_left "$out"
	grep 'pingpong:' "$out" | sed "s/^/$mode: /"
	if [ "$mode" = offload ]; then
		# matching order while receives race arrivals: posts the NIC
		# refused are posted again (mpi-adapter/ptl3_repost.c)
		out="$TMPD/reorder.$mode"
		"$P3MPIRUN" -v -n 2 --nal myrinet --progress "$mode" --counters --timeout 120 \
			"$TMPD/reorder" 3000 >"$out" 2>&1 ||
			{ cat "$out"; fail "reorder over myrinet/$mode failed"; }
		grep -q 'reorder: 3000 messages, OK' "$out" ||
			{ cat "$out"; fail "reorder over myrinet/$mode"; }
		check_counters "$out" "$mode"
		no_nic_left "$out"
		grep 'reorder:\|ptl3 reposts' "$out" | sed "s/^/$mode: /"
		placed_waits
	fi
	if [ -x "$OSU" ]; then
		out="$TMPD/osu.$mode"
		"$P3MPIRUN" -v -n 2 --nal myrinet --progress "$mode" --counters --timeout 120 \
			"$OSU" -m 0:4096 -i 100 -x 10 >"$out" 2>&1 ||
			{ cat "$out"; fail "osu_latency over myrinet/$mode exited non-zero"; }
		rows=$(grep -c '^[0-9]' "$out" || true)
		[ "$rows" -eq 14 ] || { cat "$out"; fail "osu_latency over myrinet/$mode: $rows of 14 sizes"; }
		check_counters "$out" "$mode"
		no_nic_left "$out"
		echo "$mode: osu_latency 0 B $(awk '$1 == 0 { print $2 }' "$out") us, 4 KiB $(awk '$1 == 4096 { print $2 }' "$out") us"
	else
		echo "$mode: osu_latency not built ($OSU): skipped that part"
	fi
done

# The NIC dies under a running job.
out="$TMPD/kill"
"$P3MPIRUN" -v -n 2 --nal myrinet --progress thread --timeout 120 \
	"$TMPD/pingpong" 1000000 1048576 >"$out" 2>&1 &
job=$!
nic=""
i=0
while [ -z "$nic" ] && [ $i -lt 500 ]; do
	nic=$(sed -n 's/^p3mpirun: NIC mcpd [^ ]* pid \([0-9]*\).*/\1/p' "$out" | head -1)
	i=$((i + 1))
	sleep 0.02
done
[ -n "$nic" ] || { kill "$job"; wait "$job"; cat "$out"; fail "p3mpirun did not name its NIC"; }
sleep 2 # the ranks are exchanging
t0=$(date +%s)
kill -KILL "$nic"
rc=0
wait "$job" || rc=$?
took=$(($(date +%s) - t0))
[ $rc -ne 0 ] || { cat "$out"; fail "the job succeeded without its NIC"; }
[ $took -le 10 ] || { cat "$out"; fail "the job took ${took}s to end after its NIC died"; }
grep -q "the NIC mcpd p3mpirun-[0-9]* (pid $nic) was killed by signal 9" "$out" ||
	{ cat "$out"; fail "p3mpirun did not say that its NIC was killed"; }
echo "NIC killed: job ended with status $rc within ${took}s, NIC named"
echo "PASS: MPI over ptl3/myrinet ($MODES)"
