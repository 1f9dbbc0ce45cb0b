#!/bin/sh
# several endpoints on one domain (fi_multiep.c): every endpoint to every
# other, eager/long, expected/unexpected, tagged (directed)/untagged,
# injects, capacity (ep_cnt, -FI_EBUSY beyond it, a closed place reused);
# over the shmem and udp NALs, and with a small eager limit and tiny
# unexpected buffers (long unexpected messages pulled from the sender).
. "$(dirname "$0")/common.sh"
need_provider
need_test_prog fi_multiep
for nal in shmem udp; do
	FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL=$nal \
		timeout 120 "$exe" || fail "fi_multiep over $nal"
	echo "ok: $nal"
done
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
	FI_PTL3_EAGER=1024 FI_PTL3_EBUF_SIZE=4096 FI_PTL3_EBUF_COUNT=2 FI_PTL3_STAGE_SLOTS=64 \
	timeout 120 "$exe" || fail "fi_multiep with tiny unexpected buffers"
echo "ok: $TESTNAL, tiny unexpected buffers"
