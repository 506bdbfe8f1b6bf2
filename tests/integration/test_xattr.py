#!/usr/bin/python3
"""HDF5 attributes as extended attributes.

Mounts h5py-written files and checks, through the kernel:
  * every attribute of every object (root, groups, datasets, named
    datatypes; compact and dense storage; every type class, both byte
    orders) is listed as user.NAME (user.h5.attr.NAME for names starting
    with "h5.") and its value equals a Python re-implementation of the text
    rules of doc/h5fs.1 (ATTRIBUTES) applied to what h5py reads;
  * size queries give the exact length, a too small buffer gives ERANGE,
    unknown names ENODATA, setxattr/removexattr fail while h5py holds FILE
    (EBUSY: its lock; test_setfattr.py writes attributes);
  * -o xattr=raw gives the stored bytes;
  * for every dataset of the mount fixtures (make_fixtures.py), a NumPy
    array built only from the mounted file and its user.h5.dtype /
    user.h5.descr / user.h5.shape equals what h5py reads, and
    user.h5.maxshape / chunks / filters / fill agree with h5py;
  * the kernel's own limits: lists over 64 KiB and values over 64 KiB fail
    with E2BIG (every name still readable one by one).
"""
import ctypes
import errno
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import make_fixtures  # noqa: E402

failures = 0


# ---- the text rules, in Python ------------------------------------------------

def _quote(b):
    out = bytearray(b'"')
    for c in b:
        if c in (0x22, 0x5c):
            out += b"\\" + bytes([c])
        elif c == 0x0a:
            out += b"\\n"
        elif c == 0x09:
            out += b"\\t"
        elif c == 0x0d:
            out += b"\\r"
        elif c < 0x20 or c == 0x7f:
            out += b"\\x%02x" % c
        else:
            out.append(c)
    return bytes(out + b'"')


def _float(v, dt):
    if dt.itemsize == 8:
        return repr(float(v)).encode()
    if dt.itemsize == 4:
        return str(np.float32(v)).encode()
    if dt.itemsize == 2:
        return str(np.float16(v)).encode()
    return repr(float(v)).encode()


def enc(v, dt, f, nested):
    """Text of one element v of numpy dtype dt (as h5py reads it)."""
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        a = np.asarray(v).reshape(shape)

        def rec(x):
            if x.ndim == 0:
                return enc(x[()], base, f, True)
            return b"[" + b", ".join(rec(y) for y in x) + b"]"
        return rec(a)
    if dt.names:
        return b"{" + b", ".join(n.encode() + b": " + enc(v[n], dt.fields[n][0], f, True)
                                 for n in dt.names) + b"}"
    sinfo = h5py.check_string_dtype(dt)
    if sinfo is not None and sinfo.length is None:
        b = v if isinstance(v, bytes) else v.encode()
        b = b.split(b"\0")[0]
        return _quote(b) if nested else b
    vl = h5py.check_vlen_dtype(dt)
    if vl is not None:
        return b"[" + b", ".join(enc(x, vl, f, True) for x in v) + b"]"
    if h5py.check_ref_dtype(dt) is not None:
        return b"obj:0x%x" % h5py.h5o.get_info(f[v].id).addr
    enum = h5py.check_enum_dtype(dt)
    if enum is not None:
        names = {val: k for k, val in enum.items()}
        return names.get(int(v), str(int(v))).encode()
    if dt.kind == "b":
        return b"TRUE" if v else b"FALSE"
    if dt.kind in "iu":
        return str(int(v)).encode()
    if dt.kind == "f":
        return _float(v, dt)
    if dt.kind == "S":
        b = bytes(v).split(b"\0")[0]
        return _quote(b) if nested else b
    if dt.kind == "V":
        return b"0x" + bytes(v).hex().encode()
    raise ValueError("no rule for %s" % dt)


def expected_text(f, obj, name):
    v = obj.attrs[name]
    dt = obj.attrs.get_id(name).dtype
    if isinstance(v, h5py.Empty):
        return b""
    a = np.asarray(v)
    if dt.subdtype is not None:     # h5py appends the array type's dims to the shape
        flat = list(a.reshape((-1,) + dt.subdtype[1]))
    else:
        flat = a.reshape(-1) if a.ndim else [a[()]]
    sinfo = h5py.check_string_dtype(dt)
    sep = b"\n" if (sinfo is not None) else b", "
    return sep.join(enc(x, dt, f, False) for x in flat)


