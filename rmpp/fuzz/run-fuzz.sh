#!/bin/sh
# run-fuzz.sh - build the rmpp packet-parser fuzz target with libFuzzer and
# run it for N seconds (default 60) starting from the committed seed corpus.
# Exits non-zero on a crash, a sanitizer report or a property violation.
#   usage: rmpp/fuzz/run-fuzz.sh [SECONDS] [WORKDIR]
# CI: rmpp/fuzz/run-fuzz.sh 30
set -eu
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
work=${2:-$(mktemp -d /tmp/rmpp-fuzz.XXXXXX)}
CC=${CC_FUZZ:-clang}
mkdir -p "$work/corpus" "$work/artifacts"
cp "$here"/corpus/* "$work/corpus/"
# the MAC trailer (auth.c) with libsodium when it is installed
sodium=""
pkg-config --exists libsodium 2>/dev/null && sodium="-DHAVE_SODIUM $(pkg-config --cflags --libs libsodium)"
# shellcheck disable=SC2086
$CC -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I"$src" \
	"$here/fuzz_rmpp_hdr.c" "$src/wire.c" "$src/crc32c.c" "$src/crc32c_fold.c" "$src/auth.c" \
	-lpthread $sodium -o "$work/fuzz_rmpp_hdr"
echo "rmpp fuzz: running $secs s in $work"
"$work/fuzz_rmpp_hdr" -max_total_time="$secs" -max_len=9100 -timeout=10 \
	-artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" \
	>"$work/fuzz.log" 2>&1 || {
	rc=$?
	tail -50 "$work/fuzz.log"
	echo "rmpp fuzz: FAILED (exit $rc); reproducer(s) in $work/artifacts/" >&2
	exit 1
}
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/fuzz.log" || true
echo "rmpp fuzz: OK"
