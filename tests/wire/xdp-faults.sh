#!/bin/sh
# xdp-faults.sh - the wire fault cases of faults.sh over the xdp NAL (Portals
# over rmpp over AF_XDP) between two namespace hosts, captures taken on the
# switch side of the links and decoded with ptldump (see faults.sh for the
# cases and their assertions): all 17 by default (~45 s), WIRE_CASES selects.
# Exit 77 (with the reason) without root, tcpdump, nft, or where XDP cannot
# attach.
set -u
. "$(dirname "$0")/lib.sh"
need_root_net
need_xdp
WIRE_NAL=xdp exec "$(dirname "$0")/faults.sh" "$@"
