#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# test_pmi_authkey.sh - the rmpp frame-authentication key handed out by the
# launcher's PMI (P3_RMPP_AUTH=on, no P3_RMPP_AUTH_KEY; portals/runtime/
# pmi_authkey.c), under Debian's hydra (mpiexec.mpich):
#   - pmi_probe, 3 ranks over PMI-1 (and PMI-2 through libpmi2 where built):
#     every rank reports the same key (a hash of it), and the next job
#     another one;
#   - rt_hello's put ring over udp on loopback with authentication on: the
#     ranks' frames carry MACs under the PMI key and are accepted;
#   - a forger: a 2-rank MPMD job whose rank 1 holds a key of its own (a key
#     in the environment wins): each rank drops the other's frames and counts
#     them (auth_drops, P3_RMPP_STATS), no put is delivered, the job fails.
# Skips (77) without hydra.  ~5 s.
set -u
PMI_PROBE=${PMI_PROBE:-./pmi_probe}
RT_HELLO=${RT_HELLO:-./rt_hello}
MPIEXEC=${MPIEXEC:-mpiexec.mpich}
command -v "$MPIEXEC" >/dev/null 2>&1 || { echo "SKIP: $MPIEXEC not found (apt-get install mpich)"; exit 77; }
[ -x "$RT_HELLO" ] || { echo "SKIP: $RT_HELLO not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
unset P3_RMPP_AUTH_KEY
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; cat "$tmp/out" "$tmp/err"; fails=$((fails + 1)); }

keys() { # nranks -> the distinct key hashes of one job, on stdout
	P3_RMPP_AUTH=on timeout 60 "$MPIEXEC" -n "$1" "$PMI_PROBE" >"$tmp/out" 2>"$tmp/err" || return 1
	[ "$(grep -c "auth key [0-9a-f]\{8\}$" "$tmp/out")" -eq "$1" ] || return 1
	sed -n 's/.* auth key \([0-9a-f]*\)$/\1/p' "$tmp/out" | sort -u
}
probe() { # name
	local k1 k2
	if k1=$(keys 3) && [ "$(echo "$k1" | wc -l)" -eq 1 ] && k2=$(keys 2) &&
		[ "$(echo "$k2" | wc -l)" -eq 1 ] && [ "$k1" != "$k2" ]; then
		ok "$1: one key per job, on every rank ($k1, next job $k2)"
	else
		not_ok "$1: ranks do not share one fresh key"
	fi
}
probe "hydra PMI-1"
if [ "${P3_HAVE_PMI2:-0}" = 1 ]; then
	P3_PMI=pmi2 probe "hydra, PMI-2 through libpmi2"
else
	echo "skip - PMI-2 through libpmi2: built without it (libpmi2-0-dev)"
fi

# the ring over udp, authenticated under the key PMI handed out
if P3_RMPP_AUTH=on PTL_NAL=udp P3_RMPP_STATS=1 timeout 60 "$MPIEXEC" -n 2 "$RT_HELLO" \
	>"$tmp/out" 2>"$tmp/err" && [ "$(grep -c "got 'hello from" "$tmp/out")" -eq 2 ] &&
	! grep -q "auth_drops" "$tmp/err"; then
	ok "rt_hello over udp, P3_RMPP_AUTH=on, key from PMI: ring delivered, no auth_drops"
else
	not_ok "rt_hello over udp with the key from PMI"
fi

# a rank with a key of its own: a forger of the job's frames
forged=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
P3_RMPP_AUTH=on PTL_NAL=udp P3_RMPP_STATS=1 RT_HELLO_TRIES=10 timeout 60 "$MPIEXEC" -prepend-rank \
	-n 1 "$RT_HELLO" : -n 1 env P3_RMPP_AUTH_KEY="$forged" "$RT_HELLO" >"$tmp/out" 2>"$tmp/err"
rc=$?
drops0=$(cat "$tmp/out" "$tmp/err" | awk '$1 == "[0]" && $2 == "auth_drops" { print $3 }')
if [ $rc -ne 0 ] && [ "${drops0:-0}" -ge 1 ] && ! grep -q "got 'hello" "$tmp/out"; then
	ok "forger (rank 1 with its own key): rank 0 dropped and counted $drops0 frames, no put delivered"
else
	not_ok "forger: rc $rc, rank 0 auth_drops ${drops0:-none}"
fi
[ $fails -eq 0 ]
