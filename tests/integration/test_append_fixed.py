#!/usr/bin/python3
"""Appending to datasets that grow within a fixed maximum (issue 13): fixed
array (unpaged and paged, unfiltered and shuffle+deflate+fletcher32, 2-D
and 3-D), implicit index (early allocation) and single chunk (a dataset
shrunk by libhdf5, then grown again), through a real mount and the shell.

Rows up to the maximum are appended (`cat`, `dd bs=7`); a write that would
pass the maximum is refused (EPERM, at that write or the next call) and
appends nothing; a dataset at its maximum cannot be opened for writing
(EPERM).  Then h5py reads every value and h5dump exits 0; libhdf5 appends
more and h5fs reads it all back.
"""
import errno
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
# name: shape, maxshape, chunks, dtype, filters, appends, index expected
SETS = {
    "fa": ((5,), (4000,), (2,), "<i4", {}, [1, 7, 1500], "farray"),
    "fa_paged": ((3, 4), (9000, 4), (1, 3), "<i4", FILT, [2, 3000, 1], "farray"),
    "fa3": ((2, 2, 3), (800, 2, 3), (3, 2, 2), "<u2", {}, [1, 300], "farray"),
    "imp": ((4, 4), (700, 4), (3, 2), "<i4", "early", [1, 2, 500], "implicit"),
}


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def expected(name, n, shape=None):
    tail = (shape or SETS[name][0])[1:]
    cnt = int(np.prod(tail))
    dt = SETS[name][3] if name in SETS else "<i4"
    return ((np.arange(n * cnt) * 5 + 2) % 60000).astype(dt).reshape((n,) + tuple(tail))


def make_file(path):
    with h5py.File(path, "w", libver="latest") as f:
        for name, (shape, mx, chunks, dt, filt, _, _) in SETS.items():
            if filt == "early":
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                dcpl.set_chunk(chunks)
                dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
                h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(np.dtype(dt)),
                                h5py.h5s.create_simple(shape, mx), dcpl=dcpl)
            else:
                f.create_dataset(name, shape=shape, maxshape=mx, chunks=chunks, dtype=dt, **filt)
            f[name][...] = expected(name, shape[0])
        # single chunk: libhdf5 makes one only when dims == maxdims; shrunk, it may grow again
        for name, filt in (("single", {}), ("single_f", FILT)):
            d = f.create_dataset(name, shape=(6, 3), maxshape=(6, 3), chunks=(6, 3), dtype="<i4", **filt)
            d[...] = expected(name, 6, (6, 3))
            d.resize((2, 3))
        f.create_dataset("full", shape=(4,), maxshape=(4,), chunks=(2,), dtype="<i4", data=np.arange(4))


def main():
    if not T.shutil.which("h5dump"):
        T.skip("h5dump not installed")
    work = T.workdir("append-fixed")
    path = os.path.join(work, "fixed.h5")
    mnt = os.path.join(work, "mnt")
    make_file(path)
    with h5py.File(path, "r") as f:
        for name, (_, _, _, _, _, _, idx) in SETS.items():
            got = bt1_dump.index_type(path, h5py.h5o.get_info(f[name].id).addr)
            if got != idx:
                fail("%s: index %s, expected %s (fixture)" % (name, got, idx))
        for name in ("single", "single_f"):
            if bt1_dump.index_type(path, h5py.h5o.get_info(f[name].id).addr) != "single":
                fail("%s: not a single-chunk index (fixture)" % name)
    total = {}
    shapes = {n: SETS[n][0] for n in SETS}
    shapes.update(single=(6, 3), single_f=(6, 3))
    plan = {n: SETS[n][5] for n in SETS}
    plan.update(single=[1, 3], single_f=[4])
    start = {n: SETS[n][0][0] for n in SETS}
    start.update(single=2, single_f=2)
    with T.Mount(path, mnt) as m, m.watchdog(300):
        for name, sizes in plan.items():
            n = start[name]
            target = os.path.join(mnt, name)
            for k in sizes:
                src = os.path.join(work, "rows.bin")
                with open(src, "wb") as fh:
                    fh.write(expected(name, n + k, shapes[name])[n:].tobytes())
                cmd = ("dd if=%s of=%s bs=7 oflag=append conv=notrunc status=none" if name == "fa3"
                       else "cat %s >> %s") % (src, target)
                r = subprocess.run(["/bin/bash", "-c", cmd], capture_output=True, timeout=120)
                if r.returncode != 0:
                    fail("%s: append of %d rows: %s" % (name, k, r.stderr.decode().strip()))
                    break
                n += k
            total[name] = n
            with open(target, "rb") as fh:
                if fh.read() != expected(name, n, shapes[name]).tobytes():
                    fail("%s: bytes through the mount differ" % name)
        # past the maximum: refused, nothing appended
        target = os.path.join(mnt, "fa")
        room = 4000 - total["fa"]
        data = expected("fa", total["fa"] + room + 1)[total["fa"]:].tobytes()
        try:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, data)
                os.fsync(fd)
                fail("fa: a write past the maximum succeeded")
            finally:
                try:
                    os.close(fd)
                except OSError:
                    pass
        except OSError as e:
            if e.errno != errno.EPERM:
                fail("fa: write past the maximum: %s, expected EPERM" % e)
        if os.path.getsize(target) != total["fa"] * 4:
            fail("fa: %d bytes after a refused write, expected %d" % (os.path.getsize(target), total["fa"] * 4))
        # at its maximum: cannot be opened for writing
        try:
            os.close(os.open(os.path.join(mnt, "full"), os.O_WRONLY | os.O_APPEND))
            fail("full: opened for appending at its maximum")
        except OSError as e:
            if e.errno != errno.EPERM:
                fail("full: %s, expected EPERM" % e)
    with h5py.File(path, "r") as f:
        for name, n in total.items():
            ds = f[name]
            if ds.shape[0] != n or not np.array_equal(ds[()], expected(name, n, shapes[name])):
                fail("%s: h5py shape %r (expected %d rows) or values differ" % (name, ds.shape, n))
            else:
                print("%s: %d rows" % (name, n))
        if not np.array_equal(f["full"][()], np.arange(4)):
            fail("full changed")
    r = subprocess.run(["h5dump", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0:
        fail("h5dump exit %d: %s" % (r.returncode, r.stderr.decode()[-500:]))
    # libhdf5 appends a few rows where there is room, h5fs reads them back
    with h5py.File(path, "a") as f:
        for name in ("fa", "fa_paged", "fa3", "imp"):
            ds = f[name]
            n = ds.shape[0]
            ds.resize((n + 5,) + ds.shape[1:])
            ds[n:] = expected(name, n + 5)[n:]
            total[name] = n + 5
    with T.Mount(path, mnt) as m, m.watchdog(120):
        for name, n in total.items():
            with open(os.path.join(mnt, name), "rb") as fh:
                if fh.read() != expected(name, n, shapes[name]).tobytes():
                    fail("%s: h5fs reads libhdf5's rows wrong" % name)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
