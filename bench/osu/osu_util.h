/* bench/osu/osu_util.h: the small harness shared by every OSU-style
 * benchmark program of p3stack (options, buffers, iteration counts and the
 * 3.6 output format).  Written from the public description of the OSU
 * micro-benchmarks 3.6 (shared/reference/benchmarks.md §2); no upstream
 * code is used. */
#ifndef P3_OSU_UTIL_H
#define P3_OSU_UTIL_H

#include <stddef.h>
#include <mpi.h>

#define OSU_VERSION        "3.6"
#define OSU_FIELD_WIDTH    18
#define OSU_SIZE_WIDTH     10
#define OSU_PRECISION      2
#define OSU_LARGE_MSG      8192
#define OSU_MAX_ALIGN      65536

enum osu_kind {
    OSU_PT2PT,      /* exactly two processes; H/D positional args optional */
    OSU_MULTI,      /* at least two processes, pairs (multi_lat)           */
    OSU_MBW,        /* osu_mbw_mr: -p -w -r -v                              */
    OSU_COLL,       /* collectives: -h -v -f -m -i                          */
    OSU_ONESIDED,   /* one-sided, exactly two processes; -s sync            */
};

enum osu_sync { OSU_SYNC_PSCW, OSU_SYNC_FENCE, OSU_SYNC_LOCK, OSU_SYNC_FLUSH };

struct osu_opts {
    const char *benchmark;   /* e.g. "OSU MPI Latency Test"              */
    const char *label;       /* column label, e.g. "Latency (us)"        */
    enum osu_kind kind;
    int exact_two;           /* 1: exactly two processes, 0: at least two */
    int has_window;          /* accepts -W                               */
    int has_device_args;     /* accepts positional H/D                   */
    size_t min_size, max_size;
    int loop, skip, loop_large, skip_large;
    int window, window_large;
    /* collectives */
    int full;
    /* mbw_mr */
    int pairs, print_rate, vary_window;
    /* one-sided */
    int sync, has_sync;
    /* H/D */
    int device_args_given;
    char loc[2];
};

/* Fill defaults before calling osu_init(). */
void osu_defaults(struct osu_opts *o, enum osu_kind kind, const char *benchmark,
                  const char *label);

/* MPI_Init (or MPI_Init_thread when thread_level >= 0), parse options,
 * check the process count.  Returns 0 to run the benchmark; otherwise the
 * program must return the value (after MPI_Finalize has been called here).
 * -h, -v (version) and option errors finalize and exit() directly.
 * *rank and *np are set. */
int osu_init(int *argc, char ***argv, struct osu_opts *o, int thread_level,
             int *rank, int *np);

/* Ends the program: MPI_Finalize and EXIT_SUCCESS. */
int osu_finish(void);

/* The two message buffers of the point-to-point programs, placed as the
 * genuine 3.6 programs place them: in two static (BSS) arrays of
 * OSU_STATIC_BYTES each, aligned up to `align` inside the array.  Their pages
 * are mapped on first touch, by the per-size touch loop, so the first use of
 * each size faults its new pages in as in the genuine programs (a heap buffer
 * cleared in full beforehand does not).  When `need` is larger than the static
 * arrays allow (-m above 4 MiB) the buffers come from osu_alloc instead. */
#define OSU_STATIC_BYTES (((size_t)1 << 22) + OSU_MAX_ALIGN)
void osu_pt2pt_buffers(size_t need, size_t align, char **sbuf, char **rbuf);
void osu_pt2pt_buffers_free(char *sbuf, char *rbuf);
/* osu_latency's buffers at the genuine 3.6 osu_latency's page offsets (two
 * adjacent arrays of 4 MiB + 64, receive buffer first, at 0xc0 and 0x100
 * after 64-byte alignment: osu_lat_buffers.c says why); heap buffers from
 * osu_pt2pt_buffers when `need` is larger. */
void osu_latency_buffers(size_t need, char **sbuf, char **rbuf);
void osu_latency_buffers_free(char *sbuf, char *rbuf);

/* Aligned, zeroed allocation; aborts the job on failure. */
void *osu_alloc(size_t bytes, size_t align);
size_t osu_page_size(void);
/* Touch buffers for every size (3.6 behaviour). */
void osu_touch(void *sbuf, void *rbuf, size_t n);

/* Loop/skip for a given message size. */
void osu_iters(const struct osu_opts *o, size_t size, int *loop, int *skip);
int osu_window(const struct osu_opts *o, size_t size);
/* Size sequence: 0,1,2,4,… (latency) or 1,2,4,… */
size_t osu_first_size(const struct osu_opts *o);
size_t osu_next_size(size_t size);

/* Output (call on rank 0 only). */
void osu_print_header(const struct osu_opts *o);
void osu_print_colhdr(const char *label);
void osu_print_row(size_t size, double value);
/* Collective header/rows (full adds min/max/iterations). */
void osu_print_coll_colhdr(const struct osu_opts *o, int with_size);
void osu_print_coll_row(const struct osu_opts *o, int with_size, size_t size,
                        double avg, double min, double max, int iterations);

const char *osu_sync_name(int sync);

/* MPI_STATUSES_IGNORE through an opaque pointer: GCC 12's access-attribute
 * check misreads MPICH's (MPI_Status *)1 constant in MPI_Waitall calls. */
extern MPI_Status *osu_statuses_ignore;
#define OSU_STATUSES_IGNORE osu_statuses_ignore

#endif
