#!/bin/bash
# cli-numbers.sh - the programs refuse a malformed or out-of-range number in
# an option or environment variable with status 2 and a message naming the
# option, the value and what is accepted (include/p3num.h); valid values
# still pass.  Libraries: nal/shmem fails PtlNIInit naming the variable.
# Needs only the build tree (no root, no network): every case stops at the
# argument parsing or at PtlNIInit.  About 2 s.
top=${top_builddir:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli-numbers.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# expect NAME STATUS TEXT CMD...: CMD exits STATUS and its stderr holds TEXT
expect() {
	local name=$1 want=$2 text=$3
	shift 3
	timeout 60 "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [ "$rc" -eq "$want" ] && { [ -z "$text" ] || grep -qF -- "$text" "$tmp/err"; }; then
		echo "ok: $name"
		pass=$((pass + 1))
	else
		echo "FAIL: $name: exit $rc (expected $want), stderr:"
		sed 's/^/    /' "$tmp/err" | head -5
		[ -n "$text" ] && echo "    (expected text: $text)"
		fail=$((fail + 1))
	fi
}
# have PROG: the program is built (optional ones: pcap, MPI)
have() { [ -x "$1" ]; }

mcpd=$top/nal/myrinet/mcpd
ptlbench=$top/bench/ptlbench/ptlbench
hostcost=$top/bench/ptlbench/ptlhostcost
ptlrun=$top/tools/ptlrun/ptlrun
fbridge=$top/tools/p3-faultbridge
nicfloor=$top/tools/p3-nicfloor
ptldump=$top/tools/ptldump
p3soak=$top/tools/p3soak
p3scale=$top/tools/p3scale
rmppref=$top/rmpp/tools/rmpp-ref

# --- mcpd: options and its environment
expect "mcpd --slice-us abc" 2 'mcpd: --slice-us: "abc" is not a number (expected 0-100000)' \
	"$mcpd" --slice-us abc
expect "mcpd --spin-us -1" 2 'mcpd: --spin-us: "-1" is negative (expected 0-100000)' \
	"$mcpd" --spin-us -1
expect "mcpd --peer-dead-ms overflow" 2 \
	'mcpd: --peer-dead-ms: "99999999999999999999" is out of range (expected 0-3600000)' \
	"$mcpd" --peer-dead-ms 99999999999999999999
expect "mcpd --base-port 0x10000" 2 '--base-port: "0x10000" is out of range (expected 1-65535)' \
	"$mcpd" --base-port 0x10000
expect "P3_MCPD_SLICE_US=abc mcpd" 2 'mcpd: P3_MCPD_SLICE_US: "abc" is not a number' \
	env P3_MCPD_SLICE_US=abc "$mcpd"
expect "P3_MCPD_SPIN_US='5 ' mcpd" 2 'mcpd: P3_MCPD_SPIN_US: "5 " is not a number' \
	env P3_MCPD_SPIN_US='5 ' "$mcpd"
expect "P3_MYRI_BASE_PORT=1e3 mcpd" 2 'mcpd: P3_MYRI_BASE_PORT: "1e3" is not a number' \
	env P3_MYRI_BASE_PORT=1e3 "$mcpd"
# valid values pass the parsing: --counters of a NIC that is not running fails with 1
expect "mcpd valid numbers accepted" 1 "" env P3_MCPD_SLICE_US=0x64 "$mcpd" --spin-us 0 \
	--slice-us 100 --peer-dead-ms 2000 --base-port 0x5000 --nic "nonesuch-$$" --counters

# --- ptlbench, ptlhostcost
expect "ptlbench -m 12x" 2 'ptlbench: -m: "12x" is not a number (expected 0-2147483648, K/M/G suffixes)' \
	"$ptlbench" -m 12x
expect "ptlbench -m 4K:3G" 2 'ptlbench: -m (maximum size): "3G" is out of range' \
	"$ptlbench" -m 4K:3G
expect "ptlbench -i 0" 2 'ptlbench: -i: "0" is out of range (expected 1-2147483647)' \
	"$ptlbench" -i 0
expect "ptlbench -w ''" 2 'ptlbench: -w: "" is not a number' "$ptlbench" -w ''
expect "ptlhostcost -n abc" 2 'ptlhostcost: -n: "abc" is not a number (expected 1-16384)' \
	"$hostcost" -n abc

# --- ptlrun (tools/ptlrun/test_ptlrun.sh has more)
expect "ptlrun -n x" 2 'ptlrun: -n: "x" is not a number (expected 1-' "$ptlrun" -n x true
expect "ptlrun --timeout 1s" 2 'ptlrun: --timeout: "1s" is not a number' \
	"$ptlrun" -n 1 --timeout 1s true
expect "ptlrun valid numbers accepted" 0 "" "$ptlrun" -n 1 --timeout 30 true

# --- the other tools
expect "p3-faultbridge --delay-us 5ms" 2 'p3-faultbridge: --delay-us: "5ms" is not a number' \
	"$fbridge" -a x -b y --delay-us 5ms
expect "p3-faultbridge --drop 2" 2 'p3-faultbridge: --drop: "2" is out of range (expected 0 to 1)' \
	"$fbridge" -a x -b y --drop 2
expect "p3-nicfloor --iters 0" 2 'p3-nicfloor: --iters: "0" is out of range (expected 1-1000000)' \
	"$nicfloor" --iters 0
expect "p3-nicfloor --cpus 0,x" 2 'p3-nicfloor: --cpus: "x" is not a number' "$nicfloor" --cpus 0,x
expect "p3soak --window 0" 2 'p3soak: --window: "0" is out of range (expected 1-65536)' \
	"$p3soak" --window 0
expect "p3scale abc" 2 'p3scale: MSG_BYTES: "abc" is not a number (expected 1-65536)' "$p3scale" abc
expect "rmpp-ref -n x" 2 'rmpp-ref: -n: "x" is not a number' "$rmppref" udp-pingpong -n x
if have "$ptldump"; then
	expect "ptldump -p 80x" 2 'ptldump: -p: "80x" is not a number (expected 0-65535)' \
		"$ptldump" -r /dev/null -p 80x
	expect "ptldump -p 90-80" 2 'ptldump: -p wants PORT or LO-HI with LO <= HI' \
		"$ptldump" -r /dev/null -p 90-80
else
	echo "skip: ptldump not built (no libpcap)"
fi

# --- a library's variable: shmem's PtlNIInit fails naming it
expect "P3_SHMEM_MAX_PEERS=abc (PtlNIInit fails)" 1 \
	'P3_SHMEM_MAX_PEERS: "abc" is not a number (expected 1-65536)' \
	env P3_SHMEM_MAX_PEERS=abc "$ptlrun" -n 2 --nal shmem --timeout 30 "$ptlbench" -t lat -m 8 -i 10
# ... and the core says a parameter is invalid, not that a pid is (-EDOM)
if grep -qF "a parameter in the environment is invalid" "$tmp/err" &&
	! grep -qF "PTL_PID_ANY resolved" "$tmp/err"; then
	echo "ok: P3_SHMEM_MAX_PEERS=abc: PtlNIInit names a bad parameter, not a bad pid"
	pass=$((pass + 1))
else
	echo "FAIL: P3_SHMEM_MAX_PEERS=abc: PtlNIInit's own message:"
	sed 's/^/    /' "$tmp/err" | head -5
	fail=$((fail + 1))
fi
expect "P3_RMPP_BASE_PORT=70000 ptlrun" 2 \
	'ptlrun: P3_RMPP_BASE_PORT: "70000" is out of range (expected 1-65535)' \
	env P3_RMPP_BASE_PORT=70000 "$ptlrun" -n 1 --nal udp --timeout 30 "$ptlbench" -t lat -m 8 -i 10

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
