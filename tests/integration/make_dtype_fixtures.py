#!/usr/bin/python3
"""Deterministic fixtures of datatypes other software writes and h5py does
not (issue 21, items 1-3), made with h5py (libhdf5) and, where no current
writer produces the layout, patched at the byte level:

  arrays_v1.h5   array datatypes in datatype message version 1 (old
                 PyTables): libhdf5 writes arrays as version 2, whose layout
                 version 1 shares (rank, 3 reserved bytes, dimensions,
                 permutation indices, base type; spec IV.A.2.d, libhdf5's
                 H5O_dtype_decode reads both alike), so the class-and-version
                 byte 0x2a of each array type message is patched to 0x1a in
                 this version-1-object-header file (no checksums). h5py and
                 h5dump read the result.
  quad.h5        IEEE binary128 floats (PyTables' float128 on some
                 platforms) of both byte orders, and the x87 long double
                 h5py writes for numpy.longdouble.
  ints128.h5     128-bit integer attributes, signed and unsigned, both byte
                 orders, and a 100-bit one at bit offset 12.

make(outdir) returns {file: {what the test compares}}; run as a script it
writes them into the directory given.
"""
import os
import struct
import sys

import h5py
import numpy as np
from h5py import h5a, h5d, h5s, h5t

# ---- version 1 arrays ------------------------------------------------------


def _array_type(base, dims):
    return h5t.array_create(base, dims)


def _patch_v1_arrays(path, patterns):
    """Patch each array type message (pattern: its first bytes, version 2)
    to version 1; returns how many were patched."""
    with open(path, "r+b") as fh:
        raw = bytearray(fh.read())
        n = 0
        for pat in patterns:
            i = raw.find(pat)
            while i >= 0:
                raw[i] = 0x1a          # version 1, class 10 (array)
                n += 1
                i = raw.find(pat, i + 1)
        fh.seek(0)
        fh.write(raw)
    return n


def _array_pattern(dims, size):
    """The start of a version 2 array type message: class byte, bit field,
    size, rank, reserved, dimensions, permutation indices."""
    return (b"\x2a\x00\x00\x00" + struct.pack("<I", size) + bytes([len(dims), 0, 0, 0]) +
            b"".join(struct.pack("<I", d) for d in dims) +
            b"".join(struct.pack("<I", i) for i in range(len(dims))))


def arrays_v1(path):
    vec = np.dtype(("<f8", (10,)))
    mat = np.dtype((">i2", (2, 3)))
    row = np.dtype([("id", "<i4"), ("vec", vec), ("mat", mat)])
    x = np.arange(5 * 10, dtype="<f8").reshape(5, 10) / 8 - 2
    table = np.zeros(20, dtype=row)
    table["id"] = np.arange(20) * 3 - 7
    table["vec"] = np.linspace(-1, 1, 200).reshape(20, 10)
    table["mat"] = (np.arange(120) * 37 % 1000 - 500).reshape(20, 2, 3)
    with h5py.File(path, "w", libver="earliest") as f:
        # an array-typed dataset (h5py would fold the array into the shape)
        t = _array_type(h5t.IEEE_F64LE, (10,))
        d = h5d.create(f.id, b"arr", t, h5s.create_simple((5,)))
        d.write(h5s.ALL, h5s.ALL, x, mtype=t)
        f.create_dataset("table", data=table, chunks=(8,), compression="gzip")
        at = _array_type(h5t.STD_I32LE, (3,))
        a = h5a.create(f.id, b"vec3", at, h5s.create(h5s.SCALAR))
        a.write(np.array([7, -8, 9], dtype="<i4"), mtype=at)
    pats = [_array_pattern((10,), 80), _array_pattern((2, 3), 12), _array_pattern((3,), 12)]
    n = _patch_v1_arrays(path, pats)
    if n < 4:       # arr, table's two members, vec3
        raise RuntimeError("arrays_v1: %d array type messages patched, expected at least 4" % n)
    return {"patched": n}


# ---- 128-bit floats --------------------------------------------------------

