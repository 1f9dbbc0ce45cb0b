/* osu_onesided.c: every one-sided benchmark of the OSU 3.6 set, selected at
 * compile time (Makefile.am builds one program per combination):
 *   OSU_OP      = OSU_OP_PUT | OSU_OP_GET | OSU_OP_ACC
 *   OSU_TEST    = OSU_T_LAT  | OSU_T_BW   | OSU_T_BIBW
 *   OSU_PASSIVE = 0 (post-start-complete-wait) | 1 (lock/unlock)
 * and OSU_BENCH, the header string.  The synchronisation can be changed at
 * run time with -s pscw|fence|lock|flush (extension). */
#include "osu_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OSU_OP_PUT 1
#define OSU_OP_GET 2
#define OSU_OP_ACC 3
#define OSU_T_LAT  1
#define OSU_T_BW   2
#define OSU_T_BIBW 3

#if !defined(OSU_OP) || !defined(OSU_TEST) || !defined(OSU_PASSIVE) || !defined(OSU_BENCH)
#error "define OSU_OP, OSU_TEST, OSU_PASSIVE and OSU_BENCH"
#endif

/* Operation number j of a window: like 3.6, each goes to its own slot
 * (offset j * size) of the origin buffer and of the target window. */
static void rma_op(char *buf, size_t size, int j, int peer, MPI_Win win)
{
    char *origin = buf + (size_t)j * size;
    MPI_Aint disp = (MPI_Aint)j * (MPI_Aint)size;
#if OSU_OP == OSU_OP_PUT
    MPI_Put(origin, (int)size, MPI_CHAR, peer, disp, (int)size, MPI_CHAR, win);
#elif OSU_OP == OSU_OP_GET
    MPI_Get(origin, (int)size, MPI_CHAR, peer, disp, (int)size, MPI_CHAR, win);
#else
    int count = (int)(size / sizeof(int));
    MPI_Accumulate(origin, count, MPI_INT, peer, disp, count, MPI_INT, MPI_SUM, win);
#endif
}

/* 3.6 exposes the receive buffer for Put/Accumulate and the send buffer for
 * Get (whose results land in the receive buffer). */
#if OSU_OP == OSU_OP_GET
#define WIN_BUF(s, r) (s)
#define ORIGIN_BUF(s, r) (r)
#else
#define WIN_BUF(s, r) (r)
#define ORIGIN_BUF(s, r) (s)
#endif

static const char *sync_desc(int sync)
{
    switch (sync) {
    case OSU_SYNC_PSCW:  return "MPI_Win_post/start/complete/wait";
    case OSU_SYNC_FENCE: return "MPI_Win_fence";
    case OSU_SYNC_LOCK:  return "MPI_Win_lock/unlock";
    default:             return "MPI_Win_flush";
    }
}

/* Runs loop+skip iterations for one size; returns elapsed seconds of the
 * timed iterations on rank 0 (0 elsewhere). */
