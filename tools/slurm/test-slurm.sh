#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# test-slurm.sh BUILD_DIR - libportals3 launched by Slurm: brings up a bed of
# two namespace nodes (tools/slurm-bed, tag "slci"), runs the srun cases and
# tears the bed down (also on failure or signal).  Cases:
#   pmi_probe under srun --mpi=pmi2 and --mpi=pmix (4 ranks on 2 nodes: the
#     runtime picks the launcher's PMI, exchanges ids twice, one job id);
#   rt_hello's put ring over udp (--mpi=pmix, 4 ranks) and ether (--mpi=pmi2,
#     one rank per node: the ether NAL cannot reach a rank on its own veth);
#   ptlbench latency, 4 ranks = 2 cross-node pairs, udp/pmix and ether/pmi2;
#   frame authentication with the key handed out by PMI (P3_RMPP_AUTH=on, no
#     key given; portals/runtime/pmi_authkey.c): rt_hello's ring over udp
#     across the nodes (--mpi=pmix, 4 ranks), and a forger (--multi-prog
#     --mpi=pmi2: rank 1 holds a key of its own) whose frames rank 0 drops
#     and counts (auth_drops), nothing delivered;
#   an MPI ping-pong (payload checked) over the ptl3 adapter, udp, srun
#     --mpi=pmi2: the cached MPICH is hydra-built and speaks no PMIx.
# Skips (77) with the reason where the bed cannot come up (not root, Slurm
# not installed).  Bounded: every srun has a timeout; about 60 s in all.
set -u
B=${1:?usage: test-slurm.sh BUILD_DIR}
B=$(cd "$B" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
bed=$top/tools/slurm-bed
tag=${P3_SLURM_TEST_TAG:-slci}
tmp=$(mktemp -d /tmp/p3-test-slurm.XXXXXX)
chmod 755 "$tmp"
fails=0
passes=0
start=$(date +%s)

"$bed" up --tag "$tag" --nodes 2 --cpus 2 >"$tmp/up" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	sed -n 's/^slurm-bed: SKIP: /SKIP: /p' "$tmp/up"
	rm -rf "$tmp"
	exit 77
fi
cleanup() {
	"$bed" down --tag "$tag" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ $rc -ne 0 ]; then
	cat "$tmp/up"
	echo "FAIL: slurm-bed up"
	exit 1
fi

ok() { echo "ok - $1"; passes=$((passes + 1)); }
not_ok() {
	echo "not ok - $1"
	sed 's/^/    /' "$tmp/out" | tail -30
	fails=$((fails + 1))
}
# srun_case NAME SECONDS SRUN-ARGS... : runs srun on the controller host
srun_case() {
	local secs=$2
	shift 2
	"$bed" run --tag "$tag" timeout "$secs" srun "$@" >"$tmp/out" 2>&1
}

for mpi in pmi2 pmix; do
	name=PMI-2
	[ $mpi = pmix ] && name=PMIx
	if srun_case probe 30 -N 2 -n 4 --mpi=$mpi "$B/tools/ptlrun/pmi_probe" &&
		[ "$(grep -c "via $name round [01] ok$" "$tmp/out")" -eq 8 ] &&
		[ "$(sed -n 's/.* jid \([0-9]*\) .*/\1/p' "$tmp/out" | sort -u | wc -l)" -eq 1 ]; then
		ok "pmi_probe: srun -N 2 -n 4 --mpi=$mpi: 4 ranks exchanged ids twice via $name"
	else
		not_ok "pmi_probe: srun -N 2 -n 4 --mpi=$mpi"
	fi
done

hello() { # mpi nal nranks
	if srun_case hello 30 -N 2 -n "$3" --mpi="$1" \
		--export=ALL,PTL_NAL="$2",P3_RMPP_IFNAME=eth0 "$B/tools/ptlrun/rt_hello" &&
		[ "$(grep -c "of $3 jid [0-9]*: got 'hello from" "$tmp/out")" -eq "$3" ]; then
		ok "rt_hello: srun -N 2 -n $3 --mpi=$1, $2: every rank got its ring message"
	else
		not_ok "rt_hello: srun -N 2 -n $3 --mpi=$1, $2"
	fi
}
hello pmix udp 4
hello pmi2 ether 2

# Frame authentication, the key from PMI: the ring is delivered with MACs
# under rank 0's key; a rank with a key of its own is a forger.
if srun_case authring 30 -N 2 -n 4 --mpi=pmix \
	--export=ALL,PTL_NAL=udp,P3_RMPP_IFNAME=eth0,P3_RMPP_AUTH=on,P3_RMPP_STATS=1 \
	"$B/tools/ptlrun/rt_hello" && [ "$(grep -c "of 4 jid [0-9]*: got 'hello from" "$tmp/out")" -eq 4 ] &&
	! grep -q auth_drops "$tmp/out"; then
	ok "rt_hello: srun -N 2 -n 4 --mpi=pmix, udp, P3_RMPP_AUTH=on with the key from PMI"
else
	not_ok "rt_hello: srun -N 2 -n 4 --mpi=pmix, udp, P3_RMPP_AUTH=on with the key from PMI"
fi
forged=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
printf '0 %s\n1 env P3_RMPP_AUTH_KEY=%s %s\n' "$B/tools/ptlrun/rt_hello" "$forged" \
	"$B/tools/ptlrun/rt_hello" >"$tmp/forger.conf"
srun_case forger 30 -N 2 -n 2 --mpi=pmi2 -l --multi-prog \
	--export=ALL,PTL_NAL=udp,P3_RMPP_IFNAME=eth0,P3_RMPP_AUTH=on,P3_RMPP_STATS=1,RT_HELLO_TRIES=10 \
	"$tmp/forger.conf"
drops0=$(awk '$1 == "0:" && $2 == "auth_drops" { print $3 }' "$tmp/out")
if [ "${drops0:-0}" -ge 1 ] && ! grep -q "got 'hello" "$tmp/out"; then
	ok "forger (srun --multi-prog, rank 1 with its own key): rank 0 dropped and counted $drops0 frames"
else
	not_ok "forger: rank 0 auth_drops ${drops0:-none}"
fi

bench() { # mpi nal
	if srun_case ptlbench 60 -N 2 -n 4 --mpi="$1" \
		--export=ALL,PTL_NAL="$2",P3_RMPP_IFNAME=eth0 "$B/bench/ptlbench/ptlbench" \
		-t lat -m 0:1024 -i 200 -x 20 --no-ref &&
		grep -q "^# nal: $2 " "$tmp/out" && grep -q "^# ranks: 4, 2 pairs" "$tmp/out" &&
		grep -q "^1024 " "$tmp/out"; then
		ok "ptlbench: srun -N 2 -n 4 --mpi=$1, $2: 2 cross-node pairs, 1024 B latency $(awk '$1 == 1024 {print $2}' "$tmp/out") us"
	else
		not_ok "ptlbench: srun -N 2 -n 4 --mpi=$1, $2"
	fi
}
bench pmix udp
bench pmi2 ether

# An MPI program over the ptl3 adapter under srun.
if mpich=$("$top/mpi-adapter/build-mpich" --print-prefix 2>/dev/null) &&
	[ -e "$B/mpi-adapter/.libs/libptl3-fi.so" ] &&
	"$mpich/bin/mpicc" -O2 -o "$tmp/pingpong" "$top/mpi-adapter/tests/pingpong.c" 2>"$tmp/out"; then
	env="ALL,FI_PROVIDER=ptl3,FI_PROVIDER_PATH=$B/mpi-adapter/.libs,FI_PTL3_NAL=udp"
	env="$env,P3_RMPP_IFNAME=eth0,MPIR_CVAR_NOLOCAL=1"
	env="$env,LD_LIBRARY_PATH=$mpich/lib:$B/portals/.libs"
	if srun_case mpi 60 -N 2 -n 2 --mpi=pmi2 --export="$env" "$tmp/pingpong" 20 65536 &&
		grep -q "^pingpong: OK (0 errors)" "$tmp/out"; then
		ok "MPI ping-pong over ptl3 (udp): srun -N 2 -n 2 --mpi=pmi2"
	else
		not_ok "MPI ping-pong over ptl3 (udp): srun -N 2 -n 2 --mpi=pmi2"
	fi
else
	echo "skip - MPI over ptl3 under srun: no cached MPICH ch4:ofi or no provider in $B"
fi

echo "test-slurm: $passes passed, $fails failed ($(($(date +%s) - start)) s)"
[ $fails -eq 0 ]
