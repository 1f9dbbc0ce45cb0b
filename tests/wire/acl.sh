#!/bin/sh
# acl.sh - who may talk to you (issue 18 item 4a): on every NAL a target
# whose ACL is the default (entry 0: same uid, same job) receives puts from a
# process of a second job (its own PTL_MY_JID) and, as root, of a second uid
# (setpriv --reuid 65534, keeping CAP_NET_RAW for ether), then one put from
# a member of its job.  The target checks (aclprobe.c): the drops counted
# (PTL_SR_DROP_COUNT), not one byte of the intruders written, no event for
# them, the member's put landed.
#   lo     one process: entries admitting only another job / another uid
#   udp    127.0.0.1; ether between two namespace hosts (root)
#   shmem  the segment namespace is per uid and job (/p3shm-<uid>-<jid>-<pid>,
#          mode 0600): an intruder cannot even address the target, its put
#          fails at the sender (PTL_NI_PEER_DEAD) and the target counts 0
# Bounded: ~15 s (P3_SHMEM_CONNECT_TIMEOUT=1000 for the shmem intruders).
. "$(dirname "$0")/lib.sh"
PROBE="$TB/wire/aclprobe"
[ -x "$PROBE" ] || skip "$PROBE not built"
WORK=$(mktemp -d /tmp/p3acl.XXXXXX)
chmod 755 "$WORK" # the other uid's intruder reads READY
N=3
fails=0
other_uid=""
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	other_uid=65534
	# The second uid runs a copy of the probe and its library in $WORK
	# (mode 755): the build tree may sit below a directory only its owner
	# may enter (a clone made in `mktemp -d`, mode 0700), where uid 65534
	# could not even start the libtool wrapper.
	PROBE_OTHER=$PROBE
	if [ -x "$TB/wire/.libs/aclprobe" ]; then
		cp "$TB/wire/.libs/aclprobe" "$WORK/aclprobe" &&
			cp -L "$top_builddir/portals/.libs/libportals3.so.0" "$WORK/" &&
			chmod 755 "$WORK/aclprobe" && chmod 644 "$WORK/libportals3.so.0" &&
			PROBE_OTHER="env LD_LIBRARY_PATH=$WORK $WORK/aclprobe"
	fi
else
	echo "note: not root (or no setpriv): the second-uid intruder is left out"
fi

# env_of NAL RANK JID: the job environment (nids/pids per NAL)
env_of() {
	case "$1" in
	shmem) echo "PTL_NAL=shmem PTL_MY_RID=$2 PTL_NIDMAP=0:0 PTL_PIDMAP=$PIDBASE:$((PIDBASE + 1)) PTL_MY_JID=$3 P3_SHMEM_CONNECT_TIMEOUT=1000" ;;
	udp) echo "PTL_NAL=udp PTL_MY_RID=$2 PTL_NIDMAP=127.0.0.1:127.0.0.1 PTL_PIDMAP=$PIDBASE:$((PIDBASE + 1)) PTL_MY_JID=$3" ;;
	ether) echo "PTL_NAL=ether PTL_MY_RID=$2 PTL_NIDMAP=10.77.0.1:10.77.0.2 PTL_PIDMAP=$PIDBASE:$((PIDBASE + 1)) PTL_MY_JID=$3 P3_RMPP_IFNAME=eth0" ;;
	esac
}
# host NAL I: the command prefix that runs on host I
host() { [ "$1" = ether ] && echo "ip netns exec $TAG-h$2"; }

pick_free_pidbase
jid=$((PIDBASE + 7))
one_nal() { # NAL EXPECTED_DROPS_PER_INTRUDER
	nal=$1 per=$2
	rm -f "$WORK/ready" "$WORK/done"
	nint=1
	[ -n "$other_uid" ] && nint=2
	want=$((per * nint * N))
	# shellcheck disable=SC2046
	timeout 60 $(host "$nal" 0) env $(env_of "$nal" 0 $jid) "$PROBE" target "$WORK/ready" "$WORK/done" $want \
		>"$WORK/$nal.tgt" 2>&1 &
	tpid=$!
	PIDS="$PIDS $tpid"
	wait_file "$WORK/ready" 15 || { cat "$WORK/$nal.tgt"; echo "FAIL: $nal: target did not come up"; return 1; }
	rc=0
	# shellcheck disable=SC2046
	timeout 30 $(host "$nal" 1) env $(env_of "$nal" 1 $((jid + 1))) "$PROBE" intruder "$WORK/ready" $N \
		>"$WORK/$nal.int" 2>&1 || rc=1
	if [ -n "$other_uid" ]; then
		caps=""
		[ "$nal" = ether ] && caps="--inh-caps=+net_raw --ambient-caps=+net_raw"
		# shellcheck disable=SC2046,SC2086
		timeout 30 $(host "$nal" 1) env $(env_of "$nal" 1 $jid) setpriv --reuid=$other_uid --regid=$other_uid \
			--clear-groups $caps $PROBE_OTHER intruder "$WORK/ready" $N >>"$WORK/$nal.int" 2>&1 || rc=1
	fi
	touch "$WORK/done"
	# shellcheck disable=SC2046
	timeout 30 $(host "$nal" 1) env $(env_of "$nal" 1 $jid) "$PROBE" member "$WORK/ready" \
		>"$WORK/$nal.mem" 2>&1 || rc=1
	wait "$tpid" || rc=1
	sed "s/^/$nal: /" "$WORK/$nal.int" "$WORK/$nal.mem" "$WORK/$nal.tgt"
	[ $rc -eq 0 ] || { echo "FAIL: $nal"; return 1; }
	echo "ok: $nal: $want drop(s), 0 intruder bytes"
}

env PTL_NAL=lo PTL_MY_JID=$jid "$PROBE" lo || { echo "FAIL: lo"; fails=$((fails + 1)); }
one_nal udp 1 || fails=$((fails + 1))
one_nal shmem 0 || fails=$((fails + 1))
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null 2>&1 && ip netns list >/dev/null 2>&1; then
	TAG=$(mktag a)
	bed_create 2
	one_nal ether 1 || fails=$((fails + 1))
else
	echo "note: ether left out (needs root and network namespaces)"
	[ "$(id -u)" -eq 0 ] && { echo "FAIL: root but no network namespaces"; fails=$((fails + 1)); }
fi
[ $fails -eq 0 ] || { echo "FAIL: acl.sh: $fails NAL(s)"; exit 1; }
echo "PASS: acl.sh: second job${other_uid:+ and second uid} refused and counted on every NAL, 0 bytes written"
