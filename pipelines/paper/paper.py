#!/usr/bin/python3
"""paper.py: derived tables and RESULTS.md of the generated paper (docs/PAPER.md).

Usage: paper.py COMMAND OUT INPUT...
  reversal OUT reversal-NAME.tsv...      flip rate (%) per metric (rows) and model (columns)
  theorem1 OUT theorem1.tsv              Theorem-1 summary (region share, mean, max)
  band     OUT band.tsv                  band collapse at a subset of sink masses s
  identities OUT identities.tsv          identity checks
  sinks    OUT sinks-NAME.tsv...         sink profile per model (mean, SD, min, max head sink)
  ari      OUT cluster-NAME.tsv...       ARI between conventions per model (at one k)
  prune    OUT prune-NAME.tsv...         perplexity per model, metric and sparsity
  prune-plot OUT prune-NAME.tsv          one model's perplexity: rows sparsity, columns metric
  collapse OUT collapse-NAME.tsv...      entropy-collapse split (layer 'all') per trained model
  collapse-plot OUT collapse-NAME.tsv    one model's series, layer 'all' (from plots/)
  train    OUT train-NAME.tsv...         validation loss and per-head sink profile per model
  regime   OUT REGIME.tsv [CONF] [--dev NAMES]  regime map (regime.tsv or regime-dispersion.tsv);
                                         NAMES (space or comma separated) are the development models
  frames   OUT frames-label-NAME.tsv...  reference-frame label per model, with its position encoding
  frames-emergence OUT frames-emergence-NAME.tsv...  emergence step per trained model
  frames-pos OUT frames-pos.tsv          the matched position-encoding set, one row per pos
  results  OUT PAPER_DIR [--skipped NAMES] [--profile P] [--regime-conf CONF]
           (CONF: the regime thresholds, whose provenance gives the "observed" rule's numbers)
                                         RESULTS.md from PAPER_DIR/data, tables and figures
A model's name is taken from its file name (KIND-NAME.tsv). Every derived table starts with a
'# provenance' line (program, command, input names and SHA-256), then a header and rows. Outputs
are written through a temporary name; the same inputs give byte-identical outputs.
Only the Python standard library is used.
"""
import hashlib
import json
import math
import os
import re
import sys

PROG = "paper.py"
VERSION = "0.1.0"
# The classical dissimilarities whose closer-head verdict flips between keep-sink and drop-sink.
# The reversal table's other rows are not such flips: d_A against d_A⊥ (how often the sink-balance
# channel decides the verdict) and d_A⊥ computed both ways (0 by construction).
CLASSICAL = ["cosine", "js", "euclidean"]
PRUNE_ORDER = ["none", "js_keep", "js_drop", "aitchison", "content_full", "random"]
METRIC_LABEL = {"cosine": "cosine", "js": "JS", "euclidean": "Euclidean",
                "aitchison": "d_A vs d_A⊥", "content": "d_A⊥ (both ways)",
                "js_keep": "JS keep", "js_drop": "JS drop", "content_full": "d_A⊥",
                "content_drop": "d_A⊥ (drop)", "sink": "sink mass only", "none": "unpruned",
                "random": "random (mean of seeds)"}


def die(msg):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(1)


# ---------------------------------------------------------------- reading and writing tables
def read_tsv(path):
    """Header and rows (dicts of strings) of a TSV: '#' lines first, one header, rows."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f]
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    lines = [l for l in lines if l and not l.startswith("#")]
    if not lines:
        die("%s: no header line" % path)
    head = lines[0].split("\t")
    rows = []
    for n, l in enumerate(lines[1:], 2):
        cells = l.split("\t")
        if len(cells) != len(head):
            die("%s: row %d has %d cells, the header %d" % (path, n, len(cells), len(head)))
        rows.append(dict(zip(head, cells)))
    return head, rows


def need(path, head, cols):
    missing = [c for c in cols if c not in head]
    if missing:
        die("%s: missing column%s %s" % (path, "s" if len(missing) > 1 else "", ", ".join(missing)))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


def provenance(command, inputs, options=None):
    p = {"program": PROG, "version": VERSION, "command": command,
         "inputs": [{"name": i, "sha256": sha256(i)} for i in inputs],
         "options": options or {}}
    return "# provenance: " + json.dumps(p, sort_keys=True, separators=(",", ":"))


def write_atomic(path, text):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_table(path, prov, head, rows):
    out = [prov, "\t".join(head)] + ["\t".join(r) for r in rows]
    write_atomic(path, "\n".join(out) + "\n")


def g(x, digits=4):
    """A number as text with DIGITS significant digits ('nan' for missing)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "nan"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return "%.*g" % (digits, x)


def model_name(path, kind):
    base = os.path.basename(path)
    m = re.match(r"^%s-(.+)\.tsv$" % re.escape(kind), base)
    return m.group(1) if m else os.path.splitext(base)[0]


# ---------------------------------------------------------------- derived tables
def cmd_reversal(out, paths):
    models, rates, metrics = [], {}, []
    for p in paths:
        head, rows = read_tsv(p)
        need(p, head, ["metric", "flip_rate", "wilson_lo", "wilson_hi"])
        name = model_name(p, "reversal")
        models.append(name)
        for r in rows:
            if r["metric"] not in metrics:
                metrics.append(r["metric"])
            rates[(r["metric"], name)] = num(r["flip_rate"]) * 100
    rows = [[m] + [g(rates.get((m, n), float("nan"))) for n in models] for m in metrics]
    write_table(out, provenance("reversal", paths, {"unit": "percent of triples"}),
                ["metric"] + models, rows)


def cmd_theorem1(out, paths):
    p = paths[0]
    head, rows = read_tsv(p)
    need(p, head, ["metric", "grid_points", "region_share", "mean_reversal", "max_reversal", "ties"])
    write_table(out, provenance("theorem1", paths),
                ["metric", "grid_points", "region_share", "mean_reversal", "max_reversal", "ties"],
                [[r["metric"], r["grid_points"], g(num(r["region_share"])),
                  g(num(r["mean_reversal"])), g(num(r["max_reversal"])), r["ties"]] for r in rows])


BAND_S = [0.0, 0.2, 0.5, 0.8, 0.9, 0.95, 0.99]
BAND_COLS = ["s", "bound", "min_cos_sim", "max_cos_keep", "max_js_keep", "max_euc_keep",
             "min_content", "max_content", "bound_holds"]


def cmd_band(out, paths):
    p = paths[0]
    head, rows = read_tsv(p)
    need(p, head, BAND_COLS)
    picked = []
    for s in BAND_S:   # the row nearest each chosen s (the grid need not contain it exactly)
        best = min(rows, key=lambda r: abs(num(r["s"]) - s), default=None)
        if best is not None and best not in picked:
            picked.append(best)
    write_table(out, provenance("band", paths, {"s": BAND_S}), BAND_COLS,
                [[g(num(r[c])) if c != "bound_holds" else r[c] for c in BAND_COLS] for r in picked])


def cmd_identities(out, paths):
    p = paths[0]
    head, rows = read_tsv(p)
    need(p, head, ["name", "rows", "max_rel_err", "pass"])
    write_table(out, provenance("identities", paths), ["identity", "rows", "max_rel_err", "pass"],
                [[r["name"], r["rows"], g(num(r["max_rel_err"]), 3), r["pass"]] for r in rows])


def stats(xs):
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return [float("nan")] * 4
    mean = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))   # population SD (METHODS §5.6)
    return [mean, sd, min(xs), max(xs)]


