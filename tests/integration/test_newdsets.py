#!/usr/bin/python3
"""New datasets through a read-write mount (issue 32 item 2; man h5fs
MODIFYING, doc/MODIFY.md "New datasets").

On a fixture of h5py's default format (symbol-table groups) and one of
libver="latest" (compact groups), each with a group /g, written here by
h5py (deterministic):

- np.save of every numeric dtype h5fs takes (bool, int and uint of 1-8
  bytes, float 2/4/8, complex 8/16, both byte orders), a 0-d array, an
  empty one, a 2-D one in /g, a large one (4 MiB, its data written in
  many pieces; seven to a group, as a compact group takes 8 links before
  libhdf5 would go dense), and NPY format 2.0 and 3.0 headers (np.lib.format with
  version=): each must be dataset NAME (no NAME.npy left) with the same
  dtype, shape and bytes as h5py reads them;
- cp of files of 0, 1, 65535, 65537 and 300001 bytes: a growable 1-D
  uint8 dataset of the file's name holding its bytes, read back through
  the mount and by h5py, and appended to afterwards (cat >>);
- every other array h5py stores (issue 57): bytes S<n>, structured
  dtypes (nested, aligned, bool, complex, bytes and subarray fields, 0-d),
  Fortran order, unicode as h5py's variable-length UTF-8 strings (as
  anndata stores string arrays; 0-d, empty, big-endian, Fortran, 70,000
  of them); refusals that make nothing, with one log line each:
  object and datetime arrays (EOPNOTSUPP: h5py stores none), a
  stream cut short (close: EINVAL), a name that exists (O_EXCL: EEXIST);
  a file that is no NPY stream is its bytes (issue 47);
- np.save's streams as a kind of the commit layer (issue 71 item 6): a
  complete stream whose descriptor stays open is made by an fsync of
  another file at once, and by the kind's timer else;
- h5dump reads the result, libhdf5 1.14 reads it as 1.10 does
  (h514.compare; where h5wasm shows a dataset otherwise, as float16,
  complex and scalars, it must show the same dataset written by h5py
  alike), h5py 'r+' then writes into it, and a second mount lists
  what h5py reads;
- -o compress=gzip:6 (run_compressed): np.save makes what h5py's
  create_dataset(compression="gzip", compression_opts=6) makes (chunks,
  filter, level, maxshape, bytes; many rows of chunks, edge chunks on
  every axis; scalar and empty contiguous), cp a deflated byte dataset;
  h5dump and 1.14 read them, and a write into a deflated chunk after;
  bad values of the option are refused at mount.
"""
import errno
import io
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h514  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402

DTYPES = ["?", "i1", "<i2", ">i2", "<i4", ">i4", "<i8", "u1", "<u2", "<u4", ">u8", "<f2", "<f4", ">f4", "<f8",
          ">f8", "<c8", "<c16"]
CP_SIZES = [0, 1, 65535, 65537, 300001]


