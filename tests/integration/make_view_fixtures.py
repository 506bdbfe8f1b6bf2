#!/usr/bin/python3
"""Fixtures of test_views.py (deterministic): python3 make_view_fixtures.py OUT.h5 [VERSION]

Every numeric dtype in both byte orders (2-D), h5py booleans, the x87 long
double, compound tables (with a string member holding commas and quotes,
an array member, a nested compound, a variable-length string member),
2-D images (uint8, uint16 of both orders), RGB and RGBA images, 3-D
chunked and compressed stacks (chunks of one frame and chunks spanning
frames, edge chunks), a scalar, a null dataspace, variable-length strings,
a dataset whose name is a view's name (the real link wins), a group, a
stack of more than a million frames (seven-digit names) and a sparse 5 GiB
float stack (BigTIFF). VERSION (default 1) changes every value (live test).
"""
import sys

import h5py
import numpy as np

NUMERIC = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]


def numeric_names():
    out = []
    for t in NUMERIC:
        if t[1] == "1":
            out.append(("n_" + t, "|" + t))
        else:
            out.append(("le_" + t, "<" + t))
            out.append(("be_" + t, ">" + t))
    return out


def values(rng, dt, shape):
    dt = np.dtype(dt)
    if dt.kind == "f":
        a = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
        a = a.astype(dt)
        flat = a.reshape(-1)
        flat[:4] = [0.0, -0.0, 1.0, 0.5]
        if dt.itemsize >= 4:
            flat[4:7] = [np.inf, -np.inf, np.nan]
        return a
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, shape, dtype=np.int64 if dt.kind == "i" or dt.itemsize < 8 else np.uint64,
                     endpoint=True)
    a = a.astype(dt)
    a.reshape(-1)[:2] = [info.min, info.max]
    return a


def main(path, version=1):
    rng = np.random.default_rng(37 + version)
    with h5py.File(path, "w") as f:
        for name, dt in numeric_names():
            f[name] = values(rng, dt, (17, 23))
        f["bool"] = rng.integers(0, 2, (9, 11)).astype(bool)
        f["f16"] = rng.standard_normal((5, 3)).astype(np.longdouble)
        f["vec"] = values(rng, "<f8", (1000,))
        # a multiple of the CSV index's step (256 rows): its last run of
        # rows ends the dataset (issue 47: these read EIO)
        f["rows256"] = values(rng, "<i4", (256,))
        f["rows512"] = values(rng, "<f8", (512, 3))
        tab = np.dtype([("id", "<i8"), ("label", "S10"), ("x", ">f4"), ("arr", "<u2", (2, 3)),
                        ("inner", [("a", "u1"), ("b", "<f8")])])
        t = np.zeros(700, dtype=tab)
        t["id"] = np.arange(700) * 7 - 1000 + version
        t["label"] = [("r%d%s%s" % (i, "," if i % 5 == 0 else "", '"' if i % 9 == 0 else "")).encode()
                      for i in range(700)]
        t["x"] = values(rng, ">f4", (700,))
        t["arr"] = rng.integers(0, 65535, (700, 2, 3))
        t["inner"]["a"] = np.arange(700) % 256
        t["inner"]["b"] = rng.standard_normal(700)
        f["tab"] = t
        vt = np.dtype([("n", "<i4"), ("s", h5py.string_dtype())])
        f.create_dataset("vtab", (5,), dtype=vt)
        f["vtab"][...] = np.array([(i, "s%d, %s" % (i, "q\"" * i)) for i in range(5)], dtype=vt)
        f["img8"] = rng.integers(0, 256, (120, 160)).astype("u1")
        f["img16"] = rng.integers(0, 65536, (61, 83)).astype("<u2")
        f["img16be"] = rng.integers(0, 65536, (33, 50)).astype(">u2")
        f["rgb"] = rng.integers(0, 256, (40, 70, 3)).astype("u1")
        f["rgba"] = rng.integers(0, 256, (300, 250, 4)).astype("u1")
        f.create_dataset("stack", data=rng.integers(0, 65536, (12, 64, 48)).astype("<u2"), chunks=(1, 64, 48),
                         compression="gzip")
        f.create_dataset("stackf", data=values(rng, ">f4", (7, 33, 29)), chunks=(2, 16, 16), shuffle=True,
                         compression="gzip")
        f["sc"] = np.float64(3.25 + version)
        f["empty"] = h5py.Empty("f4")
        f.create_dataset("vs", data=["a", "bb,", "c"], dtype=h5py.string_dtype())
        f["img8.npy"] = np.arange(10, dtype="u1")       # a real link wins
        g = f.create_group("g")
        g["x"] = values(rng, "<i4", (6, 5))
        f.create_dataset("many", data=(np.arange(1000001) % 251).astype("u1").reshape(1000001, 1, 1),
                         chunks=(65536, 1, 1), compression="gzip")
        f.create_dataset("sparse", shape=(5, 1024, 1024 * 256), dtype="<f4", chunks=(1, 256, 1024))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
