#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""cg-calls.py FILE REGEX... - from a callgrind output file: the program's
total Ir, then for each REGEX the calls to and the inclusive Ir of the
functions whose names match it (summed over every call site), one line
each: "REGEX calls inclusive".  Used by tools/shmlat/lat-instr."""
import re
import sys


def parse(path):
    names = {}  # "(id)" -> name, for fn= / cfn= name compression
    calls = {}
    incl = {}
    total = 0
    cur_cfn = None
    pending_calls = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("fn=", "cfn=", "cfi=", "cfl=", "fl=", "fi=", "fe=", "ob=", "cob=")):
                key, _, val = line.rstrip("\n").partition("=")
                m = re.match(r"\((\d+)\)(?: (.*))?$", val)
                if key in ("fn", "cfn"):
                    if m:
                        if m.group(2) is not None:
                            names[m.group(1)] = m.group(2)
                        name = names.get(m.group(1), val)
                    else:
                        name = val
                    if key == "cfn":
                        cur_cfn = name
                continue
            if line.startswith("calls="):
                pending_calls = int(line.split("=")[1].split()[0])
                continue
            if pending_calls is not None:
                # the cost line of the call: "<pos> <Ir>" (inclusive)
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
                calls[cur_cfn] = calls.get(cur_cfn, 0) + pending_calls
                incl[cur_cfn] = incl.get(cur_cfn, 0) + ir
                pending_calls = None
                continue
            if line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    return total, calls, incl


def main():
    total, calls, incl = parse(sys.argv[1])
    print("total", total)
    for rx in sys.argv[2:]:
        r = re.compile(rx)
        c = sum(v for k, v in calls.items() if r.search(k))
        i = sum(v for k, v in incl.items() if r.search(k))
        print(rx, c, i)


if __name__ == "__main__":
    main()
