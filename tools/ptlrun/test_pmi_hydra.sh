#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# test_pmi_hydra.sh - the runtime's PMI-1 client against Debian's hydra
# (mpiexec.mpich): PMI_FD mode and -pmi-port mode; and, where the build has
# PMI-2 (P3_HAVE_PMI2=1), Slurm's libpmi2 against hydra's PMI-2 server
# (P3_PMI=pmi2).  Skips (77) without hydra.
set -u
PMI_PROBE=${PMI_PROBE:-./pmi_probe}
MPIEXEC=${MPIEXEC:-mpiexec.mpich}
if ! command -v "$MPIEXEC" >/dev/null 2>&1; then
	echo "SKIP: $MPIEXEC not found (apt-get install mpich)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # name nranks mpiexec-args...
	local name=$1 n=$2
	shift 2
	if ! timeout 60 "$MPIEXEC" "$@" -n "$n" "$PMI_PROBE" >"$tmp/out" 2>"$tmp/err"; then
		echo "not ok - $name: mpiexec failed"; cat "$tmp/out" "$tmp/err"; fails=$((fails + 1)); return
	fi
	local oks jids
	oks=$(grep -c "via ${VIA:-PMI-1} round [01] ok$" "$tmp/out")
	jids=$(sed -n 's/.* jid \([0-9]*\) .*/\1/p' "$tmp/out" | sort -u | wc -l)
	if [ "$oks" -eq $((2 * n)) ] && [ "$jids" -eq 1 ]; then
		echo "ok - $name: $n ranks exchanged ids twice, one job id"
	else
		echo "not ok - $name"; cat "$tmp/out" "$tmp/err"; fails=$((fails + 1))
	fi
}
check "hydra PMI_FD" 3
check "hydra PMI_FD, one rank" 1
check "hydra -pmi-port" 2 -pmi-port
if [ "${P3_HAVE_PMI2:-0}" = 1 ]; then
	P3_PMI=pmi2 VIA=PMI-2 check "hydra, PMI-2 through libpmi2 (P3_PMI=pmi2)" 3
else
	echo "skip - PMI-2 through libpmi2: built without it (libpmi2-0-dev)"
fi
[ $fails -eq 0 ]
