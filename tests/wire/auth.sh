#!/bin/sh
# auth.sh - per-job frame authentication (P3_RMPP_AUTH, rmpp/rmpp_auth.h),
# issue 18 item 4b.  Over udp on 127.0.0.1, both ranks with authentication
# on and the job's key, a member puts 4 KiB into the target (aclprobe.c)
# while tcpdump records the port.  Then, into the live connection,
# authinject.py sends from the member's address one of its captured DATA
# frames again (a replay) and a copy with a data byte flipped and the CRC32C
# recomputed (a forgery).  Checks: the target counted exactly one auth_drop
# and one replay_drop (P3_RMPP_STATS, the NAL's counter dump), saw no second
# put and no byte outside the member's (aclprobe), and the capture holds the
# original twice (MAC valid under the key) and the forgery once (CRC valid,
# MAC invalid).  Root (raw socket, tcpdump); ~5 s.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root (raw socket to inject frames, tcpdump)"
command -v tcpdump >/dev/null 2>&1 || skip "tcpdump not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
PROBE="$TB/wire/aclprobe"
INJECT="$top_srcdir/tests/wire/authinject.py"
[ -x "$PROBE" ] || skip "$PROBE not built"
WORK=$(mktemp -d /tmp/p3auth.XXXXXX)
KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
pick_free_pidbase
port=$((${P3_RMPP_BASE_PORT:-21000} + PIDBASE))
JOB="PTL_NAL=udp PTL_NIDMAP=127.0.0.1:127.0.0.1 PTL_PIDMAP=$PIDBASE:$((PIDBASE + 1)) PTL_MY_JID=$((PIDBASE + 7))"
AUTH="${AUTH_EXTRA:-} P3_RMPP_AUTH=on P3_RMPP_AUTH_KEY=$KEY P3_RMPP_STATS=1 ACLPROBE_HOLD=$WORK/hold"

tcpdump -i lo -U -s 65535 -w "$WORK/cap.pcap" "udp port $port" >"$WORK/tcpdump.log" 2>&1 &
CAPPID=$!
PIDS="$PIDS $CAPPID"
wait_file "$WORK/cap.pcap" 5 || { cat "$WORK/tcpdump.log"; echo "FAIL: tcpdump did not start"; exit 1; }
sleep 0.3

# shellcheck disable=SC2086
timeout 60 env $JOB $AUTH PTL_MY_RID=0 "$PROBE" target "$WORK/ready" "$WORK/done" 0 >"$WORK/tgt" 2>&1 &
tpid=$!
PIDS="$PIDS $tpid"
wait_file "$WORK/ready" 15 || { cat "$WORK/tgt"; echo "FAIL: target did not come up"; exit 1; }
touch "$WORK/done"
# shellcheck disable=SC2086
timeout 60 env $JOB $AUTH PTL_MY_RID=1 "$PROBE" member "$WORK/ready" >"$WORK/mem" 2>&1 &
mpid=$!
PIDS="$PIDS $mpid"
i=0
until grep -q "put(s) of" "$WORK/mem"; do
	i=$((i + 1))
	[ $i -gt 300 ] && { cat "$WORK/mem"; echo "FAIL: the member's put did not complete"; exit 1; }
	sleep 0.05
done
sleep 0.5
python3 "$INJECT" inject "$WORK/cap.pcap" "$port" "$WORK/state" || exit 1
sleep 0.5
touch "$WORK/hold"
rc=0
wait "$mpid" || rc=1
wait "$tpid" || rc=1
sleep 0.3
kill -INT "$CAPPID" 2>/dev/null
wait "$CAPPID" 2>/dev/null
cat "$WORK/mem" "$WORK/tgt"
[ $rc -eq 0 ] || { echo "FAIL: aclprobe (the target saw more than the member's put?)"; exit 1; }
ad=$(awk '$1 == "auth_drops" { print $2 }' "$WORK/tgt")
rd=$(awk '$1 == "replay_drops" { print $2 }' "$WORK/tgt")
echo "target: auth_drops ${ad:-0}, replay_drops ${rd:-0} (P3_RMPP_STATS)"
[ "${ad:-0}" = 1 ] || { echo "FAIL: auth_drops ${ad:-0}, want 1 (the forgery)"; exit 1; }
[ "${rd:-0}" = 1 ] || { echo "FAIL: replay_drops ${rd:-0}, want 1 (the replay)"; exit 1; }
python3 "$INJECT" check "$WORK/cap.pcap" "$KEY" "$WORK/state" || exit 1
n=$("$PTLDUMP" -r "$WORK/cap.pcap" 2>&1 | grep -c "DATA" || true)
[ "$n" -ge 3 ] || { "$PTLDUMP" -r "$WORK/cap.pcap" | head -20; echo "FAIL: ptldump decodes $n DATA frames (want >= 3)"; exit 1; }
echo "PASS: auth.sh: forged and replayed frames dropped and counted; capture checked ($n DATA frames decoded by ptldump)"
