/* comb: Communication Offload MPI-based Benchmark (p3stack implementation).
 *
 * Written from the published description of COMB (Lawry, Wilson, Maccabe,
 * Brightwell, IEEE Cluster 2002; shared/reference/benchmarks.md §1).  Two
 * processes: rank 0 is the *worker* (simulated computation + messaging),
 * rank 1 the *support* process (messaging only).
 *
 *   poll  polling method: the worker spins `interval` iterations of a
 *         calibrated work loop, then tests its receives; every message that
 *         arrived is answered and its receive re-posted.  Q messages are kept
 *         in flight in each direction.  availability = dry-run work time /
 *         time of the same work while messaging.
 *   pww   post-work-wait: each iteration both post a non-blocking receive
 *         and send of one message (or q), the worker works `interval`
 *         iterations, then both wait.  Post, work and wait phases are timed
 *         separately, plus the dry-run work time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "comb.h"

#define TAG_DATA 11
#define TAG_STOP 12
#define TAG_DONE 13
#define TAG_DRY 14
/* MPI_STATUSES_IGNORE through an opaque pointer (GCC 12 access warning). */
static MPI_Status *volatile statuses_ignore = MPI_STATUSES_IGNORE;

/* The support rank waits by polling (MPI_Test*, which return at once in
 * every MPI), never in a call the library may turn into a sleep: it stands
 * for the other node of the original COMB, and its CPU must be in the same
 * state during the worker's dry runs and during its messaging runs, because
 * here the two ranks share a machine whose CPUs slow each other down (see
 * dry_with_support_spinning).  The worker waits the way its MPI waits: that
 * is what COMB measures. */
static void support_waitany(int n, MPI_Request *req, int *idx)
{
    int flag = 0;
    do
        MPI_Testany(n, req, idx, &flag, MPI_STATUS_IGNORE);
    while (!flag);
}

static void support_waitall(int n, MPI_Request *req)
{
    int flag = 0;
    do
        MPI_Testall(n, req, &flag, statuses_ignore);
    while (!flag);
}

static void waitany_as(int rank, int n, MPI_Request *req, int *idx)
{
    if (rank == 0)
        MPI_Waitany(n, req, idx, MPI_STATUS_IGNORE);
    else
        support_waitany(n, req, idx);
}

static void waitall_as(int rank, int n, MPI_Request *req)
{
    if (rank == 0)
        MPI_Waitall(n, req, statuses_ignore);
    else
        support_waitall(n, req);
}


/* ---- the work loop: an asm barrier per iteration keeps every iteration. */
static void work(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        __asm__ __volatile__("" ::: "memory");
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Iterations per microsecond: best of several timed runs of >= 20 ms. */
static double calibrate(void)
{
    uint64_t n = 1 << 16;
    double t;
    for (;;) {
        double t0 = now();
        work(n);
        t = now() - t0;
        if (t >= 0.02)
            break;
        n *= 2;
    }
    double best = t;
    for (int k = 0; k < 4; k++) {
        double t0 = now();
        work(n);
        t = now() - t0;
        if (t < best)
            best = t;
    }
    return (double)n / (best * 1e6);
}

static int pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

/* choose default CPUs: the first two of the current affinity mask */
static void default_cpus(struct opts *o)
{
    cpu_set_t set;
    if (o->cpu_worker >= 0)
        return;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) {
        o->pin = 0;
        return;
    }
    int k = 0;
    for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
        if (CPU_ISSET(c, &set)) {
            if (k++ == 0) o->cpu_worker = c;
            else o->cpu_support = c;
        }
}

/* Worker isolation on a shared machine: with CONFIG_SCHED_AUTOGROUP the CPU
 * is shared between sessions first, and nice only matters inside a session.
 * The worker therefore starts its own session (its own autogroup, so the
 * support process's load on the other CPU does not dilute the worker's
 * share) and gives that autogroup and itself the requested nice level. */
