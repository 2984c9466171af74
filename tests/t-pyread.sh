#!/bin/bash
# Outputs read naturally in Python: string attributes come back as str, every analysis dataset
# has named axes for h5py (dims[i].label) and xarray/h5netcdf (dimension scales), the h5py and
# xarray snippets of docs/FORMAT.md run as written on real outputs, files with the old
# fixed-length string attributes are still read, and extract -> h5py export -> import gives the
# same attention.
source tests/lib.sh
if ! $PYTHON -c "import xarray, h5netcdf" 2>/dev/null; then
    fail "python3-xarray and python3-h5netcdf are needed (configs/debian-packages.txt)"
    exit 0
fi
P=$T/py; mkdir -p "$P"
"$BIN/synth" -S 2 -L 2 -H 3 -T 8 --seed 4 "$P/attention.h5"
"$BIN/clr" "$P/attention.h5" "$P/clr.h5"
"$BIN/decompose" "$P/attention.h5" "$P/decompose.h5"
"$BIN/distance" "$P/attention.h5" "$P/distance.h5" >/dev/null
# more distance files: a subset's original ids, --aggregate sum, a merge of shards
$PYTHON -c "
import h5py, numpy as np, shutil, sys
shutil.copy(sys.argv[1], sys.argv[2])
f = h5py.File(sys.argv[2], 'a'); f['layer_index'] = np.array([3, 7], np.int32); f['head_index'] = np.array([1, 4, 6], np.int32)" \
    "$P/attention.h5" "$P/subset.h5"
"$BIN/distance" "$P/subset.h5" "$P/d-subset.h5" >/dev/null
"$BIN/distance" --aggregate sum "$P/attention.h5" "$P/d-sum.h5" >/dev/null
"$BIN/distance" --seqs 0:1 "$P/attention.h5" "$P/d-s1.h5" >/dev/null
"$BIN/distance" --seqs 1:2 "$P/attention.h5" "$P/d-s2.h5" >/dev/null
"$BIN/distance" --merge "$P/d-merged.h5" "$P/d-s2.h5" "$P/d-s1.h5" >/dev/null

# every ```python block of docs/FORMAT.md, run in the directory of those files
$PYTHON - docs/FORMAT.md "$P" <<'EOF'
import os, re, subprocess, sys
doc, d = sys.argv[1:]
blocks = re.findall(r"```python\n(.*?)```", open(doc).read(), re.S)
for i, code in enumerate(blocks):
    r = subprocess.run([sys.executable, "-c", code], cwd=d, capture_output=True, text=True)
    err = r.stderr.strip().splitlines()[-1] if r.returncode else ""
    print(("ok" if r.returncode == 0 else "not ok") + f" - docs/FORMAT.md python snippet {i + 1} runs {err}")
print(("ok" if len(blocks) == 4 else "not ok") + f" - docs/FORMAT.md has a snippet per file kind ({len(blocks)})")
EOF

$PYTHON - "$P" <<'EOF'
import sys, h5py
P = sys.argv[1]
ok = True
for name in ("attention", "clr", "decompose", "distance"):
    with h5py.File(f"{P}/{name}.h5", "r") as f:
        for k, v in f.attrs.items():
            ok &= not isinstance(v, bytes)
        ok &= isinstance(f.attrs["provenance"], str) and isinstance(f.attrs["model"], str)
print(("ok" if ok else "not ok") + " - string attributes (format, model, family, values, provenance...) read as str")

want = {"attention.h5": {"attention": "sequence layer head query key", "tokens": "sequence query"},
        "clr.h5": {"clr": "sequence layer head query key", "clr_content": "sequence layer head query key",
                   "sink_balance": "sequence layer head query", "attention": "sequence layer head query key"},
        "decompose.h5": {"row/entropy": "sequence layer head query", "row/sink_mass": "sequence layer head query",
                         "head/entropy": "layer head", "head/rows": "layer head"},
        "distance.h5": {"distance/js_keep": "head_a head_b", "sum/aitchison": "head_a head_b",
                        "head_sink_mass": "head_a"}}
ok = True
for fn, dsets in want.items():
    with h5py.File(f"{P}/{fn}", "r") as f:
        for name, axes in dsets.items():
            d = f[name]
            labels = " ".join(x.label for x in d.dims)
            scales = " ".join(x[0].name.split("/")[-1] if len(x) else "-" for x in d.dims)
            if labels != axes or scales != axes:
                ok = False
                print(f"# {fn} {name}: labels '{labels}', scales '{scales}', want '{axes}'")
