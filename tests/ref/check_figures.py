#!/usr/bin/python3
"""Checks of the paper's figures (pipelines/paper/*.gp) that a reader would otherwise only see:
distinct, colour-blind-safe series colours and labels that do not overlap. Prints TAP lines
("ok - ..." / "not ok - ...").

  check_figures.py palette COMMON.gp
      the series palette C: at least 12 colours, every pair apart by CIELAB ΔE >= 20 for normal
      vision and >= 10 under simulated protanopia, deuteranopia and tritanopia (Machado, Oliveira
      and Fernandes 2009, severity 1)
  check_figures.py reversal REVERSAL.gp COMMON.gp TSV WORKDIR
      renders TSV; each model's bar colour (the palette, drawn at fill density 0.85) is on the
      figure and no two models share one
  check_figures.py band BAND.gp COMMON.gp TSV WORKDIR
      renders TSV; each band's edge lines are drawn in their own colour and dash type, and every
      band's edge colour is visible on the figure (none hidden under another band)
  check_figures.py regime REGIME.gp TSV CONF WORKDIR
      renders TSV once whole and once without each label (bar labels, τ_lo, τ_hi, the model
      names): a label's pixels are where the two differ; no two labels' pixels (grown by 1 px)
      meet, and none touches the image edge (cut off)

Needs gnuplot (pngcairo), numpy and PIL (python3-numpy, python3-pil)."""
import itertools
import os
import re
import subprocess
import sys

import numpy as np
from PIL import Image

SIM = {  # linear-RGB simulation matrices, Machado et al. 2009, severity 1.0
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}


def tap(ok, text):
    print(("ok" if ok else "not ok") + " - " + text)
    return ok


def palette(common):
    """The colours of `array C[...] = [...]` in common.gp (continuation lines joined)."""
    text = open(common, encoding="utf-8").read().replace("\\\n", " ")
    m = re.search(r"^array C\[[^\]]*\]\s*=\s*\[([^\]]*)\]", text, re.M)
    if not m:
        sys.exit("check_figures.py: %s: no 'array C[...] = [...]'" % common)
    return re.findall(r'"(#[0-9A-Fa-f]{6})"', m.group(1))


def rgb(h):
    return np.array([int(h[i:i + 2], 16) for i in (1, 3, 5)], float)


def to_lab(srgb):
    c = np.asarray(srgb, float) / 255
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return lin_to_lab(lin)


def lin_to_lab(lin):
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


def min_delta_e(colours, sim=None):
    c = np.array([rgb(h) for h in colours]) / 255
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    if sim is not None:
        lin = np.clip(lin @ np.array(sim).T, 0, 1)
    lab = lin_to_lab(lin)
    return min((float(np.linalg.norm(lab[i] - lab[j])), colours[i], colours[j])
               for i, j in itertools.combinations(range(len(colours)), 2))


def cmd_palette(common):
    pal = palette(common)
    ok = tap(len(pal) >= 12 and len(set(h.lower() for h in pal)) == len(pal),
             "figures: the series palette has %d distinct colours (at least 12 models)" % len(pal))
    d, a, b = min_delta_e(pal)
    ok &= tap(d >= 20, "figures: palette colours apart for normal vision (min ΔE %.1f, %s vs %s; >= 20)" % (d, a, b))
    for name, m in SIM.items():
        d, a, b = min_delta_e(pal, m)
        ok &= tap(d >= 10, "figures: palette colours apart under simulated %s (min ΔE %.1f, %s vs %s; >= 10)"
                  % (name, d, a, b))
    return ok


def gnuplot(script, out, **var):
    sets = "; ".join("%s='%s'" % (k, v) for k, v in var.items())
    subprocess.run(["gnuplot", "-e", sets + "; out='%s'" % out, script], check=True)
    return np.asarray(Image.open(out).convert("RGB")).astype(int)


def pixels_of(img, colour, tol=4):
    return int(np.sum(np.all(np.abs(img - colour) <= tol, axis=-1)))


def header(tsv):
    with open(tsv, encoding="utf-8") as f:
        return next(l for l in f if not l.startswith("#")).rstrip("\n").split("\t")


