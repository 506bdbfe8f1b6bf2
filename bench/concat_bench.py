#!/usr/bin/python3
"""h5fs-ls --refs --concat against a Python combiner (issue 45). Run by hand.

    /usr/bin/python3 bench/concat_bench.py [--h5fs-ls ./h5fs-ls] [--files 1000]
        [--big 10000] [--chunks 50] [--repeat 5] [--dir /tmp/concat-bench]

--files HDF5 files (h5py) of one dataset "frames" (--chunks, 32, 32)
uint16, one frame a chunk (2 KiB of noise each, gzip: every chunk
referenced, none inlined), in one folder. The time to one kerchunk
document of all of them concatenated along axis 0:
  - py: the combiner kerchunk's approach comes down to without its
    per-chunk Python overhead: per file h5py.File, get_num_chunks and
    get_chunk_info(i) for each chunk, the keys renumbered along axis 0,
    then json.dump of the whole dict;
  - noindex: h5fs-ls --refs --concat=0 --noindex DIR > file (every file
    opened);
  - index: the same on the collection's index (--index FILE, filled by a
    first run outside the timing): no member is opened.
The three alternate in each of --repeat rounds (the machine is shared:
alternating spreads its load over all three); all warm (the files in the
page cache after the first round). Both documents are checked equal
(keys and [url, offset, length]). Then --big files (default 10,000,
0: none): h5fs-ls --noindex and indexed, and py once. Peak RSS of
h5fs-ls (/usr/bin/time's %M) at both sizes shows memory flat in the
number of files.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np


def make(d, nfiles, nchunks):
    stamp = os.path.join(d, ".made-%d-%d" % (nfiles, nchunks))
    if os.path.exists(stamp):
        return
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(1)
    base = rng.integers(0, 65535, (nchunks, 32, 32), dtype="u2")
    for i in range(nfiles):
        with h5py.File(os.path.join(d, "f%05d.h5" % i), "w") as f:
            f.create_dataset("frames", data=base ^ np.uint16(i & 0xffff), chunks=(1, 32, 32), compression="gzip",
                             compression_opts=1)
    open(stamp, "w").close()


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def py_combine(d, out):
    """Per file: h5py.File, get_chunk_info per chunk; keys along axis 0.
    Returns (seconds, CPU seconds)."""
    t = time.monotonic()
    c = cpu_self()
    refs = {}
    base = 0
    zarray = None
    for name in sorted(n for n in os.listdir(d) if n.endswith(".h5")):
        p = os.path.join(os.path.realpath(d), name)
        with h5py.File(p, "r") as f:
            ds = f["frames"]
            dsid = ds.id
            ch = ds.chunks
            for i in range(dsid.get_num_chunks()):
                ci = dsid.get_chunk_info(i)
                idx = [o // c for o, c in zip(ci.chunk_offset, ch)]
                idx[0] += base
                refs["frames/" + ".".join(map(str, idx))] = [p, ci.byte_offset, ci.size]
            base += ds.shape[0] // ch[0]
            zarray = (ds.dtype.str, ch)
    refs["frames/.zarray"] = json.dumps({"chunks": zarray[1], "dtype": zarray[0], "shape_rows": base})
    with open(out, "w") as fh:
        json.dump({"version": 1, "refs": refs}, fh)
    return time.monotonic() - t, cpu_self() - c


def h5fs(ls, d, out, *opts):
    t = time.monotonic()
    with open(out, "wb") as fh:
        p = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", ls, "--refs", "--concat=0", *opts, d], stdout=fh,
                           stderr=subprocess.PIPE)
    el = time.monotonic() - t
    if p.returncode != 0:
        raise RuntimeError("h5fs-ls: exit %d: %s" % (p.returncode, p.stderr.decode()[-500:]))
    rss, u, s = p.stderr.decode().strip().splitlines()[-1].split()
    return el, int(rss), float(u) + float(s)


def check(py_out, ls_out):
    a = json.load(open(py_out))["refs"]
    b = json.load(open(ls_out))["refs"]
    ka = {k: v for k, v in a.items() if not k.endswith(".zarray")}
    kb = {k: v for k, v in b.items() if "/." not in k and not k.startswith(".")}
    if ka != kb:
        diff = sorted(set(ka) ^ set(kb))[:5] or [k for k in ka if ka[k] != kb.get(k)][:5]
        raise RuntimeError("the documents differ: %s" % diff)
    return len(ka)


def rng(v):
    return "%.3f s (%.3f-%.3f, median %.3f)" % (min(v), min(v), max(v), statistics.median(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs-ls", default="./h5fs-ls")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--big", type=int, default=10000)
    ap.add_argument("--chunks", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "h5fs-concat-bench"))
    a = ap.parse_args()
    ls = os.path.abspath(a.h5fs_ls)
    print("load average %s" % open("/proc/loadavg").read().split()[:3])
    for n in [a.files] + ([a.big] if a.big else []):
        d = os.path.join(a.dir, "n%d" % n)
        t = time.monotonic()
        make(d, n, a.chunks)
        print("%d files x %d chunks in %s (made in %.0f s)" % (n, a.chunks, d, time.monotonic() - t))
        ix = os.path.join(a.dir, "index-%d.sqlite" % n)
        for f in (ix, ix + "-wal", ix + "-shm"):
            if os.path.exists(f):
                os.unlink(f)
        py_out, ls_out = os.path.join(a.dir, "py.json"), os.path.join(a.dir, "ls.json")
        h5fs(ls, d, ls_out, "--index", ix)        # fills the index, warms the page cache
        rounds = a.repeat if n == a.files else 1
        py_t, no_t, ix_t, no_rss, ix_rss, py_c, no_c, ix_c = [], [], [], [], [], [], [], []
        for r in range(rounds):
            el, cpu = py_combine(d, py_out)
            py_t.append(el)
            py_c.append(cpu)
            el, rss, cpu = h5fs(ls, d, ls_out, "--noindex")
            no_t.append(el)
            no_rss.append(rss)
            no_c.append(cpu)
            if r == 0:
                nrefs = check(py_out, ls_out)
            el, rss, cpu = h5fs(ls, d, ls_out, "--index", ix)
            ix_t.append(el)
            ix_rss.append(rss)
            ix_c.append(cpu)
            if r == 0:
                check(py_out, ls_out)
        print("  %d references, warm, %d round(s)" % (nrefs, rounds))
        print("  py get_chunk_info combiner: %s; CPU %s" % (rng(py_t), rng(py_c)))
        for name, t, c, m in (("h5fs-ls --noindex", no_t, no_c, no_rss), ("h5fs-ls, indexed", ix_t, ix_c, ix_rss)):
            print("  %-26s %s; CPU %s; peak RSS %d-%d KiB" % (name + ":", rng(t), rng(c), min(m), max(m)))
            print("  %-26s wall best %.1fx, median %.1fx; CPU best %.1fx, median %.1fx" % (
                "", min(py_t) / min(t), statistics.median(py_t) / statistics.median(t),
                min(py_c) / min(c), statistics.median(py_c) / statistics.median(c)))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
