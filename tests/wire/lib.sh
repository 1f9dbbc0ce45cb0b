# lib.sh - shared by the tests/wire scripts: skip checks, namespace test bed
# with trap-based cleanup, process bookkeeping by pid.  Sourced, not run.
# Needs: top_builddir, top_srcdir (set by make check; defaults below).

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
NETNS="$top_srcdir/tools/p3-netns"
TB="$top_builddir/tests"
WIREPUT="$TB/wire/wireput"
PTLDUMP="$top_builddir/tools/ptldump"
PATH="$top_builddir/tools:$PATH"; export PATH # p3-netns finds p3-faultbridge
[ -x "$WIREPUT" ] || WIREPUT="$TB/wire/wireput"

skip() { echo "SKIP: $*"; exit 77; }

need_root_net() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, CAP_NET_RAW)"
	command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not installed"
	ip netns list >/dev/null 2>&1 || skip "ip netns does not work here"
	if command -v capsh >/dev/null 2>&1; then
		capsh --has-p=cap_net_raw 2>/dev/null || capsh --print | grep -q cap_net_raw ||
			skip "no CAP_NET_RAW"
	fi
}

# need_tshark_capture: skip (77, with the reason) without what a capture
# decoded by both ptldump and tshark takes: tcpdump, tshark, a built ptldump
need_tshark_capture() {
	command -v tcpdump >/dev/null 2>&1 || skip "tcpdump not installed"
	command -v tshark >/dev/null 2>&1 || skip "tshark not installed"
	[ -x "$PTLDUMP" ] || skip "ptldump not built ($PTLDUMP)"
}

# need_xdp: skip (77, with the reason) unless this build has the xdp link and
# an AF_XDP endpoint opens on a namespace host's veth here (a 1-host probe bed:
# rmpp-ref xdp-probe).  A probe failing for any other reason is a failure.
need_xdp() {
	[ -f "$top_builddir/rmpp/rmpp_xdp.bpf.o" ] ||
		skip "this build has no xdp link (libxdp-dev, libbpf-dev or clang missing at configure)"
	_pt=$(mktag q)
	"$NETNS" create 1 --tag "$_pt" >/dev/null 2>&1 || skip "p3-netns create failed (no namespaces?)"
	_po=$(ip netns exec "$_pt-h0" "$top_builddir/rmpp/tools/rmpp-ref" xdp-probe eth0 2>&1)
	_prc=$?
	"$NETNS" destroy --tag "$_pt" >/dev/null 2>&1
	[ $_prc -eq 0 ] && return 0
	echo "$_po"
	case "$_po" in
	*xdp_program__attach*|*"AF_XDP needs"*|*"no AF_XDP sockets"*|*"built without AF_XDP"*)
		skip "XDP cannot attach here (see above)" ;;
	esac
	echo "FAIL: rmpp-ref xdp-probe"; exit 1
}

# Unique tag (<= 6 alphanumerics): prefix letter + 5 digits of our pid.
mktag() { printf '%s%05d' "$1" $(($$ % 100000)); }

