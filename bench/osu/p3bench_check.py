#!/usr/bin/env python3
"""Output checker for p3stack's MPI benchmarks (bench/osu, bench/commtest,
bench/comb).  Used by the automated tests.

  p3bench_check.py osu PROGRAM FILE [--min N] [--max N] [--full] [--hd]
                                    [--sync] [--rate 0|1] [--vary]
  p3bench_check.py commtest FILE [--protocols all|"o,p o,p ..."|none]
                                 [--deadlock "o,p ..."] [--maydeadlock "o,p ..."]
  p3bench_check.py comb FILE --mode poll|pww

OSU: checks the 3.6 output format exactly (header line, column header built
with printf("%-*s%*s\\n", 10, "# Size", 18, label), data rows with
printf("%-*d%*.*f\\n", 10, size, 18, 2, value)), the size sequence, and that
every figure is positive and finite.  Exit status 0 on success, 1 with a
message on the first error.
"""
import math
import re
import sys

PT2PT = {
    "osu_latency": ("OSU MPI Latency Test", "Latency (us)", 0),
    "osu_bw": ("OSU MPI Bandwidth Test", "Bandwidth (MB/s)", 1),
    "osu_bibw": ("OSU MPI Bi-Directional Bandwidth Test", "Bi-Bandwidth (MB/s)", 1),
    "osu_multi_lat": ("OSU MPI Multi Latency Test", "Latency (us)", 0),
    "osu_latency_mt": ("OSU MPI Multi-threaded Latency Test", "Latency (us)", 0),
    "osu_put_latency": ("OSU One Sided MPI_Put latency Test", "Latency (us)", 0),
    "osu_get_latency": ("OSU One Sided MPI_Get latency Test", "Latency (us)", 0),
    "osu_acc_latency": ("OSU MPI One Sided MPI_Accumulate Latency Test", "Latency (us)", 0),
    "osu_put_bw": ("OSU One Sided MPI_Put Bandwidth Test", "Bandwidth (MB/s)", 1),
    "osu_get_bw": ("OSU MPI One Sided MPI_Get Bandwidth Test", "Bandwidth (MB/s)", 1),
    "osu_put_bibw": ("OSU One Sided MPI_Put Bi-directional Bandwidth Test",
                     "Bi-Bandwidth (MB/s)", 1),
    "osu_passive_put_latency": ("OSU One Sided MPI_Put Passive latency Test", "Latency (us)", 0),
    "osu_passive_get_latency": ("OSU One Sided MPI_Get Passive latency Test", "Latency (us)", 0),
    "osu_passive_acc_latency": ("OSU MPI One Sided MPI_Accumulate Passive Latency Test",
                                "Latency (us)", 0),
    "osu_passive_put_bw": ("OSU One Sided MPI_Put Passive Bandwidth Test", "Bandwidth (MB/s)", 1),
    "osu_passive_get_bw": ("OSU One Sided MPI_Get Passive Bandwidth Test", "Bandwidth (MB/s)", 1),
}
COLL = {
    "osu_allgather": "Allgather", "osu_allgatherv": "Allgatherv", "osu_allreduce": "Allreduce",
    "osu_alltoall": "Alltoall", "osu_alltoallv": "Alltoallv", "osu_barrier": "Barrier",
    "osu_bcast": "Broadcast", "osu_gather": "Gather", "osu_gatherv": "Gatherv",
    "osu_reduce": "Reduce", "osu_reduce_scatter": "Reduce_scatter", "osu_scatter": "Scatter",
    "osu_scatterv": "Scatterv",
}
REDUCTIONS = ("osu_allreduce", "osu_reduce", "osu_reduce_scatter")


class CheckError(Exception):
    pass


def fail(msg):
    raise CheckError(msg)


def sizes(first, mx, step0=1):
    """first, then doubling; 0 is followed by step0 (4 for accumulate)."""
    s = first
    out = []
    while s <= mx:
        out.append(s)
        s = s * 2 if s else step0
    return out


# 3.6 headers that do not follow "OSU <name> Latency Test"
COLL_HEADERS = {
    "osu_alltoall": "OSU MPI All-to-All Personalized Exchange Latency Test",
    "osu_alltoallv": "OSU MPI All-to-Allv Personalized Exchange Latency Test",
}


def positive(v, what):
    if not math.isfinite(v) or v <= 0:
        fail("%s: value %r is not positive and finite" % (what, v))


def check_fixed(line, fmt, args, what):
    exp = fmt % args
    if line != exp:
        fail("%s: expected %r, got %r" % (what, exp, line))


def opt(argv, name, default=None):
    if name in argv:
        i = argv.index(name)
        return argv[i + 1]
    return default


