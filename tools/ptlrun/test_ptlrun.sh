#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# test_ptlrun.sh - ptlrun's behaviour with a scriptable rank (ptlrun_helper):
# environment, output tagging, exit status, rank death, timeout, signals,
# /dev/shm cleanup, option errors.  Needs no Portals library.
set -u
PTLRUN=${PTLRUN:-./ptlrun}
HELPER=${HELPER:-./ptlrun_helper}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
n=0

pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; shift; for f in "$@"; do echo "--- $f:"; cat "$f"; done; }
# run NAME EXPECTED_RC ptlrun-args...: stdout -> $tmp/out, stderr -> $tmp/err
run() {
	local name=$1 want=$2
	shift 2
	"$PTLRUN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	if [ "$rc" -eq "$want" ]; then return 0; fi
	fail "$name: exit status $rc, expected $want" "$tmp/out" "$tmp/err"
	return 1
}
has() { grep -qF -- "$2" "$tmp/$1"; }

# --- environment and maps
if run env 0 -n 3 --progress thread "$HELPER" env; then
	if has out "[2] PTL_MY_RID=2" && has out "[0] PTL_NIDMAP=0:0:0" &&
	   has out "[1] PTL_PIDMAP=0:1:2" && has out "[1] PTL_NAL=shmem" &&
	   has out "[0] PTL_PROGRESS=thread" && grep -q '^\[0\] PTL_MY_JID=[0-9][0-9]*$' "$tmp/out"; then
		pass "environment of each rank"
	else fail "environment of each rank" "$tmp/out"; fi
fi
jids=$(sed -n 's/^\[[0-9]*\] PTL_MY_JID=//p' "$tmp/out" | sort -u | wc -l)
[ "$jids" -eq 1 ] && pass "one job id for all ranks" || fail "one job id for all ranks" "$tmp/out"
if run udp 0 -n 2 --nal udp "$HELPER" env && has out "[1] PTL_NIDMAP=2130706433:2130706433"; then
	pass "udp map: 127.0.0.1, pid = rank"
else fail "udp map" "$tmp/out"; fi
# a busy port 21000+rank moves the job to the next free pid block
if command -v python3 >/dev/null 2>&1; then
	# the holder says when both ports are bound (a fixed sleep was flaky
	# under load) and holds them until killed (at most 60 s)
	rm -f "$tmp/bound"
	python3 -c 'import socket,sys,time
s=[socket.socket(socket.AF_INET,socket.SOCK_DGRAM) for _ in range(2)]
s[0].bind(("127.0.0.1",int(sys.argv[1]))); s[1].bind(("127.0.0.1",int(sys.argv[1])+1))
open(sys.argv[2],"w").close(); time.sleep(60)' \
		$((${P3_RMPP_BASE_PORT:-21000})) "$tmp/bound" &
	holder=$!
	w=0
	while [ ! -e "$tmp/bound" ] && [ $w -lt 200 ] && kill -0 "$holder" 2>/dev/null; do
		sleep 0.05
		w=$((w + 1))
	done
	if [ ! -e "$tmp/bound" ]; then
		fail "udp busy ports: the port holder did not bind 21000/21001 within 10 s (in use?)" /dev/null
	elif run udp-busy 0 -n 2 --nal udp "$HELPER" env && ! has out "[0] PTL_PIDMAP=0:1" &&
	   grep -q '^\[0\] PTL_PIDMAP=[0-9]*:[0-9]*$' "$tmp/out"; then
		pass "udp: busy ports 21000/21001 -> another pid block ($(sed -n 's/^\[0\] PTL_PIDMAP=//p' "$tmp/out"))"
	else fail "udp busy ports" "$tmp/out" "$tmp/err"; fi
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
fi

# --- output: tagging keeps stdout and stderr apart, --no-tag forwards raw
if run tag 0 -n 2 "$HELPER" out:hello err:oops partial:tail; then
	if has out "[0] hello" && has out "[1] hello" && has err "[1] oops" &&
	   ! has out "oops" && ! has err "hello" && has out "[1] tail"; then
		pass "tagged output, stdout and stderr kept apart"
	else fail "tagged output" "$tmp/out" "$tmp/err"; fi
fi
if run notag 0 -n 2 --no-tag "$HELPER" out:raw err:rawerr; then
	if [ "$(grep -c '^raw$' "$tmp/out")" -eq 2 ] && [ "$(grep -c '^rawerr$' "$tmp/err")" -eq 2 ]; then
		pass "--no-tag forwards raw output"
	else fail "--no-tag" "$tmp/out" "$tmp/err"; fi
fi
P3_PTLRUN_TAG=0 run notag-env 0 -n 1 "$HELPER" out:raw && [ "$(cat "$tmp/out")" = raw ] &&
	pass "P3_PTLRUN_TAG=0" || fail "P3_PTLRUN_TAG=0" "$tmp/out"
