#!/bin/sh
# myri-peerdeath.sh - a peer that dies between a request and its answer over
# myrinet (myri_peerdeath.c).  Two NICs: A serves four initiators (offload,
# interrupt, thread, app), B the target (interrupt mode, stopped with SIGSTOP:
# its NIC interrupts per header, but no handler runs, nothing is answered)
# and a bystander (offload).  Each initiator has a get, a put with ACK and a
# 16 MiB put with ACK waiting on the target when:
#   round 1 (proc): the target process gets SIGKILL, and with it a sender
#     on NIC B streaming 16 MiB puts to a sink on NIC A (a host that dies
#     with a send on the wire).  NIC B drops the target's endpoint and tells
#     A (rmpp CLOSE); every operation must end with a failure event within
#     BOUND_MS, and the offload initiator's gets from the bystander, another
#     endpoint of NIC B, must all succeed with no gap of GAP_MS (1 s) or
#     more: hosts that die while a message is being delivered into them, or
#     sent from them, do not stall their NIC for the others;
#   round 2 (nic): NIC B gets SIGKILL (silence): A declares it dead after
#     --peer-dead-ms (PEER_DEAD_MS, 1000 here) and fails every operation.
# BOUND_MS = PEER_DEAD_MS + 2000 (at most two retransmit intervals, mcpd(8))
# + 2000 of scheduling slack on a loaded machine.  Then NIC A must be
# alive and count it (peers_gone, peers_dead, answers_lost).
# MYRI_PD_LINK=udp (default): over UDP loopback, NIC A 127.0.0.1 and NIC B
# 127.0.0.2 (as root inside a private network namespace); =ether
# (myri-peerdeath-ether.sh): over raw Ethernet between two p3-netns hosts
# (--tag pd<pid>), root only: exit 77 with the reason otherwise.
# NIC A must exit cleanly on SIGTERM, and no process may have printed a
# sanitizer report (the ASan build).  MYRI_PD_KEEP=1 keeps the work
# directory (every process's output) and prints its name.
# Bounded: 25 s per initiator; ~4-6 s per link.
. "$(dirname "$0")/myri-lib.sh"
myri_own_netns # as root: loopback ports of our own
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
NETNS="$top_srcdir/tools/p3-netns"
myri_prog myri_peerdeath
myri_ports 6000 120
PEER_DEAD_MS=${PEER_DEAD_MS:-1000}
BOUND_MS=$((PEER_DEAD_MS + 2000 + 2000))
GAP_MS=1000
MODES="offload interrupt thread app"
W=$(mktemp -d)
PIDS=""
TAG=""
cleanup() {
	# TERM first: timeout(1) passes it on to the initiator it runs
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.1
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	[ -z "$TAG" ] || sh "$NETNS" destroy --tag "$TAG" >/dev/null 2>&1
	[ -n "${MYRI_PD_KEEP:-}" ] && echo "kept: $W" || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

# start NAME PREFIX... : run PREFIX... in the background, output in $W/NAME
start() {
	_out=$W/$1
	shift
	"$@" >"$_out" 2>&1 &
	LAST=$!
	PIDS="$PIDS $LAST"
}

# wait_for FILE WORD: until FILE holds WORD (15 s at most)
wait_for() {
	_i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -lt 1500 ] || { cat "$1"; echo "FAIL: no '$2' in $1"; return 1; }
		sleep 0.01
	done
}

# nic LABEL NAME HOSTPREFIX...: start a NIC, wait for it; NIC_PID
nic() {
	_link=$1 _name=$2
	shift 2
	start "mcpd-$_link" "$@" "$MCPD" --nic "$_name" --peer-dead-ms "$PEER_DEAD_MS"
	NIC_PID=$LAST
	myri_wait_nic "$_name" "$@" || { echo "FAIL: NIC $_name ($_link) did not come up"; exit 1; }
}