def check_osu(argv):
    prog, path = argv[0], argv[1]
    rest = argv[2:]
    # "# p3stack ..." lines are ours, not 3.6's (the oversubscription note
    # of osu_util.c): the format check is of the rest
    lines = [ln for ln in open(path).read().split("\n") if not ln.startswith("# p3stack")]
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        fail("empty output")
    full = "--full" in rest
    i = 0

    def nxt(what):
        nonlocal i
        if i >= len(lines):
            fail("missing %s" % what)
        i += 1
        return lines[i - 1]

    if prog in COLL:
        bench = COLL_HEADERS.get(prog, "OSU %s Latency Test" % COLL[prog])
        check_fixed(nxt("header"), "# %s v3.6", (bench,), "header")
        if prog == "osu_barrier":
            hdr = "# Avg Latency(us)"
            if full:
                hdr += "%18s%18s%12s" % ("Min Latency(us)", "Max Latency(us)", "Iterations")
            check_fixed(nxt("column header"), "%s", (hdr,), "column header")
            row = nxt("data row")
            vals = row.split()
            if full:
                if len(vals) != 4:
                    fail("barrier row %r" % row)
                check_fixed(row, "%17.2f%18.2f%18.2f%12d",
                            (float(vals[0]), float(vals[1]), float(vals[2]), int(vals[3])), "row")
            else:
                check_fixed(row, "%17.2f", (float(vals[0]),), "row")
            for v in vals:
                positive(float(v), "barrier")
            if i != len(lines):
                fail("trailing lines: %r" % lines[i:])
            return
        hdr = "%-10s%18s" % ("# Size", "Avg Latency(us)")
        if full:
            hdr += "%18s%18s%12s" % ("Min Latency(us)", "Max Latency(us)", "Iterations")
        check_fixed(nxt("column header"), "%s", (hdr,), "column header")
        first = int(opt(rest, "--min", "4" if prog in REDUCTIONS else "1"))
        exp_sizes = sizes(first, int(opt(rest, "--max", str(1 << 20))))
        for s in exp_sizes:
            row = nxt("row for size %d" % s)
            vals = row.split()
            if full:
                if len(vals) != 5:
                    fail("row %r" % row)
                check_fixed(row, "%-10d%18.2f%18.2f%18.2f%12d",
                            (s, float(vals[1]), float(vals[2]), float(vals[3]), int(vals[4])),
                            "row")
                if not float(vals[2]) <= float(vals[1]) + 0.011 <= float(vals[3]) + 0.022:
                    fail("min <= avg <= max violated: %r" % row)
            else:
                check_fixed(row, "%-10d%18.2f", (s, float(vals[1])), "row")
            for v in vals[1:]:
                positive(float(v), "size %d" % s)
        if i != len(lines):
            fail("trailing lines: %r" % lines[i:])
        return

    if prog == "osu_mbw_mr":
        check_fixed(nxt("header"), "# %s v3.6", ("OSU MPI Multiple Bandwidth / Message Rate Test",),
                    "header")
        info = nxt("pairs line")
        vary = "--vary" in rest
        if vary:  # 3.6 -v: bandwidth table, then (with -r 1) the message-rate table
            if not re.fullmatch(r"# \[ pairs: \d+ \] \[ window size: varied \]", info):
                fail("pairs line %r" % info)
            wins = [8, 16, 32, 64, 128]
            whdr = "#      " + "".join("  %10d" % w for w in wins)
            exp = sizes(int(opt(rest, "--min", "1")), int(opt(rest, "--max", str(1 << 22))))
            for title in ("", "# Uni-directional Bandwidth (MB/sec)", "#", "# Message Rate Profile"):
                if title == "#":
                    check_fixed(nxt("blank line"), "%s", ("",), "blank line")
                    continue
                if title:
                    check_fixed(nxt("title"), "%s", (title,), "title")
                    check_fixed(nxt("window header"), "%s", (whdr,), "window header")
                    for s in exp:
                        row = nxt("row for size %d" % s)
                        vals = row.split()
                        check_fixed(row, "%-7d" + "  %10.2f" * len(wins),
                                    tuple([s] + [float(v) for v in vals[1:]]), "row")
                else:
                    check_fixed(nxt("blank line"), "%s", ("",), "blank line")
            return
        else:
            if not re.fullmatch(r"# \[ pairs: \d+ \] \[ window size: \d+ \]", info):
                fail("pairs line %r" % info)
            rate = opt(rest, "--rate", "1") == "1"
            if rate:
                check_fixed(nxt("column header"), "%-10s%18s%18s", ("# Size", "MB/s", "Messages/s"),
                            "column header")
            else:
                check_fixed(nxt("column header"), "%-10s%18s", ("# Size", "MB/s"), "column header")
        for s in sizes(int(opt(rest, "--min", "1")), int(opt(rest, "--max", str(1 << 22)))):
            row = nxt("row for size %d" % s)
            vals = row.split()
            fmt = "%-10d" + "%18.2f" * (len(vals) - 1)
            check_fixed(row, fmt, tuple([s] + [float(v) for v in vals[1:]]), "row")
            ncol = 9 if vary else (3 if opt(rest, "--rate", "1") == "1" else 2)
            if len(vals) != ncol:
                fail("row %r: %d columns, expected %d" % (row, len(vals), ncol))
            for v in vals[1:]:
                positive(float(v), "size %d" % s)
        if i != len(lines):
            fail("trailing lines: %r" % lines[i:])
        return

    if prog not in PT2PT:
        fail("unknown program %s" % prog)
    bench, label, first = PT2PT[prog]
    check_fixed(nxt("header"), "# %s v3.6", (bench,), "header")
    if "--hd" in rest:
        check_fixed(nxt("buffer line"), "%s",
                    ("# Send Buffer on HOST (H) and Receive Buffer on HOST (H)",), "buffer line")
    if "--sync" in rest:
        l = nxt("sync line")
        if not l.startswith("# Synchronization: MPI_Win_"):
            fail("sync line %r" % l)
    check_fixed(nxt("column header"), "%-10s%18s", ("# Size", label), "column header")
    acc = prog.endswith("acc_latency")  # counts of int: 0, 4, 8, ... bytes
    for s in sizes(int(opt(rest, "--min", str(first))), int(opt(rest, "--max", str(1 << 22))),
                   4 if acc else 1):
        if s == 0 and first == 1:
            continue
        row = nxt("row for size %d" % s)
        vals = row.split()
        if len(vals) != 2:
            fail("row %r" % row)
        check_fixed(row, "%-10d%18.2f", (s, float(vals[1])), "row")
        positive(float(vals[1]), "size %d" % s)
    if i != len(lines):
        fail("trailing lines: %r" % lines[i:])


