#!/usr/bin/python3
"""Datatypes of format specification 4.0 that no writer here makes (issue
54): h5wasm (libhdf5 2.0) cannot create them, libhdf5 1.10 does not know
them.  build(path) writes a file with h5py (superblock 0, version 1 object
headers: no checksums) holding datasets of the same element size, then
rewrites each one's datatype message (IV.A.2.d) with the bytes the 4.0
specification gives, padded with zeros to the message's stored size:

  c8, c16   class 11, version 5: homogeneous rectangular complex of IEEE
            binary32 / binary64 (h5py wrote them as its {r, i} compound)
  c4        the same of binary16 (NumPy has no such type)
  polar     class 11 of polar form: a reader refuses it
  bf16      class 1: bfloat16 (8-bit exponent, 7-bit mantissa, bias 127)
  e4m3      class 1: OCP FP8 E4M3 (4-bit exponent bias 7, 3-bit mantissa)
  e5m2      class 1: OCP FP8 E5M2 (5-bit exponent bias 15, 2-bit mantissa)
  e2m3, e3m2, e2m1  class 1, HDF5 2.1's OCP FP6 and FP4 in a byte's low bits

and the attribute z of c8 (complex64, scalar).  build_vds(dir) writes a
virtual dataset whose mapping block (III.F) is re-encoded as version 1.  Deterministic: the same
bytes every run.  Returns what each dataset holds, as NumPy arrays of the
raw bytes' meaning (complex values; bfloat16/FP8 as their uint8/uint16 bit
patterns, with the float values they stand for).

    python3 make_h5v2_types.py OUT.h5
"""
import struct
import sys

import h5py
import numpy as np


def dt_head(version, cls, bits, size):
    return bytes([version << 4 | cls, bits & 0xff, (bits >> 8) & 0xff, (bits >> 16) & 0xff]) + struct.pack("<I", size)


def dt_float(size, sign, eloc, esz, mloc, msz, bias):
    """A little-endian float, mantissa normalization 2 (implied leading one)."""
    return dt_head(1, 1, 2 << 4 | sign << 8, size) + struct.pack("<HHBBBBI", 0, size * 8, eloc, esz, mloc, msz, bias)


F2 = dt_float(2, 15, 10, 5, 0, 10, 15)
F4 = dt_float(4, 31, 23, 8, 0, 23, 127)
F8 = dt_float(8, 63, 52, 11, 0, 52, 1023)
BF16 = dt_float(2, 15, 7, 8, 0, 7, 127)
E4M3 = dt_float(1, 7, 3, 4, 0, 3, 7)
E5M2 = dt_float(1, 7, 2, 5, 0, 2, 15)


def dt_float_low(prec, sign, eloc, esz, msz, bias):
    """HDF5 2.1's FP6/FP4: a byte whose low prec bits hold the number."""
    return dt_head(1, 1, 2 << 4 | sign << 8, 1) + struct.pack("<HHBBBBI", 0, prec, eloc, esz, 0, msz, bias)


E2M3 = dt_float_low(6, 5, 3, 2, 3, 1)
E3M2 = dt_float_low(6, 5, 2, 3, 2, 3)
E2M1 = dt_float_low(4, 3, 1, 2, 1, 1)


def dt_complex(part, psize, form=0):
    """Class 11 (version 5): bit 0 homogeneous, bits 1-2 the form, then the
    parent type message."""
    return dt_head(5, 11, 1 | form << 1, 2 * psize) + part


# ---- object header version 1 (IV.A.1.a): the messages' data ----------------

def messages(buf, addr):
    if buf[addr] != 1:
        raise ValueError("no version 1 object header at 0x%x" % addr)
    out, chunks = [], [(addr + 16, addr + 16 + struct.unpack_from("<I", buf, addr + 8)[0])]
    while chunks:
        p, end = chunks.pop(0)
        while end - p >= 8:
            t, sz = struct.unpack_from("<HH", buf, p)
            out.append((t, p + 8, sz))
            if t == 0x10:
                a, ln = struct.unpack_from("<QQ", buf, p + 8)
                chunks.append((a, a + ln))
            p += 8 + sz
    return out


def put_dtype(buf, off, room, enc):
    if len(enc) > room:
        raise ValueError("datatype message of %d bytes does not fit %d" % (len(enc), room))
    buf[off:off + room] = enc + bytes(room - len(enc))


