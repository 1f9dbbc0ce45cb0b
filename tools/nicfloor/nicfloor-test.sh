#!/bin/sh
# p3-nicfloor over UDP on loopback (no root): 50 timed and 10 warm-up round
# trips must report a positive half round trip, and each NIC must have taken
# in one frame per round trip (60); bad options exit 2; with --wire ether and
# namespaces that do not exist it fails (exit 1) at once and leaves no
# process behind.  Under a second.
set -u
exe=${P3_BUILDDIR:+$P3_BUILDDIR/tools/}p3-nicfloor
[ -x "$exe" ] || exe=./p3-nicfloor
out=$("$exe" --wire udp -i 50 -x 10 --timeout 20) || { echo "FAIL: p3-nicfloor exit $?"; exit 1; }
echo "$out"
echo "$out" | grep -Eq '^half round trip: mean [0-9.]+ us' || { echo "FAIL: no figure"; exit 1; }
n=$(echo "$out" | grep -c '^nic[01]: frames in 60,')
[ "$n" -eq 2 ] || { echo "FAIL: each NIC should have taken 60 frames"; exit 1; }
"$exe" --frame 10 >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --frame 10 accepted"; exit 1; }
if [ "$(id -u)" -eq 0 ]; then
	"$exe" --netns p3-nicfloor-none0,p3-nicfloor-none1 -i 5 >/dev/null 2>&1
	[ $? -eq 1 ] || { echo "FAIL: missing namespaces not reported"; exit 1; }
fi
echo "OK"