def cmd_sinks(out, paths):
    rows = []
    for p in paths:
        head, rs = read_tsv(p)
        need(p, head, ["layer", "head", "sink_mass", "entropy"])
        s = stats([num(r["sink_mass"]) for r in rs])
        e = stats([num(r["entropy"]) for r in rs])
        strong = sum(1 for r in rs if num(r["sink_mass"]) > 0.5)
        rows.append([model_name(p, "sinks"), str(len(rs))] + [g(x) for x in s] +
                    [str(strong), g(e[0])])
    write_table(out, provenance("sinks", paths),
                ["model", "heads", "mean_sink", "sd_sink", "min_sink", "max_sink", "heads_sink_gt_0.5",
                 "mean_entropy"], rows)


ARI_PAIRS = [("js_keep", "js_drop"), ("js_keep", "content_full"), ("js_keep", "sink"),
             ("content_full", "content_drop")]


def cmd_ari(out, paths, k_default=6):
    rows, ks = [], []
    for p in paths:
        head, rs = read_tsv(p)
        need(p, head, ["k", "a", "b", "ari"])
        kk = sorted({int(num(r["k"])) for r in rs})
        # one k per model: the default k (METHODS §5.3) when swept, else the table's own
        k = k_default if k_default in kk else (kk[0] if kk else k_default)
        ks.append(k)
        val = {(r["a"], r["b"]): r["ari"] for r in rs if int(num(r["k"])) == k}
        rows.append([model_name(p, "cluster"), str(k)] +
                    [g(num(val.get(pair, "nan"))) for pair in ARI_PAIRS])
    write_table(out, provenance("ari", paths),
                ["model", "k"] + ["%s vs %s" % pair for pair in ARI_PAIRS], rows)


def prune_values(p):
    """{(metric, sparsity): perplexity} of a pruning table, repeated rows averaged."""
    head, rs = read_tsv(p)
    need(p, head, ["metric", "sparsity", "perplexity"])
    acc = {}
    for r in rs:
        key = (r["metric"], num(r["sparsity"]))
        acc.setdefault(key, []).append(num(r["perplexity"]))
    return {k: sum(v) / len(v) for k, v in acc.items()}


def prune_metrics(vals):
    ms = {m for m, _ in vals if not re.match(r"^random\d+$", m)}
    return [m for m in PRUNE_ORDER if m in ms] + sorted(ms - set(PRUNE_ORDER))


def cmd_prune(out, paths):
    sps = sorted({s for p in paths for (_, s) in prune_values(p) if s > 0})
    rows = []
    for p in paths:
        vals = prune_values(p)
        base = vals.get(("none", 0.0), float("nan"))
        for m in prune_metrics(vals):
            if m == "none":
                continue
            rows.append([model_name(p, "prune"), m, g(base)] +
                        [g(vals.get((m, s), float("nan"))) for s in sps])
    write_table(out, provenance("prune", paths),
                ["model", "metric", "unpruned"] + ["ppl@%g" % s for s in sps], rows)


def cmd_prune_plot(out, paths):
    p = paths[0]
    vals = prune_values(p)
    base = vals.get(("none", 0.0), float("nan"))
    ms = [m for m in prune_metrics(vals) if m != "none"]
    sps = sorted({s for (_, s) in vals if s > 0})
    rows = [["0"] + [g(base, 6)] * len(ms)]   # every order starts at the unpruned model
    rows += [[g(s)] + [g(vals.get((m, s), float("nan")), 6) for m in ms] for s in sps]
    write_table(out, provenance("prune-plot", paths), ["sparsity"] + ms, rows)


COLLAPSE_COLS = ["from_step", "to_step", "H_from", "H_to", "total_drop", "sink_drop",
                 "content_drop", "sink_share"]


def cmd_collapse(out, paths):
    rows = []
    for p in paths:
        head, rs = read_tsv(p)
        need(p, head, ["layer"] + COLLAPSE_COLS)
        for r in rs:
            if r["layer"] == "all":
                rows.append([model_name(p, "collapse")] + [r["from_step"], r["to_step"]] +
                            [g(num(r[c])) for c in COLLAPSE_COLS[2:]])
    write_table(out, provenance("collapse", paths), ["model"] + COLLAPSE_COLS, rows)


def cmd_collapse_plot(out, paths):
    p = paths[0]
    head, rs = read_tsv(p)
    cols = ["step", "H", "Hb", "content_term", "sink_mass"]
    need(p, head, ["layer"] + cols)
    rows = [[r[c] for c in cols] for r in rs if r["layer"] == "all"]
    rows.sort(key=lambda r: num(r[0]))
    write_table(out, provenance("collapse-plot", paths), cols, rows)


def cmd_train(out, paths):
    rows = []
    for p in paths:
        head, rs = read_tsv(p)
        need(p, head, ["quantity", "value"])
        scal = {r["quantity"]: r["value"] for r in rs if r.get("layer", "-") == "-"}
        sink = [num(r["value"]) for r in rs if r["quantity"] == "sink_mass"]
        s = stats(sink)
        # a BPE model's val_loss is per token; per byte it is comparable with the byte models
        per_byte = scal.get("val_nats_per_byte", scal.get("val_loss"))
        rows.append([model_name(p, "train"), scal.get("steps", "-"), scal.get("tokens", "-"),
                     g(num(scal.get("val_loss"))), g(num(per_byte)),
                     g(num(scal.get("val_bits_per_byte"))), str(len(sink))] + [g(x) for x in s]
                    + [g(num(scal.get("sink_share_0.3_layers_ge1"))), training_data(recipe_options(p))])
    write_table(out, provenance("train", paths),
                ["model", "steps", "tokens", "val_loss", "val_nats_per_byte", "val_bits_per_byte",
                 "heads", "mean_sink", "sd_sink", "min_sink", "max_sink", "sink03_layers_ge1", "training_data"], rows)


def model_conf(name):
    """configs/NAME.conf as a dict of its key = value lines ({} when there is none)."""
    conf = {}
    try:
        with open(os.path.join("configs", name + ".conf"), encoding="utf-8") as f:
            for l in f:
                m = re.match(r"^\s*(\w+)\s*=\s*(\S+)", l)
                if m:
                    conf[m.group(1)] = m.group(2)
    except OSError:
        pass
    return conf


def conf_trial(name):
    """The trial of docs/TRIALS.md whose recipe configs/NAME.conf states it uses ('trial tNN' in
    its comments), or None."""
    try:
        with open(os.path.join("configs", name + ".conf"), encoding="utf-8") as f:
            for l in f:
                m = re.search(r"\btrial (t\d+)\b", l) if l.lstrip().startswith("#") else None
                if m:
                    return m.group(1)
    except OSError:
        pass
    return None


ENCODER_FAMILIES = ("bert", "roberta", "xlm-roberta")


def position_encoding(name):
    """The position encoding of a model, from configs/NAME.conf (kind, family): llama2.c, Llama,
    Qwen2 and GPT-NeoX use RoPE; GPT-2 and the encoders learned absolute positions."""
    conf = model_conf(name)
    if not conf:
        return "-"
    if "pos" in conf:
        return conf["pos"]
    if conf.get("kind") == "llama2c" or conf.get("family") in ("llama", "qwen2", "gpt_neox"):
        return "rope"
    if conf.get("family") in ("gpt2",) + ENCODER_FAMILIES:
        return "learned"
    return "-"


FRAMES_TAU_R = 0.3   # frames --tau-r default (METHODS §7.1): least received mass of a reference point
FRAMES_COLS = ["label", "label_share", "runner_up", "runner_share", "sink_heads", "heads"]


