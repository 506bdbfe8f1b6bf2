#!/usr/bin/python3
"""Fixtures of tests/integration/test_vlen.py: datasets of variable-length
types written by h5py, and files written by PyTables and netCDF4 (each
with the datatypes and attributes those libraries use on their own).

    make_vlen_fixtures.py DIR     writes vlen.h5, pytables.h5, netcdf4.nc
"""
import os
import sys

import numpy as np


def make_h5py(path):
    import h5py

    rng = np.random.default_rng(7)
    words = ["", "a", "hello", "caf\u00e9", "\u65e5\u672c\u8a9e", "tab\there", "two\nlines", "x" * 300,
             "quote\"back\\slash", "trailing \n"]
    with h5py.File(path, "w") as f:
        s = h5py.string_dtype("utf-8")
        a = h5py.string_dtype("ascii")
        f.create_dataset("utf8", data=np.array(words, dtype=object), dtype=s)
        f.create_dataset("ascii", data=np.array([b"one", b"", b"three", b"four\n4"], dtype=object), dtype=a)
        f.create_dataset("empty_strings", data=np.array([""] * 7, dtype=object), dtype=s)
        f.create_dataset("grid", data=np.array([["r%dc%d" % (i, j) * (j + 1) for j in range(5)]
                                                for i in range(4)], dtype=object), dtype=s)
        f.create_dataset("scalar", data="just one value", dtype=s)
        f.create_dataset("scalar_empty", data="", dtype=s)
        f.create_dataset("zero", shape=(0,), dtype=s)
        f.create_dataset("never_written", shape=(9,), dtype=s)
        # 100,000 elements: many index marks; contiguous and chunked+deflate
        big = np.array(["%d:%s" % (i, "z" * int(rng.integers(0, 40))) for i in range(100000)], dtype=object)
        big[::977] = ""
        big[5::1013] = "line\nbreak"
        f.create_dataset("big", data=big, dtype=s)
        f.create_dataset("big_gzip", data=big, dtype=s, chunks=(1000,), compression="gzip", shuffle=True)
        # chunked, extendible, partly written: missing chunks read as null strings
        part = f.create_dataset("partial", shape=(5000,), maxshape=(None,), chunks=(256,), dtype=s)
        part[1000:1300] = np.array(["p%d" % i for i in range(300)], dtype=object)
        part[4900:] = np.array(["end%d" % i for i in range(100)], dtype=object)
        # other variable-length types
        vi = h5py.vlen_dtype(np.dtype("<i4"))
        f.create_dataset("vlen_int", data=np.array([np.arange(n, dtype="<i4") - 2 for n in (3, 0, 5, 1)],
                                                   dtype=object), dtype=vi)
        vf = h5py.vlen_dtype(np.dtype("<f8"))
        f.create_dataset("vlen_f8", data=np.array([np.array([0.1, -2.5, 1e100]), np.array([np.inf]),
                                                  np.array([])], dtype=object), dtype=vf)
        ragged = np.empty(3000, dtype=object)
        for i in range(3000):
            ragged[i] = rng.integers(-1000, 1000, size=int(rng.integers(0, 12))).astype("<i2")
        f.create_dataset("vlen_ragged", data=ragged, dtype=h5py.vlen_dtype(np.dtype("<i2")),
                         chunks=(500,), compression="gzip")
        ct = np.dtype([("id", "<i4"), ("name", s), ("w", "<f4")])
        f.create_dataset("compound", data=np.array([(1, "x", 0.5), (2, "y\"z", -1.0), (3, "", 3.25),
                                                    (4, "multi\nline", 0.0)], dtype=ct))
        ct2 = np.dtype([("k", "u1"), ("seq", vi)])
        c2 = np.empty(3, dtype=ct2)
        c2[0] = (1, np.array([1, 2, 3], "<i4"))
        c2[1] = (2, np.array([], "<i4"))
        c2[2] = (3, np.array([-7], "<i4"))
        f.create_dataset("compound_seq", data=c2)
        # an array datatype of strings (create_dataset would turn the
        # array's dimension into a dataset dimension)
        tid = h5py.h5t.array_create(h5py.h5t.py_create(s, logical=True), (2,))
        h5py.h5d.create(f.id, b"array_of_strings", tid, h5py.h5s.create_simple((3,)))
        arr = np.empty((3,), dtype=np.dtype((s, (2,))))
        arr[0] = ["a", "b"]
        arr[1] = ["", "c c"]
        arr[2] = ["d", "e\nf"]
        f["array_of_strings"][...] = arr
        ca = np.empty(2, dtype=np.dtype([("n", "<i2"), ("pair", s, (2,))]))
        ca[0] = (1, ["x", "y"])
        ca[1] = (2, ["", "z"])
        f.create_dataset("compound_array", data=ca)
        # fixed-length strings stay raw bytes
        f.create_dataset("fixed", data=np.array([b"abc", b"de", b""], dtype="S4"))


