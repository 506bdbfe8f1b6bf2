#!/usr/bin/python3
"""Datasets of variable-length types read as text (doc/h5fs.1, MAPPING).

Mounts the fixtures of make_vlen_fixtures.py and checks through the kernel:
  * a dataset of variable-length strings (ASCII and UTF-8, empty and null
    strings, strings containing newlines, 1-D/2-D/scalar/empty, 100,000
    elements contiguous and chunked+deflate, partly written chunked) reads
    as its strings' bytes, each followed by "\\n", with st_size the exact
    length of that text: whole files through `cat`, and random pread
    windows;
  * other variable-length types (sequences of integers and floats,
    compounds and arrays holding variable-length members) read as one
    value per line in the text rules of attributes;
  * such datasets show user.h5.dtype "|O" and user.h5.text ("strings" or
    "values"); others have no user.h5.text and keep their raw bytes;
  * files written by PyTables (Table, EArray, Array, VLArrays, attributes
    of PyTables' own types, pickled attributes) and netCDF4 (dimensions,
    unlimited dimensions, _FillValue, scale_factor, dimension scales, a
    string variable, groups, global attributes): every dataset's bytes and
    every attribute's value equal what h5py reads, in the documented text
    encodings (the attribute rules are test_xattr.py's);
  * concurrent readers of one dataset get the same bytes;
  * every dataset of a variable-length type in the HDF5 test corpus
    ($H5FS_CORPUS, as test_corpus.py) reads as the text of h5py's values.
The expected text is built from h5py's values only.
"""
import errno
import os
import random
import subprocess
import sys
import threading
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import make_vlen_fixtures  # noqa: E402
import test_xattr as X  # noqa: E402  (enc, expected_text, xattr_name, getxattr_sized)

failures = 0


# ---- the expected text ----------------------------------------------------------

def is_vlen_string(dt):
    s = h5py.check_string_dtype(dt)
    return s is not None and s.length is None and dt.subdtype is None and dt.names is None


def enc(v, dt, f, nested):
    """test_xattr.enc, with array types of objects (variable-length
    strings) walked by dimension here: iterating an object array yields the
    objects themselves, not 0-d arrays as enc expects."""
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        a = np.asarray(v).reshape(shape)

        def rec(x, depth):
            if depth == len(shape):
                return enc(x, base, f, True)
            return b"[" + b", ".join(rec(y, depth + 1) for y in x) + b"]"
        return rec(a, 0)
    if dt.names:
        return b"{" + b", ".join(n.encode() + b": " + enc(v[n], dt.fields[n][0], f, True)
                                 for n in dt.names) + b"}"
    return X.enc(v, dt, f, nested)


def attr_text(f, obj, name):
    """The expected xattr value of an attribute: test_xattr's rules, plus
    bit fields (h5py reads them as unsigned integers; the text is "0x" and
    the number's bytes, most significant first)."""
    aid = obj.attrs.get_id(name)
    if aid.get_type().get_class() == h5py.h5t.BITFIELD and aid.shape is not None:
        a = np.asarray(obj.attrs[name]).reshape(-1)
        be = a.astype(a.dtype.newbyteorder(">"))
        return b", ".join(b"0x" + be[i:i + 1].tobytes().hex().encode() for i in range(len(be)))
    return X.expected_text(f, obj, name)


def expected_text(f, ds):
    """The text a dataset of a variable-length type reads as: one line per
    element in C order; strings verbatim, other types in the attribute text
    rules (test_xattr.enc)."""
    if ds.shape is None or ds.size == 0:
        return b""
    dt = ds.dtype
    if ds.shape == ():
        flat = [ds[()]]
    else:
        a = ds[()]
        flat = list(a.reshape((-1,) + dt.subdtype[1])) if dt.subdtype is not None else list(a.reshape(-1))
    if is_vlen_string(dt):
        return b"".join((v if isinstance(v, bytes) else v.encode()) + b"\n" for v in flat)
    return b"".join(enc(v, dt, f, False) + b"\n" for v in flat)


