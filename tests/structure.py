#!/usr/bin/env python3
"""Draws attncoda's structure from the code and checks the rules of docs/ARCHITECTURE.md.

Units are the files of src/lib/<folder>/ and src/cli/ by base name (x.c with x.h). An arrow U -> V
is drawn when U's .c or .h includes V.h, or when U's object file uses a symbol that V's object
file defines (nm on $BUILD). Prints TAP lines, one per rule, and each unit's height (longest
path down to a unit that uses nothing) and depth (longest path from a unit no library unit uses)
with --levels.
"""
import glob, os, re, subprocess, sys

BUILD = os.environ.get("BUILD", "build")
# folders from the bottom up: a unit may use its own folder's units and those of lower folders
ORDER = ["core", "io", "attn", "model", "tok", "train", "cli"]
RANK = {"core": 0, "io": 1, "attn": 2, "model": 2, "tok": 2, "train": 3, "cli": 4}
LOADERS = ["model_hf", "model_gguf", "llama2c"]
# The one place the library may end the process (docs/ARCHITECTURE.md): an allocation that fails
# when no program installed a fatal handler (cli_init does; its handler exits 1). There is no
# error to return to a caller that asked for memory and has none.
LAST_RESORT = {("src/lib/core/util.c", "util_out_of_memory")}
MISSING = []   # object files not built: their calls would go unseen


def units():
    found = {}
    for path in glob.glob("src/lib/*/*.[ch]") + glob.glob("src/cli/*.[ch]"):
        folder = os.path.basename(os.path.dirname(path))
        name = os.path.splitext(os.path.basename(path))[0]
        found.setdefault(name, {"folder": folder, "files": []})["files"].append(path)
    return found


def declared(u, name):
    """Function names declared in unit name's header."""
    h = [p for p in u[name]["files"] if p.endswith(".h")]
    if not h:
        return set()
    text = re.sub(r"/\*.*?\*/", "", open(h[0]).read(), flags=re.S)
    return set(re.findall(r"\b([a-z_][a-z_0-9]*)\s*\(", text))


def include_arrows(u, defines):
    """U includes V.h: an arrow, unless U defines a function V.h declares (U implements part of
    V's interface, as a tokenizer file implements a loader that the module's public tok.h names)."""
    arrows = set()
    inc = re.compile(r'^\s*#\s*include\s+"(?:[a-z_]+/)?([a-z_0-9]+)\.h"', re.M)
    for name, info in u.items():
        for path in info["files"]:
            for dep in inc.findall(open(path).read()):
                if dep in u and dep != name and not (defines.get(name, set()) & declared(u, dep)):
                    arrows.add((name, dep, "include"))
    return arrows


def nm_symbols(obj):
    out = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True, text=True).stdout
    defined = {l.split()[-1] for l in out.splitlines() if len(l.split()) == 3}
    out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True).stdout
    used = {l.split()[-1] for l in out.splitlines() if l.strip()}
    return defined, used


def call_arrows(u, defines):
    arrows, defined_by, uses = set(), {}, {}
    for name, info in u.items():
        obj = os.path.join(BUILD, "lib" if info["folder"] != "cli" else "", info["folder"], name + ".o")
        obj = os.path.normpath(obj.replace("/lib/cli/", "/cli/"))
        if not os.path.exists(obj):
            if any(f.endswith(".c") for f in info["files"]):
                MISSING.append(obj)
            continue
        d, used = nm_symbols(obj)
        defines[name] = d
        uses[name] = used
        for s in d:
            defined_by[s] = name
    for name, used in uses.items():
        for s in used:
            v = defined_by.get(s)
            if v and v != name:
                arrows.add((name, v, "call " + s))
    return arrows


def cycle(nodes, edges):
    graph = {n: sorted({b for a, b, _ in edges if a == n}) for n in nodes}
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph[n]:
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if not state.get(m):
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(nodes):
        if not state.get(n):
            c = visit(n)
            if c:
                return c
    return None


def longest(nodes, edges, down=True):
    """Each unit's longest path: down to a unit that uses no other (its height), or, with
    down=False, from a unit that no library unit uses (its depth)."""
    graph = {n: {b if down else a for a, b, _ in edges if (a if down else b) == n} for n in nodes}
    memo = {}

    def walk(n):
        if n not in memo:
            memo[n] = 0
            memo[n] = 1 + max((walk(m) for m in graph[n]), default=-1)
        return memo[n]

    return {n: walk(n) for n in nodes}