PIDS=""
TAG=""
WORK=""
cleanup() {
	rc=$?
	for p in $PIDS; do
		kill "$p" 2>/dev/null && { sleep 0.2; kill -9 "$p" 2>/dev/null; }
		wait "$p" 2>/dev/null
	done
	[ -n "$TAG" ] && "$NETNS" destroy --tag "$TAG" >/dev/null 2>&1
	[ -n "$WORK" ] && [ -z "${WIRE_KEEP:-}" ] && rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# bed_create N [p3-netns create options]: hosts $TAG-h0.., neighbour entries.
bed_create() {
	n=$1; shift
	"$NETNS" create "$n" --tag "$TAG" "$@" >/dev/null || { echo "FAIL: p3-netns create"; exit 1; }
	i=0
	while [ $i -lt "$n" ]; do
		j=0
		while [ $j -lt "$n" ]; do
			if [ $i -ne $j ]; then
				ip -n "$TAG-h$i" neigh replace "10.77.0.$((j + 1))" dev eth0 \
					lladdr "02:70:33:00:00:$(printf %02x $((j + 1)))" nud permanent
			fi
			j=$((j + 1))
		done
		i=$((i + 1))
	done
}

# Job environment of rank R of 2 over NAL ($1), pids from our own pid.
PIDBASE=$((2000 + ($$ % 4000) * 8))
job_env() { # nal rank progress
	echo "PTL_NAL=$1 PTL_MY_RID=$2 PTL_NIDMAP=10.77.0.1:10.77.0.2 PTL_PIDMAP=$PIDBASE:$((PIDBASE + 1)) PTL_MY_JID=$((PIDBASE + 7)) PTL_PROGRESS=$3 P3_RMPP_IFNAME=eth0"
}

# pick_free_pidbase: move PIDBASE on until the udp ports of pids PIDBASE and
# PIDBASE + 1 are free on 127.0.0.1 (other jobs on a shared machine hold some)
pick_free_pidbase() {
	_tries=0
	until python3 -c 'import socket, sys
for p in (int(sys.argv[1]), int(sys.argv[1]) + 1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", p)); s.close()' \
		$((${P3_RMPP_BASE_PORT:-21000} + PIDBASE)) 2>/dev/null; do
		_tries=$((_tries + 1))
		[ $_tries -gt 50 ] && { echo "FAIL: no two free udp ports near $PIDBASE"; exit 1; }
		PIDBASE=$((PIDBASE + 2))
	done
}

# in_host I cmd...: run in host I's namespace
in_host() { h=$1; shift; ip netns exec "$TAG-h$h" "$@"; }

# wait_file F SECONDS: wait for F to exist (or fail after SECONDS)
wait_file() {
	_wf=0
	while [ ! -e "$1" ]; do
		_wf=$((_wf + 1))
		[ $_wf -gt $(($2 * 20)) ] && return 1
		sleep 0.05
	done
	return 0
}

# capture_start I FILE: tcpdump of rmpp frames (EtherType 0x88b5 or udp) on
# host I's eth0; records the pid in PIDS and CAPPID.  WIRE_NAL=xdp: on the
# switch's end of host I's link (sp I), as an AF_XDP socket's frames bypass
# the host's own taps (the XDP program runs before them; copy-mode transmit
# goes straight to the driver).
capture_start() {
	_cns="$TAG-h$1" _cif=eth0
	[ "${WIRE_NAL:-ether}" = xdp ] && { _cns="$TAG-sw"; _cif="sp$1"; }
	# -B: a 32 MiB kernel buffer, so that bursts on 2 busy cores are kept;
	# --immediate-mode: frames reach the file as they come (without it a
	# short exchange, e.g. the ~100 frames of case tail, could sit in a ring
	# block that had not timed out when capture_stop interrupted tcpdump, and
	# the capture was empty: seen in an ASan run of xdp-faults.sh)
	ip netns exec "$_cns" tcpdump -Z root -i "$_cif" -U --immediate-mode -B 32768 -s 2048 -w "$2" \
		'ether proto 0x88b5 or udp' >"$2.log" 2>&1 &
	CAPPID=$!
	PIDS="$PIDS $CAPPID"
	wait_file "$2" 5 || { echo "FAIL: tcpdump did not start"; cat "$2.log"; exit 1; }
	# capturing once it says "listening on"; at most 5 s
	_cw=0
	while ! grep -q "listening on" "$2.log" 2>/dev/null && [ $_cw -lt 100 ]; do
		sleep 0.05; _cw=$((_cw + 1))
	done
	sleep 0.3
}
capture_stop() {
	sleep 0.3
	kill -INT "$CAPPID" 2>/dev/null
	wait "$CAPPID" 2>/dev/null
}

# run_pair NAL PROGRESS N SEED [extra env...]: wireput target on host 0,
# initiator on host 1; both bounded by WIRE_TIMEOUT s; output in $WORK/tgt.out,
# $WORK/ini.out; returns 0 if both passed.  WIRE_TGT_ENV / WIRE_INI_ENV: more
# VAR=value words for one side only.
run_pair() {
	_nal=$1 _prog=$2 _n=$3 _seed=$4
	shift 4
	rm -f "$WORK/ready"
	timeout "${WIRE_TIMEOUT:-60}" ip netns exec "$TAG-h0" env $(job_env "$_nal" 0 "$_prog") "$@" \
		${WIRE_TGT_ENV:-} "$WIREPUT" "$_n" "$_seed" "$WORK/ready" >"$WORK/tgt.out" 2>&1 &
	tpid=$!
	PIDS="$PIDS $tpid"
	if ! wait_file "$WORK/ready" 10; then
		echo "FAIL: the target did not come up"; cat "$WORK/tgt.out"; return 1
	fi
	timeout "${WIRE_TIMEOUT:-60}" ip netns exec "$TAG-h1" env $(job_env "$_nal" 1 "$_prog") "$@" \
		${WIRE_INI_ENV:-} "$WIREPUT" "$_n" "$_seed" >"$WORK/ini.out" 2>&1
	irc=$?
	wait "$tpid"
	trc=$?
	cat "$WORK/tgt.out" "$WORK/ini.out"
	[ $irc -eq 0 ] && [ $trc -eq 0 ]
}

# reg OUTFILE NAME: value of the rmpp counter NAME printed by wireput
# (order of RMPP_COUNTERS in rmpp/rmpp.h)
RMPP_COUNTERS="tx_pkts tx_bytes rx_pkts rx_bytes tx_payload_bytes tx_msgs rx_msgs eager_msgs rndv_msgs retx_fast retx_rto retx_tlp rto_expired dup_rx dsack_tx dsack_rx sack_blocks_tx sack_blocks_rx ooo_rx acks_tx acks_rx csum_drops malformed_drops window_drops stale_drops credit_stalls probes_tx rnr_tx rnr_rx rx_defers hello_tx resets_tx resets_rx peers_dead peers_restarted ops_failed fault_drops fault_dups fault_reorders fault_corrupts fault_truncs send_errors mtu_fallbacks rx_buffered_peak lazy_held lazy_carried tx_direct rx_direct tx_gso rx_placed xdp_mode xdp_tx_kicks xdp_rx_kicks xdp_tx_full xdp_rx_dropped linger_passes auth_drops replay_drops dsock_errors ether_rx_dropped retx_echo"
reg() {
	i=0
	for c in $RMPP_COUNTERS; do
		[ "$c" = "$2" ] && break
		i=$((i + 1))
	done
	grep -o "nal\[$i\]=[0-9]*" "$1" | tail -1 | cut -d= -f2
}
