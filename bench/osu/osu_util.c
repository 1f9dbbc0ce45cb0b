/* bench/osu/osu_util.c: shared harness of the OSU-style benchmarks. */
#include "osu_util.h"

#include <p3rt/oversub.h>

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

MPI_Status *osu_statuses_ignore = MPI_STATUSES_IGNORE;

void osu_defaults(struct osu_opts *o, enum osu_kind kind, const char *benchmark,
                  const char *label)
{
    memset(o, 0, sizeof *o);
    o->benchmark = benchmark;
    o->label = label;
    o->kind = kind;
    o->exact_two = (kind == OSU_PT2PT || kind == OSU_ONESIDED);
    o->min_size = 0;
    o->max_size = (size_t)1 << 22;
    o->loop = 10000; o->skip = 1000;
    o->loop_large = 100; o->skip_large = 10;
    o->window = o->window_large = 64;
    o->pairs = -1;
    o->print_rate = 1;
    o->sync = OSU_SYNC_PSCW;
    o->loc[0] = o->loc[1] = 'H';
    if (kind == OSU_COLL) {
        o->min_size = 1;
        o->max_size = (size_t)1 << 20;
        o->loop = 1000; o->skip = 200;
    }
}

const char *osu_sync_name(int sync)
{
    switch (sync) {
    case OSU_SYNC_PSCW:  return "pscw";
    case OSU_SYNC_FENCE: return "fence";
    case OSU_SYNC_LOCK:  return "lock";
    case OSU_SYNC_FLUSH: return "flush";
    }
    return "?";
}

static void usage(const struct osu_opts *o, const char *prog)
{
    const char *p = strrchr(prog, '/');
    p = p ? p + 1 : prog;
    printf("%s: %s (p3stack, OSU %s compatible output)\n", p, o->benchmark, OSU_VERSION);
    if (o->has_device_args)
        printf("Usage: %s [options] [H|H H]\n"
               "  positional buffer locations for rank 0 and rank 1: H (host).\n"
               "  D (CUDA device) is not available: this build has no CUDA support.\n", p);
    else
        printf("Usage: %s [options]\n", p);
    printf("Options:\n"
           "  -h            print this help and exit\n");
    switch (o->kind) {
    case OSU_COLL:
        printf("  -v            print the version and exit\n"
               "  -f            full output: also min, max latency and iterations\n"
               "  -m [MIN:]MAX  message sizes (default up to %zu bytes)\n"
               "  -i ITER       iterations (default %d; large messages min(%d, ITER))\n"
               "  -x WARMUP     warm-up iterations (extension; default %d)\n",
               o->max_size, o->loop, o->loop_large, o->skip);
        break;
    case OSU_MBW:
        printf("  -p PAIRS      number of pairs (default: processes/2)\n"
               "  -w WINDOW     window size (default 64)\n"
               "  -r 0|1        print the message rate (default 1)\n"
               "  -v            vary the window size (1..128), message rate profile\n"
               "  -m [MIN:]MAX  message sizes (extension)\n"
               "  -i ITER       iterations (extension)\n"
               "  -x WARMUP     warm-up iterations (extension)\n");
        break;
    default:
        printf("  -v            print the version and exit\n"
               "  -m [MIN:]MAX  message sizes (extension; default %zu:%zu)\n"
               "  -i ITER       iterations (extension; default %d, large min(%d, ITER))\n"
               "  -x WARMUP     warm-up iterations (extension; default %d)\n",
               o->min_size, o->max_size, o->loop, o->loop_large, o->skip);
        if (o->has_window)
            printf("  -W WINDOW     window size (extension; default %d)\n", o->window);
        if (o->has_sync)
            printf("  -s SYNC       one-sided synchronisation: pscw, fence, lock, flush\n"
                   "                (extension; default %s)\n", osu_sync_name(o->sync));
        break;
    }
}

