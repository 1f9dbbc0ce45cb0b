#!/bin/sh
# Replay the committed fuzz seed corpus through the parser (no libFuzzer).
srcdir=${RMPP_SRCDIR:-$(dirname "$0")/..}
exec ./fuzz/rmpp-parse-corpus "$srcdir/fuzz/corpus"
