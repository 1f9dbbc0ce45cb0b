#!/bin/sh
# myri-conformance.sh - the Check conformance suite over the myrinet NAL
# (the emulated NIC, nal/myrinet) with PTL_PROGRESS=app and =thread, and
# then =offload (the LIB side in the NIC): every P3_CHECKS binary runs its
# udp modes through the myrinet NAL (P3_TEST_UDP_NAL=myrinet, harness.c;
# offload: P3_TEST_MYRI_PROGRESS=offload on the udp app mode) against one
# mcpd started here under a private name and stopped at the end.
# Afterwards the NIC must still be alive (no test may crash it) and must
# have rejected no command.  MYRI_CONF_PROGRESS="app,thread offload" (the
# default) chooses the passes.
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
"$MCPD" --nic "$P3_MYRI_NIC" 2>mcpd-conformance.log &
nic=$!
trap 'kill $nic 2>/dev/null; wait $nic 2>/dev/null' EXIT INT TERM
i=0
until "$MCPD" --nic "$P3_MYRI_NIC" --counters >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "FAIL: mcpd did not come up"; exit 1; }
	sleep 0.01
done

pass=0
nfail=0
for progress in ${MYRI_CONF_PROGRESS:-app,thread offload}; do
	case $progress in
	offload) modes=udp; extra=offload ;;
	*) modes=udp,udpthread; extra= ;;
	esac
	for t in $CHECKS; do
		bin=./$t
		[ -x "$bin" ] || bin="$top_builddir/tests/$t"
		log=myri-$t${extra:+-$extra}.log
		if P3_TEST_UDP_NAL=myrinet P3_TEST_MODES=$modes P3_TEST_MYRI_PROGRESS=$extra \
			timeout 240 "$bin" >"$log" 2>&1; then
			pass=$((pass + 1))
			echo "PASS: $t over myrinet ($progress): $(grep -o 'Checks: [0-9]*' "$log")"
		else
			nfail=$((nfail + 1))
			echo "FAIL: $t over myrinet ($progress) (see tests/$log):"
			grep -E '^[^ ]*:[0-9]+:[FE]:' "$log" | head -10
		fi
	done
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