def quad_bytes(v, order):
    """The IEEE binary128 encoding of the double v (exact: every double is a
    quad)."""
    b = struct.unpack("<Q", struct.pack("<d", v))[0]
    sign, e, m = b >> 63, (b >> 52) & 0x7ff, b & ((1 << 52) - 1)
    if e == 0x7ff:
        qe, qm = 0x7fff, m << 60
    elif e == 0 and m == 0:
        qe, qm = 0, 0
    elif e == 0:                      # subnormal double: normal in quad
        shift = 52 - m.bit_length() + 1
        qe, qm = 1 - 1023 - shift + 16383, (m << shift) & ((1 << 52) - 1)
        qm <<= 60
    else:
        qe, qm = e - 1023 + 16383, m << 60
    q = sign << 127 | qe << 112 | qm
    return q.to_bytes(16, "little" if order == "<" else "big")


QUAD_VALUES = [0.0, 1.5, -2.0, 1e300, -1e-310, 3.141592653589793, float("inf"), -0.0]
QUAD_TEXT = ["0.0", "1.5", "-2.0", "1e+300", "-1e-310", "3.141592653589793", "inf", "-0.0"]


def quad_type(order):
    t = h5t.IEEE_F64LE.copy()
    t.set_size(16)
    t.set_precision(128)
    t.set_fields(127, 112, 15, 0, 112)
    t.set_ebias(16383)
    t.set_norm(h5t.NORM_IMPLIED)
    t.set_order(h5t.ORDER_LE if order == "<" else h5t.ORDER_BE)
    return t


def quad(path):
    out = {}
    with h5py.File(path, "w") as f:
        for order, name in (("<", "quad_le"), (">", "quad_be")):
            t = quad_type(order)
            raw = b"".join(quad_bytes(v, order) for v in QUAD_VALUES)
            buf = np.frombuffer(raw, dtype="V16").copy()
            d = h5d.create(f.id, name.encode(), t, h5s.create_simple((len(QUAD_VALUES),)))
            d.write(h5s.ALL, h5s.ALL, buf, mtype=t)
            a = h5a.create(d, b"q", t, h5s.create_simple((len(QUAD_VALUES),)))
            a.write(buf, mtype=t)
            out[name] = raw
        ld = np.array([1.0, -2.5, 1e-300], dtype=np.longdouble)
        f.create_dataset("longdouble", data=ld)
        out["longdouble"] = ld.tobytes()
    return out


# ---- 128-bit integers ------------------------------------------------------

INT_VALUES = {True: [0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 64, 12345678901234567890123456789,
                     -98765432109876543210987654321, 2 ** 127 - 1, -2 ** 127],
              False: [0, 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 12345678901234567890123456789, 2 ** 128 - 1]}


def int_type(size, prec, offset, signed, order):
    t = h5t.STD_I64LE.copy()
    t.set_size(size)
    t.set_precision(prec)
    t.set_offset(offset)
    t.set_order(h5t.ORDER_LE if order == "<" else h5t.ORDER_BE)
    t.set_sign(h5t.SGN_2 if signed else h5t.SGN_NONE)
    return t


def int_bytes(v, size, prec, offset, order):
    u = (v % (1 << prec)) << offset
    return u.to_bytes(size, "little" if order == "<" else "big")


def ints128(path):
    out = {}
    with h5py.File(path, "w") as f:
        cases = [("i128%s%s" % ("s" if s else "u", "le" if o == "<" else "be"), 16, 128, 0, s, o)
                 for s in (True, False) for o in ("<", ">")]
        cases.append(("i100s_off12", 16, 100, 12, True, "<"))
        for name, size, prec, off, signed, order in cases:
            vals = [v for v in INT_VALUES[signed]
                    if (-(1 << (prec - 1)) <= v < (1 << (prec - 1)) if signed else 0 <= v < (1 << prec))]
            t = int_type(size, prec, off, signed, order)
            raw = b"".join(int_bytes(v, size, prec, off, order) for v in vals)
            a = h5a.create(f.id, name.encode(), t, h5s.create_simple((len(vals),)))
            a.write(np.frombuffer(raw, dtype="V%d" % size).copy(), mtype=t)
            out[name] = vals
    return out


def make(outdir):
    return {"arrays_v1.h5": arrays_v1(os.path.join(outdir, "arrays_v1.h5")),
            "quad.h5": quad(os.path.join(outdir, "quad.h5")),
            "ints128.h5": ints128(os.path.join(outdir, "ints128.h5"))}


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    for name, what in make(out).items():
        print(name, os.path.getsize(os.path.join(out, name)), "bytes")
