#!/usr/bin/python3
"""docs/SCALE.md's tables from the rehearsal's measurements (tests/scale/rehearse.sh).

usage: scale_table.py REHEARSE.tsv
Each stage's CPU seconds are scaled to make all's full run (column `scale`). The 8B model is
measured with 1 and 2 of its layers: per layer = (2 layers) - (1 layer), whole = 1 layer +
(L-1) x per layer, for CPU, peak RSS, parameters and bytes. Wall-time predictions assume the
parallel efficiencies of EFF (stated in docs/SCALE.md; not measured here)."""
import csv, math, sys
from collections import defaultdict

STAGES = ["extract", "decompose", "distance", "rank", "perplexity"]
GROUP = {"reversal": "rank", "cluster": "rank", "prune-rank": "rank",
         "perplexity-base": "perplexity", "perplexity-mask": "perplexity"}
EFF = {2: 0.9, 16: 0.8, 64: 0.6}
FULL_LAYERS = {"llama-3.1-8b": 32}
TARGET = {"F32": 4.2, "F16": 2.2, "BF16": 2.2}


def load(path):
    m = defaultdict(lambda: defaultdict(lambda: {"cpu": 0.0, "wall": 0.0, "rss": 0, "rss_ppl": 0}))
    info = {}
    for r in csv.DictReader(open(path), delimiter="\t"):
        key = (r["model"], int(r["layers"]))
        st = GROUP.get(r["stage"], r["stage"])
        s = m[key][st]
        sc = float(r["scale"])
        s["cpu"] += float(r["cpu_s"]) * sc
        s["wall"] += float(r["wall_s"]) * sc
        s["rss"] = max(s["rss"], int(r["peak_rss_kB"]) * 1024)
        info[key] = (int(r["params"]), int(r["file_bytes"]), r["dtype"])
    return m, info


def model_rows(m, info):
    """(model, layers, params, bytes, dtype, {stage: (cpu_s, rss_bytes)}) with the 8B extrapolated."""
    out, seen = [], set()
    for (name, L) in m:
        if name in seen:
            continue
        seen.add(name)
        if name in FULL_LAYERS:
            a, b = m.get((name, 1)), m.get((name, 2))
            if not a or not b:
                continue
            n = FULL_LAYERS[name]
            st = {}
            for s in STAGES:
                per_cpu = b[s]["cpu"] - a[s]["cpu"]
                per_rss = b[s]["rss"] - a[s]["rss"]
                st[s] = (a[s]["cpu"] + (n - 1) * per_cpu, a[s]["rss"] + (n - 1) * per_rss, per_cpu, per_rss)
            p1, f1, dt = info[(name, 1)]
            p2, f2, _ = info[(name, 2)]
            out.append((name, n, p1 + (n - 1) * (p2 - p1), f1 + (n - 1) * (f2 - f1), dt, st))
        else:
            Ls = [k[1] for k in m if k[0] == name]
            L = max(Ls)
            p, f, dt = info[(name, L)]
            out.append((name, L, p, f, dt, {s: (m[(name, L)][s]["cpu"], m[(name, L)][s]["rss"]) for s in STAGES}))
    return out


def hours(s):
    return s / 3600.0


def fmt_wall(sec):
    if sec < 3600:
        return f"{sec / 60:.0f} min"
    return f"{sec / 3600:.1f} h"


def main():
    m, info = load(sys.argv[1])
    rows = model_rows(m, info)
    print("| model | layers | parameters | bytes on disk | dtype | extract peak RSS (B/param; target) | "
          "perplexity peak RSS (B/param) | " + " | ".join(f"{s} CPU-h" for s in STAGES) +
          " | total CPU-h | wall 2 / 16 / 64 cores |")
    print("|" + "---|" * (9 + len(STAGES)))
    tot = defaultdict(float)
    for name, L, p, f, dt, st in rows:
        cpu = sum(st[s][0] for s in STAGES)
        for s in STAGES:
            tot[s] += st[s][0]
        tot["all"] += cpu
        ex, pp = st["extract"][1], st["perplexity"][1]
        t = TARGET[dt]
        mark = lambda r: f"{r / 1e9:.2f} GB ({r / p:.2f}{'' if r / p <= t else ' > ' + str(t)})"
        walls = " / ".join(fmt_wall(cpu / (c * EFF[c])) for c in (2, 16, 64))
        print(f"| {name} | {L} | {p / 1e9:.3f} B | {f / 1e9:.2f} GB | {dt} | {mark(ex)} | {mark(pp)} | " +
              " | ".join(f"{hours(st[s][0]):.3f}" for s in STAGES) + f" | {hours(cpu):.2f} | {walls} |")
    walls = " / ".join(fmt_wall(tot['all'] / (c * EFF[c])) for c in (2, 16, 64))
    print("| **all** | | | | | | | " + " | ".join(f"{hours(tot[s]):.2f}" for s in STAGES) +
          f" | {hours(tot['all']):.2f} | {walls} |")
    for name, L, p, f, dt, st in rows:
        if name in FULL_LAYERS:
            print(f"\n{name}: per layer {st['extract'][2]:.0f} CPU-s extract, {st['perplexity'][2]:.0f} CPU-s "
                  f"perplexity (full run); peak RSS +{st['extract'][3] / 1e6:.0f} MB (extract), "
                  f"+{st['perplexity'][3] / 1e6:.0f} MB (perplexity) per layer")


if __name__ == "__main__":
    main()
