#!/usr/bin/python3
"""A dataset's size set through a read-write mount (issue 47 item 1;
member/truncate.c, engine write/dset_empty.c), on an h5py-default file
(v1 B-tree), a libver="latest" one (extensible array; a v2 B-tree with
two unlimited dimensions) and a netCDF-4 style unlimited variable:

- writing a new stream over a dataset that grows replaces its rows:
  `cat x > d` (shell O_TRUNC), `cp x d`, Python open("wb"), `cp -r DIR`
  twice (the second copy writes over every file of the first), and
  Python's truncate(0) then write on an r+ descriptor; the dataset keeps
  its type, row shape, chunk shape, filters, fill value and attributes
  (POSIX: O_TRUNC keeps the inode), h5py reads exactly the new bytes;
- np.save over dataset NAME (NAME.npy opened with O_TRUNC: its view) and
  cp of an .npy file over it replace dataset NAME with the array, whatever
  its layout (views.c npy_over, npy.c), and leave no placeholder;
- truncate -s to more whole rows appends rows of the fill value (h5py's
  resize); to 0 empties; to fewer rows (issue 65): the rows past them go
  and a later growth reads the fill value there (gzip with a fill value,
  a boundary chunk cut; a descriptor that shrinks and appends; an
  emptied dataset, with no index, grown then appended to), but a
  dataset whose chunks are not runs of whole rows: EPERM; not whole rows:
  EINVAL; a fixed-size dataset (contiguous, np.save's): truncate and
  O_TRUNC are EPERM; each refusal is one log line, and FILE is unchanged
  by it;
- the daemon exits 0 and h5dump reads the whole file.
- many one-row chunks (netCDF record variables; issue 81): 20,000 cut to
  2 rows leave an index of what is left (the v1 B-tree's emptied nodes
  out of the tree, h5fs-ls --space's metadata a few KiB, not the old
  leaves), no fill written for the chunks removed, and h5py grows it
  again reading the fill value; libhdf5 1.14 reads it as 1.10 does.
The crash states of emptying are test_truncate_crash.py's.
"""
import errno
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import h514  # noqa: E402

h514.require()


def make(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        d = f.create_dataset("rows", data=np.arange(24, dtype="<i4").reshape(12, 2), maxshape=(None, 2),
                             chunks=(5, 2), fillvalue=-7, compression="gzip", shuffle=True)
        d.attrs["units"] = "m"
        f.create_dataset("bytes", data=np.frombuffer(b"hello world", dtype="u1"), maxshape=(None,), chunks=(4,))
        f.create_dataset("e", data=np.frombuffer(b"abcdefgh", dtype="u1"), maxshape=(None,), chunks=(4,),
                         fillvalue=7)
        f.create_dataset("two", data=np.ones((3, 4), "<f8"), maxshape=(None, None), chunks=(2, 2))
        f.create_dataset("fixed", data=np.arange(10, dtype="<f8"))
        f.create_dataset("arr", data=np.arange(5))


def sh(cmd, tag):
    r = subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, timeout=60)
    if r.returncode != 0:
        T.fail("%s: %r exit %d: %s" % (tag, cmd, r.returncode, r.stderr.decode()[-400:]))
    return r


def check(path, name, want, tag, attrs=None, dtype=None):
    with h5py.File(path, "r") as f:
        d = f[name]
        got = d[()]
        if dtype and d.dtype != np.dtype(dtype):
            T.fail("%s: %s has dtype %s, not %s" % (tag, name, d.dtype, dtype))
        if got.shape != want.shape or not np.array_equal(got, want):
            T.fail("%s: %s holds %r, expected %r" % (tag, name, got[:8], want[:8]))
        for k, v in (attrs or {}).items():
            if d.attrs.get(k) != v:
                T.fail("%s: %s lost attribute %s" % (tag, name, k))


