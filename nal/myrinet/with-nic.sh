# with-nic.sh - sourced by the device-level tests (test_hostile.sh,
# test_posted.sh): with_nic NAME BASE_PORT PROG [ARGS...] starts a private
# mcpd named NAME-<pid> (BASE_PORT: its UDP base port, "" for mcpd's
# default), waits until it answers (3 s at most), runs PROG under a 60 s
# limit (MCPD_PREFIX, e.g. "taskset -c 0", is put before mcpd), then checks that the NIC survived (its counters are printed) and
# stops it.  Exit status: PROG's, or 1 if the NIC did not start or died.
with_nic() {
	P3_MYRI_NIC="$1-$$"
	export P3_MYRI_NIC
	port=$2
	shift 2
	${MCPD_PREFIX:-} ./mcpd --nic "$P3_MYRI_NIC" ${port:+--base-port "$port"} &
	nic=$!
	trap 'kill $nic 2>/dev/null; wait $nic 2>/dev/null' EXIT INT TERM
	i=0
	until ./mcpd --counters >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "FAIL: mcpd did not start"; exit 1; }
		sleep 0.01
	done
	timeout 60 "$@"
	rc=$?
	./mcpd --counters || { echo "FAIL: the NIC died"; exit 1; }
	exit $rc
}