def make_pytables(path):
    import tables

    class Particle(tables.IsDescription):
        name = tables.StringCol(16)
        idnumber = tables.Int64Col()
        energy = tables.Float64Col()
        pos = tables.Float32Col(shape=(2,))

    with tables.open_file(path, "w", title="PyTables fixture") as h:
        g = h.create_group("/", "detector", "Detector information")
        t = h.create_table(g, "readout", Particle, "Readout example",
                           filters=tables.Filters(complevel=1, complib="zlib"))
        row = t.row
        for i in range(100):
            row["name"] = "Particle: %6d" % i
            row["idnumber"] = i * (2 ** 34)
            row["energy"] = float(i * i) / 3
            row["pos"] = (i, -i / 2)
            row.append()
        t.flush()
        ea = h.create_earray("/", "earray", tables.Float64Atom(), (0, 3), "An EArray")
        for i in range(7):
            ea.append(np.arange(3 * i, 3 * i + 3, dtype="f8").reshape(1, 3) / 7)
        h.create_array("/", "array", np.arange(24, dtype=">i2").reshape(4, 6), "A plain Array")
        vs = h.create_vlarray("/", "vlstrings", tables.VLStringAtom(), "Variable-length strings")
        for w in (b"one", b"", b"three with spaces", b"n\nl"):
            vs.append(w)
        vu = h.create_vlarray("/", "vlunicode", tables.VLUnicodeAtom(), "Variable-length unicode")
        for w in ("caf\u00e9", "", "\u65e5\u672c"):
            vu.append(w)
        vi = h.create_vlarray("/", "vlints", tables.Int32Atom(), "Ragged ints")
        for n in (3, 0, 2):
            vi.append(np.arange(n, dtype="i4") * 10)
        vo = h.create_vlarray("/", "vlobjects", tables.ObjectAtom(), "Pickled objects")
        vo.append({"a": 1})
        vo.append([1, 2, 3])
        # attributes with PyTables' own types
        a = t.attrs
        a.int_attr = 42
        a.float_attr = 2.5
        a.str_attr = "a string"
        a.bytes_attr = b"some bytes"
        a.array_attr = np.arange(4, dtype="u2")
        a.bool_attr = True
        a.pickled = {"key": [1, 2], "other": None}       # not a NumPy object: pickled
        a.tuple_attr = (1, "two", 3.0)                   # pickled too
        h.root._v_attrs.global_note = "root attribute"
        h.root._v_attrs.version_list = np.array([1, 2, 3], dtype="i8")


def make_netcdf(path):
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "netCDF4 fixture"
        nc.history = "created by make_vlen_fixtures.py"
        nc.version = np.int32(3)
        nc.ratios = np.array([0.5, 0.25], dtype="f4")
        nc.createDimension("time", None)
        nc.createDimension("lat", 4)
        nc.createDimension("lon", 5)
        nc.createDimension("n", 3)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "hours since 2000-01-01"
        t.calendar = "standard"
        t[:] = np.arange(6) * 1.5
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat[:] = [-45, -15, 15, 45]
        lat.units = "degrees_north"
        lon = nc.createVariable("lon", "f4", ("lon",))
        lon[:] = np.linspace(0, 288, 5)
        temp = nc.createVariable("temp", "i2", ("time", "lat", "lon"), fill_value=np.int16(-999), zlib=True)
        temp.scale_factor = np.float32(0.01)
        temp.add_offset = np.float32(273.15)
        temp.long_name = "temperature"
        temp.set_auto_maskandscale(False)
        vals = (np.arange(6 * 4 * 5) % 500).reshape(6, 4, 5).astype("i2")
        vals[2, 1, :] = -999
        temp[:] = vals
        names = nc.createVariable("names", str, ("n",))
        for i, w in enumerate(("alpha", "", "caf\u00e9")):
            names[i] = w
        names.note = "a string variable"
        sc = nc.createVariable("scalar", "f8")
        sc[...] = 3.5
        g = nc.createGroup("sub")
        g.createDimension("k", 2)
        v = g.createVariable("v", "u1", ("k",))
        v[:] = [7, 8]
        g.group_attr = "in a group"
        sv = g.createVariable("word", str)
        sv[0] = "scalar string"


def make(d):
    """Write the fixtures to d; returns (name, available or reason)."""
    out = []
    make_h5py(os.path.join(d, "vlen.h5"))
    out.append(("vlen.h5", None))
    for name, fn, mod in (("pytables.h5", make_pytables, "tables"), ("netcdf4.nc", make_netcdf, "netCDF4")):
        try:
            __import__(mod)
        except ImportError as e:
            out.append((name, "%s not available: %s" % (mod, e)))
            continue
        fn(os.path.join(d, name))
        out.append((name, None))
    return out


if __name__ == "__main__":
    for n, why in make(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(n, why or "written")
