#!/usr/bin/python3
"""Appending to datasets indexed by a version 1 B-tree (issue 13): what h5py
writes by default (libver earliest), through a real mount and the shell.

Datasets: 1-D unfiltered with 1-element chunks (20,000 appended rows: the
tree grows to three levels, splitting leaves, internal nodes and the root
many times), 1-D shuffle+deflate+fletcher32 starting inside a partial
chunk, 3-D unfiltered written with `dd bs=7`, 3-D shuffle+deflate+fletcher32
with small chunks (three levels), 2-D with both dimensions unlimited (grows
along dimension 0 only).  Several appends each, of odd sizes.

Then, unmounted: h5py reads every value, h5dump exits 0, and bt1_dump.py
(an independent parser) checks every node: levels, key order, parents'
keys, chunk boundaries, sibling pointers of every level; the trees must
reach the depths above.  Then libhdf5 (h5py) appends more rows and h5fs
reads them all back through a new mount, and appends again after them.
A trailing partial row: close() fails with EINVAL and only whole rows are
added.  A file with K = 2 in its superblock (4 entries per node) grows to
a tree of four levels or more, and libhdf5 appends to it after h5fs.
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


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def sh(cmd):
    return subprocess.run(["/bin/bash", "-c", cmd], capture_output=True, timeout=120)


def make_file(path):
    """h5py's defaults: superblock v0, layout v3, v1 B-tree chunk indexes."""
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d1", shape=(3,), maxshape=(None,), chunks=(1,), dtype="<i4")
        d[:] = [0, 1, 2]
        d = f.create_dataset("grp/f1", shape=(7,), maxshape=(None,), chunks=(5,), dtype="<f8", **FILT)
        d[:] = np.arange(7) * 0.5
        d = f.create_dataset("c3", shape=(5, 2, 3), maxshape=(None, 2, 3), chunks=(3, 2, 2), dtype="<u2",
                             fillvalue=7)
        d[:] = np.arange(30).reshape(5, 2, 3)
        f.create_dataset("z3", shape=(0, 4, 3), maxshape=(None, 4, 3), chunks=(2, 3, 2), dtype="<i2", **FILT)
        d = f.create_dataset("u2", shape=(2, 3), maxshape=(None, None), chunks=(2, 2), dtype="<f4")
        d[:] = [[1, 2, 3], [4, 5, 6]]


def rows(name, shape_tail, dtype, start, n):
    """Deterministic rows start .. start+n of a dataset."""
    cnt = int(np.prod(shape_tail)) if shape_tail else 1
    base = np.arange(start * cnt, (start + n) * cnt, dtype=np.int64)
    if name == "f1":
        return (base * 0.5).astype(dtype)
    return (base % 30000).astype(dtype).reshape((n,) + tuple(shape_tail))


def expected(name, n):
    init = {"d1": np.arange(3, dtype="<i4"), "f1": np.arange(7) * 0.5,
            "c3": np.arange(30, dtype="<u2").reshape(5, 2, 3),
            "z3": np.zeros((0, 4, 3), "<i2"), "u2": np.array([[1, 2, 3], [4, 5, 6]], "<f4")}[name]
    tail = init.shape[1:]
    return np.concatenate([init, rows(name, tail, init.dtype, len(init), n - len(init))])


APPENDS = {  # rows per append (several appends each)
    "d1": [1, 5000, 7, 14989],          # 20,000 rows, 1-row chunks: three levels
    "f1": [1, 4, 111, 2000],
    "c3": [2, 1, 40],                   # written with dd bs=7
    "z3": [3, 997, 2000, 1000],         # 4,000 rows, 4 chunks per chunk row: three levels
    "u2": [1, 17, 300],
}
DEPTH = {"d1": 3, "z3": 3}


def append_all(path, mnt):
    total = {}
    with h5py.File(path, "r") as f:
        shapes = {k: (f[k if k != "f1" else "grp/f1"].shape, f[k if k != "f1" else "grp/f1"].dtype)
                  for k in APPENDS}
    with T.Mount(path, mnt) as m, m.watchdog(300):
        for name, sizes in APPENDS.items():
            shape, dt = shapes[name]
            n = shape[0]
            target = os.path.join(mnt, "grp/f1" if name == "f1" else name)
            for k in sizes:
                data = rows(name, shape[1:], dt, n, k).tobytes()
                src = os.path.join(os.path.dirname(path), "rows.bin")
                with open(src, "wb") as fh:
                    fh.write(data)
                if name == "c3":
                    r = sh("dd if=%s of=%s bs=7 oflag=append conv=notrunc status=none" % (src, target))
                else:
                    r = sh("cat %s >> %s" % (src, target))
                if r.returncode != 0:
                    fail("%s: append of %d rows: %s" % (name, k, r.stderr.decode().strip()))
                    break
                n += k
                if os.path.getsize(target) != n * int(np.prod(shape[1:])) * dt.itemsize:
                    fail("%s: size %d after %d rows" % (name, os.path.getsize(target), n))
            total[name] = n
            with open(target, "rb") as fh:
                got = fh.read()
            if got != expected(name, n).tobytes():
                fail("%s: bytes through the mount differ after the appends" % name)
        # a trailing partial row: EINVAL at close, whole rows kept
        target = os.path.join(mnt, "d1")
        fd = os.open(target, os.O_WRONLY | os.O_APPEND)
        os.write(fd, rows("d1", (), np.dtype("<i4"), total["d1"], 2).tobytes() + b"\x01\x02")
        try:
            os.close(fd)
            fail("d1: close() after a partial row succeeded")
        except OSError as e:
            if e.errno != errno.EINVAL:
                fail("d1: close() after a partial row: %s" % e)
        total["d1"] += 2
    if m.returncode != 0:
        fail("h5fs exited %s: %s" % (m.returncode, m.output()[-2000:]))
    return total