static double run(const struct osu_opts *o, int rank, size_t size, int loop, int skip,
                  int window, char *sbuf, char *rbuf)
{
    int peer = 1 - rank;
    MPI_Win win;
    MPI_Group world_grp, peer_grp;
    MPI_Comm_group(MPI_COMM_WORLD, &world_grp);
    MPI_Group_incl(world_grp, 1, &peer, &peer_grp);
    int nops = (OSU_TEST == OSU_T_LAT) ? 1 : window;
    MPI_Win_create(WIN_BUF(sbuf, rbuf), (MPI_Aint)(size * (size_t)nops), 1, MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    /* Both sides issue operations in latency (pscw/fence) and bibw tests. */
    int both = (OSU_TEST == OSU_T_BIBW) ||
               (OSU_TEST == OSU_T_LAT && (o->sync == OSU_SYNC_PSCW || o->sync == OSU_SYNC_FENCE));
    int active = (rank == 0) || both;
    double t_start = 0.0, t = 0.0;

    if (o->sync == OSU_SYNC_FENCE)
        MPI_Win_fence(0, win);
    if (o->sync == OSU_SYNC_FLUSH && active)
        MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
    MPI_Barrier(MPI_COMM_WORLD);

    for (int i = 0; i < loop + skip; i++) {
        if (i == skip)
            t_start = MPI_Wtime();
        switch (o->sync) {
        case OSU_SYNC_PSCW:
            if (OSU_TEST == OSU_T_LAT) {
                if (rank == 0) {
                    MPI_Win_start(peer_grp, 0, win);
                    rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                    MPI_Win_complete(win);
                    MPI_Win_post(peer_grp, 0, win);
                    MPI_Win_wait(win);
                } else {
                    MPI_Win_post(peer_grp, 0, win);
                    MPI_Win_wait(win);
                    MPI_Win_start(peer_grp, 0, win);
                    rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                    MPI_Win_complete(win);
                }
            } else if (OSU_TEST == OSU_T_BIBW) {
                MPI_Win_post(peer_grp, 0, win);
                MPI_Win_start(peer_grp, 0, win);
                for (int j = 0; j < nops; j++)
                    rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                MPI_Win_complete(win);
                MPI_Win_wait(win);
            } else if (rank == 0) {
                MPI_Win_start(peer_grp, 0, win);
                for (int j = 0; j < nops; j++)
                    rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                MPI_Win_complete(win);
            } else {
                MPI_Win_post(peer_grp, 0, win);
                MPI_Win_wait(win);
            }
            break;
        case OSU_SYNC_FENCE:
            if (OSU_TEST == OSU_T_LAT) {
                if (rank == 0)
                    rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                MPI_Win_fence(0, win);
                if (rank == 1)
                    rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                MPI_Win_fence(0, win);
            } else {
                if (active)
                    for (int j = 0; j < nops; j++)
                        rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                MPI_Win_fence(0, win);
            }
            break;
        case OSU_SYNC_LOCK:
            if (active) {
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win);
                for (int j = 0; j < nops; j++)
                    rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                MPI_Win_unlock(peer, win);
            }
            break;
        case OSU_SYNC_FLUSH:
            if (active) {
                for (int j = 0; j < nops; j++)
                    rma_op(ORIGIN_BUF(sbuf, rbuf), size, 0, peer, win);
                MPI_Win_flush(peer, win);
            }
            break;
        }
    }
    if (rank == 0)
        t = MPI_Wtime() - t_start;
    if (o->sync == OSU_SYNC_FLUSH && active)
        MPI_Win_unlock(peer, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    MPI_Group_free(&peer_grp);
    MPI_Group_free(&world_grp);
    return t;
}

/* Accumulate counts integers, as in 3.6: sizes 0, 4, 8, ... bytes, so no
 * row times an operation of count 0 except the 0-byte one. */
static size_t first_size(const struct osu_opts *o)
{
#if OSU_OP == OSU_OP_ACC
    return (o->min_size + sizeof(int) - 1) / sizeof(int) * sizeof(int);
#else
    return o->min_size;
#endif
}

static size_t next_size(size_t size)
{
#if OSU_OP == OSU_OP_ACC
    return size ? size * 2 : sizeof(int);
#else
    return osu_next_size(size);
#endif
}

int main(int argc, char **argv)
{
    struct osu_opts o;
    int rank, np, loop, skip;
#if OSU_TEST == OSU_T_LAT
    osu_defaults(&o, OSU_ONESIDED, OSU_BENCH, "Latency (us)");
#if OSU_OP == OSU_OP_ACC
    o.loop = 1000; o.skip = 100;
#endif
#else
    osu_defaults(&o, OSU_ONESIDED, OSU_BENCH,
                 OSU_TEST == OSU_T_BIBW ? "Bi-Bandwidth (MB/s)" : "Bandwidth (MB/s)");
    o.has_window = 1;
    o.min_size = 1;
    o.loop = 100; o.skip = 20; o.loop_large = 30; o.skip_large = 10;
    o.window = o.window_large = 32;
#endif
    o.has_sync = 1;
    o.sync = OSU_PASSIVE ? OSU_SYNC_LOCK : OSU_SYNC_PSCW;
    int default_sync = o.sync;
    int rc = osu_init(&argc, &argv, &o, -1, &rank, &np);
    if (rc)
        return rc;
    /* 3.6: MPI_Alloc_mem buffers, page aligned, one slot per window op */
    size_t align = osu_page_size();
    size_t slots = OSU_TEST == OSU_T_LAT ? 1 : (size_t)(o.window > o.window_large ? o.window
                                                                                 : o.window_large);
    char *sbase, *rbase;
    size_t bytes = o.max_size * slots + align;
    if (MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &sbase) != MPI_SUCCESS ||
        MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &rbase) != MPI_SUCCESS) {
        fprintf(stderr, "Error allocating %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    }
    char *sbuf = (char *)(((unsigned long)sbase + (align - 1)) / align * align);
    char *rbuf = (char *)(((unsigned long)rbase + (align - 1)) / align * align);
    /* 3.6 fills both buffers once, in full (accumulate: integers) */
    memset(sbuf, 0, o.max_size * slots);
    memset(rbuf, 1, o.max_size * slots);
    if (rank == 0) {
        osu_print_header(&o);
        if (o.sync != default_sync)
            printf("# Synchronization: %s\n", sync_desc(o.sync));
        osu_print_colhdr(o.label);
    }
    for (size_t size = first_size(&o); size <= o.max_size; size = next_size(size)) {
        if (OSU_TEST != OSU_T_LAT && size == 0)
            continue;
        int window = osu_window(&o, size);
        osu_iters(&o, size, &loop, &skip);
        double t = run(&o, rank, size, loop, skip, window, sbuf, rbuf);
        if (rank == 0) {
#if OSU_TEST == OSU_T_LAT
            /* pscw and fence time a round trip (one op each way) */
            double div = (o.sync == OSU_SYNC_PSCW || o.sync == OSU_SYNC_FENCE) ? 2.0 : 1.0;
            osu_print_row(size, t * 1e6 / (div * loop));
#else
            double mb = (double)size / 1e6 * loop * window;
            if (OSU_TEST == OSU_T_BIBW)
                mb *= 2.0;
            osu_print_row(size, mb / t);
#endif
        }
    }
    MPI_Free_mem(sbase);
    MPI_Free_mem(rbase);
    return osu_finish();
}
