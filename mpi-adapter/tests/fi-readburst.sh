#!/bin/sh
# fi_read bursts without a CQ read at a target that stalls, then catches up
# (MPICH's rma/manyget on a loaded machine overflowed the Portals EQ this
# way): with the default EQ and with the smallest one, and over udp.
. "$(dirname "$0")/common.sh"
need_provider
need_test_prog fi_readburst
for eq in 32768 1024; do
	FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL="$TESTNAL" \
		FI_PTL3_EQ_SIZE=$eq timeout 180 "$exe" --stall 300 --seconds 1.5 ||
		fail "fi_readburst with FI_PTL3_EQ_SIZE=$eq"
	echo "ok: $TESTNAL, FI_PTL3_EQ_SIZE=$eq"
done
FI_PROVIDER=ptl3 FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" FI_PTL3_NAL=udp \
	timeout 180 "$exe" --stall 300 --seconds 1.5 || fail "fi_readburst over udp"
echo "ok: udp"
