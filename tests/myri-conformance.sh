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
# offload") chooses the passes.
# Bounded: 240 s per binary and pass; ~4 min in all on a loaded 2-core machine.
set -u
top_builddir=${top_builddir:-..}
MCPD="$top_builddir/nal/myrinet/mcpd"
[ -x "$MCPD" ] || { echo "FAIL: $MCPD not built"; exit 1; }
CHECKS="check_init check_ni check_me check_match check_md check_offsets check_acl
	check_threshold check_ack check_events check_eq check_mdupdate check_data
	check_invalid check_threads check_multiproc"

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
trap 'kill $nic 2>/dev/null; wait $nic 2>/dev/null' EXIT INT TERM
i=0
until "$MCPD" --nic "$P3_MYRI_NIC" --counters >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "FAIL: mcpd did not come up"; exit 1; }
	sleep 0.01
done

counter() { # file name
	awk -v n="$2" '$1 == n { print $2 }' "$1"
}

pass=0
nfail=0
for passname in ${MYRI_CONF_PASSES:-app,thread interrupt offload}; do
	case $passname in
	app,thread) modes=udp,udpthread tprog=thread mprog= ;;
	interrupt) modes=udpthread tprog=interrupt mprog= ;;
	offload) modes=udp tprog=thread mprog=offload ;;
	*) echo "FAIL: unknown pass $passname"; exit 1 ;;
	esac
	"$MCPD" --nic "$P3_MYRI_NIC" --counters >mcpd-conformance.before 2>&1
	for t in $CHECKS; do
		bin=./$t
		[ -x "$bin" ] || bin="$top_builddir/tests/$t"
		log=myri-$passname-$t.log
		if P3_TEST_UDP_NAL=myrinet P3_TEST_MODES=$modes P3_TEST_THREAD_PROGRESS=$tprog \
			P3_TEST_MYRI_PROGRESS=$mprog timeout 240 "$bin" >"$log" 2>&1; then
			pass=$((pass + 1))
			echo "PASS: $t over myrinet ($passname): $(grep -o 'Checks: [0-9]*' "$log")"
		else
			nfail=$((nfail + 1))
			echo "FAIL: $t over myrinet ($passname) (see tests/$log):"
			grep -E '^[^ ]*:[0-9]+:[FE]:' "$log" | head -10
		fi
	done
	[ "$passname" = interrupt ] || continue
	"$MCPD" --nic "$P3_MYRI_NIC" --counters >mcpd-conformance.after 2>&1
	for c in interrupts host_intr_hdrs host_intr_handled host_handler_ns; do
		eval "d_$c=\$((\$(counter mcpd-conformance.after $c) - \$(counter mcpd-conformance.before $c)))"
	done
	# shellcheck disable=SC2154
	echo "interrupt pass: $d_interrupts interrupts, $d_host_intr_hdrs headers in $d_host_intr_handled handler passes, ${d_host_handler_ns} ns in the handlers"
	if [ "$d_host_intr_hdrs" -le 0 ] || [ "$d_interrupts" -lt "$d_host_intr_hdrs" ] ||
		[ "$d_host_handler_ns" -le 0 ]; then
		echo "FAIL: the interrupt pass was not served by interrupt handlers"
		nfail=$((nfail + 1))
	fi
done
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
echo "$pass passed, $nfail failed"
[ $nfail -eq 0 ]
