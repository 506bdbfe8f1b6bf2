"""Fixtures of issue 33 item 8 for test_refs_first.py (deterministic):
what a new user's h5py file holds that `h5fs-ls --refs` once wrote
wrongly or skipped although Zarr v2 can express it as h5py reads it.

make(path) writes FILE with:
  attrs range [-3.0, 3.0] (float64), scalar 2.0, f4 [1.0, 2.5], i [1, 2]
  /g/d          float64 [0..5]
  /g/rel        soft link "d" (relative: /g/d)
  /abs          soft link "/g/d"
  /chain_rel    soft link "g/rel" (relative, to a relative link)
  /e            int64 [0, 1, 2]
  /g/rel_e      soft link "e": /g/e, nothing (libhdf5 reads it from /g)
  /via_rel_e    soft link "/g/rel_e": a link to a link that leads nowhere
  /dangling     soft link "/nowhere"; /chain_dangling -> /dangling
  /loop_a, /loop_b  soft links to each other
  /padded, /padded_chunked (gzip), /nested_padded: compounds with padding
  /opaque       opaque 8-byte elements (|V8), /opaque_chunked (shuffle+gzip)
  /nullterm, /nullterm_chunked (gzip, 2-D, partial edge chunks),
  /spacepad, /spacepad_big (chunked, 300000 elements, several inline chunks)
  /cmp_str      a compound with a space-padded string field

make_xr(DIR) writes what xarray must open the references of as it opens
the file (issue 63 item 2): xr_h5py.h5 (h5py, no dimension scales but
one: scalars, datasets of several lengths in two groups, a dataset as
long as the scale, integers, a chunked dataset partly written and a
contiguous one never written, a dataset with a _FillValue attribute) and
xr_netcdf.nc (netCDF4: a scalar crs, integers without _FillValue, a
variable never written, a dimension without a variable, a variable with
a _FillValue, record variables shorter than their unlimited dimension).
"""
import h5py
import numpy as np


def _fixed_strings(f, name, pad, size, data, chunks=None, gzip=False):
    """A fixed-length string dataset with pad, its stored bytes exactly
    data (a bytes array of shape S): written through a memory type equal
    to the file type, so libhdf5 converts nothing."""
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(size)
    tid.set_strpad(pad)
    sid = h5py.h5s.create_simple(data.shape)
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if chunks:
        plist.set_chunk(chunks)
        if gzip:
            plist.set_deflate(4)
    ds = h5py.h5d.create(f.id, name.encode(), tid, sid, plist)
    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=tid)