def cmd_reversal(gp, common, tsv, work):
    models = header(tsv)[1:]
    img = gnuplot(gp, os.path.join(work, "reversal.png"), **{"in": tsv})
    pal = palette(common)
    want = [rgb(pal[i % len(pal)]) * 0.85 + 255 * 0.15 for i in range(len(models))]  # fill density 0.85
    counts = [pixels_of(img, c) for c in want]
    distinct = len({tuple(np.round(c).astype(int)) for c in want})
    missing = [m for m, n in zip(models, counts) if n < 20]
    return tap(not missing and distinct == len(models),
               "figures: reversal.png gives each of %d models its own bar colour (%d distinct; fewest pixels %d%s)"
               % (len(models), distinct, min(counts), "; missing: " + " ".join(missing) if missing else ""))


def cmd_band(gp, common, tsv, work):
    text = open(gp, encoding="utf-8").read()
    cols = re.search(r"^array col\[\d+\]\s*=\s*\[(.*)\]\s*$", text, re.M)
    dash = re.search(r"^array dash\[\d+\]\s*=\s*\[([^\]]*)\]", text, re.M)
    if not cols or not dash:
        return tap(False, "figures: band.gp defines its series' colours (array col) and dash types (array dash)")
    pal = palette(common)
    colours = [pal[int(k) - 1] for k in re.findall(r"C\[(\d+)\]", cols.group(1))]
    dashes = [x.strip() for x in dash.group(1).split(",")]
    distinct = len(set(colours)) == len(colours) and len(set(dashes)) == len(dashes)
    ok = tap(len(colours) > 1 and len(colours) == len(dashes) and distinct,
             "figures: band.gp draws each of %d bands in its own colour and dash type" % len(colours))
    img = gnuplot(gp, os.path.join(work, "band.png"), **{"in": tsv})
    counts = [pixels_of(img, rgb(c), 2) for c in colours] or [0]
    return ok & tap(min(counts) >= 200, "figures: band.png shows every band's edges (fewest pixels of a band's "
                    "own colour: %d, >= 200; Euclidean %d)" % (min(counts), counts[2] if len(counts) > 2 else -1))


def grow(mask):
    g = mask.copy()
    g[1:, :] |= mask[:-1, :]
    g[:-1, :] |= mask[1:, :]
    g[:, 1:] |= mask[:, :-1]
    g[:, :-1] |= mask[:, 1:]
    return g


def cmd_regime(gp, tsv, conf, work):
    with open(tsv, encoding="utf-8") as f:
        rows = [l.rstrip("\n").split("\t") for l in f if not l.startswith("#")]
    head, rows = rows[0], rows[1:]
    v = head.index("verdict") if "verdict" in head else None
    elements = [str(i) for i, r in enumerate(rows) if v is not None and r[v] != "-"] + ["xtics"]
    if conf:
        elements += ["tlo"]
        if any(re.match(r"^\s*tau_hi\s*=\s*(?!inf)\S", l) for l in open(conf, encoding="utf-8")):
            elements += ["thi"]
    full = gnuplot(gp, os.path.join(work, "regime.png"), **{"in": tsv, "conf": conf})
    masks = {}
    for e in elements:
        other = gnuplot(gp, os.path.join(work, "regime-%s.png" % e), **{"in": tsv, "conf": conf, "omit": e})
        masks[e] = grow(np.any(np.abs(full - other) > 8, axis=-1))
    name = lambda e: "model %s's label" % rows[int(e)][0] if e.isdigit() else {
        "xtics": "the model names", "tlo": "τ_lo", "thi": "τ_hi"}[e]
    empty = [name(e) for e in elements if not masks[e].any()]
    clash = ["%s / %s" % (name(a), name(b)) for a, b in itertools.combinations(elements, 2)
             if (masks[a] & masks[b]).any()]
    cut = [name(e) for e in elements
           if masks[e][0, :].any() or masks[e][-1, :].any() or masks[e][:, 0].any() or masks[e][:, -1].any()]
    ok = tap(not empty, "figures: regime.png (%d models) draws all %d labels%s"
             % (len(rows), len(elements), ": missing " + ", ".join(empty) if empty else ""))
    ok &= tap(not clash, "figures: regime.png (%d models): no two labels overlap%s"
              % (len(rows), " (" + "; ".join(clash) + ")" if clash else ""))
    return ok & tap(not cut, "figures: regime.png (%d models): no label cut off at the image edge%s"
                    % (len(rows), " (" + ", ".join(cut) + ")" if cut else ""))


def main(argv):
    cmds = {"palette": (cmd_palette, 1), "reversal": (cmd_reversal, 4), "band": (cmd_band, 4),
            "regime": (cmd_regime, 4)}
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 != cmds[argv[1]][1]:
        sys.stderr.write(__doc__)
        return 2
    return 0 if cmds[argv[1]][0](*argv[2:]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
