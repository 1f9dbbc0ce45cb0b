#!/bin/sh
# run-fuzz.sh - build the NIC command-queue parser fuzz target with
# libFuzzer (ASan + UBSan) and run it for N seconds (default 60).
# Exits non-zero on a crash, a sanitizer report or a property violation.
#   usage: nal/myrinet/fuzz/run-fuzz.sh [SECONDS] [WORKDIR]
# CI (tools/test-all): 15 s.
set -eu
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
top=$(cd "$src/../.." && pwd)
work=${2:-$(mktemp -d /tmp/myri-fuzz.XXXXXX)}
CC=${CC_FUZZ:-clang}
mkdir -p "$work/corpus" "$work/artifacts"
$CC -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I"$src" -I"$top/rmpp" -I"$top/include" \
	"$here/fuzz_cmd.c" "$src/mcpd_cmd.c" "$src/mcpd_dma.c" -o "$work/fuzz_cmd"
echo "myrinet fuzz: running $secs s in $work"
"$work/fuzz_cmd" -max_total_time="$secs" -max_len=4096 -timeout=10 \
	-artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" \
	>"$work/fuzz.log" 2>&1 || {
	rc=$?
	tail -50 "$work/fuzz.log"
	echo "myrinet fuzz: FAILED (exit $rc); reproducer(s) in $work/artifacts/" >&2
	exit 1
}
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/fuzz.log" || true
echo "myrinet fuzz: OK"
