/* commtest / commtest_prepost: SWAP and SENDRECV over the 21 COMMTEST
 * point-to-point protocols (p3stack implementation, written from the public
 * description of P. Worley's COMMTEST; shared/reference/benchmarks.md §3).
 *
 * A fixed total volume is sent as 1, 2, 4, ... packets down to a minimum
 * packet length; the maximum time over processes and the derived bandwidth
 * are reported per packet size, for every selected protocol.
 *
 * Built twice: `commtest` (basic) and, with -DCOMMTEST_PREPOST,
 * `commtest_prepost`, the reorganised program that preposts the receive
 * of the next packet and completes the previous send late.
 *
 * Deadlock handling.  Some protocols deadlock for large packets (e.g. the
 * unsafe order-0 extensions "Send; Recv" above the eager limit, "Ssend;
 * Recv" always).  Before measuring a (protocol, packet size), one exchange
 * is *probed*: the same call sequence with every blocking call replaced by
 * its non-blocking twin plus a test loop bounded by the timeout (per
 * blocking step) (MPI defines
 * MPI_Send as MPI_Isend + MPI_Wait, etc., so a probe that completes proves
 * the blocking sequence completes too).  A probe that misses its deadline
 * is reported as "deadlock (timeout N s)"; its pending operations are then
 * cleaned up exactly (receives cancelled, unmatched sends drained with
 * counted receives on the probe's private communicator) and the run goes
 * on.  The measured run uses the real blocking calls; an alarm guards it as
 * a last resort (message + exit, mpiexec then ends the job).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG_DATA 1
#define TAG_HS   2
#define NPROTO0  12   /* order 0: 0..9 standard, 10..11 unsafe extensions */
#define NPROTO1  11   /* order 1: 0..10 */
#define POOL     16

enum flavor { F_SEND, F_BSEND, F_RSEND, F_SSEND, F_ISEND, F_IRSEND, F_ISSEND };

static const char *desc0[NPROTO0] = {
    "Bsend; Recv",
    "Isend; Recv; Wait",
    "Irecv; Send; Wait",
    "Irecv; Isend; Wait; Wait",
    "Irecv; Send(hs); Recv(hs); Rsend; Wait",
    "Irecv; Send(hs); Recv(hs); Irsend; Wait; Wait",
    "Sendrecv",
    "Issend; Recv; Wait",
    "Irecv; Ssend; Wait",
    "Irecv; Issend; Wait; Wait",
    "Send; Recv (unsafe extension: deadlocks above the eager limit)",
    "Ssend; Recv (unsafe extension: always deadlocks)",
};
static const char *desc1[NPROTO1][2] = {
    { "Send; Recv", "Recv; Send" },
    { "Isend; Recv; Wait", "Recv; Isend; Wait" },
    { "Irecv; Send; Wait", "Irecv; Wait; Send" },
    { "Irecv; Isend; Wait; Wait", "Irecv; Wait; Isend; Wait" },
    { "Irecv; Recv(hs); Rsend; Wait", "Irecv; Send(hs); Wait; Rsend" },
    { "Irecv; Recv(hs); Irsend; Wait; Wait", "Irecv; Send(hs); Wait; Irsend; Wait" },
    { "Recv(hs); Send; Recv", "Send(hs); Recv; Send" },
    { "Issend; Recv; Wait", "Recv; Issend; Wait" },
    { "Irecv; Ssend; Wait", "Irecv; Wait; Ssend" },
    { "Irecv; Issend; Wait; Wait", "Irecv; Wait; Issend; Wait" },
    { "Ssend; Recv", "Recv; Ssend" },
};

/* ------------------------------------------------------------ engine --- */
struct slot {
    MPI_Request req;
    int used, is_recv, peer;
};

struct eng {
    int probe, dead;
    double timeout;
    MPI_Comm data, hs;
    struct slot s[POOL];
    long *sent_to, *recvd_from;   /* probe accounting, per world rank */
};