print(("ok" if ok else "not ok") + " - h5py: labels and dimension scales name every axis")
EOF

# xarray on the labelled arrays: selection by name agrees with positional h5py indexing
$PYTHON - "$P" <<'EOF' 2>/dev/null
import sys, h5py, numpy as np, xarray as xr
P = sys.argv[1]
ds = xr.open_dataset(f"{P}/attention.h5", engine="h5netcdf")
a = h5py.File(f"{P}/attention.h5", "r")["attention"]
ok = ds.attention.dims == ("sequence", "layer", "head", "query", "key") and ds.attention.shape == a.shape
ok &= np.array_equal(ds.attention.sel(sequence=1, layer=0, head=2).values, a[1, 0, 2])
ok &= ds.attrs["format"] == "attncoda-attention" and list(ds.layer.values) == [0, 1]
dd = xr.open_dataset(f"{P}/distance.h5", engine="h5netcdf", group="distance")
ok &= float(dd.cos_keep.sel(head_a=1, head_b=4)) == h5py.File(f"{P}/distance.h5", "r")["distance/cos_keep"][1, 4]
print(("ok" if ok else "not ok") + " - xarray (h5netcdf) opens attention and distance files as labelled arrays")
EOF

# Distance files as netCDF-4 (docs/FORMAT.md): every group opens in xarray without phony_dims,
# with every axis named and the original layer/head as coordinates of both head axes; netCDF-C
# (python3-netcdf4) reads every variable with the same values as h5py; CF attributes.
$PYTHON - "$P" <<'EOF' 2>"$T/xr.err"
import sys, h5py, numpy as np, xarray as xr
P = sys.argv[1]
groups = [None, "distance", "sum", "exact", "rms", "sum_sq", "exact_sq"]
for fn in ("distance", "d-subset", "d-sum", "d-merged", "d-s1"):
    path = f"{P}/{fn}.h5"
    h = h5py.File(path, "r")
    L, H = int(h.attrs["layers"]), int(h.attrs["heads"])
    hl, hi = h["head_layer"][...], h["head_index"][...]
    ok, nvar = True, 0
    for g in groups:
        ds = xr.open_dataset(path, engine="h5netcdf", group=g)
        for name, v in ds.data_vars.items():
            nvar += 1
            hv = h[(g + "/" if g else "") + name]
            ok &= v.shape == hv.shape and np.array_equal(v.values, hv[...]) and v.dtype == hv.dtype
            ok &= all(not d.startswith("phony") for d in v.dims)
            ok &= "long_name" in v.attrs and "units" in v.attrs
        if g:
            ok &= ds.sizes["head_a"] == ds.sizes["head_b"] == L * H
            ok &= np.array_equal(ds.head_layer_a.values, hl) and np.array_equal(ds.head_index_b.values, hi)
            v = ds["aitchison"]
            ok &= v.dims[:2] == ("head_a", "head_b") and set(v.coords) >= {"head_layer_a", "head_index_a", "head_layer_b", "head_index_b"}
        else:
            ok &= set(ds.head_sink_mass.coords) == {"head_a", "head_layer", "head_index"} and ds.rows.dims == ("one",)
    ok &= nvar == 2 + 6 * 10 + 1 and h.attrs["Conventions"] == "CF-1.8"
    print(("ok" if ok else "not ok") + f" - xarray (h5netcdf) opens every group of {fn}.h5 ({nvar} variables) with "
          "named axes, head_layer/head_index coordinates, the same values as h5py, long_name and units")
# selection by original layer and head: the pair (layer 7 head 4, layer 3 head 6) of the subset
d = xr.open_dataset(f"{P}/d-subset.h5", engine="h5netcdf", group="rms")
d = d.set_index(head_a=["head_layer_a", "head_index_a"], head_b=["head_layer_b", "head_index_b"])
x = float(d.js_keep.sel(head_a=(7, 4), head_b=(3, 6)))
ok = x == h5py.File(f"{P}/d-subset.h5", "r")["rms/js_keep"][4, 2]
print(("ok" if ok else "not ok") + " - xarray: a pair selected by original (layer, head) on both axes")
EOF
if [ -s "$T/xr.err" ]; then fail "xarray on distance files: $(tail -1 "$T/xr.err")"; fi
if $PYTHON -c "import netCDF4" 2>/dev/null; then
    $PYTHON - "$P" <<'EOF'
