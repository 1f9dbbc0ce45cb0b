"""The comparison's reports: results.csv/json, report.md and report.html
(used by bench/compare/compare: finish and --replot)."""
import csv
import html
import json
import os
import re

import cmp_paper  # the paper reproduction section


# A figure of the probe that moved by more than this share between two
# probes, beyond both probes' own ranges, means the machine drifted.
DRIFT_SHARE = {"pingpong_ns": 0.5, "memcpy_GBps": 0.25}


def drift_warning(ctx):
    """None, or a sentence saying how the machine drifted during the run."""
    msgs = []
    for key, share in DRIFT_SHARE.items():
        pts = [(w, fg[key]) for w, fg, _ in ctx.probes if fg[key][0] > 0]
        pairs = [(p, q) for k, p in enumerate(pts) for q in pts[k + 1:]]  # before/after too
        for (w1, a), (w2, b) in pairs:
            lo, hi = min(a[0], b[0]), max(a[0], b[0])
            apart = a[2] < b[1] or b[2] < a[1]  # ranges do not overlap
            if apart and hi > lo * (1 + share):
                msgs.append(f"{key} {a[0]:.4g} ({w1}) -> {b[0]:.4g} ({w2})")
    return ("the machine drifted during this run: " + "; ".join(msgs) +
            ". Compare figures measured at different times with care.") if msgs else None


def pick(ctx, stack, bench, x):
    for r in ctx.rows:
        if r["stack"] == stack and r["benchmark"] == bench and r["x"] == x:
            return r
    return None


def with_spread(r):
    """'12.3 ±4%' (half the min-max range over the median, repeated
    figures), '12.3 (1 run)' otherwise."""
    v = r["value"]
    txt = f"{v:.3g}" if v < 1e5 else f"{v:.3e}"
    lo, hi, n = r.get("min"), r.get("max"), r.get("reps", 1)
    if n and n > 1 and lo is not None and hi is not None and v:
        return f"{txt} ±{50 * (hi - lo) / abs(v):.0f}% ({n} runs)"
    return f"{txt} (1 run)"


def summary_cols():
    """The summary's figures: (benchmark, x, column title)."""
    return [("osu_latency", 1, "lat 1 B (us)"), ("osu_latency", 8192, "lat 8 KiB (us)"),
            ("osu_bw", 1048576, "bw 1 MiB (MB/s)"), ("osu_bibw", 1048576, "bibw 1 MiB (MB/s)"),
            ("ptlbench-lat", 0, "ptl lat 0 B (us)"), ("ptlbench-lat", 8, "ptl lat 8 B (us)"),
            ("ptlbench-bw", 1048576, "ptl bw 1 MiB (MB/s)"), ("ptlbench-bw", 4194304, "ptl bw 4 MiB (MB/s)"),
            ("ptlbench-rate", 8, "ptl msgs/s"),
            ("fi_pingpong-lat", 1, "fi_pingpong lat 1 B (us)"),
            ("fi_pingpong-lat", 65536, "fi_pingpong lat 64 KiB (us)")]


def summary_table(ctx, stacks):
    cols = summary_cols()
    used = [c for c in cols if any(r["benchmark"] == c[0] for r in ctx.rows)]
    hdr = ["stack", "description"] + [c[2] for c in used]
    body = []
    for st in stacks:
        row = [st.name, st.desc]
        for b, x, _ in used:
            r = pick(ctx, st.name, b, x)
            row.append("" if r is None else with_spread(r))
        body.append(row)
    return hdr, body


def bed_note(ctx):
    """The links of the two-host bed, for the report's header ('' if unknown)."""
    mtu = getattr(ctx, "bed_mtu", None)
    if not mtu:
        return ""
    return (f"Raw-Ethernet stacks (ether, xdp, the emulated NICs' wire) run between two network-namespace "
            f"hosts joined by veth links and a bridge of MTU {mtu}; every stack in that bed (and ptlbench's "
            f"raw-UDP reference there) gets the same links. The udp and shared-memory stacks run on one host "
            f"(loopback, MTU 65536).")


def rounds_note(ctx):
    """How the runs were repeated, for the summary's heading."""
    took = f" The benchmark runs took {ctx.elapsed / 60:.1f} min." if ctx.elapsed else ""
    return (f"Every benchmark ran in {ctx.rounds} rounds over all the stacks in turn (every other round "
            f"in reverse order, so that a drift of the machine reaches every stack); COMB ran once per "
            f"stack, the stacks shared out over the rounds (so every figure's runs span the whole run), "
            f"each point alternating its own dry and messaging repetitions. A run that failed or timed out "
            f"was not repeated.{took}")


