/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file p3rt/p3rt.h
 * @brief Job runtime: ranks and the rank -> process id maps.
 *
 * Compatible with the Sandia 3.3 reference runtime.  The usual start of a
 * Portals program is
 *
 *     PtlInit(&n);
 *     PtlSetRank(PTL_INVALID_HANDLE, -1, -1);   // read the environment
 *     PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni);
 *     PtlGetRank(ni, &rank, &size);
 *     PtlGetRankId(ni, peer, &peer_id);
 *
 * PtlSetRank(PTL_INVALID_HANDLE, -1, -1) reads PTL_MY_RID (this rank),
 * PTL_NIDMAP and PTL_PIDMAP (colon-separated, one entry per rank) and
 * PTL_MY_JID; when those are absent but a PMI-1 environment is present
 * (PMI_RANK, PMI_SIZE, PMI_FD, as set by hydra's mpiexec or Slurm) the maps
 * are built by a PMI exchange at PtlNIInit.  Values set through the calls
 * below take precedence over the environment.
 */
#ifndef P3RT_P3RT_H
#define P3RT_P3RT_H

#include <portals3.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Set this process's rank and the job size.  ni may be PTL_INVALID_HANDLE
 *  (before PtlNIInit); rank == size == (unsigned)-1 reads the environment.
 *  @return PTL_OK, PTL_NO_INIT, PTL_NI_INVALID, PTL_FAIL (environment
 *  malformed: the message on stderr names the variable). */
int PtlSetRank(ptl_handle_ni_t ni, unsigned int rank, unsigned int size);
/** Set the rank -> nid map (size entries). */
int PtlSetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned int size);
/** Set the rank -> pid map (size entries). */
int PtlSetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned int size);
/** Set the job id. */
int PtlSetJID(ptl_handle_ni_t ni, ptl_jid_t jid);
/** This process's rank and the job size. */
int PtlGetRank(ptl_handle_ni_t ni, unsigned int *rank, unsigned int *size);
/** Process id of `rank`.  @return PTL_PROCESS_INVALID if out of range. */
int PtlGetRankId(ptl_handle_ni_t ni, unsigned int rank, ptl_process_id_t *id);
/** Copy the maps out (size entries). */
int PtlGetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned int size);
int PtlGetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned int size);
/** The job id. */
int PtlGetJID(ptl_handle_ni_t ni, ptl_jid_t *jid);

#ifdef __cplusplus
}
#endif
#endif
