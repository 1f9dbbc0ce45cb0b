"""Where an unfinished COMMTEST run stopped and whose hang it was (used by
bench/compare/compare: bench_commtest, after all the rounds)."""
import re


def last_line(s):
    s = [l for l in (s or "").splitlines() if l.strip()]
    return s[-1][:200] if s else ""


def commtest_stop(out, err, rc, total, limit, quiet):
    """Where an unfinished commtest run stopped: {where: the protocol and
    packet size it was in, protocol, packet, cause: commtest's own guard,
    compare's time limit (and whether the run was still printing rows: slow,
    or silent: stuck), or the exit}.  explain_commtest_stops() adds whose
    hang it was once every stack has run."""
    proto, packet, lastrow = None, None, None
    for line in out.splitlines():
        m = re.match(r"# protocol \((\d+),(\d+)\)", line)
        if m:
            proto, packet, lastrow = f"({m.group(1)},{m.group(2)})", total, None
            continue
        f = line.split()
        if not line.startswith("#") and len(f) >= 5 and proto and f"({f[0]},{f[1]})" == proto:
            try:
                packet, lastrow = int(f[4]) // 2, int(f[4])
            except ValueError:
                pass
    hung = re.search(r"protocol \((\d+),(\d+)\) packet (\d+) bytes hung[^\n]*", err or "")
    if hung:
        proto, packet = f"({hung.group(1)},{hung.group(2)})", int(hung.group(3))
        cause = ("commtest's guard found the measured exchange hung although its probe completed "
                 "(the stack stopped making progress)")
        kind = "hung"
    elif rc == 124:
        if quiet >= min(30.0, 0.25 * limit):
            cause = f"compare's time limit ({limit} s) reached; no row for the last {quiet:.0f} s (stuck)"
            kind = "hung"
        else:
            cause = (f"compare's time limit ({limit} s) reached while it was still printing rows "
                     f"(last {quiet:.0f} s before): slow, not stuck")
            kind = "slow"
    else:
        cause, kind = last_line(err) or last_line(out) or f"exit {rc}", "exit"
    if proto is None:
        return {"where": "stopped before its first protocol", "protocol": None, "packet": None,
                "cause": cause, "kind": kind, "reason": ""}
    where = f"stopped in protocol {proto}, packet {packet} B"
    if lastrow and not hung:
        where += f" (its {lastrow} B packets had completed)"
    return {"where": where, "protocol": proto, "packet": packet, "cause": cause, "kind": kind, "reason": ""}


def explain_commtest_stops(ctx, stacks):
    """Whose hang each stop was, from what the other stacks of this run did
    with the same protocol and packet size: the one-line reason."""
    by_name = {s.name: s for s in stacks}
    done = {}  # (protocol, packet) -> stacks that completed it
    for r in ctx.rows:
        if r["benchmark"] == "commtest":
            done.setdefault((r.get("protocol"), r["x"]), set()).add(r["stack"])
    for stop in ctx.commtest_stops:
        st = by_name.get(stop["stack"])
        ok = sorted(done.get((stop["protocol"], stop["packet"]), set()) - {stop["stack"]})
        stop["completed_by"] = ok
        stop["reason"] = commtest_reason(st, stop, ok, by_name)
        for i, (a, b, c) in enumerate(ctx.failures):
            if a == stop["stack"] and b == "commtest" and stop["reason"] and stop["reason"] not in c:
                ctx.failures[i] = (a, b, f"{c}; {stop['reason']}")


def commtest_reason(st, stop, ok, by_name):
    """One line: which layer the hang belongs to."""
    if st is None or stop["protocol"] is None:
        return ""
    if stop["kind"] == "slow":
        return "the stack is slow here, not stuck: a longer --commtest-timeout lets it finish"
    if is_p3stack(st):
        return "p3stack's own stack: a p3stack bug (its stacks must always finish)"
    adapter = [n for n in ok if by_name.get(n) and by_name[n].adapter]
    ofi = [n for n in ok if by_name.get(n) and by_name[n].provider and by_name[n].kind == "mpi"]
    if st.provider and adapter:
        return (f"libfabric's {st.provider} provider: the same MPICH 4.0.2 ch4:ofi completes this "
                f"point over the ptl3 provider ({', '.join(adapter)})")
    if st.native and (adapter or ofi):
        return (f"Debian's MPICH (ch4:ucx, UCX): MPICH 4.0.2 ch4:ofi completes this point "
                f"({', '.join(adapter + ofi)})")
    if ok:
        return f"this stack's own: other stacks complete this point ({', '.join(ok)})"
    return "no other stack of this run measured this point: whose hang it is cannot be told"


def is_p3stack(st):
    """Stacks built on p3stack's Portals (ptlbench or the ptl3 adapter)."""
    return st.kind == "portals" or st.adapter
