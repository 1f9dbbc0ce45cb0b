#!/bin/sh
# test_slice.sh - mcpd's scheduling slice (sched_slice.c, README §3.7):
# --slice-us N is granted as asked (clamped to 100-100000 us) and shown as
# sched_slice_us by --counters; 0 leaves the kernel's.  Kernels before 6.12
# have no custom slices: there the NIC must report 0 and say why when the
# slice was asked for explicitly.  Bounded: 3 s per NIC (~0.3 s in all).
set -u
fail=0
kernel_has_slices() {
	v=$(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
	set -- $v
	[ "$1" -gt 6 ] || { [ "$1" -eq 6 ] && [ "$2" -ge 12 ]; }
}
# slice_of ARGS...: start a NIC with ARGS, print its sched_slice_us, stop it
slice_of() {
	name=slice-$$-$#-$1
	./mcpd --nic "$name" --base-port 33000 "$@" 2>"mcpd-slice-$$.err" &
	nic=$!
	i=0
	until out=$(./mcpd --nic "$name" --counters 2>/dev/null); do
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "FAIL: mcpd $* did not start"; kill $nic; return 1; }
		sleep 0.01
	done
	kill $nic
	wait $nic 2>/dev/null
	echo "$out" | sed -n 's/^sched_slice_us //p'
}
check() { # check WANT ARGS...
	want=$1
	shift
	got=$(slice_of "$@") || { fail=1; return; }
	if [ "$got" = "$want" ]; then
		echo "ok: mcpd $* -> sched_slice_us $got"
	else
		echo "FAIL: mcpd $* -> sched_slice_us '$got', expected $want"
		fail=1
	fi
}
if kernel_has_slices; then
	check 100 --slice-us 100
	check 2000 --slice-us 2000
	check 100 --slice-us 5          # below the kernel's minimum: clamped
	check 0 --slice-us 0
	P3_MCPD_SLICE_US=300 check 300 --spin-us 0
else
	echo "kernel $(uname -r) has no custom scheduling slices (6.12+): expecting 0 and a message"
	check 0 --slice-us 100
	grep -q "custom slices need Linux 6.12" "mcpd-slice-$$.err" || {
		echo "FAIL: mcpd did not say why it kept the kernel's slice"
		fail=1
	}
fi
rm -f "mcpd-slice-$$.err"
exit $fail
