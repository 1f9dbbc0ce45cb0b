#!/bin/sh
# run-compat.sh - build tests/compat/ref_style.c, a program written for the
# Sandia Portals 3.3 reference implementation, against an *installed* copy
# of p3stack (headers + libportals3 + portals3.pc in a temporary prefix),
# and run it as a 2-rank job with ptlrun over each progress mode.
#
# The install is done here, from the build tree, into a private prefix:
#   make -C $top_builddir/include  install prefix=$tmp
#   make -C $top_builddir/portals  install prefix=$tmp
#   make -C $top_builddir          install-pkgconfigDATA prefix=$tmp
# and the program is compiled with
#   cc ref_style.c $(pkg-config --define-variable=prefix=$tmp --cflags --libs portals3)
# (portals3.pc has the configure-time prefix baked in; --define-variable
# relocates it).  Exit 77 (skip) only when ptlrun is not built.
set -u
top_builddir=${top_builddir:-../..}
srcdir=${srcdir:-.}
CC=${P3_TEST_CC:-cc}
MAKE=${MAKE:-make}
PTLRUN="$top_builddir/tools/ptlrun/ptlrun"
SRC="$srcdir/compat/ref_style.c"
[ -f "$SRC" ] || SRC="$srcdir/ref_style.c"

if [ ! -x "$PTLRUN" ]; then
	echo "SKIP: $PTLRUN is not built (tools/ptlrun); cannot launch a 2-rank job"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/p3compat.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
log="$tmp/install.log"

fail() {
	echo "FAIL: $*"
	[ -f "$log" ] && tail -n 30 "$log"
	echo "0 passed, 1 failed"
	exit 1
}

for d in include portals; do
	$MAKE -C "$top_builddir/$d" install prefix="$tmp" >>"$log" 2>&1 ||
		fail "make -C $d install prefix=$tmp"
done
$MAKE -C "$top_builddir" install-pkgconfigDATA prefix="$tmp" >>"$log" 2>&1 ||
	fail "make install-pkgconfigDATA prefix=$tmp"

for h in portals3.h p3rt/p3rt.h p3api/debug.h p3nal_shmem.h; do
	[ -f "$tmp/include/$h" ] || fail "installed header $h missing"
done
pcdir="$tmp/lib/pkgconfig"
[ -f "$pcdir/portals3.pc" ] || fail "portals3.pc not installed in $pcdir"
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$tmp" --cflags --libs portals3) ||
	fail "pkg-config portals3"
echo "pkg-config portals3: $flags"

# shellcheck disable=SC2086
$CC -o "$tmp/ref_style" "$SRC" $flags ${P3_TEST_SAN_FLAGS:-} -Wl,-rpath,"$tmp/lib" >>"$log" 2>&1 ||
	fail "compiling ref_style.c against the installed headers and library"

# the binary must use the installed library, not the build tree's
if command -v ldd >/dev/null 2>&1; then
	ldd "$tmp/ref_style" | grep -q "$tmp/lib/libportals3" ||
		fail "ref_style is not linked against $tmp/lib/libportals3"
fi

pass=0
nfail=0
for mode in app thread; do
	out=$(timeout 60 "$PTLRUN" -n 2 --progress "$mode" "$tmp/ref_style" 2>&1)
	rc=$?
	echo "$out"
	if [ $rc -eq 0 ] && [ "$(echo "$out" | grep -c 'ref_style: rank .* ok')" -eq 2 ]; then
		echo "PASS: ref_style, 2 ranks, progress $mode"
		pass=$((pass + 1))
	else
		echo "FAIL: ref_style, 2 ranks, progress $mode (exit $rc)"
		nfail=$((nfail + 1))
	fi
done
echo "$pass passed, $nfail failed"
[ $nfail -eq 0 ]
