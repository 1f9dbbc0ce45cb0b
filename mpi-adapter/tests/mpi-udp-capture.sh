#!/bin/sh
# Proof that MPI traffic goes through Portals over the udp NAL: a 100 MiB
# MPI transfer (tests/bigxfer.c, 25 x 4 MiB MPI_Send) between two ranks with
# p3mpirun --nal udp on loopback while tcpdump captures the rmpp UDP ports on
# `lo` (headers only, -s 256).  ptldump decodes the capture: the DATA frames
# between the two ranks' ports (P3_RMPP_BASE_PORT, default 21000, + the
# Portals pid each rank prints with its counters) must carry at least
# 104857600 bytes of first-transmission payload; the kernel must not have
# dropped captured packets; the provider's Portals drop count must be 0.
# The ranks run with P3_RMPP_GSO=0: a GSO send is captured as one datagram
# holding a run of frames, and with headers only the later frames' headers
# are cut off (ptldump counts them apart; tools/capture/gso-test.sh checks
# the decoding of whole GSO captures).
# Needs root (or CAP_NET_RAW) and tcpdump; skips (77) otherwise.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
[ "$(id -u)" -eq 0 ] || { echo "SKIP: capturing on lo needs root"; exit 77; }
TCPDUMP=$(command -v tcpdump || true)
[ -n "$TCPDUMP" ] || { echo "SKIP: no tcpdump (apt-get install tcpdump)"; exit 77; }
PTLDUMP="$P3_BUILDDIR/tools/ptldump"
[ -x "$PTLDUMP" ] || { echo "SKIP: $PTLDUMP not built (needs libpcap-dev)"; exit 77; }
ip link show lo >/dev/null 2>&1 || { echo "SKIP: no loopback interface"; exit 77; }

TOTAL=104857600
base=${P3_RMPP_BASE_PORT:-21000}
export P3_RMPP_BASE_PORT="$base"
# PTL_PID_ANY picks pid getpid() % 4096 + 1 (up to 63 further tries)
lo_port=$((base + 1))
hi_port=$((base + 4160))
build_mpi_prog bigxfer

. "$P3_SRCDIR/tools/capture/capture.sh"
trap 'cap_stop "$TMPD/cap.pcap"; rm -rf "$TMPD"' EXIT
trap 'exit 1' INT TERM HUP

# -B: 32 MiB kernel buffer (2 cores, other jobs running: the default 2 MiB
# can overflow at loopback rates).
cap_start lo "$TMPD/cap.pcap" 256 32768 "udp and portrange $lo_port-$hi_port"

P3_RMPP_GSO=0 "$P3MPIRUN" -n 2 --nal udp --counters --timeout 300 "$TMPD/bigxfer" "$TOTAL" 4194304 \
	>"$TMPD/out" 2>&1 || { cat "$TMPD/out"; fail "bigxfer over udp exited non-zero"; }
cap_stop "$TMPD/cap.pcap"
cat "$TMPD/cap.pcap.log"
grep 'bigxfer:\|ptl3 counters' "$TMPD/out"
grep -q 'bigxfer: OK' "$TMPD/out" || { cat "$TMPD/out"; fail "bigxfer data not verified"; }

# the provider: both ranks printed counters, nothing dropped by Portals
n=$(grep -c 'ptl3 counters.*nal udp' "$TMPD/out" || true)
[ "$n" -eq 2 ] || fail "expected udp counters from 2 ranks, got $n"
if grep 'ptl3 counters' "$TMPD/out" | grep -qv 'portals_drop_count 0 '; then
	fail "Portals dropped messages"
fi

# the capture: complete (no kernel drops)
dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$TMPD/cap.pcap.log")
[ -n "$dropped" ] || fail "no 'dropped by kernel' line from tcpdump"
[ "$dropped" -eq 0 ] || fail "tcpdump: $dropped packets dropped by kernel (raise -B)"

# only the two ranks' flows (other udp jobs may share the machine): frames to
# or from their bound ports — data leaves each rank's connected send socket
# (an ephemeral port) towards the other's bound port
ports=$(sed -n 's/.*ptl3 counters.* ptl_pid \([0-9]*\) nal udp.*/\1/p' "$TMPD/out" |
	while read -r pid; do echo $((base + pid)); done | sort -un)
# shellcheck disable=SC2086 # two numbers
set -- $ports
[ $# -eq 2 ] || fail "cannot find the two ranks' Portals pids in the counters ($ports)"
"$TCPDUMP" -n -r "$TMPD/cap.pcap" -w "$TMPD/ranks.pcap" "udp and (port $1 or port $2)" \
	>"$TMPD/filter.out" 2>&1 || { cat "$TMPD/filter.out"; fail "tcpdump -r failed"; }
"$PTLDUMP" -q -r "$TMPD/ranks.pcap" >"$TMPD/summary" 2>&1 || { cat "$TMPD/summary"; fail "ptldump failed"; }
cat "$TMPD/summary"
line=$(grep '^# payload: ' "$TMPD/summary") || fail "ptldump printed no payload total"
data=$(echo "$line" | sed -n 's/^# payload: \([0-9]*\) data bytes in .* (\([0-9]*\) of them in retransmissions).*/\1/p')
retx=$(echo "$line" | sed -n 's/^# payload: \([0-9]*\) data bytes in .* (\([0-9]*\) of them in retransmissions).*/\2/p')
if [ -z "$data" ] || [ -z "$retx" ]; then fail "cannot parse '$line'"; fi
malformed=$(sed -n 's/^# summary: .*, \([0-9]*\) malformed.*/\1/p' "$TMPD/summary")
[ "${malformed:-x}" = 0 ] || fail "ptldump: ${malformed:-?} malformed frames"
first=$((data - retx))
echo "rmpp payload to and from udp ports $1 and $2: $data bytes ($retx retransmitted, $first first transmissions)"
[ "$first" -ge "$TOTAL" ] || fail "captured rmpp payload $first < $TOTAL bytes"
echo "PASS: $TOTAL bytes of MPI data crossed rmpp/udp on lo ($first payload bytes captured, 0 kernel drops, Portals drop count 0)"