def cmd_frames(out, paths):
    rows = []
    for p in paths:
        head, rs = read_tsv(p)
        need(p, head, FRAMES_COLS)
        if len(rs) != 1:
            die("%s: expected one row, found %d" % (p, len(rs)))
        r, name = rs[0], model_name(p, "frames-label")
        rows.append([name, position_encoding(name), r["label"], g(num(r["label_share"])), r["runner_up"],
                     g(num(r["runner_share"])), r["sink_heads"], r["heads"]])
    write_table(out, provenance("frames", paths), ["model", "position"] + FRAMES_COLS, rows)


def cmd_frames_emergence(out, paths):
    rows = []
    for p in paths:
        head, rs = read_tsv(p)
        need(p, head, ["emergence_step", "label", "checkpoints", "final_label"])
        for r in rs:
            rows.append([model_name(p, "frames-emergence"), r["emergence_step"], r["label"],
                         r["checkpoints"], r["final_label"]])
    write_table(out, provenance("frames-emergence", paths),
                ["model", "emergence_step", "label", "checkpoints", "final_label"], rows)


FRAMES_POS_COLS = ["pos", "model", "label", "runner_up", "sink_head_share", "emergence_step", "val_loss"]


def cmd_frames_pos(out, paths):
    """The matched set's table (pipelines/posenc.sh), the columns RESULTS.md shows."""
    rows = []
    for p in paths:
        head, rs = read_tsv(p)
        need(p, head, FRAMES_POS_COLS)
        for r in rs:
            rows.append([r["pos"], r["model"], r["label"], r["runner_up"], g(num(r["sink_head_share"])),
                         r["emergence_step"], g(num(r["val_loss"]))])
    write_table(out, provenance("frames-pos", paths), FRAMES_POS_COLS, rows)


def read_conf(path):
    tau = {}
    with open(path, encoding="utf-8") as f:
        for l in f:
            m = re.match(r"^\s*(tau_lo|tau_hi)\s*=\s*(\S+)", l)
            if m:
                tau[m.group(1)] = num(m.group(2))
    return tau


MODEL_FILE_EXT = (".bin", ".gguf", ".safetensors", ".json", ".pt")


def short_model(ident):
    """A model's short name from its identity: a folder (results/quick/models/NAME, or an HF
    folder such as models/qwen2.5-0.5b) or a file inside the model's folder
    (pipelines/data/models/NAME/NAME.bin)."""
    parts = [q for q in ident.rstrip("/").split("/") if q]
    if not parts:
        return ident
    if len(parts) > 1 and parts[-1].endswith(MODEL_FILE_EXT):
        return parts[-2]
    return parts[-1]


def file_provenance(path):
    """The JSON of a file's '# provenance' line ('# provenance: {…}' or '# provenance<TAB>{…}'),
    {} when it has none or cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            for l in f:
                if l.startswith("# provenance") and "{" in l:
                    return json.loads(l[l.index("{"):])
    except (OSError, ValueError):
        pass
    return {}


def dist_inputs(prov):
    """{model: sha256} of the distance files (…/dist/MODEL.h5) among a provenance's inputs."""
    out = {}
    for i in prov.get("inputs", []) if isinstance(prov, dict) else []:
        name = i.get("name", "") if isinstance(i, dict) else ""
        if "/dist/" in name and name.endswith(".h5"):
            out[os.path.basename(name)[:-3]] = i.get("sha256", "")
    return out


def fitted(name, fit, now):
    """Whether the thresholds were fitted on this model: yes (on this run's distance file),
    earlier (on another version of it), no, or - (the thresholds file names no inputs)."""
    if not fit:
        return "-"
    if name not in fit:
        return "no"
    return "yes" if now.get(name) == fit[name] else "earlier"


def cmd_regime(out, args):
    dev = []
    if "--dev" in args:                  # --dev 'NAME ...': the development (fitting) models
        i = args.index("--dev")
        dev = args[i + 1].replace(",", " ").split() if i + 1 < len(args) else []
        args = args[:i] + args[i + 2:]
    paths = args
    p, conf = paths[0], (paths[1] if len(paths) > 1 else None)
    head, rs = read_tsv(p)
    need(p, head, ["model", "dispersion"])
    tau = read_conf(conf) if conf else {}
    fit, now = dist_inputs(file_provenance(conf)) if conf else {}, dist_inputs(file_provenance(p))
    rows = []
    for r in rs:
        name = short_model(r["model"])
        rows.append([name, "dev" if name in dev else "held-out", g(num(r["dispersion"])),
                     r.get("verdict", "-"), r.get("observed", "-"), r.get("outcome", "-"),
                     fitted(name, fit, now)])
    opts = {"tau_lo": g(tau.get("tau_lo", float("nan")), 6),
            "tau_hi": g(tau.get("tau_hi", float("nan")), 6), "dev": dev}
    write_table(out, provenance("regime", [x for x in paths if x], opts),
                ["model", "role", "dispersion", "verdict", "observed", "outcome", "fitted"], rows)


# ---------------------------------------------------------------- RESULTS.md
def load(d, name):
    p = os.path.join(d, "data", name + ".tsv")
    if not os.path.exists(p):
        return None, None
    return read_tsv(p)


def table_md(d, name):
    p = os.path.join(d, "tables", name + ".md")
    if not os.path.exists(p):
        return None
    with open(p, encoding="utf-8") as f:
        return f.read().rstrip("\n")


def pct(x):
    return "%.1f%%" % x if not math.isnan(x) else "n/a"


def rng(xs, f=pct):
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return "n/a"
    lo, hi = min(xs), max(xs)
    return f(lo) if f(lo) == f(hi) else "%s to %s" % (f(lo), f(hi))


def listing(pairs):
    """'a (x), b (y) and c (z)'."""
    items = ["%s (%s)" % p for p in pairs]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class Doc:
    def __init__(self, d):
        self.d, self.out = d, []

    def add(self, *lines):
        self.out.extend(lines)

    def table(self, name):
        t = table_md(self.d, name)
        self.add(t if t else "*(table %s not generated)*" % name, "")

    def figure(self, name, caption):
        if os.path.exists(os.path.join(self.d, "figures", name + ".png")):
            self.add("![%s](figures/%s.png)" % (caption, name), "", "*Figure: %s.*" % caption, "")


def sink_profile(d):
    head, rows = load(d, "sinks")
    return {r["model"]: r for r in rows} if rows else {}



def section(doc, d, title, name, missing):
    """A section's heading, then its table `name`, or the sentence saying the table is missing."""
    doc.add(title, "")
    head, rows = load(d, name)
    if rows:
        doc.table(name)
    else:
        doc.add(missing, "")
    return head, rows

def most_dispersed_sentence(top_sd, val, models):
    """Whether the model with the most dispersed sinks has the highest flip rate, metric by metric
    (a model can lead on one metric and not on another)."""
    sd, name = top_sd
    leads, others = [], []
    for m in CLASSICAL:
        rates = [(val[(m, n)], n) for n in models if (m, n) in val and not math.isnan(val[(m, n)])]
        if not rates:
            continue
        top = max(rates)
        if top[1] == name:
            leads.append("%s (%s)" % (METRIC_LABEL.get(m, m), pct(top[0])))
        else:
            others.append("%s's %s (%s)" % (top[1], METRIC_LABEL.get(m, m), pct(top[0])))
    s = "The model with the most dispersed sinks (%s, SD %.3f) " % (name, sd)
    if leads and not others:
        return s + "has the highest flip rate under every classical metric: %s." % ", ".join(leads)
    if not leads:
        return s + "has the highest flip rate under no classical metric: the highest are %s." % ", ".join(others)
    return s + "has the highest %s flip rate%s; the highest %s %s." % (
        " and ".join(leads), "s" if len(leads) > 1 else "", "are" if len(others) > 1 else "is",
        " and ".join(others))