static int parse_int(const char *s, int minv, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < minv || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_range(struct osu_opts *o, const char *arg)
{
    const char *colon = strchr(arg, ':');
    size_t mn = o->min_size, mx = o->max_size;
    if (colon) {
        char buf[64];
        size_t l = (size_t)(colon - arg);
        if (l >= sizeof buf)
            return -1;
        memcpy(buf, arg, l);
        buf[l] = 0;
        if (l && parse_size(buf, &mn))
            return -1;
        if (colon[1] && parse_size(colon + 1, &mx))
            return -1;
    } else if (parse_size(arg, &mx)) {
        return -1;
    }
    if (mx < mn || mx > ((size_t)1 << 30))
        return -1;
    o->min_size = mn;
    o->max_size = mx;
    return 0;
}

/* Returns 0 ok, 1 help/version (exit success), -1 error. */
static int parse(int argc, char **argv, struct osu_opts *o, int rank)
{
    const char *optstr;
    int v, user_loop = -1, user_skip = -1;
    switch (o->kind) {
    case OSU_COLL: optstr = "+hvfm:i:x:"; break;
    case OSU_MBW:  optstr = "+hp:w:r:vm:i:x:"; break;
    default:       optstr = o->has_sync ? "+hvm:i:x:W:s:" : "+hvm:i:x:W:"; break;
    }
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt(argc, argv, optstr)) != -1) {
        switch (c) {
        case 'h':
            if (rank == 0) usage(o, argv[0]);
            return 1;
        case 'v':
            if (o->kind == OSU_MBW) { o->vary_window = 1; break; }
            if (rank == 0) printf("# %s v%s\n", o->benchmark, OSU_VERSION);
            return 1;
        case 'f': o->full = 1; break;
        case 'm':
            if (parse_range(o, optarg)) goto bad;
            break;
        case 'i':
            if (parse_int(optarg, 1, &user_loop)) goto bad;
            break;
        case 'x':
            if (parse_int(optarg, 0, &user_skip)) goto bad;
            break;
        case 'W':
            if (!o->has_window || parse_int(optarg, 1, &v)) goto bad;
            o->window = o->window_large = v;
            break;
        case 'w':
            if (parse_int(optarg, 1, &v)) goto bad;
            o->window = o->window_large = v;
            break;
        case 'p':
            if (parse_int(optarg, 1, &o->pairs)) goto bad;
            break;
        case 'r':
            if (parse_int(optarg, 0, &v) || v > 1) goto bad;
            o->print_rate = v;
            break;
        case 's':
            if (!strcmp(optarg, "pscw")) o->sync = OSU_SYNC_PSCW;
            else if (!strcmp(optarg, "fence")) o->sync = OSU_SYNC_FENCE;
            else if (!strcmp(optarg, "lock")) o->sync = OSU_SYNC_LOCK;
            else if (!strcmp(optarg, "flush")) o->sync = OSU_SYNC_FLUSH;
            else goto bad;
            break;
        default:
            goto bad;
        }
    }
    if (user_loop > 0) {
        o->loop = user_loop;
        /* 3.6 collectives: -i sets small and large counts alike */
        if (o->kind == OSU_COLL || o->loop_large > user_loop)
            o->loop_large = user_loop;
    }
    if (user_skip >= 0) {
        o->skip = user_skip;
        if (o->skip_large > user_skip) o->skip_large = user_skip;
    }
    if (optind < argc) {
        if (!o->has_device_args || argc - optind > 2) goto bad;
        for (int i = 0; optind + i < argc; i++) {
            const char *a = argv[optind + i];
            if (!strcmp(a, "D") || !strcmp(a, "d")) {
                if (rank == 0)
                    fprintf(stderr, "Device buffers (D) are not supported: this build "
                                    "has no CUDA support; use H\n");
                return -1;
            }
            if (strcmp(a, "H") && strcmp(a, "h")) goto bad;
        }
        o->device_args_given = 1;
    }
    return 0;