def xattr_name(name):
    return ("user.h5.attr." if name.startswith("h5.") else "user.") + name


# ---- fixtures -------------------------------------------------------------------

def make_attr_file(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        def fill(o, tag):
            a = o.attrs
            a["tag"] = tag
            for bo in "<>":
                for k in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"):
                    dt = np.dtype(bo + k)
                    info = np.iinfo(dt)
                    a["%s%s" % (k, "be" if bo == ">" else "le")] = np.array([info.min, info.max, 0, 1], dtype=dt)
                for k in ("f2", "f4", "f8"):
                    a["%s%s" % (k, "be" if bo == ">" else "le")] = np.array(
                        [0.1, -2.5, 1e-5, 1.0, 3.14159, 65504.0, 1e-7, np.inf], dtype=bo + k)
            a["f8_tricky"] = np.array([1e16, 1e15, 1.5e-5, 1 / 3, 5e-324, 1.7976931348623157e308, -0.0,
                                       123456789012345678.0, 0.30000000000000004, np.nan], dtype="<f8")
            a["scalar_f8"] = 2.5
            a["scalar_i"] = np.int64(-7)
            a["s_fixed"] = np.bytes_(b"fixed")
            a["s_fixed_arr"] = np.array([b"a", b"bc", b""], dtype="S5")
            a["s_vlen"] = "caf\u00e9 \"q\""
            a["s_vlen_arr"] = ["x", "yy\nline", ""]
            a["bool"] = np.array([True, False, True])
            a.create("enum", np.array([2, 0, 7], dtype="i2"),
                     dtype=h5py.enum_dtype({"LOW": 0, "MID": 1, "HIGH": 2}, basetype="i2"))
            a["compound"] = np.array([(1, 2.5, b"x\"y"), (-3, 1e100, b"")],
                                     dtype=[("a", ">i4"), ("b", "<f8"), ("c", "S4")])
            a["nested"] = np.array((1, (2, 3.5)), dtype=[("p", "u1"), ("q", [("r", "<i2"), ("s", "<f4")])])
            a.create("arrtype", np.arange(12, dtype="<i4").reshape(2, 2, 3), dtype=np.dtype(("<i4", (2, 3))))
            a["multi2d"] = np.arange(6, dtype="<f4").reshape(2, 3)
            a["opaque"] = np.void(b"\x00\x0a\xff")
            a["empty"] = h5py.Empty("<i4")
            a.create("vlen_i", np.array([np.arange(3, dtype="<i2"), np.arange(0, dtype="<i2")], dtype=object),
                     dtype=h5py.vlen_dtype("<i2"))
            a["ref"] = f["/"].ref
            a["h5.dtype"] = "an attribute, not metadata"
            a["h5.attr.x"] = 1
            a["\u00fcn\u00efc\u00f8de \u65e5\u672c"] = "utf-8 name"
            a["with space/slash"] = 3
        fill(f, "root")
        g = f.create_group("grp")
        fill(g, "group")
        d = f.create_dataset("ds", data=np.arange(10, dtype="<i4"))
        fill(d, "dataset")
        f["named"] = np.dtype([("u", "<u2"), ("v", ">f8")])
        fill(f["named"], "datatype")
        d.attrs.create("typed", np.zeros(2, dtype=f["named"].dtype), dtype=f["named"])
        o = f.create_group("ordered", track_order=True)
        for i in range(15):
            o.attrs["z%02d" % (14 - i)] = i
        many = f.create_group("many")
        for i in range(3000):
            many.attrs["n%04d" % i] = i
        huge = f.create_group("huge")
        for i in range(10000):
            huge.attrs["attr_%05d" % i] = i
        f.create_group("bigval").attrs["v"] = np.arange(6000, dtype="<f8") / 7  # 47 KB stored, ~115 KB as text


def objects(f):
    out = ["/"]
    f.visit(lambda n: out.append("/" + n))
    return out


# ---- checks ---------------------------------------------------------------------

def getxattr_sized(path, name):
    """getxattr(2) with an exact-size buffer, after a size query; ctypes so
    the size query itself and ERANGE can be observed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.getxattr.restype = ctypes.c_ssize_t
    p, n = os.fsencode(path), os.fsencode(name)
    size = libc.getxattr(p, n, None, ctypes.c_size_t(0))
    if size < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    buf = ctypes.create_string_buffer(size + 1)
    got = libc.getxattr(p, n, buf, ctypes.c_size_t(size))
    if got != size:
        raise AssertionError("size query said %d, read returned %d" % (size, got))
    if size > 1:    # (a 0-byte buffer would be a size query)
        r = libc.getxattr(p, n, buf, ctypes.c_size_t(size - 1))
        e = ctypes.get_errno()
        if r != -1 or e != errno.ERANGE:
            raise AssertionError("buffer one byte short: %d/%s, expected ERANGE" % (r, os.strerror(e)))
    return buf.raw[:size]


def check_attr_file(fx, name, rep):
    path = os.path.join(fx, name)
    mnt = os.path.join(fx, "mnt")
    with h5py.File(path, "r") as f, T.Mount(path, mnt) as m, m.watchdog(240):
        for obj_path in objects(f):
            obj = f[obj_path]
            mp = mnt + (obj_path if obj_path != "/" else "")
            names = list(obj.attrs.keys())
            if obj_path == "/huge":
                check_huge(mp, names, rep)
                continue
            if obj_path == "/bigval":
                try:
                    os.getxattr(mp, "user.v")
                    rep.bad("/bigval: a value over 64 KiB was returned")
                except OSError as e:
                    if e.errno != errno.E2BIG:
                        rep.bad("/bigval: %s, expected E2BIG" % e)
                continue
            try:
                listed = os.listxattr(mp)
            except OSError as e:
                rep.bad("%s: listxattr: %s" % (obj_path, e))
                continue
            attrs = [x for x in listed if not (x.startswith("user.h5.") and not x.startswith("user.h5.attr."))]
            want = [xattr_name(n) for n in names]
            if attrs != want:
                rep.bad("%s: listed %s..., h5py order %s..." % (obj_path, attrs[:6], want[:6]))
            is_ds = isinstance(obj, h5py.Dataset)
            if any(x.startswith("user.h5.") and not x.startswith("user.h5.attr.") for x in listed) != is_ds:
                rep.bad("%s: reserved names %s on a %s" % (obj_path, listed, type(obj).__name__))
            for n in names:
                try:
                    got = getxattr_sized(mp, xattr_name(n))
                except (OSError, AssertionError) as e:
                    rep.bad("%s %s: %s" % (obj_path, n, e))
                    continue
                exp = expected_text(f, obj, n)
                if got != exp:
                    rep.bad("%s %s: %r, expected %r" % (obj_path, n, got[:200], exp[:200]))
                else:
                    rep.compared += 1
            for bad_name in ("user.nope", "user.h5.nope", "user.h5.attr.tag", "trusted.tag", "user.h5.dtype"
                             if not is_ds else "user.h5.descr"):
                try:
                    os.getxattr(mp, bad_name)
                    rep.bad("%s: getxattr %s succeeded" % (obj_path, bad_name))
                except OSError as e:
                    if e.errno not in (errno.ENODATA, errno.EOPNOTSUPP):
                        rep.bad("%s: getxattr %s: %s, expected ENODATA" % (obj_path, bad_name, e))
            for what, fn in (("setxattr", lambda: os.setxattr(mp, "user.tag", b"x")),
                             ("removexattr", lambda: os.removexattr(mp, "user.tag"))):
                try:
                    fn()
                    rep.bad("%s: %s succeeded" % (obj_path, what))
                except OSError as e:
                    # h5py holds FILE open (and its lock): a change is refused
                    # with EBUSY (doc/h5fs.1 MODIFYING, WRITING)
                    if e.errno not in (errno.EROFS, errno.EBUSY, errno.EPERM, errno.EACCES):
                        rep.bad("%s: %s: %s" % (obj_path, what, e))
        if not m.alive():
            rep.bad("daemon died: %s" % m.output()[-2000:])


def check_huge(mp, names, rep):
    # 10,000 names need 160 KiB: more than the kernel's XATTR_LIST_MAX (64 KiB)
    try:
        os.listxattr(mp)
        rep.bad("/huge: listxattr over 64 KiB succeeded")
    except OSError as e:
        if e.errno != errno.E2BIG:
            rep.bad("/huge: listxattr: %s, expected E2BIG" % e)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.listxattr.restype = ctypes.c_ssize_t
    size = libc.listxattr(os.fsencode(mp), None, ctypes.c_size_t(0))
    want = sum(len(xattr_name(n)) + 1 for n in names)
    # the daemon answers the full size; kernels clamp it to XATTR_LIST_MAX or refuse
    if size not in (want, 65536) and not (size == -1 and ctypes.get_errno() == errno.E2BIG):
        rep.bad("/huge: list size query %d, expected %d" % (size, want))
    for i in range(0, 10000, 37):
        n = "attr_%05d" % i
        try:
            v = os.getxattr(mp, "user." + n)
            if v != str(i).encode():
                rep.bad("/huge %s: %r" % (n, v))
            else:
                rep.compared += 1
        except OSError as e:
            rep.bad("/huge %s: %s" % (n, e))


def check_raw(fx, name, rep):
    path = os.path.join(fx, name)
    mnt = os.path.join(fx, "mnt")
    with h5py.File(path, "r") as f, T.Mount(path, mnt, opts=("-o", "xattr=raw")) as m, m.watchdog(120):
        g = f["grp"]
        for n in ("i4be", "u8le", "f8be", "f2le", "compound", "s_fixed", "opaque", "multi2d"):
            aid = g.attrs.get_id(n)
            buf = np.empty(aid.shape, dtype=aid.dtype)
            aid.read(buf, mtype=aid.get_type())
            try:
                got = os.getxattr(mnt + "/grp", "user." + n)
            except OSError as e:
                rep.bad("raw %s: %s" % (n, e))
                continue
            if got != buf.tobytes():
                rep.bad("raw %s: %r, stored %r" % (n, got[:64], buf.tobytes()[:64]))
            else:
                rep.compared += 1
        v = os.getxattr(mnt + "/grp", "user.s_vlen_arr")
        if v != b"x\0yy\nline\0":
            rep.bad("raw vlen strings: %r" % v)
        if not m.alive():
            rep.bad("daemon died: %s" % m.output()[-2000:])


def _filters(ds):
    out = []
    plist = ds.id.get_create_plist()
    names = {1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset",
             307: "bzip2", 32000: "lzf", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle", 32015: "zstd"}
    for i in range(plist.get_nfilters()):
        fid = plist.get_filter(i)[0]
        out.append(names.get(fid, str(fid)))
    return ",".join(out)


def dims(t):
    return ",".join("inf" if x is None else str(x) for x in t)


def reference_bytes(f, ds, dt, h5val):
    """h5py's value of ds as bytes laid out in the mount's dtype dt."""
    ref = np.asarray(h5val)
    if h5py.check_ref_dtype(ds.dtype) is not None:
        # object references are stored as the target's object header address
        ref = np.array([h5py.h5o.get_info(f[r].id).addr for r in ref.reshape(-1)],
                       dtype="<u8").reshape(ref.shape)
    if ref.dtype.kind == "c":
        return np.ascontiguousarray(ref.astype("<c%d" % ref.dtype.itemsize)).tobytes()  # {r, i} compound
    try:
        return np.ascontiguousarray(ref.astype(dt.base if dt.subdtype else dt)).tobytes()
    except (TypeError, ValueError):
        return np.ascontiguousarray(ref).tobytes()


def check_datasets(fx, name, rep):
    """Rebuild every dataset from the mount with NumPy and the reserved names."""
    path = os.path.join(fx, name)
    mnt = os.path.join(fx, "mnt")
    with h5py.File(path, "r") as f, T.Mount(path, mnt, cwd=fx) as m, m.watchdog(240):
        dsets = []
        f.visititems(lambda n, o: dsets.append("/" + n) if isinstance(o, h5py.Dataset) else None)
        for p in sorted(set(dsets)):
            ds = f[p]
            mp = mnt + p
            chunked = ds.chunks is not None
            try:
                x = {k: os.getxattr(mp, "user.h5." + k).decode()
                     for k in ("dtype", "shape", "maxshape", "fill", "layout")}
                listed = os.listxattr(mp)
            except OSError as e:
                rep.bad("%s: reserved xattrs: %s" % (p, e))
                continue
            if ds.shape is None:
                if x["shape"] != "null":
                    rep.bad("%s: shape %r for a null dataspace" % (p, x["shape"]))
                continue
            if x["shape"] != dims(ds.shape) or x["maxshape"] != dims(ds.maxshape):
                rep.bad("%s: shape %r maxshape %r, h5py %s %s" % (p, x["shape"], x["maxshape"], ds.shape,
                                                                  ds.maxshape))
            if chunked != ("user.h5.chunks" in listed) or (
                    chunked and os.getxattr(mp, "user.h5.chunks").decode() != dims(ds.chunks)):
                rep.bad("%s: chunks xattr disagrees with %s" % (p, ds.chunks))
            filt = _filters(ds)
            got_filt = os.getxattr(mp, "user.h5.filters").decode() if "user.h5.filters" in listed else ""
            if got_filt != filt:
                rep.bad("%s: filters %r, h5py %r" % (p, got_filt, filt))
            if not x["layout"].startswith(T.layout_name(ds)) and x["layout"] != "external":
                rep.bad("%s: layout %r, h5py %s" % (p, x["layout"], T.layout_name(ds)))
            if x["dtype"] == "|O":
                continue    # variable-length elements: no fixed-size layout to map
            try:
                descr = os.getxattr(mp, "user.h5.descr").decode() if "user.h5.descr" in listed else None
                dt = np.dtype(eval(descr)) if descr else np.dtype(x["dtype"])
            except Exception as e:
                rep.bad("%s: cannot build a dtype from %r / %r: %s" % (p, x["dtype"], descr, e))
                continue
            if dt.itemsize != ds.dtype.itemsize:
                rep.bad("%s: dtype %s itemsize %d, h5py %s %d" % (p, dt, dt.itemsize, ds.dtype, ds.dtype.itemsize))
                continue
            shape = tuple(int(s) for s in x["shape"].split(",")) if x["shape"] else ()
            h5val = ds[()]
            # the fill value in the same rules as attributes
            try:
                fv = np.asarray(ds.fillvalue, dtype=ds.dtype) if ds.fillvalue is not None else None
                if fv is not None and fv.shape == () and dt.subdtype is None:
                    if ds.id.get_type().get_class() == h5py.h5t.BITFIELD:
                        # h5py reads bit fields as unsigned integers; the text is hex
                        want = b"0x" + fv.astype(fv.dtype.newbyteorder(">")).tobytes().hex().encode()
                    else:
                        want = enc(fv[()], ds.dtype, f, False)
                    if x["fill"].encode() != want:
                        rep.bad("%s: fill %r, h5py %r" % (p, x["fill"], want))
            except (TypeError, ValueError):
                pass
            try:
                with open(mp, "rb") as fh:
                    arr = np.fromfile(fh, dtype=dt, count=int(np.prod(shape, dtype=np.int64)))
            except OSError as e:
                rep.bad("%s: read: %s" % (p, e), chunked=chunked)
                continue
            arr = arr.reshape(shape + (dt.shape if dt.subdtype else ()))
            ref_bytes = reference_bytes(f, ds, dt, h5val)
            if arr.tobytes() != ref_bytes:
                rep.bad("%s: array from the mount (%s %s) differs from h5py (%s)" % (p, dt, shape, ds.dtype),
                        chunked=chunked)
            else:
                rep.compared += 1
                if chunked:
                    rep.chunked_ok += 1
        if not m.alive():
            rep.bad("daemon died: %s" % m.output()[-2000:])


def run(label, fn, *args):
    global failures
    rep = T.Report(label)
    try:
        fn(*args, rep)
    except T.MountError as e:
        rep.bad("mount failed: %s" % e)
    except Exception as e:  # a failure to mount/read is a test failure, not a crash
        import traceback
        rep.bad("%s: %s" % (type(e).__name__, e))
        traceback.print_exc()
    rep.show()
    if rep.failed():
        failures += 1


def main():
    warnings.simplefilter("ignore")     # numpy's subarray/complex casting notices
    fx = T.workdir("xattr")
    for libver in ("earliest", "latest"):
        name = "attrs_%s.h5" % libver
        make_attr_file(os.path.join(fx, name), libver)
        run("%s attributes" % name, check_attr_file, fx, name)
    run("attrs_latest.h5 -o xattr=raw", check_raw, fx, "attrs_latest.h5")
    names = make_fixtures.make(fx)
    os.chdir(fx)    # h5py resolves external data files against the working directory
    for name in names:
        run("%s reserved metadata" % name, check_datasets, fx, name)
    if failures == 0:
        import shutil
        shutil.rmtree(fx, ignore_errors=True)
    else:
        print("fixtures kept in %s" % fx)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
