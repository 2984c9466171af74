#!/usr/bin/python3
"""docs/SCALE.md's tables from the rehearsal's measurements (tests/scale/rehearse.sh).

usage: scale_table.py REHEARSE.tsv
Each stage's CPU seconds are scaled to make all's full run (column `scale`). The 8B model is
measured with 1 and 2 of its layers: per layer = (2 layers) - (1 layer), whole = 1 layer +
(L-1) x per layer, for CPU, peak RSS, parameters and bytes. Wall-time predictions assume the
parallel efficiencies of EFF (stated in docs/SCALE.md; not measured here)."""
import csv, math, sys
from collections import defaultdict

STAGES = ["extract", "frames", "decompose", "distance", "rank", "perplexity"]
GROUP = {"reversal": "rank", "cluster": "rank", "prune-rank": "rank",
         "perplexity-base": "perplexity", "perplexity-mask": "perplexity"}
EFF = {2: 0.9, 16: 0.8, 64: 0.6}
FULL_LAYERS = {"llama-3.1-8b": 32}
# Stages over pairs of heads do not grow linearly with the layers: distance costs N^2 head pairs
# (measured: gpt2 144 heads 0.009 CPU-h, pythia-1.4b 384 heads 0.060, llama-3.2-1b 512 heads
# 0.119), cluster grows faster still. For the truncated 8B they come from Llama-3.2-1B (512 heads,
# same T and S) times (1024/512)^2 for distance and (1024/512)^4 for the rank stage (reversal,
# cluster, prune-rank) instead.
PAIR_STAGES = {"llama-3.1-8b": ("llama-3.2-1b", {"distance": 4.0, "rank": 16.0})}
TARGET = {"F32": 4.2, "F16": 2.2, "BF16": 2.2}


def load(path):
    m = defaultdict(lambda: defaultdict(lambda: {"cpu": 0.0, "wall": 0.0, "rss": 0, "rss_ppl": 0}))
    info, seen = {}, set()
    for r in csv.DictReader(open(path), delimiter="\t"):
        key = (r["model"], int(r["layers"]))
        # a stage measured again (REHEARSE_ONLY_ATTN reruns extract): the first one counts
        if r["stage"] != "perplexity-mask" and (key, r["stage"]) in seen:
            continue
        seen.add((key, r["stage"]))
        st = GROUP.get(r["stage"], r["stage"])
        s = m[key][st]
        sc = float(r["scale"])
        s["cpu"] += float(r["cpu_s"]) * sc
        s["wall"] += float(r["wall_s"]) * sc
        s["rss"] = max(s["rss"], int(r["peak_rss_kB"]) * 1024)
        info[key] = (int(r["params"]), int(r["file_bytes"]), r["dtype"])
    return m, info


def fill_frames(m):
    """Models whose frames stage was not measured: decompose's CPU x the median frames/decompose
    ratio of those that were (both read the whole attention file once); returns the models."""
    r = sorted(v["frames"]["cpu"] / v["decompose"]["cpu"] for v in m.values()
               if v["frames"]["cpu"] > 0 and v["decompose"]["cpu"] > 0)
    est = set()
    for k, v in m.items():
        if v["frames"]["cpu"] == 0 and r:
            v["frames"]["cpu"] = v["decompose"]["cpu"] * r[len(r) // 2]
            v["frames"]["rss"] = v["decompose"]["rss"]
            est.add(k[0])
    return est


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
            ref, fac = PAIR_STAGES.get(name, (None, {}))
            for s, k in fac.items():
                r = [v for (n2, _), v in m.items() if n2 == ref]
                if r:
                    st[s] = (r[0][s]["cpu"] * k, st[s][1], st[s][2], st[s][3])
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
    if sec < 60:
        return "<1 min"
    if sec < 3600:
        return f"{sec / 60:.0f} min"
    return f"{sec / 3600:.1f} h"


def main():
    m, info = load(sys.argv[1])
    est = fill_frames(m)
    rows = model_rows(m, info)
    print("| model | layers | parameters | bytes on disk | dtype | extract peak RSS | perplexity-run peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for name, L, p, f, dt, st in rows:
        t = TARGET[dt]
        mark = lambda r: f"{r / 1e9:.2f} GB = {r / p:.2f} B/param" + ("" if r / p <= t else f" (target {t}: missed)")
        print(f"| {name} | {L} | {p / 1e9:.3f} B | {f / 1e9:.2f} GB | {dt} | {mark(st['extract'][1])} | "
              f"{mark(st['perplexity'][1])} |")
    print()
    print("| model | " + " | ".join(STAGES) + " | total CPU-h | wall: 2 / 16 / 64 cores | SCHED=slurm: critical path, CPUs at once, memory per job |")
    print("|---|" + "---|" * (len(STAGES) + 3))
    for group, members in (("ten paper models", [r for r in rows if r[0] not in FULL_LAYERS]),
                           ("with Llama-3.1-8B", rows)):
        tot = defaultdict(float)
        for name, L, p, f, dt, st in members:
            cpu = sum(st[s][0] for s in STAGES)
            for s in STAGES:
                tot[s] += st[s][0]
            tot["all"] += cpu
            if group != "ten paper models":
                continue
            print(row(name, st, est, cpu, f))
        if group == "ten paper models":
            for name, L, p, f, dt, st in rows:
                if name in FULL_LAYERS:
                    print(row(name, st, est, sum(st[s][0] for s in STAGES), f))
        walls = " / ".join(fmt_wall(tot["all"] / (c * EFF[c])) for c in (2, 16, 64))
        print(f"| **all: {group}** | " + " | ".join(f"{hours(tot[s]):.2f}" for s in STAGES) +
              f" | {hours(tot['all']):.2f} | {walls} | |")
    if est:
        print("\n\\* frames not measured for " + ", ".join(sorted(est)) + ": decompose's CPU x the median "
              "frames/decompose ratio of the measured models")
    for name, L, p, f, dt, st in rows:
        if name in FULL_LAYERS:
            print(f"\n{name}: per layer {st['extract'][2]:.0f} CPU-s extract, {st['perplexity'][2]:.0f} CPU-s "
                  f"perplexity (full run); peak RSS +{st['extract'][3] / 1e6:.0f} MB (extract), "
                  f"+{st['perplexity'][3] / 1e6:.0f} MB (perplexity) per layer")


def slurm(st, nbytes):
    """make all SCHED=slurm (docs/CLUSTER.md): a model run gets 4 CPUs below 4 GB of weights, 8
    above; distance 4; the 28 perplexity runs are 28 jobs at once. Critical path: extract, then
    distance, then one perplexity job (prune-rank and the rest take seconds)."""
    c = 4 if nbytes < 4e9 else 8
    path = (st["extract"][0] / c + st["distance"][0] / 4 + st["perplexity"][0] / 28 / c) / EFF[16]
    return f"{fmt_wall(path)}, {28 * c} CPUs"


def row(name, st, est, cpu, nbytes):
    rss = max(st["extract"][1], st["perplexity"][1])
    walls = " / ".join(fmt_wall(cpu / (c * EFF[c])) for c in (2, 16, 64))
    return (f"| {name} | " + " | ".join(f"{hours(st[s][0]):.3f}" + ("*" if s == "frames" and name in est else "")
                                       for s in STAGES) +
            f" | {hours(cpu):.2f} | {walls} | {slurm(st, nbytes)}, {math.ceil(rss * 1.25 / 2**30)}G |")


if __name__ == "__main__":
    main()
