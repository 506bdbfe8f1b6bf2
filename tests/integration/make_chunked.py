"""Deterministic chunked-dataset fixtures for test_chunked.py, written with
h5py (and, where h5py has no API or no encoder, libhdf5 through ctypes or
chunks encoded here and stored with write_direct_chunk).

    make(outdir) -> Fixtures

Fixtures.files: [(file name, what it covers)], each mounted on its own.
Fixtures.known: {(file, dataset path): expected bytes} for datasets h5py
    cannot read back (filters with no decoder on this machine): the bytes
    given to the encoder.
Fixtures.eio: {(file, dataset path): text the EIO log line must contain}
    for datasets h5fs must refuse (filters it does not implement).
Fixtures.notes: what could not be made here, and why.

The chunk index matrix: every index libhdf5 writes (v1 B-tree; single
chunk, implicit, fixed array, extensible array, v2 B-tree) x every common
pipeline x {edge chunks, unwritten chunks with a non-zero fill value} x
ranks 1, 2, 3, 5 and 32, plus a geometry per index with many chunks
(multi-level v1 B-tree, paged fixed array, extensible array super blocks,
multi-level v2 B-tree).  Then corners (extras_*.h5): chunks over 1 MiB,
odd element sizes under shuffle/fletcher32, fill time never, empty and
grown-unwritten extents, extents shrunk over written chunks; terabyte
extents with a few chunks far out (huge_*.h5, checked by windows).
Fixed seeds, no timestamps: the same bytes every run.
"""
import ctypes
import ctypes.util
import os
import re

import h5py
import numpy as np

SEED = 20240617

# common pipelines, set on a dataset creation property list
PIPELINES = [
    ("none", lambda p: None),
    ("deflate", lambda p: p.set_deflate(6)),
    ("shuf_deflate", lambda p: (p.set_shuffle(), p.set_deflate(1))),
    ("fletcher32", lambda p: p.set_fletcher32()),
]

# non-zero fill values, one per dtype used (stored in the file's byte order)
FILL = {"<i2": -1234, ">u4": 0xDEADBEEF, "<f8": -7.25, "<i4": 0x5A5A5A5A, "u1": 0xA5, ">f4": 3.5}

# name -> (shape, chunks, dtype); the edge chunks are partial everywhere
R32 = ((3, 2) + (1,) * 28 + (2, 5), (2, 1) + (1,) * 28 + (1, 3))
GEOMS = {
    "r1": ((1000,), (64,), "<i2"),
    "r2": ((37, 29), (8, 5), ">u4"),
    "r3": ((9, 7, 11), (4, 3, 5), "<f8"),
    "r5": ((3, 4, 2, 5, 3), (2, 3, 1, 2, 2), "<i4"),
    "r32": (R32[0], R32[1], "u1"),
}
# per index: its "many chunks" geometry and maximum shapes
MANY = {
    "btree1": ((2500,), (1,), "u1"),        # > 2000 chunks: a multi-level v1 B-tree
    "farray": ((2100,), (2,), "u1"),        # 1050 > 1024 entries: paged data block
    "implicit": ((2100,), (2,), "u1"),
    "earray": ((3000,), (10,), ">f4"),      # 300 > 244 chunks: super blocks
    "btree2": ((200, 50), (3, 1), "u1"),    # 3350 records: a multi-level v2 B-tree
}


class Fixtures:
    def __init__(self):
        self.files = []
        self.known = {}
        self.eio = {}
        self.notes = []
        self.problems = []      # the fixtures do not cover what they claim
        self.windows = {}       # (file, path) -> (st_size, [(offset, expected bytes)])


# H5D_chunk_index_t
CIDX = {"btree1": 0, "single": 1, "implicit": 2, "farray": 3, "earray": 4, "btree2": 5}


def index_type(lib, ds):
    t = ctypes.c_int(-1)
    if lib.H5Dget_chunk_index_type(ctypes.c_int64(ds.id.id), ctypes.byref(t)) < 0:
        return None
    return t.value