def case(wd, libver):
    tag = "truncate[%s]" % libver
    path = os.path.join(wd, libver + ".h5")
    mnt = os.path.join(wd, "mnt-" + libver)
    make(path, libver)
    new = np.arange(100, 116, dtype="<i4").reshape(8, 2)
    x = os.path.join(wd, "x.bin")
    new.tofile(x)
    src = os.path.join(wd, "src")
    os.makedirs(src, exist_ok=True)
    for i in range(3):
        with open(os.path.join(src, "f%d" % i), "wb") as fh:
            fh.write(os.urandom(1000 + 4096 * i))
    with T.Mount(path, mnt, ["-o", "rw"]) as m, m.watchdog(120):
        # a new stream over the dataset: shell O_TRUNC, then cp
        sh("cat %s > %s/rows" % (x, mnt), tag)
        if os.path.getsize(mnt + "/rows") != new.nbytes:
            T.fail("%s: size after cat > rows: %d" % (tag, os.path.getsize(mnt + "/rows")))
        with open(mnt + "/rows", "rb") as fh:
            if fh.read() != new.tobytes():
                T.fail("%s: rows read back through the mount differ" % tag)
        sh(["cp", x, mnt + "/rows"], tag)
        # Python's "wb", then r+ with truncate(0) and a write
        with open(mnt + "/bytes", "wb") as fh:
            fh.write(b"first")
        with open(mnt + "/bytes", "r+b") as fh:
            fh.truncate(0)
            fh.write(b"second!")
        # fewer rows through a descriptor that then appends, then more
        with open(mnt + "/bytes", "r+b") as fh:
            fh.truncate(3)
            fh.seek(0, 2)
            fh.write(b"ond")
        os.truncate(mnt + "/bytes", 9)
        # emptied (no index left), then more rows: the fill value, no chunk
        # written (h5_overwrite_resize); then rows appended after them
        os.truncate(mnt + "/e", 0)
        os.truncate(mnt + "/e", 5)
        with open(mnt + "/e", "ab") as fh:
            fh.write(b"xyz")
        # cp -r twice: the second writes over the files the first made
        sh(["cp", "-r", src, mnt + "/tree"], tag)
        sh(["cp", "-r", src + "/.", mnt + "/tree"], tag)
        # truncate: more rows (fill), 0, fewer (EPERM), not whole rows (EINVAL)
        # (two: 3 rows of 4 float64, 32 bytes a row)
        sh(["truncate", "-s", "128", mnt + "/two"], tag)         # a row of fill appended
        T.expect_err("truncate two to 130 bytes (not whole rows)", lambda: os.truncate(mnt + "/two", 130),
                     errno.EINVAL)
        T.expect_err("truncate two to 64 bytes (fewer rows)", lambda: os.truncate(mnt + "/two", 64),
                     errno.EPERM)
        sh(["truncate", "-s", "160", mnt + "/two"], tag)         # another
        sh(["truncate", "-s", "%d" % (new.nbytes + 16), mnt + "/rows"], tag)   # 2 rows of -7
        # fewer rows: chunk 1 of (5, 2) dropped, chunk 0 cut after row 3;
        # more again: rows 3..6 the fill value
        sh(["truncate", "-s", "24", mnt + "/rows"], tag)
        if os.path.getsize(mnt + "/rows") != 24:
            T.fail("%s: size after truncate -s 24 rows: %d" % (tag, os.path.getsize(mnt + "/rows")))
        sh(["truncate", "-s", "56", mnt + "/rows"], tag)
        T.expect_err("truncate rows to 20 bytes (not whole rows)", lambda: os.truncate(mnt + "/rows", 20),
                     errno.EINVAL)
        # np.save again over a dataset (h5py's contiguous one, then its own),
        # and cp of an .npy file over it: dataset NAME replaced
        np.save(mnt + "/arr.npy", np.arange(7.0))
        np.save(mnt + "/arr.npy", np.ones((2, 3), "<i2"))
        got = np.load(mnt + "/arr.npy")
        if got.dtype != np.dtype("<i2") or not np.array_equal(got, np.ones((2, 3), "<i2")):
            T.fail("%s: np.load after np.save over arr: %r" % (tag, got))
        np.save(os.path.join(wd, "c.npy"), np.arange(5, dtype="<u4"))
        sh(["cp", os.path.join(wd, "c.npy"), mnt + "/c.npy"], tag)
        sh(["cp", os.path.join(wd, "c.npy"), mnt + "/arr.npy"], tag)
        T.expect_err("truncate fixed", lambda: os.truncate(mnt + "/fixed", 0), errno.EPERM)
        T.expect_err("O_TRUNC fixed", lambda: os.open(mnt + "/fixed", os.O_WRONLY | os.O_TRUNC), errno.EPERM)
        out = m.output()
        for what in ("truncate /two to 130 bytes: EINVAL", "truncate /two to 64 bytes: EPERM",
                     "truncate /fixed to 0 bytes: EPERM", "open with O_TRUNC /fixed to 0 bytes: EPERM"):
            if what not in out:
                T.fail("%s: no log line says %r" % (tag, what))
    if m.proc.returncode != 0:
        T.fail("%s: the daemon exited %d" % (tag, m.proc.returncode))
    want_rows = np.concatenate([new[:3], np.full((4, 2), -7, "<i4")])
    check(path, "rows", want_rows, tag, {"units": "m"}, "<i4")
    check(path, "bytes", np.frombuffer(b"second\0\0\0", "u1"), tag, dtype="u1")
    check(path, "e", np.frombuffer(b"\7\7\7\7\7xyz", "u1"), tag, dtype="u1")
    two = np.ones((3, 4), "<f8")
    check(path, "two", np.concatenate([two, np.zeros((2, 4))]), tag)
    check(path, "fixed", np.arange(10, dtype="<f8"), tag)
    check(path, "arr", np.arange(5, dtype="<u4"), tag, dtype="<u4")
    check(path, "c", np.arange(5, dtype="<u4"), tag, dtype="<u4")
    with h5py.File(path, "r") as f:
        left = [n for n in f if n.endswith(".npy")]
        if left:
            T.fail("%s: placeholders left: %r" % (tag, left))
    with h5py.File(path, "r") as f:
        d = f["rows"]
        if d.chunks != (5, 2) or d.compression != "gzip" or not d.shuffle or d.fillvalue != -7:
            T.fail("%s: rows lost its chunks/filters/fill: %r %r %r %r" % (tag, d.chunks, d.compression,
                                                                           d.shuffle, d.fillvalue))
        for i in range(3):
            want = open(os.path.join(src, "f%d" % i), "rb").read()
            got = f["tree/f%d" % i][()].tobytes()
            if got != want:
                T.fail("%s: tree/f%d differs after cp -r twice (%d bytes, expected %d)" % (tag, i, len(got),
                                                                                           len(want)))
    r = subprocess.run(["h5dump", path], capture_output=True, timeout=60)
    if r.returncode != 0:
        T.fail("%s: h5dump exit %d: %s" % (tag, r.returncode, r.stderr.decode()[-300:]))


