#!/bin/sh
# myri-conformance.sh - the Check conformance suite over the myrinet NAL
# (the emulated NIC, nal/myrinet) with PTL_PROGRESS=app and =thread, then
# =interrupt, then =offload: every P3_CHECKS binary runs its udp modes
# through the myrinet NAL (P3_TEST_UDP_NAL=myrinet, harness.c; the interrupt
# pass runs the udpthread mode with P3_TEST_THREAD_PROGRESS=interrupt, the
# offload pass the udp app mode with P3_TEST_MYRI_PROGRESS=offload: the LIB
# side in the NIC) against one mcpd started here under a private name and
# stopped at the end.  Afterwards the NIC must still be alive (no test may
# crash it) and must have rejected no command, and the interrupt pass must
# have been served by interrupts (interrupts >= headers the handlers took,
# handler time > 0).  MYRI_CONF_PASSES (default "app,thread interrupt
# offload" and, as root, "ether-offload ether-interrupt"; the ASan build
# only "ether-offload" of the two) chooses the passes, MYRI_CONF_CHECKS
# (default: all of the list below) the test programs.
#
# The ether passes: the same suite between namespace hosts, the NICs owning
# the raw-Ethernet wire -- an 8-host p3-netns bed (one rank per host, as in
# tests/wire/ether-conformance.sh: endpoints of one host cannot reach each
# other over ether), one `mcpd --link ether` per host under the same name,
# the harness's ether modes over the myrinet NAL (P3_TEST_ETHER_NAL=myrinet):
# ether-offload the ether app mode with PTL_PROGRESS=offload, ether-interrupt
# the etherthread mode with PTL_PROGRESS=interrupt.  Without root (or ip,
# CAP_NET_RAW) they are skipped with the reason printed; the others still run.
# Bounded: 240 s per binary and pass; ~4 min in all on a loaded 2-core machine.
. "$(dirname "$0")/myri-lib.sh"
# As root, the whole script runs in a private network namespace (its
# loopback NIC's UDP ports then meet no other job's); the ether passes'
# namespace hosts are made from there as usual.
myri_own_netns
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
NETNS="$top_srcdir/tools/p3-netns"
[ -x "$MCPD" ] || { echo "FAIL: $MCPD not built"; exit 1; }
if grep -q -- '--enable-sanitizers' "$top_builddir/config.status" 2>/dev/null; then
	ether_passes="ether-offload" # CI time: one ether pass in the ASan build
else
	ether_passes="ether-offload ether-interrupt"
fi
CHECKS=${MYRI_CONF_CHECKS:-"check_init check_ni check_me check_match check_md check_offsets check_acl
	check_threshold check_ack check_events check_eq check_mdupdate check_data
	check_invalid check_threads check_multiproc"}

P3_MYRI_NIC="conf-$$"
export P3_MYRI_NIC
# The NIC's UDP ports are base + pid.  The harness's pids (1000 + 500 slots
# of 8 ranks: 1000-4999; a NIC-chosen pid: 1-4160) on base 10000 stay within
# 10001-14999: below the ephemeral range and the udp/myrinet defaults that
# other jobs of a shared machine may crowd.
P3_TEST_PID_SLOTS=${P3_TEST_PID_SLOTS:-500}
export P3_TEST_PID_SLOTS
"$MCPD" --nic "$P3_MYRI_NIC" --base-port "${MYRI_CONF_BASE_PORT:-10000}" 2>mcpd-conformance.log &
nic=$!
ether_nics=""
ether_job=""
TAG=""
cleanup() {
	for p in $ether_job $nic $ether_nics; do kill "$p" 2>/dev/null; done
	for p in $nic $ether_nics; do wait "$p" 2>/dev/null; done
	[ -z "$TAG" ] || sh "$NETNS" destroy --tag "$TAG" >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE
myri_wait_nic "$P3_MYRI_NIC" || { echo "FAIL: mcpd did not come up"; exit 1; }

# Why the ether passes cannot run here, or nothing.
ether_skip_reason() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces, CAP_NET_RAW)"; return; }
	command -v ip >/dev/null 2>&1 || { echo "ip (iproute2) not installed"; return; }
	ip netns list >/dev/null 2>&1 || { echo "ip netns does not work here"; return; }
	if command -v capsh >/dev/null 2>&1 && ! capsh --has-p=cap_net_raw 2>/dev/null &&
		! capsh --print | grep -q cap_net_raw; then
		echo "no CAP_NET_RAW"
	fi
}

