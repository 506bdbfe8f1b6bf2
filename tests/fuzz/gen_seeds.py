"""Small h5py files that reach every structure the engine decodes, as seeds
for the fuzzer (tests/fuzz/build.sh copies them next to the corpus files).

    /usr/bin/python3 gen_seeds.py OUTDIR

Each file is kept small (a few KiB; the deep one 100 KiB) so libFuzzer
mutates structure, not bulk data: chunked datasets with every chunk index
(v1 B-tree, single chunk, implicit, fixed array paged and unpaged,
extensible array with super blocks -- its paged data blocks would need more
than 128 KiB of file --, v2 B-tree), filters, fill values, compact/
contiguous/external storage, old and new style groups (compact, dense with
fractal heap and v2 B-trees, indirect blocks, B-tree internal nodes), dense
and huge attributes, soft/external links, committed datatypes, a user block.
"""
import os
import sys

import h5py
import numpy as np


def chunked(outdir):
    # libver latest selects the v4 layout message with the new chunk indexes
    with h5py.File(os.path.join(outdir, "chunk_indexes.h5"), "w", libver="latest") as f:
        f.create_dataset("single", data=np.arange(20, dtype="<i4"), chunks=(20,))
        # implicit index: fixed size, no filter, space allocated early
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        h5py.h5d.create(f.id, b"implicit", h5py.h5t.STD_I16LE, h5py.h5s.create_simple((24,)), dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(24, dtype="<i2"))
        f.create_dataset("farray", data=np.arange(40, dtype="<u2"), chunks=(4,), compression="gzip")
        ea = f.create_dataset("earray", shape=(0,), maxshape=(None,), dtype="<i4", chunks=(2,))
        ea.resize((70,))
        ea[:] = np.arange(70)
        bt2 = f.create_dataset("btree2", shape=(6, 6), maxshape=(None, None), dtype="u1", chunks=(2, 2),
                               compression="gzip", shuffle=True)
        bt2[:] = np.arange(36, dtype="u1").reshape(6, 6)
    with h5py.File(os.path.join(outdir, "farray_paged.h5"), "w", libver="latest") as f:
        # more than 1024 chunks: the fixed array data block is paged
        f.create_dataset("paged", data=np.arange(1100, dtype="u1"), chunks=(1,))
    with h5py.File(os.path.join(outdir, "earray_sparse.h5"), "w", libver="latest") as f:
        d = f.create_dataset("ea", shape=(0,), maxshape=(None,), dtype="u1", chunks=(1,))
        d.resize((1100,))
        d[::7] = 1
    with h5py.File(os.path.join(outdir, "btree1_filters.h5"), "w") as f:
        f.create_dataset("deflate", data=np.arange(64, dtype=">f8").reshape(8, 8), chunks=(4, 4),
                         compression="gzip", shuffle=True, fletcher32=True)
        f.create_dataset("scaleoffset", data=np.arange(64, dtype="<i4"), chunks=(16,), scaleoffset=0)
        f.create_dataset("partial", data=np.arange(10, dtype="<i8"), chunks=(3,), fillvalue=-1)
        f.create_dataset("unwritten", shape=(5, 5), dtype="<i4", chunks=(2, 2), fillvalue=7)
        try:
            f.create_dataset("szip", data=np.arange(64, dtype="<i4"), chunks=(32,), compression="szip")
        except (ValueError, TypeError):
            pass
        try:
            f.create_dataset("lzf", data=np.arange(64, dtype="<i4"), chunks=(32,), compression="lzf")
        except (ValueError, TypeError):
            pass