def sec_reversal(doc, d, sinks):
    doc.add("## 1. Reversal rate of the closer-head verdict (METHODS §5.1)", "")
    head, rows = load(d, "reversal")
    if not rows:
        doc.add("No reversal tables were produced, so this section is empty.", "")
        return
    models = head[1:]
    val = {(r["metric"], m): num(r[m]) for r in rows for m in models}
    doc.table("reversal")
    doc.figure("reversal", "flip rate of the closer-head verdict between keep-sink and drop-sink "
               "conventions, per metric and model (50,000 triples each)")
    cl = [(val[(m, n)], m, n) for m in CLASSICAL for n in models if (m, n) in val
          and not math.isnan(val[(m, n)])]
    content = [val[("content", n)] for n in models if ("content", n) in val]
    between = [val[("aitchison", n)] for n in models if ("aitchison", n) in val]
    doc.add("**Paper:** 17–47% for the classical metrics on ten models; d_A⊥ 0% by construction.", "")
    if not cl:
        doc.add("**Here:** no classical flip rates.", "")
        return
    lo, hi = min(cl), max(cl)
    s = ("**Here:** classical flip rates range from %s (%s, %s) to %s (%s, %s) over %d model%s; "
         % (pct(lo[0]), METRIC_LABEL.get(lo[1], lo[1]), lo[2], pct(hi[0]),
            METRIC_LABEL.get(hi[1], hi[1]), hi[2], len(models), "s" if len(models) > 1 else ""))
    s += ("d_A⊥ computed both ways flips %s of triples. " % rng(content, lambda x: "%.2f%%" % x)
          if content else "no d_A⊥ row. ")
    if between:
        s += ("The row d_A vs d_A⊥ is not a keep-vs-drop flip and is not counted among them: it is "
              "how often the full Aitchison distance and its content part disagree on the closer "
              "head (%s), the share of verdicts that the sink-balance channel decides." % rng(between))
    doc.add(s, "")
    inside = [c for c in cl if 17 <= c[0] <= 47]
    if lo[0] >= 17 and hi[0] <= 47:
        verdict = "All classical rates fall inside the paper's range."
    elif inside:
        verdict = ("%d of %d classical rates %s inside the paper's 17–47%% range; the rest lie %s."
                   % (len(inside), len(cl), "falls" if len(inside) == 1 else "fall", "below it" if all(c[0] <= 47 for c in cl)
                      else "outside it"))
    elif hi[0] < 17:
        verdict = "Every classical rate is below the paper's range."
    else:
        verdict = "The classical rates lie outside the paper's range."
    why = ""
    low = [n for n in models if all(val.get((m, n), 0) < 17 for m in CLASSICAL)]
    high = [n for n in models if n not in low]
    sd = lambda n: num(sinks[n]["sd_sink"]) if n in sinks else float("nan")
    if low and any(n in sinks for n in low):
        why = (" A reversal needs heads that differ in sink mass. The model%s below the range (%s) "
               "ha%s a head sink-mass SD of %s" %
               ("s" if len(low) > 1 else "", ", ".join(low), "ve" if len(low) > 1 else "s",
                rng([sd(n) for n in low], lambda x: "%.3f" % x)))
        if high and any(n in sinks for n in high):
            why += ", against %s for %s" % (rng([sd(n) for n in high], lambda x: "%.3f" % x),
                                            ", ".join(high))
        why += ("; with sinks this weak and this alike the sink seldom decides which head is "
                "closer.")
    prof = [(sd(n), n) for n in models if n in sinks]
    if len(prof) > 1:
        why += " " + most_dispersed_sentence(max(prof), val, models)
    ok0 = all(c == 0 for c in content)
    doc.add(verdict + why + (" d_A⊥ agrees with the paper exactly: it never flips."
                             if content and ok0 else
                             " d_A⊥ flips on some triples, which the construction forbids: a bug."
                             if content else ""), "")


def sec_theorem1(doc, d):
    head, rows = section(doc, d, "## 2. Theorem 1: reversal region on a synthetic grid (METHODS §5.2)", "theorem1", "No Theorem-1 table was produced.")
    if not rows:
        return
    by = {r["metric"]: r for r in rows}
    cl = [(num(by[m]["region_share"]), m) for m in CLASSICAL if m in by]
    s = "**Paper:** every classical metric reverses on a set of positive measure; d_A⊥ never does. "
    s += "**Here:** the reversal region covers %s of the (s_A, s_B) grid for the classical metrics (%s)" % (
        rng([c[0] * 100 for c in cl]), ", ".join("%s %s" % (METRIC_LABEL.get(m, m), pct(v * 100))
                                                 for v, m in cl))
    if "aitchison" in by:
        s += ("; d_A and d_A⊥ disagree on %s of the grid (the sink-balance term decides the verdict there)"
              % pct(num(by["aitchison"]["region_share"]) * 100))
    if "content" in by:
        c = num(by["content"]["max_reversal"])
        s += ("; d_A⊥ reverses at no grid point, as the theorem says." if c == 0 else
              "; d_A⊥ reverses (max fraction %s), which contradicts the theorem: a bug." % g(c))
    else:
        s += "."
    if all(v > 0 for v, _ in cl):
        s += " Agreement: the construction reproduces the theorem exactly (it is synthetic, not a model)."
    doc.add(s, "")


def sec_band(doc, d):
    head, rows = section(doc, d, "## 3. Band collapse of classical dissimilarities (METHODS §5.2)", "band", "No band table was produced.")
    if not rows:
        return
    doc.figure("band", "range (min to max over random pairs) of each dissimilarity against the "
               "shared sink mass s; classical metrics collapse, d_A⊥ does not")
    holds = all(r["bound_holds"] == "1" for r in rows)
    first, last = rows[0], rows[-1]
    near8 = min(rows, key=lambda r: abs(num(r["s"]) - 0.8))
    sf = lambda r: "0" if num(r["s"]) < 1e-6 else g(num(r["s"]), 3)
    span = lambda r: "[%s, %s]" % (g(num(r["min_content"])), g(num(r["max_content"])))
    dspan = ("%s at every s in the table" % span(first)
             if all(span(r) == span(first) for r in rows) else
             "%s at s = %s and %s at s = %s" % (span(first), sf(first), span(last), sf(last)))
    s = ("**Paper:** for sink mass s ≥ 0.8 the cosine similarity of any two rows is at least "
         "s²/(s²+(1−s)²) ≥ 0.94. **Here:** at s = %s the smallest cosine similarity is %s (bound %s); "
         "the largest cosine distance shrinks from %s at s = %s to %s at s = %s, the largest JS from "
         "%s to %s, while d_A⊥ spans %s. " %
         (sf(near8), g(num(near8["min_cos_sim"])), g(num(near8["bound"])),
          g(num(first["max_cos_keep"]), 3), sf(first), g(num(last["max_cos_keep"]), 3), sf(last), g(num(first["max_js_keep"]), 3), g(num(last["max_js_keep"]), 3),
          dspan))
    s += ("The bound holds at every s in the table, in agreement with the paper." if holds else
          "The bound fails at some s, which contradicts the proof: a bug.")
    doc.add(s, "")