static int e_alloc(struct eng *e)
{
    for (int i = 0; i < POOL; i++)
        if (!e->s[i].used) {
            e->s[i].used = 1;
            return i;
        }
    fprintf(stderr, "commtest: request pool exhausted\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
    return -1;
}

static void e_wait(struct eng *e, int h)
{
    if (h < 0)
        return;
    struct slot *s = &e->s[h];
    if (!e->probe) {
        MPI_Wait(&s->req, MPI_STATUS_IGNORE);
        s->used = 0;
        return;
    }
    if (e->dead)
        return;   /* leave it pending for the cleanup */
    int flag = 0;
    double deadline = MPI_Wtime() + e->timeout;   /* per blocking step */
    while (!flag) {
        MPI_Test(&s->req, &flag, MPI_STATUS_IGNORE);
        if (!flag && MPI_Wtime() > deadline) {
            e->dead = 1;
            return;
        }
    }
    if (s->is_recv)
        e->recvd_from[s->peer]++;
    s->used = 0;
}

static int e_isend(struct eng *e, enum flavor f, const void *buf, int n, int peer, int tag)
{
    if (e->probe && e->dead)
        return -1;
    int h = e_alloc(e);
    struct slot *s = &e->s[h];
    MPI_Comm c = tag == TAG_HS ? e->hs : e->data;
    s->is_recv = 0;
    s->peer = peer;
    switch (f) {
    case F_SEND: case F_ISEND: MPI_Isend(buf, n, MPI_BYTE, peer, tag, c, &s->req); break;
    case F_BSEND: MPI_Ibsend(buf, n, MPI_BYTE, peer, tag, c, &s->req); break;
    case F_RSEND: case F_IRSEND: MPI_Irsend(buf, n, MPI_BYTE, peer, tag, c, &s->req); break;
    case F_SSEND: case F_ISSEND: MPI_Issend(buf, n, MPI_BYTE, peer, tag, c, &s->req); break;
    }
    if (e->probe)
        e->sent_to[peer]++;
    return h;
}

static int e_irecv(struct eng *e, void *buf, int n, int peer, int tag)
{
    if (e->probe && e->dead)
        return -1;
    int h = e_alloc(e);
    struct slot *s = &e->s[h];
    s->is_recv = 1;
    s->peer = peer;
    MPI_Irecv(buf, n, MPI_BYTE, peer, tag, tag == TAG_HS ? e->hs : e->data, &s->req);
    return h;
}

/* blocking send: the real call, or its non-blocking twin + bounded wait */
static void e_send(struct eng *e, enum flavor f, const void *buf, int n, int peer, int tag)
{
    if (e->probe) {
        e_wait(e, e_isend(e, f, buf, n, peer, tag));
        return;
    }
    MPI_Comm c = tag == TAG_HS ? e->hs : e->data;
    switch (f) {
    case F_BSEND: MPI_Bsend(buf, n, MPI_BYTE, peer, tag, c); break;
    case F_RSEND: MPI_Rsend(buf, n, MPI_BYTE, peer, tag, c); break;
    case F_SSEND: MPI_Ssend(buf, n, MPI_BYTE, peer, tag, c); break;
    default: MPI_Send(buf, n, MPI_BYTE, peer, tag, c); break;
    }
}

static void e_recv(struct eng *e, void *buf, int n, int peer, int tag)
{
    if (e->probe) {
        e_wait(e, e_irecv(e, buf, n, peer, tag));
        return;
    }
    MPI_Recv(buf, n, MPI_BYTE, peer, tag, tag == TAG_HS ? e->hs : e->data, MPI_STATUS_IGNORE);
}

#ifndef COMMTEST_PREPOST
static void e_sendrecv(struct eng *e, const void *sb, void *rb, int n, int to, int from)
{
    if (e->probe) {
        int r = e_irecv(e, rb, n, from, TAG_DATA);
        int s = e_isend(e, F_SEND, sb, n, to, TAG_DATA);
        e_wait(e, r);
        e_wait(e, s);
        return;
    }
    MPI_Sendrecv(sb, n, MPI_BYTE, to, TAG_DATA, rb, n, MPI_BYTE, from, TAG_DATA, e->data,
                 MPI_STATUS_IGNORE);
}
#endif

/* ------------------------------------------------------ the protocols --- */
struct role {
    int active, low, to, from;
};

static char hsbuf_s[4], hsbuf_r[4];

#ifndef COMMTEST_PREPOST
/* basic program: one packet with protocol (order, proto) */
static void packet_basic(struct eng *e, int order, int proto, const struct role *r,
                         const char *sb, char *rb, int n)
{
    int to = r->to, from = r->from, h1, h2;
    int ring = (to != from);
    if (order == 0) {
        switch (proto) {
        case 0: e_send(e, F_BSEND, sb, n, to, TAG_DATA); e_recv(e, rb, n, from, TAG_DATA); break;
        case 1:
            h1 = e_isend(e, F_ISEND, sb, n, to, TAG_DATA);
            e_recv(e, rb, n, from, TAG_DATA);
            e_wait(e, h1);
            break;
        case 2:
            h1 = e_irecv(e, rb, n, from, TAG_DATA);
            e_send(e, F_SEND, sb, n, to, TAG_DATA);
            e_wait(e, h1);
            break;
        case 3: case 9:
            h1 = e_irecv(e, rb, n, from, TAG_DATA);
            h2 = e_isend(e, proto == 3 ? F_ISEND : F_ISSEND, sb, n, to, TAG_DATA);
            e_wait(e, h1);
            e_wait(e, h2);
            break;
        case 4:
            h1 = e_irecv(e, rb, n, from, TAG_DATA);
            e_send(e, F_SEND, hsbuf_s, 0, from, TAG_HS);
            e_recv(e, hsbuf_r, 0, to, TAG_HS);
            e_send(e, F_RSEND, sb, n, to, TAG_DATA);
            e_wait(e, h1);
            break;
        case 5:
            h1 = e_irecv(e, rb, n, from, TAG_DATA);
            e_send(e, F_SEND, hsbuf_s, 0, from, TAG_HS);
            e_recv(e, hsbuf_r, 0, to, TAG_HS);
            h2 = e_isend(e, F_IRSEND, sb, n, to, TAG_DATA);
            e_wait(e, h1);
            e_wait(e, h2);
            break;
        case 6: e_sendrecv(e, sb, rb, n, to, from); break;
        case 7:
            h1 = e_isend(e, F_ISSEND, sb, n, to, TAG_DATA);
            e_recv(e, rb, n, from, TAG_DATA);
            e_wait(e, h1);
            break;
        case 8:
            h1 = e_irecv(e, rb, n, from, TAG_DATA);
            e_send(e, F_SSEND, sb, n, to, TAG_DATA);
            e_wait(e, h1);
            break;
        case 10: e_send(e, F_SEND, sb, n, to, TAG_DATA); e_recv(e, rb, n, from, TAG_DATA); break;
        case 11: e_send(e, F_SSEND, sb, n, to, TAG_DATA); e_recv(e, rb, n, from, TAG_DATA); break;
        }
        return;
    }
    /* order 1: the low process sends first */
    int L = r->low;
    switch (proto) {
    case 0: case 10: {
        enum flavor f = proto == 0 ? F_SEND : F_SSEND;
        if (L) { e_send(e, f, sb, n, to, TAG_DATA); e_recv(e, rb, n, from, TAG_DATA); }
        else { e_recv(e, rb, n, from, TAG_DATA); e_send(e, f, sb, n, to, TAG_DATA); }
        break;
    }
    case 1: case 7: {
        enum flavor f = proto == 1 ? F_ISEND : F_ISSEND;
        if (L) {
            h1 = e_isend(e, f, sb, n, to, TAG_DATA);
            e_recv(e, rb, n, from, TAG_DATA);
        } else {
            e_recv(e, rb, n, from, TAG_DATA);
            h1 = e_isend(e, f, sb, n, to, TAG_DATA);
        }
        e_wait(e, h1);
        break;
    }
    case 2: case 8: {
        enum flavor f = proto == 2 ? F_SEND : F_SSEND;
        h1 = e_irecv(e, rb, n, from, TAG_DATA);
        if (L) { e_send(e, f, sb, n, to, TAG_DATA); e_wait(e, h1); }
        else { e_wait(e, h1); e_send(e, f, sb, n, to, TAG_DATA); }
        break;
    }
    case 3: case 9: {
        enum flavor f = proto == 3 ? F_ISEND : F_ISSEND;
        h1 = e_irecv(e, rb, n, from, TAG_DATA);
        if (L) {
            h2 = e_isend(e, f, sb, n, to, TAG_DATA);
            e_wait(e, h1);
        } else {
            e_wait(e, h1);
            h2 = e_isend(e, f, sb, n, to, TAG_DATA);
        }
        e_wait(e, h2);
        break;
    }
    case 4: case 5: {
        h1 = e_irecv(e, rb, n, from, TAG_DATA);
        h2 = -1;
        if (L) {
            if (ring) e_send(e, F_SEND, hsbuf_s, 0, from, TAG_HS);
            e_recv(e, hsbuf_r, 0, to, TAG_HS);
            if (proto == 4) e_send(e, F_RSEND, sb, n, to, TAG_DATA);
            else h2 = e_isend(e, F_IRSEND, sb, n, to, TAG_DATA);
            e_wait(e, h1);
        } else {
            e_send(e, F_SEND, hsbuf_s, 0, from, TAG_HS);
            e_wait(e, h1);
            if (ring) e_recv(e, hsbuf_r, 0, to, TAG_HS);
            if (proto == 4) e_send(e, F_RSEND, sb, n, to, TAG_DATA);
            else h2 = e_isend(e, F_IRSEND, sb, n, to, TAG_DATA);
        }
        e_wait(e, h2);
        break;
    }
    case 6:
        if (L) {
            e_recv(e, hsbuf_r, 0, to, TAG_HS);
            e_send(e, F_SEND, sb, n, to, TAG_DATA);
            e_recv(e, rb, n, from, TAG_DATA);
        } else {
            e_send(e, F_SEND, hsbuf_s, 0, from, TAG_HS);
            e_recv(e, rb, n, from, TAG_DATA);
            e_send(e, F_SEND, sb, n, to, TAG_DATA);
        }
        break;
    }
}

#endif

#ifdef COMMTEST_PREPOST
/* send flavour of a protocol in the prepost program */
static enum flavor prepost_flavor(int order, int proto, int *ready)
{
    *ready = (proto == 4 || proto == 5);
    switch (proto) {
    case 0: return order == 0 ? F_BSEND : F_SEND;
    case 1: case 3: return F_ISEND;
    case 2: case 6: return F_SEND;
    case 4: return F_RSEND;
    case 5: return F_IRSEND;
    case 7: case 9: return F_ISSEND;
    case 8: return F_SSEND;
    case 10: return order == 0 ? F_SEND : F_SSEND;
    case 11: return F_SSEND;
    }
    return F_SEND;
}

/* One exchange of k packets of n bytes.  Basic: protocol per packet.
 * Prepost: receive j+1 preposted before packet j is handled; the previous
 * (non-blocking) send completed after the current receive.  The receive
 * of packet 0 is posted (and, for ready sends, announced) by the caller
 * before the synchronisation: see exchange_begin(). */
static int pre_h0 = -1;
#endif

static void exchange_begin(struct eng *e, int order, int proto, const struct role *r,
                           char *rbuf, int n)
{
#ifdef COMMTEST_PREPOST
    (void)order; (void)proto;
    pre_h0 = e_irecv(e, rbuf, n, r->from, TAG_DATA);
#else
    (void)e; (void)order; (void)proto; (void)r; (void)rbuf; (void)n;
#endif
}

static void exchange(struct eng *e, int order, int proto, const struct role *r,
                     const char *sbuf, char *rbuf, int n, int k)
{
#ifndef COMMTEST_PREPOST
    for (int j = 0; j < k; j++)
        packet_basic(e, order, proto, r, sbuf + (size_t)j * n, rbuf + (size_t)j * n, n);
#else
    int ready;
    enum flavor f = prepost_flavor(order, proto, &ready);
    int nonblocking = (f == F_ISEND || f == F_IRSEND || f == F_ISSEND);
    int hr = pre_h0, hs_prev = -1;
    int send_first = (order == 0 || r->low);
    for (int j = 0; j < k; j++) {
        int hnext = -1;
        if (j + 1 < k) {
            hnext = e_irecv(e, rbuf + (size_t)(j + 1) * n, n, r->from, TAG_DATA);
            if (ready)   /* announce the posted receive to the sender */
                e_send(e, F_SEND, hsbuf_s, 0, r->from, TAG_HS);
        }
        if (!send_first)
            e_wait(e, hr);
        if (ready && j > 0)
            e_recv(e, hsbuf_r, 0, r->to, TAG_HS);
        int hs = -1;
        if (nonblocking)
            hs = e_isend(e, f, sbuf + (size_t)j * n, n, r->to, TAG_DATA);
        else
            e_send(e, f, sbuf + (size_t)j * n, n, r->to, TAG_DATA);
        if (send_first)
            e_wait(e, hr);
        e_wait(e, hs_prev);   /* complete the previous send late */
        hs_prev = hs;
        hr = hnext;
    }
    e_wait(e, hs_prev);
#endif
}

/* --------------------------------------------------------------- main --- */
static volatile sig_atomic_t watchdog_secs;
static char watchdog_msg[256];

static void on_alarm(int sig)
{
    (void)sig;
    ssize_t w = write(2, watchdog_msg, strlen(watchdog_msg));
    (void)w;
    _exit(3);
}

struct opts {
    long total, minpkt;
    int iters;
    int test_swap, test_sendrecv;
    int node0;
    int dists[64], ndists, all_dists;
    double timeout;
    int sel[2][NPROTO0];
};

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
"Usage: mpiexec -n N %s [options]\n"
"  -s, --size BYTES        total message size per exchange (default 65536)\n"
"  -l, --min-packet BYTES  minimum packet length (default 64)\n"
"  -i, --iterations N      timed exchanges per packet size, 1-1000000000 (default 10)\n"
"  -p, --protocols LIST    O:P[,O:P...], O:* for a whole order, 'all' (default:\n"
"                          the 21 protocols, order 0: 0-9, order 1: 0-10),\n"
"                          'unsafe' adds the order-0 extensions 10 (Send; Recv)\n"
"                          and 11 (Ssend; Recv)\n"
"  -t, --test swap|sendrecv|both   SWAP (pairwise exchange) or SENDRECV (cycle\n"
"                          shift) (default swap)\n"
"  -d, --distance D[,D...]|all     partner distance(s) (default 1)\n"
"  -a, --all-pairs         every process takes part (default)\n"
"  -z, --node0             only node 0 and its partner(s) take part\n"
"  -T, --timeout SEC       deadlock deadline per blocking step (default 10)\n"
"Rows: order protocol distance packets packet_bytes time(us) bandwidth(MB/s);\n"
"time is the maximum over processes of one exchange of the total size;\n"
"bandwidth = total size / time (MB = 1e6 bytes).  A protocol that does not\n"
"complete prints 'deadlock (timeout N s)' instead of the figures.\n", prog);
}