def arrays():
    """name -> array, deterministic."""
    rng = np.random.default_rng(32)
    out = {}
    for dt in DTYPES:
        name = "a_" + dt.replace("<", "le").replace(">", "be").replace("?", "bool")
        if dt == "?":
            out[name] = rng.integers(0, 2, 37).astype(bool)
        elif dt[-2] in "iu" or dt[0] in "iu":
            out[name] = rng.integers(0, 100, (5, 7)).astype(dt)
        elif "c" in dt:
            out[name] = (rng.standard_normal(9) + 1j * rng.standard_normal(9)).astype(dt)
        else:
            out[name] = rng.standard_normal((3, 4, 2)).astype(dt)
    out["scalar"] = np.float64(2.5)
    out["empty"] = np.zeros((0, 5), dtype="<u2")
    out["large"] = np.arange(4 << 20 >> 3, dtype="<i8")
    # issue 57: every array h5py stores: bytes, structured dtypes (h5py's
    # compounds: nested, aligned with padding, bool, complex, bytes and
    # subarray fields, a big-endian one), Fortran order, 0-d of them
    out["bytes_s5"] = np.array([b"ab", b"cdefg", b""], dtype="S5")
    st = np.dtype([("i", "<i4"), ("f", ">f8"), ("s", "S3"), ("b", "?"), ("c", "<c16"), ("arr", "<i2", (2, 3)),
                   ("sub", [("x", "<f4"), ("y", "u1")])])
    rec = np.zeros(4, dtype=st)
    rec["i"] = [1, -2, 3, 4]
    rec["f"] = [0.5, 1.5, -2.5, 1e300]
    rec["s"] = [b"a", b"bc", b"def", b""]
    rec["b"] = [True, False, True, True]
    rec["c"] = [1j, 2, 3 - 4j, 0]
    rec["arr"] = np.arange(24).reshape(4, 2, 3)
    rec["sub"]["x"] = [0.25, 1, 2, 3]
    rec["sub"]["y"] = [9, 8, 7, 6]
    out["struct"] = rec
    al = np.zeros((2, 3), dtype=np.dtype([("a", "i1"), ("b", "<f8"), ("c", "u2")], align=True))
    al["a"] = [[1, 2, 3], [4, 5, 6]]
    al["b"] = [[0.5, 1, 2], [3, 4, 5]]
    al["c"] = 7
    out["aligned"] = al
    out["struct0d"] = rec[1:2].reshape(())
    out["fortran"] = np.asfortranarray(rng.standard_normal((3, 4, 5)))
    out["fortran_st"] = np.asfortranarray(np.zeros((2, 3), dtype=[("p", "<i2"), ("q", "S2")]))
    return out


# unicode arrays: as h5py's variable-length UTF-8 strings (issue 57)
UNICODE = {
    "uni": np.array(["ab", "c\u00e9\u2713", "", "x\U0001F600"], dtype="<U6"),
    "uni_be": np.array([["a", "bb"], ["ccc", ""]], dtype=">U3"),
    "uni_f": np.asfortranarray(np.array([["a", "bb", "c"], ["d", "", "f"]])),
    "uni_0d": np.array("zero-d"),
    "uni_empty": np.array([], dtype="U2"),
    "uni_many": np.array(["s%d" % i for i in range(70000)]),   # two heap collections at least
}


def save_through(mnt, name, a, version=None):
    p = os.path.join(mnt, name + ".npy")
    if version is None:
        np.save(p, a)
    else:
        with open(p, "wb") as fh:
            np.lib.format.write_array(fh, np.asanyarray(a), version=version)


expect_err = T.expect_err


