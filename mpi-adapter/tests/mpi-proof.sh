#!/bin/sh
# The ranks really run over the adapter: /proc/<pid>/maps of each rank maps
# libptl3-fi.so and libportals3, and the rebuilt libmpich.so.12.
. "$(dirname "$0")/common.sh"
need_provider
need_mpich
build_mpi_prog pingpong
PINGPONG_MAPS_DIR="$TMPD" "$P3MPIRUN" -n 2 --nal "$TESTNAL" --timeout 60 "$TMPD/pingpong" 10 4096 \
	>"$TMPD/out" 2>&1 || { cat "$TMPD/out"; fail "pingpong failed"; }
for r in 0 1; do
	[ -f "$TMPD/maps.$r" ] || fail "no maps from rank $r"
	grep -q 'libptl3-fi\.so' "$TMPD/maps.$r" || fail "rank $r: libptl3-fi.so not mapped"
	grep -q 'libportals3\.so' "$TMPD/maps.$r" || fail "rank $r: libportals3 not mapped"
	grep -q "$MPICH/lib/libmpich\.so\.12" "$TMPD/maps.$r" || fail "rank $r: not the rebuilt libmpich"
done
grep -h 'libptl3-fi\|libportals3' "$TMPD/maps.0" | awk '{print $6}' | sort -u
echo "PASS: ranks map libptl3-fi.so, libportals3 and the ch4:ofi libmpich"