def expected_tree(path):
    """h5fs_testlib's tree of what h5py sees, with the text of every
    variable-length dataset filled in as its expected contents."""
    tree, root = T.h5py_tree(path)
    texts = {}
    with h5py.File(path, "r") as f:
        for p, e in tree.items():
            if e.kind == "file" and e.why == "variable-length type":
                e.data = expected_text(f, f[p])
                e.size = len(e.data)
                e.why = None
                texts[p] = e.data
    return tree, root, texts


# ---- checks ------------------------------------------------------------------------

def check_tree(expected, root, texts, mnt, rep, windows):
    """Names, sizes, modes, every byte and random windows of every dataset."""
    if not texts:
        rep.bad("no variable-length dataset found")
    T.compare(expected, root, mnt, rep, windows=windows, seed=11)


def check_cat(mnt, texts, rep):
    for p, want in sorted(texts.items()):
        r = subprocess.run(["cat", mnt + p], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        if r.returncode != 0:
            rep.bad("cat %s: status %d: %s" % (p, r.returncode, r.stderr.decode(errors="replace").strip()))
        elif r.stdout != want:
            rep.bad("cat %s: %d bytes, expected %d, first difference at %d" % (
                p, len(r.stdout), len(want), T.first_diff(r.stdout, want)))
        else:
            st = os.stat(mnt + p)
            if st.st_size != len(want):
                rep.bad("%s: st_size %d, text is %d bytes" % (p, st.st_size, len(want)))
            rep.compared += 1


def check_windows(mnt, p, want, rep, n, seed, maxlen=300000):
    """Random pread windows (any offset and length, past the end too) and a
    sequential read in odd-sized pieces."""
    rng = random.Random(seed)
    fd = os.open(mnt + p, os.O_RDONLY)
    try:
        for _ in range(n):
            off = rng.randrange(0, len(want) + 64)
            ln = rng.choice((1, 2, 7, 100, 4096, 65536, rng.randrange(1, maxlen)))
            got = os.pread(fd, ln, off)
            if got != want[off:off + ln]:
                rep.bad("%s: pread(%d, %d) differs at byte %d" % (
                    p, ln, off, off + T.first_diff(got, want[off:off + ln])))
                return
        got = bytearray()
        while True:
            b = os.pread(fd, 4099, len(got))
            if not b:
                break
            got += b
        if bytes(got) != want:
            rep.bad("%s: read in 4099-byte pieces differs at %d" % (p, T.first_diff(bytes(got), want)))
    finally:
        os.close(fd)


def check_concurrent(mnt, p, want, rep, nthreads=8, per=60):
    errs = []

    def worker(k):
        rng = random.Random(1000 + k)
        try:
            fd = os.open(mnt + p, os.O_RDONLY)
            try:
                for _ in range(per):
                    off = rng.randrange(0, len(want))
                    ln = rng.randrange(1, 200000)
                    if os.pread(fd, ln, off) != want[off:off + ln]:
                        errs.append("thread %d: pread(%d, %d) differs" % (k, ln, off))
                        return
            finally:
                os.close(fd)
        except OSError as e:
            errs.append("thread %d: %s" % (k, e))

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(300)
    for e in errs[:5]:
        rep.bad("%s concurrent: %s" % (p, e))


def check_reserved(path, mnt, rep):
    """user.h5.dtype / user.h5.text of every dataset."""
    with h5py.File(path, "r") as f:
        dsets = []
        f.visititems(lambda n, o: dsets.append("/" + n) if isinstance(o, h5py.Dataset) else None)
        for p in sorted(set(dsets)):
            ds = f[p]
            mp = mnt + p
            try:
                listed = os.listxattr(mp)
                dtype = os.getxattr(mp, "user.h5.dtype").decode()
                shape = os.getxattr(mp, "user.h5.shape").decode()
            except OSError as e:
                rep.bad("%s: reserved xattrs: %s" % (p, e))
                continue
            vlen = T._has_vlen(ds.id.get_type())
            want_shape = "null" if ds.shape is None else X.dims(ds.shape)
            if shape != want_shape:
                rep.bad("%s: user.h5.shape %r, h5py %r" % (p, shape, want_shape))
            if not vlen:
                if "user.h5.text" in listed:
                    rep.bad("%s: user.h5.text on a fixed-size type (%s)" % (p, ds.dtype))
                if dtype == "|O":
                    rep.bad("%s: user.h5.dtype |O for %s" % (p, ds.dtype))
                continue
            want_text = "strings" if is_vlen_string(ds.dtype) else "values"
            try:
                text = os.getxattr(mp, "user.h5.text").decode()
            except OSError as e:
                rep.bad("%s: user.h5.text: %s" % (p, e))
                continue
            if dtype != "|O" or text != want_text:
                rep.bad("%s: user.h5.dtype %r text %r, expected '|O' %r" % (p, dtype, text, want_text))
            else:
                rep.compared += 1


def check_attrs(path, mnt, rep):
    """Every attribute of every object: the list (in h5py's order) and each
    value in the text rules, compared with test_xattr's re-implementation."""
    with h5py.File(path, "r") as f:
        objs = ["/"]
        f.visit(lambda n: objs.append("/" + n))
        for op in objs:
            obj = f[op]
            mp = mnt + (op if op != "/" else "")
            names = list(obj.attrs.keys())
            try:
                listed = os.listxattr(mp)
            except OSError as e:
                rep.bad("%s: listxattr: %s" % (op, e))
                continue
            attrs = [x for x in listed if not (x.startswith("user.h5.") and not x.startswith("user.h5.attr."))]
            want = [X.xattr_name(n) for n in names]
            if attrs != want:
                rep.bad("%s: attributes listed %s, h5py %s" % (op, attrs, want))
            for n in names:
                try:
                    exp = attr_text(f, obj, n)
                except Exception as e:  # h5py cannot read it, or no rule in Python
                    rep.notes.append("%s %s: not compared (%s: %s)" % (op, n, type(e).__name__, e))
                    continue
                try:
                    got = X.getxattr_sized(mp, X.xattr_name(n))
                except (OSError, AssertionError) as e:
                    rep.bad("%s %s: %s" % (op, n, e))
                    continue
                if got != exp:
                    rep.bad("%s %s: %r, expected %r" % (op, n, got[:200], exp[:200]))
                else:
                    rep.compared += 1


def check_file(fx, name, rep, windows=400, deep=()):
    path = os.path.join(fx, name)
    mnt = os.path.join(fx, "mnt")
    expected, root, texts = expected_tree(path)
    # read-only: h5py reads the file meanwhile (a writable mount locks it)
    with T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(600):
        check_tree(expected, root, texts, mnt, rep, windows)
        check_cat(mnt, texts, rep)
        for i, p in enumerate(deep):
            if p not in texts:
                rep.bad("%s: missing from the expected texts" % p)
                continue
            check_windows(mnt, p, texts[p], rep, 300, seed=i + 1)
            check_concurrent(mnt, p, texts[p], rep)
        check_reserved(path, mnt, rep)
        check_attrs(path, mnt, rep)
        if not m.alive():
            rep.bad("daemon died: %s" % m.output()[-2000:])
    if rep.chunked_fail:
        # chunked reading is finished: a chunked mismatch here is a failure
        rep.fail.extend(rep.chunked_fail)
        rep.chunked_fail = []


def check_h5py_specifics(fx, rep):
    """Spot checks of the rules on the h5py fixture, independent of enc()."""
    path = os.path.join(fx, "vlen.h5")
    mnt = os.path.join(fx, "mnt")
    want = {
        "/ascii": b"one\n\nthree\nfour\n4\n",
        "/scalar": b"just one value\n",
        "/scalar_empty": b"\n",
        "/zero": b"",
        "/never_written": b"\n" * 9,
        "/vlen_int": b"[-2, -1, 0]\n[]\n[-2, -1, 0, 1, 2]\n[-2]\n",
        "/compound": (b'{id: 1, name: "x", w: 0.5}\n{id: 2, name: "y\\"z", w: -1.0}\n'
                      b'{id: 3, name: "", w: 3.25}\n{id: 4, name: "multi\\nline", w: 0.0}\n'),
        "/compound_seq": b"{k: 1, seq: [1, 2, 3]}\n{k: 2, seq: []}\n{k: 3, seq: [-7]}\n",
        "/array_of_strings": b'["a", "b"]\n["", "c c"]\n["d", "e\\nf"]\n',
        "/compound_array": b'{n: 1, pair: ["x", "y"]}\n{n: 2, pair: ["", "z"]}\n',
        "/fixed": b"abc\0de\0\0\0\0\0\0",
    }
    with T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(120):
        for p, w in want.items():
            try:
                with open(mnt + p, "rb") as fh:
                    got = fh.read()
            except OSError as e:
                rep.bad("%s: %s" % (p, e))
                continue
            if got != w:
                rep.bad("%s: %r, expected %r" % (p, got[:300], w[:300]))
            else:
                rep.compared += 1
        try:
            os.getxattr(mnt + "/fixed", "user.h5.text")
            rep.bad("/fixed: user.h5.text on fixed-length strings")
        except OSError as e:
            if e.errno != errno.ENODATA:
                rep.bad("/fixed: user.h5.text: %s, expected ENODATA" % e)


CORPUS = os.environ.get("H5FS_CORPUS") or os.path.normpath(
    os.path.join(T.SRCDIR, "..", "shared", "corpus", "hdf5-testfiles"))


def check_corpus(fx, rep):
    if not os.path.isdir(CORPUS):
        rep.notes.append("corpus not found at %s" % CORPUS)
        return
    mnt = os.path.join(fx, "mnt")
    for d, dirs, files in os.walk(CORPUS):
        dirs.sort()
        for n in sorted(files):
            path = os.path.join(d, n)
            rel = os.path.relpath(path, CORPUS)
            try:
                f = h5py.File(path, "r")
            except Exception:
                continue        # not HDF5, or libhdf5 refuses it: test_corpus.py's business
            want = {}
            try:
                names = []
                f.visititems(lambda k, o: names.append("/" + k) if isinstance(o, h5py.Dataset) else None)
                for k in names:
                    try:
                        if T._has_vlen(f[k].id.get_type()):
                            want[k] = expected_text(f, f[k])
                    except Exception as e:
                        rep.notes.append("%s %s: not compared (h5py: %s)" % (rel, k, e))
            except Exception as e:
                rep.notes.append("%s: h5py cannot walk it: %s" % (rel, e))
            finally:
                f.close()
            if not want:
                continue
            with T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(120):
                for k, w in sorted(want.items()):
                    try:
                        with open(mnt + k, "rb") as fh:
                            got = fh.read()
                        size = os.stat(mnt + k).st_size
                    except OSError as e:
                        rep.bad("%s %s: %s" % (rel, k, e))
                        continue
                    if got != w or size != len(w):
                        rep.bad("%s %s: %d bytes (st_size %d), expected %d, first difference at %d" % (
                            rel, k, len(got), size, len(w), T.first_diff(got, w)))
                    else:
                        rep.compared += 1
                if not m.alive():
                    rep.bad("%s: daemon died: %s" % (rel, m.output()[-2000:]))


def run(label, fn, *args, **kw):
    global failures
    rep = T.Report(label)
    try:
        fn(*args, rep, **kw)
    except T.MountError as e:
        rep.bad("mount failed: %s" % e)
    except Exception as e:
        import traceback
        rep.bad("%s: %s" % (type(e).__name__, e))
        traceback.print_exc()
    rep.show()
    if rep.failed():
        failures += 1


def main():
    warnings.simplefilter("ignore")
    fx = T.workdir("vlen")
    made = make_vlen_fixtures.make(fx)
    for name, why in made:
        if why:
            print("SKIP %s: %s" % (name, why))
            continue
        deep = ("/big", "/big_gzip", "/partial", "/vlen_ragged", "/utf8") if name == "vlen.h5" else ()
        run(name, check_file, fx, name, windows=2000, deep=deep)
    run("vlen.h5 spot checks", check_h5py_specifics, fx)
    run("corpus variable-length datasets", check_corpus, fx)
    if failures == 0:
        import shutil
        shutil.rmtree(fx, ignore_errors=True)
    else:
        print("fixtures kept in %s" % fx)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
