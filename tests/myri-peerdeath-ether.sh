#!/bin/sh
# myri-peerdeath-ether.sh - myri-peerdeath.sh's rounds over raw Ethernet
# between two p3-netns namespace hosts (root; exit 77 with the reason
# otherwise).  See myri-peerdeath.sh.
MYRI_PD_LINK=ether
export MYRI_PD_LINK
exec sh "$(dirname "$0")/myri-peerdeath.sh"
