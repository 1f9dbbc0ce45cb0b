#!/bin/sh
# libfabric loads libptl3-fi.so from FI_PROVIDER_PATH and lists provider "ptl3"
# with the attributes MPICH's provider selection relies on.
. "$(dirname "$0")/common.sh"
need_provider
need_nosan fi_info
out=$(FI_PROVIDER_PATH="$FI_PTL3_PROVIDER_DIR" fi_info -p ptl3 -v 2>&1) || fail "fi_info -p ptl3: $out"
echo "$out" | grep -q 'prov_name: ptl3$' || fail "provider not listed: $out"
echo "$out" | grep -q 'type: FI_EP_RDM' || fail "not FI_EP_RDM"
for c in FI_MSG FI_TAGGED FI_MULTI_RECV; do
	echo "$out" | grep 'caps:' | head -1 | grep -q "$c" || fail "missing $c"
done
echo "$out" | grep -q 'mr_key_size: 8' || fail "mr_key_size"
echo "$out" | grep -q 'cq_data_size: 4' || fail "cq_data_size"
echo "$out" | grep -q 'api_version: 1\.' || fail "api_version"
# an empty provider path: not found
if FI_PROVIDER_PATH="$TMPD" fi_info -p ptl3 >/dev/null 2>&1; then fail "found without a path"; fi
echo "PASS: fi_info -p ptl3"
