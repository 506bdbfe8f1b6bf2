"""Deterministic HDF5 fixtures for the mount tests, written with h5py.

    make(outdir) -> list of file names created in outdir

Every file holds the same "kitchen sink" (every datatype class, both byte
orders, scalar/null/empty spaces, compact/contiguous/unwritten/external
storage, soft/external/hard links, nested groups); they differ in the
format features libhdf5 uses for them (libver earliest/latest/v108,
a 512-byte user block).  Fixed seeds and no timestamps where h5py allows.
"""
import os

import h5py
import numpy as np

SEED = 20240601


def _compact(group, name, data):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    dcpl.set_obj_track_times(False)
    space = h5py.h5s.create_simple(data.shape) if data.shape else h5py.h5s.create(h5py.h5s.SCALAR)
    dsid = h5py.h5d.create(group.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))


def _bitfield(group, name, data, tid):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    space = h5py.h5s.create_simple(data.shape)
    dsid = h5py.h5d.create(group.id, name.encode(), tid, space, dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data, mtype=dsid.get_type())


def kitchen_sink(f, tag, outdir, rng):
    kw = {"track_times": False}
    f.attrs["fixture"] = tag
    t = f.create_group("types")
    # integers of every size, both byte orders
    for bo, bname in (("<", "le"), (">", "be")):
        for k in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"):
            dt = np.dtype(bo + k)
            info = np.iinfo(dt)
            data = rng.integers(info.min, info.max, size=37, dtype=dt.newbyteorder("="), endpoint=True)
            t.create_dataset("%s_%s" % (k, bname), data=data.astype(dt), **kw)
        for k in ("f2", "f4", "f8"):
            dt = np.dtype(bo + k)
            data = (rng.standard_normal(41) * 1000).astype(dt)
            t.create_dataset("%s_%s" % (k, bname), data=data, **kw)
    t.create_dataset("f4_2d", data=rng.standard_normal((13, 7)).astype("<f4"), **kw)
    t.create_dataset("i2_3d", data=rng.integers(-300, 300, (3, 4, 5)).astype(">i2"), **kw)
    cdt = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3"), ("d", [("x", ">u2"), ("y", "<f4")])])
    cdata = np.zeros(11, dtype=cdt)
    cdata["a"] = np.arange(11)
    cdata["b"] = rng.standard_normal(11)
    cdata["c"] = [b"ab", b"cde", b"f", b"", b"ghi", b"jk", b"l", b"mno", b"p", b"qr", b"s"]
    cdata["d"]["x"] = np.arange(11) * 7
    cdata["d"]["y"] = np.arange(11) / 3
    t.create_dataset("compound", data=cdata, **kw)
    t.create_dataset("complex", data=(rng.standard_normal(9) + 1j * rng.standard_normal(9)).astype("<c16"), **kw)
    t.create_dataset("str_fixed", data=np.array([b"alpha", b"be", b"gamma-ray", b""], dtype="S9"), **kw)
    u8 = t.create_dataset("str_fixed_utf8", shape=(2,), dtype=h5py.string_dtype("utf-8", 12), **kw)
    u8.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(["h\u00e9".encode(), "w\u00f6rld".encode()], dtype="S12"),
                mtype=u8.id.get_type())
    t.create_dataset("str_vlen", data=["one", "two", "three"], dtype=h5py.string_dtype(), **kw)
    arr = t.create_dataset("array", shape=(5,), dtype=np.dtype(("<f4", (2, 3))), **kw)
    arr.id.write(h5py.h5s.ALL, h5py.h5s.ALL, rng.standard_normal((5, 2, 3)).astype("<f4"),
                 mtype=arr.id.get_type())
    t.create_dataset("enum", data=np.array([0, 1, 2, 1, 0], dtype="i1"),
                     dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1"), **kw)
    t.create_dataset("bool", data=np.array([True, False, True]), **kw)
    t.create_dataset("opaque", data=np.frombuffer(rng.bytes(7 * 6), dtype="V7"), **kw)
    _bitfield(t, "bitfield16", rng.integers(0, 65535, 10).astype("<u2"), h5py.h5t.STD_B16LE)
    _bitfield(t, "bitfield8", rng.integers(0, 255, 10).astype("u1"), h5py.h5t.STD_B8LE)
    f.create_group("refs_target")
    t.create_dataset("objref", data=[f["types"].ref, f["refs_target"].ref], dtype=h5py.ref_dtype, **kw)
    t.create_dataset("vlen_int", data=[np.arange(3), np.arange(5)], dtype=h5py.vlen_dtype("i4"), **kw)

    s = f.create_group("spaces")
    s.create_dataset("scalar_i4", data=np.int32(-123456), **kw)
    s.create_dataset("scalar_str", data=np.bytes_(b"scalar!"), **kw)
    s.create_dataset("scalar_compound", data=cdata[3], **kw)
    s.create_dataset("null", data=h5py.Empty("<f4"), **kw)
    s.create_dataset("empty_1d", shape=(0,), dtype="<i4", **kw)
    s.create_dataset("empty_2d", shape=(0, 5), dtype="<f8", **kw)

    st = f.create_group("storage")
    _compact(st, "compact_f8", rng.standard_normal(20).astype("<f8"))
    _compact(st, "compact_scalar", np.array(7, dtype="<i8"))
    st.create_dataset("contiguous_big", data=rng.standard_normal(3 * 131072 + 17).astype("<f8"), **kw)
    st.create_dataset("unwritten_fill", shape=(100, 3), dtype="<i4", fillvalue=42, **kw)
    st.create_dataset("unwritten_zero", shape=(50,), dtype=">f8", **kw)
    ext = rng.integers(0, 1 << 30, 64).astype("<i4")
    e1, e2 = "%s_ext1.bin" % tag, "%s_ext2.bin" % tag
    st.create_dataset("external", shape=ext.shape, dtype=ext.dtype,
                      external=[(e1, 0, 100), (e2, 16, ext.nbytes - 100)], **kw)
    st["external"][...] = ext

    # links
    g = f.create_group("grp")
    sub = g.create_group("sub")
    d = sub.create_dataset("data", data=np.arange(10, dtype="<i8"), **kw)
    g["hard_to_data"] = d                       # same object twice
    f["grp_again"] = sub                        # a group at two paths
    g["soft_abs"] = h5py.SoftLink("/grp/sub/data")
    g["soft_rel"] = h5py.SoftLink("sub/data")
    g["soft_dangling"] = h5py.SoftLink("/no/such/object")
    g["soft_root"] = h5py.SoftLink("/")
    sub["soft_escape"] = h5py.SoftLink("../../../../types/u1_le")
    sub["soft_dotdot"] = h5py.SoftLink("../sub/./data")
    g["ext_link"] = h5py.ExternalLink("target.h5", "/data")
    f["types/named_type"] = np.dtype("<i4")     # committed datatype
    g["caf\u00e9 \u00fcml\u00e4ut"] = np.arange(3, dtype="u1")
    g["with space"] = np.arange(2, dtype="u1")

    # many groups: a deep chain and a wide level
    deep = f
    for i in range(20):
        deep = deep.create_group("d%02d" % i)
    deep.create_dataset("leaf", data=np.arange(4, dtype="<u4"), **kw)
    wide = f.create_group("wide")
    for i in range(200):
        wide.create_group("g%03d" % i)

    chunked(f, rng)
    return [e1, e2]


def _chunked_lowlevel(group, name, data, chunks, early=False, fill=None):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    dcpl.set_obj_track_times(False)
    if early:
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    if fill is not None:
        dcpl.set_fill_value(np.array(fill, dtype=data.dtype))
    space = h5py.h5s.create_simple(data.shape)
    dsid = h5py.h5d.create(group.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))