def sec_identities(doc, d):
    head, rows = section(doc, d, "## 4. Identity checks (METHODS §2–§3)", "identities", "No identity table was produced.")
    if not rows:
        return
    passed = sum(1 for r in rows if r["pass"] == "1")
    worst = max(rows, key=lambda r: num(r["max_rel_err"]))
    doc.add("%d of %d identities hold to the 1e-9 relative tolerance on random extreme rows; the "
            "largest relative error is %s (%s). The paper states these identities exactly; here "
            "they hold to rounding." % (passed, len(rows), g(num(worst["max_rel_err"]), 3),
                                         worst["identity"]), "")


def sec_ari(doc, d, sinks):
    head, rows = section(doc, d, "## 5. Clustering: ARI between conventions (METHODS §5.3)", "ari", "No clustering tables were produced.")
    if not rows:
        return
    for r in rows:
        doc.figure("mds-" + r["model"], "%s: classical MDS of the heads under JS keep, JS drop "
                   "and d_A⊥, coloured by head mean sink mass" % r["model"])
    col = lambda pair: [num(r["%s vs %s" % pair]) for r in rows]
    f3 = lambda x: "%.2f" % x
    s = ("**Paper:** ARI 0.01–0.05 between conventions: the standard pipeline's clusters are "
         "sink-mass clusters. **Here** (k = %s): ARI(JS keep, JS drop) ranges %s, ARI(JS keep, d_A⊥) "
         "%s, ARI(JS keep, sink mass only) %s, and ARI(d_A⊥ keep-computed, drop-computed) %s. " %
         (rng([num(r["k"]) for r in rows], lambda x: "%d" % x), rng(col(ARI_PAIRS[0]), f3),
          rng(col(ARI_PAIRS[1]), f3), rng(col(ARI_PAIRS[2]), f3), rng(col(ARI_PAIRS[3]), f3)))
    conv_of = {r["model"]: [num(r["%s vs %s" % p]) for p in ARI_PAIRS[:2]] for r in rows}
    agree = [m for m, v in conv_of.items() if all(not math.isnan(x) and x <= 0.05 for x in v)]
    more = [m for m, v in conv_of.items() if any(x > 0.05 for x in v)]
    msink = lambda m: ("mean head sink mass %.3f, SD %.3f" %
                       (num(sinks[m]["mean_sink"]), num(sinks[m]["sd_sink"])) if m in sinks else "")
    if agree:
        s += ("In %s the conventions disagree as completely as in the paper (both ARIs ≤ 0.05). "
              % listing([(m, msink(m)) for m in agree]) if all(m in sinks for m in agree) else
              "In %s the conventions disagree as completely as in the paper. " % ", ".join(agree))
    sk = {r["model"]: num(r["%s vs %s" % ARI_PAIRS[2]]) for r in rows}
    kk = {r["model"]: int(num(r["k"])) for r in rows}
    named = lambda ms: (listing([(m, msink(m)) for m in ms]) if all(m in sinks for m in ms)
                        else ", ".join(ms))
    weak = [m for m in more if not sk[m] > 0.5]
    sinky = [m for m in more if sk[m] > 0.5]
    # "dropping the sink changes little" only where it leaves the JS partition as it was
    kept = [m for m in weak if conv_of[m][0] > 0.99]
    moved = [m for m in weak if not conv_of[m][0] > 0.99]
    if kept:
        s += ("In %s they agree more than in the paper: dropping the sink leaves the JS partition "
              "unchanged (ARI(JS keep, JS drop) %s), and the JS-keep partition is not a sink-mass "
              "partition (ARI with the sink-only clustering %s): the sinks do not organise the heads. " %
              (named(kept), rng([conv_of[m][0] for m in kept], f3), rng([sk[m] for m in kept], f3)))
    if moved:
        s += ("In %s dropping the sink does change the JS partition (ARI(JS keep, JS drop) %s, "
              "against the paper's 0.01–0.05), while the JS-keep partition does not follow the "
              "sink-only clustering (ARI %s): the sink moves heads between clusters without being "
              "what they cluster on. " %
              (named(moved), rng([conv_of[m][0] for m in moved], f3), rng([sk[m] for m in moved], f3)))
    for m in sinky:
        heads = int(num(sinks[m]["heads"])) if m in sinks else 0
        s += ("In %s the JS-keep partition does follow the sink-only clustering (ARI %.2f), yet "
              "dropping the sink leaves it (ARI %.2f)%s. " %
              (named([m]), sk[m], conv_of[m][0],
               "; with only %d heads in %d clusters the partitions are coarse" % (heads, kk[m])
               if 0 < heads < 3 * kk[m] else ""))
    ones = [x for x in col(ARI_PAIRS[3]) if not math.isnan(x)]
    if ones:
        s += ("d_A⊥ computed either way gives the same partition (ARI 1), as it must."
              if all(abs(x - 1) < 1e-9 for x in ones) else
              "d_A⊥ computed the two ways gives different partitions, which it should not.")
    doc.add(s, "")


def sec_prune(doc, d):
    head, rows = section(doc, d, "## 6. Pruning by redundancy (METHODS §5.4)", "prune", "No pruning tables were produced.")
    if not rows:
        return
    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    for m in models:
        doc.figure("prune-" + m, "%s: held-out perplexity against the share of heads pruned, per "
                   "pruning order" % m)
    cols = [c for c in head if c.startswith("ppl@")]
    by = {(r["model"], r["metric"]): r for r in rows}

    def at_max(m, met):
        """(sparsity, perplexity) at the model's largest sparsity with a value, or None."""
        r = by.get((m, met))
        if r is None:
            return None
        got = [(num(c.split("@")[1]), num(r[c])) for c in cols if not math.isnan(num(r[c]))]
        return max(got) if got else None

    items, ratios_js, ratios_ca, worse, equal = [], [], [], [], []
    for m in models:
        js, ca = at_max(m, "js_keep"), at_max(m, "content_full")
        base = num((by.get((m, "js_keep")) or by.get((m, "content_full")) or {}).get("unpruned"))
        if js is None or ca is None or js[0] != ca[0] or math.isnan(base):
            continue
        items.append((m, "%s → %s with JS keep vs %s with d_A⊥ at %s pruned" %
                      (g(base), g(js[1]), g(ca[1]), pct(js[0] * 100))))
        ratios_js.append(js[1] / base)
        ratios_ca.append(ca[1] / base)
        if js[1] > ca[1]:
            worse.append(m)
        elif js[1] == ca[1]:
            equal.append(m)
    s = ("**Paper:** JS pruning of Llama-3.2-1B inflates perplexity 15.3 → 2094 (×137) while d_A⊥ "
         "pruning stays stable. ")
    if not items:
        doc.add(s + "**Here:** no model has both JS-keep and d_A⊥ pruning results.", "")
        return
    fx = lambda x: "×%.2f" % x if x < 10 else "×%.0f" % x
    s += ("**Here** (unpruned perplexity → pruned): %s. Over %d model%s JS-keep pruning multiplies "
          "perplexity by %s and d_A⊥ pruning by %s; JS keep is worse than d_A⊥ in %d, equal in %d "
          "and better in %d. " %
          (listing(items), len(items), "s" if len(items) > 1 else "", rng(ratios_js, fx),
           rng(ratios_ca, fx), len(worse), len(equal), len(items) - len(worse) - len(equal)))
    # empty perplexity cells in a model's own sparsities mean a failed evaluation upstream
    holes = sorted({r["model"] for r in rows for c in cols
                    if r[c] == "nan" and any(q[c] != "nan" for q in rows if q["model"] == r["model"])})
    if holes:
        s += ("Some perplexities are missing in the input tables (%s); those cells read nan and are "
              "left out. " % ", ".join(holes))
    big = [m for m, r in zip([i[0] for i in items], ratios_js) if r > 10]
    if big:
        s += ("JS-keep pruning blows up perplexity (more than ×10) in %s, as in the paper."
              % ", ".join(big))
    else:
        sinks = sink_profile(d)
        hs = [int(num(sinks[m]["heads"])) for m in models if m in sinks]
        strong = [m for m in models if m in sinks and num(sinks[m]["max_sink"]) > 0.5]
        s += ("Nothing here approaches the paper's ×137 (largest ×%.2f). These models have %s heads "
              "and %s, so a JS order has few sink-dominated heads to be drawn to" %
              (max(ratios_js), rng(hs, lambda x: "%d" % x) if hs else "few",
               "no head with sink mass above 0.5" if not strong else
               "heads with sink mass above 0.5 only in %s" % ", ".join(strong)))
        s += ("; the orders often pick the same heads, hence equal perplexities." if equal else ".")
    doc.add(s, "")