static int parse_protocols(struct opts *o, const char *arg)
{
    char *copy = strdup(arg), *save = NULL;
    memset(o->sel, 0, sizeof o->sel);
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "all") || !strcmp(t, "unsafe")) {
            for (int p = 0; p < 10; p++) o->sel[0][p] = 1;
            for (int p = 0; p < NPROTO1; p++) o->sel[1][p] = 1;
            if (!strcmp(t, "unsafe")) o->sel[0][10] = o->sel[0][11] = 1;
            continue;
        }
        int ord, pr;
        char star;
        if (sscanf(t, "%d:%c", &ord, &star) == 2 && star == '*' && (ord == 0 || ord == 1)) {
            for (int p = 0; p < (ord ? NPROTO1 : 10); p++) o->sel[ord][p] = 1;
            continue;
        }
        if (sscanf(t, "%d:%d%c", &ord, &pr, &star) != 2 || ord < 0 || ord > 1 || pr < 0 ||
            pr >= (ord ? NPROTO1 : NPROTO0)) {
            free(copy);
            return -1;
        }
        o->sel[ord][pr] = 1;
    }
    free(copy);
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o, int np)
{
    static const struct option lo[] = {
        { "size", required_argument, 0, 's' }, { "min-packet", required_argument, 0, 'l' },
        { "iterations", required_argument, 0, 'i' }, { "protocols", required_argument, 0, 'p' },
        { "test", required_argument, 0, 't' }, { "distance", required_argument, 0, 'd' },
        { "all-pairs", no_argument, 0, 'a' }, { "node0", no_argument, 0, 'z' },
        { "timeout", required_argument, 0, 'T' }, { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    memset(o, 0, sizeof *o);
    o->total = 65536;
    o->minpkt = 64;
    o->iters = 10;
    o->test_swap = 1;
    o->dists[0] = 1;
    o->ndists = 1;
    o->timeout = 10;
    parse_protocols(o, "all");
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "s:l:i:p:t:d:azT:h", lo, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's': o->total = strtol(optarg, &end, 10); if (*end || o->total < 1) return -1; break;
        case 'l': o->minpkt = strtol(optarg, &end, 10); if (*end || o->minpkt < 1) return -1; break;
        case 'i': {
            /* range-check the long before narrowing: 4294967297 must not wrap to 1 */
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 1000000000L) return -1;
            o->iters = (int)v;
            break;
        }
        case 'p': if (parse_protocols(o, optarg)) return -1; break;
        case 't':
            if (!strcmp(optarg, "swap")) { o->test_swap = 1; o->test_sendrecv = 0; }
            else if (!strcmp(optarg, "sendrecv")) { o->test_swap = 0; o->test_sendrecv = 1; }
            else if (!strcmp(optarg, "both")) { o->test_swap = 1; o->test_sendrecv = 1; }
            else return -1;
            break;
        case 'd':
            if (!strcmp(optarg, "all")) {
                o->ndists = 0;
                for (int d = 1; d < np && d < 64; d++)
                    o->dists[o->ndists++] = d;
            } else {
                char *copy = strdup(optarg), *save = NULL;
                o->ndists = 0;
                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                    long d = strtol(t, &end, 10);
                    if (*end || d < 1 || d >= np || o->ndists == 64) { free(copy); return -1; }
                    o->dists[o->ndists++] = (int)d;
                }
                free(copy);
            }
            break;
        case 'a': o->node0 = 0; break;
        case 'z': o->node0 = 1; break;
        case 'T': o->timeout = strtod(optarg, &end); if (*end || !(o->timeout > 0)) return -1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    if (optind != argc || o->minpkt > o->total || o->total > (1L << 30) || o->ndists == 0)
        return -1;
    return 0;
}

