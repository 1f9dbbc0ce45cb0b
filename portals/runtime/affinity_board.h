/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * affinity_board.h - the union of the CPUs the ranks of this node may use.
 *
 * A rank pinned to one CPU (taskset, srun --cpu-bind, an MPMD launch with a
 * binding per rank) sees one CPU in its own affinity mask: comparing that
 * with the node's rank count would call every pinned job oversubscribed.
 * The ranks of a node therefore publish their masks on a small shared board
 * (a POSIX shared-memory object named after the user and the ranks' common
 * parent: hydra's proxy, slurmstepd, ptlrun) and read the union back.
 * Internal to <p3rt/oversub.h>; compiled with oversub.c wherever it is.
 */
#ifndef P3RT_AFFINITY_BOARD_H
#define P3RT_AFFINITY_BOARD_H

#include <sched.h>

/* Most ranks a board holds; a node with more local ranks falls back to the
 * rank's own mask. */
#define P3_AFFINITY_BOARD_SLOTS 256
/* How long a rank waits for the other local ranks to publish (they start
 * together: MPI_Init, PtlNIInit).  After it, the own mask is used. */
#define P3_AFFINITY_BOARD_WAIT_MS 2000

/* Publish `mine` (once per process) and wait, at most
 * P3_AFFINITY_BOARD_WAIT_MS, until local_ranks processes of this node's
 * job have published; *all = the union.  0, or -1 (no board: too many
 * ranks, no shared memory, timeout; *all untouched).  The board object is
 * removed by the last rank that reads it. */
int p3_affinity_board_union(unsigned local_ranks, const cpu_set_t *mine, cpu_set_t *all);

#endif
