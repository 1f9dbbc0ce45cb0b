/* osu_multi_lat: simultaneous ping-pong between pairs r <-> r + np/2;
 * reports the average latency over the pairs (OSU 3.6 output). */
#include "osu_util.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
    struct osu_opts o;
    int rank, np, loop, skip;
    osu_defaults(&o, OSU_MULTI, "OSU MPI Multi Latency Test", "Latency (us)");
    o.loop = 10000; o.skip = 100; o.loop_large = 1000; o.skip_large = 10;
    int rc = osu_init(&argc, &argv, &o, -1, &rank, &np);
    if (rc)
        return rc;
    int pairs = np / 2;
    char *sbuf, *rbuf;
    osu_pt2pt_buffers(o.max_size, osu_page_size(), &sbuf, &rbuf);
    if (rank == 0) {
        osu_print_header(&o);
        osu_print_colhdr(o.label);
    }
    for (size_t size = osu_first_size(&o); size <= o.max_size; size = osu_next_size(size)) {
        osu_touch(sbuf, rbuf, size);
        osu_iters(&o, size, &loop, &skip);
        double lat = 0.0, sum = 0.0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank < pairs) {
            int peer = rank + pairs;
            double t_start = 0.0;
            for (int i = 0; i < loop + skip; i++) {
                if (i == skip)
                    t_start = MPI_Wtime();
                MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            lat = (MPI_Wtime() - t_start) * 1e6 / (2.0 * loop);
        } else if (rank < 2 * pairs) {
            int peer = rank - pairs;
            for (int i = 0; i < loop + skip; i++) {
                MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            }
        }
        MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            osu_print_row(size, sum / pairs);
    }
    osu_pt2pt_buffers_free(sbuf, rbuf);
    return osu_finish();
}