def space_of(path, tag):
    r = subprocess.run([os.environ.get("H5FS_LS", "./h5fs-ls"), "--space", "--json", path], capture_output=True,
                       timeout=60)
    if r.returncode != 0:
        T.fail("%s: h5fs-ls --space exit %d: %s" % (tag, r.returncode, r.stderr.decode()[-300:]))
        return {}
    return json.loads(r.stdout)


def many_chunks(wd, libver):
    """truncate -s 16 of 20,000 one-row chunks (issue 81), beside h5py's
    resize((2,)) of a copy: the index left is no larger than libhdf5's
    (the v1 B-tree's emptied nodes out of the tree; an extensible array
    keeps its blocks, as libhdf5 does), no fill written."""
    tag = "many chunks, libver=%s" % libver
    path = os.path.join(wd, "many_%s.h5" % libver)
    ref = os.path.join(wd, "many_%s_h5py.h5" % libver)
    n = 20000
    with h5py.File(path, "w", libver=libver) as f:
        d = f.create_dataset("t", shape=(n,), maxshape=(None,), chunks=(1,), dtype="<f8")
        d[:] = np.arange(n, dtype="<f8")
    subprocess.run(["cp", path, ref], check=True)
    with h5py.File(ref, "r+") as f:
        f["t"].resize((2,))
    mnt = os.path.join(wd, "mnt-many")
    with T.Mount(path, mnt) as m, m.watchdog(120):
        os.truncate(os.path.join(mnt, "t"), 16)
        if os.stat(os.path.join(mnt, "t")).st_size != 16:
            T.fail("%s: size %d after truncate -s 16" % (tag, os.stat(os.path.join(mnt, "t")).st_size))
    if m.returncode:
        T.fail("%s: unmount exits %s" % (tag, m.returncode))
    sp, sr = space_of(path, tag), space_of(ref, tag)
    meta, raw = sp.get("metadata"), sp.get("raw")
    if meta is None or meta > sr.get("metadata", 0) + 8192 or raw is None or raw > sr.get("raw", 0) + 64:
        T.fail("%s: metadata %r and raw data %r bytes left, h5py's resize leaves %r and %r"
               % (tag, meta, raw, sr.get("metadata"), sr.get("raw")))
    with h5py.File(path, "r+") as f:
        d = f["t"]
        if d.shape != (2,) or list(d[:]) != [0.0, 1.0]:
            T.fail("%s: h5py reads %r %r" % (tag, d.shape, d[:5]))
        d.resize((6,))
        d[4] = 9
        if list(d[:]) != [0.0, 1.0, 0.0, 0.0, 9.0, 0.0]:
            T.fail("%s: grown again, h5py reads %r" % (tag, d[:]))
    bad = h514.compare(path)
    if bad:
        T.fail("%s: libhdf5 1.14 reads otherwise: %s" % (tag, bad[:5]))
    print("%s: 20,000 chunks cut to 2 rows: metadata %s bytes, raw %s left (h5py's resize: %s, %s)"
          % (tag, meta, raw, sr.get("metadata"), sr.get("raw")))


def main():
    wd = T.workdir("truncate")
    for libver in ("earliest", "latest"):
        many_chunks(wd, libver)
        case(wd, libver)
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