bad:
    if (rank == 0) {
        if (optind <= argc && optind > 0 && optind - 1 < argc)
            fprintf(stderr, "Invalid option or argument near '%s'\n",
                    optind < argc ? argv[optind] : argv[optind - 1]);
        usage(o, argv[0]);
    }
    return -1;
}

int osu_init(int *argc, char ***argv, struct osu_opts *o, int thread_level,
             int *rank, int *np)
{
    if (thread_level >= 0) {
        int provided;
        MPI_Init_thread(argc, argv, thread_level, &provided);
        if (provided < thread_level) {
            MPI_Comm_rank(MPI_COMM_WORLD, rank);
            if (*rank == 0)
                fprintf(stderr, "MPI_Init_thread must return MPI_THREAD_MULTIPLE!\n");
            MPI_Finalize();
            return EXIT_FAILURE;
        }
    } else {
        MPI_Init(argc, argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, np);
    int r = parse(*argc, *argv, o, *rank);
    if (r != 0) {
        MPI_Finalize();
        exit(r > 0 ? EXIT_SUCCESS : EXIT_FAILURE);
    }
    if ((o->exact_two && *np != 2) || (!o->exact_two && *np < 2)) {
        if (*rank == 0)
            fprintf(stderr, o->exact_two ? "This test requires exactly two processes\n"
                                         : "This test requires at least two processes\n");
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    return 0;
}

int osu_finish(void)
{
    MPI_Finalize();
    return EXIT_SUCCESS;
}

size_t osu_page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

void *osu_alloc(size_t bytes, size_t align)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 1;
    if (posix_memalign(&p, align, bytes) != 0) {
        fprintf(stderr, "Error allocating %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
        return NULL;
    }
    memset(p, 0, bytes);
    return p;
}

static char osu_static_sbuf[OSU_STATIC_BYTES];
static char osu_static_rbuf[OSU_STATIC_BYTES];

static char *align_up(char *p, size_t align)
{
    return (char *)(((unsigned long)p + (align - 1)) / align * align);
}

void osu_pt2pt_buffers(size_t need, size_t align, char **sbuf, char **rbuf)
{
    if (need + align <= OSU_STATIC_BYTES) {
        *sbuf = align_up(osu_static_sbuf, align);
        *rbuf = align_up(osu_static_rbuf, align);
    } else {
        *sbuf = osu_alloc(need + align, align);
        *rbuf = osu_alloc(need + align, align);
    }
}

void osu_pt2pt_buffers_free(char *sbuf, char *rbuf)
{
    if (sbuf < osu_static_sbuf || sbuf >= osu_static_sbuf + OSU_STATIC_BYTES) {
        free(sbuf);
        free(rbuf);
    }
}

void osu_touch(void *sbuf, void *rbuf, size_t n)
{
    if (sbuf) memset(sbuf, 'a', n);
    if (rbuf) memset(rbuf, 'b', n);
}

void osu_iters(const struct osu_opts *o, size_t size, int *loop, int *skip)
{
    if (size > OSU_LARGE_MSG) {
        *loop = o->loop_large;
        *skip = o->skip_large;
    } else {
        *loop = o->loop;
        *skip = o->skip;
    }
}

int osu_window(const struct osu_opts *o, size_t size)
{
    return size > OSU_LARGE_MSG ? o->window_large : o->window;
}

size_t osu_first_size(const struct osu_opts *o)
{
    return o->min_size;
}

size_t osu_next_size(size_t size)
{
    return size ? size * 2 : 1;
}

/* Over the ptl3 provider, say when its polls yield the CPU (an
 * oversubscribed node, <p3rt/oversub.h>, or FI_PTL3_YIELD_POLLS): figures
 * then mean something else than busy-polling ones.  A "# p3stack" line is
 * not 3.6's: the checkers skip it.  Silent otherwise, so the output stays
 * 3.6's. */
/* The adapter's answer: libportals3, loaded by the ptl3 provider, has
 * already asked (and the node's pinned ranks have compared masks on their
 * board once, <p3rt/oversub.h>); a second asker with its own copy of the
 * code would find the board gone.  Our copy only when it is not loaded. */
static int oversub_as_the_adapter(struct ptl_oversub *os)
{
    int (*detect)(struct ptl_oversub *) = NULL;
    void *lib = dlopen("libportals3.so.0", RTLD_LAZY | RTLD_NOLOAD);
    if (lib) {
        void *sym = dlsym(lib, "ptl_oversub_detect");
        memcpy(&detect, &sym, sizeof(detect));
    }
    int r = detect ? detect(os) : ptl_oversub_detect(os);
    if (lib)
        dlclose(lib);
    return r;
}

static void print_p3stack_note(void)
{
    const char *prov = getenv("FI_PROVIDER");
    if (!prov || strcmp(prov, "ptl3"))
        return;
    struct ptl_oversub os;
    char what[200];
    oversub_as_the_adapter(&os);
    ptl_oversub_describe(&os, what, sizeof(what));
    const char *yp = getenv("FI_PTL3_YIELD_POLLS");
    if (yp && *yp)
        printf("# p3stack ptl3: FI_PTL3_YIELD_POLLS=%s set explicitly: waits yield after that many "
               "empty polls (without it: %s)\n",
               yp, what);
    else if (os.oversubscribed)
        printf("# p3stack ptl3: %s (by default: after FI_PTL3_YIELD_POLLS=%d empty poll%s, "
               "wait in PtlEQPoll for an event, FI_PTL3_BLOCK_MS=%d at most)\n",
               what, PTL_OVERSUB_ADAPTER_YIELD_POLLS,
               PTL_OVERSUB_ADAPTER_YIELD_POLLS == 1 ? "" : "s", PTL_OVERSUB_ADAPTER_BLOCK_MS);
}

void osu_print_header(const struct osu_opts *o)
{
    printf("# %s v%s\n", o->benchmark, OSU_VERSION);
    print_p3stack_note();
    if (o->device_args_given)
        printf("# Send Buffer on HOST (H) and Receive Buffer on HOST (H)\n");
    fflush(stdout);
}

void osu_print_colhdr(const char *label)
{
    printf("%-*s%*s\n", OSU_SIZE_WIDTH, "# Size", OSU_FIELD_WIDTH, label);
    fflush(stdout);
}

void osu_print_row(size_t size, double value)
{
    printf("%-*d%*.*f\n", OSU_SIZE_WIDTH, (int)size, OSU_FIELD_WIDTH, OSU_PRECISION, value);
    fflush(stdout);
}

void osu_print_coll_colhdr(const struct osu_opts *o, int with_size)
{
    if (with_size)
        printf("%-*s%*s", OSU_SIZE_WIDTH, "# Size", OSU_FIELD_WIDTH, "Avg Latency(us)");
    else
        printf("# Avg Latency(us)");
    if (o->full)
        printf("%*s%*s%*s", OSU_FIELD_WIDTH, "Min Latency(us)", OSU_FIELD_WIDTH,
               "Max Latency(us)", 12, "Iterations");
    printf("\n");
    fflush(stdout);
}

void osu_print_coll_row(const struct osu_opts *o, int with_size, size_t size,
                        double avg, double min, double max, int iterations)
{
    if (with_size)
        printf("%-*d%*.*f", OSU_SIZE_WIDTH, (int)size, OSU_FIELD_WIDTH, OSU_PRECISION, avg);
    else
        printf("%*.*f", 17, OSU_PRECISION, avg);
    if (o->full)
        printf("%*.*f%*.*f%*d", OSU_FIELD_WIDTH, OSU_PRECISION, min, OSU_FIELD_WIDTH,
               OSU_PRECISION, max, 12, iterations);
    printf("\n");
    fflush(stdout);
}
