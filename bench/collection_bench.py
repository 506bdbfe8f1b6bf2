#!/usr/bin/python3
"""Collections (issue 25, first benchmark line): a cold walk of 10,000 small
HDF5 files in 100 folders through `h5fs DIR MNT` against a Python loop
that opens every file with h5py and visits every object and attribute.
Run by hand (never in CI):

    /usr/bin/python3 bench/collection_bench.py --h5fs ./h5fs [--dir /var/tmp/h5fs-coll] [--repeat 3]

The collection (made once, kept in --dir/col): --files files (default
10,000) in --folders folders (default 100), each with 3 datasets (a
contiguous int32[64], a chunked+gzip float32[32,16] in a group, a compact
uint16[8]) and 4 attributes (on the root, the group and a dataset),
libver alternating earliest/latest.

Per round (--repeat rounds, h5fs and h5py alternated, page cache dropped
before each side when run as root, else warm and said so):
- h5fs: mount (`h5fs -f -o ro DIR MNT`, timed from the start of the
  daemon until the mount appears) + `find MNT` + `getfattr -R -d MNT`
  (every xattr name and value of every entry), unmount not timed;
- h5py: for every file, h5py.File(path), visititems over every object,
  every attribute of every object (root included) read, file closed.
The ratio is h5py seconds / h5fs seconds (target >= 2). Also the warm
figures (a second walk of each side right after, same mount / process).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import h5py
import numpy as np

import benchlib as B
from benchlib import drop_caches, say


def make_collection(col, nfiles, nfolders):
    stamp = os.path.join(col, ".complete-%d-%d" % (nfiles, nfolders))
    if os.path.exists(stamp):
        return
    rng = np.random.default_rng(25)
    for i in range(nfiles):
        d = os.path.join(col, "run%03d" % (i % nfolders))
        os.makedirs(d, exist_ok=True)
        with h5py.File(os.path.join(d, "scan_%05d.h5" % i), "w",
                       libver="latest" if i % 2 else "earliest") as f:
            f.attrs["scan"] = np.int32(i)
            f.attrs["title"] = "scan %d" % i
            f.create_dataset("counts", data=rng.integers(0, 1 << 20, 64, dtype="<i4"))
            g = f.create_group("entry")
            g.attrs["energy_keV"] = np.float64(12.4 + i % 7)
            ds = g.create_dataset("frames", data=rng.standard_normal((32, 16)).astype("<f4"),
                                  chunks=(8, 16), compression="gzip")
            ds.attrs["units"] = "counts"
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            data = np.arange(8, dtype="<u2")
            h5py.h5d.create(g.id, b"mask", h5py.h5t.py_create(data.dtype),
                            h5py.h5s.create_simple(data.shape), dcpl=dcpl).write(
                h5py.h5s.ALL, h5py.h5s.ALL, data)
        if i % 1000 == 999:
            say("  made %d files" % (i + 1))
    open(stamp, "w").close()


def h5py_walk(col):
    nobj = nattr = 0
    for dirpath, dirs, files in os.walk(col):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".h5"):
                continue
            with h5py.File(os.path.join(dirpath, name), "r") as f:
                objs = [f]
                f.visititems(lambda n, o: objs.append(o))
                for o in objs:
                    nobj += 1
                    for k in o.attrs:
                        o.attrs[k]
                        nattr += 1
    return nobj, nattr


def h5fs_walk(mnt):
    subprocess.run(["find", mnt], stdout=subprocess.DEVNULL, check=True)
    r = subprocess.run(["getfattr", "-R", "-d", "--absolute-names", mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("getfattr failed: %s" % r.stderr.decode()[:500])
    return r.stdout.count(b"\nuser.")


def run_h5fs(args, col, mnt, cold):
    if cold:
        drop_caches()
    t0 = time.monotonic()
    with B.Mount([args.h5fs, "-f", "-o", "ro"] + args.opt + [col, mnt], mnt, os.path.join(args.dir, "h5fs.log"),
                 timeout=20, poll=0.005, close_timeout=30):
        nx = h5fs_walk(mnt)
        t_cold = time.monotonic() - t0
        t1 = time.monotonic()
        h5fs_walk(mnt)
        t_warm = time.monotonic() - t1
    return t_cold, t_warm, nx


def run_h5py(col, cold):
    if cold:
        drop_caches()
    t0 = time.monotonic()
    nobj, nattr = h5py_walk(col)
    t_cold = time.monotonic() - t0
    t1 = time.monotonic()
    h5py_walk(col)
    return t_cold, time.monotonic() - t1, nobj, nattr


def rng_s(v):
    return "%.2f-%.2f s (median %.2f)" % (min(v), max(v), statistics.median(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--dir", default="/var/tmp/h5fs-coll")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--folders", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--opt", action="append", default=[], help="more -o options for h5fs (as '-o', 'X')")
    args = ap.parse_args()
    args.opt = sum((["-o", o] for o in args.opt), [])
    col = os.path.join(args.dir, "col")
    mnt = os.path.join(args.dir, "mnt")
    os.makedirs(col, exist_ok=True)
    os.makedirs(mnt, exist_ok=True)
    say("making %d files in %d folders (once) in %s" % (args.files, args.folders, col))
    make_collection(col, args.files, args.folders)
    cold = os.geteuid() == 0
    if not cold:
        say("WARNING: not root: the page cache cannot be dropped, 'cold' figures are warm")
    say("load average before: %s" % open("/proc/loadavg").read().split()[:3])
    fs_c, fs_w, py_c, py_w, ratio_c, ratio_w = [], [], [], [], [], []
    for r in range(args.repeat):
        pc, pw, nobj, nattr = run_h5py(col, cold)
        hc, hw, nx = run_h5fs(args, col, mnt, cold)
        fs_c.append(hc)
        fs_w.append(hw)
        py_c.append(pc)
        py_w.append(pw)
        ratio_c.append(pc / hc)
        ratio_w.append(pw / hw)
        say("round %d: h5py %.2f s cold, %.2f s warm (%d objects, %d attributes); "
            "h5fs %.2f s cold (mount + find + getfattr), %.2f s warm (%d user.* xattrs shown); "
            "ratio h5py/h5fs %.2f cold, %.2f warm" % (r + 1, pc, pw, nobj, nattr, hc, hw, nx, pc / hc, pw / hw))
    say("load average after: %s" % open("/proc/loadavg").read().split()[:3])
    say("h5fs cold: %s; warm: %s" % (rng_s(fs_c), rng_s(fs_w)))
    say("h5py cold: %s; warm: %s" % (rng_s(py_c), rng_s(py_w)))
    say("ratio h5py/h5fs cold: %.2f-%.2f, warm: %.2f-%.2f (target >= 2 cold)" % (
        min(ratio_c), max(ratio_c), min(ratio_w), max(ratio_w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
