#!/bin/sh
# MPICH's reduced test suite (tests/mpich-ci.txt, less the same three slow
# programs as mpich-ci-udp.sh) over ptl3 on the ether NAL (rmpp over raw
# Ethernet, EtherType 0x88B5) between network namespaces: tools/p3-netns
# makes 4 hosts on a bridge (10.77.0.1-4, eth0, static neighbour entries) and
# rank r runs on host r (p3mpirun --netns through run-mpich-tests --netns), so
# every message crosses a veth link and the bridge.  One rank per host: the
# ether NAL ignores its own outgoing frames, so two ranks of one host would
# need a hairpin the bridge does not do.  Needs root; skips (77) otherwise.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
[ "$(id -u)" -eq 0 ] || { echo "SKIP: network namespaces and raw sockets need root"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: ip (iproute2) not installed"; exit 77; }
command -v nsenter >/dev/null 2>&1 || { echo "SKIP: nsenter (util-linux) not installed"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: ip netns does not work here"; exit 77; }
NETNS="$P3_SRCDIR/tools/p3-netns"

TAG=$(printf 'm%05d' $(($$ % 100000)))
trap '"$NETNS" destroy --tag "$TAG" >/dev/null 2>&1 || true; rm -rf "$TMPD"' EXIT
trap 'exit 1' INT TERM HUP
"$NETNS" create 4 --tag "$TAG" >"$TMPD/netns.out" 2>&1 || {
	rc=$?
	cat "$TMPD/netns.out"
	[ $rc -eq 77 ] && exit 77
	fail "p3-netns create"
}
hosts=""
for i in 0 1 2 3; do
	for j in 0 1 2 3; do
		[ $i -eq $j ] && continue
		ip -n "$TAG-h$i" neigh replace "10.77.0.$((j + 1))" dev eth0 \
			lladdr "02:70:33:00:00:0$((j + 1))" nud permanent || fail "ip neigh on $TAG-h$i"
	done
	hosts="$hosts${hosts:+,}$TAG-h$i"
done
P3_RMPP_IFNAME=eth0
export P3_RMPP_IFNAME
"$P3_SRCDIR/mpi-adapter/run-mpich-tests" --subset ci --nal ether --netns "$hosts" --timeout 120 \
	--exclude pt2pt/large_message,comm/cmfree,pt2pt/probe_unexp \
	--results "$TMPD/results"
