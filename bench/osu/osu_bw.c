/* osu_bw / osu_bibw (built with -DOSU_BIBW): windowed bandwidth
 * (OSU 3.6 compatible output). */
#include "osu_util.h"

#include <stdlib.h>

#ifdef OSU_BIBW
#define BENCH "OSU MPI Bi-Directional Bandwidth Test"
#define LABEL "Bi-Bandwidth (MB/s)"
#else
#define BENCH "OSU MPI Bandwidth Test"
#define LABEL "Bandwidth (MB/s)"
#endif

int main(int argc, char **argv)
{
    struct osu_opts o;
    int rank, np, loop, skip;
    osu_defaults(&o, OSU_PT2PT, BENCH, LABEL);
    o.has_device_args = 1;
    o.has_window = 1;
    o.min_size = 1;
    o.loop = 100; o.skip = 10; o.loop_large = 20; o.skip_large = 2;
    int rc = osu_init(&argc, &argv, &o, -1, &rank, &np);
    if (rc)
        return rc;
    char *sbuf, *rbuf;
    osu_pt2pt_buffers(o.max_size, osu_page_size(), &sbuf, &rbuf);
    int wmax = o.window > o.window_large ? o.window : o.window_large;
    MPI_Request *sreq = malloc(sizeof(MPI_Request) * (size_t)wmax);
    MPI_Request *rreq = malloc(sizeof(MPI_Request) * (size_t)wmax);
    if (!sreq || !rreq)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0) {
        osu_print_header(&o);
        osu_print_colhdr(o.label);
    }
#ifdef OSU_BIBW
    /* 3.6 tags: rank 0 sends with 100 and receives 10, rank 1 the reverse */
    int peer = 1 - rank;
    int stag = rank == 0 ? 100 : 10, rtag = rank == 0 ? 10 : 100;
#endif
    for (size_t size = osu_first_size(&o); size <= o.max_size; size = osu_next_size(size)) {
        if (size == 0)
            continue;
        int window = osu_window(&o, size);
        osu_touch(sbuf, rbuf, size);
        osu_iters(&o, size, &loop, &skip);
        /* no barrier between sizes: 3.6 has none here */
        double t_start = 0.0, t_end;
        for (int i = 0; i < loop + skip; i++) {
            if (i == skip)
                t_start = MPI_Wtime();
#ifdef OSU_BIBW
            for (int j = 0; j < window; j++)
                MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, rtag, MPI_COMM_WORLD, &rreq[j]);
            for (int j = 0; j < window; j++)
                MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, stag, MPI_COMM_WORLD, &sreq[j]);
            MPI_Waitall(window, sreq, OSU_STATUSES_IGNORE);
            MPI_Waitall(window, rreq, OSU_STATUSES_IGNORE);
#else
            if (rank == 0) {
                for (int j = 0; j < window; j++)
                    MPI_Isend(sbuf, (int)size, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &sreq[j]);
                MPI_Waitall(window, sreq, OSU_STATUSES_IGNORE);
                MPI_Recv(rbuf, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (int j = 0; j < window; j++)
                    MPI_Irecv(rbuf, (int)size, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &rreq[j]);
                MPI_Waitall(window, rreq, OSU_STATUSES_IGNORE);
                MPI_Send(sbuf, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
            }
#endif
        }
        t_end = MPI_Wtime();
        if (rank == 0) {
            double t = t_end - t_start;
            double mb = (double)size / 1e6 * loop * window;
#ifdef OSU_BIBW
            mb *= 2.0;
#endif
            osu_print_row(size, mb / t);
        }
    }
    free(sreq);
    free(rreq);
    osu_pt2pt_buffers_free(sbuf, rbuf);
    return osu_finish();
}
