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

#define OSU_OP_PUT 1
#define OSU_OP_GET 2
#define OSU_OP_ACC 3
#define OSU_T_LAT  1
#define OSU_T_BW   2
#define OSU_T_BIBW 3

#if !defined(OSU_OP) || !defined(OSU_TEST) || !defined(OSU_PASSIVE) || !defined(OSU_BENCH)
#error "define OSU_OP, OSU_TEST, OSU_PASSIVE and OSU_BENCH"
#endif

static void rma_op(char *buf, size_t size, int peer, MPI_Win win)
{
#if OSU_OP == OSU_OP_PUT
    MPI_Put(buf, (int)size, MPI_CHAR, peer, 0, (int)size, MPI_CHAR, win);
#elif OSU_OP == OSU_OP_GET
    MPI_Get(buf, (int)size, MPI_CHAR, peer, 0, (int)size, MPI_CHAR, win);
#else
    int count = (int)(size / sizeof(int));
    MPI_Accumulate(buf, count, MPI_INT, peer, 0, count, MPI_INT, MPI_SUM, win);
#endif
}

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
    MPI_Win_create(rbuf, (MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    /* Both sides issue operations in latency (pscw/fence) and bibw tests. */
    int both = (OSU_TEST == OSU_T_BIBW) ||
               (OSU_TEST == OSU_T_LAT && (o->sync == OSU_SYNC_PSCW || o->sync == OSU_SYNC_FENCE));
    int active = (rank == 0) || both;
    int nops = (OSU_TEST == OSU_T_LAT) ? 1 : window;
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
                    rma_op(sbuf, size, peer, win);
                    MPI_Win_complete(win);
                    MPI_Win_post(peer_grp, 0, win);
                    MPI_Win_wait(win);
                } else {
                    MPI_Win_post(peer_grp, 0, win);
                    MPI_Win_wait(win);
                    MPI_Win_start(peer_grp, 0, win);
                    rma_op(sbuf, size, peer, win);
                    MPI_Win_complete(win);
                }
            } else if (OSU_TEST == OSU_T_BIBW) {
                MPI_Win_post(peer_grp, 0, win);
                MPI_Win_start(peer_grp, 0, win);
                for (int j = 0; j < nops; j++)
                    rma_op(sbuf, size, peer, win);
                MPI_Win_complete(win);
                MPI_Win_wait(win);
            } else if (rank == 0) {
                MPI_Win_start(peer_grp, 0, win);
                for (int j = 0; j < nops; j++)
                    rma_op(sbuf, size, peer, win);
                MPI_Win_complete(win);
            } else {
                MPI_Win_post(peer_grp, 0, win);
                MPI_Win_wait(win);
            }
            break;
        case OSU_SYNC_FENCE:
            if (OSU_TEST == OSU_T_LAT) {
                if (rank == 0)
                    rma_op(sbuf, size, peer, win);
                MPI_Win_fence(0, win);
                if (rank == 1)
                    rma_op(sbuf, size, peer, win);
                MPI_Win_fence(0, win);
            } else {
                if (active)
                    for (int j = 0; j < nops; j++)
                        rma_op(sbuf, size, peer, win);
                MPI_Win_fence(0, win);
            }
            break;
        case OSU_SYNC_LOCK:
            if (active) {
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win);
                for (int j = 0; j < nops; j++)
                    rma_op(sbuf, size, peer, win);
                MPI_Win_unlock(peer, win);
            }
            break;
        case OSU_SYNC_FLUSH:
            if (active) {
                for (int j = 0; j < nops; j++)
                    rma_op(sbuf, size, peer, win);
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
    size_t align = osu_page_size();
    char *sbuf = osu_alloc(o.max_size + align, align);
    char *rbuf = osu_alloc(o.max_size + align, align);
    if (rank == 0) {
        osu_print_header(&o);
        if (o.sync != default_sync)
            printf("# Synchronization: %s\n", sync_desc(o.sync));
        osu_print_colhdr(o.label);
    }
    for (size_t size = osu_first_size(&o); size <= o.max_size; size = osu_next_size(size)) {
        if (OSU_TEST != OSU_T_LAT && size == 0)
            continue;
        int window = osu_window(&o, size);
        osu_touch(sbuf, rbuf, size);
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
    free(sbuf);
    free(rbuf);
    return osu_finish();
}
