#!/usr/bin/python3
"""Appending to datasets indexed by a version 2 B-tree (issue 13): chunked
datasets with several unlimited dimensions (libver "latest"), grown along
dimension 0 through a real mount and the shell.

Datasets: 2-D unfiltered with small chunks (thousands of chunk records:
leaf, internal and root splits, depth >= 2), 2-D shuffle+deflate+fletcher32
starting inside a partial chunk, 3-D unfiltered written with `dd bs=7`,
3-D shuffle+deflate+fletcher32, and a 2-D dataset with no chunk yet (h5fs
creates its tree: a new header the layout message is pointed at).
Then, unmounted: h5py reads every value, h5dump exits 0, the tree's header
(bt1_dump.bt2_shape) has one record per chunk and the expected depth;
libhdf5 (h5py) appends more rows, and h5fs reads it all back and appends
again.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import bt1_dump  # noqa: E402

failures = []
FILT = dict(compression="gzip", shuffle=True, fletcher32=True)
# name: shape, chunks, dtype, filters, appends (rows each), min depth
SETS = {
    "u2": ((5, 3), (2, 2), "<i4", {}, [1, 2000, 7, 7000], 2),
    "f2": ((3, 4), (2, 3), "<f8", FILT, [1, 4, 999], 1),
    "c3": ((5, 2, 3), (3, 2, 2), "<u2", {}, [2, 1, 40], 0),
    "z3": ((0, 4, 3), (2, 3, 2), "<i2", FILT, [3, 997, 1000], 2),
    "e2": ((0, 2), (1, 1), "<i4", {}, [5, 600], 1),
}


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def expected(name, n):
    shape, _, dt, _, _, _ = SETS[name]
    tail = shape[1:]
    cnt = int(np.prod(tail))
    return ((np.arange(n * cnt) * 3 + 1) % 30000).astype(dt).reshape((n,) + tail)


def make_file(path):
    with h5py.File(path, "w", libver="latest") as f:
        for name, (shape, chunks, dt, filt, _, _) in SETS.items():
            d = f.create_dataset(name, shape=shape, maxshape=(None,) * len(shape), chunks=chunks, dtype=dt,
                                 **filt)
            if shape[0]:
                d[...] = expected(name, shape[0])


def check_file(path, total, phase):
    with h5py.File(path, "r") as f:
        for name, n in total.items():
            ds = f[name]
            if ds.shape[0] != n:
                fail("%s %s: shape %r, expected %d rows" % (phase, name, ds.shape, n))
                continue
            if not np.array_equal(ds[()][:, ...], expected(name, n)[(slice(None),) + tuple(
                    slice(0, s) for s in ds.shape[1:])]):
                fail("%s %s: h5py values differ" % (phase, name))
            try:
                depth, nrec, _ = bt1_dump.bt2_shape(path, h5py.h5o.get_info(ds.id).addr)
            except bt1_dump.BtError as e:
                fail("%s %s: %s" % (phase, name, e))
                continue
            want = 1
            for s, c in zip(ds.shape, ds.chunks):
                want *= -(-s // c)
            if nrec != want:
                fail("%s %s: %d chunk records, expected %d" % (phase, name, nrec, want))
            if depth < SETS[name][5]:
                fail("%s %s: depth %d, expected >= %d" % (phase, name, depth, SETS[name][5]))
            print("%s %s: %d rows, v2 B-tree depth %d, %d records" % (phase, name, n, depth, nrec))
    r = subprocess.run(["h5dump", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0:
        fail("%s: h5dump exit %d: %s" % (phase, r.returncode, r.stderr.decode()[-500:]))


def main():
    if not T.shutil.which("h5dump"):
        T.skip("h5dump not installed")
    work = T.workdir("append-bt2")
    path = os.path.join(work, "bt2.h5")
    mnt = os.path.join(work, "mnt")
    make_file(path)
    total = {}
    with T.Mount(path, mnt) as m, m.watchdog(300):
        for name, (shape, _, dt, _, sizes, _) in SETS.items():
            n = shape[0]
            target = os.path.join(mnt, name)
            for k in sizes:
                src = os.path.join(work, "rows.bin")
                with open(src, "wb") as fh:
                    fh.write(expected(name, n + k)[n:].tobytes())
                cmd = ("dd if=%s of=%s bs=7 oflag=append conv=notrunc status=none" if name == "c3"
                       else "cat %s >> %s") % (src, target)
                r = subprocess.run(["/bin/bash", "-c", cmd], capture_output=True, timeout=120)
                if r.returncode != 0:
                    fail("%s: append of %d rows: %s" % (name, k, r.stderr.decode().strip()))
                    break
                n += k
            total[name] = n
            with open(target, "rb") as fh:
                if fh.read() != expected(name, n).tobytes():
                    fail("%s: bytes through the mount differ" % name)
    check_file(path, total, "after h5fs")
    # libhdf5 appends, then h5fs again
    with h5py.File(path, "a") as f:
        for name in total:
            ds = f[name]
            n = ds.shape[0]
            ds.resize((n + 77,) + ds.shape[1:])
            ds[n:] = expected(name, n + 77)[n:]
            total[name] = n + 77
    check_file(path, total, "after h5py")
    with T.Mount(path, mnt) as m, m.watchdog(120):
        for name, n in total.items():
            target = os.path.join(mnt, name)
            with open(target, "rb") as fh:
                if fh.read() != expected(name, n).tobytes():
                    fail("%s: h5fs reads h5py's rows wrong" % name)
            with open(target, "ab") as fh:
                fh.write(expected(name, n + 9)[n:].tobytes())
            total[name] = n + 9
    check_file(path, total, "after h5fs again")
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