def make(path):
    with h5py.File(path, "w") as f:
        f.attrs["range"] = np.array([-3.0, 3.0])
        f.attrs["scalar"] = np.float64(2.0)
        f.attrs["f4"] = np.array([1.0, 2.5], dtype="<f4")
        f.attrs["i"] = np.array([1, 2])
        g = f.create_group("g")
        g["d"] = np.arange(6.0)
        g["rel"] = h5py.SoftLink("d")
        f["abs"] = h5py.SoftLink("/g/d")
        f["chain_rel"] = h5py.SoftLink("g/rel")
        f["e"] = np.arange(3)
        g["rel_e"] = h5py.SoftLink("e")
        f["via_rel_e"] = h5py.SoftLink("/g/rel_e")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["chain_dangling"] = h5py.SoftLink("/dangling")
        f["loop_a"] = h5py.SoftLink("/loop_b")
        f["loop_b"] = h5py.SoftLink("/loop_a")

        dt = np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f8"], "offsets": [0, 8], "itemsize": 24})
        a = np.zeros(50, dtype=dt)
        a["a"] = np.arange(50)
        a["b"] = np.arange(50) * 1.5
        f.create_dataset("padded", data=a)
        f.create_dataset("padded_chunked", data=a, chunks=(16,), compression="gzip")
        inner = np.dtype({"names": ["x"], "formats": ["<i2"], "offsets": [2], "itemsize": 8})
        nd = np.dtype({"names": ["a", "n", "v"], "formats": ["<i4", inner, ("<f4", (2,))],
                       "offsets": [0, 8, 20], "itemsize": 32})
        n = np.zeros(7, dtype=nd)
        n["a"] = np.arange(7)
        n["n"]["x"] = -np.arange(7)
        n["v"] = np.arange(14, dtype="<f4").reshape(7, 2)
        f.create_dataset("nested_padded", data=n)

        op = np.frombuffer(bytes(range(256)) * 2, dtype="V8")
        f.create_dataset("opaque", data=op)
        f.create_dataset("opaque_chunked", data=op, chunks=(10,), shuffle=True, compression="gzip")

        # stored bytes: full fields, bytes after a NUL, empty, trailing spaces
        nt = np.array([b"abcd", b"ab\0x", b"\0\0\0\0", b"xyz ", b"a\0\0\0", b"  b "], dtype="S4")
        _fixed_strings(f, "nullterm", h5py.h5t.STR_NULLTERM, 4, nt.view("V4"))
        grid = np.array([[b"r%dc%d" % (r, c) + (b"\0" if (r + c) % 3 else b"!") for c in range(5)]
                         for r in range(7)], dtype="S5")
        _fixed_strings(f, "nullterm_chunked", h5py.h5t.STR_NULLTERM, 5, grid.view("V5"), chunks=(3, 2),
                       gzip=True)
        sp = np.array([b"ab  ", b"abcd", b"    ", b"a b ", b"\0b  ", b" x  "], dtype="S4")
        _fixed_strings(f, "spacepad", h5py.h5t.STR_SPACEPAD, 4, sp.view("V4"))
        big = np.array([(b"%d" % i).ljust(8, b" ") for i in range(300000)], dtype="S8")
        _fixed_strings(f, "spacepad_big", h5py.h5t.STR_SPACEPAD, 8, big.view("V8"), chunks=(40000,), gzip=True)

        # a compound holding a space-padded string: h5py converts the field
        st = h5py.h5t.C_S1.copy()
        st.set_size(6)
        st.set_strpad(h5py.h5t.STR_SPACEPAD)
        ct = h5py.h5t.create(h5py.h5t.COMPOUND, 16)
        ct.insert(b"id", 0, h5py.h5t.STD_I32LE)
        ct.insert(b"name", 4, st)
        raw = np.zeros(4, dtype=np.dtype({"names": ["id", "name"], "formats": ["<i4", "S6"],
                                          "offsets": [0, 4], "itemsize": 16}))
        raw["id"] = [1, 2, 3, 4]
        raw["name"] = [b"alpha ", b"be    ", b"      ", b"gamma!"]
        sid = h5py.h5s.create_simple((4,))
        ds = h5py.h5d.create(f.id, b"cmp_str", ct, sid)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=ct)


def make_xr(d):
    """The files of make_xr (the docstring): their paths."""
    import os
    import netCDF4
    h5 = os.path.join(d, "xr_h5py.h5")
    with h5py.File(h5, "w") as f:
        f["crs"] = np.int32(4326)
        f["scale"] = np.float64(0.5)
        f["b"] = np.arange(5, dtype="i2")
        f["a"] = np.arange(3, dtype="u1")
        f["c"] = np.arange(15.0).reshape(3, 5)
        f["sq"] = np.arange(9, dtype="i8").reshape(3, 3)
        f["x"] = np.arange(4.0)
        f["x"].make_scale("x")
        f["same_as_x"] = np.arange(4, dtype="i4") * 10
        g = f.create_group("g")
        g["d"] = np.arange(3)
        g["h"] = np.arange(7.0)
        part = f.create_dataset("part", shape=(10, 4), dtype="i4", chunks=(2, 4))
        part[0:4] = np.arange(16).reshape(4, 4)
        f.create_dataset("never", shape=(6,), dtype="f4")
        fv = f.create_dataset("filled", shape=(8,), dtype="i2", chunks=(4,), fillvalue=-9)
        fv[0:4] = [1, 2, -9, 4]
        fv.attrs["_FillValue"] = np.int16(-9)
    nc = os.path.join(d, "xr_netcdf.nc")
    with netCDF4.Dataset(nc, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("y", 3)
        ds.createDimension("unused", 2)
        crs = ds.createVariable("crs", "i4")
        crs.grid_mapping_name = "latitude_longitude"
        t = ds.createVariable("t", "f8", ("t",))
        t[:] = [0.0, 1.0]
        y = ds.createVariable("y", "f4", ("y",))
        y[:] = [10, 20, 30]
        n = ds.createVariable("count", "i2", ("t", "y"))
        n[:] = np.arange(6).reshape(2, 3)
        ds.createVariable("never", "i4", ("y",))
        m = ds.createVariable("masked", "f4", ("t", "y"), fill_value=-1.0)
        m[:, :] = [[1, -1, 3], [4, 5, -1]]
        # record variables written unevenly: shorter than t (netCDF pads
        # them with their fill value), one with a _FillValue, one without
        short = ds.createVariable("short", "i4", ("t", "y"), fill_value=-7)
        short[0, :] = [1, 2, 3]
        nofill = ds.createVariable("nofill", "f8", ("t",))
        nofill[0] = 5.0
        t[2] = 2.0
    return [h5, nc]
