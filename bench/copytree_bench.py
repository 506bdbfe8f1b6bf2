#!/usr/bin/python3
"""cp -r into a read-write mount (issue 47 item 1), run by hand, never in
CI. Two source trees, written once (warm: they stay in the page cache):

  small   1,000 files of 4 KiB (every create a new dataset: its header
          and link, one commit each, then the bytes appended and
          committed at close)
  large   10 files of 100 MiB (the bytes: appends of 64 KiB chunks)

Per round, alternated in the same run (the machine is shared):

  plain   cp -r SRC DIR/copy; sync -f DIR          (the floor: the same disk)
  h5fs    cp -r SRC MNT/copy, then the unmount     (every commit durable)
  h5py    the same datasets made by h5py in a fresh file (growable 1-D
          uint8, the bytes of each source file, chunks as h5fs makes
          them), then one flush and fsync
  floor   cp -r SRC FLOOR/g/copy, then the unmount, through
          bench/fuse_write_floor.c -p: the same libfuse loop answering
          from memory, the bytes pwritten into one file, then sync -f
          (the fastest a FUSE file system takes the same requests here)

The mount is made before the clock starts; its unmount (which makes the
last changes durable, as sync does for the plain copy) is inside it.
Ratios plain/h5fs (above 1: h5fs faster) per round; the time of one
create (small: the whole copy over the file count) too.

    bench/copytree_bench.py --h5fs ./h5fs [--rounds 3] [--dir DIR] [--large-mib 100] [--small 1000]
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

from benchlib import Mount, say


def make_tree(top, n, size, seed):
    os.makedirs(top, exist_ok=True)
    block = os.urandom(1 << 20) if size >= (1 << 20) else None
    for i in range(n):
        with open(os.path.join(top, "f%04d.bin" % i), "wb") as fh:
            if block is None:
                fh.write(bytes(((i * 131 + seed + k) & 0xFF for k in range(size))))
            else:
                for _ in range(size >> 20):
                    fh.write(block)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--large-mib", type=int, default=100)
    ap.add_argument("--small", type=int, default=1000)
    a = ap.parse_args()
    work = a.dir or os.path.join(os.getcwd(), "copytree-bench")
    os.makedirs(work, exist_ok=True)
    trees = {"small": (a.small, 4096), "large": (10, a.large_mib << 20)}
    for name, (n, size) in trees.items():
        if not os.path.isdir(os.path.join(work, name)):
            make_tree(os.path.join(work, name), n, size, 47)
    f5 = os.path.join(work, "dest.h5")
    mnt = os.path.join(work, "mnt")
    log = os.path.join(work, "h5fs.log")
    out = os.path.join(work, "plain")
    res = {(t, k): [] for t in trees for k in ("plain", "h5fs", "floor", "h5py")}
    floor = os.path.join(work, "fuse_write_floor")
    subprocess.run("cc -O2 -o %s %s %s $(pkg-config --cflags --libs fuse3)" % (
        floor, os.path.join(HERE, "fuse_write_floor.c"), os.path.join(HERE, "floor_common.c")), shell=True, check=True)
    for r in range(a.rounds):
        for t in trees:
            src = os.path.join(work, t)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            subprocess.run(["sync", "-f", work], check=True)
            t0 = time.monotonic()
            subprocess.run(["cp", "-r", src, os.path.join(out, "copy")], check=True)
            subprocess.run(["sync", "-f", out], check=True)
            res[(t, "plain")].append(time.monotonic() - t0)
            with h5py.File(f5, "w") as f:
                f.create_group("g")
            subprocess.run(["sync", "-f", work], check=True)
            m = Mount([a.h5fs, "-f", f5, mnt], mnt, log)
            t0 = time.monotonic()
            try:
                subprocess.run(["cp", "-r", src, os.path.join(mnt, "copy")], check=True)
            finally:
                m.close()
            res[(t, "h5fs")].append(time.monotonic() - t0)
            with h5py.File(f5, "r") as f:
                if len(f["copy"]) != trees[t][0] or f["copy/f0000.bin"].shape != (trees[t][1],):
                    say("round %d: %s: the copy does not read back!" % (r, t))
                    return 1
            names = sorted(os.listdir(src))
            t0 = time.monotonic()
            with h5py.File(os.path.join(work, "byh5py.h5"), "w") as f:
                g = f.create_group("copy")
                for nm in names:
                    with open(os.path.join(src, nm), "rb") as fh:
                        b = np.frombuffer(fh.read(), dtype=np.uint8)
                    c = 4096
                    while c < len(b) and c < 65536:
                        c *= 2
                    g.create_dataset(nm, data=b, maxshape=(None,), chunks=(c,))
                f.flush()
                os.fsync(f.id.get_vfd_handle())
            res[(t, "h5py")].append(time.monotonic() - t0)
            store = os.path.join(work, "floor.bin")
            open(store, "wb").close()
            fm = Mount([floor, "-p", "0", mnt, store], mnt, log)
            t0 = time.monotonic()
            try:
                subprocess.run(["cp", "-r", src, os.path.join(mnt, "g", "copy")], check=True)
            finally:
                fm.close()
            subprocess.run(["sync", "-f", store], check=True)
            res[(t, "floor")].append(time.monotonic() - t0)
            say("round %d: %s: plain %.2f s, h5fs %.2f s, FUSE floor %.2f s, h5py %.2f s" % (
                r, t, res[(t, "plain")][-1], res[(t, "h5fs")][-1], res[(t, "floor")][-1], res[(t, "h5py")][-1]))
    shutil.rmtree(out, ignore_errors=True)
    say("%d rounds, warm sources; plain = cp -r + sync -f, h5fs = cp -r + unmount, floor = the same through "
        "fuse_write_floor -p" % a.rounds)
    for t, (n, size) in trees.items():
        p, h, fl, hp = res[(t, "plain")], res[(t, "h5fs")], res[(t, "floor")], res[(t, "h5py")]
        hr = [y / x for x, y in zip(hp, h)]
        ratios = [x / y for x, y in zip(p, h)]
        fr = [x / y for x, y in zip(fl, h)]
        pf = [x / y for x, y in zip(p, fl)]
        say("  %-5s %d x %d KiB: plain %.2f-%.2f s, h5fs %.2f-%.2f s, floor %.2f-%.2f s; plain/h5fs %.2f-%.2fx, "
            "floor/h5fs %.2f-%.2fx, plain/floor %.2f-%.2fx, h5fs/h5py %.1f-%.1fx (h5py %.2f-%.2f s), "
            "%.2f-%.2f ms a file through h5fs"
            % (t, n, size >> 10, min(p), max(p), min(h), max(h), min(fl), max(fl), min(ratios), max(ratios),
               min(fr), max(fr), min(pf), max(pf), min(hr), max(hr), min(hp), max(hp), 1000 * min(h) / n,
               1000 * max(h) / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