def reaches(edges, a, b):
    graph = {}
    for x, y, _ in edges:
        graph.setdefault(x, set()).add(y)
    seen, todo = set(), [a]
    while todo:
        n = todo.pop()
        for m in graph.get(n, ()):
            if m == b:
                return True
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return False


def tap(ok, what, detail=""):
    print(("ok - " if ok else "not ok - ") + what + (": " + detail if detail and not ok else ""))
    return ok


def main():
    u = units()
    defines = {}
    calls = call_arrows(u, defines)
    edges = include_arrows(u, defines) | calls
    nodes = set(u)
    tap(not MISSING, f"every library unit's object file is in {BUILD} (its calls are read with nm)",
        ", ".join(MISSING[:4]))
    c = cycle(nodes, edges)
    tap(c is None, f"no circle among {len(nodes)} library units ({len(edges)} arrows)", " -> ".join(c or []))
    up = sorted(f"{a} ({u[a]['folder']}) -> {b} ({u[b]['folder']}) by {how}" for a, b, how in edges
                if RANK[u[b]["folder"]] > RANK[u[a]["folder"]]
                or (RANK[u[b]["folder"]] == RANK[u[a]["folder"]] and u[a]["folder"] != u[b]["folder"]))
    tap(not up, "no arrow runs up or sideways between folders (" + " < ".join(ORDER) + ")", "; ".join(up[:6]))
    lib_to_cli = sorted(f"{a} -> cli by {how}" for a, b, how in edges if b == "cli" and u[a]["folder"] != "cli")
    tap(not lib_to_cli, "no library unit uses the program layer (src/cli)", "; ".join(lib_to_cli[:6]))
    lv = longest(nodes, edges) if c is None else {}
    dp = longest(nodes, edges, down=False) if c is None else {}
    have = [l for l in LOADERS if l in u]
    stacked = [f"{a} -> {b}" for a in have for b in have if a != b and reaches(edges, a, b)]
    same = c is None and len(have) == 3 and not stacked and len({dp[l] for l in have}) == 1
    why = ("missing: " + ", ".join(set(LOADERS) - set(have)) if len(have) < 3
           else "stacked: " + "; ".join(stacked) if stacked else "depths differ")
    tap(same, "the three loaders sit side by side: none uses another, one depth below model_load ("
        + ", ".join(f"{l} {dp.get(l, '?')}" for l in LOADERS) + ")", why)
    exits = []
    for name, info in u.items():
        if info["folder"] == "cli":
            continue
        for path in info["files"]:
            inside = None
            for i, line in enumerate(open(path), 1):
                m = re.match(r"[a-z].*?\b([a-z_0-9]+)\(", line)
                if m:
                    inside = m.group(1)
                code = line.split("//")[0]
                if re.search(r"\b(die_usage|die_data|exit|_exit|abort)\s*\(", code) and not code.lstrip().startswith(("*", "/*")) \
                        and (path, inside) not in LAST_RESORT:
                    exits.append(f"{path}:{i}")
    tap(not exits, "the library never exits (no die_*, exit or abort under src/lib)", ", ".join(exits[:8]))
    h5 = []
    for path in glob.glob("src/*.c") + glob.glob("src/lib/*/*.h") + glob.glob("src/cli/*.h"):
        text = open(path).read()
        if re.search(r'#\s*include\s*<hdf5', text) and (path.startswith("src/") and path.count("/") == 1 or path.endswith(".h")):
            h5.append(path + " includes hdf5.h")
        if path.count("/") == 1 and re.search(r"\bH5[A-Z][A-Za-z_]*\s*\(", text):
            h5.append(path + " calls H5*")
    tap(not h5, "no program includes hdf5.h or calls H5*, and no library header exposes it", "; ".join(h5[:6]))
    if "--levels" in sys.argv and lv:
        print("# height: longest path down to a unit that uses no other; depth: longest path from a")
        print("# unit that no library unit uses (what the programs call)")
        for n in sorted(nodes, key=lambda n: (lv[n], u[n]["folder"], n)):
            print(f"# height {lv[n]:2d}  depth {dp[n]:2d}  {u[n]['folder']:6s} {n}")


main()