long=$(head -c 100000 /dev/zero | tr '\0' x)
if run longline 0 -n 1 "$HELPER" "out:$long"; then
	[ "$(tr -d '[]0 \n' <"$tmp/out" | wc -c)" -eq 100000 ] && pass "a 100 kB line survives" ||
		fail "a 100 kB line survives" "$tmp/err"
fi

# --- exit status: worst rank; signals map to 128+sig
run status0 0 -n 3 "$HELPER" && pass "all ranks exit 0 -> 0"
run status-last 5 -n 2 "$HELPER" rank:1 sleep:200 exit:5 && has err "rank 1" &&
	pass "last rank exits 5 -> 5, rank named" || fail "last rank 5" "$tmp/err"
run worst 7 -n 3 "$HELPER" rank:0 exit:0 rank:1 sleep:100 exit:7 rank:2 sleep:60000 exit:3 &&
	pass "failing rank's status; ranks killed by the teardown do not count"

# --- rank death ends the job within 5 s, naming the rank
start=$(date +%s%N)
if run death 137 -n 3 "$HELPER" rank:2 sleep:300 kill:9 all sleep:60000; then
	ms=$((($(date +%s%N) - start) / 1000000))
	if has err "ptlrun: rank 2 (pid " && has err "killed by signal 9 (Killed); terminating the job" &&
	   [ "$ms" -lt 5000 ]; then
		pass "rank killed by SIGKILL ends the job in ${ms} ms"
	else fail "rank death message/time ($ms ms)" "$tmp/err"; fi
fi
start=$(date +%s%N)
if run death-exit 3 -n 3 "$HELPER" ignterm rank:1 sleep:200 exit:3 all sleep:60000; then
	ms=$((($(date +%s%N) - start) / 1000000))
	if has err "rank 1 (pid" && has err "exited with status 3; terminating the job" &&
	   [ "$ms" -lt 5000 ]; then
		pass "nonzero exit ends a job whose ranks ignore SIGTERM in ${ms} ms"
	else fail "nonzero exit teardown ($ms ms)" "$tmp/err"; fi
fi
run segv 139 -n 2 "$HELPER" rank:0 kill:11 all sleep:60000 && has err "rank 0" &&
	pass "SIGSEGV -> 139" || fail "SIGSEGV" "$tmp/err"

# --- timeout
start=$(date +%s%N)
if run timeout 124 -n 2 --timeout 0.5 "$HELPER" sleep:60000; then
	ms=$((($(date +%s%N) - start) / 1000000))
	has err "timeout" && [ "$ms" -lt 3000 ] && pass "--timeout 0.5 -> 124 in ${ms} ms" ||
		fail "--timeout" "$tmp/err"
fi
P3_PTLRUN_TIMEOUT=0.3 run timeout-env 124 -n 1 "$HELPER" sleep:60000 && pass "P3_PTLRUN_TIMEOUT"