def contiguous(outdir):
    with h5py.File(os.path.join(outdir, "storage.h5"), "w", userblock_size=512) as f:
        f.create_dataset("contig", data=np.arange(16, dtype="<u4"))
        f.create_dataset("empty_fill", shape=(8,), dtype="<f4", fillvalue=1.5)
        f.create_dataset("scalar", data=np.float64(3.25))
        f.create_dataset("null", data=h5py.Empty("f4"))
        f.create_dataset("str", data=np.array([b"ab", b"cde"], dtype="S4"))
        f.create_dataset("vlen", data=["x", "yz"], dtype=h5py.string_dtype())
        cdt = np.dtype([("a", "<i4"), ("b", ">f8"), ("c", "S3")])
        f.create_dataset("compound", data=np.zeros(3, dtype=cdt))
        f["named_t"] = np.dtype("<i8")
        f.create_dataset("uses_named", shape=(2,), dtype=f["named_t"])
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        sp = h5py.h5s.create_simple((4,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16LE, sp, dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(4, dtype="<i2"))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_external(b"seed_ext.bin", 0, 64)
        h5py.h5d.create(f.id, b"external", h5py.h5t.STD_U8LE, h5py.h5s.create_simple((64,)), dcpl=dcpl)
        f["soft"] = h5py.SoftLink("/contig")
        f["ext"] = h5py.ExternalLink("other.h5", "/x")
        f["hard_again"] = f["contig"]


def groups(outdir):
    with h5py.File(os.path.join(outdir, "groups_old.h5"), "w", libver="earliest") as f:
        g = f.create_group("old")
        for i in range(40):  # several symbol table nodes and B-tree splits
            g.create_group("g%02d" % i)
        f["old/g00"].attrs["a"] = 1
    with h5py.File(os.path.join(outdir, "groups_new.h5"), "w", libver="latest") as f:
        c = f.create_group("compact")
        for i in range(3):
            c.create_group("c%d" % i)
        d = f.create_group("dense", track_order=True)
        for i in range(20):  # past max_compact (8): fractal heap + name/corder v2 B-trees
            d.create_group("d%02d" % i)
        d["soft"] = h5py.SoftLink("/compact")
        d["loop"] = f["dense"]  # a hard link cycle back to the group
        d.attrs.create("x", 1)


def attributes(outdir):
    with h5py.File(os.path.join(outdir, "attrs.h5"), "w", libver="latest") as f:
        ds = f.create_dataset("ds", data=np.arange(3, dtype="<i4"))
        for i in range(12):  # dense attributes
            ds.attrs["attr%02d" % i] = np.arange(i + 1, dtype="<f8")
        ds.attrs["s"] = "text"
        ds.attrs["vs"] = np.array(["a", "bc"], dtype=h5py.string_dtype())
        g = f.create_group("g", track_order=True)
        g.attrs["compact"] = np.int16(-3)
        g.attrs["arr"] = np.arange(6).reshape(2, 3)
        for i in range(10):
            g.attrs["o%d" % i] = i
    with h5py.File(os.path.join(outdir, "attrs_v1.h5"), "w", libver="earliest") as f:
        f.attrs["root"] = b"abc"
        f.attrs["e"] = np.array([1, 2], dtype=h5py.enum_dtype({"A": 1, "B": 2}, basetype="i1"))


def deep(outdir):
    """Structures that need volume, kept under the fuzzer's -max_len (128
    KiB): fractal heap indirect blocks and huge objects, v2 B-tree internal
    nodes. Shared object header messages come from the corpus (h5py cannot
    make them)."""
    with h5py.File(os.path.join(outdir, "fheap_bt2_deep.h5"), "w", libver="latest") as f:
        g = f.create_group("many")
        for i in range(400):  # several direct blocks under an indirect block; B-tree depth 1
            g["link_with_a_longer_name_%04d" % i] = h5py.SoftLink("/target_%d" % i)
        a = f.create_group("huge_attr")
        for i in range(9):
            a.attrs["a%d" % i] = i
        a.attrs["big"] = np.zeros(70000, dtype="u1")  # above the heap's max managed size


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "seed_ext.bin"), "wb") as fp:
        fp.write(bytes(range(64)))
    chunked(outdir)
    contiguous(outdir)
    groups(outdir)
    attributes(outdir)
    deep(outdir)
    os.unlink(os.path.join(outdir, "seed_ext.bin"))


if __name__ == "__main__":
    main()
