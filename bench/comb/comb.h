/* comb.h: COMB's options (comb_opts.c parses them; comb.c measures). */
#ifndef P3_COMB_H
#define P3_COMB_H

#include <stdio.h>
#include <sys/types.h>

#define MAX_SIZES 32
#define MAX_REPS 64
/* --csv: the columns after the figures */
#define CSV_SPREAD_COLUMNS                                                                   \
    "reps,availability_min,availability_max,bandwidth_min,bandwidth_max,dry_redone,"       \
    "dry_disturbed,rep_redone,remeasured,msg_worker_cpu_share,msg_worker_nivcsw,status"

struct opts {
    int pww;
    size_t sizes[MAX_SIZES];
    int nsizes;
    int q;
    double min_iv, max_iv, step;   /* in `unit` */
    int unit_us;                   /* intervals in microseconds, else iterations */
    double ipu;                    /* --calibration: iterations per us given, 0: measure */
    int dry_runs;
    int reps;
    int csv;
    double work_us;                /* poll: total work per measurement */
    int iters;                     /* pww: most iterations per measurement */
    double run_us;                 /* pww: fewer iterations when one run would exceed this */
    int cpu_worker, cpu_support, pin;
    pid_t load_pid;
    int nice_set, nice;
};

/* Parse comb's command line into *o: 0 to run, 1 after --help (printed),
 * -1 on bad arguments (an error and the usage printed on stderr). */
int parse_args(int argc, char **argv, struct opts *o);

#endif
