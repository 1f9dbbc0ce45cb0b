#!/bin/sh
# xdp-conformance.sh - the conformance suite (every check_* binary) over the
# xdp NAL (Portals over rmpp over AF_XDP) between network namespace hosts, in
# both progress modes: ether-conformance.sh with P3_TEST_ETHER_NAL=xdp (the
# harness's ether modes then open PTL_IFACE_XDP).  8 hosts: one rank per host,
# as an interface queue takes one AF_XDP socket.  Exit 77 (with the reason)
# without root / ip / CAP_NET_RAW, or when this build has no xdp link.
set -u
. "$(dirname "$0")/lib.sh"
need_root_net
need_xdp
P3_TEST_ETHER_NAL=xdp exec "$(dirname "$0")/ether-conformance.sh" "$@"
