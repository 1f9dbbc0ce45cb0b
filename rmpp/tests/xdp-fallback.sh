#!/bin/sh
# xdp-fallback.sh - where XDP cannot attach, the xdp link fails with a message
# naming the call that failed, why, and what to do (rmpp/README.md, Links,
# xdp).  As root, in a private 1-host bed (tools/p3-netns), rmpp-ref
# xdp-probe runs four times: as root (it opens and says how it runs), as an
# unprivileged user with no capability (the AF_XDP socket is refused:
# CAP_NET_RAW), with CAP_NET_RAW and an 8 MiB locked-memory limit (the 16 MiB
# UMEM is not pinned: RLIMIT_MEMLOCK), and with CAP_NET_RAW + CAP_IPC_LOCK
# (the socket opens, the XDP program does not attach: CAP_BPF/CAP_NET_ADMIN).  Exit 77 (with the reason)
# without root, ip netns, setpriv, or an xdp link in this build.  ~2 s.
set -u
srcdir=${RMPP_SRCDIR:-$(dirname "$0")/..}
top_srcdir=$(cd "$srcdir/.." && pwd)
REF=./tools/rmpp-ref
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, XDP)"
command -v setpriv >/dev/null 2>&1 || skip "setpriv (util-linux) not installed"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not installed"
[ -f ./rmpp_xdp.bpf.o ] || skip "this build has no xdp link (libxdp-dev, libbpf-dev or clang missing at configure)"
TAG=$(printf 'f%05d' $(($$ % 100000)))
"$top_srcdir/tools/p3-netns" create 1 --tag "$TAG" >/dev/null 2>&1 || skip "p3-netns create failed"
trap '"$top_srcdir/tools/p3-netns" destroy --tag "$TAG" >/dev/null 2>&1' EXIT
fail=0
check() { # description, output, pattern, wanted exit, got exit
	if [ "$4" = "$5" ] && printf '%s\n' "$2" | grep -q -- "$3"; then
		echo "ok: $1"
	else
		echo "NOT OK: $1 (exit $5, wanted $4; wanted /$3/ in:)"; printf '%s\n' "$2" | sed 's/^/    /'
		fail=1
	fi
}
out=$(ip netns exec "$TAG-h0" "$REF" xdp-probe eth0 2>&1); rc=$?
if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q "xdp_program__attach"; then
	printf '%s\n' "$out"; skip "XDP cannot attach here even as root"
fi
check "root: the link opens and says how it runs" "$out" "^xdp \(native\|generic\) \(copy\|zero-copy\) queue 0 on eth0" 0 $rc
out=$(ip netns exec "$TAG-h0" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	--bounding-set=-all "$REF" xdp-probe eth0 2>&1); rc=$?
check "no capability: the AF_XDP socket is refused, CAP_NET_RAW named" "$out" \
	"xdp: xsk_umem__create failed: Operation not permitted: AF_XDP needs CAP_NET_RAW" 1 $rc
# caps: run rmpp-ref xdp-probe as nobody with these capabilities (+a,+b)
as_nobody() {
	ip netns exec "$TAG-h0" setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps="-all,$1" --ambient-caps="$1" --bounding-set="-all,$1" \
		sh -c "ulimit -l 8192; exec $REF xdp-probe eth0" 2>&1
}
out=$(as_nobody +net_raw); rc=$?
check "CAP_NET_RAW, 8 MiB RLIMIT_MEMLOCK: the UMEM is not pinned, the limit named" "$out" \
	"xdp: xsk_umem__create failed: .*: UMEM could not be pinned (lower P3_RMPP_XDP_FRAMES or raise RLIMIT_MEMLOCK)" 1 $rc
out=$(as_nobody +net_raw,+ipc_lock); rc=$?
check "CAP_NET_RAW + CAP_IPC_LOCK: the XDP program is refused, CAP_BPF/CAP_NET_ADMIN named" "$out" \
	"xdp: xdp_program__attach on eth0 .*: Operation not permitted; loading XDP programs needs CAP_BPF and CAP_NET_ADMIN" 1 $rc
exit $fail
