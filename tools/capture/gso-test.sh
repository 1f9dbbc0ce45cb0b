#!/bin/sh
# ptldump decodes UDP GSO sends: a ptlbench udp bandwidth run on loopback
# (8 puts of 1 MiB per window, 3 windows) while tcpdump captures whole
# packets on `lo`.  rmpp sends runs of full frames with UDP_SEGMENT and the
# capture sees each run as one datagram, before the kernel cuts it; ptldump
# must find every frame in them: GSO sends > 0, no malformed frame, no frame
# left undecoded, and at least the 3 x 8 MiB of put data as first
# transmissions.  Needs root (or CAP_NET_RAW) and tcpdump; skips (77)
# otherwise.  P3_BUILDDIR: the build tree (default: this script's ../..).
set -u
B=${P3_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: capturing on lo needs root"; exit 77; }
TCPDUMP=$(command -v tcpdump || true)
[ -n "$TCPDUMP" ] || { echo "SKIP: no tcpdump (apt-get install tcpdump)"; exit 77; }
PTLDUMP="$B/tools/ptldump"
[ -x "$PTLDUMP" ] || { echo "SKIP: $PTLDUMP not built (needs libpcap-dev)"; exit 77; }
for f in "$B/tools/ptlrun/ptlrun" "$B/bench/ptlbench/ptlbench"; do
	[ -x "$f" ] || fail "$f not built"
done
TMPD=$(mktemp -d /tmp/p3-gso.XXXXXX)
. "$(dirname "$0")/capture.sh"
trap 'cap_stop "$TMPD/cap.pcap"; rm -rf "$TMPD"' EXIT
trap 'exit 1' INT TERM HUP

base=${P3_RMPP_BASE_PORT:-21000}
export P3_RMPP_BASE_PORT="$base"
cap_start lo "$TMPD/cap.pcap" 0 65536 "udp and portrange $base-$((base + 4160))"
P3_RMPP_GSO=1 timeout 120 "$B/tools/ptlrun/ptlrun" -n 2 --nal udp "$B/bench/ptlbench/ptlbench" \
	-t bw -m 1M:1M -w 8 -i 2 -x 1 --no-ref >"$TMPD/out" 2>&1 || { cat "$TMPD/out"; fail "ptlbench failed"; }
cap_stop "$TMPD/cap.pcap"
cat "$TMPD/cap.pcap.log"
dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$TMPD/cap.pcap.log")
[ "${dropped:-x}" = 0 ] || fail "tcpdump: ${dropped:-?} packets dropped by kernel: the capture is incomplete"
"$PTLDUMP" -q -r "$TMPD/cap.pcap" >"$TMPD/summary" 2>&1 || { cat "$TMPD/summary"; fail "ptldump failed"; }
cat "$TMPD/summary"
malformed=$(sed -n 's/^# summary: .*, \([0-9]*\) malformed.*/\1/p' "$TMPD/summary")
[ "${malformed:-x}" = 0 ] || fail "ptldump: ${malformed:-?} malformed frames"
gso=$(sed -n 's/^# UDP GSO: \([0-9]*\) sends holding \([0-9]*\) frames; \([0-9]*\) frames .*/\1 \2 \3/p' "$TMPD/summary")
[ -n "$gso" ] || fail "ptldump saw no UDP GSO send"
# shellcheck disable=SC2086 # three numbers
set -- $gso
[ "$1" -gt 0 ] && [ "$2" -gt "$1" ] || fail "GSO: $1 sends holding $2 frames"
[ "$3" -eq 0 ] || fail "GSO: $3 frames not decoded with a full capture"
line=$(grep '^# payload: ' "$TMPD/summary") || fail "ptldump printed no payload total"
data=$(echo "$line" | sed -n 's/^# payload: \([0-9]*\) data bytes in .* (\([0-9]*\) of them in retransmissions).*/\1/p')
retx=$(echo "$line" | sed -n 's/^# payload: \([0-9]*\) data bytes in .* (\([0-9]*\) of them in retransmissions).*/\2/p')
want=$((3 * 8 * 1048576))
[ $((data - retx)) -ge $want ] || fail "first-transmission payload $((data - retx)) < $want"
echo "PASS: $1 GSO sends holding $2 frames decoded; $((data - retx)) payload bytes (want >= $want)"