def sec_collapse(doc, d):
    head, rows = section(doc, d, "## 7. Entropy collapse over training (METHODS §5.5)", "collapse", "No entropy-collapse tables were produced (no trained model with checkpoints).")
    if not rows:
        return
    for r in rows:
        doc.figure("collapse-" + r["model"], "%s: mean attention entropy H over training and its "
                   "parts H_b(s) (sink) and (1−s)H(π) (content)" % r["model"])
    parts = [(r["model"], num(r["sink_share"]) * 100, num(r["total_drop"])) for r in rows]
    s = ("**Paper:** share of the entropy drop due to the sink 30%% (Pythia-70M), 95%% (1B), "
         "79%% (1.4B). **Here:** %s. " % listing([(m, pct(v)) for m, v, _ in parts]))
    lo = [m for m, v, t in parts if not math.isnan(v) and v < 30]
    if len(lo) == len(parts):
        s += ("Every share is below the paper's smallest: in minutes of training these models "
              "sharpen their content attention while their sinks stay weak, so most of the drop is "
              "content.")
    elif not lo:
        s += "Every share is at least the paper's smallest (30%), in line with the paper."
    else:
        s += ("The shares straddle the paper's smallest (30%%): %s below it." % ", ".join(lo))
    neg = [m for m, _, t in parts if t <= 0]
    if neg:
        s += " The mean entropy did not fall for %s, so its share is not meaningful." % ", ".join(neg)
    doc.add(s, "")


METRIC_NAME = {"js_keep": "JS keep", "js_drop": "JS drop", "cos_keep": "cosine keep", "content_full": "d_A⊥",
               "content_drop": "d_A⊥ (drop)", "aitchison": "d_A"}


def observed_rule(conf):
    """The rule `regime --fit` measured safety by, from the options in the thresholds file's
    provenance line ({} when there is none)."""
    p = file_provenance(conf)
    o = p.get("options", {}) if isinstance(p, dict) else {}
    return o if isinstance(o, dict) and all(k in o for k in ("classical", "content", "ratio", "sparsity")) else {}


def observed_definition(conf):
    """What "observed safe" means (docs/ANALYSIS.md, regime), with the numbers of this run."""
    o = observed_rule(conf) if conf else {}
    if not o:
        return ("*Observed* is measured, not predicted: a model is observed unsafe when pruning its "
                "heads in the classical order (JS keep) raises held-out perplexity by more than a fixed "
                "multiple of what pruning in the d_A⊥ order does at the same share of heads, and observed "
                "safe otherwise (docs/ANALYSIS.md, regime).")
    cl, co = (METRIC_NAME.get(o[k], o[k]) for k in ("classical", "content"))
    return ("*Observed* is measured, not predicted: with %s of its heads pruned, a model is observed "
            "unsafe when pruning in the %s order raises its held-out perplexity by more than %s times "
            "what pruning in the %s order does (when the %s increase is zero or negative: by anything at "
            "all), and observed safe otherwise (docs/ANALYSIS.md, regime). The verdict predicts this from "
            "the dispersion alone: safe below τ_lo, unsafe above τ_hi, abstain between."
            % (pct(100 * o["sparsity"]).replace(".0%", "%"), cl, g(o["ratio"]), co, co))


def dev_fit_sentence(dev, conf):
    """Which development outcomes are in-sample, from the regime table's `fitted` column: only
    the models the thresholds were fitted on, and only as they are now when the fit saw the same
    distance file."""
    if any(r.get("fitted", "-") == "-" for r in dev):
        return ("The development models' outcomes (%s) are in-sample: the thresholds were fitted on "
                "development models." % ", ".join(r["outcome"] for r in dev))
    same = [r for r in dev if r["fitted"] == "yes"]
    then = [r for r in dev if r["fitted"] == "earlier"]
    never = [r for r in dev if r["fitted"] == "no"]
    out = lambda rs: listing([(r["model"], r["outcome"]) for r in rs])
    parts = []
    if same:
        parts.append("%s %s in-sample: the thresholds (%s) were fitted on %s." % (
            out(same), "is" if len(same) == 1 else "are", conf, "it" if len(same) == 1 else "them"))
    if then:
        parts.append("The thresholds (%s) were fitted on %s as %s before retraining (the distance "
                     "files its provenance records differ from this run's: fitted = earlier), so these "
                     "outcomes are in-sample only for the earlier model%s." % (
                         conf, out(then), "it was" if len(then) == 1 else "they were",
                         "" if len(then) == 1 else "s"))
    if never and len(never) == 1:
        parts.append("%s was never part of the fit: a development model by role, its outcome tests "
                     "the frozen thresholds as a held-out model's does." % out(never))
    elif never:
        parts.append("%s were never part of the fit: development models by role, their outcomes test "
                     "the frozen thresholds as held-out models' do." % out(never))
    return " ".join(parts)


def sec_regime(doc, d, conf=None):
    doc.add("## 8. Regime map and frozen predictor (METHODS §5.6)", "")
    head, rows = load(d, "regime")
    if not rows:
        doc.add("No regime table was produced (the thresholds file or the models' distance files "
                "are missing), so the predictor was not tested here.", "")
        return
    doc.table("regime")
    doc.figure("regime", "sink dispersion per model with the frozen thresholds τ_lo and τ_hi "
               "and each held-out model's verdict")
    if any(r["observed"] not in ("-", "") for r in rows):
        doc.add(observed_definition(conf), "")
    held = [r for r in rows if r["role"] != "dev"]
    outcomes = [r["outcome"] for r in held if r["outcome"] not in ("-", "")]
    disp = [(r["model"], "%s, %.3g" % (r["role"], num(r["dispersion"]))) for r in rows]
    s = ("**Paper:** one confirmation, one abstention, one failure. **Here:** dispersions %s. "
         % listing(disp))
    plural = lambda n, w: "%d %s%s" % (n, w, "" if n == 1 else "s")
    if outcomes:
        cnt = {o: outcomes.count(o) for o in ("confirmation", "abstention", "failure")}
        s += ("Over %s the frozen predictor gives %s, %s and %s" %
              (plural(len(outcomes), "held-out model"), plural(cnt["confirmation"], "confirmation"),
               plural(cnt["abstention"], "abstention"), plural(cnt["failure"], "failure")))
        s += (", the paper's pattern." if cnt == {"confirmation": 1, "abstention": 1, "failure": 1}
              else "; the pattern differs from the paper's, whose held-out models are large "
                   "pretrained transformers, while here they are small trained or 260K-parameter "
                   "models and the thresholds come from a small development ladder.")
        dev = [r for r in rows if r["role"] == "dev" and r["outcome"] not in ("-", "")]
        if dev:
            s += " " + dev_fit_sentence(dev, conf)
    elif any(r["verdict"] not in ("-", "") for r in rows):
        s += "No held-out model has pruning results, so no verdict could be tested."
    else:
        s += ("Only the dispersion table exists: the thresholds were not fitted (no "
              "configs/regime-PROFILE.conf), so no verdicts were made.")
    doc.add(s, "")