static void role_for(struct role *r, int rank, int np, int d, int swap, int node0)
{
    memset(r, 0, sizeof *r);
    r->low = ((rank / d) % 2) == 0;
    if (node0) {
        if (rank == 0) { r->active = 1; r->to = r->from = d; r->low = 1; }
        else if (rank == d) { r->active = 1; r->to = r->from = 0; r->low = 0; }
        return;
    }
    if (swap) {
        int partner = r->low ? rank + d : rank - d;
        if (partner >= 0 && partner < np) {
            r->active = 1;
            r->to = r->from = partner;
        }
        return;
    }
    r->active = 1;
    r->to = (rank + d) % np;
    r->from = (rank - d + np) % np;
    /* position in its shift cycle (c, c+d, c+2d, ... mod np): even
     * positions are "low".  Odd cycles have one low-low neighbourhood, where
     * order-1 protocols can deadlock (reported as such). */
    int c, t = 0, first = rank;
    for (int x = (rank + d) % np; x != rank; x = (x + d) % np)
        if (x < first) first = x;
    for (c = first; c != rank; c = (c + d) % np)
        t++;
    r->low = (t % 2) == 0;
}

/* Probe one exchange; returns 1 when some process missed the deadline.
 * Collective over MPI_COMM_WORLD. */
