#!/usr/bin/python3
"""Byte writes into chunked datasets with every filter h5fs encodes
(issue 48): lz4, bzip2, blosc (blosclz, lz4, zstd; byte and bit shuffle),
bitshuffle (alone and with LZ4), szip (nn, ec), zfp (rate, precision,
accuracy, reversible), lzf, zstd, scale-offset (integers, minimum bits,
D-scaled floats), n-bit, PyTables' lzo, and shuffle or deflate beside them.

For each: h5py (with Debian's plugins: hdf5plugin's lz4/bzip2/zfp, the
blosc plugin, bitshuffle.h5, h5py's own lzf, libhdf5's szip; PyTables for
its lzo) writes a
dataset with partial edge chunks; the mount reads exactly what h5py reads;
pwrite through the mount changes bytes crossing chunk edges; after the
unmount h5py reads exactly the changed bytes (within the declared accuracy
for zfp's accuracy mode and scale-offset's D-scale, libhdf5's own result
for the other lossy modes),
the chunks not touched keep their bytes and their place, and every touched
chunk is byte for byte what libhdf5 stores when h5py writes the same
values (lzf: our own packer, and deflate through libdeflate: decoded
alike; the filter mask alike). Values are compared as stored, in the
dataset's own type. N-bit datasets (their type has a precision and bit
offset) read as their values (issue 83 item 1) and take no writes: the
mount reads what h5py reads, an open for writing is EOPNOTSUPP and FILE
keeps its bytes.

zstd has no HDF5 plugin in Debian: its fixture chunks are compressed by
python3-zstandard and written with write_direct_chunk, and its chunks are
checked by decompressing them with python3-zstandard.

Rows appended (cat >>) to growable datasets with each filter: chunks
byte-identical to h5py's own appends. -o compress=NAME[:LEVEL] makes new datasets as h5py with the plugin
does, each filter's client values included.

Then the crash states of the chunk rewrite with each lossless filter
(test_overwrite_crash.py's enumeration: every prefix of every sync
interval and torn subsets; each image opens in h5py and holds the state
after some number of commits).
"""
import errno
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

try:
    import hdf5plugin  # noqa: E402  (registers Debian's plugin directory)
except ImportError:
    hdf5plugin = None
try:
    import bitshuffle.h5 as bsh5  # noqa: E402  (registers filter 32008)
except ImportError:
    bsh5 = None
try:
    import zstandard  # noqa: E402
except ImportError:
    zstandard = None
try:
    import tables  # noqa: E402  (registers PyTables' lzo filter 305 too)
except ImportError:
    tables = None

SHAPE, CHUNKS = (45, 38), (16, 12)      # partial edge chunks on both axes