def chunked(f, rng):
    """Chunked storage with every chunk index the file's libver allows
    (v1 B-tree; or single chunk, implicit, fixed array, extensible array,
    v2 B-tree) and the common filters."""
    kw = {"track_times": False}
    c = f.create_group("chunked")
    a2 = rng.standard_normal((100, 37)).astype("<f4")
    c.create_dataset("gzip_shuffle_2d", data=a2, chunks=(16, 8), shuffle=True, compression="gzip", **kw)
    c.create_dataset("fletcher32", data=rng.integers(-9, 9, 1000).astype("<i4"), chunks=(128,),
                     fletcher32=True, **kw)
    c.create_dataset("plain_fixed", data=np.arange(1000, dtype=">i8"), chunks=(64,), **kw)
    c.create_dataset("ext_1unlim", data=np.arange(777, dtype="<u2"), chunks=(50,), maxshape=(None,), **kw)
    c.create_dataset("bt2_2unlim", data=rng.integers(0, 99, (40, 30)).astype("<i2"), chunks=(7, 6),
                     maxshape=(None, None), **kw)
    c.create_dataset("single", data=np.arange(60, dtype="<f8").reshape(6, 10), chunks=(6, 10), **kw)
    c.create_dataset("single_gzip", data=np.arange(60, dtype="<f8").reshape(6, 10), chunks=(6, 10),
                     compression="gzip", **kw)
    _chunked_lowlevel(c, "implicit_early", np.arange(90, dtype="<i4").reshape(9, 10), (4, 4), early=True)
    sp = c.create_dataset("sparse_fill", shape=(1000,), dtype="<i4", chunks=(100,), fillvalue=-1, **kw)
    sp[200:300] = np.arange(100)
    sp[950:] = 7
    c.create_dataset("empty_unlim", shape=(0,), maxshape=(None,), dtype="<f4", chunks=(10,), **kw)
    # a fixed maximum above the size: grows within it (v1 B-tree or fixed array)
    c.create_dataset("fixed_max_grow", data=np.arange(30, dtype="<i2"), chunks=(8,), maxshape=(100,), **kw)
    c.create_dataset("lzf", data=np.tile(np.arange(50, dtype="<i4"), 40), chunks=(200,), compression="lzf", **kw)
    c.create_dataset("scaleoffset", data=rng.integers(1000, 1100, 500).astype("<i4"), chunks=(100,),
                     scaleoffset=0, **kw)
    c.create_dataset("compound_gzip", data=np.zeros(50, dtype=[("a", "<i4"), ("b", "<f8")]), chunks=(16,),
                     compression="gzip", **kw)


