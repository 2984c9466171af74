#!/usr/bin/python3
"""The sentences of RESULTS.md that say what their tables say (issue 44 item 5), each checked on
made-up tables whose answer is known: pipelines/paper/paper.py imported, its section writers run
on a temporary paper directory. Prints 'ok - …' / 'not ok - …' lines; exit 1 on any failure."""
import importlib.util
import json
import os
import sys
import tempfile

spec = importlib.util.spec_from_file_location("paper", "pipelines/paper/paper.py")
paper = importlib.util.module_from_spec(spec)
spec.loader.exec_module(paper)
failed = 0


def check(what, cond):
    global failed
    print(("ok - " if cond else "not ok - ") + what)
    failed += not cond


def tsv(d, name, head, rows, prov=None):
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    with open(os.path.join(d, "data", name + ".tsv"), "w", encoding="utf-8") as f:
        if prov is not None:
            f.write("# provenance\t" + json.dumps(prov) + "\n")
        f.write("\t".join(head) + "\n")
        for r in rows:
            f.write("\t".join(str(x) for x in r) + "\n")


def text(section, d, *args):
    doc = paper.Doc(d)
    section(doc, d, *args)
    return "\n".join(doc.out)


with tempfile.TemporaryDirectory() as d:
    # §1: a (most dispersed) leads cosine and JS, b leads Euclidean; the aitchison row is not counted
    tsv(d, "reversal", ["metric", "a", "b"], [["cosine", 30, 10], ["js", 25, 5], ["euclidean", 20, 40],
                                              ["aitchison", 90, 1], ["content", 0, 0]])
    tsv(d, "sinks", ["model", "heads", "mean_sink", "sd_sink", "min_sink", "max_sink", "heads_sink_gt_0.5",
                     "mean_entropy"], [["a", 8, .3, .35, .01, .95, 3, 2], ["b", 8, .2, .25, .01, .6, 1, 2]])
    s = text(paper.sec_reversal, d, paper.sink_profile(d))
    check("§1: the d_A vs d_A⊥ row is not among the classical rates (range 5.0% to 40.0%)",
          "range from 5.0% (JS, b) to 40.0% (Euclidean, b)" in s)
    check("§1: 4 of 6 classical rates in the paper's band (3 metrics x 2 models)", "4 of 6 classical rates" in s)
    check("§1: the d_A vs d_A⊥ row is reported apart (1.0% to 90.0%)",
          "not counted among them" in s and "(1.0% to 90.0%)" in s)
    check("§1: the most dispersed model's lead is per metric",
          "(a, SD 0.350) has the highest cosine (30.0%) and JS (25.0%) flip rates; the highest is "
          "b's Euclidean (40.0%)." in s)
    tsv(d, "reversal", ["metric", "a", "b"], [["cosine", 30, 10], ["js", 25, 5], ["euclidean", 50, 40]])
    check("§1: leading every metric is said so",
          "has the highest flip rate under every classical metric: cosine (30.0%), JS (25.0%), Euclidean (50.0%)."
          in text(paper.sec_reversal, d, paper.sink_profile(d)))

    # §5: 'dropping the sink changes little' only where ARI(JS keep, JS drop) is 1
    tsv(d, "ari", ["model", "k", "js_keep vs js_drop", "js_keep vs content_full", "js_keep vs sink",
                   "content_full vs content_drop"], [["a", 6, .34, .4, .03, 1], ["b", 6, 1, 1, .2, 1]])
    s = text(paper.sec_ari, d, paper.sink_profile(d))
    check("§5: the model whose partition moves is not said to change little",
          "In a (mean head sink mass 0.300, SD 0.350) dropping the sink does change the JS partition "
          "(ARI(JS keep, JS drop) 0.34," in s)
    check("§5: the unchanged one is", "In b (mean head sink mass 0.200, SD 0.250) they agree more than in the "
          "paper: dropping the sink leaves the JS partition unchanged (ARI(JS keep, JS drop) 1.00)" in s)
    check("§5: no 'too weak or too alike' sentence", "too weak" not in s)

    # §8: the fitted column from the thresholds file's and the regime table's provenances
    conf = os.path.join(d, "regime.conf")
    fit = {"inputs": [{"name": "results/full/dist/a.h5", "sha256": "aa"},
                      {"name": "results/full/dist/c.h5", "sha256": "c0"}], "options": {}}
    with open(conf, "w") as f:
        f.write("# provenance: %s\ntau_lo = 0.01\ntau_hi = 0.2\n" % json.dumps(fit))
    src = os.path.join(d, "regime-src.tsv")
    with open(src, "w") as f:
        f.write("# provenance: %s\n" % json.dumps({"inputs": [
            {"name": "results/full/dist/%s.h5" % m, "sha256": h} for m, h in (("a", "aa"), ("b", "bb"), ("c", "c1"))]}))
        f.write("model\tdispersion\tverdict\tobserved\toutcome\n")
        for m, o in (("a", "confirmation"), ("b", "failure"), ("c", "abstention"), ("e", "confirmation")):
            f.write("results/full/models/%s\t0.1\tsafe\tsafe\t%s\n" % (m, o))
    paper.cmd_regime(os.path.join(d, "data", "regime.tsv"), [src, conf, "--dev", "a b c"])
    head, rows = paper.read_tsv(os.path.join(d, "data", "regime.tsv"))
    check("regime table: fitted = yes / no / earlier / no (a same file, b not in the fit, c another "
          "version, e held out)", [r["fitted"] for r in rows] == ["yes", "no", "earlier", "no"])
    s = text(paper.sec_regime, d, conf)
    check("§8: a is in-sample", "a (confirmation) is in-sample" in s)
    check("§8: c was fitted as it was before retraining", "were fitted on c (abstention) as it was before "
          "retraining" in s)
    check("§8: b never was", "b (failure) was never part of the fit" in s)
    with open(conf, "w") as f:
        f.write("tau_lo = 0.01\ntau_hi = 0.2\n")
    paper.cmd_regime(os.path.join(d, "data", "regime.tsv"), [src, conf, "--dev", "a b c"])
    head, rows = paper.read_tsv(os.path.join(d, "data", "regime.tsv"))
    check("regime table: fitted = - when the thresholds file names no inputs", {r["fitted"] for r in rows} == {"-"})

    # §10: labels made by heads that give the sink less than tau_r are said not to be sinks
    tsv(d, "frames", ["model", "position", "label", "label_share", "runner_up", "runner_share", "sink_heads",
                      "heads"], [["a", "none", "centralized", 1, "-", 0, 5, 8],
                                 ["b", "rope", "distributed", 1, "-", 0, 8, 8]])
    tsv(d, "sinks", ["model", "heads", "mean_sink", "sd_sink", "min_sink", "max_sink", "heads_sink_gt_0.5",
                     "mean_entropy"], [["a", 8, .3, .35, .01, .95, 3, 2], ["b", 8, .02, .01, .001, .06, 0, 2]])
    s = text(paper.sec_frames, d)
    check("§10: the distributed label of a model without sinks is said not to come from sinks",
          "The label of b (distributed) does not come from attention sinks: no head of this model gives the "
          "sink token more than 0.060 of its mass" in s)
    check("§10: the sink model's label is not questioned", "a (centralized) do" not in s and "of a (" not in s)

check("§10: the position-encoding set's recipe is the one its configs name (trial t51)",
      paper.conf_trial("kjv-pos-rope") == "t51")
sys.exit(1 if failed else 0)
