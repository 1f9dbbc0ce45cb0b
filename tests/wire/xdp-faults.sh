#!/bin/sh
# xdp-faults.sh - the wire fault cases of faults.sh over the xdp NAL (Portals
# over rmpp over AF_XDP) between two namespace hosts, captures taken on the
# switch side of the links and decoded with ptldump (see faults.sh for the
# cases and their assertions).  Default cases (bounded for CI): XDP_WIRE_CASES
# overrides, "all" runs every case.  Exit 77 (with the reason) without root,
# tcpdump, nft, or where XDP cannot attach.
set -u
. "$(dirname "$0")/lib.sh"
need_root_net
need_xdp
cases=${XDP_WIRE_CASES:-"baseline loss burst ackloss corrupt restart blackhole garbage"}
[ "$cases" = all ] && cases=""
WIRE_NAL=xdp WIRE_CASES=${cases:-${WIRE_CASES:-}} exec "$(dirname "$0")/faults.sh" "$@"