# check_initiator FILE LABEL T0: exit 0, "peerdeath: ok", 3 failures within BOUND_MS of T0
check_initiator() {
	_ok=1
	grep -q '^peerdeath: ok' "$1" || _ok=0
	[ "$(grep -c '^fail: ' "$1")" -eq 3 ] || _ok=0
	for _t in $(sed -n 's/^fail: .* at \([0-9]*\)$/\1/p' "$1"); do
		[ $((_t - $3)) -le $BOUND_MS ] || _ok=0
	done
	sed -n "s/^fail: \(.*\) at \([0-9]*\)$/\1/p" "$1" | while read -r l; do echo "  $2: $l"; done
	if [ $_ok -eq 1 ]; then
		echo "ok: $2: every operation failed within $BOUND_MS ms (latest $(($(sed -n \
			's/^fail: .* at \([0-9]*\)$/\1/p' "$1" | sort -n | tail -1) - $3)) ms)"
	else
		cat "$1"
		echo "FAIL: $2"
		nfail=$((nfail + 1))
	fi
}

# round LINK KILL TNID ANID: one round; KILL = proc or nic.  Uses HOST_A and
# HOST_B (command prefixes), NIC_B_PID.
round() {
	_link=$1 _kill=$2 _tnid=$3 _anid=$4
	# shellcheck disable=SC2086
	start "target-$_link-$_kill" $HOST_B env PTL_PROGRESS=interrupt "$PROG" target 1
	_target=$LAST
	by=""
	_sender=""
	if [ "$_kill" = proc ]; then
		# shellcheck disable=SC2086
		start "by-$_link" $HOST_B env PTL_PROGRESS=offload "$PROG" bystander 2
		# shellcheck disable=SC2086
		start "sink-$_link" $HOST_A env PTL_PROGRESS=offload "$PROG" target 9
		wait_for "$W/sink-$_link" ready || { nfail=$((nfail + 1)); return; }
		# shellcheck disable=SC2086
		start "sender-$_link" $HOST_B env PTL_PROGRESS=offload "$PROG" sender "$_anid" 9 \
			--pid 10
		_sender=$LAST
		wait_for "$W/by-$_link" ready || { nfail=$((nfail + 1)); return; }
	fi
	wait_for "$W/target-$_link-$_kill" ready || { nfail=$((nfail + 1)); return; }
	kill -STOP "$_target"
	_pid=3 _inits=""
	for m in $MODES; do
		by=""
		[ "$_kill" = proc ] && [ "$m" = offload ] && by="--bystander 2"
		# shellcheck disable=SC2086
		start "init-$_link-$_kill-$m" $HOST_A env PTL_PROGRESS="$m" timeout 25 "$PROG" \
			initiator "$_tnid" 1 --pid $_pid $by
		_inits="$_inits $LAST"
		_pid=$((_pid + 1))
	done
	for m in $MODES; do
		wait_for "$W/init-$_link-$_kill-$m" pending || { nfail=$((nfail + 1)); return; }
	done
	[ -z "$_sender" ] || wait_for "$W/sender-$_link" sending || { nfail=$((nfail + 1)); return; }
	t0=$(date +%s%3N)
	if [ "$_kill" = proc ]; then
		kill -KILL "$_target" $_sender
	else
		kill -KILL "$NIC_B_PID"
	fi
	for p in $_inits; do wait "$p"; done
	for m in $MODES; do
		check_initiator "$W/init-$_link-$_kill-$m" "$_link $_kill-kill $m" "$t0"
	done
	if [ "$_kill" = proc ]; then
		line=$(grep '^bystander:' "$W/init-$_link-$_kill-offload")
		gap=$(echo "$line" | sed -n 's/.*longest gap \([0-9]*\) ms/\1/p')
		echo "  $_link: $line"
		if [ -z "$gap" ] || [ "$gap" -ge $GAP_MS ]; then
			echo "FAIL: $_link: the bystander on the dead host's NIC stalled"
			nfail=$((nfail + 1))
		fi
	fi
}