# --- signals are forwarded
"$PTLRUN" -n 2 "$HELPER" out:up sleep:60000 >"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
for _ in $(seq 50); do [ "$(grep -c up "$tmp/out")" -eq 2 ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && has err "forwarding" && pass "SIGINT forwarded -> 130" ||
	fail "SIGINT forwarding (rc $rc)" "$tmp/err"

# --- /dev/shm cleanup of the job's segments (and only of them)
other=/dev/shm/p3shm-$(id -u)-1-0
: >"$other"
if run shm 0 -n 3 "$HELPER" shm; then
	jid=$(sed -n 's/.*of job \([0-9]*\).*/\1/p' "$tmp/err")
	if has err "removed 3 stale shared-memory segments" && [ -e "$other" ] &&
	   ! ls /dev/shm/p3shm-"$(id -u)"-"$jid"-* >/dev/null 2>&1; then
		pass "job's /dev/shm segments removed, others kept"
	else fail "shm cleanup" "$tmp/err"; fi
fi
rm -f "$other"
run shm-kill 137 -n 2 "$HELPER" shm rank:0 sleep:100 kill:9 all sleep:60000 &&
	has err "removed 2 stale" && pass "segments removed after a failed job" ||
	fail "shm cleanup after failure" "$tmp/err"

# --- CPU pinning
if run cpus 0 -n 2 --cpus 0 "$HELPER" cpus && has out "[0] cpus: 0" && has out "[1] cpus: 0"; then
	pass "--cpus 0 pins every rank"
else fail "--cpus" "$tmp/out" "$tmp/err"; fi
if [ "$(nproc)" -ge 2 ]; then
	run cpus2 0 -n 2 --cpus 1,0 "$HELPER" cpus && has out "[0] cpus: 1" && has out "[1] cpus: 0" &&
		pass "--cpus 1,0: rank i on the i-th CPU" || fail "--cpus 1,0" "$tmp/out"
fi

# --- NIC placement: --nal myrinet --nic-cpus pins the job's NIC; whether it
# spins is mcpd's own decision (P3_MCPD_SPIN_US stays unset: mcpd.c
# spin_update, nal/myrinet/README.md §3.5)
nicq='echo spin=${P3_MCPD_SPIN_US:-unset}; for p in /proc/[0-9]*; do
	if tr "\0" " " <$p/cmdline 2>/dev/null | grep -q -- "--nic $P3_MYRI_NIC"; then
		echo niccpus=$(awk "/^Cpus_allowed_list/ {print \$2}" $p/status); fi; done'
if run nic-cpus 0 -n 1 --nal myrinet --cpus 0 --nic-cpus 0 sh -c "$nicq" &&
	has out "spin=unset" && has out "niccpus=0"; then
	pass "--nic-cpus 0 beside rank 0: NIC pinned, its spin its own"
else fail "--nic-cpus 0" "$tmp/out" "$tmp/err"; fi
if [ "$(nproc)" -ge 2 ]; then
	run nic-cpus1 0 -n 1 --nal myrinet --cpus 0 --nic-cpus 1 sh -c "$nicq" &&
		has out "spin=unset" && has out "niccpus=1" &&
		pass "--nic-cpus 1 away from the rank: NIC pinned, spin default" ||
		fail "--nic-cpus 1" "$tmp/out" "$tmp/err"
fi
run bad-nic-cpus 2 --nal myrinet --nic-cpus x "$HELPER" && has err "--nic-cpus: bad CPU list 'x'" &&
	pass "bad --nic-cpus named"

# --- errors name the bad option
run bad-opt 2 --bogus "$HELPER" && has err "'--bogus'" && pass "unknown option named"
run bad-n 2 -n x "$HELPER" && has err '-n: "x" is not a number (expected 1-' && pass "bad -n named"
run bad-nal 2 --nal carrier-pigeon "$HELPER" && has err "unknown NAL 'carrier-pigeon'" && pass "bad --nal named"
run bad-progress 2 --progress fast "$HELPER" && has err "--progress: unknown progress mode 'fast'" && pass "bad --progress named"
run bad-cpus 2 --cpus 0-x "$HELPER" && has err "--cpus: bad CPU list '0-x'" && pass "bad --cpus named"
run bad-timeout 2 --timeout -1 "$HELPER" && has err '--timeout: "-1" is out of range' && pass "bad --timeout named"
run hosts 2 --hosts a,b "$HELPER" && has err '--hosts: "a,b" is not a number' && pass "bad --hosts named"
P3_PTLRUN_PID_BASE=abc run bad-pid-base 2 -n 2 --nal udp "$HELPER" &&
	has err 'ptlrun: P3_PTLRUN_PID_BASE: "abc" is not a number (expected 0-65535)' &&
	pass "bad P3_PTLRUN_PID_BASE named"
run hosts-shmem 2 -n 2 --hosts 2 "$HELPER" env && has err "reaches only one host; use udp, ether" && pass "--hosts with shmem refused"
run ether-nohosts 2 -n 2 --nal ether "$HELPER" env && has err "add --hosts N" && pass "--nal ether without --hosts explained"

# --- multi-host jobs in network namespaces (root only)
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "# SKIP --hosts jobs: need root and ip (iproute2) for network namespaces"
else
	if run hosts-env 0 -n 3 --nal ether --hosts 2 "$HELPER" env &&
	   has out "[2] PTL_NIDMAP=172818433:172818434:172818433" && has out "[1] P3_RMPP_IFNAME=eth0"; then
		pass "--hosts 2: rank i on host i % 2, nid = 10.77.0.(host+1)"
	else fail "--hosts env" "$tmp/out" "$tmp/err"; fi
	tag=$(sed -n 's/.*(bed \([a-z0-9]*\),.*/\1/p' "$tmp/err")
	if [ -n "$tag" ] && ! ip netns list | grep -q "^$tag-"; then
		pass "--hosts: bed $tag removed at exit"
	else fail "--hosts: bed removed" "$tmp/err"; fi
	run netns-missing 2 -n 2 --nal udp --netns-tag zz404 "$HELPER" env && has err "no namespace /run/netns/zz404-h0" &&
		pass "--netns-tag of a missing bed explained"
fi
run noprog 2 -n 2 && has err "no program" && pass "missing program"
run noexec 127 -n 2 "$tmp/does-not-exist" && has err "cannot execute" && pass "exec failure -> 127"
run help 0 --help && has out "Usage: ptlrun" && has out "--cpus" && pass "--help"

echo "1..$n"
[ $fails -eq 0 ]
