#!/usr/bin/python3
"""setfattr of N attributes through an h5fs mount against what a shell user
would otherwise script: an h5py loop that opens the file 'r+' per change
(issue 31's benchmark: at least 0.5x). Run by hand, never in CI; see
bench/README.md ("setfattr").

    bench/setfattr_bench.py [--h5fs PATH] [--dir DIR] [-n N] [--rounds R]
                            [--mode new|set|both]

mode new: N new names (a variable-length string each: a global heap
collection and an fsync'd commit each through h5fs), on a group of an
h5py-default file (v1 object header: libhdf5 keeps them compact), or with
--format latest of a libver="latest" file (v2 header: dense storage past
8 attributes, which h5fs writes anew per change).
mode set: N changes of the values of 100 existing int64 attributes (in
place, no new space). Each round, in alternating order, h5fs (os.setxattr
in one process, through a fresh mount of a fresh copy, then unmounted:
durable) and h5py (one h5py.File(path, 'r+') per change on a fresh copy);
both files are then compared by h5py. Printed: seconds per round, the
ratio h5py/h5fs (above 1: h5fs faster) per round, medians and ranges, the
load average, and a floor measured in the same round: N 4 KiB writes each
fsync'd on the same disk (what an ordered commit of new space cannot do
without; the h5py loop makes nothing durable). Warm: the fixture is in
the page cache.
"""
import argparse
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib as B  # noqa: E402


def fixture(path, fmt="default"):
    import h5py
    import numpy as np
    with h5py.File(path, "w", libver="latest" if fmt == "latest" else "earliest") as f:
        g = f.create_group("g")
        for k in range(100):
            g.attrs["v%02d" % k] = np.int64(k)


def changes(mode, n):
    if mode == "new":
        return [("a%05d" % i, "value %d" % i) for i in range(n)]
    return [("v%02d" % (i % 100), str(i)) for i in range(n)]


def run_h5fs(h5fs, path, mnt, log, ch):
    t0 = time.monotonic()
    with B.Mount([h5fs, "-f", path, mnt], mnt, log):
        p = os.path.join(mnt, "g")
        for name, val in ch:
            os.setxattr(p, "user." + name, val.encode())
    return time.monotonic() - t0


def run_h5py(path, ch, mode):
    import h5py
    import numpy as np
    t0 = time.monotonic()
    for name, val in ch:
        with h5py.File(path, "r+") as f:
            if mode == "new":
                f["g"].attrs[name] = val
            else:
                f["g"].attrs.modify(name, np.int64(int(val)))
    return time.monotonic() - t0


def fsync_floor(d, n):
    """n small writes each made durable (pwrite of 4 KiB at a new offset,
    then fsync) in a file on the same disk: the least an ordered commit
    that writes new space costs (its new space is fsync'd before the
    switch); h5py's loop makes nothing durable."""
    path = os.path.join(d, "floor.bin")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    buf = b"\0" * 4096
    t0 = time.monotonic()
    try:
        for i in range(n):
            os.pwrite(fd, buf, i * 4096)
            os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(path)
    return time.monotonic() - t0


def same(a, b):
    import h5py
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        da = {k: fa["g"].attrs[k] for k in fa["g"].attrs}
        db = {k: fb["g"].attrs[k] for k in fb["g"].attrs}
    return da.keys() == db.keys() and all(str(da[k]) == str(db[k]) for k in da)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default=os.path.join(HERE, "..", "h5fs"))
    ap.add_argument("--dir", default="/tmp/h5fs-setfattr-bench")
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mode", default="both", choices=("new", "set", "both"))
    ap.add_argument("--format", default="default", choices=("default", "latest"),
                    help="latest: a v2 header, whose attributes go to dense storage past 8")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    base = os.path.join(a.dir, "base.h5")
    fixture(base, a.format)
    mnt = os.path.join(a.dir, "mnt")
    log = os.path.join(a.dir, "h5fs.log")
    B.say("load before: %s" % (os.getloadavg(),))
    for mode in (("new", "set") if a.mode == "both" else (a.mode,)):
        ch = changes(mode, a.n)
        t_fs, t_py, ratios = [], [], []
        for r in range(a.rounds):
            p1, p2 = os.path.join(a.dir, "fs.h5"), os.path.join(a.dir, "py.h5")
            shutil.copy(base, p1)
            shutil.copy(base, p2)
            order = ("fs", "py") if r % 2 == 0 else ("py", "fs")
            res = {}
            for who in order:
                res[who] = run_h5fs(a.h5fs, p1, mnt, log, ch) if who == "fs" else run_h5py(p2, ch, mode)
            if not same(p1, p2):
                B.say("  round %d: the two files differ!" % r)
            t_fs.append(res["fs"])
            t_py.append(res["py"])
            ratios.append(res["py"] / res["fs"])
            fl = fsync_floor(a.dir, a.n)
            B.say("%s round %d: h5fs %.2f s, h5py reopen loop %.2f s, ratio h5py/h5fs %.2f; "
                  "floor (%d x 4 KiB pwrite + fsync) %.2f s, h5fs/floor %.2f" % (
                      mode, r, res["fs"], res["py"], ratios[-1], a.n, fl, res["fs"] / fl))
        B.say("%s: %d changes: h5fs median %.2f s [%.2f-%.2f], h5py median %.2f s [%.2f-%.2f], "
              "ratio median %.2f [%.2f-%.2f] (target >= 0.5)" % (
                  mode, a.n, statistics.median(t_fs), min(t_fs), max(t_fs), statistics.median(t_py),
                  min(t_py), max(t_py), statistics.median(ratios), min(ratios), max(ratios)))
    B.say("load after: %s" % (os.getloadavg(),))


if __name__ == "__main__":
    main()
