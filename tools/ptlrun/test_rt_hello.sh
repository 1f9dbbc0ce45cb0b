#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# test_rt_hello.sh - the whole runtime path with the real library: the
# usual Portals start and a put ring, launched by ptlrun (PTL_* environment,
# both progress modes) and by hydra's mpiexec (PMI exchange at PtlNIInit);
# no shared-memory segment may survive a job.
set -u
PTLRUN=${PTLRUN:-./ptlrun}
RT_HELLO=${RT_HELLO:-./rt_hello}
MPIEXEC=${MPIEXEC:-mpiexec.mpich}
if [ ! -x "$RT_HELLO" ]; then
	echo "SKIP: $RT_HELLO not built (libportals3 missing)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
uid=$(id -u)

check() { # name nranks command...
	local name=$1 n=$2
	shift 2
	local rc jid left
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "not ok - $name: exit status $rc"; cat "$tmp/out" "$tmp/err"; fails=$((fails + 1)); return
	fi
	# the library must remove its own segments (ptlrun would hide a leak)
	jid=$(sed -n 's/.* jid \([0-9]*\): got.*/\1/p' "$tmp/out" | head -n 1)
	left=$(ls /dev/shm | grep -c "^p3shm-$uid-$jid-")
	if grep -q "stale shared-memory" "$tmp/err"; then
		left=$(sed -n 's/.*removed \([0-9]*\) stale.*/\1/p' "$tmp/err")
	fi
	if [ "$(grep -c "of $n jid $jid: got 'hello from" "$tmp/out")" -ne "$n" ]; then
		echo "not ok - $name: not every rank got its message"; cat "$tmp/out" "$tmp/err"
		fails=$((fails + 1))
	elif [ "$left" -ne 0 ]; then
		echo "not ok - $name: $left shared-memory segment(s) of job $jid left behind"
		cat "$tmp/err"
		fails=$((fails + 1))
	else
		echo "ok - $name"
	fi
}
check "ptlrun -n 2" 2 "$PTLRUN" -n 2 --timeout 15 "$RT_HELLO"
check "ptlrun -n 3 --progress app" 3 "$PTLRUN" -n 3 --progress app --timeout 15 "$RT_HELLO"
check "ptlrun -n 3 --progress thread" 3 "$PTLRUN" -n 3 --progress thread --timeout 15 "$RT_HELLO"
check "ptlrun -n 1 (ring of one)" 1 "$PTLRUN" -n 1 --timeout 15 "$RT_HELLO"
# --nal myrinet --hosts 2: one NIC per namespace host on the raw-Ethernet
# wire (root only), in both NIC processing modes; afterwards no NIC of that
# ptlrun may run and its bed must be gone.
myri_hosts() { # progress
	"$PTLRUN" -n 2 --hosts 2 --nal myrinet --progress "$1" --timeout 30 "$RT_HELLO" \
		>"$tmp/myri.out" 2>"$tmp/myri.err" &
	local p=$! rc
	wait $p
	rc=$?
	local nics bed
	nics=$(ps -eo args | grep -c "^[^ ]*mcpd --nic ptlrun-$p ")
	bed=$(printf 'r%05d' $((p % 100000)))
	if [ $rc -ne 0 ] || [ "$(grep -c "of 2 jid [0-9]*: got 'hello from" "$tmp/myri.out")" -ne 2 ]; then
		echo "not ok - ptlrun --hosts 2 --nal myrinet --progress $1: exit $rc"
		cat "$tmp/myri.out" "$tmp/myri.err"; fails=$((fails + 1))
	elif [ "$nics" -ne 0 ] || [ -e "/run/netns/$bed-h0" ]; then
		echo "not ok - ptlrun --hosts 2 --nal myrinet --progress $1: $nics NIC(s) or bed $bed left"
		fails=$((fails + 1))
	else
		echo "ok - ptlrun --hosts 2 --nal myrinet --progress $1 (a NIC per host, ether)"
	fi
}
if [ "$uid" -eq 0 ] && command -v ip >/dev/null 2>&1 && ip netns list >/dev/null 2>&1; then
	myri_hosts offload
	myri_hosts interrupt
else
	echo "skip - ptlrun --hosts --nal myrinet: needs root and ip (network namespaces)"
fi
if command -v "$MPIEXEC" >/dev/null 2>&1; then
	check "mpiexec -n 2 (PMI)" 2 timeout 15 "$MPIEXEC" -n 2 "$RT_HELLO"
	check "mpiexec -n 3 (PMI)" 3 timeout 15 "$MPIEXEC" -n 3 "$RT_HELLO"
else
	echo "skip - mpiexec tests: $MPIEXEC not found"
fi
[ $fails -eq 0 ]
