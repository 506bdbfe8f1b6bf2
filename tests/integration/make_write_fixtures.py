#!/usr/bin/python3
"""Fixtures of the attribute-writing tests (test_setfattr.py,
test_attr_crash.py), deterministic:

    make_write_fixtures.py DIR     writes the files below into DIR

Each file has the objects "/", "/g" (a group) and "/d" (a dataset), each
with the attributes
    i     int32 scalar 7          fa   float64 [0.5, 1.5, 2.5]
    fs    fixed-length string     rm   int64 scalar 3
    vs    variable-length string (not in tables.h5: PyTables stores a str
          pickled)
    flag  h5py boolean (h5py files only)
    vsa, fsa  two variable-length / fixed-length strings (default.h5 only:
          its v1 headers have no compact limit)
written by the library each format belongs to:
  default.h5   h5py defaults (v1 object headers, symbol-table groups)
  latest.h5    h5py libver="latest" (v2 headers, compact link storage)
  track.h5     h5py track_order=True (v2 headers tracking creation order)
  netcdf.h5    netCDF4 (NETCDF4 format: fs is NC_CHAR, vs NC_STRING)
  tables.h5    PyTables (its own attributes CLASS, VERSION, TITLE too)
"""
import os
import sys

import numpy as np

OBJS = ("/", "/g", "/d")


def _h5py_attrs(o, arrays=False):
    o.attrs["i"] = np.int32(7)
    o.attrs["fa"] = np.array([0.5, 1.5, 2.5])
    o.attrs["fs"] = np.bytes_("fixed")
    o.attrs["vs"] = "variable"
    o.attrs["flag"] = np.bool_(True)
    o.attrs["rm"] = np.int64(3)
    if arrays:
        o.attrs["vsa"] = ["one", "two"]
        o.attrs["fsa"] = np.array([b"ab", b"cde"])


def make_h5py(path, arrays=False, **kw):
    import h5py

    with h5py.File(path, "w", **kw) as f:
        g = f.create_group("g")
        d = f.create_dataset("d", data=np.arange(12, dtype=np.int32))
        for o in (f, g, d):
            _h5py_attrs(o, arrays)


def make_netcdf(path):
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("x", 12)
        g = nc.createGroup("g")
        d = nc.createVariable("d", "i4", ("x",))
        d[:] = np.arange(12, dtype=np.int32)
        for o in (nc, g, d):
            o.setncattr("i", np.int32(7))
            o.setncattr("fa", np.array([0.5, 1.5, 2.5]))
            o.setncattr("fs", "fixed")
            o.setncattr_string("vs", "variable")
            o.setncattr("rm", np.int64(3))


def make_tables(path):
    import tables

    with tables.open_file(path, "w") as t:
        g = t.create_group("/", "g")
        d = t.create_array("/", "d", np.arange(12, dtype=np.int32))
        for node in (t.root, g, d):
            a = node._v_attrs
            a.i = np.int32(7)
            a.fa = np.array([0.5, 1.5, 2.5])
            a.fs = np.bytes_("fixed")
            a.rm = np.int64(3)


def make(d):
    os.makedirs(d, exist_ok=True)
    make_h5py(os.path.join(d, "default.h5"), arrays=True)
    make_h5py(os.path.join(d, "latest.h5"), libver="latest")
    make_h5py(os.path.join(d, "track.h5"), track_order=True)
    made = ["default.h5", "latest.h5", "track.h5"]
    try:
        make_netcdf(os.path.join(d, "netcdf.h5"))
        made.append("netcdf.h5")
    except ImportError:
        pass
    try:
        make_tables(os.path.join(d, "tables.h5"))
        made.append("tables.h5")
    except ImportError:
        pass
    return made


if __name__ == "__main__":
    print(" ".join(make(sys.argv[1])))
