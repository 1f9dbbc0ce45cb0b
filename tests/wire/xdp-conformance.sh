#!/bin/sh
# xdp-conformance.sh - the conformance suite (every check_* binary) over the
# xdp NAL (Portals over rmpp over AF_XDP) between network namespace hosts, in
# both progress modes: ether-conformance.sh with P3_TEST_ETHER_NAL=xdp (the
# harness's ether modes then open PTL_IFACE_XDP).  8 hosts: one rank per host,
# as an interface queue takes one AF_XDP socket.  Exit 77 (with the reason)
# without root / ip / CAP_NET_RAW, or when this build has no xdp link.
# In a sanitizer build (make check sets P3_TEST_SAN_FLAGS) app progress only,
# to bound CI (80 s instead of 116 s measured; the link code is the same in both
# modes, and ether-conformance.sh runs thread mode under ASan);
# P3_TEST_MODES_ETHER overrides.
set -u
. "$(dirname "$0")/lib.sh"
need_root_net
need_xdp
case "${P3_TEST_SAN_FLAGS:-}" in
*sanitize*) : "${P3_TEST_MODES_ETHER:=ether}"; export P3_TEST_MODES_ETHER ;;
esac
P3_TEST_ETHER_NAL=xdp exec "$(dirname "$0")/ether-conformance.sh" "$@"
