#!/usr/bin/python3
"""Writes through the mount against a plain file on the same disk and the
FUSE write floor (issue 44; bench/README.md "Writes"), run by hand, never
in CI. Per round, alternated, each write durable on every side:

  dd      dd if=SRC of=T bs=1M conv=notrunc,fsync over a contiguous dataset
          of SIZE bytes (T = MNT/data), over a plain file of SIZE bytes
          (DIR/plain.bin), into the floor's `data`
  cp      cp SRC T; fsync(T)   T = MNT/g/blob (a new dataset in group g),
          DIR/blob, the floor's g/blob
  npy     np.save(T, a); fsync(T)   T = MNT/a.npy (dataset a), DIR/a.npy,
          the floor's a.npy
  gz      (--compress LEVEL) np.save(MNT/z.npy, a) on a mount with
          -o compress=gzip:LEVEL, against h5py's create_dataset(data=a,
          compression="gzip", compression_opts=LEVEL) + fsync

FILE is copied afresh before each round and synced, so no side pays for
another's dirty pages; the mounts are made before the clock starts. The
floor is bench/fuse_write_floor.c (built here when missing): a FUSE file
system that discards every byte, set up as h5fs's write handles
(direct_io, 1 MiB requests); the store floor is the same program storing
every request into a scratch file at its offset as h5fs does (read into
memory, pwrite; fsync(2) fsyncs it: `-p`), the least a FUSE file system
that keeps the bytes pays on this machine. Ratios are per round, time of the reference
over time of h5fs (> 1: h5fs faster); with --baseline, an older h5fs binary
runs each write too, alternated.

    bench/write_bench.py --h5fs ./h5fs [--baseline OLD] [--size-mib 256]
                         [--rounds 5] [--dir DIR] [--compress N] [--only dd,cp,npy]
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

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def build_floor(work):
    exe = os.path.join(work, "fuse_write_floor")
    src = [os.path.join(HERE, "fuse_write_floor.c"), os.path.join(HERE, "floor_common.c")]
    if not os.path.exists(exe) or any(os.path.getmtime(s) > os.path.getmtime(exe) for s in src):
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                               capture_output=True, text=True).stdout.split()
        subprocess.run(["cc", "-O2", "-o", exe] + src + flags + ["-lpthread"], check=True)
    return exe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--baseline", default=None, help="an older h5fs binary, alternated with --h5fs")
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--compress", type=int, default=None)
    ap.add_argument("--only", default="dd,cp,npy")
    a = ap.parse_args()
    only = a.only.split(",")
    work = a.dir or os.path.join(os.getcwd(), "write-bench")
    os.makedirs(work, exist_ok=True)
    floor = build_floor(work)
    n = (a.size_mib << 20) // 8
    arr = np.cumsum(np.random.default_rng(44).standard_normal(n)).round(3)
    src = os.path.join(work, "src.bin")
    arr.tofile(src)
    pristine = os.path.join(work, "pristine.h5")
    if not os.path.exists(pristine) or os.path.getsize(pristine) < arr.nbytes:
        with h5py.File(pristine, "w") as f:
            f.create_dataset("data", data=np.zeros(n))   # contiguous, allocated
            f.create_group("g")
    f5 = os.path.join(work, "run.h5")
    mnt = os.path.join(work, "mnt")
    log = os.path.join(work, "h5fs.log")
    sides = ["plain", "store", "floor", "h5fs"] + (["base"] if a.baseline else [])
    res = {(w, s): [] for w in only for s in sides}
    if a.compress is not None:
        res.update({("gz", "h5py"): [], ("gz", "h5fs"): []})
        res.update({("gz", "base"): []} if a.baseline else {})

    def fresh():
        for p in ("plain.bin", "blob", "a.npy", "gz.h5", "store.bin"):
            if os.path.exists(os.path.join(work, p)):
                os.unlink(os.path.join(work, p))
        shutil.copyfile(pristine, f5)
        shutil.copyfile(src, os.path.join(work, "plain.bin"))
        os.sync()

    def write(what, root):
        if what == "dd":
            t = os.path.join(root, "data" if root != work else "plain.bin")
            return timed(lambda: subprocess.run(["dd", "if=" + src, "of=" + t, "bs=1M", "conv=notrunc,fsync",
                                                 "status=none"], check=True))
        if what == "cp":
            t = os.path.join(root, "g" if root != work else "", "blob")

            def cp():
                subprocess.run(["cp", src, t], check=True)
                fsync_path(t)
            return timed(cp)
        t = os.path.join(root, "a.npy")

        def save():
            np.save(t, arr)
            fsync_path(t)
        return timed(save)

    def h5fs_side(binary, what):
        with Mount([binary, "-f", "-o", "rw", f5, mnt], mnt, log):
            s = write(what, mnt)
        with h5py.File(f5, "r") as f:
            got = {"dd": lambda: f["data"][-4096:], "cp": lambda: f["g/blob"][-32768:].view("<f8"),
                   "npy": lambda: f["a"][-4096:]}[what]()
        if not np.array_equal(got, arr[-4096:]):
            raise RuntimeError("%s: what the mount wrote does not read back" % what)
        return s

    def gz_side(binary):
        with Mount([binary, "-f", "-o", "rw,compress=gzip:%d" % a.compress, f5, mnt], mnt, log):
            s = timed(lambda: (np.save(os.path.join(mnt, "z.npy"), arr), fsync_path(os.path.join(mnt, "z.npy"))))
        with h5py.File(f5, "r") as f:
            if f["z"].compression != "gzip" or not np.array_equal(f["z"][-4096:], arr[-4096:]):
                raise RuntimeError("gz: what the mount wrote does not read back")
        return s

    def h5py_gz():
        p = os.path.join(work, "gz.h5")
        with h5py.File(p, "w") as f:
            f.create_dataset("z", data=arr, compression="gzip", compression_opts=a.compress)
        fsync_path(p)

    for r in range(a.rounds):
        line = []
        for what in only:
            for s in sides:
                fresh()
                if s == "plain":
                    t = write(what, work)
                elif s == "floor":
                    with Mount([floor, "-f", str(arr.nbytes), mnt], mnt, log):
                        t = write(what, mnt)
                elif s == "store":
                    if what == "dd":    # in place over written bytes, as the others
                        shutil.copyfile(src, os.path.join(work, "store.bin"))
                        os.sync()
                    with Mount([floor, "-p", str(arr.nbytes), mnt, os.path.join(work, "store.bin")], mnt, log):
                        t = write(what, mnt)
                else:
                    t = h5fs_side(a.h5fs if s == "h5fs" else a.baseline, what)
                res[(what, s)].append(t)
                line.append("%s %s %.2f s" % (what, s, t))
        if a.compress is not None:
            for s in ["h5py", "h5fs"] + (["base"] if a.baseline else []):
                fresh()
                t = timed(h5py_gz) if s == "h5py" else gz_side(a.h5fs if s == "h5fs" else a.baseline)
                res[("gz", s)].append(t)
                line.append("gz %s %.2f s" % (s, t))
        say("round %d: %s" % (r, ", ".join(line)))
    mib = arr.nbytes / (1 << 20)
    say("%d MiB, %d rounds (SRC warm in the page cache; FILE fresh and synced before each write)"
        % (mib, a.rounds))
    for k, v in res.items():
        say("  %-4s %-6s %5.0f-%5.0f MiB/s" % (k[0], k[1], mib / max(v), mib / min(v)))

    def ratio(what, ref, s, target=None):
        rr = sorted(x / y for x, y in zip(res[(what, ref)], res[(what, s)]))
        say("  %-4s %s / %s: %.2f-%.2fx (median %.2fx)%s" % (
            what, s, ref, rr[0], rr[-1], rr[len(rr) // 2], "" if target is None else " (issue: >= %.1fx)" % target))

    for what in only:
        ratio(what, "plain", "h5fs", 0.9)
        ratio(what, "store", "h5fs")
        ratio(what, "plain", "store")
        ratio(what, "floor", "h5fs")
        ratio(what, "plain", "floor")
        if a.baseline:
            ratio(what, "plain", "base")
    if a.compress is not None:
        ratio("gz", "h5py", "h5fs", 1.5)
        if a.baseline:
            ratio("gz", "h5py", "base")
    shutil.rmtree(mnt, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
