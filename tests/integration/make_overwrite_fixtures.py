#!/usr/bin/env python3
"""Deterministic fixtures of the overwrite tests (test_overwrite.py,
test_overwrite_crash.py): one dataset per layout and chunk index, filtered
and not, some chunks never written (fill value), plus datasets whose
bytes must be refused (VDS, external storage, a third-party filter
without an encoder).

    make_overwrite_fixtures.py OUT.h5 [--latest] [--big]

Without --latest (h5py's default format): contiguous (allocated and
never written), compact, v1 B-tree chunked datasets. With --latest
(libver="latest", layout v4): single chunk, implicit, fixed array,
extensible array, v2 B-tree. The values are a function of the name only.
"""
import sys

import numpy as np
import h5py

FILT = dict(compression="gzip", compression_opts=4, shuffle=True)
FLET = dict(compression="gzip", shuffle=True, fletcher32=True)
CMP = np.dtype([("a", "<i4"), ("b", "<f8")])    # 12-byte packed elements


def values(name, shape, dtype):
    rng = np.random.default_rng(sum(map(ord, name)) * 7919)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8)
    if dt.kind == "f":
        # keep NaNs out: compare by value too
        return (rng.standard_normal(n) * 100).astype(dt).reshape(shape)
    return raw.view(dt).reshape(shape)


def chunked(f, name, shape, chunks, dtype, maxshape=None, part=None, fill=None, **kw):
    d = f.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype, maxshape=maxshape,
                         fillvalue=fill, **kw)
    v = values(name, shape, dtype)
    if part is None:
        d[...] = v
    else:
        # only some chunks written: the rest read as the fill value
        d[part] = v[part]
    return d


def early(f, name, shape, chunks, dtype):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(np.dtype(dtype)),
                    h5py.h5s.create_simple(shape, shape), dcpl=dcpl)
    f[name][...] = values(name, shape, dtype)


def default(path, big):
    with h5py.File(path, "w") as f:
        f.create_dataset("contig", data=values("contig", (1000,), "<f8"))
        f.create_dataset("contig2d", data=values("contig2d", (37, 53), "<i4"))
        f.create_dataset("contig_cmp", data=values("contig_cmp", (40,), CMP))
        f.create_dataset("contig_empty", shape=(500,), dtype="<i2", fillvalue=7)
        # compact through the low-level API (h5py has no keyword for it)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact2", h5py.h5t.py_create(np.dtype("<u2")),
                        h5py.h5s.create_simple((40,)), dcpl=dcpl)
        f["compact2"][...] = values("compact2", (40,), "<u2")
        chunked(f, "bt1", (100, 60), (16, 7), "<f4", maxshape=(None, 60), part=np.s_[:40], fill=-1.5)
        chunked(f, "bt1_z", (100, 60), (10, 13), "<i4", maxshape=(None, 60), part=np.s_[20:70], fill=3, **FILT)
        chunked(f, "bt1_3d", (9, 10, 11), (4, 3, 5), "<i2", maxshape=(None, 10, 11), **FLET)
        chunked(f, "bt1_cmp", (40,), (7,), CMP, maxshape=(None,), **FILT)
        # many chunks, the middle ones written: inserts before and after them, splits
        chunked(f, "bt1_many", (4000,), (4,), "<i4", maxshape=(None,), part=np.s_[1000:2000])
        chunked(f, "lzf", (100,), (10,), "<i4", compression="lzf")
        chunked(f, "sof", (100,), (10,), "<i4", scaleoffset=0)
        # a third-party filter nobody here encodes (optional: libhdf5 stored
        # every chunk without it, mask bit set)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10,))
        dcpl.set_filter(33001, h5py.h5z.FLAG_OPTIONAL, (1, 2))
        h5py.h5d.create(f.id, b"unk", h5py.h5t.py_create(np.dtype("<i4")), h5py.h5s.create_simple((100,)),
                        dcpl=dcpl)
        f["unk"][...] = values("unk", (100,), "<i4")
        f.create_dataset("ext", shape=(100,), dtype="<i4", external=[("ext.bin", 0, 400)])
        lay = h5py.VirtualLayout(shape=(100,), dtype="<f8")
        lay[:] = h5py.VirtualSource(".", "contig", shape=(1000,))[:100]
        f.create_virtual_dataset("vds", lay)
        if big:
            chunked(f, "big_z", (4 << 20,), (1 << 16,), "<f8", maxshape=(None,), **FILT)


def latest(path, big):
    with h5py.File(path, "w", libver="latest") as f:
        chunked(f, "single", (20, 30), (20, 30), "<i4")
        chunked(f, "single_z", (20, 30), (20, 30), "<i4", **FILT)
        chunked(f, "single_empty", (20, 30), (20, 30), "<u1", part=np.s_[0:0], fill=9)
        early(f, "implicit", (50, 40), (8, 16), "<u2")
        chunked(f, "farray", (100, 60), (16, 7), "<f4", part=np.s_[:50], fill=2.5)
        chunked(f, "farray_z", (100, 60), (16, 7), "<i4", part=np.s_[30:], **FLET)
        chunked(f, "earray", (100, 60), (16, 7), "<f8", maxshape=(None, 60), part=np.s_[10:60], fill=-4.0)
        chunked(f, "earray_z", (1000,), (33,), "<i8", maxshape=(None,), part=np.s_[:500], **FILT)
        chunked(f, "btree2", (30, 40), (7, 9), "<i2", maxshape=(None, None), part=np.s_[:, :20])
        chunked(f, "btree2_z", (30, 40), (7, 9), "<i4", maxshape=(None, None), part=np.s_[5:25], **FLET)
        chunked(f, "btree2_many", (60, 400), (2, 4), "<i2", maxshape=(None, None), part=np.s_[:, 100:200])
        chunked(f, "earray_many", (4000,), (4,), "<u4", maxshape=(None,), part=np.s_[1000:2000], **FILT)
        if big:
            chunked(f, "big_ea", (4 << 20,), (1 << 16,), "<f8", maxshape=(None,), **FILT)


def main():
    args = sys.argv[1:]
    path = [a for a in args if not a.startswith("--")][0]
    (latest if "--latest" in args else default)(path, "--big" in args)


if __name__ == "__main__":
    main()