def blob(n):
    return bytes((i * 7 + i // 251) & 0xFF for i in range(n))


def check_same(f, name, a, tag):
    if name not in f:
        T.fail("%s: no dataset %s" % (tag, name))
        return
    d = f[name]
    v = d[()]
    if d.dtype != a.dtype or d.shape != np.shape(a) or np.asarray(v).tobytes() != np.asarray(a).tobytes():
        T.fail("%s: %s is %s %s, want %s %s" % (tag, name, d.dtype, d.shape, a.dtype, np.shape(a)))


def run(work, libver):
    path = os.path.join(work, libver + ".h5")
    with h5py.File(path, "w", libver=libver) as f:
        f.create_group("g")
        f["keep"] = np.arange(3)
        # 7 arrays a group: a compact group holds 8 links before libhdf5
        # goes dense, which h5fs does not write yet
        for i in range((len(arrays()) + 6) // 7):
            f.create_group("m%d" % i)
    A = arrays()
    where = {name: "m%d" % (i // 7) for i, name in enumerate(A)}
    mnt = os.path.join(work, "mnt")
    with T.Mount(path, mnt) as m, m.watchdog(240):
        for name, a in A.items():
            save_through(mnt + "/" + where[name], name, a)
        save_through(mnt + "/g", "two_d", A["a_lei4"])
        save_through(mnt, "v2", A["a_lef8"], (2, 0))
        save_through(mnt, "v3", A["a_beu8"], (3, 0))
        for name, a in UNICODE.items():
            save_through(mnt + "/g", name, a)
        left = [x for g in ["."] + sorted(set(where.values())) for x in os.listdir(mnt + "/" + g)
                if x.endswith(".npy")]
        if left:
            T.fail("%s: placeholders left: %r" % (libver, left))
        big = mnt + "/" + where["large"] + "/large"
        if os.path.getsize(big) != A["large"].nbytes:
            T.fail("%s: %s shows %d bytes" % (libver, big, os.path.getsize(big)))
        for n in CP_SIZES:
            src = os.path.join(work, "blob%d.bin" % n)
            with open(src, "wb") as fh:
                fh.write(blob(n))
            shutil.copy(src, mnt + "/g/")
            got = open(mnt + "/g/blob%d.bin" % n, "rb").read()
            if got != blob(n):
                T.fail("%s: cp of %d bytes reads back %d bytes, %s" % (libver, n, len(got),
                                                                      "equal" if got == blob(n) else "different"))
        with open(mnt + "/g/blob1.bin", "ab") as fh:
            fh.write(b"more")
        # refusals
        # NPY streams of what h5py cannot store are refused with a log
        # line, never bytes named NAME.npy (issue 57); a stream that is no
        # NPY is its bytes, as any other file (issue 47)
        for bad, a in (("obj", np.array([1, "a"], dtype=object)), ("when", np.array(["2020-01-01"], dtype="M8[D]"))):
            expect_err("np.save of %s" % a.dtype, lambda: np.save(mnt + "/%s.npy" % bad, a), errno.EOPNOTSUPP)
        with open(mnt + "/notnpy.npy", "wb") as fh:
            fh.write(b"plain bytes")
        if open(mnt + "/notnpy.npy", "rb").read() != b"plain bytes":
            T.fail("%s: a file that is no NPY does not read back" % libver)
        b = io.BytesIO()
        np.save(b, np.arange(100))

        def cut():
            with open(mnt + "/cut.npy", "wb") as fh:
                fh.write(b.getvalue()[:300])
        expect_err("a stream cut short", cut, errno.EINVAL)
        expect_err("O_EXCL on an existing name", lambda: os.open(mnt + "/keep", os.O_WRONLY | os.O_CREAT | os.O_EXCL),
                   errno.EEXIST)
        # np.save's streams are a kind of the commit layer (issue 71 item
        # 6): a stream whose every byte is in while its descriptor stays
        # open is made without its close, by any sync at once (here the
        # fsync of another descriptor) and by the kind's timer else
        # (waited for, bounded); its close answers 0 after
        # (written with write(2) alone: np.save to a file object closes a
        # dup of its descriptor, whose FLUSH makes the dataset already)
        held = {"held_sync": A["a_lef8"], "held_timer": A["a_lei4"]}
        fds = {}
        for name, a in held.items():
            b = io.BytesIO()
            np.save(b, a)
            fds[name] = os.open(mnt + "/" + name + ".npy", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            for at in range(0, len(b.getvalue()), 1000):
                os.write(fds[name], b.getvalue()[at:at + 1000])
            if name == "held_sync":
                fd = os.open(mnt + "/keep", os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
                if "held_sync" not in os.listdir(mnt):
                    T.fail("%s: a complete np.save stream not made by an fsync of another file" % libver)
            elif not T.wait_until(lambda: "held_timer" in os.listdir(mnt), 30):
                T.fail("%s: a complete np.save stream with its descriptor open not made in 30 s" % libver)
        for fd in fds.values():
            os.close(fd)
        if not m.alive():
            T.fail("daemon died: %s" % m.output()[-2000:])
        for what in ("cut.npy", "obj.npy: descr '|O'", "when.npy: descr '<M8[D]'"):
            if what not in m.output():
                T.fail("%s: no log line names %s" % (libver, what))
    with h5py.File(path, "r") as f:
        for name, a in A.items():
            check_same(f, where[name] + "/" + name, a, libver)
        check_same(f, "g/two_d", A["a_lei4"], libver)
        for name, a in UNICODE.items():
            # h5py's string_dtype (anndata's string arrays), UTF-8
            d = f["g/" + name] if "g/" + name in f else None
            if d is None or h5py.check_string_dtype(d.dtype) != h5py.check_string_dtype(h5py.string_dtype()) or d.shape != a.shape or \
                    not np.array_equal(d.asstr()[()], a):
                T.fail("%s: g/%s is %r, not h5py's strings of %r" % (libver, name, d and d.dtype, a))
        check_same(f, "v2", A["a_lef8"], libver)
        check_same(f, "v3", A["a_beu8"], libver)
        check_same(f, "held_sync", A["a_lef8"], libver)
        check_same(f, "held_timer", A["a_lei4"], libver)
        for n in CP_SIZES:
            d = f["g/blob%d.bin" % n]
            want = blob(n) + (b"more" if n == 1 else b"")
            if d.dtype != np.uint8 or d.maxshape != (None,) or d[()].tobytes() != want:
                T.fail("%s: g/blob%d.bin: %s %s %s" % (libver, n, d.dtype, d.maxshape, d.shape))
        made = sorted(f)
        if "notnpy.npy" not in f or f["notnpy.npy"][()].tobytes() != b"plain bytes":
            T.fail("%s: notnpy.npy is not the file's bytes" % libver)
        for bad in ("cut", "cut.npy", "obj", "obj.npy", "when", "when.npy"):
            if bad in f:
                T.fail("%s: a refused stream left %s" % (libver, bad))
    r = subprocess.run(["h5dump", "-H", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        T.fail("%s: h5dump: %s" % (libver, r.stderr.decode()[-300:]))
    # the same datasets written by h5py: what h5wasm cannot show alike
    # there (float16, complex, scalars) is no fault of h5fs's
    ref = os.path.join(work, libver + "-h5py.h5")
    with h5py.File(ref, "w", libver=libver) as f:
        for name, a in A.items():
            f[where[name] + "/" + name] = a
        f["g/two_d"] = A["a_lei4"]
        f["v2"] = A["a_lef8"]
        f["v3"] = A["a_beu8"]
    known = set(h514.compare(ref))
    bad = [x for x in h514.compare(path) if x not in known]
    if bad:
        T.fail("%s: libhdf5 1.14 reads otherwise than 1.10:\n  %s" % (libver, "\n  ".join(bad[:20])))
    with h5py.File(path, "r+") as f:
        f[where["scalar"] + "/scalar"][()] = 7.0
        f["later"] = np.arange(5)
    with T.Mount(path, mnt, ["-o", "ro"]):
        if sorted(os.listdir(mnt)) != sorted(made + ["later"]):
            T.fail("%s: the second mount lists otherwise than h5py" % libver)
    print("%s: %d np.save streams and %d copies made datasets as h5py reads them" % (libver, len(A) + 3,
                                                                                  len(CP_SIZES)))


def run_compressed(work, libver):
    """-o compress=gzip:6: np.save makes what h5py's create_dataset(...,
    compression="gzip", compression_opts=6) makes (chunks as h5py guesses,
    the deflate filter at that level, maxshape the shape), cp a growable
    byte dataset deflated too; a scalar and an empty array stay contiguous
    (h5py will not compress those). Rows of chunks of a large array come
    in many pieces; edge chunks on every axis."""
    path = os.path.join(work, libver + "-gz.h5")
    rng = np.random.default_rng(6)
    A = {k: v for k, v in arrays().items() if k != "large"}
    A["multi"] = np.round(rng.standard_normal((3001, 257)), 2).astype("<f8")   # many rows of chunks
    A["edges"] = rng.integers(0, 9, (7, 131, 67)).astype(">i2")
    A["long"] = np.arange(1 << 20, dtype="<u4") // 3
    names = sorted(A)
    where = {name: "m%d" % (i // 7) for i, name in enumerate(names)}
    with h5py.File(path, "w", libver=libver) as f:
        f.create_group("g")
        for grp in set(where.values()):
            f.create_group(grp)
    mnt = os.path.join(work, "mnt")
    with T.Mount(path, mnt, ["-o", "compress=gzip:6"]) as m, m.watchdog(240):
        for name in names:
            save_through(mnt + "/" + where[name], name, A[name])
        src = os.path.join(work, "gzblob.bin")
        with open(src, "wb") as fh:
            fh.write(blob(300001))
        shutil.copy(src, mnt + "/g/")
        for name in ("multi", "edges"):
            got = open(os.path.join(mnt, where[name], name), "rb").read()
            if got != A[name].tobytes():
                T.fail("%s gz: %s reads back otherwise through the mount" % (libver, name))
        if not m.alive():
            T.fail("daemon died: %s" % m.output()[-2000:])
    ref = os.path.join(work, libver + "-gz-h5py.h5")
    with h5py.File(ref, "w", libver=libver) as f:
        for name in names:
            a = A[name]
            kw = {"compression": "gzip", "compression_opts": 6} if np.ndim(a) and np.size(a) else {}
            f.create_dataset(where[name] + "/" + name, data=a, **kw)
    with h5py.File(path, "r") as f, h5py.File(ref, "r") as r:
        for name in names:
            check_same(f, where[name] + "/" + name, A[name], libver + " gz")
            d, e = f[where[name] + "/" + name], r[where[name] + "/" + name]
            got = (d.chunks, d.compression, d.compression_opts, d.maxshape)
            want = (e.chunks, e.compression, e.compression_opts, e.maxshape)
            if got != want:
                T.fail("%s gz: %s is %r, h5py makes %r" % (libver, name, got, want))
        b = f["g/gzblob.bin"]
        if b[()].tobytes() != blob(300001) or b.compression != "gzip" or b.compression_opts != 6 or \
                b.maxshape != (None,):
            T.fail("%s gz: the copy is %s %s %s" % (libver, b.compression, b.compression_opts, b.maxshape))
        if f[where["multi"] + "/multi"].id.get_storage_size() >= A["multi"].nbytes // 2:
            T.fail("%s gz: multi is not compressed" % libver)
    r = subprocess.run(["h5dump", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        T.fail("%s gz: h5dump: %s" % (libver, r.stderr.decode()[-300:]))
    known = set(h514.compare(ref))
    bad = [x for x in h514.compare(path) if x not in known]
    if bad:
        T.fail("%s gz: libhdf5 1.14 reads otherwise than 1.10:\n  %s" % (libver, "\n  ".join(bad[:20])))
    # bytes written into a deflated chunk of it afterwards (dd conv=notrunc)
    with T.Mount(path, mnt) as m, m.watchdog(120):
        p = os.path.join(mnt, where["edges"], "edges")
        fd = os.open(p, os.O_WRONLY)
        try:
            os.pwrite(fd, b"\x7f" * 1001, 12345)
        finally:
            os.close(fd)
    want = bytearray(A["edges"].tobytes())
    want[12345:12345 + 1001] = b"\x7f" * 1001
    with h5py.File(path, "r") as f:
        if f[where["edges"] + "/edges"][()].tobytes() != bytes(want):
            T.fail("%s gz: a write into the deflated dataset reads otherwise in h5py" % libver)
    print("%s: -o compress=gzip:6 made %d datasets as h5py makes them" % (libver, len(names) + 1))


def refused_compress(work):
    path = os.path.join(work, "refused.h5")
    with h5py.File(path, "w") as f:
        f.create_group("g")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    for bad in ("snappy", "gzip:10", "gzip:", "gzip4", "zstd:23", "lzf:1"):
        r = subprocess.run([T.H5FS, "-o", "compress=" + bad, path, mnt], capture_output=True, timeout=30)
        if r.returncode == 0:
            subprocess.run(["fusermount3", "-u", mnt], timeout=30)
            T.fail("-o compress=%s was taken" % bad)
        elif b"compress=" not in r.stderr:
            T.fail("-o compress=%s: no message naming it: %r" % (bad, r.stderr[-300:]))


def main():
    h514.require()
    work = T.workdir("newdsets")
    for libver in ("earliest", "latest"):
        run(work, libver)
        run_compressed(work, libver)
    refused_compress(work)
    shutil.rmtree(work, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
