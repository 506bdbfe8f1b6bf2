#!/usr/bin/python3
"""A collection for tests/integration/test_collection.py (`h5fs DIR MNT`),
written by h5py (deterministic):

    make_collection_fixtures.py DIR [NSMALL]

  fixtures/     make_fixtures.py: the kitchen sinks of every libver, a
                512-byte user block, external storage (its raw data files
                are plain files here), 10,000-link groups
  chunked/      make_chunked.py's one file per chunk index (btree1, single,
                implicit, farray, earray, btree2)
  links/        make_link_fixtures.py: external links between files,
                chains, loops
  vds/          make_vds_fixtures.py: virtual datasets and their sources
  dtypes/       make_dtype_fixtures.py
  many/aNN/bNN/fNNN.h5
                NSMALL (default 300) small files in nested folders, each a
                few datasets (contiguous, compact, chunked+gzip) and
                attributes, libver alternating, every 7th with a user block
                of 1024 or 4096 bytes
  xlink/top.h5  external links to files in other folders of the collection
                (../many/...: inside DIR, outside top.h5's own folder)
  odd/noext     an HDF5 file without a suffix
  odd/fake.h5   not HDF5 (text) although named .h5; odd/empty.h5 empty
  odd/README, odd/meta.json, odd/raw.bin
                plain files
  bad/corrupt.h5
                an HDF5 signature with a superblock that fails its checksum
  bad/badroot.h5
                a valid superblock whose root group address points past
                the end (earliest format: no checksum)
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SEED = 20261123


def small_file(path, i, rng):
    import h5py

    libver = "latest" if i % 2 else "earliest"
    ub = {}
    if i % 7 == 3:
        ub = {"userblock_size": 1024 if i % 2 else 4096}
    with h5py.File(path, "w", libver=libver, **ub) as f:
        f.attrs["index"] = np.int32(i)
        f.attrs["title"] = "small file %d" % i
        f.create_dataset("contig", data=rng.integers(0, 1000, size=16 + i % 5, dtype="<i4"), track_times=False)
        g = f.create_group("grp")
        g.attrs["scale"] = np.float64(i) / 4
        g.create_dataset("chunked", data=rng.standard_normal((12, 7)).astype("<f4"), chunks=(4, 7),
                         compression="gzip", track_times=False)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        dcpl.set_obj_track_times(False)
        data = np.arange(6, dtype="<u2") + i
        sp = h5py.h5s.create_simple(data.shape)
        ds = h5py.h5d.create(g.id, b"compact", h5py.h5t.py_create(data.dtype), sp, dcpl=dcpl)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
        if i % 3 == 0:
            f.create_dataset("grows", data=np.arange(8, dtype="<i8"), chunks=(4,), maxshape=(None,),
                             track_times=False)


def make(d, nsmall=300):
    import h5py

    import make_chunked
    import make_dtype_fixtures
    import make_fixtures
    import make_link_fixtures
    import make_vds_fixtures

    d = os.path.abspath(d)      # make_fixtures changes the working directory
    os.makedirs(d, exist_ok=True)
    sub = lambda *p: os.path.join(d, *p)  # noqa: E731
    for s in ("fixtures", "chunked", "links", "vds", "dtypes", "many", "xlink", "odd", "bad"):
        os.makedirs(sub(s), exist_ok=True)
    make_fixtures.make(sub("fixtures"))
    for i, index in enumerate(("btree1", "single", "implicit", "farray", "earray", "btree2")):
        make_chunked.index_file(sub("chunked", "idx_%s.h5" % index), index,
                                np.random.default_rng(make_chunked.SEED + i))
    make_link_fixtures.make(sub("links"))
    make_vds_fixtures.make(sub("vds"))
    make_dtype_fixtures.make(sub("dtypes"))
    rng = np.random.default_rng(SEED)
    for i in range(nsmall):
        folder = sub("many", "a%02d" % (i // 50), "b%02d" % (i // 10 % 5))
        os.makedirs(folder, exist_ok=True)
        small_file(os.path.join(folder, "f%03d.h5" % i), i, rng)
    with h5py.File(sub("xlink", "top.h5"), "w", libver="latest") as f:
        f["to_grp"] = h5py.ExternalLink("../many/a00/b00/f000.h5", "/grp")
        f["to_ds"] = h5py.ExternalLink("../many/a00/b01/f011.h5", "/contig")
        f["to_missing"] = h5py.ExternalLink("../many/nowhere.h5", "/x")
        f.create_dataset("own", data=np.arange(4, dtype="<i2"), track_times=False)
    with h5py.File(sub("odd", "noext"), "w") as f:
        f.create_dataset("x", data=np.arange(9, dtype="<f8"), track_times=False)
        f.attrs["what"] = "no suffix"
    with open(sub("odd", "fake.h5"), "w") as fh:
        fh.write("this is not an HDF5 file\n" * 40)
    open(sub("odd", "empty.h5"), "wb").close()
    with open(sub("odd", "README"), "w") as fh:
        fh.write("A collection of HDF5 files for h5fs's tests.\n")
    with open(sub("odd", "meta.json"), "w") as fh:
        json.dump({"files": nsmall, "seed": SEED}, fh, sort_keys=True)
    with open(sub("odd", "raw.bin"), "wb") as fh:
        fh.write(np.random.default_rng(SEED + 1).integers(0, 256, size=70000, dtype=np.uint8).tobytes())
    # a v2/v3 superblock carries a checksum over its first bytes: flip a bit
    # of the root group address
    with h5py.File(sub("bad", "corrupt.h5"), "w", libver="latest") as f:
        f["x"] = np.arange(10)
    blob = bytearray(open(sub("bad", "corrupt.h5"), "rb").read())
    blob[40] ^= 0x10
    open(sub("bad", "corrupt.h5"), "wb").write(bytes(blob))
    # a v0 superblock (no checksum) whose root symbol table entry names an
    # object header beyond the end of the file
    with h5py.File(sub("bad", "badroot.h5"), "w", libver="earliest") as f:
        f["x"] = np.arange(10)
    blob = bytearray(open(sub("bad", "badroot.h5"), "rb").read())
    # v0: signature 8, versions/sizes 16, base/freespace/eof/driver 4x8 =
    # 56, then the root symbol table entry: link name offset (8), object
    # header address (8)
    struct.pack_into("<Q", blob, 64, len(blob) + 4096)
    open(sub("bad", "badroot.h5"), "wb").write(bytes(blob))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: make_collection_fixtures.py DIR [NSMALL]")
    make(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 300)