def cases():
    """(name, dtype, kwargs for create_dataset, mode): mode "exact"
    (lossless, bit-exact to libhdf5), "lossy" (bit-exact to libhdf5 on the
    same decoded values), ("tol", x) (zfp accuracy), "lzf" (other bytes)."""
    out = [("lzf", "<i4", dict(compression="lzf"), "lzf"),
           ("shuf_lzf", "<f8", dict(compression="lzf", shuffle=True), "lzf"),
           ("szip_nn", "<i4", dict(compression="szip", compression_opts=("nn", 16)), "exact"),
           ("szip_ec_f8", "<f8", dict(compression="szip", compression_opts=("ec", 8)), "exact"),
           ("szip_i2", "<i2", dict(compression="szip", compression_opts=("nn", 8)), "exact"),
           ("so_i4", "<i4", dict(scaleoffset=0), "exact"),
           ("so_i2_fill", ">i2", dict(scaleoffset=0, fillvalue=-5), "exact"),
           ("so_u1_bits", "<u1", dict(scaleoffset=5), "lossy"),
           ("so_f4_d2", "<f4", dict(scaleoffset=2), ("tol", 0.5e-2)),
           ("so_f8_d3", ">f8", dict(scaleoffset=3, compression="gzip"), ("tol", 0.5e-3)),
           # n-bit: a type with a precision and offset reads converted
           # (values), and h5fs writes no bits back (run_nbit)
           ("nbit_u4", "<u4", dict(nbit=(h5py.h5t.STD_U32LE, 12, 2)), "lossy"),
           ("nbit_i2be", ">i2", dict(nbit=(h5py.h5t.STD_I16BE, 13, 1)), "lossy")]
    if hdf5plugin is not None:
        out += [("lz4", "<i4", dict(hdf5plugin.LZ4(nbytes=0)), "exact"),
                ("lz4_blocks", "<i2", dict(hdf5plugin.LZ4(nbytes=256)), "exact"),
                ("bzip2", "<f4", dict(hdf5plugin.BZip2(blocksize=5)), "exact"),
                ("shuf_bzip2", ">u4", dict(hdf5plugin.BZip2(blocksize=9), shuffle=True), "exact"),
                ("zfp_rate", "<f8", dict(hdf5plugin.Zfp(rate=12)), "lossy"),
                ("zfp_precision", "<f4", dict(hdf5plugin.Zfp(precision=16)), "lossy"),
                ("zfp_accuracy", "<f8", dict(hdf5plugin.Zfp(accuracy=0.01)), ("tol", 0.01)),
                ("zfp_reversible", "<i4", dict(hdf5plugin.Zfp(reversible=True)), "exact")]
        if h5py.h5z.filter_avail(32001):
            for cname, sh in (("blosclz", 1), ("lz4", 1), ("zstd", 2), ("lz4hc", 0)):
                out.append(("blosc_%s_%d" % (cname, sh), "<i4",
                            dict(hdf5plugin.Blosc(cname=cname, clevel=5, shuffle=sh)), "exact"))
    if tables is not None and tables.which_lib_version("lzo"):
        out += [("lzo", "<i4", dict(pytables="lzo"), "exact"),
                ("shuf_lzo", "<f8", dict(pytables="lzo", shuffle=True), "exact")]
    if bsh5 is not None:
        out += [("bitshuffle", "<i4", dict(compression=bsh5.H5FILTER, compression_opts=(0, 0)), "exact"),
                ("bitshuffle_lz4", "<u2", dict(compression=bsh5.H5FILTER,
                                               compression_opts=(0, bsh5.H5_COMPRESS_LZ4)), "exact"),
                ("bitshuffle_lz4_blk", "<f8", dict(compression=bsh5.H5FILTER,
                                                   compression_opts=(64, bsh5.H5_COMPRESS_LZ4)), "exact")]
    return out


def values(name, dtype):
    rng = np.random.default_rng(sum(map(ord, name)))
    n = int(np.prod(SHAPE))
    v = np.cumsum(rng.integers(-3, 4, n)).reshape(SHAPE)
    dt = np.dtype(dtype)
    return (v / 7).astype(dt) if dt.kind == "f" else (v % 3000).astype(dt)


def chunks_of(ds):
    """{chunk offset: (filter mask, file address, raw bytes)}"""
    out = {}
    for i in range(ds.id.get_num_chunks()):
        si = ds.id.get_chunk_info(i)
        mask, raw = ds.id.read_direct_chunk(si.chunk_offset)
        out[tuple(si.chunk_offset)] = (mask, si.byte_offset, raw)
    return out


