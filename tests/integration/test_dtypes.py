#!/usr/bin/python3
"""Datatypes from other writers (issue 21, items 1-3), through a real mount
of the fixtures of make_dtype_fixtures.py:

  * array datatypes in datatype message version 1 (a dataset of arrays, a
    compound with array members, an array attribute): every byte equals
    h5py's read, user.h5.descr rebuilds h5py's dtype, the attribute's text
    is h5py's values;
  * IEEE binary128 floats of both byte orders: the bytes written, user.h5.dtype
    |V16 (NumPy has no quad type; '<f16' is x87 on x86-64), the attribute
    text the values written and h5dump's (to h5dump's 6 digits); the x87
    long double h5py writes keeps '<f16' where that is the C long double,
    and np.frombuffer of the mounted bytes with it gives h5py's values;
    h5fs-ls names them float128le/be and float128le(x87);
  * 128-bit (and a 100-bit, offset 12) integer attributes, signed and
    unsigned, both byte orders: decimal text equal to the values written
    (Python integers of the bytes h5py reads) and, for values h5dump can
    print (it converts to 64-bit native types and saturates beyond), to
    h5dump's text.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from h5py import h5s  # noqa: E402
import make_dtype_fixtures as G  # noqa: E402

fails = []


def bad(msg):
    fails.append(msg)


def read(mnt, name):
    with open(os.path.join(mnt, name), "rb") as fh:
        return fh.read()


def xattr(path, name):
    return os.getxattr(path, name).decode()


def h5dump_attr(path, name):
    """h5dump's DATA of an attribute of the root group as a list of tokens,
    or None without h5dump."""
    if not shutil.which("h5dump"):
        return None
    out = subprocess.run(["h5dump", "-a", "/" + name, path], capture_output=True, text=True,
                         timeout=60).stdout
    m = re.search(r"DATA \{(.*?)\}", out, re.S)
    if not m:
        return []
    return [tok for ln in m.group(1).splitlines() for tok in re.sub(r"^\s*\(\d+\):", "", ln).replace(",", " ").split()]


def check_arrays(path, mnt):
    with h5py.File(path, "r") as f, T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(60):
        for name in ("arr", "table"):
            ds = f[name]
            want = ds.id.dtype
            try:
                got = read(mnt, name)
            except OSError as e:
                bad("arrays_v1 /%s: %s" % (name, e))
                continue
            if got != ds[()].tobytes():
                bad("arrays_v1 /%s: bytes differ from h5py's" % name)
            descr = np.dtype(eval(xattr(os.path.join(mnt, name), "user.h5.descr")))
            if descr != want:
                bad("arrays_v1 /%s: user.h5.descr gives %s, h5py %s" % (name, descr, want))
        text = xattr(mnt, "user.vec3")
        want = "[" + ", ".join(str(int(v)) for v in f.attrs["vec3"]) + "]"
        if text != want:
            bad("arrays_v1 user.vec3 %r, h5py %r" % (text, want))
        if not m.alive():
            bad("arrays_v1: the daemon died")
    if shutil.which("h5dump"):
        # the other oracle reads the patched file too (values, not just the header)
        r = subprocess.run(["h5dump", "-d", "/arr", path], capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or "H5T_ARRAY { [10] H5T_IEEE_F64LE }" not in r.stdout or "4.125" not in r.stdout:
            bad("arrays_v1: h5dump does not read /arr (status %d): %s" % (r.returncode, r.stderr[-300:]))
    print("checked arrays_v1.h5 (version 1 array types)")


def quad_raw(f, name):
    """The stored bytes of a quad dataset, read by libhdf5 without conversion
    (h5py has no NumPy type for it)."""
    d = f[name].id
    buf = np.empty(d.shape, dtype="V16")
    d.read(h5s.ALL, h5s.ALL, buf, mtype=d.get_type())
    return buf.tobytes()


def check_quad(path, mnt, written):
    ld_is_x87 = np.finfo(np.longdouble).nmant == 63 and np.dtype(np.longdouble).itemsize == 16
    with h5py.File(path, "r") as f, T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(60):
        for name in ("quad_le", "quad_be"):
            p = os.path.join(mnt, name)
            got = read(mnt, name)
            if got != written[name] or got != quad_raw(f, name):
                bad("quad %s: bytes differ from those written" % name)
            if xattr(p, "user.h5.dtype") != "|V16":
                bad("quad %s: user.h5.dtype %r, expected |V16" % (name, xattr(p, "user.h5.dtype")))
            text = xattr(p, "user.q").split(", ")
            if text != G.QUAD_TEXT:
                bad("quad %s: user.q %r, expected %r" % (name, text, G.QUAD_TEXT))
            if shutil.which("h5dump"):
                out = subprocess.run(["h5dump", "-d", "/" + name, path], capture_output=True, text=True,
                                     timeout=60).stdout
                mdata = re.search(r"\(0\): (.*)", out)
                dumped = [float(x) for x in mdata.group(1).split(", ")] if mdata else []
                mine = [float(x) for x in text]
                if len(dumped) != len(mine) or any(
                        float("%.6g" % a) != b for a, b in zip(mine, dumped)):
                    bad("quad %s: h5dump reads %r, the mount %r" % (name, dumped, mine))
        p = os.path.join(mnt, "longdouble")
        dt = xattr(p, "user.h5.dtype")
        if ld_is_x87:
            if dt != "<f16":
                bad("longdouble: user.h5.dtype %r, expected <f16 (x87 on this machine)" % dt)
            elif not np.array_equal(np.frombuffer(read(mnt, "longdouble"), np.dtype(dt)), f["longdouble"][()]):
                bad("longdouble: np.frombuffer(mount, %s) differs from h5py" % dt)
        if not m.alive():
            bad("quad: the daemon died")
    ls = subprocess.run([T.H5FS_LS, path], capture_output=True, text=True, timeout=60).stdout
    for name, want in (("quad_le", "float128le "), ("quad_be", "float128be "), ("longdouble", "float128le(x87) ")):
        line = [ln for ln in ls.splitlines() if ln.startswith("/" + name + " ")]
        if not line or want not in line[0]:
            bad("h5fs-ls %s: %r, expected type %r" % (name, line, want.strip()))
    print("checked quad.h5 (IEEE binary128, x87 long double)")


def check_ints(path, mnt, written):
    with h5py.File(path, "r") as f, T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(60):
        for name, vals in written.items():
            aid = f.attrs.get_id(name)
            t = aid.get_type()
            raw = np.empty(aid.shape, dtype="V%d" % t.get_size())
            aid.read(raw, mtype=t)
            order = "little" if t.get_order() == 0 else "big"
            prec, off, signed = t.get_precision(), t.get_offset(), t.get_sign() == 1
            from_h5py = []
            rb, sz = raw.tobytes(), t.get_size()
            for i in range(0, len(rb), sz):
                u = (int.from_bytes(rb[i:i + sz], order) >> off) & ((1 << prec) - 1)
                from_h5py.append(u - (1 << prec) if signed and u >> (prec - 1) else u)
            if from_h5py != vals:
                bad("%s: h5py's bytes give %r, written %r" % (name, from_h5py, vals))
            text = xattr(mnt, "user." + name)
            want = ", ".join(str(v) for v in vals)
            if text != want:
                bad("%s: user.%s %r, expected %r" % (name, name, text, want))
            dumped = h5dump_attr(path, name)
            if dumped is not None:
                lo, hi = (-(1 << 63), (1 << 63) - 1) if signed else (0, (1 << 64) - 1)
                for k, v in enumerate(vals):
                    if lo <= v <= hi and (k >= len(dumped) or dumped[k] != str(v)):
                        bad("%s[%d]: h5dump %r, the mount %r" % (name, k, dumped[k:k + 1], str(v)))
        if not m.alive():
            bad("ints128: the daemon died")
    print("checked ints128.h5 (%d attributes)" % len(written))


def main():
    wd = T.workdir("dtypes")
    mnt = os.path.join(wd, "mnt")
    written = G.make(wd)
    check_arrays(os.path.join(wd, "arrays_v1.h5"), mnt)
    check_quad(os.path.join(wd, "quad.h5"), mnt, written["quad.h5"])
    check_ints(os.path.join(wd, "ints128.h5"), mnt, written["ints128.h5"])
    for msg in fails:
        print("FAIL: " + msg)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
