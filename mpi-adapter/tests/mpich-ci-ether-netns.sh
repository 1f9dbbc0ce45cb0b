#!/bin/sh
# MPICH's reduced test suite (tests/mpich-ci.txt, less the same three slow
# programs as mpich-ci-udp.sh) over ptl3 on the ether NAL (rmpp over raw
# Ethernet, EtherType 0x88B5) between network namespaces: run-mpich-tests
# --hosts 4 makes 4 hosts on a bridge (tools/p3-netns create + neigh: eth0,
# 10.77.0.1-4, static neighbour entries) and runs rank r on host r, so every
# message crosses a veth link and the bridge.  One rank per host: the ether
# NAL ignores its own outgoing frames, so two ranks of one host would need a
# hairpin the bridge does not do.  Needs root; skips (77) otherwise.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
[ "$(id -u)" -eq 0 ] || { echo "SKIP: network namespaces and raw sockets need root"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: ip (iproute2) not installed"; exit 77; }
command -v nsenter >/dev/null 2>&1 || { echo "SKIP: nsenter (util-linux) not installed"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: ip netns does not work here"; exit 77; }
rc=0
"$P3_SRCDIR/mpi-adapter/run-mpich-tests" --subset ci --nal ether --hosts 4 --timeout 120 \
	--exclude pt2pt/large_message,comm/cmfree,pt2pt/probe_unexp \
	--results "$TMPD/results" || rc=$?
# Then tests/mpich-repeat.txt: one program 40 times, the regression guard
# for a multi-receive buffer released under a message still landing.  The
# first failure's status is the script's.
rc2=0
"$P3_SRCDIR/mpi-adapter/run-mpich-tests" --subset "$P3_SRCDIR/mpi-adapter/tests/mpich-repeat.txt" \
	--nal ether --hosts 4 --timeout 60 --results "$TMPD/repeat" || rc2=$?
[ "$rc" -ne 0 ] || rc=$rc2
exit "$rc"