static int probe(struct opts *o, int order, int proto, const struct role *r, char *sbuf,
                 char *rbuf, char *scratch, int n, int k, int np, double *t_probe)
{
    struct eng e;
    memset(&e, 0, sizeof e);
    e.probe = 1;
    MPI_Comm_dup(MPI_COMM_WORLD, &e.data);
    e.hs = e.data;
    e.sent_to = calloc((size_t)np, sizeof(long));
    e.recvd_from = calloc((size_t)np, sizeof(long));
    long *incoming = calloc((size_t)np, sizeof(long));
    if (!e.sent_to || !e.recvd_from || !incoming)
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (r->active)
        exchange_begin(&e, order, proto, r, rbuf, n);
    e.timeout = o->timeout;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (r->active)
        exchange(&e, order, proto, r, sbuf, rbuf, n, k);
    double res[2] = { e.dead, MPI_Wtime() - t0 }, all[2];
    MPI_Allreduce(res, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int dead_any = all[0] > 0;
    *t_probe = all[1];
    if (dead_any) {
        /* cancel pending receives (a receive that matched meanwhile counts) */
        for (int i = 0; i < POOL; i++) {
            struct slot *s = &e.s[i];
            if (!s->used || !s->is_recv)
                continue;
            MPI_Status st;
            int cancelled = 0;
            MPI_Cancel(&s->req);
            MPI_Wait(&s->req, &st);
            MPI_Test_cancelled(&st, &cancelled);
            if (!cancelled)
                e.recvd_from[s->peer]++;
            s->used = 0;
        }
        /* drain sends nobody received: counts are exact on this private comm */
        MPI_Alltoall(e.sent_to, 1, MPI_LONG, incoming, 1, MPI_LONG, MPI_COMM_WORLD);
        long ndrain = 0;
        for (int p = 0; p < np; p++)
            ndrain += incoming[p] - e.recvd_from[p];
        MPI_Request *dr = calloc((size_t)ndrain + POOL + 1, sizeof(MPI_Request));
        long nd = 0;
        for (int p = 0; p < np; p++)
            for (long m = 0; m < incoming[p] - e.recvd_from[p]; m++)
                MPI_Irecv(scratch, (int)o->total, MPI_BYTE, p, MPI_ANY_TAG, e.data, &dr[nd++]);
        for (int i = 0; i < POOL; i++)
            if (e.s[i].used) {
                dr[nd++] = e.s[i].req;
                e.s[i].used = 0;
            }
        for (long m = 0; m < nd; m++)
            MPI_Wait(&dr[m], MPI_STATUS_IGNORE);
        free(dr);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&e.data);
    free(e.sent_to);
    free(e.recvd_from);
    free(incoming);
    return dead_any;
}

static double measure(struct opts *o, struct eng *e, int order, int proto, const struct role *r,
                      char *sbuf, char *rbuf, int n, int k)
{
    double t = 0;
#ifdef COMMTEST_PREPOST
    /* per iteration: prepost; synchronise; time the packets */
    for (int it = 0; it < o->iters; it++) {
        if (r->active)
            exchange_begin(e, order, proto, r, rbuf, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (r->active)
            exchange(e, order, proto, r, sbuf, rbuf, n, k);
        t += MPI_Wtime() - t0;
    }
#else
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (r->active)
        for (int it = 0; it < o->iters; it++)
            exchange(e, order, proto, r, sbuf, rbuf, n, k);
    t = MPI_Wtime() - t0;
#endif
    if (!r->active)
        t = 0;
    double tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return tmax / o->iters;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    struct opts o;
    int rc = np >= 2 ? parse_args(argc, argv, &o, np) : 0;
    if (rc != 0) {
        if (rank == 0) {
            if (rc < 0) fprintf(stderr, "%s: invalid arguments\n", prog);
            usage(rc < 0 ? stderr : stdout, prog);
        }
        MPI_Finalize();
        return rc < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
    }
    if (np < 2) {
        if (rank == 0)
            fprintf(stderr, "%s: this test requires at least two processes\n", prog);
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    long kmax = o.total / o.minpkt;
    size_t bytes = (size_t)o.total + 64;
    char *sbuf = malloc(bytes), *rbuf = malloc(bytes), *scratch = malloc(bytes);
    /* Buffered sends: a rank can be one iteration ahead of its partner, and
     * MPICH reclaims buffer space lazily and first-fit, so two iterations'
     * worth fragment; four leaves room (2x failed over libfabric shm with
     * "Insufficient space in Bsend buffer" at 256 KiB packets). */
    long bszl = 4 * (o.total + (kmax + 4) * (long)MPI_BSEND_OVERHEAD) + 65536;
    int bsz = bszl > 0x7fff0000L ? 0x7fff0000 : (int)bszl;
    char *bsend = malloc((size_t)bsz);
    if (!sbuf || !rbuf || !scratch || !bsend)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(sbuf, 's', bytes);
    memset(rbuf, 0, bytes);
    MPI_Buffer_attach(bsend, bsz);

    struct eng e;
    memset(&e, 0, sizeof e);
    MPI_Comm_dup(MPI_COMM_WORLD, &e.data);
    MPI_Comm_dup(MPI_COMM_WORLD, &e.hs);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);

    for (int test = 0; test < 2; test++) {
        int swap = (test == 0);
        if ((swap && !o.test_swap) || (!swap && !o.test_sendrecv))
            continue;
        if (rank == 0) {
            printf("# COMMTEST (p3stack) %s, %s program, %d processes, %s\n",
                   swap ? "SWAP" : "SENDRECV",
#ifdef COMMTEST_PREPOST
                   "prepost",
#else
                   "basic",
#endif
                   np, o.node0 ? "node 0 and its partners" : "all pairs");
            printf("# total %ld bytes, minimum packet %ld bytes, %d iterations, deadlock "
                   "timeout %g s\n", o.total, o.minpkt, o.iters, o.timeout);
            printf("# time: max over processes of one exchange of the total size; "
                   "bandwidth = total / time, MB = 1e6 bytes\n");
            printf("# order protocol distance packets packet_bytes time(us) bandwidth(MB/s)\n");
            fflush(stdout);
        }
        for (int di = 0; di < o.ndists; di++) {
            int d = o.dists[di];
            struct role r;
            role_for(&r, rank, np, d, swap, o.node0);
            for (int order = 0; order < 2; order++)
                for (int proto = 0; proto < (order ? NPROTO1 : NPROTO0); proto++) {
                    if (!o.sel[order][proto])
                        continue;
                    if (rank == 0) {
                        if (order == 0)
                            printf("# protocol (0,%d): %s\n", proto, desc0[proto]);
                        else
                            printf("# protocol (1,%d): low: %s | high: %s\n", proto,
                                   desc1[proto][0], desc1[proto][1]);
                    }
                    for (long k = 1; k <= kmax; k *= 2) {
                        int n = (int)(o.total / k);
                        if (n < o.minpkt)
                            break;
                        double tp = 0;
                        int dead = probe(&o, order, proto, &r, sbuf, rbuf, scratch, n, (int)k, np,
                                         &tp);
                        if (dead) {
                            if (rank == 0) {
                                printf("%d %d %d %ld %d deadlock (timeout %g s)\n", order, proto,
                                       d, k, n, o.timeout);
                                fflush(stdout);
                            }
                            continue;
                        }
                        /* last-resort guard for the measured run: generous
                         * multiple of the probe's duration */
                        unsigned guard = (unsigned)(o.timeout * 6 + 60 + 20 * tp * o.iters);
                        snprintf(watchdog_msg, sizeof watchdog_msg,
                                 "%s: rank %d: protocol (%d,%d) packet %d bytes hung in the "
                                 "measured run after %u s although its probe completed; "
                                 "aborting\n", prog, rank, order, proto, n, guard);
                        alarm(guard);
                        double t = measure(&o, &e, order, proto, &r, sbuf, rbuf, n, (int)k);
                        alarm(0);
                        if (rank == 0) {
                            printf("%d %d %d %ld %d %.3f %.3f\n", order, proto, d, k, n, t * 1e6,
                                   (double)o.total / 1e6 / t);
                            fflush(stdout);
                        }
                    }
                }
        }
    }
    void *b;
    int bs;
    MPI_Buffer_detach(&b, &bs);
    MPI_Comm_free(&e.data);
    MPI_Comm_free(&e.hs);
    free(bsend);
    free(sbuf);
    free(rbuf);
    free(scratch);
    MPI_Finalize();
    return EXIT_SUCCESS;
}