# The 8-host bed and one NIC per host (mcpd --link ether, same name as the
# loopback NIC: abstract socket names belong to the namespace).
ETHER_HOSTS=8
ether_up() {
	TAG=$(printf 'm%05d' $(($$ % 100000)))
	sh "$NETNS" create $ETHER_HOSTS --tag "$TAG" >/dev/null &&
		sh "$NETNS" neigh --tag "$TAG" >/dev/null || { echo "FAIL: p3-netns create"; return 1; }
	h=0
	while [ $h -lt $ETHER_HOSTS ]; do
		ip netns exec "$TAG-h$h" "$MCPD" --nic "$P3_MYRI_NIC" --link ether --ifname eth0 \
			2>>mcpd-conformance-ether.log &
		ether_nics="$ether_nics $!"
		h=$((h + 1))
	done
	h=0
	while [ $h -lt $ETHER_HOSTS ]; do
		myri_wait_nic "$P3_MYRI_NIC" ip netns exec "$TAG-h$h" ||
			{ echo "FAIL: mcpd on $TAG-h$h did not come up"; return 1; }
		h=$((h + 1))
	done
	P3_TEST_NETNS=$TAG-h0
	h=1
	while [ $h -lt $ETHER_HOSTS ]; do P3_TEST_NETNS="$P3_TEST_NETNS,$TAG-h$h"; h=$((h + 1)); done
	export P3_TEST_NETNS
}

# The ether NICs' counters summed (one "name value" line each).
ether_counters() {
	for h in $(seq 0 $((ETHER_HOSTS - 1))); do
		ip netns exec "$TAG-h$h" "$MCPD" --nic "$P3_MYRI_NIC" --counters || echo "dead_nic 1"
	done | awk '{ s[$1] += $2 } END { for (k in s) print k, s[k] }'
}

# run_passes PASSES TALLY: each pass over every binary; "passed failed" into
# the file TALLY.
run_passes() {
	pass=0
	nfail=0
	for passname in $1; do
		counters="$MCPD --nic $P3_MYRI_NIC --counters"
		unal=myrinet enal=
		case $passname in
		app,thread) modes=udp,udpthread tprog=thread mprog= ;;
		interrupt) modes=udpthread tprog=interrupt mprog= ;;
		offload) modes=udp tprog=thread mprog=offload ;;
		ether-offload) modes=ether tprog=thread mprog=offload ;;
		ether-interrupt) modes=etherthread tprog=interrupt mprog= ;;
		*) echo "FAIL: unknown pass $passname"; nfail=$((nfail + 1)); continue ;;
		esac
		case $passname in
		ether-*) unal= enal=myrinet counters=ether_counters ;;
		esac
		$counters >"mcpd-conformance-$passname.before" 2>&1
		for t in $CHECKS; do
			bin=./$t
			[ -x "$bin" ] || bin="$top_builddir/tests/$t"
			log=myri-$passname-$t.log
			if P3_TEST_UDP_NAL=$unal P3_TEST_ETHER_NAL=$enal P3_TEST_MODES=$modes \
				P3_TEST_THREAD_PROGRESS=$tprog P3_TEST_MYRI_PROGRESS=$mprog \
				timeout 240 "$bin" >"$log" 2>&1; then
				pass=$((pass + 1))
				echo "PASS: $t over myrinet ($passname): $(grep -o 'Checks: [0-9]*' "$log")"
			else
				nfail=$((nfail + 1))
				echo "FAIL: $t over myrinet ($passname) (see tests/$log):"
				grep -E '^[^ ]*:[0-9]+:[FE]:' "$log" | head -10
			fi
		done
		case $passname in *interrupt) ;; *) continue ;; esac
		$counters >"mcpd-conformance-$passname.after" 2>&1
		for c in interrupts host_intr_hdrs host_intr_handled host_handler_ns; do
			eval "d_$c=\$((\$(myri_counter mcpd-conformance-$passname.after $c) - \$(myri_counter mcpd-conformance-$passname.before $c)))"
		done
		# shellcheck disable=SC2154
		echo "$passname pass: $d_interrupts interrupts, $d_host_intr_hdrs headers in $d_host_intr_handled handler passes, ${d_host_handler_ns} ns in the handlers"
		if [ "$d_host_intr_hdrs" -le 0 ] || [ "$d_interrupts" -lt "$d_host_intr_hdrs" ] ||
			[ "$d_host_handler_ns" -le 0 ]; then
			echo "FAIL: the $passname pass was not served by interrupt handlers"
			nfail=$((nfail + 1))
		fi
	done
	echo "$pass $nfail" >"$2"
}

