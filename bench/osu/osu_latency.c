/* osu_latency: ping-pong latency (OSU 3.6 compatible output). */
#include "osu_util.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
    struct osu_opts o;
    int rank, np, loop, skip;
    osu_defaults(&o, OSU_PT2PT, "OSU MPI Latency Test", "Latency (us)");
    o.has_device_args = 1;
    int rc = osu_init(&argc, &argv, &o, -1, &rank, &np);
    if (rc)
        return rc;
    char *sbuf, *rbuf;
    osu_latency_buffers(o.max_size, &sbuf, &rbuf);
    if (rank == 0) {
        osu_print_header(&o);
        osu_print_colhdr(o.label);
    }
    for (size_t size = osu_first_size(&o); size <= o.max_size; size = osu_next_size(size)) {
        osu_touch(sbuf, rbuf, size);
        osu_iters(&o, size, &loop, &skip);
        MPI_Barrier(MPI_COMM_WORLD);
        double t_start = 0.0, t_end = 0.0;
        if (rank == 0) {
            for (int i = 0; i < loop + skip; i++) {
                if (i == skip)
                    t_start = MPI_Wtime();
                MPI_Send(sbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            t_end = MPI_Wtime();
            osu_print_row(size, (t_end - t_start) * 1e6 / (2.0 * loop));
        } else {
            for (int i = 0; i < loop + skip; i++) {
                MPI_Recv(rbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
    }
    osu_latency_buffers_free(sbuf, rbuf);
    return osu_finish();
}