# link LINK TNID ANID: NIC A and B, round proc, round nic, NIC A's counters.
link() {
	_l=$1 _tn=$2 _an=$3
	# shellcheck disable=SC2086
	nic "$_l-A" "$NIC_A" $HOST_A
	NIC_A_PID=$NIC_PID
	# shellcheck disable=SC2086
	nic "$_l-B" "$NIC_B" $HOST_B
	NIC_B_PID=$NIC_PID
	round "$_l" proc "$_tn" "$_an"
	sleep 0.3 # the sender's last put drains (LINGER_US), or is cut
	# shellcheck disable=SC2086
	$HOST_B "$MCPD" --nic "$NIC_B" --counters 2>&1 | grep -E '^(drained|drain_cut) ' |
		tr '\n' ' ' | sed "s/^/  $_l NIC B (the sender's endpoint): /"
	echo
	round "$_l" nic "$_tn" "$_an" # the new target takes the dead one's pid on NIC B
	# shellcheck disable=SC2086
	if ! $HOST_A "$MCPD" --nic "$NIC_A" --counters >"$W/counters-$_l"; then
		echo "FAIL: $_l: NIC A died"
		nfail=$((nfail + 1))
		return
	fi
	grep -E '^(peers_dead|peers_gone|ops_peer_failed|answers_lost) ' "$W/counters-$_l" |
		tr '\n' ' ' | sed "s/^/  $_l NIC A: /"
	echo
	n=$(echo "$MODES" | wc -w)
	if [ "$(myri_counter "$W/counters-$_l" peers_gone)" -lt "$n" ] ||
		[ "$(myri_counter "$W/counters-$_l" peers_dead)" -lt "$n" ] ||
		[ "$(myri_counter "$W/counters-$_l" answers_lost)" -lt $((4 * n)) ]; then
		echo "FAIL: $_l: NIC A did not count the failed peers and lost answers"
		nfail=$((nfail + 1))
	fi
	# NIC A exits cleanly on SIGTERM (in the ASan build: no leak, no report)
	kill "$NIC_A_PID" 2>/dev/null
	wait "$NIC_A_PID"
	rc=$?
	if [ $rc -ne 0 ] || grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$W"/* 2>/dev/null; then
		cat "$W/mcpd-$_l-A"
		echo "FAIL: $_l: NIC A exited $rc, or a sanitizer reported (files above)"
		nfail=$((nfail + 1))
	fi
}

case ${MYRI_PD_LINK:-udp} in
udp)
	echo "--- udp (loopback: NIC A 127.0.0.1, NIC B 127.0.0.2)"
	NIC_A="pdA-$$" NIC_B="pdB-$$"
	HOST_A="env P3_MYRI_NIC=$NIC_A P3_MYRI_ADDR=127.0.0.1"
	HOST_B="env P3_MYRI_NIC=$NIC_B P3_MYRI_ADDR=127.0.0.2"
	link udp 127.0.0.2 127.0.0.1
	;;
ether)
	why=""
	[ "$(id -u)" -eq 0 ] || why="needs root (network namespaces, CAP_NET_RAW)"
	[ -n "$why" ] || command -v ip >/dev/null 2>&1 || why="ip (iproute2) not installed"
	[ -z "$why" ] || { echo "SKIP: the ether rounds $why"; exit 77; }
	echo "--- ether (two p3-netns hosts)"
	TAG=$(printf 'pd%04d' $(($$ % 10000)))
	sh "$NETNS" create 2 --tag "$TAG" >/dev/null && sh "$NETNS" neigh --tag "$TAG" >/dev/null ||
		{ echo "FAIL: p3-netns create"; exit 1; }
	NIC_A=pd NIC_B=pd # one NIC per namespace host: the same name
	env="env P3_MYRI_NIC=pd P3_MYRI_LINK=ether P3_MYRI_IFNAME=eth0"
	HOST_A="ip netns exec $TAG-h0 $env"
	HOST_B="ip netns exec $TAG-h1 $env"
	link ether 10.77.0.2 10.77.0.1
	;;
*)
	echo "FAIL: MYRI_PD_LINK=${MYRI_PD_LINK}: udp or ether"
	exit 1
	;;
esac
[ $nfail -eq 0 ] && echo "PASS: every operation on a dead peer failed in bounded time"
[ $nfail -eq 0 ]
