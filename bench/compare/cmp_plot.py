"""Plots of the stack comparison (gnuplot PNG + SVG), imported by compare.

One figure is one picture with one panel per stack family (Portals-level,
MPI shared memory, MPI network: see FAMILIES), each panel with its legend
below the data, error bars from each point's min-max range, and size axes
labelled 1, 32, 1K, 32K, 1M, 32M.
"""
import os
import shutil
import subprocess

# Panel order; a stack's family is Stack.family (compare).  A new family
# (e.g. a Myrinet stack set) is one more entry here.
FAMILIES = [("portals", "Portals level (ptlbench; libfabric fi_pingpong)"), ("mpi-shm", "MPI, shared memory"), ("mpi-net", "MPI, network")]

# Byte axes: a tic every factor of 32, labelled with binary prefixes.
SIZE_TICS = [(1, "1"), (32, "32"), (1024, "1K"), (32768, "32K"), (1048576, "1M"), (33554432, "32M"),
             (1073741824, "1G")]
BYTE_AXES = ("size", "packet")
PANEL_H = 340  # pixels per panel; legend lines are added below


def size_tics(xs):
    """gnuplot 'set xtics (...)' for byte sizes spanning xs (0 B plotted at 0.5)."""
    lo, hi = min(xs), max(xs)
    tics = [f'"{lab}" {v}' for v, lab in SIZE_TICS if lo <= v <= hi * 1.0001]
    if lo <= 0:
        tics.insert(0, '"0" 0.5')
    return "set xtics (" + ", ".join(tics) + ")"


def write_data(datf, panels):
    """One gnuplot index per series: x y min max."""
    idx = {}
    with open(datf, "w") as f:
        i = 0
        for fam, series in panels:
            for label, pts in series.items():
                f.write(f"# {fam}: {label}\n")
                for x, y, lo, hi in pts:
                    lo = y if lo is None else lo
                    hi = y if hi is None else hi
                    f.write(f"{x} {y} {lo} {hi}\n")
                f.write("\n\n")
                idx[(fam, label)] = i
                i += 1
    return idx


def panel_script(fig, fam_title, series, idx, fam, datf, xname):
    _, title, _, _, xl, yl, logx = fig
    xs = [p[0] for pts in series.values() for p in pts]
    # the legend below the x label, one blank line apart (gnuplot's own
    # placement lets the two touch)
    cmds = [f'set title "{fam_title}" noenhanced', f"set xlabel '{xl}' offset 0,0.4", f"set ylabel '{yl}'",
            "set key below horizontal noenhanced height 1.5", "set grid", "set bars small",
            "set logscale x 2" if logx else "unset logscale x",
            "set logscale y" if "latency" in yl or "phase" in yl else "unset logscale y"]
    if xname in BYTE_AXES and logx:
        cmds.append(size_tics(xs))
    elif logx:
        cmds += ["set logscale x 10", "set xtics auto", "set format x '%.0s%c'"]
    else:
        cmds += ["set xtics auto", "set format x '%g'"]
    plots = []
    for label in series:
        i = idx[(fam, label)]
        plots.append(f"'{datf}' index {i} using ($1<=0?0.5:$1):2:3:4 with yerrorlines "
                     f"title '{label.replace(chr(39), '')}'")
    cmds.append("plot " + ", ".join(plots))
    cmds += ["set format x '%g'", "set xtics auto"]
    return cmds


def plot(ctx, fig, panels, outdir, xname):
    """Write PNG + SVG for one figure: panels = [(family, {label: [(x, y, min, max)]})].
    Return (png, svg) or raise RuntimeError."""
    fid = fig[0]
    gp = shutil.which("gnuplot")
    if not gp:
        raise RuntimeError("gnuplot not installed")
    datf = os.path.join(outdir, f"{fid}.dat")
    idx = write_data(datf, panels)
    titles = dict(FAMILIES)
    # legend rows: about 3 entries per row at this width
    heights = [PANEL_H + 18 * ((len(s) + 2) // 3) for _, s in panels]
    total = sum(heights) + 40
    tag = f"{ctx.host} {ctx.date} commit {ctx.commit}"
    script = []
    for term, ext in (("pngcairo size 900,%d noenhanced font ',10'", "png"),
                      ("svg size 900,%d noenhanced font 'sans,10'", "svg")):
        script += [f"set terminal {term % total}", f"set output '{os.path.join(outdir, fid + '.' + ext)}'",
                   f'set multiplot title "{fig[1]}\\n{tag}" noenhanced']
        top = 1.0 - 40.0 / total
        for (fam, series), hgt in zip(panels, heights):
            h = hgt / total
            script += [f"set origin 0,{top - h:.4f}", f"set size 1,{h:.4f}"]
            script += panel_script(fig, titles.get(fam, fam), series, idx, fam, datf, xname)
            top -= h
        script += ["unset multiplot", "unset output"]
    rc = subprocess.run([gp], input="\n".join(script), text=True, capture_output=True, timeout=60)
    png = os.path.join(outdir, fid + ".png")
    if rc.returncode != 0 or not os.path.exists(png) or not os.path.getsize(png):
        err = [ln for ln in rc.stderr.splitlines() if ln.strip()]
        raise RuntimeError("gnuplot failed: " + (err[-1] if err else f"exit {rc.returncode}"))
    return png, os.path.join(outdir, fid + ".svg")
