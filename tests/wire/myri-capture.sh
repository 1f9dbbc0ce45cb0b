#!/bin/sh
# myri-capture.sh - the frames of a myrinet run, captured and decoded:
# wireput over the myrinet NAL between two namespace hosts, one emulated NIC
# per host on the raw-Ethernet wire (mcpd --link ether), PTL_PROGRESS=offload
# (the Portals headers on the wire are built by LIB in the NICs), captured
# with tcpdump on host 0's eth0.  Then:
#   - ptldump decodes the rmpp frames and, inside them, the Portals headers:
#     PUTs from host 1's rank to host 0's and their ACKs back, with the
#     ranks' nids and pids (wireput's data checked end to end as well);
#   - tools/capture/compare-tshark: tshark with the Wireshark dissector
#     (tools/wireshark/p3stack.lua) decodes every rmpp frame field by field
#     as ptldump -F does.
# Exit 77 (with the reason) without root, tcpdump or tshark.  ~10 s.
set -u
. "$(dirname "$0")/lib.sh"
need_root_net
need_tshark_capture
MCPD="$top_builddir/nal/myrinet/mcpd"
[ -x "$MCPD" ] || { echo "FAIL: $MCPD not built"; exit 1; }
WORK=$(mktemp -d /tmp/p3myricap.XXXXXX)
TAG=$(mktag y)
bed_create 2
NIC="cap$$"
for h in 0 1; do
	ip netns exec "$TAG-h$h" "$MCPD" --nic "$NIC" --link ether --ifname eth0 \
		2>"$WORK/mcpd$h.log" &
	PIDS="$PIDS $!"
done
for h in 0 1; do
	i=0
	until in_host $h "$MCPD" --nic "$NIC" --counters >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || { cat "$WORK/mcpd$h.log"; echo "FAIL: the NIC of host $h did not come up"; exit 1; }
		sleep 0.01
	done
done
capture_start 0 "$WORK/myri.pcap"
WIREPUT_MAX=65536 run_pair myrinet offload 12 7 P3_MYRI_NIC="$NIC" P3_RMPP_AUTH=off \
	>"$WORK/run.out" 2>&1
rc=$?
capture_stop
[ $rc -eq 0 ] || { cat "$WORK/run.out"; echo "FAIL: wireput over myrinet (ether, offload)"; exit 1; }
"$PTLDUMP" -q -r "$WORK/myri.pcap" | sed -n '1,8p'
"$PTLDUMP" -F -r "$WORK/myri.pcap" >"$WORK/fields" || { echo "FAIL: ptldump -F"; exit 1; }
# Portals headers in the frames (ptldump -F: numbers, nids in host order):
# PUTs (type 1) 10.77.0.2/PIDBASE+1 -> 10.77.0.1/PIDBASE, ACKs (type 4) back
H0=$((0x0A4D0001)) H1=$((0x0A4D0002))
hdrs() { # type src_nid src_pid dst_nid dst_pid
	awk -v t="$1" -v sn="$2" -v sp="$3" -v dn="$4" -v dp="$5" '
		{ delete f
		  for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
		f["ptl_type"] == t && f["ptl_src_nid"] == sn && f["ptl_src_pid"] == sp &&
		f["ptl_dst_nid"] == dn && f["ptl_dst_pid"] == dp { n++ }
		END { print n + 0 }' "$WORK/fields"
}
puts=$(hdrs 1 $H1 $((PIDBASE + 1)) $H0 $PIDBASE)
acks=$(hdrs 4 $H0 $PIDBASE $H1 $((PIDBASE + 1)))
echo "ptldump: $puts PUT headers host 1 -> host 0, $acks ACK headers back ($(grep -c . "$WORK/fields") rmpp frames)"
if [ "$puts" -lt 12 ] || [ "$acks" -lt 1 ]; then
	grep ptl_type "$WORK/fields" | head -5
	echo "FAIL: ptldump decodes $puts PUT and $acks ACK headers of the run (want >= 12 and >= 1)"
	exit 1
fi
timeout 300 python3 "$top_srcdir/tools/capture/compare-tshark" "$WORK/myri.pcap" "$PTLDUMP" || {
	echo "FAIL: tshark's dissector and ptldump disagree on the myrinet capture"; exit 1; }
echo "PASS: myri-capture.sh: a myrinet (ether, offload) capture decoded by ptldump and the dissector"