def patch_dataset(buf, addr, enc):
    ms = [m for m in messages(buf, addr) if m[0] == 3]
    assert len(ms) == 1
    put_dtype(buf, ms[0][1], ms[0][2], enc)


def patch_attr(buf, addr, name, enc):
    """Attribute message version 1: version, reserved, name size, datatype
    size, dataspace size, then the name, datatype and dataspace, each
    padded to a multiple of 8."""
    for t, off, _ in messages(buf, addr):
        if t != 0x0C:
            continue
        ver, _, nsz, dsz, _ = struct.unpack_from("<BBHHH", buf, off)
        assert ver == 1
        if bytes(buf[off + 8:off + 8 + nsz]).rstrip(b"\0") != name.encode():
            continue
        put_dtype(buf, off + 8 + (nsz + 7) // 8 * 8, dsz, enc)
        return
    raise ValueError("no attribute %s" % name)


# ---- the values ---------------------------------------------------------------

C8 = np.array([1.5 - 2j, 0.25j, -3, 1e30 + 1e-30j], dtype="<c8")
C16 = np.array([1.5 - 2j, np.pi + np.e * 1j, -0.0 + 0j], dtype="<c16")
C4 = np.array([(1.0, -0.5), (65504.0, 2 ** -24)], dtype=[("r", "<f2"), ("i", "<f2")])
Z = np.complex64(-1.25 + 4j)
# bfloat16 bit patterns: 1.0, -2.5, 3.140625, 1e38-ish, inf, nan
BF16_BITS = np.array([0x3f80, 0xc020, 0x4049, 0x7e96, 0x7f80, 0x7fc0], dtype="<u2")
BF16_VALS = ["1.0", "-2.5", "3.140625", "9.969e+37", "inf", "nan"]
# E4M3: 448 (largest), 1.0, -0.125, 2**-9 (smallest subnormal), nan
E4M3_BITS = np.array([0x7e, 0x38, 0xa8, 0x01, 0x7f], dtype="u1")
E4M3_VALS = [448.0, 1.0, -0.25, 2.0 ** -9, float("nan")]
# E5M2: 57344 (largest), 1.0, -inf, 2**-16 (smallest subnormal)
E5M2_BITS = np.array([0x7b, 0x3c, 0xfc, 0x01], dtype="u1")
E5M2_VALS = [57344.0, 1.0, float("-inf"), 2.0 ** -16]
# FP6 E2M3 7.5, FP6 E3M2 28, FP4 E2M1 6 (their largest), and -1.0
LOW_BITS = {"e2m3": np.array([0x1f, 0x28], "u1"), "e3m2": np.array([0x1f, 0x2c], "u1"),
            "e2m1": np.array([0x07, 0x0a], "u1")}


def build(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("c8", data=C8)
        f["c8"].attrs["z"] = Z
        f.create_dataset("c16", data=C16)
        f.create_dataset("c4", data=C4)
        f.create_dataset("polar", data=C16)
        f.create_dataset("bf16", data=BF16_BITS.view("<f2"))
        f.create_dataset("e4m3", data=E4M3_BITS.view([("a", "u1")]))
        f.create_dataset("e5m2", data=E5M2_BITS.view([("a", "u1")]))
        for n, b in LOW_BITS.items():
            f.create_dataset(n, data=b.view([("a", "u1")]))
        addr = {n: h5py.h5o.get_info(f[n].id).addr for n in f}
    buf = bytearray(open(path, "rb").read())
    patch_dataset(buf, addr["c8"], dt_complex(F4, 4))
    patch_attr(buf, addr["c8"], "z", dt_complex(F4, 4))
    patch_dataset(buf, addr["c16"], dt_complex(F8, 8))
    patch_dataset(buf, addr["c4"], dt_complex(F2, 2))
    patch_dataset(buf, addr["polar"], dt_complex(F8, 8, form=1))
    patch_dataset(buf, addr["bf16"], BF16)
    patch_dataset(buf, addr["e4m3"], E4M3)
    patch_dataset(buf, addr["e5m2"], E5M2)
    patch_dataset(buf, addr["e2m3"], E2M3)
    patch_dataset(buf, addr["e3m2"], E3M2)
    patch_dataset(buf, addr["e2m1"], E2M1)
    with open(path, "wb") as fh:
        fh.write(buf)


# ---- the global heap block of a virtual dataset, version 1 (III.F) ----------

VDS_SRC = np.arange(12, dtype="<i4")
VDS_OTHER = np.arange(100, 108, dtype="<i4")
# /v: [0:4] <- this file's /src[0:4]; [4:8] <- o.h5:/d[0:4]; [8:12] <- o.h5:/d[4:8]
VDS_WANT = np.concatenate([VDS_SRC[0:4], VDS_OTHER])


def _sel_len(buf, p):
    """Bytes of the dataspace selection at p (IV.A.2.b selections: type,
    version 1: reserved, length, then length bytes)."""
    _, ver = struct.unpack_from("<II", buf, p)
    if ver != 1:
        raise ValueError("selection version %d at 0x%x" % (ver, p))
    return 16 + struct.unpack_from("<I", buf, p + 12)[0]


def _cstr(buf, p):
    e = buf.index(b"\0", p)
    return bytes(buf[p:e]), e + 1


def build_vds(d):
    """o.h5 (/d) and vds.h5 (/src, /v as above) written by libhdf5 1.10 with
    a version 0 mapping block, which is re-encoded as version 1: mapping 0
    with the same-file bit, 1 with its names, 2 sharing both of 1's. The
    collection keeps its size; object 0 (free space) takes the rest."""
    import os
    from ea_dump import lookup3  # Jenkins lookup3, the checksum of the block
    with h5py.File(os.path.join(d, "o.h5"), "w") as f:
        f["d"] = VDS_OTHER
    path = os.path.join(d, "vds.h5")
    with h5py.File(path, "w") as f:
        f["src"] = VDS_SRC
        lay = h5py.VirtualLayout(shape=(12,), dtype="<i4")
        lay[0:4] = h5py.VirtualSource(".", "src", shape=(12,))[0:4]
        lay[4:8] = h5py.VirtualSource("o.h5", "d", shape=(8,))[0:4]
        lay[8:12] = h5py.VirtualSource("o.h5", "d", shape=(8,))[4:8]
        f.create_virtual_dataset("v", lay, fillvalue=-1)
        addr = h5py.h5o.get_info(f["v"].id).addr
    buf = bytearray(open(path, "rb").read())
    lay = [m for m in messages(buf, addr) if m[0] == 8][0]
    ver, cls, gcol, idx = struct.unpack_from("<BBQI", buf, lay[1])
    assert cls == 3 and buf[gcol:gcol + 4] == b"GCOL"
    csize = struct.unpack_from("<Q", buf, gcol + 8)[0]
    p = gcol + 16
    oidx, _, _, osize = struct.unpack_from("<HHIQ", buf, p)
    assert oidx == idx
    old = bytes(buf[p + 16:p + 16 + osize])
    # the version 0 block: version, count, then per mapping file, dataset, 2 selections
    assert old[0] == 0 and struct.unpack_from("<Q", old, 1)[0] == 3
    q, maps = 9, []
    for _ in range(3):
        fname, q = _cstr(old, q)
        dname, q = _cstr(old, q)
        n1 = _sel_len(old, q)
        n2 = _sel_len(old, q + n1)
        maps.append((fname, dname, old[q:q + n1 + n2]))
        q += n1 + n2
    assert maps[0][0] == b"." and maps[1][:2] == maps[2][:2]
    new = bytearray(b"\1" + struct.pack("<Q", 3))
    new += b"\x04" + maps[0][1] + b"\0" + maps[0][2]
    new += b"\x00" + maps[1][0] + b"\0" + maps[1][1] + b"\0" + maps[1][2]
    new += b"\x03" + struct.pack("<QQ", 1, 1) + maps[2][2]
    new += struct.pack("<I", lookup3(bytes(new)))
    obj = struct.pack("<HHIQ", idx, 0, 0, len(new)) + bytes(new) + bytes(-len(new) % 8)
    free = csize - 16 - len(obj)
    assert free >= 16
    buf[gcol + 16:gcol + csize] = obj + struct.pack("<HHIQ", 0, 0, 0, free) + bytes(free - 16)
    with open(path, "wb") as fh:
        fh.write(buf)
    return path


if __name__ == "__main__":
    build(sys.argv[1])