def make(outdir):
    # external storage files are created relative to the working directory
    old = os.getcwd()
    os.chdir(outdir)
    try:
        return _make(outdir)
    finally:
        os.chdir(old)


def _make(outdir):
    rng = np.random.default_rng(SEED)
    files = []
    with h5py.File(os.path.join(outdir, "target.h5"), "w") as f:
        f.create_dataset("data", data=np.arange(5, dtype="<i4"), track_times=False)
    files.append("target.h5")
    variants = [
        ("earliest", {"libver": "earliest"}),
        ("latest", {"libver": "latest"}),
        ("v108", {"libver": ("v108", "v108")}),
        ("userblock", {"libver": "earliest", "userblock_size": 512}),
        ("latest_ordered", {"libver": "latest", "track_order": True}),
    ]
    for tag, opts in variants:
        name = "sink_%s.h5" % tag
        with h5py.File(os.path.join(outdir, name), "w", **opts) as f:
            kitchen_sink(f, tag, outdir, rng)
        files.append(name)
    # a 10,000-link group: dense link storage (fractal heap + v2 B-tree)
    # with libver latest, a symbol table (v1 B-tree + local heap) otherwise
    for tag, lv in (("latest", "latest"), ("earliest", "earliest")):
        name = "biggroup_%s.h5" % tag
        with h5py.File(os.path.join(outdir, name), "w", libver=lv) as f:
            big = f.create_group("big")
            shared = f.create_dataset("shared", data=np.arange(8, dtype="<u2"), track_times=False)
            for i in range(10000):
                if i % 500 == 0:
                    big.create_dataset("ds%05d" % i, data=np.full(3, i, dtype="<i4"), track_times=False)
                elif i % 3 == 0:
                    big["soft%05d" % i] = h5py.SoftLink("/shared")
                else:
                    big["hard%05d" % i] = shared
        files.append(name)
    return files


if __name__ == "__main__":
    import sys
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    for n in make(out):
        print(os.path.join(out, n))
