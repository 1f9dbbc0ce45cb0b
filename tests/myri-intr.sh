#!/bin/sh
# myri-intr.sh - PTL_PROGRESS=interrupt over the emulated NIC: a target that
# computes with no Portals call while 1000 8-byte puts and one 64 MiB put
# land (myri_intr.c, 2 ranks under ptlrun --nal myrinet, ranks on CPUs 0
# and 1) finds every byte and every event, and its NIC raised at least one
# interrupt per message; the handler's time is printed.  The same program
# in thread mode is the reference (handler counters 0).  INTR_BIG_MB sets
# the big put's size (64).  Bounded: 120 s per job; ~15 s in all.
. "$(dirname "$0")/myri-lib.sh"
myri_prog myri_intr
# ranks are Portals pids 0 and 1: the NIC's own UDP ports, away from the
# myrinet and udp plans (bases 23000, 21000 + pids up to 41000) that other
# jobs on this machine may be using
myri_ports 17000 200
field() { # line name
	echo "$1" | awk -v n="$2" '{ for (i = 1; i < NF; i++) if ($i == n) print $(i + 1) }'
}
for mode in interrupt thread; do
	expect=""
	[ $mode = interrupt ] && expect=--expect-interrupts
	out=$("$PTLRUN" -n 2 --cpus 0,1 --nal myrinet --progress $mode --timeout 120 \
		"$PROG" $expect 2>&1)
	rc=$?
	line=$(echo "$out" | grep 'intr: msgs' | head -1)
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		echo "$out"
		echo "FAIL: myri_intr in $mode mode (exit $rc)"
		nfail=$((nfail + 1))
		continue
	fi
	msgs=$(field "$line" msgs)
	intrs=$(field "$line" interrupts)
	hdrs=$(field "$line" hdrs)
	hns=$(field "$line" handler_ns)
	hcpu=$(field "$line" handler_cpu_ns)
	acpu=$(field "$line" app_cpu_ns)
	wall=$(field "$line" wall_ns)
	echo "$mode: $msgs messages, $intrs interrupts, $hdrs headers in the handler," \
		"handler $((hns / 1000)) us wall / $((hcpu / 1000)) us CPU" \
		"($((hns / (hdrs > 0 ? hdrs : 1))) ns per header); target loop $((wall / 1000000)) ms," \
		"its CPU $((acpu / 1000000)) ms"
	if [ $mode = interrupt ]; then
		if [ "$intrs" -lt "$msgs" ] || [ "$msgs" -lt 1001 ] || [ "$hdrs" -lt 1001 ] ||
			[ "$hns" -le 0 ] || [ "$hcpu" -le 0 ]; then
			echo "FAIL: interrupt mode: interrupts < messages or no handler time"
			nfail=$((nfail + 1))
		fi
	elif [ "$hdrs" -ne 0 ]; then
		echo "FAIL: thread mode counted interrupt-handler headers"
		nfail=$((nfail + 1))
	fi
done
[ $nfail -eq 0 ] && echo "PASS: interrupt mode served every message by an interrupt"
[ $nfail -eq 0 ]
