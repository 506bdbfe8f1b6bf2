#!/usr/bin/python3
"""Overwriting datasets through the mount (issue 32; doc/OVERWRITE.md), run
by hand, never in CI. Per round, alternated, each from a fresh copy of the
fixture (the page cache warm with it, as after the copy):

  plain    dd if=SRC of=plain.bin bs=1M conv=notrunc,fsync  (the floor: the same disk)
  contig   dd if=SRC of=MNT/contig bs=1M conv=notrunc        (close commits, fsync'd)
  deflate  dd if=SRC of=MNT/deflate bs=1M conv=notrunc       (every chunk decoded, changed,
           re-encoded into new space; close commits, fsync'd)
  h5py     ds[...] = SRC's array in slabs of 64 MiB; flush; fsync   (the same deflate dataset)

Times include the close (and the unmount for h5fs, which has fsync'd
everything by then is not counted: the mount is made before the clock
starts and unmounted after it stops). Ratios: contig/plain (issue: >= 0.8)
and deflate-through-h5fs over h5py (issue: >= 1).

    bench/overwrite_bench.py --h5fs ./h5fs [--size-mib 1024] [--rounds 3] [--dir DIR]
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import h5py

from benchlib import Mount, fsync_path, say

CHUNK = 1 << 17         # elements (1 MiB of float64)


def fixture(path, n):
    rng = np.random.default_rng(32)
    with h5py.File(path, "w") as f:
        f.create_dataset("contig", shape=(n,), dtype="<f8")
        d = f.create_dataset("deflate", shape=(n,), dtype="<f8", chunks=(CHUNK,), shuffle=True,
                             compression="gzip", compression_opts=4)
        c = f["contig"]
        for o in range(0, n, 8 * CHUNK):
            k = min(8 * CHUNK, n - o)
            v = np.cumsum(rng.standard_normal(k)).round(2)
            c[o:o + k] = v
            d[o:o + k] = v


def timed(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def dd(src, dst, extra=""):
    subprocess.run(["dd", "if=" + src, "of=" + dst, "bs=1M", "conv=notrunc" + extra, "status=none"], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    work = a.dir or os.path.join(os.getcwd(), "overwrite-bench")
    os.makedirs(work, exist_ok=True)
    n = (a.size_mib << 20) // 8
    size = n * 8
    pristine = os.path.join(work, "pristine.h5")
    if not os.path.exists(pristine) or os.path.getsize(pristine) < size:
        say("making the fixture (%d MiB)..." % a.size_mib)
        fixture(pristine, n)
    src = os.path.join(work, "src.bin")
    rng = np.random.default_rng(7)
    with open(src, "wb") as fh:
        for o in range(0, n, 8 * CHUNK):
            np.cumsum(rng.standard_normal(min(8 * CHUNK, n - o))).round(3).astype("<f8").tofile(fh)
    plain = os.path.join(work, "plain.bin")
    f5 = os.path.join(work, "run.h5")
    mnt = os.path.join(work, "mnt")
    log = os.path.join(work, "h5fs.log")
    res = {k: [] for k in ("plain", "contig", "deflate", "h5py")}

    def fresh():
        shutil.copyfile(pristine, f5)
        shutil.copyfile(src, plain)   # same size: dd overwrites every byte

    def h5py_write():
        with h5py.File(f5, "r+") as f:
            d = f["deflate"]
            arr = np.fromfile(src, dtype="<f8")
            step = 64 * CHUNK
            for o in range(0, n, step):
                d[o:o + step] = arr[o:o + step]
            f.flush()
        fsync_path(f5)

    for r in range(a.rounds):
        fresh()
        res["plain"].append(timed(lambda: dd(src, plain, ",fsync")))
        with Mount([a.h5fs, "-f", f5, mnt], mnt, log):
            res["contig"].append(timed(lambda: dd(src, os.path.join(mnt, "contig"))))
            res["deflate"].append(timed(lambda: dd(src, os.path.join(mnt, "deflate"))))
        with h5py.File(f5, "r") as f:
            ok = np.array_equal(f["contig"][:1 << 16], np.fromfile(src, "<f8", 1 << 16)) and \
                np.array_equal(f["deflate"][-(1 << 16):], np.fromfile(src, "<f8")[-(1 << 16):])
        if not ok:
            say("round %d: the mounted writes do not read back!" % r)
            return 1
        fresh()
        res["h5py"].append(timed(h5py_write))
        say("round %d: plain %.2f s, h5fs contig %.2f s, h5fs deflate %.2f s, h5py deflate %.2f s" % (
            r, res["plain"][-1], res["contig"][-1], res["deflate"][-1], res["h5py"][-1]))
    mib = size / (1 << 20)

    def rng_of(k):
        return "%.0f-%.0f MiB/s" % (mib / max(res[k]), mib / min(res[k]))

    say("%d MiB, %d rounds (warm: FILE copied just before)" % (mib, a.rounds))
    for k in res:
        say("  %-8s %s" % (k, rng_of(k)))
    cr = [p / c for p, c in zip(res["plain"], res["contig"])]
    dr = [h / d for h, d in zip(res["h5py"], res["deflate"])]
    say("  contig / plain dd:        %.2f-%.2fx (issue: >= 0.8)" % (min(cr), max(cr)))
    say("  deflate h5fs / h5py:      %.2f-%.2fx (issue: >= 1)" % (min(dr), max(dr)))
    shutil.rmtree(mnt, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
