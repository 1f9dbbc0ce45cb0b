#!/bin/sh
# ether-conformance.sh - the conformance suite (every check_* binary) over
# PTL_NAL=ether between two network namespaces, in both progress modes.
# Each rank of a job is forked by the harness and setns()es into host
# (rank % hosts) of a fresh p3-netns bed (host h: nid 10.77.0.(h+1), eth0)
# before PtlInit (harness modes "ether" and "etherthread").  8 hosts, so
# the 4- and 8-rank jobs have one rank per host too (ETHER_HOSTS=2 puts
# several ranks on one host: see README.md, same-host ranks cannot talk).
# Exit 77 (with the reason) without root / ip / CAP_NET_RAW.
set -u
. "$(dirname "$0")/lib.sh"
need_root_net
TAG=$(mktag e)
nh=${ETHER_HOSTS:-8}
bed_create "$nh"
P3_TEST_NETNS=$TAG-h0
i=1; while [ $i -lt "$nh" ]; do P3_TEST_NETNS="$P3_TEST_NETNS,$TAG-h$i"; i=$((i + 1)); done
export P3_TEST_NETNS P3_RMPP_IFNAME=eth0 CK_FORK=yes
export P3_TEST_MODES="${P3_TEST_MODES_ETHER:-ether,etherthread}"
fail=0
t0=$(date +%s)
for b in ${ETHER_BINS:-check_init check_ni check_me check_match check_md check_offsets check_acl \
	check_threshold check_ack check_events check_eq check_mdupdate check_data \
	check_invalid check_threads check_multiproc}; do
	[ -x "$TB/$b" ] || { echo "FAIL: $TB/$b not built"; fail=1; continue; }
	out=$(timeout 600 "$TB/$b" 2>&1)
	rc=$?
	echo "$out" | grep -E '^[0-9]+%: Checks' | sed "s/^/$b: /"
	if [ $rc -ne 0 ]; then
		fail=1
		echo "$out" | grep -E ':[FE]:' | head -20
		# a rank killed by a sanitizer: its report is on the job's stderr
		echo "$out" | grep -E -A14 'ERROR: (Address|Leak)Sanitizer|runtime error' | head -60
	fi
done
echo "${P3_TEST_ETHER_NAL:-ether} conformance: $(( $(date +%s) - t0 )) s"
[ $fail -eq 0 ] && echo "PASS" || echo "FAIL"
exit $fail
