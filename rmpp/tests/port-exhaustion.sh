#!/bin/sh
# port-exhaustion.sh - the restart tests hold when no ephemeral UDP port is
# left (another job on the machine holding them all once made t_peer_restart
# fail here).  In a private network namespace (unshare -n: nothing else in
# it) the kernel's ephemeral range is cut to the 2 ports the two endpoints
# take, so their connected send sockets get none (the bound socket is used,
# counter dsock_errors) and the restarted endpoint must come back on a port
# outside that range (h_fixed_port).  Runs test_faults' peer cases and
# test_restart there.  Exit 77 (with the reason) without root or unshare.
# ~2 s.
set -u
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (a network namespace)"
command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) not installed"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not installed"
unshare -n true 2>/dev/null || skip "unshare -n refused (no CAP_SYS_ADMIN here)"
exec unshare -n sh -c '
	set -e
	ip link set lo up
	echo "40000 40001" >/proc/sys/net/ipv4/ip_local_port_range
	echo "ip_local_port_range: $(cat /proc/sys/net/ipv4/ip_local_port_range)"
	RMPP_TEST=peer ./tests/test_faults
	./tests/test_restart
'
