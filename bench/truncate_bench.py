#!/usr/bin/python3
"""truncate(2) of a dataset of many one-row chunks (netCDF record
variables are chunked so) to a few rows, through a read-write mount,
against h5py's resize() of the same dataset (issue 81: "removing chunks
should cost what is removed"). FILE on a tmpfs of bounded size (root).

    bench/truncate_bench.py [--h5fs ./h5fs] [--chunks 200000] [--rounds 3]

Prints, per chunk index (v1 B-tree: libver earliest; extensible array:
latest), the seconds truncate -s 16 took and h5py's resize((2,)), and
checks both files read [0, 1] afterwards.
"""
import argparse
import os
import subprocess
import sys
import time

import h5py
import numpy as np


def make(path, n, lv):
    with h5py.File(path, "w", libver=lv) as f:
        d = f.create_dataset("t", shape=(n,), maxshape=(None,), chunks=(1,), dtype="<f8")
        d[:] = np.arange(n, dtype="<f8")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--chunks", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    h5fs = os.path.abspath(a.h5fs)
    wd = "/tmp/h5fs-truncate-bench"
    os.makedirs(wd, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", wd], check=True)
    try:
        mnt = os.path.join(wd, "mnt")
        os.makedirs(mnt)
        for lv in ("earliest", "latest"):
            src = os.path.join(wd, "src-%s.h5" % lv)
            make(src, a.chunks, lv)
            for r in range(a.rounds):
                fa, fb = os.path.join(wd, "a.h5"), os.path.join(wd, "b.h5")
                subprocess.run(["cp", src, fa], check=True)
                subprocess.run(["cp", src, fb], check=True)
                subprocess.run([h5fs, fa, mnt], check=True)
                t0 = time.monotonic()
                os.truncate(os.path.join(mnt, "t"), 16)
                th = time.monotonic() - t0
                subprocess.run([h5fs, "-u", mnt], check=True)
                t0 = time.monotonic()
                with h5py.File(fb, "r+") as f:
                    f["t"].resize((2,))
                tp = time.monotonic() - t0
                for p in (fa, fb):
                    with h5py.File(p, "r") as f:
                        if list(f["t"][:]) != [0.0, 1.0]:
                            sys.exit("%s reads %r" % (p, f["t"][:]))
                print("%-8s %d chunks, round %d: h5fs truncate %.2f s, h5py resize %.2f s, FILE %d / %d bytes"
                      % (lv, a.chunks, r + 1, th, tp, os.path.getsize(fa), os.path.getsize(fb)))
    finally:
        subprocess.run(["umount", "-l", wd])


if __name__ == "__main__":
    main()
