#!/bin/sh
# compare-tshark.sh - the decoder cross-check on a real capture: wireput over
# the ether NAL between two namespace hosts with 2 % loss (so the capture
# holds retransmissions, SACKs and DSACKs besides HELLO, eager, RTS/CTS,
# RDATA, DONE, ACK and CLOSE frames), captured with tcpdump on the target's
# eth0, then tools/capture/compare-tshark: ptldump -F and tshark with
# tools/wireshark/p3stack.lua must decode every rmpp frame field by field
# identically.  Exit 77 (with the reason) without root, tcpdump or tshark.
set -u
. "$(dirname "$0")/lib.sh"
need_root_net
need_tshark_capture
WORK=$(mktemp -d /tmp/p3cmp.XXXXXX)
TAG=$(mktag c)
bed_create 2
"$NETNS" loss 0 2 --tag "$TAG" --proto ether >/dev/null
capture_start 0 "$WORK/cmp.pcap"
WIREPUT_MAX=${CMP_MAX:-262144} run_pair ether app "${CMP_N:-24}" 3 >"$WORK/run.out" 2>&1
rc=$?
capture_stop
[ $rc -eq 0 ] || { echo "FAIL: wireput"; grep -v regs "$WORK/run.out"; exit 1; }
"$PTLDUMP" -q -r "$WORK/cmp.pcap" | sed -n '1,6p'
timeout 300 python3 "$top_srcdir/tools/capture/compare-tshark" "$WORK/cmp.pcap" "$PTLDUMP"