def recipe_options(path):
    """The options a training report's provenance line records ({} when it has none)."""
    try:
        with open(path, encoding="utf-8") as f:
            first = f.readline()
        return json.loads(first[1:]).get("options", {}) if first.startswith("#") else {}
    except (OSError, ValueError, AttributeError):
        return {}


def training_data(opt):
    """What a model trained on, from its recipe: 'bytes', 'BPE N', and the synthetic windows a
    recipe mixes in (docs/TRAIN.md), which the validation books never contain."""
    s = "BPE %d" % opt["bpe_merges"] if opt.get("bpe_merges") else "bytes"
    if opt.get("synthetic_share"):
        s += " + %g%% synthetic %s windows" % (100 * opt["synthetic_share"], opt.get("synthetic_task", "?"))
        if opt.get("synthetic_carrier"):
            s += " on a %s carrier" % opt["synthetic_carrier"]
        if opt.get("synthetic_rules"):
            s += ", %d rules" % opt["synthetic_rules"]
        if opt.get("synthetic_triggers"):
            s += ", %d trigger kinds" % opt["synthetic_triggers"]
    return s


def training_data_sentence(rows):
    mixed = [(r["model"], r["training_data"]) for r in rows if "synthetic" in r["training_data"]]
    s = ("Every model trains on the KJV training books and is validated on the held-out books, "
         "which hold no synthetic windows")
    if mixed:
        s += "; the training stream of %s mixes in synthetic trigger → copy windows" % listing(mixed)
    return s + ". "


def sec_train(doc, d):
    head, rows = section(doc, d, "## 9. Trained models: validation loss and sink profile", "train", "No training reports were produced.")
    if not rows:
        return
    ms = [num(r["mean_sink"]) for r in rows]
    s = ("Models trained on the King James Bible reach validation losses of %s "
         "nats/byte (%s bits/byte); their heads' mean sink mass is %s, the largest head's %s. " %
         (rng([num(r["val_nats_per_byte"]) for r in rows], lambda x: "%.3f" % x),
          rng([num(r["val_bits_per_byte"]) for r in rows], lambda x: "%.3f" % x),
          rng(ms, lambda x: "%.3f" % x), rng([num(r["max_sink"]) for r in rows], lambda x: "%.3f" % x)))
    s += training_data_sentence(rows)
    strong = [(r["model"], num(r["max_sink"])) for r in rows if num(r["max_sink"]) > 0.5]
    s += ("The paper's models are trained far longer on far more text, and most of their heads put "
          "most of their attention on the sink; ")
    if not strong:
        s += ("no head here does (largest %s), which is the main reason the sink-driven effects "
              "above are smaller here." % rng([num(r["max_sink"]) for r in rows], lambda x: "%.3f" % x))
    else:
        s += "here only %s %s heads like that" % (", ".join(m for m, _ in strong),
                                                  "has" if len(strong) == 1 else "have")
        head, rev = load(d, "reversal")
        if rev:   # is a strong-sink model the one with the highest classical flip rate?
            top = max((num(r[m]), m, r["metric"]) for r in rev if r["metric"] in CLASSICAL for m in head[1:])
            if top[1] in [m for m, _ in strong]:
                s += (", and %s has the highest flip rate above, under %s (%s)"
                      % (top[1], METRIC_LABEL.get(top[2], top[2]), pct(top[0])))
        s += "."
    doc.add(s, "")


def sec_frames(doc, d):
    head, rows = section(doc, d, "## 10. Reference frames (METHODS §7; Ruscio, Nanni and Silvestri 2025)",
                         "frames", "No reference-frame tables were produced (no model analysed).")
    if not rows:
        return
    labs = [(r["model"], "%s, %s" % (r["label"], r["position"])) for r in rows]
    kinds = sorted({r["label"] for r in rows if r["label"] != "none"})
    s = ("**Seed:** attention sinks are reference frames of three kinds, centralized, distributed "
         "and bidirectional. **Here** (label, position encoding): %s. " % listing(labs))
    s += ("Kinds found: %s." % ", ".join(kinds) if kinds else "No model has a sink frame by the §7 rule.")
    sinks = sink_profile(d)
    # a reference point needs received mass >= tau_r = 0.3 (METHODS §7.1); below it on the first
    # key in every head, a label is made by other keys
    weak = [r for r in rows if r["label"] != "none" and r["model"] in sinks
            and num(sinks[r["model"]]["max_sink"]) < FRAMES_TAU_R]
    if weak:
        s += (" The label%s of %s %s not come from attention sinks: no head of %s gives the sink "
              "token more than %s of its mass on average (max_sink in the sink profile), below the "
              "%.1f a reference point needs, so %s reference points are other keys." % (
                  "" if len(weak) == 1 else "s", listing([(r["model"], r["label"]) for r in weak]),
                  "does" if len(weak) == 1 else "do", "this model" if len(weak) == 1 else "these models",
                  " / ".join("%.3f" % num(sinks[r["model"]]["max_sink"]) for r in weak), FRAMES_TAU_R,
                  "its" if len(weak) == 1 else "their"))
    doc.add(s, "")
    rope = [r for r in rows if r["position"] == "rope"]
    s = "**Seed:** standard RoPE gives centralized frames. **Here:** "
    if rope:
        cen = [r["model"] for r in rope if r["label"] == "centralized"]
        s += ("%d of %d RoPE models are centralized (%s)" % (len(cen), len(rope), ", ".join(cen) or "none")
              + ("; the others: %s." % listing([(r["model"], r["label"]) for r in rope if r["label"] != "centralized"])
                 if len(cen) < len(rope) else "."))
    else:
        s += "no RoPE model was analysed."
    ntk = [r for r in rows if r["position"] == "rope-ntk"]
    s += " **Seed:** NTK-aware RoPE gives distributed frames. **Here:** "
    s += (listing([(r["model"], r["label"]) for r in ntk]) + "." if ntk else
          "none of these models uses NTK-aware RoPE%s." % (
              "; the matched position-encoding set below tests the claim" if load(d, "frames-pos")[1]
              else ", so this claim is not tested"))
    enc = [r for r in rows if model_conf(r["model"]).get("family") in ENCODER_FAMILIES]
    s += " **Seed:** encoders give bidirectional frames. **Here:** "
    s += (listing([(r["model"], r["label"]) for r in enc]) + "." if enc else "no encoder was analysed.")
    doc.add(s, "")
    for r in rows:
        doc.figure("frames-keys-" + r["model"], "%s: received mass r and lift z per layer and key "
                   "position, averaged over heads and sequences" % r["model"])
    head, em = load(d, "frames-emergence")
    if em:
        doc.table("frames-emergence")
        for r in em:
            doc.figure("frames-" + r["model"], "%s: each head's reference-frame label at each checkpoint" % r["model"])
        got = [r for r in em if r["emergence_step"] != "nan"]
        s = "**Seed:** frames form in the earliest stages of training. **Here:** "
        s += (listing([(r["model"], "%s from step %s" % (r["label"], r["emergence_step"])) for r in got]) + ". "
              if got else "no trained model keeps a sink label for three consecutive checkpoints. ")
        none = [r["model"] for r in em if r["emergence_step"] == "nan"]
        if got and none:
            s += "No stable sink label: %s." % ", ".join(none)
        doc.add(s, "")


