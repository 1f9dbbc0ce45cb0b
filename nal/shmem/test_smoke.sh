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
# cooperative copy (both sides copy a large message): from 64 KiB on, so
# the 65536 ... 4 MiB+5 sizes take it (the gets' replies are received by
# rank 0: 4 of them); with the sender's pushes denied (it gives its chunk
# back, the receiver copies everything); and switched off
for progress in app thread; do
	echo "== PTL_PROGRESS=$progress P3_SHMEM_COOP_MIN=65536"
	PTL_PROGRESS=$progress P3_SHMEM_COOP_MIN=65536 SMOKE_EXPECT_COOP=4 $bin || rc=1
done
echo "== P3_SHMEM_COOP_MIN=65536 P3_SHMEM_COOP_DENY=1"
P3_SHMEM_COOP_MIN=65536 P3_SHMEM_COOP_DENY=1 SMOKE_EXPECT_COOP=4 $bin || rc=1
echo "== P3_SHMEM_COOP_MIN=0"
P3_SHMEM_COOP_MIN=0 $bin || rc=1
# no ring pre-faulted on first contact (every page faults on its first lap)
echo "== P3_SHMEM_PREFAULT=0"
P3_SHMEM_PREFAULT=0 $bin || rc=1
for cma in 1 0; do
	echo "== --peer-death P3_SHMEM_CMA=$cma"
	P3_SHMEM_CMA=$cma $bin --peer-death || rc=1
done
# the ACK / REPLY a killed target owed ends with PTL_NI_PEER_DEAD (await.c)
for kind in ack reply; do
	echo "== --answer-death $kind"
	$bin --answer-death $kind || rc=1
done
exit $rc