def write_reports(ctx, stacks, figs_done, figs_missing):
    os.makedirs(ctx.out, exist_ok=True)
    keys = ["stack", "kind", "nal", "progress", "benchmark", "params", "x", "x_name", "value", "unit",
            "host", "date", "commit"]
    extra = sorted({k for r in ctx.rows for k in r} - set(keys))
    with open(os.path.join(ctx.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys + extra)
        w.writeheader()
        for r in ctx.rows:  # a row's runs as "v1 v2 v3"
            w.writerow(dict(r, runs=" ".join(f"{v:g}" for v in r["runs"])) if r.get("runs") else r)
    meta = {"host": ctx.host, "date": ctx.date, "commit": ctx.commit, "quick": ctx.quick,
            "stacks": [{"name": s.name, "description": s.desc, "unavailable": s.unavailable} for s in stacks],
            "failures": [{"stack": a, "benchmark": b, "reason": c} for a, b, c in ctx.failures],
            "figures_missing": [{"figure": a, "reason": b} for a, b in figs_missing],
            "machine_probes": [{"when": w, "figures": fg, "failed_pingpong_samples": k}
                               for w, fg, k in ctx.probes],
            "drift_warning": drift_warning(ctx),
            "commtest_stopped": ctx.commtest_stops,
            "osu_fidelity": ctx.fidelity,
            "rounds": ctx.rounds, "elapsed_s": ctx.elapsed, "bed_mtu": getattr(ctx, "bed_mtu", None),
            "comb_not_published": [{"stack": a, "method": b, "size": c, "interval": d, "cause": e}
                                   for a, b, c, d, e in ctx.comb_flags],
            "comb_validation": ({"status": ctx.validation[0], "output": ctx.validation[1]}
                                if ctx.validation else None),
            "oversubscription": ctx.oversub,
            "paper_reproduction": cmp_paper.as_json(ctx.rows),
            "rows": ctx.rows}
    with open(os.path.join(ctx.out, "results.json"), "w") as f:
        json.dump(meta, f, indent=1)

    hdr, body = summary_table(ctx, stacks)
    drift = drift_warning(ctx)
    md = ["# p3stack stack comparison", "",
          f"host `{ctx.host}`, {ctx.date}, commit `{ctx.commit}`{' (quick run)' if ctx.quick else ''}", ""]
    if bed_note(ctx):
        md += [bed_note(ctx), ""]
    if drift:
        md += [f"**Warning: {drift}**", ""]
    md += ["## Machine state", "", "| probe | flag ping-pong one way (ns): median (min-max) | "
           "memcpy 8 MiB (GB/s): median (min-max) | failed ping-pong samples | load average (1 min) |",
           "|---|---|---|---|---|"]
    for when, fg, failed in ctx.probes:
        pp, mc = fg["pingpong_ns"], fg["memcpy_GBps"]
        la = fg.get("loadavg_1min", ("?",))[0]
        md.append(f"| {when} | {pp[0]:.4g} ({pp[1]:.4g}-{pp[2]:.4g}) | {mc[0]:.4g} ({mc[1]:.4g}-{mc[2]:.4g}) "
                  f"| {failed} | {la} |")
    if not ctx.probes:
        md.append("| (machine-probe not built) | | | |")
    md += ["", "## Summary", "",
           "Each figure with its spread: ±x% is half the range between the fastest and the slowest of "
           "its runs, relative to the median; '1 run' means the figure was measured once (no spread). "
           + rounds_note(ctx), "",
           "| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    md += ["| " + " | ".join(r) + " |" for r in body]
    md += cmp_paper.markdown(ctx.rows)
    if ctx.commtest_stops:
        md += ["", "### COMMTEST runs that did not finish", ""]
        md += [f"- `{c['stack']}`: {c['where']}: {c['cause']}" + (f". Whose: {c['reason']}" if c.get("reason") else "")
               for c in ctx.commtest_stops]
    if ctx.comb_flags:
        md += ["", "### COMB points not published", ""]
        md += [f"- `{a}` {b} {c} B, interval {d:g}: {e}" for a, b, c, d, e in ctx.comb_flags]
    md += ["", "## Oversubscription", ""]
    if ctx.oversub:
        md.append("Waits yielded or blocked instead of busy-polling (more ranks than CPUs, or set "
                  "explicitly; see p3rt/oversub.h) in these stacks' programs:")
        md += [f"- `{k}`: {v}" for k, v in sorted(ctx.oversub.items())]
    else:
        md.append("Not in effect in any run: every rank busy-polled (no more ranks than CPUs).")
    md += ["", "## Figures", ""]
    for fid, title, png, svg in figs_done:
        md += [f"### {fid}: {title}", "", f"![{title}](plots/{os.path.basename(png)})", ""]
    if ctx.fidelity:
        title, intro, fhdr, fbody, closing = fidelity_lines(ctx.fidelity)
        md += [f"## {title}", "", intro, ""]
        if fbody:
            md += ["| " + " | ".join(fhdr) + " |", "|" + "---|" * len(fhdr)]
            md += ["| " + " | ".join(r) + " |" for r in fbody] + ["", closing, ""]
    if ctx.validation:
        md += ["## COMB known-answer validation", "",
               f"`bench/comb/comb-validate.sh` (tolerance 5 points): **{ctx.validation[0]}**", "", "```"]
        md += ctx.validation[1] + ["```", ""]
    md += ["## Not produced", ""]
    missing = not_produced(ctx, stacks, figs_missing)
    if not missing:
        md.append("Everything was produced.")
    md += [f"- {md_name} {text}" for md_name, _, text in missing] + [""]
    with open(os.path.join(ctx.out, "report.md"), "w") as f:
        f.write("\n".join(md))

    h = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>p3stack comparison</title>",
         "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}"
         "td,th{border:1px solid #999;padding:3px 6px;font-size:13px}svg{max-width:100%;height:auto}"
         "img{max-width:100%;height:auto}.wide{overflow-x:auto}.warn{color:#a00}pre{white-space:pre-wrap}</style>",
         "</head><body>", "<h1>p3stack stack comparison</h1>",
         f"<p>host {html.escape(ctx.host)}, {ctx.date}, commit {html.escape(ctx.commit)}"
         f"{' (quick run)' if ctx.quick else ''}</p>"]
    if bed_note(ctx):
        h.append(f"<p>{html.escape(bed_note(ctx))}</p>")
    if drift:
        h.append(f"<p class='warn'><b>Warning: {html.escape(drift)}</b></p>")
    h.append("<h2>Machine state</h2><table><tr><th>probe</th><th>flag ping-pong one way (ns)</th>"
             "<th>memcpy 8 MiB (GB/s)</th><th>failed ping-pong samples</th><th>load average (1 min)</th></tr>")
    for when, fg, failed in ctx.probes:
        pp, mc = fg["pingpong_ns"], fg["memcpy_GBps"]
        h.append(f"<tr><td>{when}</td><td>{pp[0]:.4g} ({pp[1]:.4g}-{pp[2]:.4g})</td>"
                 f"<td>{mc[0]:.4g} ({mc[1]:.4g}-{mc[2]:.4g})</td><td>{failed}</td>"
                 f"<td>{fg.get('loadavg_1min', ('?',))[0]}</td></tr>")
    h.append("</table><h2>Summary</h2><p>Each figure with its spread: ±x% is half the range between the "
             "fastest and the slowest of its runs, relative to the median. " + html.escape(rounds_note(ctx))
             + "</p><div class='wide'><table><tr>")
    h += ["<th>" + html.escape(c) + "</th>" for c in hdr] + ["</tr>"]
    for r in body:
        h.append("<tr>" + "".join("<td>" + html.escape(c) + "</td>" for c in r) + "</tr>")
    h.append("</table></div>")
    h += cmp_paper.html_section(ctx.rows)
    if ctx.commtest_stops:
        h.append("<h3>COMMTEST runs that did not finish</h3><ul>")
        h += [f"<li>{html.escape(c['stack'])}: {html.escape(c['where'])}: {html.escape(c['cause'])}"
              + (f". Whose: {html.escape(c['reason'])}" if c.get("reason") else "") + "</li>"
              for c in ctx.commtest_stops]
        h.append("</ul>")
    if ctx.comb_flags:
        h.append("<h3>COMB points not published</h3><ul>")
        h += [f"<li>{html.escape(a)} {b} {c} B, interval {d:g}: {html.escape(e)}</li>"
              for a, b, c, d, e in ctx.comb_flags]
        h.append("</ul>")
    h.append("<h2>Oversubscription</h2>")
    if ctx.oversub:
        h.append("<p>Waits yielded or blocked instead of busy-polling in:</p><ul>")
        h += [f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>" for k, v in sorted(ctx.oversub.items())]
        h.append("</ul>")
    else:
        h.append("<p>Not in effect in any run: every rank busy-polled.</p>")
    h.append("<h2>Figures</h2>")
    for fid, title, png, svg in figs_done:
        with open(svg) as f:
            svgtext = f.read()
        svgtext = re.sub(r"^<\?xml[^>]*>\s*", "", svgtext)
        svgtext = re.sub(r"<!DOCTYPE[^>]*>\s*", "", svgtext)
        h += [f"<h3>{fid}: {html.escape(title)}</h3>", svgtext]
    if ctx.fidelity:
        title, intro, fhdr, fbody, closing = fidelity_lines(ctx.fidelity)
        h += [f"<h2>{html.escape(title)}</h2>", f"<p>{html.escape(intro)}</p>"]
        if fbody:
            h.append("<div class='wide'><table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in fhdr) + "</tr>")
            h += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in fbody]
            h += ["</table></div>", f"<p>{html.escape(closing)}</p>"]
    if ctx.validation:
        h += ["<h2>COMB known-answer validation</h2>",
              f"<p>bench/comb/comb-validate.sh (tolerance 5 points): <b>{html.escape(ctx.validation[0])}</b></p>",
              "<pre>" + html.escape("\n".join(ctx.validation[1])) + "</pre>"]
    h.append("<h2>Not produced</h2><ul>")
    h += [f"<li>{html.escape(name)} {html.escape(text)}</li>" for _, name, text in missing]
    h.append("</ul></body></html>")
    with open(os.path.join(ctx.out, "report.html"), "w") as f:
        f.write("\n".join(h))


def not_produced(ctx, stacks, figs_missing):
    """What the run did not produce, one (markdown name, plain name, text)
    per item: unavailable stacks, failed benchmark runs, missing figures."""
    items = [(f"stack `{s.name}`", f"stack {s.name}", f"unavailable: {s.unavailable}")
             for s in stacks if s.unavailable]
    items += [(f"`{a}` /", f"{a} /", f"{b}: {c}") for a, b, c in ctx.failures]
    items += [(f"figure {a}:", f"figure {a}:", b) for a, b in figs_missing]
    return items


def fidelity_lines(fid):
    """The report's OSU fidelity section: (heading, intro, header, rows, closing)."""
    intro = (f"The genuine OSU micro-benchmarks 3.6 (built by bench/osu/build-genuine-osu) and bench/osu, "
             f"both with the genuine defaults, over mpich-ptl3-{fid.get('nal', 'shmem')}-"
             f"{fid.get('progress', 'app')}, ranks pinned to CPUs 0 and 1, {fid.get('reps', '?')} alternated "
             f"repetitions (genuine then ours, ours then genuine, ...). Ratio = our median / genuine median. "
             f"'in spread': our median lies within the genuine min..max; 'ranges overlap': our min..max "
             f"meets the genuine one (both runs' noise). Status: {fid.get('status')}.")
    hdr = ["program", "size", "unit", "genuine median", "genuine spread", "ours median", "ours range", "ratio",
           "in spread", "ranges overlap"]
    names = {1: "1 B", 8192: "8 KiB", 1048576: "1 MiB", 4194304: "4 MiB"}
    body = []
    for r in fid.get("rows", []):
        overlap = r["ours_min"] <= r["genuine_max"] and r["genuine_min"] <= r["ours_max"]
        body.append([r["program"], names.get(r["size"], str(r["size"])), r["unit"], f"{r['genuine_median']:.2f}",
                     f"{r['genuine_min']:.2f}..{r['genuine_max']:.2f}", f"{r['ours_median']:.2f}",
                     f"{r['ours_min']:.2f}..{r['ours_max']:.2f}", f"{r['ratio']:.3f}",
                     "yes" if r["within_spread"] else "no", "yes" if overlap else "no"])
    n_in = sum(1 for r in body if r[8] == "yes")
    closing = (f"{n_in} of {len(body)} of our medians lie within the genuine spread. Where one does not: "
               "both programs run the same calls with the same counts and the same buffer placement "
               "(bench/osu/README.md, 'Agreement with the genuine OSU 3.6'); a difference outside the spread "
               "on a loaded machine is the machine's (compare the two ranges), on an idle one it is a "
               "finding to report.") if body else ""
    return "OSU 3.6 fidelity: genuine vs bench/osu", intro, hdr, body, closing
