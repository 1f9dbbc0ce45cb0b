"""compare --agreement A B: do two runs of the comparison agree?

For every figure of the report's summary (summary_cols() in compare) and
every stack present in both results directories, the two runs agree when
their run-to-run ranges (min..max over the repetitions) overlap: the
difference between the two runs is then within the spread each of them
reported.  A figure measured once in either run has no spread to judge by;
it is listed with its difference, and counted apart.

Writes the table (Markdown) to stdout; exit status 0 when every figure that
has a spread in both runs agrees, 1 when some do not, 2 on bad input.
"""
import json
import os
import sys


def load(d):
    """{(stack, benchmark, x): row} of d/results.json, and its metadata."""
    path = os.path.join(d, "results.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"compare --agreement: {path}: {e}") from None
    rows = {}
    for r in meta.get("rows", []):
        rows.setdefault((r["stack"], r["benchmark"], r["x"]), r)
    return rows, meta


def spread_pct(r):
    """Half the min..max range over the median, in %."""
    v = r["value"]
    return 50.0 * (r["max"] - r["min"]) / abs(v) if v else 0.0


def verdict(a, b):
    """'agree', 'differ' or 'no spread' for two rows of one figure."""
    if int(a.get("reps", 1)) < 2 or int(b.get("reps", 1)) < 2:
        return "no spread"
    return "agree" if a["min"] <= b["max"] and b["min"] <= a["max"] else "differ"


def compare_rows(ra, rb, cols):
    """[(stack, title, row A, row B, verdict)] over the summary's figures."""
    out = []
    stacks = sorted({k[0] for k in ra} & {k[0] for k in rb})
    for bench, x, title in cols:
        for st in stacks:
            a, b = ra.get((st, bench, x)), rb.get((st, bench, x))
            if a is None or b is None:
                continue
            out.append((st, title, a, b, verdict(a, b)))
    return out


def fmt(r):
    v = r["value"]
    return f"{v:.4g} ±{spread_pct(r):.0f}% ({r.get('reps', 1)})"


def main(dir_a, dir_b, cols):
    ra, ma = load(dir_a)
    rb, mb = load(dir_b)
    res = compare_rows(ra, rb, cols)
    print(f"# Agreement of two comparison runs\n\nA: `{dir_a}` ({ma.get('date')}, commit {ma.get('commit')})  ")
    print(f"B: `{dir_b}` ({mb.get('date')}, commit {mb.get('commit')})\n")
    print("A figure agrees when the two runs' min..max ranges overlap. Each cell: median ±half range (runs).\n")
    print("| stack | figure | A | B | B/A | verdict |\n|---|---|---|---|---|---|")
    for st, title, a, b, v in res:
        ratio = b["value"] / a["value"] if a["value"] else float("nan")
        print(f"| {st} | {title} | {fmt(a)} | {fmt(b)} | {ratio:.3f} | {v} |")
    n = {k: sum(1 for r in res if r[4] == k) for k in ("agree", "differ", "no spread")}
    judged = n["agree"] + n["differ"]
    print(f"\n{n['agree']} of {judged} figures with a spread in both runs agree; {n['differ']} differ; "
          f"{n['no spread']} measured once in a run (not judged).")
    for st, title, a, b, v in res:
        if v == "differ":
            print(f"- differs: {st} {title}: A {a['min']:.4g}..{a['max']:.4g}, B {b['min']:.4g}..{b['max']:.4g}")
    if not res:
        print("compare --agreement: no summary figure in both runs", file=sys.stderr)
        return 2
    return 0 if n["differ"] == 0 else 1
