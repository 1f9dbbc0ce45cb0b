# capture.sh - sourced by the capture tests: a tcpdump on an interface,
# started and stopped so that the file holds every captured packet.
#   cap_start IFACE FILE SNAPLEN BUFFER_KIB FILTER   (cap_pid; FILE.log: tcpdump's output)
#   cap_stop FILE
# -U writes packet by packet; -Z root keeps the file writable in a private
# directory (tcpdump drops to user tcpdump by default).  A plain SIGINT ends
# tcpdump at once, losing what is still in the kernel ring: cap_stop first
# waits until the file has not grown for a second (60 s at most).
cap_pid=""
cap_start() {
	tcpdump -i "$1" -n -U -s "$3" -B "$4" -Z root -w "$2" "$5" >"$2.log" 2>&1 &
	cap_pid=$!
	_i=0
	until grep -qs 'listening on' "$2.log"; do
		if ! kill -0 "$cap_pid" 2>/dev/null; then
			cat "$2.log"
			cap_pid=""
			echo "FAIL: tcpdump did not start"
			exit 1
		fi
		_i=$((_i + 1))
		[ $_i -lt 300 ] || { cat "$2.log"; echo "FAIL: tcpdump not listening after 30 s"; exit 1; }
		sleep 0.1
	done
}
cap_stop() {
	[ -n "$cap_pid" ] || return 0
	_last=-1 _same=0 _i=0
	while [ $_same -lt 2 ] && [ $_i -lt 120 ]; do
		_sz=$(stat -c %s "$1" 2>/dev/null || echo 0)
		if [ "$_sz" = "$_last" ]; then _same=$((_same + 1)); else _same=0; fi
		_last=$_sz _i=$((_i + 1))
		sleep 0.5
	done
	kill -INT "$cap_pid" 2>/dev/null || true
	wait "$cap_pid" 2>/dev/null || true
	cap_pid=""
}
