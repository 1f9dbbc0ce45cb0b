/* osu_mbw_mr: multiple-pair bandwidth and message rate (OSU 3.6 output).
 * Rank r < pairs sends to r + pairs with the osu_bw pattern. */
#include "osu_util.h"

#include <stdio.h>
#include <stdlib.h>

static const int window_sizes[] = { 8, 16, 32, 64, 128 }; /* 3.6 -v */
#define NWIN ((int)(sizeof window_sizes / sizeof window_sizes[0]))

/* One measurement: returns the message rate (messages/s over all pairs);
 * meaningful on rank 0. */
static double run(const struct osu_opts *o, int rank, int pairs, size_t size, int window,
                  char *sbuf, char *rbuf, MPI_Request *req)
{
    int loop, skip;
    osu_iters(o, size, &loop, &skip);
    /* 3.6: windows below 64 repeat loop and warm-up 64 / window times */
    int mult = 64 / window > 0 ? 64 / window : 1;
    loop *= mult;
    skip *= mult;
    double t = 0.0, tmax = 0.0;
    osu_touch(sbuf, rbuf, size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < pairs) {
        int peer = rank + pairs;
        double t_start = 0.0;
        for (int i = 0; i < loop + skip; i++) {
            if (i == skip) { /* 3.6: every rank meets once more after warm-up */
                MPI_Barrier(MPI_COMM_WORLD);
                t_start = MPI_Wtime();
            }
            for (int j = 0; j < window; j++)
                MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(window, req, OSU_STATUSES_IGNORE);
            MPI_Recv(rbuf, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        t = MPI_Wtime() - t_start;
    } else if (rank < 2 * pairs) {
        int peer = rank - pairs;
        for (int i = 0; i < loop + skip; i++) {
            if (i == skip)
                MPI_Barrier(MPI_COMM_WORLD);
            for (int j = 0; j < window; j++)
                MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(window, req, OSU_STATUSES_IGNORE);
            MPI_Send(sbuf, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD);
        }
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return tmax > 0 ? (double)pairs * loop * window / tmax : 0.0;
}

/* 3.6 -v column header: the window sizes */
static void print_window_header(void)
{
    printf("#      ");
    for (int w = 0; w < NWIN; w++)
        printf("  %10d", window_sizes[w]);
    printf("\n");
}

int main(int argc, char **argv)
{
    struct osu_opts o;
    int rank, np;
    osu_defaults(&o, OSU_MBW, "OSU MPI Multiple Bandwidth / Message Rate Test", "MB/s");
    o.min_size = 1;
    o.loop = 100; o.skip = 10; o.loop_large = 20; o.skip_large = 2;
    int rc = osu_init(&argc, &argv, &o, -1, &rank, &np);
    if (rc)
        return rc;
    int pairs = o.pairs > 0 ? o.pairs : np / 2;
    if (2 * pairs > np) {
        if (rank == 0)
            fprintf(stderr, "%d pairs need at least %d processes\n", pairs, 2 * pairs);
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    /* -v: one row of rates per size (sizes up to 2^30: 31 rows) */
    static double rates[32][NWIN];
    int nsizes = 0;
    int wmax = o.vary_window ? window_sizes[NWIN - 1] : o.window;
    char *sbuf, *rbuf;
    osu_pt2pt_buffers(o.max_size, osu_page_size(), &sbuf, &rbuf);
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)wmax);
    if (!req)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0) {
        osu_print_header(&o);
        if (o.vary_window) {
            printf("# [ pairs: %d ] [ window size: varied ]\n", pairs);
            printf("\n# Uni-directional Bandwidth (MB/sec)\n");
            print_window_header();
        } else {
            printf("# [ pairs: %d ] [ window size: %d ]\n", pairs, o.window);
            if (o.print_rate)
                printf("%-*s%*s%*s\n", OSU_SIZE_WIDTH, "# Size", OSU_FIELD_WIDTH, "MB/s",
                       OSU_FIELD_WIDTH, "Messages/s");
            else
                printf("%-*s%*s\n", OSU_SIZE_WIDTH, "# Size", OSU_FIELD_WIDTH, "MB/s");
        }
        fflush(stdout);
    }
    for (size_t size = osu_first_size(&o); size <= o.max_size; size = osu_next_size(size)) {
        if (size == 0)
            continue;
        if (o.vary_window) {
            if (rank == 0)
                printf("%-7d", (int)size);
            for (int w = 0; w < NWIN; w++) {
                double rate = run(&o, rank, pairs, size, window_sizes[w], sbuf, rbuf, req);
                rates[nsizes][w] = rate;
                if (rank == 0)
                    printf("  %10.*f", OSU_PRECISION, rate * (double)size / 1e6);
            }
            nsizes++;
            if (rank == 0) {
                printf("\n");
                fflush(stdout);
            }
        } else {
            double rate = run(&o, rank, pairs, size, o.window, sbuf, rbuf, req);
            if (rank == 0) {
                double bw = rate * (double)size / 1e6;
                if (o.print_rate)
                    printf("%-*d%*.*f%*.*f\n", OSU_SIZE_WIDTH, (int)size, OSU_FIELD_WIDTH,
                           OSU_PRECISION, bw, OSU_FIELD_WIDTH, OSU_PRECISION, rate);
                else
                    printf("%-*d%*.*f\n", OSU_SIZE_WIDTH, (int)size, OSU_FIELD_WIDTH,
                           OSU_PRECISION, bw);
                fflush(stdout);
            }
        }
    }
    if (o.vary_window && o.print_rate && rank == 0) {
        /* 3.6 -v: the message rates follow the bandwidth table */
        printf("\n# Message Rate Profile\n");
        print_window_header();
        int k = 0;
        for (size_t size = osu_first_size(&o); size <= o.max_size; size = osu_next_size(size)) {
            if (size == 0)
                continue;
            printf("%-7d", (int)size);
            for (int w = 0; w < NWIN; w++)
                printf("  %10.2f", rates[k][w]);
            printf("\n");
            k++;
        }
        fflush(stdout);
    }
    free(req);
    osu_pt2pt_buffers_free(sbuf, rbuf);
    return osu_finish();
}
