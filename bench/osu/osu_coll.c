/* osu_coll.c: the collective latency benchmarks of the OSU 3.6 set, one
 * program per collective selected at compile time with -DOSU_COLL_ID=<id>
 * and -DOSU_BENCH="<header string>" (see Makefile.am). */
#include "osu_util.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#define C_ALLGATHER      1
#define C_ALLGATHERV     2
#define C_ALLREDUCE      3
#define C_ALLTOALL       4
#define C_ALLTOALLV      5
#define C_BARRIER        6
#define C_BCAST          7
#define C_GATHER         8
#define C_GATHERV        9
#define C_REDUCE         10
#define C_REDUCE_SCATTER 11
#define C_SCATTER        12
#define C_SCATTERV       13

#if !defined(OSU_COLL_ID) || !defined(OSU_BENCH)
#error "define OSU_COLL_ID and OSU_BENCH"
#endif

#define IS_REDUCTION (OSU_COLL_ID == C_ALLREDUCE || OSU_COLL_ID == C_REDUCE || \
                      OSU_COLL_ID == C_REDUCE_SCATTER)

struct cbufs {
    char *sbuf, *rbuf;
    int *counts, *displs;   /* v-variants, reduce_scatter */
};

static void coll(struct cbufs *b, size_t size, int rank, int np)
{
    (void)rank;
    int n = (int)size;
#if OSU_COLL_ID == C_ALLGATHER
    MPI_Allgather(MPI_IN_PLACE, n, MPI_CHAR, b->rbuf, n, MPI_CHAR, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_ALLGATHERV
    MPI_Allgatherv(b->sbuf, n, MPI_CHAR, b->rbuf, b->counts, b->displs, MPI_CHAR,
                   MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_ALLREDUCE
    MPI_Allreduce(b->sbuf, b->rbuf, n / (int)sizeof(float), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_ALLTOALL
    MPI_Alltoall(b->sbuf, n, MPI_CHAR, b->rbuf, n, MPI_CHAR, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_ALLTOALLV
    MPI_Alltoallv(b->sbuf, b->counts, b->displs, MPI_CHAR, b->rbuf, b->counts, b->displs,
                  MPI_CHAR, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_BARRIER
    (void)n;
    MPI_Barrier(MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_BCAST
    MPI_Bcast(b->sbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_GATHER
    if (rank == 0)
        MPI_Gather(MPI_IN_PLACE, n, MPI_CHAR, b->rbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD);
    else
        MPI_Gather(b->sbuf, n, MPI_CHAR, NULL, n, MPI_CHAR, 0, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_GATHERV
    MPI_Gatherv(b->sbuf, n, MPI_CHAR, b->rbuf, b->counts, b->displs, MPI_CHAR, 0,
                MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_REDUCE
    MPI_Reduce(b->sbuf, b->rbuf, n / (int)sizeof(float), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_REDUCE_SCATTER
    MPI_Reduce_scatter(b->sbuf, b->rbuf, b->counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_SCATTER
    if (rank == 0)
        MPI_Scatter(b->sbuf, n, MPI_CHAR, MPI_IN_PLACE, n, MPI_CHAR, 0, MPI_COMM_WORLD);
    else
        MPI_Scatter(NULL, n, MPI_CHAR, b->rbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD);
#elif OSU_COLL_ID == C_SCATTERV
    MPI_Scatterv(b->sbuf, b->counts, b->displs, MPI_CHAR, b->rbuf, n, MPI_CHAR, 0,
                 MPI_COMM_WORLD);
#else
#error "unknown OSU_COLL_ID"
#endif
    (void)np;
    (void)n;
}

/* counts/displs for a message size */
static void setup_counts(struct cbufs *b, size_t size, int np)
{
#if OSU_COLL_ID == C_REDUCE_SCATTER
    int total = (int)(size / sizeof(float));
    for (int i = 0; i < np; i++)
        b->counts[i] = total / np + (i < total % np);
#else
    for (int i = 0; i < np; i++) {
        b->counts[i] = (int)size;
        b->displs[i] = (int)size * i;
    }
#endif
}

int main(int argc, char **argv)
{
    struct osu_opts o;
    int rank, np, loop, skip;
    osu_defaults(&o, OSU_COLL, OSU_BENCH, "Avg Latency(us)");
#if OSU_COLL_ID == C_BARRIER
    o.loop = 100; o.skip = 10;
    o.min_size = o.max_size = 0;
#endif
#if IS_REDUCTION
    o.min_size = sizeof(float);
#endif
    int rc = osu_init(&argc, &argv, &o, -1, &rank, &np);
    if (rc)
        return rc;
#if OSU_COLL_ID == C_BARRIER
    o.min_size = o.max_size = 0;
#endif
#if IS_REDUCTION
    if (o.min_size < sizeof(float))
        o.min_size = sizeof(float);
#endif
    size_t align = osu_page_size();
    size_t bufsz = o.max_size * (size_t)np + align;
    struct cbufs b;
    b.sbuf = osu_alloc(bufsz, align);
    b.rbuf = osu_alloc(bufsz, align);
    b.counts = malloc(sizeof(int) * (size_t)np);
    b.displs = malloc(sizeof(int) * (size_t)np);
    if (!b.counts || !b.displs)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int with_size = (OSU_COLL_ID != C_BARRIER);
    if (rank == 0) {
        osu_print_header(&o);
        osu_print_coll_colhdr(&o, with_size);
    }
    for (size_t size = osu_first_size(&o); size <= o.max_size; size = osu_next_size(size)) {
        if (with_size && size == 0)
            continue;
        osu_touch(b.sbuf, b.rbuf, size * (size_t)np);
        setup_counts(&b, size, np);
        /* 3.6 reductions switch to the large counts by element count */
        osu_iters(&o, IS_REDUCTION ? size / sizeof(float) : size, &loop, &skip);
        double timer = 0.0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < loop + skip; i++) {
            double t0 = MPI_Wtime();
            coll(&b, size, rank, np);
            double t1 = MPI_Wtime();
            if (i >= skip)
                timer += t1 - t0;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double lat = timer * 1e6 / loop, mn = 0, mx = 0, sum = 0;
        MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            osu_print_coll_row(&o, with_size, size, sum / np, mn, mx, loop);
        if (!with_size)
            break;
    }
    free(b.counts);
    free(b.displs);
    free(b.sbuf);
    free(b.rbuf);
    return osu_finish();
}