# The passes over loopback run here, the ether passes at the same time in
# the background (their own NICs; the suite waits more than it computes:
# ~4-8 s of CPU per 20-30 s pass), printed after.
passes=${MYRI_CONF_PASSES:-app,thread interrupt offload $ether_passes}
udp_passes="" ether_list=""
for p in $passes; do
	case $p in ether-*) ether_list="$ether_list $p" ;; *) udp_passes="$udp_passes $p" ;; esac
done
ether_why=""
[ -z "$ether_list" ] || ether_why=$(ether_skip_reason)
echo "0 0" >myri-conformance-ether.tally
if [ -n "$ether_why" ]; then
	echo "SKIP: the ether passes ($ether_list): $ether_why"
elif [ -n "$ether_list" ]; then
	if ether_up; then
		run_passes "$ether_list" myri-conformance-ether.tally >myri-conformance-ether.out 2>&1 &
		ether_job=$!
	else
		echo "0 1" >myri-conformance-ether.tally
	fi
fi
run_passes "$udp_passes" myri-conformance-udp.tally
if [ -n "$ether_job" ]; then
	wait "$ether_job"
	cat myri-conformance-ether.out
fi
read -r pass nfail <myri-conformance-udp.tally
read -r epass enfail <myri-conformance-ether.tally
pass=$((pass + epass))
nfail=$((nfail + enfail))
"$MCPD" --nic "$P3_MYRI_NIC" --counters >mcpd-conformance.counters 2>&1 || {
	echo "FAIL: the NIC died during the suite"
	nfail=$((nfail + 1))
}
rej=$(awk '$1 == "cmds_rejected" { print $2 }' mcpd-conformance.counters)
echo "NIC counters:"; cat mcpd-conformance.counters
if [ "${rej:-x}" != 0 ]; then
	echo "FAIL: the NIC rejected ${rej:-?} commands of a well-behaved host"
	nfail=$((nfail + 1))
fi
if [ -n "$TAG" ]; then
	ether_counters >mcpd-conformance-ether.counters 2>&1
	echo "ether NICs' counters (summed over $ETHER_HOSTS hosts):"
	cat mcpd-conformance-ether.counters
	rej=$(myri_counter mcpd-conformance-ether.counters cmds_rejected)
	dead=$(myri_counter mcpd-conformance-ether.counters dead_nic)
	if [ -n "$dead" ]; then
		echo "FAIL: $dead ether NIC(s) died during the suite"
		nfail=$((nfail + 1))
	elif [ "${rej:-x}" != 0 ]; then
		echo "FAIL: the ether NICs rejected ${rej:-?} commands of a well-behaved host"
		nfail=$((nfail + 1))
	fi
	[ "$(myri_counter mcpd-conformance-ether.counters sends)" -gt 0 ] ||
		{ echo "FAIL: the ether NICs sent nothing"; nfail=$((nfail + 1)); }
fi
echo "$pass passed, $nfail failed"
[ $nfail -eq 0 ]
