#!/bin/sh
# myri-peerdeath-ether.sh - myri-peerdeath.sh's rounds over raw Ethernet
# between two p3-netns namespace hosts (root; exit 77 with the reason
# otherwise).  See myri-peerdeath.sh.  In the ASan build it is skipped (CI
# time, as myri-conformance.sh runs one ether pass there): the udp rounds
# run the same NIC code, only rmpp's link differs.
top_builddir=${top_builddir:-..}
if [ -z "${MYRI_PD_ASAN_ETHER:-}" ] &&
	grep -q -- '--enable-sanitizers' "$top_builddir/config.status" 2>/dev/null; then
	echo "SKIP: ASan build (CI time; MYRI_PD_ASAN_ETHER=1 runs it): the udp rounds cover the NIC code"
	exit 77
fi
MYRI_PD_LINK=ether
export MYRI_PD_LINK
exec sh "$(dirname "$0")/myri-peerdeath.sh"
