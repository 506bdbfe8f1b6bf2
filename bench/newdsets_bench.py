#!/usr/bin/python3
"""New datasets through the mount (issue 32 item 2; doc/MODIFY.md "New
datasets"), run by hand, never in CI. Per round, alternated, warm (the
array in memory, the files written fresh each time):

  plain    np.save(DIR/plain.npy, a); fsync               (the floor: the same disk)
  npy      np.save(MNT/a.npy, a)  -> dataset a (close commits it, fsync'd)
  cp       cp SRC MNT/blob         -> a growable uint8 dataset (close commits, fsync'd)
  cpplain  cp SRC DIR/blob; sync                           (cp's floor)

The mount is made before the clock starts and unmounted after it stops.
Ratios: npy/plain (issue: >= 0.8) and cp/cpplain. With --compress LEVEL,
also:

  gz       np.save(MNT/z.npy, a) on a mount with -o compress=gzip:LEVEL
  h5pygz   h5py create_dataset(data=a, compression="gzip",
           compression_opts=LEVEL) into a new file on the same disk; fsync

    bench/newdsets_bench.py --h5fs ./h5fs [--size-mib 1024] [--rounds 3] [--dir DIR] [--compress N]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import h5py

from benchlib import Mount, fsync_path, say


def timed(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--compress", type=int, default=None)
    a = ap.parse_args()
    work = a.dir or os.path.join(os.getcwd(), "newdsets-bench")
    os.makedirs(work, exist_ok=True)
    n = (a.size_mib << 20) // 8
    arr = np.cumsum(np.random.default_rng(32).standard_normal(n)).round(2)
    src = os.path.join(work, "src.bin")
    arr.tofile(src)
    f5 = os.path.join(work, "run.h5")
    mnt = os.path.join(work, "mnt")
    log = os.path.join(work, "h5fs.log")
    res = {k: [] for k in ("plain", "npy", "cp", "cpplain")}
    if a.compress is not None:
        res.update({"gz": [], "h5pygz": []})

    def h5pygz():
        p = os.path.join(work, "gz.h5")
        with h5py.File(p, "w") as f:
            f.create_dataset("z", data=arr, compression="gzip", compression_opts=a.compress)
        fsync_path(p)

    def plain():
        p = os.path.join(work, "plain.npy")
        np.save(p, arr)
        fsync_path(p)

    def cpplain():
        p = os.path.join(work, "blob")
        subprocess.run(["cp", src, p], check=True)
        fsync_path(p)

    for r in range(a.rounds):
        for p in ("plain.npy", "blob"):
            if os.path.exists(os.path.join(work, p)):
                os.unlink(os.path.join(work, p))
        with h5py.File(f5, "w") as f:
            f.create_group("g")
        res["plain"].append(timed(plain))
        res["cpplain"].append(timed(cpplain))
        with Mount([a.h5fs, "-f", "-o", "rw", f5, mnt], mnt, log):
            res["npy"].append(timed(lambda: np.save(os.path.join(mnt, "a.npy"), arr)))
            res["cp"].append(timed(lambda: subprocess.run(["cp", src, os.path.join(mnt, "g", "blob")],
                                                          check=True)))
        with h5py.File(f5, "r") as f:
            ok = f["a"].shape == arr.shape and np.array_equal(f["a"][-4096:], arr[-4096:]) and \
                f["g/blob"].shape == (arr.nbytes,)
        if not ok:
            say("round %d: what the mount made does not read back!" % r)
            return 1
        if a.compress is not None:
            res["h5pygz"].append(timed(h5pygz))
            with Mount([a.h5fs, "-f", "-o", "rw,compress=gzip:%d" % a.compress, f5, mnt], mnt, log):
                res["gz"].append(timed(lambda: np.save(os.path.join(mnt, "z.npy"), arr)))
            with h5py.File(f5, "r") as f:
                z = f["z"]
                if z.compression != "gzip" or not np.array_equal(z[-4096:], arr[-4096:]):
                    say("round %d: the compressed dataset does not read back!" % r)
                    return 1
            say("round %d: gzip:%d h5py %.2f s, np.save through h5fs %.2f s" % (
                r, a.compress, res["h5pygz"][-1], res["gz"][-1]))
        say("round %d: np.save plain %.2f s, through h5fs %.2f s; cp plain %.2f s, through h5fs %.2f s" % (
            r, res["plain"][-1], res["npy"][-1], res["cpplain"][-1], res["cp"][-1]))
    mib = arr.nbytes / (1 << 20)
    say("%d MiB, %d rounds (warm: the array in memory)" % (mib, a.rounds))
    for k in res:
        say("  %-8s %.0f-%.0f MiB/s" % (k, mib / max(res[k]), mib / min(res[k])))
    nr = [p / q for p, q in zip(res["plain"], res["npy"])]
    cr = [p / q for p, q in zip(res["cpplain"], res["cp"])]
    say("  np.save h5fs / plain:  %.2f-%.2fx (issue: >= 0.8)" % (min(nr), max(nr)))
    say("  cp h5fs / plain:       %.2f-%.2fx" % (min(cr), max(cr)))
    if a.compress is not None:
        gr = [p / q for p, q in zip(res["h5pygz"], res["gz"])]
        say("  np.save gzip h5fs / h5py gzip: %.2f-%.2fx" % (min(gr), max(gr)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
