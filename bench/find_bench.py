#!/usr/bin/python3
"""h5fs-find (issue 35) against an h5py loop answering the same query. Run
by hand (never in CI):

    /usr/bin/python3 bench/find_bench.py --find ./h5fs-find \\
        [--dir /var/tmp/h5fs-find] [--folders 100] [--per 100] [--repeat 3]

The collection is collection_index_bench.py's (FOLDERS x PER small HDF5
files of make_index_collection.py, 100 distinct ones copied with
distinct mtimes, plus a notes.txt per folder). The query: float32
datasets whose long_name attribute is "ramp" in files whose root has an
attribute seed (`-dtype '<f4' -attr long_name=ramp`), and the h5py loop
that answers it: open every file, visit every object, test dtype and
attribute.

Each round, in this order (file pages in the page cache: warm page
cache; the index is what is cold or warm):
- h5py: the loop;
- noindex: h5fs-find --noindex (every member read, on every core, nothing
  kept);
- cold: h5fs-find --index NEW (no index yet: every member read and
  recorded);
- warm: h5fs-find --index on that index (the collection listed and
  stamps compared; no member opened).
Targets: h5py / cold >= 2x, h5py / warm >= 20x. Ranges over rounds; the
answers of all four are compared."""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, HERE)
from benchlib import say  # noqa: E402
import collection_index_bench as C  # noqa: E402

QUERY = ["-dtype", "<f4", "-attr", "long_name=ramp"]


def h5py_loop(top):
    import h5py
    hits = []

    for d, _dirs, files in os.walk(top):
        for fn in files:
            if fn == "notes.txt" or fn.startswith("."):
                continue
            p = os.path.join(d, fn)
            rel = os.path.relpath(p, top)
            with h5py.File(p, "r") as f:
                def visit(name, obj):
                    if isinstance(obj, h5py.Dataset) and obj.dtype.str == "<f4":
                        v = obj.attrs.get("long_name")
                        if v is not None and (v.decode() if isinstance(v, bytes) else str(v)) == "ramp":
                            hits.append(rel + "/" + name)
                f.visititems(visit)
    return sorted(hits, key=lambda s: s.encode())


def run(args, *opts):
    t = time.monotonic()
    r = subprocess.run([args.find, args.top] + list(opts) + QUERY, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=True, timeout=3600)
    return time.monotonic() - t, r.stdout.decode().splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--find", required=True)
    ap.add_argument("--dir", default="/var/tmp/h5fs-find")
    ap.add_argument("--folders", type=int, default=100)
    ap.add_argument("--per", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    args.find = os.path.abspath(args.find)
    args.top = os.path.join(args.dir, "coll")
    os.makedirs(args.dir, exist_ok=True)
    C.generate(args)
    rows = []
    for k in range(args.repeat):
        r = {}
        t = time.monotonic()
        want = h5py_loop(args.top)
        r["h5py"] = time.monotonic() - t
        r["noindex"], got_n = run(args, "--noindex")
        index = os.path.join(args.dir, "index-%d.sqlite" % k)
        for side in ("", "-wal", "-shm", ".bad"):
            if os.path.exists(index + side):
                os.unlink(index + side)
        r["cold"], got_c = run(args, "--index", index)
        r["warm"], got_w = run(args, "--index", index)
        for name, got in (("noindex", got_n), ("cold", got_c), ("warm", got_w)):
            if got != want:
                say("MISMATCH: %s gave %d paths, h5py %d" % (name, len(got), len(want)))
        r["cold_ratio"] = r["h5py"] / r["cold"]
        r["warm_ratio"] = r["h5py"] / r["warm"]
        r["noindex_ratio"] = r["h5py"] / r["noindex"]
        rows.append(r)
        say("round %d: %d hits; h5py %.2f s, noindex %.2f s (%.1fx), cold %.2f s (%.1fx), warm %.3f s (%.1fx)" % (
            k + 1, len(want), r["h5py"], r["noindex"], r["noindex_ratio"], r["cold"], r["cold_ratio"], r["warm"],
            r["warm_ratio"]))

    def rng(key, fmt="%.2f"):
        v = [x[key] for x in rows]
        return (fmt + "-" + fmt) % (min(v), max(v))

    say("%d files: h5py %s s; noindex %s s (%sx); cold %s s (%sx, target >= 2); warm %s s (%sx, target >= 20)" % (
        args.folders * args.per, rng("h5py"), rng("noindex"), rng("noindex_ratio", "%.1f"), rng("cold"),
        rng("cold_ratio", "%.1f"), rng("warm", "%.3f"), rng("warm_ratio", "%.1f")))


if __name__ == "__main__":
    main()
