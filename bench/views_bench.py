#!/usr/bin/python3
"""Views of datasets (issue 37), by hand, never in CI:

  npy   np.load(MNT/x.npy, mmap_mode='r') summed, against np.memmap of the
        mounted raw dataset MNT/x summed (the same bytes without the
        header) and against np.load(mmap_mode='r') of a real .npy on the
        local disk; cold (page cache dropped) and warm. Target: within
        1.1x of the raw file.
  tiff  tifffile.imread(MNT/stack.tiff) of a deflate (N, H, W) stack,
        against h5py reading the stack, tifffile.imwrite to /dev/shm and
        tifffile.imread of that file: the way to the same array without
        the view. Cold (page cache dropped before each side). Target: the
        view 2x faster or more.
  csv   (--csv ROWS, alone) a ROWS x 8 float64 dataset of standard normals:
        stat of MNT/d.csv on a fresh mount (the view is measured at lookup),
        pandas.read_csv of it, and read_csv of a local copy of its bytes in
        the same round. Target (issue 63): read_csv within 2x of the copy's.
  images (--images, alone; issue 63 item 5) a (H, W) uint16 dataset
        (--image 4096, contiguous; --deflate: shuffle+deflate chunks of 256
        rows, and of 16384 rows for the other) and a ROWS x 8 float64 one
        (--npy-rows 1000000): on a fresh -o ro mount per round, FILE warm in the page
        cache, stat of MNT/img.tiff, MNT/img.png, MNT/m.npy, then
        tifffile.imread, PIL.Image.open().load() and np.load of each,
        against the same reader on a local copy of the view's bytes in
        the same round (warm), and h5py's ds[()] of each dataset; every
        array compared with h5py's.

    bench/views_bench.py --h5fs ./h5fs [--mib 1024] [--rounds 3] [--dir /var/tmp]
    bench/views_bench.py --h5fs ./h5fs --csv 1000000 [--rounds 1]
    bench/views_bench.py --h5fs ./h5fs --images [--image 4096] [--npy-rows 1000000] [--deflate] [--rounds 3]

Needs root to drop the page cache (else "cold" is warm, and it says so).
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import tifffile  # noqa: E402


def make(path, mib):
    n = mib << 20
    rng = np.random.default_rng(37)
    frames = max(1, n // (2048 * 2048 * 2))
    with h5py.File(path, "w") as f:
        a = f.create_dataset("x", shape=(n // 4,), dtype="<f4")
        step = 16 << 20
        for i in range(0, n // 4, step):
            a[i:i + step] = rng.random(min(step, n // 4 - i), dtype=np.float32)
        s = f.create_dataset("stack", shape=(frames, 2048, 2048), dtype="<u2", chunks=(1, 256, 2048),
                             shuffle=True, compression="gzip", compression_opts=4)
        base = np.cumsum(rng.integers(-3, 4, (2048, 2048)), axis=1).astype(np.int64) + 30000
        for i in range(frames):
            s[i] = (base + rng.integers(0, 512, (2048, 2048))).astype("<u2")
    return n // 4, frames


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def npy_round(mnt, local_npy, cold):
    out = {}
    for name, fn in (("view", lambda: np.load(os.path.join(mnt, "x.npy"), mmap_mode="r").sum(dtype=np.float64)),
                     ("raw", lambda: np.memmap(os.path.join(mnt, "x"), dtype="<f4", mode="r").sum(dtype=np.float64)),
                     ("local", lambda: np.load(local_npy, mmap_mode="r").sum(dtype=np.float64))):
        if cold:
            B.drop_caches()
        else:
            fn()        # warm: the page cache holds it (keep_cache)
        out[name] = timed(fn)
    return out


def tiff_round(h5, mnt, cold):
    shm = tempfile.mktemp(dir="/dev/shm", suffix=".tiff")
    if cold:
        B.drop_caches()
    tv = timed(lambda: tifffile.imread(os.path.join(mnt, "stack.tiff")))
    if cold:
        B.drop_caches()

    def base():
        with h5py.File(h5, "r") as f:
            a = f["stack"][()]
        tifffile.imwrite(shm, a)
        tifffile.imread(shm)
    tb = timed(base)
    os.unlink(shm)
    return tv, tb


def daemon_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def csv_bench(a):
    import pandas as pd
    d = tempfile.mkdtemp(prefix="views-bench-", dir=a.dir)
    try:
        h5 = os.path.join(d, "c.h5")
        with h5py.File(h5, "w") as f:
            f["d"] = np.random.default_rng(63).standard_normal((a.csv, 8))
        mnt = os.path.join(d, "mnt")
        local = os.path.join(d, "d.csv")
        for r in range(a.rounds):
            with B.Mount([a.h5fs, "-f", "-o", "ro", h5, mnt], mnt, os.path.join(d, "log")) as m:
                view = os.path.join(mnt, "d.csv")
                c0 = daemon_cpu(m.proc.pid)
                ts = timed(lambda: os.stat(view))
                c1 = daemon_cpu(m.proc.pid)
                tv = timed(lambda: pd.read_csv(view))
                c2 = daemon_cpu(m.proc.pid)
                if r == 0:
                    shutil.copyfile(view, local)
            tl = timed(lambda: pd.read_csv(local))
            B.say("csv %d x 8, round %d (load %.1f): stat %.2f s (daemon CPU %.2f s), read_csv view %.2f s "
                  "(daemon CPU %.2f s), local copy %.2f s: view/local %.2fx" % (
                      a.csv, r + 1, os.getloadavg()[0], ts, c1 - c0, tv, c2 - c1, tl, tv / tl))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def warm(path):
    with open(path, "rb") as fh:
        while fh.read(1 << 20):
            pass


def images_bench(a):
    from PIL import Image
    d = tempfile.mkdtemp(prefix="views-bench-", dir=a.dir)
    readers = {
        "tiff": ("img.tiff", lambda p: tifffile.imread(p)),
        "png": ("img.png", lambda p: np.asarray(Image.open(p))),
        "npy": ("m.npy", lambda p: np.load(p)),
    }
    try:
        h5 = os.path.join(d, "i.h5")
        rng = np.random.default_rng(63)
        img = (np.cumsum(rng.integers(-3, 4, (a.image, a.image)), axis=1) + 30000).astype("<u2")
        m = rng.standard_normal((a.npy_rows, 8))
        with h5py.File(h5, "w") as f:
            if a.deflate:
                f.create_dataset("img", data=img, chunks=(256, a.image), shuffle=True, compression="gzip",
                                 compression_opts=4)
                f.create_dataset("m", data=m, chunks=(16384, 8), shuffle=True, compression="gzip",
                                 compression_opts=4)
            else:
                f["img"] = img
                f["m"] = m
        want = {"tiff": img, "png": img, "npy": m}
        mnt = os.path.join(d, "mnt")
        res = {k: [] for k in readers}
        best = {k: [1e9, 1e9] for k in readers}
        hb = [0, 0]
        for r in range(a.rounds):
            warm(h5)
            line = []
            with B.Mount([a.h5fs, "-f", "-o", "ro", h5, mnt], mnt, os.path.join(d, "log")) as mo:
                for k, (name, read) in readers.items():
                    view = os.path.join(mnt, name)
                    local = os.path.join(d, name)
                    c0 = daemon_cpu(mo.proc.pid)
                    ts = timed(lambda: os.stat(view))
                    got = []
                    tv = timed(lambda: got.append(read(view)))
                    c1 = daemon_cpu(mo.proc.pid)
                    if not np.array_equal(got[0], want[k]):
                        raise SystemExit("%s: the view reads other values than h5py" % name)
                    if r == 0:
                        shutil.copyfile(view, local)
                    warm(local)
                    tl = timed(lambda: read(local))
                    res[k].append(tv / tl)
                    best[k] = [min(best[k][0], tv), min(best[k][1], tl)]
                    line.append("%s stat %.3f s, view %.3f s (daemon CPU %.2f s), local %.3f s: %.2fx" % (
                        k, ts, tv, c1 - c0, tl, tv / tl))
            th = []
            for k in ("img", "m"):
                with h5py.File(h5, "r") as f:
                    th.append(timed(lambda: f[k][()]))
            hb = [min(hb[0], th[0]), min(hb[1], th[1])] if r else th
            B.say("round %d (load %.1f): %s; h5py img %.3f s, m %.3f s" % (
                r + 1, os.getloadavg()[0], "; ".join(line), th[0], th[1]))
        B.say("images (%s): tiff/png %dx%d uint16 (%d MiB), npy %d x 8 float64 (%d MiB): view/local time "
              "per round tiff %s, png %s, npy %s" % (
                  "shuffle+deflate chunks" if a.deflate else "contiguous", a.image, a.image, img.nbytes >> 20,
                  a.npy_rows, m.nbytes >> 20, rng_of(res["tiff"]), rng_of(res["png"]), rng_of(res["npy"])))
        B.say("best of %d: %s; h5py's ds[()] img %.3f s, m %.3f s" % (
            a.rounds, "; ".join("%s view %.3f s local %.3f s (%.2fx)" % (k, v, lo, v / lo)
                                for k, (v, lo) in best.items()), hb[0], hb[1]))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def rng_of(v):
    return "%.2f-%.2f" % (min(v), max(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--csv", type=int, default=0, metavar="ROWS")
    ap.add_argument("--images", action="store_true")
    ap.add_argument("--image", type=int, default=4096, metavar="SIDE")
    ap.add_argument("--npy-rows", type=int, default=1000000)
    ap.add_argument("--deflate", action="store_true")
    a = ap.parse_args()
    if a.csv:
        return csv_bench(a)
    if a.images:
        return images_bench(a)
    d = tempfile.mkdtemp(prefix="views-bench-", dir=a.dir)
    try:
        h5 = os.path.join(d, "v.h5")
        n, frames = make(h5, a.mib)
        local_npy = os.path.join(d, "x.npy")
        with h5py.File(h5, "r") as f:
            np.save(local_npy, f["x"][()])
        if not B.drop_caches():
            B.say("WARNING: not root: the cold numbers are warm")
        mnt = os.path.join(d, "mnt")
        res = {"view": [], "raw": [], "local": [], "wview": [], "wraw": [], "tv": [], "tb": []}
        with B.Mount([a.h5fs, "-f", "-o", "ro", h5, mnt], mnt, os.path.join(d, "log")):
            for r in range(a.rounds):
                c = npy_round(mnt, local_npy, True)
                w = npy_round(mnt, local_npy, False)
                res["view"].append(c["view"])
                res["raw"].append(c["raw"])
                res["local"].append(c["local"])
                res["wview"].append(w["view"])
                res["wraw"].append(w["raw"])
                tv, tb = tiff_round(h5, mnt, True)
                res["tv"].append(tv)
                res["tb"].append(tb)
                B.say("round %d: npy cold view %.2f s raw %.2f s local %.2f s; warm view %.2f s raw %.2f s; "
                      "tiff view %.2f s, h5py+imwrite+imread %.2f s" % (r + 1, c["view"], c["raw"], c["local"],
                                                                       w["view"], w["raw"], tv, tb))
        mib = n * 4 / (1 << 20)
        B.say("npy %d MiB: cold view/raw time %s (target <= 1.1), view/local .npy %s; warm view/raw %s" % (
            mib, rng_of([v / r for v, r in zip(res["view"], res["raw"])]),
            rng_of([v / r for v, r in zip(res["view"], res["local"])]),
            rng_of([v / r for v, r in zip(res["wview"], res["wraw"])])))
        B.say("tiff %d frames of 2048x2048 uint16 (%d MiB), deflate: baseline/view time %s (target >= 2)" % (
            frames, frames * 8, rng_of([b / v for v, b in zip(res["tv"], res["tb"])])))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