import sys, h5py, numpy as np, netCDF4
P = sys.argv[1]
for fn in ("distance", "d-merged"):
    path = f"{P}/{fn}.h5"
    h = h5py.File(path, "r")
    ok, n = True, 0
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_mask(False)
        for grp in [nc] + list(nc.groups.values()):
            for name, v in grp.variables.items():
                n += 1
                hv = h[grp.path.rstrip("/") + "/" + name]
                ok &= np.array_equal(v[...], hv[...]) and v.dtype == hv.dtype
                if "_FillValue" in v.ncattrs():
                    ok &= np.asarray(v.getncattr("_FillValue")).dtype == v.dtype
                ok &= v.getncattr("units") is not None
        ok &= np.isnan(nc["rms/js_keep"].getncattr("_FillValue")) and "_FillValue" not in nc["exact/js_keep"].ncattrs()
        ok &= nc.getncattr("Conventions") == "CF-1.8" and set(nc.groups) == {"distance", "sum", "exact", "rms", "sum_sq", "exact_sq"}
    print(("ok" if ok else "not ok") + f" - netCDF-C (python3-netcdf4) reads all {n} variables of {fn}.h5 as h5py does; "
          "_FillValue (NaN) of each float variable's own type, CF Conventions")
EOF
else
    skip "netCDF-C reads every distance file variable" "python3-netcdf4"
fi

# Old files: string attributes as fixed-length ASCII and no dimension scales still read, with
# the same numbers.
$PYTHON - "$P/attention.h5" "$P/old.h5" <<'EOF'
import sys, h5py, numpy as np
src, dst = sys.argv[1:]
with h5py.File(src, "r") as a, h5py.File(dst, "w") as b:
    for k, v in a.attrs.items():
        b.attrs[k] = np.bytes_(v.encode()) if isinstance(v, str) else v
    for k in ("attention", "tokens"):
        b[k] = a[k][...]
EOF
"$BIN/decompose" "$P/old.h5" "$P/old.dec.h5"
check "files with fixed-length string attributes read as before" $PYTHON -c "
import h5py, numpy as np, sys
a, b = (h5py.File(f, 'r') for f in sys.argv[1:])
assert a.attrs['model'] == 'synth'
assert all(np.array_equal(a['head/' + k][...], b['head/' + k][...], equal_nan=True) for k in a['head'])" \
    "$P/old.dec.h5" "$P/decompose.h5"

# Round trip: extract -> export with h5py (.npy of probabilities, and of log-probabilities) ->
# import gives the same attention, bit for bit (rows that close to float32 precision are kept).
$PYTHON tests/ref/make_tiny.py gpt2 "$T/ck"
printf '1 5 9 13 17 21 25 29 33 37 41 45\n2 4 6 8 10 12 14 16 18 20 22 24\n' >"$T/ids.txt"
"$BIN/extract" --model "$T/ck" --ids "$T/ids.txt" "$T/ext.h5"
$PYTHON -c "
import h5py, numpy as np, sys
f = h5py.File(sys.argv[1], 'r')
np.save(sys.argv[2], f['attention'][...])
np.save(sys.argv[3], np.exp(f['attention'][...].astype(np.float64)))
open(sys.argv[4], 'w').write('\n'.join(' '.join(map(str, r)) for r in f['tokens'][...]) + '\n')" \
    "$T/ext.h5" "$T/logp.npy" "$T/p.npy" "$T/tok.txt"
"$BIN/import" --log --tokens "$T/tok.txt" "$T/logp.npy" "$T/rt_log.h5"
"$BIN/import" --tokens "$T/tok.txt" "$T/p.npy" "$T/rt_p.h5"
"$BIN/import" --log "$T/ext.h5:/attention" "$T/rt_h5.h5"
$PYTHON - "$T" <<'EOF'
import sys, h5py, numpy as np
T = sys.argv[1]
e = h5py.File(f"{T}/ext.h5", "r")
a = e["attention"][...]
for n in ("rt_log", "rt_p", "rt_h5"):
    f = h5py.File(f"{T}/{n}.h5", "r")
    b = f["attention"][...]
    fin = np.isfinite(a)
    d = np.abs(a[fin].astype(np.float64) - b[fin]) / np.maximum(1, np.abs(a[fin]))
    ok = np.array_equal(a, b) and f.attrs["causal"] == 1
    ok &= np.array_equal(f["tokens"][...], e["tokens"][...]) if "tokens" in f else True
    print(("ok" if ok else "not ok") + f" - round trip extract -> h5py export -> import ({n}): identical attention "
          f"(max {d.max():.1e} relative to max(1,|l|))")
EOF