def plan(name, nbytes, es, dtype=None):
    """Byte writes crossing element and chunk edges: (offset, bytes). With
    dtype (a lossy mode with a declared accuracy): whole elements of values
    like the dataset's, since random bytes make floats zfp's accuracy mode
    cannot keep (1e278 to 0.01)."""
    rng = random.Random(name)
    row = SHAPE[1] * es
    ops = [(15 * row + 11 * es - 3, 2 * es + 5),         # across a chunk edge in a row
           (31 * row + 20 * es + 1, row // 2),           # row 31 into row 32, across the chunk row edge
           (nbytes - 2 * es - 1, 2 * es + 1)]            # the partial edge chunk at the end
    if dtype is not None:
        return [(o - o % es, np.array([rng.uniform(-50, 50) for _ in range((k + es - 1) // es)], dtype).tobytes())
                for o, k in ops[:2]] + [(nbytes - 2 * es, np.array([1.5, -2.25], dtype).tobytes())]
    return [(o, bytes(rng.randrange(256) for _ in range(k))) for o, k in ops]


def touched(ops, es):
    """Chunk offsets whose elements the writes reach."""
    out = set()
    for off, b in ops:
        for e in range(off // es, (off + len(b) - 1) // es + 1):
            r, c = divmod(e, SHAPE[1])
            out.add((r // CHUNKS[0] * CHUNKS[0], c // CHUNKS[1] * CHUNKS[1]))
    return out


def make(path, name, dtype, kw):
    if "pytables" in kw:
        with tables.open_file(path, "w") as f:
            f.create_carray("/", "d", obj=values(name, dtype), chunkshape=CHUNKS,
                            filters=tables.Filters(complib=kw["pytables"], complevel=1,
                                                   shuffle=kw.get("shuffle", False)))
        return
    with h5py.File(path, "w") as f:
        if "nbit" in kw:
            base, prec, off = kw["nbit"]
            t = base.copy()
            t.set_precision(prec)
            t.set_offset(off)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(CHUNKS)
            dcpl.set_filter(5, 0, ())      # libhdf5's set_local describes the type
            h5py.h5d.create(f.id, b"d", t, h5py.h5s.create_simple(SHAPE), dcpl=dcpl)
            f["d"][...] = values(name, dtype)
        else:
            f.create_dataset("d", data=values(name, dtype), chunks=CHUNKS, **kw)


def run_nbit(work, src, name):
    """An n-bit dataset through the mount: h5py's values, no writes."""
    with open(src, "rb") as fh:
        before = fh.read()
    with h5py.File(src, "r") as f:
        want = f["d"][...]
    mnt = os.path.join(work, "mnt")
    with T.Mount(src, mnt) as m, m.watchdog(120):
        p = os.path.join(mnt, "d")
        got = np.fromfile(p, os.getxattr(p, "user.h5.dtype").decode()).reshape(SHAPE)
        if not np.array_equal(got, want):
            T.fail("%s: the mount reads other values than h5py" % name)
        for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND):
            T.expect_err("%s: open for writing (flags %#o)" % (name, flags),
                         lambda: os.close(os.open(p, flags)), (errno.EOPNOTSUPP,))
    with open(src, "rb") as fh:
        if fh.read() != before:
            T.fail("%s: FILE changed though every write was refused" % name)
    print("%s: reads h5py's values, writes refused EOPNOTSUPP, FILE unchanged" % name, flush=True)


def run(work, name, dtype, kw, mode):
    src = os.path.join(work, name + ".h5")
    ref = os.path.join(work, name + "-h5py.h5")
    try:
        make(src, name, dtype, kw)
    except (ValueError, OSError) as e:
        print("SKIP %s: h5py cannot write it here (%s)" % (name, e))
        return
    if "nbit" in kw:
        run_nbit(work, src, name)
        return
    shutil.copy(src, ref)
    with h5py.File(src, "r") as f:
        ds = f["d"]
        old = np.frombuffer(bytes(T.dataset_raw(ds)), np.dtype(dtype)).reshape(SHAPE)
        before = chunks_of(ds)
        deflated = any(ds.id.get_create_plist().get_filter(i)[0] == 1
                       for i in range(ds.id.get_create_plist().get_nfilters()))
        es = ds.dtype.itemsize
        if ds.id.get_create_plist().get_nfilters() == 0:
            T.fail("%s: no filter in the fixture" % name)
            return
    ops = plan(name, old.nbytes, es, old.dtype if isinstance(mode, tuple) else None)
    exp = bytearray(old.tobytes())
    for off, b in ops:
        exp[off:off + len(b)] = b
    exp_arr = np.frombuffer(bytes(exp), old.dtype).reshape(SHAPE)
    mnt = os.path.join(work, "mnt")
    with T.Mount(src, mnt) as m, m.watchdog(120):
        p = os.path.join(mnt, "d")
        with open(p, "rb") as fh:
            got = fh.read()
        if got != old.tobytes():
            T.fail("%s: the mount reads h5py's dataset differently (%s)" % (name, T.first_diff(got, old.tobytes())))
        fd = os.open(p, os.O_WRONLY)
        try:
            for off, b in ops:
                if os.pwrite(fd, b, off) != len(b):
                    T.fail("%s: short pwrite at %d" % (name, off))
        finally:
            os.close(fd)
        with open(p, "rb") as fh:
            got = fh.read()
        if mode == "exact" or mode == "lzf":
            if got != bytes(exp):
                T.fail("%s: read back through the mount differs (%s)" % (name, T.first_diff(got, bytes(exp))))
    # libhdf5 writes the same values into the touched chunks of its copy
    tch = touched(ops, es)
    with h5py.File(ref, "r+") as g:
        for r0, c0 in tch:
            sl = np.s_[r0:r0 + CHUNKS[0], c0:c0 + CHUNKS[1]]
            g["d"][sl] = exp_arr[sl]
    with h5py.File(src, "r") as f, h5py.File(ref, "r") as g:
        a = np.frombuffer(bytes(T.dataset_raw(f["d"])), np.dtype(dtype)).reshape(SHAPE)
        b = np.frombuffer(bytes(T.dataset_raw(g["d"])), np.dtype(dtype)).reshape(SHAPE)
        after, theirs = chunks_of(f["d"]), chunks_of(g["d"])
    if isinstance(mode, tuple):
        err = np.abs(a.astype(np.float64) - exp_arr.astype(np.float64)).max()
        if not err <= mode[1]:
            T.fail("%s: libhdf5 reads the written values with error %g, the dataset declares %g" % (name, err,
                                                                                                   mode[1]))
    elif a.tobytes() != b.tobytes():
        T.fail("%s: h5py reads h5fs's write differently from its own (%s)" % (name, T.first_diff(a.tobytes(),
                                                                                                  b.tobytes())))
    if mode in ("exact", "lzf") and a.tobytes() != bytes(exp):
        T.fail("%s: h5py reads %s" % (name, T.first_diff(a.tobytes(), bytes(exp))))
    if set(after) != set(before):
        T.fail("%s: chunks %s before, %s after" % (name, sorted(before), sorted(after)))
        return
    for k in before:
        if k not in tch:
            if after[k] != before[k]:
                T.fail("%s: chunk %s was not touched but changed (mask/address/bytes)" % (name, k))
            continue
        if after[k][0] != theirs[k][0]:
            T.fail("%s: chunk %s stored with mask %d, libhdf5's %d" % (name, k, after[k][0], theirs[k][0]))
        if mode != "lzf" and not deflated and after[k][2] != theirs[k][2]:
            T.fail("%s: chunk %s: %d bytes, libhdf5 encodes %d (%s)" % (
                name, k, len(after[k][2]), len(theirs[k][2]), T.first_diff(after[k][2], theirs[k][2])))
    print("%s: %d writes, %d of %d chunks re-encoded, libhdf5 reads them%s" % (
        name, len(ops), len(tch), len(before),
        "" if mode == "lzf" or deflated else ", byte-identical to its own"), flush=True)


def run_zstd(work):
    """zstd: chunks written by python3-zstandard, read back with it."""
    if zstandard is None:
        print("SKIP zstd: python3-zstandard not installed")
        return
    name, dtype, level = "zstd", "<i4", 5
    src = os.path.join(work, "zstd.h5")
    v = values(name, dtype)
    with h5py.File(src, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(CHUNKS)
        # optional: libhdf5 without the plugin accepts the pipeline
        dcpl.set_filter(32015, h5py.h5z.FLAG_OPTIONAL, (level,))
        h5py.h5d.create(f.id, b"d", h5py.h5t.py_create(np.dtype(dtype)), h5py.h5s.create_simple(SHAPE),
                        dcpl=dcpl)
        ds = f["d"]
        zc = zstandard.ZstdCompressor(level=level)
        for r0 in range(0, SHAPE[0], CHUNKS[0]):
            for c0 in range(0, SHAPE[1], CHUNKS[1]):
                blk = np.zeros(CHUNKS, v.dtype)
                part = v[r0:r0 + CHUNKS[0], c0:c0 + CHUNKS[1]]
                blk[:part.shape[0], :part.shape[1]] = part
                ds.id.write_direct_chunk((r0, c0), zc.compress(blk.tobytes()), filter_mask=0)
    with h5py.File(src, "r") as f:
        before = chunks_of(f["d"])
    es = v.dtype.itemsize
    ops = plan(name, v.nbytes, es)
    exp = bytearray(v.tobytes())
    for off, b in ops:
        exp[off:off + len(b)] = b
    exp_arr = np.frombuffer(bytes(exp), v.dtype).reshape(SHAPE)
    mnt = os.path.join(work, "mnt")
    with T.Mount(src, mnt) as m, m.watchdog(120):
        p = os.path.join(mnt, "d")
        with open(p, "rb") as fh:
            if fh.read() != v.tobytes():
                T.fail("zstd: the mount reads python-zstandard's chunks differently")
        fd = os.open(p, os.O_WRONLY)
        try:
            for off, b in ops:
                os.pwrite(fd, b, off)
        finally:
            os.close(fd)
    with h5py.File(src, "r") as f:
        after = chunks_of(f["d"])
    tch = touched(ops, es)
    zd = zstandard.ZstdDecompressor()
    same = 0
    for k, (mask, _, raw) in after.items():
        if k not in tch:
            if after[k] != before[k]:
                T.fail("zstd: chunk %s was not touched but changed" % (k,))
            continue
        if mask != 0:
            T.fail("zstd: chunk %s stored with mask %d" % (k, mask))
            continue
        blk = np.frombuffer(zd.decompress(raw), v.dtype).reshape(CHUNKS)
        want = exp_arr[k[0]:k[0] + CHUNKS[0], k[1]:k[1] + CHUNKS[1]]
        if not np.array_equal(blk[:want.shape[0], :want.shape[1]], want):
            T.fail("zstd: chunk %s decodes (python-zstandard) to other values" % (k,))
        same += raw == zstandard.ZstdCompressor(level=level).compress(blk.tobytes())
    print("zstd: %d of %d chunks re-encoded, python-zstandard decodes them (%d byte-identical to its own)"
          % (len(tch), len(before), same), flush=True)


def crash_states(work):
    """test_overwrite_crash.py's enumeration with each lossless filter."""
    import test_overwrite_crash as C
    helper = C.HELPER
    if not os.path.exists(helper):
        print("SKIP crash states: overwrite_trace not built")
        return
    filt = [("lzf", dict(compression="lzf")), ("szip", dict(compression="szip", compression_opts=("nn", 8))),
            ("scaleoffset", dict(scaleoffset=0))]
    if hdf5plugin is not None:
        filt += [("lz4", dict(hdf5plugin.LZ4(nbytes=64))), ("bzip2", dict(hdf5plugin.BZip2())),
                 ("zfp-rev", dict(hdf5plugin.Zfp(reversible=True)))]
        if h5py.h5z.filter_avail(32001):
            filt.append(("blosc", dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=2))))
    if bsh5 is not None:
        filt.append(("bitshuffle-lz4", dict(compression=bsh5.H5FILTER, compression_opts=(0, bsh5.H5_COMPRESS_LZ4))))
    rng = random.Random(48)
    total = 0
    for fname, kw in filt:
        for case in (("btree1-%s" % fname, "earliest", (40, 30), (None, 30), (6, 7), "<i4", kw, 20, False),
                     ("farray-%s" % fname, "latest", (40, 30), (40, 30), (6, 7), "<i4", kw, None, False)):
            total += C.run_case(work, case, rng)
    print("%d crash states checked with the new encoders" % total)


def appends(work):
    """cat >> into growable datasets with each filter: h5py reads every
    row, and each chunk is byte for byte what libhdf5 stores when h5py
    appends the same rows (lzf and deflate: the same values)."""
    specs = [("lzf", "<i4", dict(compression="lzf")), ("szip", "<i4", dict(compression="szip")),
             ("scaleoffset", "<i2", dict(scaleoffset=0)), ("shuf_lzf", "<f8", dict(compression="lzf", shuffle=True))]
    if hdf5plugin is not None:
        specs += [("lz4", "<i4", dict(hdf5plugin.LZ4())), ("bzip2", "<u2", dict(hdf5plugin.BZip2())),
                  ("zfp-rev", "<i4", dict(hdf5plugin.Zfp(reversible=True)))]
        if h5py.h5z.filter_avail(32001):
            specs.append(("blosc", "<f4", dict(hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=2))))
    if bsh5 is not None:
        specs.append(("bitshuffle", "<i4", dict(compression=bsh5.H5FILTER, compression_opts=(0, 2))))
    for name, dtype, kw in specs:
        path = os.path.join(work, "app-%s.h5" % name)
        v = values(name, dtype)
        with h5py.File(path, "w") as f:
            f.create_dataset("d", data=v[:20], maxshape=(None, SHAPE[1]), chunks=CHUNKS, **kw)
        ref = os.path.join(work, "app-%s-h5py.h5" % name)
        shutil.copy(path, ref)
        mnt = os.path.join(work, "mnt")
        with T.Mount(path, mnt) as m, m.watchdog(120):
            with open(os.path.join(mnt, "d"), "ab") as fh:
                fh.write(v[20:33].tobytes())
                fh.flush()
                fh.write(v[33:].tobytes())
        with h5py.File(ref, "r+") as g:
            g["d"].resize(SHAPE[0], axis=0)
            g["d"][20:] = v[20:]
        with h5py.File(path, "r") as f, h5py.File(ref, "r") as g:
            if f["d"].shape != SHAPE or f["d"][()].tobytes() != v.tobytes():
                T.fail("append %s: h5py reads %s rows, other values" % (name, f["d"].shape))
                continue
            mine, theirs = chunks_of(f["d"]), chunks_of(g["d"])
            exact = "lzf" not in name
            for k in theirs:
                if k not in mine or mine[k][0] != theirs[k][0] or (exact and mine[k][2] != theirs[k][2]):
                    T.fail("append %s: chunk %s differs from libhdf5's" % (name, k))
        print("append %s: rows appended, chunks %s libhdf5's" % (
            name, "byte-identical to" if "lzf" not in name else "decode as"), flush=True)


def new_datasets(work):
    """-o compress=NAME[:LEVEL]: np.save and cp through the mount make what
    h5py with the filter's plugin makes (chunk shape, filter id and client
    values, as set_local leaves them), libhdf5 reads the values (zstd:
    python3-zstandard decodes every chunk), and a byte write into one
    re-encodes its chunk."""
    specs = [("lzf", "lzf", dict(compression="lzf"))]
    if hdf5plugin is not None:
        specs += [("zstd:5", "zstd", dict(hdf5plugin.Zstd(clevel=5))), ("lz4", "lz4", dict(hdf5plugin.LZ4())),
                  ("bzip2:3", "bzip2", dict(hdf5plugin.BZip2(blocksize=3)))]
        if h5py.h5z.filter_avail(32001):
            specs.append(("blosc:7", "blosc", dict(hdf5plugin.Blosc(cname="lz4", clevel=7, shuffle=1))))
    if bsh5 is not None:
        specs.append(("bitshuffle", "bitshuffle", dict(compression=bsh5.H5FILTER,
                                                       compression_opts=(0, bsh5.H5_COMPRESS_LZ4))))
    rng = np.random.default_rng(48)
    arrays = {"f8": np.round(rng.standard_normal((301, 57)), 2).astype("<f8"),
              "u4": (np.arange(100003, dtype="<u4") // 3),
              "i2": rng.integers(-9, 9, (7, 31, 67)).astype(">i2")}
    for spec, fname, kw in specs:
        path = os.path.join(work, "new-%s.h5" % fname)
        with h5py.File(path, "w") as f:
            f.create_group("g")
        mnt = os.path.join(work, "mnt")
        blob = bytes((i * 7 + i // 251) & 0xFF for i in range(200001))
        with T.Mount(path, mnt, ["-o", "compress=" + spec]) as m, m.watchdog(120):
            for k, a in arrays.items():
                np.save(os.path.join(mnt, "g", k + ".npy"), a)
            with open(os.path.join(mnt, "g", "blob.bin"), "wb") as fh:
                fh.write(blob)
            fd = os.open(os.path.join(mnt, "g", "u4"), os.O_WRONLY)
            try:
                os.pwrite(fd, b"\x5a" * 13, 4001)
            finally:
                os.close(fd)
        want = dict(arrays)
        u4 = bytearray(arrays["u4"].tobytes())
        u4[4001:4014] = b"\x5a" * 13
        want["u4"] = np.frombuffer(bytes(u4), "<u4")
        want["blob.bin"] = np.frombuffer(blob, "u1")
        ref = os.path.join(work, "new-%s-h5py.h5" % fname)
        # h5py without the zstd plugin cannot make the reference: chunks
        # as it guesses them, the filter as hdf5plugin.Zstd describes it
        rkw = {} if fname == "zstd" else kw
        with h5py.File(ref, "w") as g:
            for k, a in want.items():
                g.create_dataset(k, data=a, maxshape=(None,) if k == "blob.bin" else None,
                                 chunks=(4096,) if k == "blob.bin" else True, **rkw)
        with h5py.File(path, "r") as f, h5py.File(ref, "r") as g:
            for k, a in want.items():
                d, e = f["g/" + k], g[k]
                pd, pe = d.id.get_create_plist(), e.id.get_create_plist()
                fd_ = [pd.get_filter(i)[:3] for i in range(pd.get_nfilters())]
                fe = [pe.get_filter(i)[:3] for i in range(pe.get_nfilters())]
                if fname == "zstd":
                    fe = [(32015, 1, (5,))]
                if k != "blob.bin" and d.chunks != e.chunks:
                    T.fail("compress=%s %s: chunks %s, h5py's %s" % (spec, k, d.chunks, e.chunks))
                # blosc records the chunk's bytes: the copy's chunk is ours
                if fd_ != fe and k != "blob.bin":
                    T.fail("compress=%s %s: pipeline %s, h5py+plugin makes %s" % (spec, k, fd_, fe))
                if not fd_ or fd_[0][0] != fe[0][0]:
                    T.fail("compress=%s %s: filters %s" % (spec, k, fd_))
                    continue
                if fname == "zstd":
                    zd = zstandard.ZstdDecompressor() if zstandard else None
                    for i in range(d.id.get_num_chunks()):
                        si = d.id.get_chunk_info(i)
                        mask, raw = d.id.read_direct_chunk(si.chunk_offset)
                        if mask or (zd and len(zd.decompress(raw)) != int(np.prod(d.chunks)) * d.dtype.itemsize):
                            T.fail("compress=zstd %s: chunk %s does not decode" % (k, si.chunk_offset))
                    continue
                if d[()].tobytes() != np.asarray(a).tobytes():
                    T.fail("compress=%s %s: libhdf5 reads other values" % (spec, k))
                if d.id.get_storage_size() >= a.nbytes and k in ("u4", "blob.bin"):
                    T.fail("compress=%s %s: stored %d bytes for %d" % (spec, k, d.id.get_storage_size(), a.nbytes))
        print("compress=%s: np.save, cp and a write make what h5py with the plugin makes" % spec, flush=True)


def main():
    work = tempfile.mkdtemp(prefix="filter-write-", dir=os.path.dirname(T.workdir("filter-write")))
    only = sys.argv[1:]
    try:
        for name, dtype, kw, mode in cases():
            if not only or name in only:
                run(work, name, dtype, kw, mode)
        if not only or "zstd" in only:
            run_zstd(work)
        if not only or "append" in only:
            appends(work)
        if not only or "new" in only:
            new_datasets(work)
        if not only or "crash" in only:
            crash_states(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