static int raise_priority(int nice_level)
{
    int rc = 0;
    if (setsid() < 0 && errno != EPERM)
        fprintf(stderr, "comb: setsid: %s (continuing)\n", strerror(errno));
    FILE *f = fopen("/proc/self/autogroup", "w");
    if (f) {
        fprintf(f, "%d\n", nice_level);
        if (fclose(f) != 0)
            fprintf(stderr, "comb: cannot set autogroup nice %d: %s (continuing)\n",
                    nice_level, strerror(errno));
    }
    if (setpriority(PRIO_PROCESS, 0, nice_level) != 0) {
        fprintf(stderr, "comb: cannot set nice %d: %s (continuing)\n", nice_level,
                strerror(errno));
        rc = -1;
    }
    return rc;
}

static void load_signal(const struct opts *o, int sig)
{
    if (o->load_pid > 0 && kill(o->load_pid, sig) != 0)
        fprintf(stderr, "comb: cannot signal load process %d: %s\n", (int)o->load_pid,
                strerror(errno));
}

/* The worker's own CPU time and involuntary context switches over one run:
 * wall - cpu is the time the worker was not running (taken by another
 * thread or process on its core), nivcsw how often it was preempted. */
struct cpuuse {
    double wall, cpu;
    long nivcsw;
};

static void cpu_mark(struct cpuuse *m)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    m->nivcsw = ru.ru_nivcsw;
    m->wall = MPI_Wtime(); /* wall first: the CPU interval lies inside the wall interval */
    m->cpu = thread_cpu();
}

static void cpu_since(const struct cpuuse *m, struct cpuuse *u)
{
    double cpu = thread_cpu();
    double wall = MPI_Wtime();
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    u->wall = wall - m->wall;
    u->cpu = cpu - m->cpu;
    u->nivcsw = ru.ru_nivcsw - m->nivcsw;
}

/* ---------------------------------------------------------------- poll --- */
struct pollres {
    double t_msg, bw;
    struct cpuuse use;
};

/* Send side of one process: 2*q send slots, so that answering a message
 * never has to wait for an earlier send to complete (the worker must not
 * block outside the MPI calls it makes to poll). */
struct sender {
    MPI_Request req[2048];
    int idx[2048];
    int nslots;
    long pending;   /* replies owed but not started yet */
    long nsent;
    char *bufs;
    size_t size;
    int peer;
    int rank; /* 0: the worker, whose waits are the MPI's own */
};

/* Start as many owed replies as there are free slots; with `block`, wait
 * for slots until every owed reply has been started. */
static void sender_flush(struct sender *s, int block)
{
    while (s->pending > 0) {
        int slot = -1;
        for (int k = 0; k < s->nslots; k++)
            if (s->req[k] == MPI_REQUEST_NULL) { slot = k; break; }
        if (slot < 0) {
            int n = 0;
            if (block) {
                waitany_as(s->rank, s->nslots, s->req, &slot);
            } else {
                MPI_Testsome(s->nslots, s->req, &n, s->idx, statuses_ignore);
                if (n == MPI_UNDEFINED || n == 0)
                    return;
                slot = s->idx[0];
            }
        }
        MPI_Isend(s->bufs + (size_t)slot * s->size, (int)s->size, MPI_CHAR, s->peer, TAG_DATA,
                  MPI_COMM_WORLD, &s->req[slot]);
        s->pending--;
        s->nsent++;
    }
}

/* One messaging run of the polling method.  The worker times `chunks` x
 * work(interval), testing its receives after each chunk. */