def check_commtest(argv):
    path = argv[0]
    rest = argv[1:]
    want = opt(rest, "--protocols", "all")
    if want == "all":
        want = [(0, p) for p in range(10)] + [(1, p) for p in range(11)]
    elif want == "none":
        want = []
    else:
        want = [tuple(int(x) for x in t.split(",")) for t in want.split()]
    dead = [tuple(int(x) for x in t.split(",")) for t in opt(rest, "--deadlock", "").split()]
    may = [tuple(int(x) for x in t.split(",")) for t in opt(rest, "--maydeadlock", "").split()]
    seen = {}
    deadseen = set()
    for line in open(path):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        f = line.split(None, 5)
        if len(f) < 6:
            fail("commtest row %r" % line)
        key = (int(f[0]), int(f[1]))
        seen.setdefault(key, []).append(line)
        if f[5].startswith("deadlock"):
            if not re.fullmatch(r"deadlock \(timeout [0-9.]+ s\)", f[5]):
                fail("deadlock row %r" % line)
            if key not in dead and key not in may:
                fail("unexpected deadlock: %r" % line)
            deadseen.add(key)
            continue
        vals = f[2:5] + f[5].split()
        if len(vals) != 5 or any(not re.fullmatch(r"[0-9.e+]+", v) for v in vals):
            fail("commtest row %r" % line)
        for v in vals:
            positive(float(v), "commtest %r" % line)
    for k in want + dead + may:
        if k not in seen:
            fail("protocol (order %d, protocol %d) missing" % k)
    for k in dead:
        if k not in deadseen:
            fail("protocol (order %d, protocol %d) did not report its deadlock" % k)
    extra = set(seen) - set(want) - set(dead) - set(may)
    if extra:
        fail("unexpected protocols %r" % sorted(extra))


def check_comb(argv):
    path = argv[0]
    mode = opt(argv[1:], "--mode", "poll")
    ncol = 4 if mode == "poll" else 8
    rows = 0
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split()
        if len(f) != ncol:
            fail("comb row %r: %d columns, expected %d" % (line, len(f), ncol))
        vals = [float(x) for x in f]
        for k, v in enumerate(vals):
            if not math.isfinite(v) or v < 0 or (k in (0, 1, 2, 3) and v <= 0):
                fail("comb row %r: bad value" % line)
        # A disturbed dry run can push a single figure above 100 % on a busy
        # machine; the known-answer bounds are checked by comb-validate.sh.
        if vals[3] > 1000:
            fail("comb row %r: availability not plausible" % line)
        rows += 1
    if rows == 0:
        fail("no comb rows")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    kind = sys.argv[1]
    try:
        if kind == "osu":
            check_osu(sys.argv[2:])
        elif kind == "commtest":
            check_commtest(sys.argv[2:])
        elif kind == "comb":
            check_comb(sys.argv[2:])
        else:
            print(__doc__)
            return 2
    except (CheckError, ValueError, OSError, IndexError) as e:
        print("CHECK FAILED: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
