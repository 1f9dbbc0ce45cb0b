/* comb_load: a controllable background load for validating COMB.
 *
 *   comb_load --cpu N --share F [--period-ms P] [--wall] [--pidfile FILE] [--active]
 *             [--nice N]   (use the same nice level as comb's worker)
 *
 * Pins itself to CPU N (SCHED_OTHER, nice 0) and, while *active*, steals a
 * known share F of that CPU: in every period of P ms (default 20) it spins
 * until it has consumed F*P ms of its own CPU time (CLOCK_THREAD_CPUTIME_ID),
 * then sleeps until the period ends.  Because the budget is CPU time, a
 * process competing for the same CPU keeps exactly 1 - F of it, whatever
 * the scheduler's fairness details, as long as 2F <= 1 (the load can get its
 * budget at a fair 50 % share within the period).  With --wall the load
 * instead spins F*P ms of wall-clock time; under CFS fair sharing it then
 * gets about half the CPU while spinning, so a competitor keeps about
 * 1 - F/2.
 *
 * SIGUSR1 activates, SIGUSR2 deactivates, SIGTERM/SIGINT exits.  Starts
 * inactive unless --active.  Writes its pid to --pidfile once the signal
 * handlers are installed.  Not an MPI program.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "p3num.h"

static volatile sig_atomic_t active, quit;

static void on_signal(int sig)
{
    if (sig == SIGUSR1) active = 1;
    else if (sig == SIGUSR2) active = 0;
    else quit = 1;
}

static double clk(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        if (quit || !active)
            return;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "cpu", required_argument, 0, 'c' },
        { "share", required_argument, 0, 's' },
        { "period-ms", required_argument, 0, 'p' },
        { "wall", no_argument, 0, 'w' },
        { "pidfile", required_argument, 0, 'f' },
        { "active", no_argument, 0, 'a' },
        { "nice", required_argument, 0, 'n' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    int cpu = -1, wall = 0, c;
    double share = 0.25, period = 0.020;
    const char *pidfile = NULL;
    while ((c = getopt_long(argc, argv, "c:s:p:wf:an:h", lo, NULL)) != -1) {
        switch (c) {
        case 'c': cpu = (int)p3num_arg_i64("comb_load", "--cpu", optarg, -1, CPU_SETSIZE - 1, 0); break;
        case 's': share = p3num_arg_dbl("comb_load", "--share", optarg, 0, 1); break;
        case 'p': period = p3num_arg_dbl("comb_load", "--period-ms", optarg, 0, 1e6) / 1000.0; break;
        case 'w': wall = 1; break;
        case 'f': pidfile = optarg; break;
        case 'a': active = 1; break;
        case 'n': {
            /* own session/autogroup at the given nice, as comb --nice does */
            int n = (int)p3num_arg_i64("comb_load", "--nice", optarg, -20, 19, 0);
            FILE *f;
            if (setsid() < 0 && errno != EPERM)
                perror("comb_load: setsid (continuing)");
            if ((f = fopen("/proc/self/autogroup", "w")) != NULL) {
                fprintf(f, "%d\n", n);
                if (fclose(f) != 0)
                    perror("comb_load: autogroup nice (continuing)");
            }
            if (setpriority(PRIO_PROCESS, 0, n) != 0)
                perror("comb_load: setpriority (continuing)");
            break;
        }
        case 'h':
            printf("Usage: comb_load --cpu N --share F [--period-ms P] [--wall] "
                   "[--pidfile FILE] [--active] [--nice N]\n");
            return 0;
        default:
            return 2;
        }
    }
    if (!(share > 0 && share < 1) || !(period > 0)) {
        fprintf(stderr, "comb_load: --share must be in (0,1), --period-ms > 0\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("comb_load: sched_setaffinity");
            return 1;
        }
    }
    if (pidfile) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 ||
            rename(tmp, pidfile) != 0) {
            perror("comb_load: pidfile");
            return 1;
        }
    }
    sigset_t none;
    sigemptyset(&none);
    while (!quit) {
        if (!active) {
            sigsuspend(&none);
            continue;
        }
        double start = clk(CLOCK_MONOTONIC);
        double cpu0 = clk(CLOCK_THREAD_CPUTIME_ID);
        double budget = share * period;
        while (active && !quit) {
            if (wall) {
                if (clk(CLOCK_MONOTONIC) - start >= budget) break;
            } else {
                if (clk(CLOCK_THREAD_CPUTIME_ID) - cpu0 >= budget) break;
                if (clk(CLOCK_MONOTONIC) - start >= period) break;
            }
        }
        if (active && !quit)
            sleep_until(start + period);
    }
    return 0;
}
