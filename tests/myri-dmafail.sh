#!/bin/sh
# myri-dmafail.sh - a get, a put with ack (and in offload a GetPut) whose
# DMA at the target fails (the target made the MD's page PROT_NONE after
# attaching it): the initiator must get REPLY_END / ACK with PTL_NI_FAIL
# within 10 s, the target GET_END / PUT_END / GETPUT_END with PTL_NI_FAIL,
# and both go on working (myri_dmafail.c; 2 ranks under ptlrun --nal
# myrinet, ports of the NIC private).  Modes: offload, interrupt, thread
# (MYRI_DMAFAIL_MODES); as root with MYRI_DMAFAIL_HOSTS=1 also offload and
# interrupt between two namespace hosts over ether (ptlrun --hosts 2).
# Bounded: 40 s per job; ~6 s in all on loopback.
. "$(dirname "$0")/myri-lib.sh"
myri_prog myri_dmafail
myri_ports 14000 150
run() { # label, ptlrun arguments...
	label=$1
	shift
	case "$*" in *offload*) gp=--getput ;; *) gp= ;; esac
	out=$(timeout 60 "$PTLRUN" -n 2 --nal myrinet --timeout 40 "$@" "$PROG" $gp 2>&1)
	rc=$?
	if [ $rc -ne 0 ] || [ "$(echo "$out" | grep -c 'dmafail: ok')" -ne 2 ]; then
		echo "$out"
		echo "FAIL: $label (exit $rc)"
		nfail=$((nfail + 1))
	else
		echo "$out" | grep -E 'PTL_NI_FAIL' | sed "s/^/$label: /"
		echo "ok: $label"
	fi
}
for mode in ${MYRI_DMAFAIL_MODES:-offload interrupt thread}; do
	run "$mode" --progress "$mode"
done
if [ "${MYRI_DMAFAIL_HOSTS:-0}" = 1 ]; then
	if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
		for mode in offload interrupt; do
			run "ether-$mode" --hosts 2 --progress "$mode"
		done
	else
		echo "skip: the ether passes need root and ip (network namespaces)"
	fi
fi
[ $nfail -eq 0 ] && echo "PASS: every failed DMA ended its operation on both sides"
[ $nfail -eq 0 ]
