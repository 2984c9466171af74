#!/usr/bin/python3
"""Which BLAS a bench anchor runs on (issue 38: the anchor must be an optimised BLAS).

Usage: blas_info.py MODULE   (torch or numpy)
Imports MODULE alone, runs one small matrix product so that its BLAS is loaded, and prints
  blas<TAB>MODULE<TAB>NAME VERSION (THREADING, N threads)<TAB>LIBRARY FILE
from threadpoolctl (python3-threadpoolctl), which names OpenBLAS, MKL and BLIS, or else from the
libblas/libcblas mapped into the process; a mapped reference libblas.so.3 wins over both. Exit 0 when MODULE runs on an optimised BLAS, 1 when it
runs on the reference BLAS (Debian's libblas3, about 25 times slower than OpenBLAS for SGEMM) or on
none that can be named: the benches then refuse to print a ratio against it."""
import sys

OPTIMISED = ("openblas", "mkl", "blis")


def mapped_blas():
    """The BLAS shared libraries mapped into this process, from /proc/self/maps."""
    with open("/proc/self/maps") as f:
        paths = {l.split()[-1] for l in f if len(l.split()) >= 6}
    return sorted(p for p in paths if "blas" in p.rsplit("/", 1)[-1])


def main(argv):
    if len(argv) != 2 or argv[1] not in ("torch", "numpy"):
        sys.stderr.write("usage: blas_info.py torch|numpy\n")
        return 2
    module = argv[1]
    if module == "torch":
        import torch
        torch.ones(64, 64) @ torch.ones(64, 64)
    else:
        import numpy
        numpy.ones((64, 64), dtype=numpy.float32) @ numpy.ones((64, 64), dtype=numpy.float32)
    libs = mapped_blas()
    # Debian's reference BLAS, /usr/lib/<triplet>/blas/libblas.so.3: when the libblas.so.3
    # alternative points there, SGEMM comes from it even if OpenBLAS's LAPACK is also loaded (and
    # then named by threadpoolctl), so the mapped file decides
    reference = [p for p in libs if "/blas/libblas.so" in p]
    if reference:
        print("blas\t%s\treference BLAS\t%s" % (module, reference[0]))
        return 1
    try:
        import threadpoolctl
        found = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        found = []
    if found:
        i = found[0]
        name = "%s %s (%s, %s threads)" % (i["internal_api"], i.get("version") or "?",
                                           i.get("threading_layer", "?"), i.get("num_threads", "?"))
        print("blas\t%s\t%s\t%s" % (module, name, i.get("filepath", "?")))
        return 0 if i["internal_api"] in OPTIMISED else 1
    optimised = [p for p in libs if any(o in p for o in OPTIMISED)]
    if optimised:
        print("blas\t%s\t%s\t%s" % (module, "optimised (threadpoolctl not installed)", optimised[0]))
        return 0
    print("blas\t%s\t%s\t%s" % (module, "reference BLAS" if libs else "none found", libs[0] if libs else "-"))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
