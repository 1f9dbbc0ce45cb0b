#!/bin/sh
# port-busy.sh - the Check harness's udp ports when another process holds
# them (check_acl once failed so on a shared machine; the NAL binds without
# SO_REUSEADDR).  The pid range is narrowed to two slots (P3_TEST_PID_SLOTS=2:
# pids 1000..1015) on a private base port (P3_RMPP_BASE_PORT, 16 ports found
# free below the ephemeral range), and this script holds ports of it:
#  1. every port of slot 0 held: check_ni pid_any_assigns (one NI,
#     h_open_mode) and check_ack ack_when_requested (a 2-rank job, h_run_job)
#     pass over udp, 3 runs each (a test process starts at either slot; the
#     harness's probe moves on to the free one);
#  2. both slots held: nothing is free, and both fail naming the cause
#     ("held by another process") after the harness ran them again on other
#     ports ("running the job again" / "opening the NI again"), not with a
#     bare PtlNIInit error.
# No root needed.  Exit 77 only when python3 is missing.  ~1.5 s.
set -u
top_builddir=${top_builddir:-..}
T="$top_builddir/tests"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
for p in check_ni check_ack; do
	[ -x "$T/$p" ] || { echo "FAIL: $T/$p not built"; exit 1; }
done

# hold PORT...: bind each port on 127.0.0.1 (UDP) until killed; prints "ok"
# once all are bound, "busy" if one was taken
HOLD='import socket, sys, time
socks = []
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", int(p)))
    except OSError:
        print("busy", flush=True); sys.exit(1)
    socks.append(s)
print("ok", flush=True)
time.sleep(120)'
WORK=$(mktemp -d /tmp/p3portbusy.XXXXXX)
holder=""
stop_holder() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
	holder=""
}
trap 'stop_holder; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM

# start_holder PORT...: hold them in the background; 0 when all are held
start_holder() {
	# the background job truncates the file only when it starts: remove
	# the last holder's "ok" first, or it is read as this holder's
	rm -f "$WORK/hold"
	python3 -c "$HOLD" "$@" >"$WORK/hold" 2>&1 &
	holder=$!
	# python's start-up takes seconds on a loaded machine (ASan builds
	# beside): wait up to 30 s for its verdict, not a fixed 5
	for _i in $(seq 600); do
		[ -s "$WORK/hold" ] && break
		sleep 0.05
	done
	grep -q '^ok' "$WORK/hold" && return 0
	stop_holder
	return 1
}

# hold_again PORT...: start_holder, tried 5 times 0.5 s apart: the ports
# were free a moment ago, but another job's ephemeral bind or the test's
# own just-closed sockets may hold one briefly
hold_again() {
	for _t in 1 2 3 4 5; do
		start_holder "$@" && return 0
		sleep 0.5
	done
	return 1
}

# a base port whose pids 1000..1015 are free (slot 0: 1000..1007, slot 1:
# 1008..1015), below the ephemeral range; checked by holding them briefly
base=$((10000 + ($$ % 1000) * 16))
tries=0
until start_holder $(seq $((base + 1000)) $((base + 1015))); do
	tries=$((tries + 1))
	[ $tries -ge 50 ] && { echo "FAIL: no 16 free udp ports near $base"; exit 1; }
	base=$((base + 16))
done
stop_holder
export P3_RMPP_BASE_PORT=$base P3_TEST_PID_SLOTS=2 P3_TEST_MODES=udp CK_FORK=yes
unset P3_TEST_UDP_NAL P3_TEST_MYRI_PROGRESS
echo "base port $base: slot 0 = ports $((base + 1000))..$((base + 1007)), slot 1 = $((base + 1008))..$((base + 1015))"

pass=0 nfail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { nfail=$((nfail + 1)); echo "FAIL: $*"; }

# run NAME PROG TEST: the Check case TEST of PROG over udp, output in $WORK/NAME
run() {
	P3_TEST_ONLY=$3 timeout 120 "$T/$2" >"$WORK/$1" 2>&1
}

# 1. slot 0 held: both paths pass from either start slot
if hold_again $(seq $((base + 1000)) $((base + 1007))); then
	for i in 1 2 3; do
		if run ni$i check_ni pid_any_assigns; then ok "check_ni with slot 0 held (run $i)"
		else bad "check_ni with slot 0 held (run $i)"; cat "$WORK/ni$i"; fi
		if run ack$i check_ack ack_when_requested; then ok "check_ack with slot 0 held (run $i)"
		else bad "check_ack with slot 0 held (run $i)"; cat "$WORK/ack$i"; fi
	done
	stop_holder
else
	bad "could not hold the ports of slot 0"
fi

# 2. both slots held: a failure that names the cause, after the retries
if hold_again $(seq $((base + 1000)) $((base + 1015))); then
	if run ni_busy check_ni pid_any_assigns; then
		bad "check_ni passed with every port held"
	elif [ "$(grep -c 'held by another process; opening the NI again' "$WORK/ni_busy")" -eq 3 ]; then
		ok "check_ni with every port held: fails after 3 more tries, naming the busy port"
	else
		bad "check_ni with every port held: no 3 retries naming the busy port"; cat "$WORK/ni_busy"
	fi
	if run ack_busy check_ack ack_when_requested; then
		bad "check_ack passed with every port held"
	elif [ "$(grep -c 'held by another process; running the job again' "$WORK/ack_busy")" -eq 3 ] &&
		grep -q 'exited with 1 over udp/app, 2 ranks: PtlNIInit: the udp port of pid' "$WORK/ack_busy"; then
		ok "check_ack with every port held: fails after 3 more runs, naming the busy port"
	else
		bad "check_ack with every port held: no 3 runs / no message naming the busy port"
		cat "$WORK/ack_busy"
	fi
	stop_holder
else
	bad "could not hold the ports of both slots"
fi

echo "$pass passed, $nfail failed"
[ $nfail -eq 0 ]
