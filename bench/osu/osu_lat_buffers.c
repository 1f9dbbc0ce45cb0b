/* osu_lat_buffers.c: osu_latency's two message buffers where the genuine
 * OSU 3.6 osu_latency has them.
 *
 * The genuine program declares `char s_buf_original[4 MiB + 64]` and
 * `r_buf_original[4 MiB + 64]`; its build (MPICH's mpicc, gcc, PIE) puts
 * r_buf_original at page offset 0xa0 of the BSS and s_buf_original right
 * after it, and aligns both up to 64 bytes: the receive buffer starts at
 * page offset 0xc0 and the send buffer at 0x100.  Over the shmem stack a
 * message of 16 KiB or more is one process_vm_readv from the sender's send
 * buffer into the receiver's receive buffer, and the kernel's copy speed
 * depends on how source and destination sit relative to each other within a
 * page; with osu_util's 4 MiB + 64 KiB arrays ours sat both at 0x180 (same
 * offset), the genuine ones 64 bytes apart.  Same arrays, same order, same
 * page offsets here, so that both programs time the same copies. */
#include "osu_util.h"

#define OSU_LAT_ARRAY (((size_t)1 << 22) + 64)
#define OSU_LAT_LEAD  0xa0 /* page offset of the genuine r_buf_original */

static struct {
	char lead[OSU_LAT_LEAD];
	char rbuf[OSU_LAT_ARRAY];
	char sbuf[OSU_LAT_ARRAY];
} osu_lat_arrays __attribute__((aligned(4096)));

static char *align64(char *p)
{
	return (char *)(((unsigned long)p + 63) / 64 * 64);
}

void osu_latency_buffers(size_t need, char **sbuf, char **rbuf)
{
	if (need + 64 > OSU_LAT_ARRAY) { /* -m above 4 MiB (an extension) */
		osu_pt2pt_buffers(need, 64, sbuf, rbuf);
		return;
	}
	*sbuf = align64(osu_lat_arrays.sbuf);
	*rbuf = align64(osu_lat_arrays.rbuf);
}

void osu_latency_buffers_free(char *sbuf, char *rbuf)
{
	if (sbuf != align64(osu_lat_arrays.sbuf))
		osu_pt2pt_buffers_free(sbuf, rbuf);
}