def sec_frames_pos(doc, d):
    """The matched position-encoding set (METHODS §7.4): the seed's RoPE / NTK-aware RoPE
    prediction beside the labels measured on models that differ only in pos."""
    head, rows = load(d, "frames-pos")
    if not rows:
        return
    trials = sorted({conf_trial(r["model"]) for r in rows} - {None})
    recipe = ("the sink study's recipe of trial %s, docs/TRIALS.md" % trials[0] if len(trials) == 1
              else "the sink study's recipes of trials %s, docs/TRIALS.md" % ", ".join(trials) if trials
              else "docs/TRAIN.md")
    doc.add("### Position encoding as the only difference (METHODS §7.4)", "",
            "%d models trained with one recipe (configs/kjv-pos-*.conf: %s) that differ only in the "
            "position encoding, each labelled on the same validation windows as the other text "
            "models, and every checkpoint labelled for the emergence step." % (len(rows), recipe), "")
    doc.table("frames-pos")
    by = {r["pos"]: r for r in rows}

    def said(r):
        ru = "" if r["runner_up"] in ("-", "") else ", runner-up %s" % r["runner_up"]
        return "%s (%s%s, sink-head share %s of layers ≥ 1)" % (r["model"], r["label"], ru, r["sink_head_share"])
    rope, ntk = by.get("rope"), by.get("rope-ntk")
    s = ("**Seed:** standard RoPE gives centralized frames, NTK-aware RoPE distributed ones. **Here:** ")
    if rope and ntk:
        s += "RoPE %s, NTK-aware RoPE %s. " % (said(rope), said(ntk))
        if rope["label"] == "none" and ntk["label"] == "none":
            s += ("Neither has a sink frame by the §7 rule, so at this training budget the prediction is "
                  "not tested: it is neither confirmed nor contradicted.")
        elif rope["label"] == ntk["label"]:
            s += ("Both get the same label (%s): the difference the seed predicts between the two is not "
                  "seen here." % rope["label"])
        else:
            parts = ["RoPE is %s as predicted" % rope["label"] if rope["label"] == "centralized"
                     else "RoPE is %s, not centralized as predicted" % rope["label"],
                     "NTK-aware RoPE is %s as predicted" % ntk["label"] if ntk["label"] == "distributed"
                     else "NTK-aware RoPE is %s, not distributed as predicted" % ntk["label"]]
            s += "The labels differ: %s." % "; ".join(parts)
    else:
        s += "the set lacks %s, so the prediction is not tested." % " and ".join(
            x for x, r in (("RoPE", rope), ("NTK-aware RoPE", ntk)) if not r)
    doc.add(s, "")
    others = [r for r in rows if r["pos"] not in ("rope", "rope-ntk")]
    if others:
        kinds = sorted({r["label"] for r in rows})
        doc.add("The other encodings (no prediction in the seed): %s. Labels over the whole set: %s." % (
            listing([(r["pos"], r["label"]) for r in others]), ", ".join(kinds)), "")
    got = [r for r in rows if r["emergence_step"] != "nan"]
    s = "**Seed:** frames form in the earliest stages of training. **Here:** "
    s += (listing([(r["pos"], "from step %s" % r["emergence_step"]) for r in got]) +
          " keep one sink label for three checkpoints in a row" if got else
          "no model of the set keeps a sink label for three consecutive checkpoints")
    rest = [r["pos"] for r in rows if r["emergence_step"] == "nan"]
    s += ("; no stable sink label: %s." % ", ".join(rest) if got and rest else ".")
    doc.add(s, "")
    for r in rows:
        doc.figure("frames-" + r["model"], "%s (pos = %s): each head's reference-frame label at each "
                   "checkpoint" % (r["model"], r["pos"]))


def cmd_results(out, args):
    d, skipped, profile, conf = args[0], "", "", None
    rest = args[1:]
    while rest:
        if rest[0] == "--skipped" and len(rest) > 1:
            skipped, rest = rest[1], rest[2:]
        elif rest[0] == "--profile" and len(rest) > 1:
            profile, rest = rest[1], rest[2:]
        elif rest[0] == "--regime-conf" and len(rest) > 1:
            conf, rest = rest[1] or None, rest[2:]
        else:
            die("results: unknown argument %s" % rest[0])
    doc = Doc(d)
    sinks = sink_profile(d)
    doc.add("# attncoda: results%s" % (" (profile %s)" % profile if profile else ""), "",
            "Generated by `make paper` (pipelines/paper.mk, docs/PAPER.md) from the tables of this "
            "run; every number and sentence below is computed from them. Tables are also in "
            "`tables/*.tex` for LaTeX.", "")
    if sinks:
        doc.add("Models analysed: %s." % listing(
            [(m, "%s heads, mean sink mass %.3f" % (r["heads"], num(r["mean_sink"])))
             for m, r in sinks.items()]), "")
        doc.table("sinks")
    if skipped.strip():
        doc.add("Not analysed (checkpoint not present): %s. The paper's own models are compared "
                "only through its published numbers." % ", ".join(skipped.split()), "")
    sec_reversal(doc, d, sinks)
    sec_theorem1(doc, d)
    sec_band(doc, d)
    sec_identities(doc, d)
    sec_ari(doc, d, sinks)
    sec_prune(doc, d)
    sec_collapse(doc, d)
    sec_regime(doc, d, conf)
    sec_train(doc, d)
    sec_frames(doc, d)
    sec_frames_pos(doc, d)
    # provenance: the derived tables this text was computed from, with their checksums
    data = sorted(f for f in os.listdir(os.path.join(d, "data")) if f.endswith(".tsv")) \
        if os.path.isdir(os.path.join(d, "data")) else []
    doc.add("<!-- provenance: %s -->" % json.dumps(
        {"program": PROG, "version": VERSION, "command": "results", "profile": profile,
         "inputs": [{"name": "data/" + f, "sha256": sha256(os.path.join(d, "data", f))}
                    for f in data] + ([{"name": conf, "sha256": sha256(conf)}] if conf else [])},
        sort_keys=True, separators=(",", ":")))
    write_atomic(out, "\n".join(doc.out).rstrip("\n") + "\n")


COMMANDS = {"reversal": cmd_reversal, "theorem1": cmd_theorem1, "band": cmd_band,
            "identities": cmd_identities, "sinks": cmd_sinks, "ari": cmd_ari, "prune": cmd_prune,
            "prune-plot": cmd_prune_plot, "collapse": cmd_collapse,
            "collapse-plot": cmd_collapse_plot, "train": cmd_train, "regime": cmd_regime,
            "frames": cmd_frames, "frames-emergence": cmd_frames_emergence,
            "frames-pos": cmd_frames_pos}


def main(argv):
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0
    if len(argv) >= 2 and argv[1] == "--version":
        print("%s %s" % (PROG, VERSION))
        return 0
    if len(argv) < 3:
        sys.stderr.write("%s: usage: paper.py COMMAND OUT INPUT... (--help)\n" % PROG)
        return 2
    cmd, out, ins = argv[1], argv[2], argv[3:]
    if cmd == "results":
        if not ins:
            sys.stderr.write("%s: results: PAPER_DIR missing\n" % PROG)
            return 2
        cmd_results(out, ins)
        return 0
    if cmd not in COMMANDS:
        sys.stderr.write("%s: unknown command '%s'\n" % (PROG, cmd))
        return 2
    if not ins:
        sys.stderr.write("%s: %s: no input tables\n" % (PROG, cmd))
        return 2
    COMMANDS[cmd](out, ins)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