static void poll_run(const struct opts *o, int rank, size_t size, uint64_t interval,
                     uint64_t chunks, char *sbufs, char *rbufs, struct pollres *res)
{
    int q = o->q;
    MPI_Request rreq[1025];
    int idx[1024];
    long nrecv = 0;
    static struct sender snd;
    snd.nslots = 2 * q;
    snd.pending = 0;
    snd.nsent = 0;
    snd.bufs = sbufs;
    snd.size = size;
    snd.peer = 1 - rank;
    snd.rank = rank;
    for (int k = 0; k < snd.nslots; k++)
        snd.req[k] = MPI_REQUEST_NULL;
    for (int i = 0; i < q; i++)
        MPI_Irecv(rbufs + (size_t)i * size, (int)size, MPI_CHAR, 1 - rank, TAG_DATA,
                  MPI_COMM_WORLD, &rreq[i]);
    MPI_Barrier(MPI_COMM_WORLD);   /* all receives posted before any send */

    if (rank == 0) {
        load_signal(o, SIGUSR1);
        struct cpuuse mark;
        cpu_mark(&mark);
        for (uint64_t c = 0; c < chunks; c++) {
            work(interval);
            int n = 0;
            MPI_Testsome(q, rreq, &n, idx, statuses_ignore);
            if (n != MPI_UNDEFINED) {
                for (int k = 0; k < n; k++) {
                    int i = idx[k];
                    nrecv++;
                    MPI_Irecv(rbufs + (size_t)i * size, (int)size, MPI_CHAR, 1, TAG_DATA,
                              MPI_COMM_WORLD, &rreq[i]);
                }
                snd.pending += n;
            }
            if (snd.pending)
                sender_flush(&snd, 0);
        }
        cpu_since(&mark, &res->use);
        load_signal(o, SIGUSR2);
        res->t_msg = res->use.wall;
        res->bw = (double)nrecv * (double)size / 1e6 / res->t_msg;
        /* shutdown: start and complete the owed replies, tell the support how
         * many were sent, then drain until everything it sent has arrived. */
        sender_flush(&snd, 1);
        MPI_Waitall(snd.nslots, snd.req, statuses_ignore);
        MPI_Send(&snd.nsent, 1, MPI_LONG, 1, TAG_STOP, MPI_COMM_WORLD);
        long support_sent = -1;
        MPI_Irecv(&support_sent, 1, MPI_LONG, 1, TAG_DONE, MPI_COMM_WORLD, &rreq[q]);
        int done = 0;
        while (!done || nrecv < support_sent) {
            int i;
            MPI_Waitany(q + 1, rreq, &i, MPI_STATUS_IGNORE);
            if (i == MPI_UNDEFINED)
                break;
            if (i == q)
                done = 1;
            else
                nrecv++;
        }
    } else {
        /* support: send Q messages, answer each arrival until STOP */
        snd.pending = q;
        sender_flush(&snd, 1);
        long worker_sent = -1;
        MPI_Irecv(&worker_sent, 1, MPI_LONG, 0, TAG_STOP, MPI_COMM_WORLD, &rreq[q]);
        int stopped = 0;
        while (!stopped || nrecv < worker_sent) {
            int i;
            support_waitany(q + 1, rreq, &i);
            if (i == MPI_UNDEFINED)
                break;
            if (i == q) {
                stopped = 1;
                continue;
            }
            nrecv++;
            if (stopped)
                continue;
            MPI_Irecv(rbufs + (size_t)i * size, (int)size, MPI_CHAR, 0, TAG_DATA,
                      MPI_COMM_WORLD, &rreq[i]);
            snd.pending++;
            sender_flush(&snd, 0);
            if (snd.pending)   /* all slots busy: the worker is slow, wait */
                sender_flush(&snd, 1);
        }
        support_waitall(snd.nslots, snd.req);
        MPI_Send(&snd.nsent, 1, MPI_LONG, 0, TAG_DONE, MPI_COMM_WORLD);
    }
    /* nothing is in flight any more: cancel the remaining receives */
    for (int i = 0; i < q; i++)
        if (rreq[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&rreq[i]);
            MPI_Wait(&rreq[i], MPI_STATUS_IGNORE);
        }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ----------------------------------------------------------------- pww --- */
struct pwwres {
    double post, work, wait, total;   /* seconds per iteration */
    struct cpuuse use;                /* the worker's, over the whole run */
};

static void pww_run(const struct opts *o, int rank, size_t size, uint64_t interval, int iters,
                    char *sbufs, char *rbufs, struct pwwres *res)
{
    int q = o->q, peer = 1 - rank;
    MPI_Request req[2048];
    double post = 0, wk = 0, wt = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        load_signal(o, SIGUSR1);
    struct cpuuse mark;
    cpu_mark(&mark);
    for (int it = 0; it < iters; it++) {
        double ta = MPI_Wtime();
        for (int i = 0; i < q; i++)
            MPI_Irecv(rbufs + (size_t)i * size, (int)size, MPI_CHAR, peer, TAG_DATA,
                      MPI_COMM_WORLD, &req[i]);
        for (int i = 0; i < q; i++)
            MPI_Isend(sbufs + (size_t)i * size, (int)size, MPI_CHAR, peer, TAG_DATA,
                      MPI_COMM_WORLD, &req[q + i]);
        double tb = MPI_Wtime();
        if (rank == 0)
            work(interval);
        double tc = MPI_Wtime();
        waitall_as(rank, 2 * q, req);
        double td = MPI_Wtime();
        post += tb - ta;
        wk += tc - tb;
        wt += td - tc;
    }
    cpu_since(&mark, &res->use);
    if (rank == 0)
        load_signal(o, SIGUSR2);
    res->post = post / iters;
    res->work = wk / iters;
    res->wait = wt / iters;
    res->total = res->use.wall / iters;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* --------------------------------------------------------------- point --- */
/* A dry run is undisturbed when the worker was on its CPU for at least this
 * share of its wall time (the rest was taken by another task on its core). */
#define DRY_MIN_CPU_SHARE 0.98

enum { PT_OK, PT_DRY_DISTURBED, PT_OVER100 };

/* One measured point: `reps` messaging runs, each between two dry runs
 * (A B A B ... A), so that a drift of the machine hits both; availability of
 * messaging run r = mean(dry r, dry r + 1) / messaging run r. */
struct point {
    int reps;
    double avail[MAX_REPS], bw[MAX_REPS];
    double msg_cpu[MAX_REPS];    /* worker CPU time / wall time, messaging run */
    double msg_nivcsw[MAX_REPS]; /* worker involuntary switches, messaging run */
    double post[MAX_REPS], wk[MAX_REPS], wt[MAX_REPS], dry_it[MAX_REPS];
    double dry[MAX_REPS + 1];    /* accepted dry runs (wall, s) */
    int dry_redone;              /* dry runs measured again because disturbed */
    int dry_disturbed;           /* dry runs still disturbed after every try */
    int rep_redone;              /* repetitions measured again (above 100 %) */
    int remeasured;              /* whole point measured again (a repetition > 100 %) */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct spread {
    double median, min, max;
};

static struct spread spread_of(const double *v, int n)
{
    double s[MAX_REPS + 1];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    struct spread r = { n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0], s[n - 1] };
    return r;
}

/* The dry run: the same work without messaging (worker only), tried again
 * while disturbed.  Returns its duration; if every try was disturbed, the
 * shortest CPU time of the tries (the work's own duration) and it counts. */
static double dry_undisturbed(const struct opts *o, uint64_t interval, uint64_t n,
                              struct point *p)
{
    double best_cpu = INFINITY;
    int tries = o->dry_runs < 1 ? 1 : o->dry_runs;
    for (int t = 0; t < tries; t++) {
        struct cpuuse m, u;
        cpu_mark(&m);
        for (uint64_t c = 0; c < n; c++)
            work(interval);
        cpu_since(&m, &u);
        if (getenv("COMB_DEBUG"))
            fprintf(stderr, "comb: dry: wall %.6f cpu %.6f nivcsw %ld\n", u.wall, u.cpu,
                    u.nivcsw);
        if (u.cpu >= DRY_MIN_CPU_SHARE * u.wall)
            return u.wall;
        if (u.cpu < best_cpu)
            best_cpu = u.cpu;
        if (t + 1 < tries)
            p->dry_redone++;
    }
    p->dry_disturbed++;
    return best_cpu;
}

/* A repetition whose availability is above 100 % is a measurement failure
 * (the messaging run cannot do the same work faster than the dry runs around
 * it): it is measured again, bracketed by the latest dry run and a new one,
 * at most this many times in all. */
#define REP_TRIES 3

/* One messaging run of repetition r (rank 0 also measures the dry run after
 * it and computes the figures); every rank returns rank 0's verdict whether
 * the repetition must be measured again. */
/* A dry run on rank 0 while the support rank spins on its CPU, as it does
 * while messaging: the worker's core then has the same neighbour in the dry
 * and the messaging runs.  (On this machine the two CPUs are virtual CPUs
 * that share a host core's resources; with the support rank blocked in a
 * barrier during the dry run, whatever else ran on its CPU slowed the dry run
 * by up to 2x and availabilities came out at 150-230 %.)  The support rank
 * polls a receive with MPI_Test, which returns at once in every MPI, so it
 * stays on its CPU even where the MPI library would block in a wait. */
static double dry_with_support_spinning(const struct opts *o, int rank, uint64_t interval,
                                        uint64_t n, struct point *p)
{
    char token = 0;
    if (rank == 0) {
        double d = dry_undisturbed(o, interval, n, p);
        MPI_Send(&token, 1, MPI_CHAR, 1, TAG_DRY, MPI_COMM_WORLD);
        return d;
    }
    MPI_Request rq;
    int done = 0;
    MPI_Irecv(&token, 1, MPI_CHAR, 0, TAG_DRY, MPI_COMM_WORLD, &rq);
    while (!done)
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    return 0;
}

static int measure_rep(const struct opts *o, int rank, size_t size, uint64_t interval,
                       uint64_t chunks, int iters, char *sbufs, char *rbufs, struct point *p,
                       int r, int last_try)
{
    uint64_t n = o->pww ? (uint64_t)iters : chunks;
    MPI_Barrier(MPI_COMM_WORLD);
    struct cpuuse use;
    double bw;
    if (o->pww) {
        struct pwwres pr;
        pww_run(o, rank, size, interval, iters, sbufs, rbufs, &pr);
        use = pr.use;
        bw = (double)size * o->q / 1e6 / pr.total;
        p->post[r] = pr.post * 1e6;
        p->wk[r] = pr.work * 1e6;
        p->wt[r] = pr.wait * 1e6;
    } else {
        struct pollres res;
        poll_run(o, rank, size, interval, chunks, sbufs, rbufs, &res);
        use = res.use;
        bw = res.bw;
    }
    int again = 0;
    double dry_after = dry_with_support_spinning(o, rank, interval, n, p);
    if (rank == 0) {
        p->dry[r + 1] = dry_after;
        double ref = (p->dry[r] + p->dry[r + 1]) / 2;
        p->avail[r] = ref / use.wall * 100.0;
        p->dry_it[r] = ref / (double)n * 1e6;
        p->bw[r] = bw;
        p->msg_cpu[r] = use.wall > 0 ? use.cpu / use.wall : 0;
        p->msg_nivcsw[r] = (double)use.nivcsw;
        if (getenv("COMB_DEBUG"))
            fprintf(stderr, "comb: msg: wall %.6f cpu %.6f nivcsw %ld avail %.2f\n", use.wall,
                    use.cpu, use.nivcsw, p->avail[r]);
        if (p->avail[r] > 100.0 && !last_try) {
            again = 1;
            p->rep_redone++;
            p->dry[r] = p->dry[r + 1]; /* the next try starts after this dry run */
        }
    }
    MPI_Bcast(&again, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return again;
}

static void measure_point(const struct opts *o, int rank, size_t size, uint64_t interval,
                          uint64_t chunks, int iters, char *sbufs, char *rbufs, struct point *p)
{
    int remeasured = p->remeasured;
    memset(p, 0, sizeof *p);
    p->remeasured = remeasured;
    p->reps = o->reps;
    uint64_t n = o->pww ? (uint64_t)iters : chunks;
    p->dry[0] = dry_with_support_spinning(o, rank, interval, n, p);
    for (int r = 0; r < o->reps; r++)
        for (int t = 0; t < REP_TRIES; t++)
            if (!measure_rep(o, rank, size, interval, chunks, iters, sbufs, rbufs, p, r,
                             t + 1 == REP_TRIES))
                break;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Over 100 % if any repetition still is after its tries: such a point is not
 * a result, whatever its median. */
static int point_status(const struct point *p)
{
    if (spread_of(p->avail, p->reps).max > 100.0)
        return PT_OVER100;
    return p->dry_disturbed ? PT_DRY_DISTURBED : PT_OK;
}

/* One row: medians over the repetitions; with --csv also their spread, the
 * worker's CPU share and involuntary switches while messaging and the
 * point's status.  A median availability above 100 % is not a result: in
 * text mode the row is printed as a comment, in CSV the availability is
 * left empty and the status says why. */
static void print_point(const struct opts *o, size_t size, double iv, uint64_t interval,
                        int iters, const struct point *p, int status)
{
    (void)iters;
    struct spread av = spread_of(p->avail, p->reps), bw = spread_of(p->bw, p->reps);
    const char *sep = o->csv ? "," : " ";
    char ivs[64], avs[32];
    if (o->unit_us)
        snprintf(ivs, sizeof ivs, "%.3f", iv);
    else
        snprintf(ivs, sizeof ivs, "%llu", (unsigned long long)interval);
    snprintf(avs, sizeof avs, "%.2f", av.median);
    if (status == PT_OVER100) {
        if (!o->csv)
            printf("# not published: ");
        if (o->csv)
            avs[0] = 0;
    }
    printf("%zu%s%s%s%.2f%s%s", size, sep, ivs, sep, bw.median, sep,
           status == PT_OVER100 && !o->csv ? "over-100" : avs);
    if (o->pww)
        printf("%s%.3f%s%.3f%s%.3f%s%.3f", sep, spread_of(p->post, p->reps).median, sep,
               spread_of(p->wk, p->reps).median, sep, spread_of(p->wt, p->reps).median, sep,
               spread_of(p->dry_it, p->reps).median);
    if (o->csv) {
        static const char *names[] = { "ok", "dry-disturbed", "over-100" };
        printf(",%d,%.2f,%.2f,%.2f,%.2f,%d,%d,%d,%d,%.4f,%.1f,%s", p->reps, av.min, av.max, bw.min,
               bw.max, p->dry_redone, p->dry_disturbed, p->rep_redone, p->remeasured,
               spread_of(p->msg_cpu, p->reps).median, spread_of(p->msg_nivcsw, p->reps).median,
               names[status]);
    } else if (status == PT_OVER100) {
        printf(" (median %.2f %%, range %.2f-%.2f: a repetition above 100 %% after its tries; dry and messaging runs measured under "
               "different conditions)", av.median, av.min, av.max);
    }
    printf("\n");
    fflush(stdout);
}

/* ---------------------------------------------------------------- main --- */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    struct opts o;
    int r = parse_args(argc, argv, &o);
    if (r != 0) {
        MPI_Finalize();
        return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
    }
    if (np != 2) {
        if (rank == 0)
            fprintf(stderr, "comb: this test requires exactly two processes "
                            "(worker and support)\n");
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    default_cpus(&o);
    if (o.pin) {
        int cpu = rank == 0 ? o.cpu_worker : o.cpu_support;
        if (pin_to(cpu) != 0 && rank == 0)
            fprintf(stderr, "comb: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
    }
    if (o.nice_set && rank == 0 && raise_priority(o.nice) != 0)
        o.nice_set = 0;
    int cpu_now = sched_getcpu();
    int cpus[2];
    MPI_Gather(&cpu_now, 1, MPI_INT, cpus, 1, MPI_INT, 0, MPI_COMM_WORLD);

    size_t maxsize = 0;
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > maxsize)
            maxsize = o.sizes[i];
    size_t bytes = maxsize * (size_t)o.q;
    char *sbufs = NULL, *rbufs = NULL;
    long pg = sysconf(_SC_PAGESIZE);
    if (posix_memalign((void **)&sbufs, (size_t)pg, 2 * bytes) ||
        posix_memalign((void **)&rbufs, (size_t)pg, bytes)) {
        fprintf(stderr, "comb: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbufs, 'c', 2 * bytes);
    memset(rbufs, 0, bytes);

    double ipu = 0;   /* work-loop iterations per microsecond (worker) */
    if (rank == 0)
        ipu = o.ipu > 0 ? o.ipu : calibrate();
    MPI_Bcast(&ipu, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        const char *sep = o.csv ? "," : " ";
        printf("# COMB %s method (p3stack), MPI: %d processes\n",
               o.pww ? "post-work-wait" : "polling", np);
        printf("# worker rank 0 on CPU %d, support rank 1 on CPU %d%s", cpus[0], cpus[1],
               o.pin ? " (pinned)" : " (not pinned)");
        if (o.nice_set)
            printf("; worker nice %d", o.nice);
        printf("\n");
        printf("# calibration: %.3f work-loop iterations per us%s; reps %d (dry and messaging "
               "runs alternated, median reported); dry-run tries %d; queue depth %d%s\n",
               ipu, o.ipu > 0 ? " (given)" : "", o.reps, o.dry_runs, o.q,
               o.load_pid > 0 ? "; injected load active during messaging" : "");
        printf("# interval unit: %s; bandwidth: bytes received by the worker / time, "
               "MB = 1e6 bytes\n", o.unit_us ? "us" : "work-loop iterations");
        if (o.csv)
            printf("size,interval,bandwidth_MBps,availability_pct%s,%s\n",
                   o.pww ? ",post_us,work_us,wait_us,work_dry_us" : "", CSV_SPREAD_COLUMNS);
        else
            printf("# size%sinterval%sbandwidth(MB/s)%savailability(%%)%s\n", sep, sep, sep,
                   o.pww ? " post(us) work(us) wait(us) work_dry(us)" : "");
        fflush(stdout);
    }

    for (int si = 0; si < o.nsizes; si++) {
        size_t size = o.sizes[si];
        for (double iv = o.min_iv; iv <= o.max_iv * (1 + 1e-9); iv *= o.step) {
            uint64_t interval = o.unit_us ? (uint64_t)llround(iv * ipu) : (uint64_t)llround(iv);
            if (interval == 0)
                interval = 1;
            uint64_t chunks = 1;
            int iters = o.iters;
            if (!o.pww) {
                chunks = (uint64_t)(o.work_us * ipu / (double)interval);
                if (chunks < 1)
                    chunks = 1;
            } else if (o.run_us > 0) {
                /* long work intervals: fewer iterations, at least 3 */
                double fit = o.run_us * ipu / (double)interval;
                if (fit < iters)
                    iters = fit < 3 ? 3 : (int)fit;
            }
            struct point pt;
            int status = PT_OK;
            /* A point whose median availability is above 100 % was measured
             * under different conditions dry and messaging: measure it again
             * (twice at most) rather than publish it. */
            for (int attempt = 0; attempt < 3; attempt++) {
                measure_point(&o, rank, size, interval, chunks, iters, sbufs, rbufs, &pt);
                if (rank == 0)
                    status = point_status(&pt);
                MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
                if (status != PT_OVER100)
                    break;
                if (rank == 0)
                    pt.remeasured++;
            }
            if (rank == 0)
                print_point(&o, size, iv, interval, iters, &pt, status);
        }
    }
    free(sbufs);
    free(rbufs);
    MPI_Finalize();
    return EXIT_SUCCESS;
}
