#!/bin/sh
# run-fuzz.sh - build the NIC's two fuzz targets with libFuzzer (ASan +
# UBSan) and run them for N seconds in all (default 60): fuzz_cmd (the
# command-queue entry check and run resolution) a third of the time, fuzz_lib
# (the offload mode's LIB commands and their arguments, mcpd_offload.c with
# LIB compiled in) the rest.
# Exits non-zero on a crash, a sanitizer report or a property violation.
# config.h comes from a configured build tree (P3_BUILDDIR, default
# build/default: tools/build makes it).
#   usage: nal/myrinet/fuzz/run-fuzz.sh [SECONDS] [WORKDIR]
# CI (tools/test-all): 15 s.
set -eu
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
top=$(cd "$src/../.." && pwd)
work=${2:-$(mktemp -d /tmp/myri-fuzz.XXXXXX)}
bdir=${P3_BUILDDIR:-$top/build/default}
CC=${CC_FUZZ:-clang}
[ -f "$bdir/config.h" ] || { echo "myrinet fuzz: no $bdir/config.h (run tools/build first)" >&2; exit 1; }
FLAGS="-g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined
	-fno-sanitize-recover=undefined -I$src -I$bdir -I$top/rmpp -I$top/include -I$top/portals
	-I$top/nal"
mkdir -p "$work/cmd/corpus" "$work/lib/corpus" "$work/artifacts"
# shellcheck disable=SC2086
$CC $FLAGS "$here/fuzz_cmd.c" "$src/mcpd_cmd.c" "$src/mcpd_dma.c" -o "$work/fuzz_cmd"
# shellcheck disable=SC2086
# rmpp/config.c: the rmpp address helpers (the rest of rmpp is stubbed)
$CC $FLAGS "$here/fuzz_lib.c" "$src/mcpd_offload.c" "$src/mcpd_lib.c" "$src/mcpd_cmd.c" \
	"$top/rmpp/config.c" -lpthread -o "$work/fuzz_lib"
cp "$here"/corpus/lib/* "$work/lib/corpus/" # one sequence of typical calls
run() { # name seconds max_len
	echo "myrinet fuzz: $1 for $2 s in $work"
	"$work/fuzz_$1" -max_total_time="$2" -max_len="$3" -len_control=0 -timeout=10 \
		-artifact_prefix="$work/artifacts/$1-" -print_final_stats=1 "$work/$1/corpus" \
		>"$work/$1.log" 2>&1 || {
		rc=$?
		tail -50 "$work/$1.log"
		echo "myrinet fuzz: $1 FAILED (exit $rc); reproducer(s) in $work/artifacts/" >&2
		exit 1
	}
	grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$1.log" || true
}
cmd_secs=$((secs / 3 > 0 ? secs / 3 : 1))
run cmd "$cmd_secs" 4096
run lib $((secs - cmd_secs > 0 ? secs - cmd_secs : 1)) 8192
echo "myrinet fuzz: OK"