def check_index_file(path, index, fx):
    """Ask libhdf5 which index each dataset got, how many chunks it has, and
    that the sparse ones really have chunks never written."""
    lib = libhdf5()
    want = CIDX[index]
    need = {"btree1": 2000, "farray": 1024, "earray": 244}.get(index, 0)
    with h5py.File(path, "r") as f:
        dsets = []
        f.visititems(lambda n, o: dsets.append((n, o)) if isinstance(o, h5py.Dataset) else None)
        for n, ds in dsets:
            got = index_type(lib, ds) if lib else want
            if got != want:
                fx.problems.append("%s/%s: chunk index %s, expected %s (%d)" % (
                    os.path.basename(path), n, got, index, want))
            total = int(np.prod([-(-s // c) for s, c in zip(ds.shape, ds.chunks)]))
            nc = ds.id.get_num_chunks()
            if "many" in n and total <= need:
                fx.problems.append("%s/%s: only %d chunks" % (os.path.basename(path), n, total))
            if n.endswith("_sparse") and index != "implicit" and not 0 <= nc < total:
                fx.problems.append("%s/%s: %d of %d chunks written: none unwritten" % (
                    os.path.basename(path), n, nc, total))


def new_file(path, libver):
    """h5py.File with no timestamp in the root group's header (the fcpl is
    a group creation list too): the same bytes every run."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    low = {"earliest": h5py.h5f.LIBVER_EARLIEST, "latest": h5py.h5f.LIBVER_LATEST}[libver]
    fapl.set_libver_bounds(low, h5py.h5f.LIBVER_LATEST)
    return h5py.File(h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl))


def new_group(parent, name):
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    return h5py.Group(h5py.h5g.create(parent.id, name.encode(), gcpl=gcpl))


def values(rng, shape, dtype):
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, size=n, dtype=dt.newbyteorder("="), endpoint=True)
    else:
        v = rng.standard_normal(n) * 1000
    return v.astype(dt).reshape(shape)


def maxshape_for(index, name, shape):
    """Maximum shapes that make libhdf5 pick the wanted index (libver
    latest): fixed (some larger than the extent: the array indexes are laid
    out over the maximum dimensions), one unlimited dimension (not always
    the first: the extensible array moves it to the front), two."""
    r = len(shape)
    if index in ("single", "implicit"):
        return tuple(shape)
    if index == "farray":
        grow = r <= 5 and name != "many"     # (rank 32: the grid of the maximum shape would be huge)
        return tuple(s * 2 + 1 if i % 2 and grow else s for i, s in enumerate(shape))
    if index == "earray":
        unl = {"r1": 0, "r2": 1, "r3": 1, "r5": 4, "r32": 31, "many": 0}[name]
        return tuple(None if i == unl else (s + 3 if i % 2 == 0 and r <= 5 else s) for i, s in enumerate(shape))
    if index == "btree2":
        unl = {"r2": (0, 1), "r3": (0, 2), "r5": (1, 3), "r32": (0, 31), "many": (0, 1), "r1": None}[name]
        return tuple(None if i in unl else s for i, s in enumerate(shape))
    # btree1 (libver earliest): any; one unlimited now and then
    return tuple(None if (i == 0 and r == 2) else s for i, s in enumerate(shape))


def sparse_write(ds, data):
    """Write only part of ds: every other chunk row of dimension 0, one
    element short of the chunk (so written chunks hold fill values too),
    everything along the other dimensions; the rest is never written."""
    shape, chunks = ds.shape, ds.chunks
    start, stride, count, block = [], [], [], []
    for i, (s, c) in enumerate(zip(shape, chunks)):
        if i == 0:
            st, bl = 2 * c, max(1, c - 1)
            cnt = max(1, (s - bl) // st + 1) if s >= bl else 0
            start.append(0)
            stride.append(st)
            count.append(cnt)
            block.append(min(bl, s))
        else:
            start.append(0)
            stride.append(1)
            count.append(1)
            block.append(s)
    if not count[0]:
        return
    fspace = ds.id.get_space()
    fspace.select_hyperslab(tuple(start), tuple(count), tuple(stride), tuple(block))
    mshape = tuple(c * b for c, b in zip(count, block))
    mem = np.ascontiguousarray(data[tuple(slice(0, m) for m in mshape)])
    mspace = h5py.h5s.create_simple(mshape)
    ds.id.write(mspace, fspace, mem)


def create(g, name, shape, chunks, dtype, maxshape, pipeline, fill=None, early=False, chunk_opts=None):
    """Low-level, so nothing second-guesses or drops what is set on the
    dcpl (the high-level create_dataset loses H5Pset_chunk_opts)."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    dcpl.set_chunk(tuple(chunks))
    if chunk_opts is not None and chunk_opts[0].H5Pset_chunk_opts(dcpl.id, chunk_opts[1]) < 0:
        raise RuntimeError("H5Pset_chunk_opts failed")
    pipeline(dcpl)
    if fill is not None:
        dcpl.set_fill_value(np.array(fill, dtype=dtype))
    if early:
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    ms = tuple(h5py.h5s.UNLIMITED if m is None else m for m in maxshape)
    space = h5py.h5s.create_simple(tuple(shape), ms)
    dsid = h5py.h5d.create(g.id, name.encode(), h5py.h5t.py_create(np.dtype(dtype)), space, dcpl=dcpl)
    return h5py.Dataset(dsid)


def index_file(path, index, rng):
    """One file per chunk index: /<pipeline>/<geometry>_<edge|sparse>."""
    libver = "earliest" if index == "btree1" else "latest"
    geoms = dict(GEOMS)
    if index in MANY:
        geoms["many"] = MANY[index]
    if index == "btree2":
        del geoms["r1"]        # two unlimited dimensions need rank >= 2
    pipes = PIPELINES[:1] if index == "implicit" else PIPELINES
    with new_file(path, libver) as f:
        for pname, pkw in pipes:
            g = new_group(f, pname)
            for gname, (shape, chunks, dt) in geoms.items():
                ms = maxshape_for(index, gname, shape)
                if index == "single":
                    # one chunk as large as the maximum shape, larger than
                    # the extent: a partial (edge) chunk
                    # libhdf5 picks it when extent == maximum == chunk:
                    # created so, then shrunk
                    ms = chunks = tuple(s + (i % 2 if len(shape) <= 5 else i == len(shape) - 1)
                                        for i, s in enumerate(shape))
                data = values(rng, shape, dt)
                cshape = chunks if index == "single" else shape
                ds = create(g, gname + "_edge", cshape, chunks, dt, ms, pkw, early=index == "implicit")
                if ds.shape != shape:
                    ds.resize(shape)
                ds[...] = data
                ds = create(g, gname + "_sparse", cshape, chunks, dt, ms, pkw, fill=FILL[dt],
                            early=index == "implicit")
                if ds.shape != shape:
                    ds.resize(shape)
                if index != "single":       # a single chunk never written: all fill
                    sparse_write(ds, data)
                if index == "single" and gname == "r2":
                    ds = create(g, gname + "_partial", cshape, chunks, dt, ms, pkw, fill=FILL[dt])
                    ds.resize(shape)
                    ds[1:5, 2:9] = data[1:5, 2:9]


def earray_paged(path, rng):
    """140,000 chunks of one element: extensible array data block pages."""
    n = 140000
    with new_file(path, "latest") as f:
        data = rng.integers(0, 256, n, dtype=np.uint8)
        ds = f.create_dataset("paged", shape=(n,), chunks=(1,), maxshape=(None,), dtype="u1",
                              fillvalue=0x3C, track_times=False)
        # every chunk but those of two stretches: unwritten pages and
        # unwritten entries inside written pages read as the fill value
        ds[:70000] = data[:70000]
        ds[72048:139990:3] = data[72048:139990:3]


# ---- extra filters (h5py built-ins, hdf5plugin, Debian's plugins) --------------------

def filter_file(path, rng, fx):
    try:
        import hdf5plugin  # (registers its filters with libhdf5)
    except ImportError as e:
        hdf5plugin = None
        fx.notes.append("hdf5plugin not importable (%s): no lz4, bzip2, blosc fixtures" % e)

    shape, chunks = (61, 45), (16, 10)

    def data_for(dt):
        dt = np.dtype(dt)
        if dt.kind == "f":
            # smooth data: the compressors have something to find
            x = np.linspace(0, 12, shape[0] * shape[1]).reshape(shape)
            return (np.sin(x) * 100 + rng.standard_normal(shape)).astype(dt)
        return values(rng, shape, dt)

    cases = [("lzf", "<i4", dict(compression="lzf"))]
    if hdf5plugin:
        cases += [("lz4", "<f8", dict(hdf5plugin.LZ4(nbytes=0))),
                  ("lz4_block", "<i2", dict(hdf5plugin.LZ4(nbytes=256))),
                  ("bzip2", ">u4", dict(hdf5plugin.BZip2(blocksize=5))),
                  ("shuf_bzip2", "<f4", dict(hdf5plugin.BZip2(), shuffle=True))]
        for cname in ("blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"):
            for sh in (0, 1, 2):
                cases.append(("blosc_%s_s%d" % (cname, sh), ("<f4", "<i2", "<f8")[sh],
                              dict(hdf5plugin.Blosc(cname=cname, clevel=5, shuffle=sh))))
    cases += [("szip_nn", "<i4", dict(compression="szip", compression_opts=("nn", 16))),
              ("szip_ec", "<f4", dict(compression="szip", compression_opts=("ec", 8))),
              ("szip_i2", ">i2", dict(compression="szip", compression_opts=("nn", 32))),
              ("scaleoffset_int_auto", "<i4", dict(scaleoffset=0)),
              ("scaleoffset_int_12", "<u2", dict(scaleoffset=12)),
              ("scaleoffset_int_i8", ">i8", dict(scaleoffset=True, compression="gzip")),
              ("scaleoffset_float_d2", "<f4", dict(scaleoffset=2)),
              ("scaleoffset_double_d3", ">f8", dict(scaleoffset=3, shuffle=True))]
    with new_file(path, "latest") as f:
        for k, (name, dt, kw) in enumerate(cases):
            data = data_for(dt)
            if name.startswith("scaleoffset_int"):
                # a narrow range so minbits is small
                data = (data % 3000).astype(dt) if np.dtype(dt).kind == "u" else (data % 3000 - 1000).astype(dt)
            for variant in ("edge", "sparse"):
                ms = (None, shape[1]) if k % 2 else shape        # extensible / fixed array
                try:
                    ds = f.create_dataset("%s_%s" % (name, variant), shape=shape, chunks=chunks, dtype=dt,
                                          maxshape=ms, track_times=False,
                                          fillvalue=(FILL.get(dt, 77) if variant == "sparse" else None), **kw)
                    if variant == "edge":
                        ds[...] = data
                    else:
                        sparse_write(ds, data)
                except Exception as e:   # e.g. szip without an encoder, snappy not in c-blosc
                    if ("%s_%s" % (name, variant)) in f:
                        del f["%s_%s" % (name, variant)]
                    fx.notes.append("filter %s: h5py could not write it (%s): skipped"
                                    % (name, str(e).splitlines()[0][:100]))
                    break
        nbit_datasets(f, rng)


def nbit_datasets(f, rng):
    """N-bit (no h5py keyword or set_nbit): the filter set on a low-level dcpl, on types with
    reduced precision and an offset."""
    shape, chunks = (50, 33), (16, 8)
    # 17-bit signed integer at bit offset 3 of a little-endian int32
    t = h5py.h5t.STD_I32LE.copy()
    t.set_precision(17)
    t.set_offset(3)
    ints = rng.integers(-(1 << 16), (1 << 16) - 1, shape).astype("<i4")
    # 12-bit unsigned at offset 2 of a big-endian uint16
    u = h5py.h5t.STD_U16BE.copy()
    u.set_precision(12)
    u.set_offset(2)
    uints = rng.integers(0, 4095, shape).astype(">u2")
    # a 24-bit float: 1 sign, 7 exponent, 16 mantissa bits, at offset 8 of a float32
    fl = h5py.h5t.IEEE_F32LE.copy()
    fl.set_fields(31, 24, 7, 8, 16)
    fl.set_offset(8)
    fl.set_precision(24)
    fl.set_ebias(63)
    floats = (rng.standard_normal(shape) * 50).astype("<f4")
    for name, tid, data, deflate, fill in (("nbit_i17", t, ints, False, 1000),
                                           ("nbit_u12_deflate", u, uints, True, 77),
                                           ("nbit_f24", fl, floats, False, None)):
        for variant in ("edge", "sparse"):
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_obj_track_times(False)
            dcpl.set_chunk(chunks)
            dcpl.set_filter(h5py.h5z.FILTER_NBIT, 0)   # (H5Pset_nbit; set_local fills in the parameters)
            if deflate:
                dcpl.set_deflate(4)
            if variant == "sparse" and fill is not None:
                dcpl.set_fill_value(np.array(fill, dtype=data.dtype))
            ms = (h5py.h5s.UNLIMITED, shape[1]) if variant == "sparse" else shape
            space = h5py.h5s.create_simple(shape, ms)
            dsid = h5py.h5d.create(f.id, ("%s_%s" % (name, variant)).encode(), tid, space, dcpl=dcpl)
            ds = h5py.Dataset(dsid)
            if variant == "edge":
                dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))
            else:
                sparse_write(ds, data)


def extras_file(path, rng, fx, libver):
    """Corners: chunks over 1 MiB, odd element sizes under shuffle and
    fletcher32, compound members, fill time never, empty and grown-but-
    never-written extents, extents shrunk over written chunks (and grown
    back), n-bit on a compound."""
    with new_file(path, libver) as g:
        # 1.2 MiB chunks: reads of a window of a chunk, not the whole
        big = values(rng, (600, 1100), "<f4")
        ds = create(g, "big_none", (600, 1100), (300, 1000), "<f4", (600, None), PIPELINES[0][1])
        ds[...] = big
        ds = create(g, "big_deflate", (600, 1100), (300, 1000), "<f4", (None, 1100), PIPELINES[1][1])
        ds[...] = np.round(big, 0)
        for name, dt in (("s7_shuf_fletcher", "S7"), ("v5_shuf_deflate", "V5"),
                         ("compound_shuf_deflate", np.dtype([("a", "<i4"), ("b", ">f8"), ("c", "S3")])),
                         ("array_fletcher", np.dtype(("<i2", (3,))))):
            shape = (53, 7)
            raw = np.frombuffer(rng.bytes(53 * 7 * np.dtype(dt).itemsize), dtype=np.uint8)
            if np.dtype(dt).shape:
                data = raw.view(np.dtype(dt).base).reshape(shape + np.dtype(dt).shape).copy()
            else:
                data = raw.view(np.dtype(dt)).reshape(shape).copy()
            if np.dtype(dt).names:
                data["b"] = rng.standard_normal(shape)     # no NaN payload games
            pipe = (lambda p: (p.set_shuffle(), p.set_fletcher32())) if "fletcher" in name and "shuf" in name \
                else PIPELINES[3][1] if "fletcher" in name else PIPELINES[2][1]
            ds = create(g, name, shape, (8, 3), dt, (None, 7), pipe)
            ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=ds.id.get_type())
        # fill time never: unwritten chunks are not filled by libhdf5
        for pname, pipe in PIPELINES[:2]:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_obj_track_times(False)
            dcpl.set_chunk((10, 10))
            pipe(dcpl)
            dcpl.set_fill_value(np.array(99, dtype="<i4"))
            dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
            space = h5py.h5s.create_simple((35, 25), (35, h5py.h5s.UNLIMITED))
            dsid = h5py.h5d.create(g.id, ("fill_never_%s" % pname).encode(), h5py.h5t.STD_I32LE, space,
                                   dcpl=dcpl)
            sparse_write(h5py.Dataset(dsid), values(rng, (35, 25), "<i4"))
            # libhdf5 skips chunks never written (H5D__chunk_read
            # skip_missing_chunks): the caller's buffer stays as it was,
            # undefined (h5dump shows garbage).  h5fs shows the fill value
            # there, as for any unwritten storage (README): expect that.
            buf = np.zeros((35, 25), dtype="<i4")
            dsid.read(h5py.h5s.ALL, h5py.h5s.ALL, buf)
            # (sparse_write wrote chunk rows 0 and 2; H5Dget_chunk_info*
            # of libhdf5 1.10.8 misreport extensible arrays whose
            # unlimited dimension is not the first, so not asked)
            for r0 in (10, 30):
                buf[r0:r0 + 10, :] = 99
            fx.known[(os.path.basename(path), "/fill_never_%s" % pname)] = buf.tobytes()
        # empty, and grown from empty without a write: no index at all
        create(g, "empty", (0, 10), (4, 4), "<i2", (None, 10), PIPELINES[1][1], fill=5)
        ds = create(g, "grown_unwritten", (0, 10), (4, 4), "<i2", (None, None), PIPELINES[0][1], fill=-5)
        ds.resize((50, 13))
        # shrunk over written chunks, and grown back: libhdf5 drops the
        # chunks outside and fills the cut-off part of partial ones
        for pname, pipe in (PIPELINES[0], PIPELINES[2]):
            for regrow in (False, True):
                nm = "shrunk%s_%s" % ("_regrown" if regrow else "", pname)
                ds = create(g, nm, (40, 30), (7, 6), ">i4", (None, None) if "shuf" in pname else (None, 30),
                            pipe, fill=123456)
                ds[...] = values(rng, (40, 30), ">i4")
                ds.resize((23, 30 if "shuf" not in pname else 17))
                if regrow:
                    ds.resize((45, 30 if "shuf" not in pname else 29))
                    ds[41:43, 2:5] = values(rng, (2, 3), ">i4")
    # n-bit on a compound (reduced-precision members, full ones)
    with h5py.File(path, "a", libver=libver) as f:
        i20 = h5py.h5t.STD_I32LE.copy()
        i20.set_precision(20)
        i20.set_offset(4)
        ct = h5py.h5t.create(h5py.h5t.COMPOUND, 16)
        ct.insert(b"a", 0, i20)
        ct.insert(b"b", 4, h5py.h5t.STD_U8LE)
        ct.insert(b"c", 5, h5py.h5t.STD_I16BE)
        ct.insert(b"d", 8, h5py.h5t.IEEE_F64LE)
        shape = (41, 9)
        mem = np.zeros(shape, dtype=np.dtype({"names": ["a", "b", "c", "d"], "formats": ["<i4", "u1", ">i2", "<f8"],
                                              "offsets": [0, 4, 5, 8], "itemsize": 16}))
        mem["a"] = rng.integers(-(1 << 19), (1 << 19) - 1, shape)
        mem["b"] = rng.integers(0, 255, shape)
        mem["c"] = rng.integers(-30000, 30000, shape)
        mem["d"] = rng.standard_normal(shape)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_obj_track_times(False)
        dcpl.set_chunk((8, 4))
        dcpl.set_filter(h5py.h5z.FILTER_NBIT, 0)
        dsid = h5py.h5d.create(f.id, b"nbit_compound", ct, h5py.h5s.create_simple(shape), dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, mem, mtype=ct)


def huge_file(path, rng, fx, libver):
    """Terabyte extents with a few chunks written far out (64-bit chunk
    offsets in B-tree keys, large scaled coordinates): too large for h5py to
    read whole, so windows around the written chunks are expected instead."""
    name = os.path.basename(path)
    T40 = 1 << 40
    cases = [("huge_1d", (T40,), (1 << 16,), (None,), "<i2", 7,
              [(0,), (1 << 38,), (T40 - (1 << 16),), (T40 // 3 // (1 << 16) * (1 << 16),)])]
    if libver == "latest":
        cases.append(("huge_2d_ea", (1 << 21, 1 << 20), (64, 64), (None, 1 << 20), "u1", 0x11,
                      [(0, 0), (1 << 20, 1 << 19), ((1 << 21) - 64, (1 << 20) - 64)]))
    cases.append(("huge_2d_bt", (1 << 21, 1 << 20), (64, 64), (None, None), ">u4", 0xCAFE,
                  [(64, 128), (1 << 20, 1 << 19), ((1 << 21) - 64, (1 << 20) - 64)]))
    with new_file(path, libver) as f:
        for dname, shape, chunks, ms, dt, fill, origins in cases:
            for pname, pipe in (PIPELINES[0], PIPELINES[2]):
                nm = "%s_%s" % (dname, pname)
                ds = create(f, nm, shape, chunks, dt, ms, pipe, fill=fill)
                es = np.dtype(dt).itemsize
                wins = []
                for o in origins:
                    blk = values(rng, chunks, dt)
                    ds[tuple(slice(a, a + c) for a, c in zip(o, chunks))] = blk
                    fillb = np.array(fill, dtype=dt).tobytes()
                    if len(shape) == 1:
                        # from 100 elements before the chunk to 100 after
                        lo = max(0, o[0] - 100)
                        hi = min(shape[0], o[0] + chunks[0] + 100)
                        exp = fillb * (o[0] - lo) + blk.tobytes() + fillb * (hi - o[0] - chunks[0])
                        wins.append((lo * es, exp))
                    else:
                        # a row through the chunk, 10 elements either side
                        r = o[0] + 5
                        lo = max(0, o[1] - 10)
                        hi = min(shape[1], o[1] + chunks[1] + 10)
                        exp = fillb * (o[1] - lo) + blk[5].tobytes() + fillb * (hi - o[1] - chunks[1])
                        wins.append(((r * shape[1] + lo) * es, exp))
                # far from everything
                wins.append(((int(np.prod(shape, dtype=object)) // 2 + 12345) * es, fillb * 3000))
                fx.windows[(name, "/" + nm)] = (int(np.prod(shape, dtype=object)) * es, wins)


# ---- the layout flag "don't filter partial edge chunks" (libhdf5 via ctypes) ---------

def libhdf5():
    """The libhdf5 h5py uses, as loaded in this process."""
    with open("/proc/self/maps") as fh:
        paths = set(re.findall(r"(/\S*libhdf5[^/\s]*\.so[.\d]*)$", fh.read(), re.M))
    for p in sorted(paths):
        if "_hl" not in os.path.basename(p):
            lib = ctypes.CDLL(p)
            lib.H5Dget_chunk_index_type.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_int)]
            lib.H5Dget_chunk_index_type.restype = ctypes.c_int
            lib.H5Pset_chunk_opts.argtypes = [ctypes.c_int64, ctypes.c_uint]
            lib.H5Pset_chunk_opts.restype = ctypes.c_int
            return lib
    return None


def partial_edge_file(path, rng, fx):
    try:
        lib = libhdf5()
    except (OSError, AttributeError) as e:
        lib = None
        fx.notes.append("H5Pset_chunk_opts unavailable (%s)" % e)
    if lib is None:
        fx.notes.append("no libhdf5 found in the process: partial edge chunk case skipped")
        return False
    lzf = lambda p: p.set_filter(h5py.h5z.FILTER_LZF, h5py.h5z.FLAG_OPTIONAL)   # noqa: E731
    with new_file(path, "latest") as f:
        for name, shape, chunks, ms, dt, pipe in (
                ("farray_deflate", (45, 23), (8, 5), (45, 23), "<i4", PIPELINES[1][1]),
                ("earray_shuf_deflate", (1001,), (64,), (None,), "<f8", PIPELINES[2][1]),
                ("btree2_fletcher32", (19, 17, 5), (4, 4, 2), (None, 17, None), "<i2", PIPELINES[3][1]),
                ("single_deflate", (12, 9), (12, 9), (12, 9), "<u4", PIPELINES[1][1]),
                ("farray_lzf_sparse", (40, 30), (16, 16), (40, 30), "<i2", lzf)):
            try:
                ds = create(f, name, shape, chunks, dt, ms, pipe, chunk_opts=(lib, 0x0002),
                            fill=FILL.get(dt) if name.endswith("sparse") else None)
            except RuntimeError as e:
                fx.notes.append("%s: partial edge chunk case skipped" % e)
                return False
            if name.startswith("single"):
                ds.resize((10, 7))      # the single chunk becomes a partial edge chunk
                shape = ds.shape
            data = values(rng, shape, dt)
            if name.endswith("sparse"):
                sparse_write(ds, data)
            else:
                ds[...] = data
    return True


# ---- filters no h5py here can encode: chunks encoded here, stored raw -------------------

def _cfun(libname, fn, restype, argtypes):
    name = ctypes.util.find_library(libname)
    if not name:
        return None
    try:
        f = getattr(ctypes.CDLL(name), fn)
    except (OSError, AttributeError):
        return None
    f.restype = restype
    f.argtypes = argtypes
    return f


def _zstd():
    comp = _cfun("zstd", "ZSTD_compress", ctypes.c_size_t,
                 [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int])
    if comp is None:
        return None

    def enc(b):
        out = ctypes.create_string_buffer(len(b) + 1024)
        n = comp(out, len(out), b, len(b), 3)
        if n > len(out):
            raise RuntimeError("ZSTD_compress failed")
        return out.raw[:n]
    return enc


def _lz4():
    comp = _cfun("lz4", "LZ4_compress_default", ctypes.c_int,
                 [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int])
    if comp is None:
        return None

    def enc(b):
        out = ctypes.create_string_buffer(len(b) + len(b) // 255 + 64)
        n = comp(b, out, len(b), len(out))
        if n <= 0:
            raise RuntimeError("LZ4_compress_default failed")
        return out.raw[:n]
    return enc


def bitshuffle_block(b, es):
    """bshuf_trans_bit_elem of n elements (n % 8 == 0): one row per bit of
    the element (row 8*byte + bit), element i at bit i % 8 of byte i // 8."""
    a = np.frombuffer(b, dtype=np.uint8).reshape(-1, es)
    bits = np.unpackbits(a, axis=1, bitorder="little")     # (n, 8*es): column 8*j + k
    return np.packbits(bits.T, axis=1, bitorder="little").tobytes()


def bitshuffle_encode(raw, es, block, comp, enc):
    """bshuf_h5filter output: (12-byte header when compressed) blocks of
    `block` elements, a last block of a multiple of 8, the size % 8
    trailing elements copied."""
    n = len(raw) // es
    out = []
    if comp:
        out.append(len(raw).to_bytes(8, "big") + (block * es).to_bytes(4, "big"))
    pos = 0
    left = n
    while left >= 8:
        m = block if left >= block else left // 8 * 8
        t = bitshuffle_block(raw[pos:pos + m * es], es)
        if comp:
            c = enc(t)
            out.append(len(c).to_bytes(4, "big") + c)
        else:
            out.append(t)
        pos += m * es
        left -= m
    out.append(raw[pos:])
    return b"".join(out)


def direct_file(path, rng, fx):
    """zstd (32015) and bitshuffle (32008, plain / LZ4 / zstd) chunks encoded
    here, and an unknown optional filter every chunk skipped (mask bit)."""
    zstd, lz4 = _zstd(), _lz4()
    shape, chunks = (37, 23), (8, 8)
    made = []
    with new_file(path, "latest") as f:
        def add(name, dt, filters, encode, skip_mask=0, sparse=False):
            dt = np.dtype(dt)
            data = values(rng, shape, dt)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(chunks)
            dcpl.set_obj_track_times(False)
            for fid, flags, cd in filters:
                if fid == 32008 and h5py.h5z.filter_avail(32008):
                    # the bitshuffle plugin is installed (Debian's bitshuffle):
                    # its set_local puts version and element size first and
                    # takes only the user's block size and compression
                    cd = cd[3:]
                dcpl.set_filter(fid, flags, cd)
            fill = FILL.get(dt.str if dt.str in FILL else dt.str.replace("|", ""))
            if sparse and fill is not None:
                dcpl.set_fill_value(np.array(fill, dtype=dt))
            space = h5py.h5s.create_simple(shape, shape)
            dsid = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(dt), space, dcpl=dcpl)
            expect = np.full(shape, fill if (sparse and fill is not None) else 0, dtype=dt)
            for c0 in range(0, shape[0], chunks[0]):
                if sparse and (c0 // chunks[0]) % 2:
                    continue
                for c1 in range(0, shape[1], chunks[1]):
                    # a whole chunk, edge chunks padded as libhdf5 does
                    blk = np.zeros(chunks, dtype=dt)
                    part = data[c0:c0 + chunks[0], c1:c1 + chunks[1]]
                    blk[:part.shape[0], :part.shape[1]] = part
                    expect[c0:c0 + chunks[0], c1:c1 + chunks[1]] = part
                    dsid.write_direct_chunk((c0, c1), encode(blk.tobytes(), dt.itemsize), skip_mask)
            fx.known[(os.path.basename(path), "/" + name)] = expect.tobytes()
            made.append(name)

        if zstd:
            add("zstd", "<f8", [(32015, 1, (3,))], lambda b, es: zstd(b))
            add("zstd_sparse", "<i2", [(32015, 1, (3,))], lambda b, es: zstd(b), sparse=True)
            add("shuf_zstd", ">u4", [(2, 1, (4,)), (32015, 1, (3,))],
                lambda b, es: zstd(np.frombuffer(b, np.uint8).reshape(-1, es).T.tobytes()))
        else:
            fx.notes.append("zstd: libzstd not found for ctypes: no zstd fixture (corpus h5ex_d_zstd.h5 covers it)")
        for es, dt in ((4, "<i4"), (8, "<f8"), (2, ">i2"), (1, "u1")):
            # (0, 0): default block size; 16: blocks of 16 elements (64 in a chunk)
            add("bshuf_%s" % dt.strip("<>|"), dt, [(32008, 1, (0, 5, es, 0, 0))],
                lambda b, es: bitshuffle_encode(b, es, max(128, 8192 // es // 8 * 8), 0, None))
        add("bshuf_block16", "<i4", [(32008, 1, (0, 5, 4, 16, 0))],
            lambda b, es: bitshuffle_encode(b, es, 16, 0, None), sparse=True)
        if lz4:
            add("bshuf_lz4", "<f4", [(32008, 1, (0, 5, 4, 0, 2))],
                lambda b, es: bitshuffle_encode(b, es, max(128, 8192 // es // 8 * 8), 2, lz4))
            add("bshuf_lz4_block24", "<i2", [(32008, 1, (0, 5, 2, 24, 2))],
                lambda b, es: bitshuffle_encode(b, es, 24, 2, lz4))
        if zstd:
            add("bshuf_zstd", ">u4", [(32008, 1, (0, 5, 4, 0, 3, 3))],
                lambda b, es: bitshuffle_encode(b, es, max(128, 8192 // es // 8 * 8), 3, zstd))
        # an optional filter libhdf5 and h5fs do not know, skipped for every
        # chunk (filter mask bit 0), then deflate
        import zlib
        add("unknown_optional_skipped", "<i4", [(40000, 1, (7,)), (1, 0, (6,))],
            lambda b, es: zlib.compress(b, 6), skip_mask=0x1)
    return made


def unsupported_file(path, rng, fx):
    """A dataset h5fs must refuse with EIO: an optional filter nobody knows
    (id 40001) that was not skipped."""
    name = os.path.basename(path)
    with new_file(path, "latest") as f:
        f.create_dataset("plain", data=np.arange(100, dtype="<i4"), track_times=False)
        ds = create(f, "unknown_40001_earray", (40,), (8,), "u1", (None,), lambda p: p.set_filter(40001, 1, ()))
        for c0 in range(0, 40, 8):
            ds.id.write_direct_chunk((c0,), rng.bytes(8), 0)
        fx.eio[(name, "/unknown_40001_earray")] = "40001"


def _zfp_double(x):
    """H5Z-ZFP's generic client values carry a double as two 32-bit words."""
    return tuple(np.frombuffer(np.float64(x).tobytes(), "<u4").tolist())


def zfp_file(path, rng, fx):
    """ZFP (32013) chunks written by libhdf5 through Debian's H5Z-ZFP plugin
    (hdf5-filter-plugin-zfp-serial, in libhdf5's default plugin directory),
    given its generic client values (mode, 0, parameters): rate, precision,
    accuracy, expert and reversible modes; float, double, int32, int64;
    chunks of 1 to 4 dimensions of more than one element (one of size 1
    dropped), partial edge chunks. False when the plugin is missing."""
    if not h5py.h5z.filter_avail(32013):
        fx.notes.append("zfp: libhdf5 finds no H5Z-ZFP plugin (hdf5-filter-plugin-zfp-serial): no zfp fixtures")
        return False
    rate, prec, acc = (lambda r: (1, 0) + _zfp_double(r)), (lambda p: (2, 0, p)), \
        (lambda a: (3, 0) + _zfp_double(a))
    expert = (4, 0, 16, 600, 40, (1 << 32) - 1074)      # minbits, maxbits, maxprec, minexp -1074
    cases = [("rate8_f4_2d", "<f4", (61, 45), (16, 10), rate(8)),
             ("rate16_f8_1d", "<f8", (1001,), (128,), rate(16)),
             ("prec20_f8_3d", "<f8", (20, 17, 9), (8, 8, 4), prec(20)),
             ("prec12_f4_4d", "<f4", (6, 7, 5, 4), (3, 4, 5, 2), prec(12)),
             ("acc_f8_2d", "<f8", (61, 45), (16, 10), acc(0.01)),
             ("acc_f4_unity", "<f4", (40, 1, 30), (16, 1, 8), acc(1e-3)),
             ("expert_f8_2d", "<f8", (33, 20), (8, 8), expert),
             ("reversible_f4_2d", "<f4", (61, 45), (16, 10), (5,)),
             ("reversible_f8_3d", "<f8", (20, 17, 9), (8, 8, 4), (5,)),
             ("reversible_i4_1d", "<i4", (500,), (64,), (5,)),
             ("rate32_i8_2d", "<i8", (30, 30), (16, 16), rate(32))]
    with new_file(path, "latest") as f:
        for name, dt, shape, chunks, cd in cases:
            n = int(np.prod(shape))
            if np.dtype(dt).kind == "f":
                x = np.linspace(0, 20, n).reshape(shape)
                data = (np.sin(x) * 100 + rng.standard_normal(shape)).astype(dt)
            else:
                data = (np.arange(n).reshape(shape) * 7 % 1000 - 300).astype(dt)
            try:
                ds = f.create_dataset(name, shape=shape, chunks=chunks, dtype=dt, track_times=False,
                                      compression=32013, compression_opts=cd)
                ds[...] = data
            except Exception as e:
                fx.problems.append("zfp %s: h5py could not write it (%s)" % (name, str(e).splitlines()[0][:100]))
    return True


def lzo_file(path, fx):
    """LZO (305) chunks written by PyTables (complib='lzo'): a CArray, a
    shuffled EArray grown by appends, a Table with an array column.
    Importing tables registers its LZO filter with the libhdf5 h5py uses, so
    h5py reads them back. False without PyTables or its LZO."""
    try:
        import tables
    except ImportError as e:
        fx.notes.append("PyTables not importable (%s): no lzo fixtures" % e)
        return False
    if not tables.which_lib_version("lzo"):
        fx.notes.append("PyTables has no LZO: no lzo fixtures")
        return False
    lzo = tables.Filters(complevel=5, complib="lzo")
    with tables.open_file(path, "w") as f:
        f.create_carray("/", "carray", obj=(np.arange(5000, dtype="<i4") * 37 % 2001).reshape(100, 50),
                        filters=lzo, chunkshape=(16, 50))
        ea = f.create_earray("/", "earray_shuffle", atom=tables.Float64Atom(), shape=(0, 7),
                             filters=tables.Filters(complevel=1, complib="lzo", shuffle=True), chunkshape=(33, 7))
        for k in range(3):
            ea.append(np.sin(np.linspace(k, k + 1, 700)).reshape(100, 7))
        t = f.create_table("/", "table", {"a": tables.Int32Col(pos=0), "b": tables.Float64Col(shape=(3,), pos=1)},
                           filters=lzo, chunkshape=64)
        row = t.row
        for i in range(300):
            row["a"] = i * 3 - 100
            row["b"] = (i, i * 0.5, -i)
            row.append()
        t.flush()
    return True


def unsupported_v1_file(path, rng, fx):
    """A mandatory filter nobody knows (id 40000).  libhdf5 creates no
    dataset with an unregistered mandatory filter: made optional, then the
    flags of the filter pipeline message (IV.A.2.l, version 1, in a v1
    object header: no checksum) patched to 0."""
    name = os.path.basename(path)
    with new_file(path, "earliest") as f:
        f.create_dataset("plain", data=np.arange(100, dtype="<i4"), track_times=False)
        ds = create(f, "unknown_40000", (30, 20), (10, 10), "<i4", (30, 20),
                    lambda p: p.set_filter(40000, 1, (1, 2)))
        for c0 in range(0, 30, 10):
            for c1 in range(0, 20, 10):
                ds.id.write_direct_chunk((c0, c1), rng.bytes(150), 0)
    # id, name length 0, flags 1 (optional), 2 client values 1, 2
    pat = b"\x40\x9c\x00\x00\x01\x00\x02\x00\x01\x00\x00\x00\x02\x00\x00\x00"
    with open(path, "r+b") as fh:
        raw = fh.read()
        if raw.count(pat) != 1:
            fx.notes.append("filter 40000: pipeline message not found (%d matches): case skipped" % raw.count(pat))
            return False
        fh.seek(raw.index(pat) + 4)
        fh.write(b"\x00\x00")
    fx.eio[(name, "/unknown_40000")] = "40000"
    return True


def make(outdir):
    fx = Fixtures()
    for i, index in enumerate(("btree1", "single", "implicit", "farray", "earray", "btree2")):
        rng = np.random.default_rng(SEED + i)
        name = "idx_%s.h5" % index
        index_file(os.path.join(outdir, name), index, rng)
        check_index_file(os.path.join(outdir, name), index, fx)
        fx.files.append((name, "%s chunk index" % index))
    earray_paged(os.path.join(outdir, "earray_paged.h5"), np.random.default_rng(SEED + 10))
    fx.files.append(("earray_paged.h5", "extensible array with 140,000 chunks (data block pages)"))
    filter_file(os.path.join(outdir, "filters.h5"), np.random.default_rng(SEED + 11), fx)
    fx.files.append(("filters.h5", "lzf, lz4, bzip2, blosc, szip, scaleoffset, nbit"))
    for k, libver in enumerate(("latest", "earliest")):
        name = "extras_%s.h5" % libver
        extras_file(os.path.join(outdir, name), np.random.default_rng(SEED + 16 + k), fx, libver)
        fx.files.append((name, "big chunks, odd types, fill time never, empty, shrunk (%s)" % libver))
    for k, libver in enumerate(("latest", "earliest")):
        name = "huge_%s.h5" % libver
        huge_file(os.path.join(outdir, name), np.random.default_rng(SEED + 18 + k), fx, libver)
        fx.files.append((name, "terabyte extents, a few chunks far out (%s)" % libver))
    if partial_edge_file(os.path.join(outdir, "partial_edge.h5"), np.random.default_rng(SEED + 12), fx):
        fx.files.append(("partial_edge.h5", "partial edge chunks stored unfiltered"))
    direct_file(os.path.join(outdir, "direct.h5"), np.random.default_rng(SEED + 13), fx)
    fx.files.append(("direct.h5", "zstd, bitshuffle, a skipped optional filter (chunks encoded here)"))
    unsupported_file(os.path.join(outdir, "unsupported.h5"), np.random.default_rng(SEED + 14), fx)
    fx.files.append(("unsupported.h5", "an unknown optional filter not skipped: EIO"))
    if zfp_file(os.path.join(outdir, "zfp.h5"), np.random.default_rng(SEED + 20), fx):
        fx.files.append(("zfp.h5", "zfp (H5Z-ZFP): rate, precision, accuracy, expert, reversible; 1-4 dims"))
    if lzo_file(os.path.join(outdir, "lzo.h5"), fx):
        fx.files.append(("lzo.h5", "lzo written by PyTables: carray, shuffled earray, table"))
    if unsupported_v1_file(os.path.join(outdir, "unsupported_v1.h5"), np.random.default_rng(SEED + 15), fx):
        fx.files.append(("unsupported_v1.h5", "an unknown mandatory filter: EIO"))
    return fx


if __name__ == "__main__":
    import sys
    import time
    t0 = time.monotonic()
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    fx = make(out)
    for n, what in fx.files:
        print("%-20s %8d bytes  %s" % (n, os.path.getsize(os.path.join(out, n)), what))
    for n in fx.notes:
        print("note: " + n)
    for n in fx.problems:
        print("PROBLEM: " + n)
    print("%.1f s" % (time.monotonic() - t0))
