#!/bin/sh
# Two-process Portals smoke test over the shmem NAL, in both progress modes
# and both transfer modes (single copy, two-copy pipeline).  Skipped (77)
# when libportals3 is not built yet.
set -u
bin=./test_shmem_smoke
rc=0
for progress in app thread; do
	for cma in 1 0; do
		echo "== PTL_PROGRESS=$progress P3_SHMEM_CMA=$cma"
		PTL_PROGRESS=$progress P3_SHMEM_CMA=$cma $bin
		r=$?
		if [ $r -eq 77 ]; then exit 77; fi
		if [ $r -ne 0 ]; then rc=1; fi
	done
done
for cma in 1 0; do
	echo "== --peer-death P3_SHMEM_CMA=$cma"
	P3_SHMEM_CMA=$cma $bin --peer-death || rc=1
done
exit $rc