def check_file(path, total, phase):
    with h5py.File(path, "r") as f:
        for name, n in total.items():
            ds = f["grp/f1" if name == "f1" else name]
            if ds.shape[0] != n:
                fail("%s %s: h5py shape %r, expected %d rows" % (phase, name, ds.shape, n))
                continue
            if not np.array_equal(ds[()], expected(name, n)):
                fail("%s %s: h5py values differ" % (phase, name))
            try:
                depth, nodes, chunks = bt1_dump.check(path, h5py.h5o.get_info(ds.id).addr)
            except bt1_dump.BtError as e:
                fail("%s %s: B-tree: %s" % (phase, name, e))
                continue
            if depth < DEPTH.get(name, 1):
                fail("%s %s: B-tree depth %d, expected >= %d" % (phase, name, depth, DEPTH[name]))
            print("%s %s: %d rows, B-tree depth %d, %d nodes, %d chunks" % (phase, name, n, depth, nodes,
                                                                         len(chunks)))
    r = subprocess.run(["h5dump", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0:
        fail("%s: h5dump exit %d: %s" % (phase, r.returncode, r.stderr.decode()[-500:]))


def small_k(work, mnt):
    """A file whose superblock sets "Indexed Storage Internal Node K" to 2
    (4 entries per node; written by gen_istore_k.c against libhdf5): 600
    chunks make a tree of at least four levels; node sizes and splits follow
    K, and libhdf5 appends to it after h5fs."""
    path = os.path.join(work, "k2.h5")
    cc = T.shutil.which("cc") or T.shutil.which("gcc")
    r = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5-serial"], capture_output=True, text=True)
    if r.returncode != 0:
        r = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5"], capture_output=True, text=True)
    if not cc or r.returncode != 0:
        print("K=2 part skipped: no C compiler or libhdf5-dev (h5py cannot set the superblock's K)")
        return
    exe = os.path.join(work, "gen_istore_k")
    src = os.path.join(T.SRCDIR, "tests", "integration", "gen_istore_k.c")
    b = subprocess.run([cc, "-O1", "-o", exe, src] + r.stdout.split(), capture_output=True, text=True, timeout=120)
    if b.returncode != 0 or subprocess.run([exe, path], timeout=60).returncode != 0:
        fail("gen_istore_k.c: %s" % b.stderr[-500:])
        return
    with T.Mount(path, mnt) as m, m.watchdog(120):
        for a, b in ((1, 2), (2, 300), (300, 600)):
            with open(os.path.join(mnt, "x"), "ab") as fh:
                fh.write(np.arange(a, b, dtype="<i8").tobytes())
    with h5py.File(path, "a") as f:
        x = f["x"]
        if x.shape != (600,) or not np.array_equal(x[()], np.arange(600)):
            fail("K=2: h5py reads %r" % (x.shape,))
        depth, nodes, _ = bt1_dump.check(path, h5py.h5o.get_info(x.id).addr, k=2)
        print("K=2: depth %d, %d nodes" % (depth, nodes))
        if depth < 4:
            fail("K=2: depth %d, expected >= 4" % depth)
        x.resize((650,))
        x[600:] = np.arange(600, 650)
    with h5py.File(path, "r") as f:
        depth, nodes, _ = bt1_dump.check(path, h5py.h5o.get_info(f["x"].id).addr, k=2)
        if not np.array_equal(f["x"][()], np.arange(650)):
            fail("K=2: values after libhdf5 appended")


def main():
    if not T.shutil.which("h5dump"):
        T.skip("h5dump not installed")
    work = T.workdir("append-bt1")
    path = os.path.join(work, "bt1.h5")
    mnt = os.path.join(work, "mnt")
    make_file(path)
    total = append_all(path, mnt)
    check_file(path, total, "after h5fs")
    # libhdf5 appends after h5fs, then h5fs reads it all and appends again
    with h5py.File(path, "a") as f:
        for name in total:
            ds = f["grp/f1" if name == "f1" else name]
            n = ds.shape[0]
            ds.resize((n + 123,) + ds.shape[1:])
            ds[n:] = expected(name, n + 123)[n:]
            total[name] = n + 123
    check_file(path, total, "after h5py")
    with T.Mount(path, mnt) as m, m.watchdog(120):
        for name, n in total.items():
            target = os.path.join(mnt, "grp/f1" if name == "f1" else name)
            with open(target, "rb") as fh:
                if fh.read() != expected(name, n).tobytes():
                    fail("%s: h5fs reads h5py's appended rows wrong" % name)
            tail = expected(name, n + 9)[n:].tobytes()
            with open(target, "ab") as fh:
                fh.write(tail)
            total[name] = n + 9
    check_file(path, total, "after h5fs again")
    small_k(work, mnt)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
