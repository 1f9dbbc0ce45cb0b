#!/bin/sh
# run-fuzz.sh - build libportals3's parser fuzz targets with libFuzzer and run
# each from its committed seed corpus (portals/fuzz/corpus/<target>):
#   hdr     p3_hdr_unpack, the Portals wire header (portals/hdr.c)
#   envmap  PTL_NIDMAP/PTL_PIDMAP/PTL_MY_RID parsing (portals/runtime/env.c)
#   pmi     the PMI-1 client fed a process manager's answers (runtime/pmi.c)
#   shmring the shmem ring's record framing left by a hostile producer (nal/shmem/ring.c)
#   num     the strict number parser of options and variables (include/p3num.h)
# SECONDS (default 30) is split evenly between them.  Exits non-zero on a
# crash, a sanitizer report or a property violation (reproducers kept in
# WORKDIR/artifacts).  config.h comes from a configured build tree
# (P3_BUILDDIR, default build/default: tools/build makes it).
#   usage: portals/fuzz/run-fuzz.sh [SECONDS] [WORKDIR]
set -eu
secs=${1:-30}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bdir=${P3_BUILDDIR:-$top/build/default}
work=${2:-$(mktemp -d /tmp/portals-fuzz.XXXXXX)}
CC=${CC_FUZZ:-clang}
[ -f "$bdir/config.h" ] || { echo "portals fuzz: no $bdir/config.h (run tools/build first)" >&2; exit 1; }
each=$((secs / 5))
[ "$each" -ge 1 ] || each=1
fail=0
run() { # name source...
	name=$1
	shift
	mkdir -p "$work/$name/corpus" "$work/$name/artifacts"
	cp "$here/corpus/$name"/* "$work/$name/corpus/"
	$CC -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -I"$bdir" -I"$top/include" -I"$top/portals" \
		-I"$top/nal" -I"$top/portals/runtime" "$@" -o "$work/$name/fuzz"
	echo "portals fuzz: $name for $each s in $work/$name"
	if "$work/$name/fuzz" -max_total_time="$each" -max_len=4096 -timeout=10 \
		-artifact_prefix="$work/$name/artifacts/" -print_final_stats=1 \
		"$work/$name/corpus" >"$work/$name/fuzz.log" 2>&1; then
		grep -E "stat::number_of_executed_units" "$work/$name/fuzz.log" || true
	else
		tail -40 "$work/$name/fuzz.log"
		echo "portals fuzz: $name FAILED; reproducer(s) in $work/$name/artifacts/" >&2
		fail=1
	fi
}
run hdr "$here/fuzz_p3_hdr.c" "$top/portals/hdr.c"
run envmap "$here/fuzz_rt_envmap.c" "$top/portals/runtime/env.c"
run shmring "$here/fuzz_shm_ring.c" "$top/nal/shmem/ring.c" -I"$top/nal/shmem"
run pmi "$here/fuzz_pmi.c" "$top/portals/runtime/pmi.c" "$top/portals/runtime/env.c"
run num "$here/fuzz_p3num.c"
[ $fail -eq 0 ] && echo "portals fuzz: OK"
exit $fail
