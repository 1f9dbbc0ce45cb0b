/* comb_opts.c: COMB's command line (comb --help). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comb.h"

static void usage(FILE *f)
{
    fprintf(f,
"Usage: mpiexec -n 2 comb poll|pww [options]\n"
"  -s SIZE[,SIZE...]      message size(s) in bytes (default 102400; k/K suffix = 1024)\n"
"  -q DEPTH               messages in flight per direction (poll default 4, pww 1)\n"
"  --min-interval N       smallest poll/work interval (default 1000 iterations)\n"
"  --max-interval N       largest interval (default 10000000 iterations)\n"
"  --step xF              interval growth factor (default x2)\n"
"  --unit iters|us        unit of the intervals (default iters: work-loop iterations)\n"
"  --calibration IPU      with --unit us: work-loop iterations per microsecond to use\n"
"                         instead of calibrating (another run's '# calibration:' figure:\n"
"                         the same interval is then the same work in both runs)\n"
"  --reps N               messaging runs per point (default 5, at most 64), each\n"
"                         between two dry (no messaging) runs: A B A B ... A; a run's\n"
"                         availability uses the mean of its two neighbouring dry runs,\n"
"                         the point reports the median (--csv: also min, max)\n"
"  --dry-runs N           tries per dry run: a dry run in which the worker had less\n"
"                         than 98 %% of its wall time on the CPU is measured again\n"
"                         (default 3)\n"
"  --work-us US           poll: work per measurement in microseconds (default 250000)\n"
"  --iters N              pww: iterations per measurement (default 50)\n"
"  --run-us US            pww: fewer iterations (at least 3) where --iters work\n"
"                         intervals would exceed US microseconds\n"
"  --cpus W,S             pin worker to CPU W and support to CPU S (default: first two\n"
"                         CPUs of the affinity mask); --no-pin disables pinning\n"
"  --nice N               run the worker thread at nice level N (e.g. -10 on a shared\n"
"                         machine so that other tenants cannot steal its core)\n"
"  --load-pid PID         send SIGUSR1/SIGUSR2 to PID around each messaging phase\n"
"                         (validation: comb_load steals a known CPU share)\n"
"  --csv                  comma-separated output\n"
"Rows: size interval bandwidth(MB/s) availability(%%) [pww: post(us) work(us)\n"
"wait(us) work_dry(us)], medians of the repetitions; bandwidth = bytes received by\n"
"the worker / time, MB = 1e6.  --csv adds " CSV_SPREAD_COLUMNS ".\n"
"A repetition whose availability exceeds 100 %% is measured again (up to 3 tries),\n"
"between the latest dry run and a new one; a point with a repetition still above\n"
"100 %% is measured again (twice at most) and otherwise not published: status\n"
"over-100, empty availability (text: '#' row).\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return -1;
    if (*end == 'k' || *end == 'K') { v *= 1024; end++; }
    else if (*end == 'm' || *end == 'M') { v *= 1024 * 1024; end++; }
    if (*end || v == 0 || v > (1ull << 30))
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    if (*s == 'x' || *s == 'X')
        s++;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int parse_args(int argc, char **argv, struct opts *o)
{
    enum { O_MIN = 256, O_MAX, O_STEP, O_DRY, O_CSV, O_WORK, O_ITERS, O_CPUS, O_NOPIN,
           O_LOAD, O_REPS, O_UNIT, O_NICE, O_RUN, O_CALIB };
    static const struct option lo[] = {
        { "min-interval", required_argument, 0, O_MIN },
        { "max-interval", required_argument, 0, O_MAX },
        { "step", required_argument, 0, O_STEP },
        { "dry-runs", required_argument, 0, O_DRY },
        { "reps", required_argument, 0, O_REPS },
        { "csv", no_argument, 0, O_CSV },
        { "work-us", required_argument, 0, O_WORK },
        { "iters", required_argument, 0, O_ITERS },
        { "run-us", required_argument, 0, O_RUN },
        { "cpus", required_argument, 0, O_CPUS },
        { "no-pin", no_argument, 0, O_NOPIN },
        { "load-pid", required_argument, 0, O_LOAD },
        { "unit", required_argument, 0, O_UNIT },
        { "nice", required_argument, 0, O_NICE },
        { "calibration", required_argument, 0, O_CALIB },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    memset(o, 0, sizeof *o);
    o->q = -1;
    o->min_iv = 1000;
    o->max_iv = 1e7;
    o->step = 2;
    o->dry_runs = 3;
    o->reps = 5;
    o->run_us = 0;
    o->work_us = 250000;
    o->iters = 50;
    o->pin = 1;
    o->cpu_worker = o->cpu_support = -1;
    if (argc < 2) {
        usage(stderr);
        return -1;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 1;
    }
    if (!strcmp(argv[1], "poll")) o->pww = 0;
    else if (!strcmp(argv[1], "pww")) o->pww = 1;
    else {
        fprintf(stderr, "comb: first argument must be poll or pww\n");
        usage(stderr);
        return -1;
    }
    opterr = 0;
    optind = 2;
    int c;
    double d;
    char trail; /* --cpus: a character after the two numbers is refused */
    while ((c = getopt_long(argc, argv, "s:q:h", lo, NULL)) != -1) {
        switch (c) {
        case 's': {
            char *copy = strdup(optarg), *save = NULL;
            o->nsizes = 0;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (o->nsizes == MAX_SIZES || parse_size(t, &o->sizes[o->nsizes])) {
                    free(copy);
                    goto bad;
                }
                o->nsizes++;
            }
            free(copy);
            break;
        }
        case 'q':
            if (parse_double(optarg, &d) || d != floor(d) || d > 1024) goto bad;
            o->q = (int)d;
            break;
        case O_MIN: if (parse_double(optarg, &o->min_iv)) goto bad; break;
        case O_MAX: if (parse_double(optarg, &o->max_iv)) goto bad; break;
        case O_STEP:
            if (parse_double(optarg, &o->step) || o->step <= 1.0) goto bad;
            break;
        case O_DRY:
            if (parse_double(optarg, &d) || d != floor(d)) goto bad;
            o->dry_runs = (int)d;
            break;
        case O_REPS:
            if (parse_double(optarg, &d) || d != floor(d) || d > MAX_REPS) goto bad;
            o->reps = (int)d;
            break;
        case O_CSV: o->csv = 1; break;
        case O_WORK: if (parse_double(optarg, &o->work_us)) goto bad; break;
        case O_RUN: if (parse_double(optarg, &o->run_us)) goto bad; break;
        case O_CALIB:
            if (*optarg == 'x' || *optarg == 'X' || parse_double(optarg, &o->ipu)) goto bad;
            break;
        case O_ITERS:
            if (parse_double(optarg, &d) || d != floor(d)) goto bad;
            o->iters = (int)d;
            break;
        case O_CPUS:
            if (sscanf(optarg, "%d,%d%c", &o->cpu_worker, &o->cpu_support, &trail) != 2 ||
                o->cpu_worker < 0 || o->cpu_support < 0)
                goto bad;
            break;
        case O_NOPIN: o->pin = 0; break;
        case O_LOAD:
            if (parse_double(optarg, &d) || d != floor(d)) goto bad;
            o->load_pid = (pid_t)d;
            break;
        case O_UNIT:
            if (!strcmp(optarg, "us")) o->unit_us = 1;
            else if (!strcmp(optarg, "iters")) o->unit_us = 0;
            else goto bad;
            break;
        case O_NICE: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < -20 || v > 19) goto bad;
            o->nice_set = 1;
            o->nice = (int)v;
            break;
        }
        case 'h':
            usage(stdout);
            return 1;
        default:
            goto bad;
        }
    }
    if (optind != argc || o->min_iv > o->max_iv)
        goto bad;
    if (o->ipu > 0 && !o->unit_us) {
        fprintf(stderr, "comb: --calibration needs --unit us (intervals in iterations need none)\n");
        goto bad;
    }
    if (o->nsizes == 0) {
        o->sizes[0] = 102400;
        o->nsizes = 1;
    }
    if (o->q < 0)
        o->q = o->pww ? 1 : 4;
    return 0;
bad:
    fprintf(stderr, "comb: invalid arguments\n");
    usage(stderr);
    return -1;
}

