/* osu_latency_mt: multi-threaded latency.  Rank 0 ping-pongs from one
 * thread; rank 1 runs OSU_MT_THREADS receiving threads that share the
 * iterations (MPI_THREAD_MULTIPLE; OSU 3.6 output). */
#include "osu_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define OSU_MT_THREADS 2

struct thr {
    pthread_t tid;
    int count;
    size_t size;
    char *sbuf, *rbuf;
};

static void *responder(void *arg)
{
    struct thr *t = arg;
    for (int i = 0; i < t->count; i++) {
        MPI_Recv(t->rbuf, (int)t->size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(t->sbuf, (int)t->size, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct osu_opts o;
    int rank, np, loop, skip;
    osu_defaults(&o, OSU_PT2PT, "OSU MPI Multi-threaded Latency Test", "Latency (us)");
    int rc = osu_init(&argc, &argv, &o, MPI_THREAD_MULTIPLE, &rank, &np);
    if (rc)
        return rc;
    size_t align = 64;
    char *sbuf = osu_alloc(o.max_size + align, align);
    struct thr thr[OSU_MT_THREADS];
    char *rbufs[OSU_MT_THREADS];
    for (int k = 0; k < OSU_MT_THREADS; k++)
        rbufs[k] = osu_alloc(o.max_size + align, align);
    if (rank == 0) {
        osu_print_header(&o);
        osu_print_colhdr(o.label);
    }
    for (size_t size = osu_first_size(&o); size <= o.max_size; size = osu_next_size(size)) {
        osu_iters(&o, size, &loop, &skip);
        osu_touch(sbuf, rbufs[0], size);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            double t_start = 0.0;
            for (int i = 0; i < loop + skip; i++) {
                if (i == skip)
                    t_start = MPI_Wtime();
                MPI_Send(sbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbufs[0], (int)size, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            osu_print_row(size, (MPI_Wtime() - t_start) * 1e6 / (2.0 * loop));
        } else {
            int total = loop + skip;
            for (int k = 0; k < OSU_MT_THREADS; k++) {
                osu_touch(NULL, rbufs[k], size);
                thr[k].count = total / OSU_MT_THREADS + (k < total % OSU_MT_THREADS);
                thr[k].size = size;
                thr[k].sbuf = sbuf;
                thr[k].rbuf = rbufs[k];
                if (pthread_create(&thr[k].tid, NULL, responder, &thr[k]) != 0) {
                    fprintf(stderr, "pthread_create failed\n");
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
            for (int k = 0; k < OSU_MT_THREADS; k++)
                pthread_join(thr[k].tid, NULL);
        }
    }
    for (int k = 0; k < OSU_MT_THREADS; k++)
        free(rbufs[k]);
    free(sbuf);
    return osu_finish();
}
