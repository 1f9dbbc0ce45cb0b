#!/bin/sh
# check-man3.sh - every Ptl* function libportals3 exports (nm -D of the
# built library, the symbols portals/libportals3.map lets out) has a man(3)
# page in man/, and man -l renders each page without a warning.
# Exit 77 (skip) when man is not installed (tools/install-deps installs it).
set -u
srcdir=${srcdir:-.}
top_builddir=${top_builddir:-..}
lib="$top_builddir/portals/.libs/libportals3.so"
command -v man >/dev/null 2>&1 || { echo "SKIP: man (man-db) is not installed"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm (binutils) is not installed"; exit 77; }
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }

syms=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^Ptl/ { print $3 }' | sort -u)
n=0
bad=0
for s in $syms; do
	n=$((n + 1))
	page="$srcdir/$s.3"
	if [ ! -f "$page" ]; then
		echo "FAIL: $s is exported but has no page ($page)"
		bad=$((bad + 1))
		continue
	fi
	out=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings=w -l "$page" 2>&1 >/dev/null)
	if [ -n "$out" ]; then
		echo "FAIL: man -l $page warns: $out"
		bad=$((bad + 1))
	fi
	if ! MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q "RETURN VALUE"; then
		echo "FAIL: $page renders without a RETURN VALUE section"
		bad=$((bad + 1))
	fi
done
[ "$n" -ge 40 ] || { echo "FAIL: only $n Ptl* symbols found in $lib"; exit 1; }
echo "$n exported Ptl* calls, $bad problems"
[ $bad -eq 0 ]
