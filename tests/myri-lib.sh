# myri-lib.sh - sourced by the tests/myri-*.sh launchers: where the build's
# programs are, a private NIC port plan, waiting for a NIC, reading its
# counters.  Sets PTLRUN, MCPD and nfail (failures so far, 0).
# shellcheck shell=sh
set -u
top_builddir=${top_builddir:-..}
PTLRUN="$top_builddir/tools/ptlrun/ptlrun"
MCPD="$top_builddir/nal/myrinet/mcpd"
# shellcheck disable=SC2034 # the launchers count their failures in it
nfail=0

# myri_prog NAME: PROG = the test program NAME (the current directory's or
# the build tree's); the test fails at once if it, ptlrun or mcpd is not built.
myri_prog() {
	PROG=./$1
	[ -x "$PROG" ] || PROG="$top_builddir/tests/$1"
	for f in "$PTLRUN" "$MCPD" "$PROG"; do
		[ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }
	done
}

# myri_ports BASE SLOTS: P3_MYRI_BASE_PORT (unless set) = BASE + ($$ % SLOTS)
# * 16, exported: the NIC's UDP ports (base + Portals pid) private to this
# run, away from the myrinet and udp plans (23000, 21000 + pids) other jobs
# of the machine may be using.
myri_ports() {
	P3_MYRI_BASE_PORT=${P3_MYRI_BASE_PORT:-$(($1 + ($$ % $2) * 16))}
	export P3_MYRI_BASE_PORT
}

# myri_wait_nic NAME [PREFIX...]: wait (3 s at most) until the NIC NAME
# answers `mcpd --counters` run under PREFIX (e.g. ip netns exec NS); 1 if
# it never does.
myri_wait_nic() {
	_name=$1
	shift
	_i=0
	until "$@" "$MCPD" --nic "$_name" --counters >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ $_i -lt 300 ] || return 1
		sleep 0.01
	done
}

# myri_counter FILE NAME: the value of counter NAME in FILE (mcpd --counters).
myri_counter() {
	awk -v n="$2" '$1 == n { print $2 }' "$1"
}

# myri_own_netns: as root, run this script again inside a private network
# namespace with its loopback up (once: MYRI_OWN_NETNS marks the second
# run): its NICs' UDP ports then meet no other job's (a neighbour's NIC on
# the same ports made attaches fail with PTL_PID_INVALID on the shared
# machine); namespace hosts made with p3-netns from there work as usual.
# Without root or unshare: nothing.
myri_own_netns() {
	if [ "$(id -u)" -eq 0 ] && [ -z "${MYRI_OWN_NETNS:-}" ] &&
		command -v unshare >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
		MYRI_OWN_NETNS=1 exec unshare -n sh -c 'ip link set lo up && exec sh "$0"' "$0"
	fi
}
