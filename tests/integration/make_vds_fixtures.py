#!/usr/bin/python3
"""Fixtures of tests/integration/test_vds.py: virtual datasets written by
h5py (VirtualLayout / VirtualSource) and, for the forms h5py's high-level
API does not write, by h5py's low-level calls into libhdf5
(H5Pset_virtual with unlimited, printf-named, irregular and point
selections). Deterministic.

    make_vds_fixtures.py DIR     writes the files below into DIR

  src_0..3.h5       sources: /data int32 (4, 6, 5), /be float64 big-endian (8,)
  stack.h5          /stack (16, 6, 5) <- the four sources, fill -1;
                    /partial (20, 6, 5): a fifth block from a missing file
  strided.h5        hyperslabs with strides on both sides, a source
                    selection with blocks; /be a big-endian source
  samefile.h5       /raw and /view (every second row of /raw, reversed in
                    columns is not expressible; strided instead) in one file
  unlim.h5          /grow: unlimited mapping (block form) of /data in
                    grow_src.h5 (maxshape (None, 5)), 7 rows now;
                    /grow_count: unlimited count (blocks of 2 every 3)
  printf.h5         /frames <- f-%b.h5 (blocks of 3 rows, sources 0, 1, 2;
                    f-4.h5 exists too but f-3 is missing: not reached)
  irregular.h5      /irr: irregular (OR-ed) selections on both sides
                    (libhdf5 refuses point selections in mappings)
  many.h5           /many: 3000 one-element mappings
  loop_a.h5 loop_b.h5  A's VDS reads B's VDS, which reads A's: a cycle
  outside.h5        /bad: a source selection beyond the source's extent
  typed.h5          /mixed: source int16, virtual int32 (not converted)
"""
import os
import sys

import numpy as np


def src_values(i):
    return (np.arange(4 * 6 * 5, dtype=np.int32).reshape(4, 6, 5) + 1000 * (i + 1))


def make(d):
    import h5py
    from h5py import h5d, h5p, h5s, h5t

    os.makedirs(d, exist_ok=True)
    p = lambda n: os.path.join(d, n)  # noqa: E731
    for i in range(4):
        with h5py.File(p("src_%d.h5" % i), "w") as f:
            f.create_dataset("data", data=src_values(i), chunks=(2, 3, 5), compression="gzip")
            f.create_dataset("be", data=np.linspace(i, i + 1, 8), dtype=">f8")

    # stack: four whole sources one after another; a fifth block missing
    lay = h5py.VirtualLayout(shape=(16, 6, 5), dtype=np.int32)
    for i in range(4):
        lay[4 * i:4 * i + 4] = h5py.VirtualSource("src_%d.h5" % i, "data", shape=(4, 6, 5))
    part = h5py.VirtualLayout(shape=(20, 6, 5), dtype=np.int32)
    for i in range(4):
        part[4 * i:4 * i + 4] = h5py.VirtualSource("src_%d.h5" % i, "data", shape=(4, 6, 5))
    part[16:20] = h5py.VirtualSource("missing_source.h5", "data", shape=(4, 6, 5))
    with h5py.File(p("stack.h5"), "w", libver="latest") as f:
        f.create_virtual_dataset("stack", lay, fillvalue=-1)
        f.create_virtual_dataset("partial", part, fillvalue=-7)

    # strided selections on both sides
    lay = h5py.VirtualLayout(shape=(8, 12, 5), dtype=np.int32)
    s0 = h5py.VirtualSource("src_0.h5", "data", shape=(4, 6, 5))
    s1 = h5py.VirtualSource("src_1.h5", "data", shape=(4, 6, 5))
    lay[0:8:2, 0:12:2, :] = s0
    lay[1:8:2, 1:12:2, 1:5] = s1[:, :, 0:4]
    lay[1:8:2, 0:12:4, 0] = s1[:, 0:6:2, 4]
    be = h5py.VirtualLayout(shape=(32,), dtype="<f8")
    for i in range(4):
        be[i * 8:(i + 1) * 8] = h5py.VirtualSource("src_%d.h5" % i, "be", shape=(8,), dtype=">f8")
    with h5py.File(p("strided.h5"), "w") as f:
        f.create_virtual_dataset("strided", lay, fillvalue=0)
        f.create_virtual_dataset("be", be)

    # the same file
    with h5py.File(p("samefile.h5"), "w", libver="latest") as f:
        raw = f.create_dataset("raw", data=np.arange(10 * 7, dtype=np.int64).reshape(10, 7))
        lay = h5py.VirtualLayout(shape=(5, 7), dtype=np.int64)
        lay[:, :] = h5py.VirtualSource(raw)[0:10:2, :]
        f.create_virtual_dataset("view", lay)

    # unlimited mappings: the source grows after the VDS was written
    with h5py.File(p("grow_src.h5"), "w") as f:
        g = f.create_dataset("data", shape=(3, 5), maxshape=(None, 5), dtype=np.int32, chunks=(2, 5))
        g[...] = np.arange(15, dtype=np.int32).reshape(3, 5)
    dtype = h5t.NATIVE_INT32
    with h5py.File(p("unlim.h5"), "w", libver="latest") as f:
        for name, vstart, vstride, vcount, vblock in (("grow", 1, 1, 1, h5s.UNLIMITED),
                                                      ("grow_count", 0, 3, h5s.UNLIMITED, 2)):
            vspace = h5s.create_simple((1, 5), (h5s.UNLIMITED, 5))
            vspace.select_hyperslab((vstart, 0), (vcount, 1), stride=(vstride, 1), block=(vblock, 5))
            sspace = h5s.create_simple((3, 5), (h5s.UNLIMITED, 5))
            sspace.select_hyperslab((0, 0), (1, 1), block=(h5s.UNLIMITED, 5))
            dcpl = h5p.create(h5p.DATASET_CREATE)
            dcpl.set_virtual(vspace, b"grow_src.h5", b"data", sspace)
            space = h5s.create_simple((1, 5), (h5s.UNLIMITED, 5))
            h5d.create(f.id, name.encode(), dtype, space, dcpl=dcpl).close()
    with h5py.File(p("grow_src.h5"), "a") as f:
        g = f["data"]
        g.resize((7, 5))
        g[3:7] = np.arange(15, 35, dtype=np.int32).reshape(4, 5)

    # printf-named sources: block j <- f-j.h5
    for j in (0, 1, 2, 4):
        with h5py.File(p("f-%d.h5" % j), "w") as f:
            f.create_dataset("data", data=np.full((3, 4), 10 * j, dtype=np.int16) + np.arange(12, dtype=np.int16).reshape(3, 4))
    with h5py.File(p("printf.h5"), "w", libver="latest") as f:
        vspace = h5s.create_simple((3, 4), (h5s.UNLIMITED, 4))
        vspace.select_hyperslab((0, 0), (h5s.UNLIMITED, 1), stride=(3, 1), block=(3, 4))
        sspace = h5s.create_simple((3, 4), (3, 4))
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_virtual(vspace, b"f-%b.h5", b"data", sspace)
        h5d.create(f.id, b"frames", h5t.STD_I16LE, h5s.create_simple((3, 4), (h5s.UNLIMITED, 4)), dcpl=dcpl).close()

    # irregular selections (blocks OR-ed, rows interleaving) on both sides
    with h5py.File(p("irregular.h5"), "w", libver="latest") as f:
        dcpl = h5p.create(h5p.DATASET_CREATE)
        vspace = h5s.create_simple((6, 8))
        vspace.select_hyperslab((0, 0), (1, 1), block=(3, 3))
        vspace.select_hyperslab((1, 4), (1, 1), block=(4, 3), op=h5s.SELECT_OR)
        sspace = h5s.create_simple((4, 6, 5))
        sspace.select_hyperslab((1, 0, 0), (1, 1, 1), block=(1, 3, 7 - 2))   # 15 elements
        sspace.select_hyperslab((2, 0, 0), (1, 1, 1), block=(1, 6, 1), op=h5s.SELECT_OR)
        dcpl.set_virtual(vspace, b"src_2.h5", b"data", sspace)
        dcpl.set_fill_value(np.array([-2], dtype=np.int32))
        h5d.create(f.id, b"irr", h5t.STD_I32LE, h5s.create_simple((6, 8)), dcpl=dcpl).close()

    # 3000 one-element mappings
    with h5py.File(p("many.h5"), "w", libver="latest") as f:
        lay = h5py.VirtualLayout(shape=(3000,), dtype=np.int32)
        s = h5py.VirtualSource("src_0.h5", "data", shape=(4, 6, 5))
        for k in range(3000):
            a, b, c = (k * 7) % 4, (k * 5) % 6, k % 5
            lay[k] = s[a, b, c]
        f.create_virtual_dataset("many", lay)

    # a cycle of virtual datasets
    for me, other in (("loop_a.h5", "loop_b.h5"), ("loop_b.h5", "loop_a.h5")):
        with h5py.File(p(me), "w") as f:
            lay = h5py.VirtualLayout(shape=(4,), dtype=np.int32)
            lay[:] = h5py.VirtualSource(other, "v", shape=(4,))
            f.create_virtual_dataset("v", lay)

    # a source selection beyond the source (src_0 /data has 4 rows)
    with h5py.File(p("outside.h5"), "w") as f:
        lay = h5py.VirtualLayout(shape=(8, 6, 5), dtype=np.int32)
        lay[:] = h5py.VirtualSource("src_0.h5", "data", shape=(8, 6, 5))
        f.create_virtual_dataset("bad", lay)
        ok = h5py.VirtualLayout(shape=(4, 6, 5), dtype=np.int32)
        ok[:] = h5py.VirtualSource("src_0.h5", "data", shape=(4, 6, 5))
        f.create_virtual_dataset("good", ok)

    # a type h5fs does not convert
    with h5py.File(p("typed.h5"), "w") as f:
        f.create_dataset("short", data=np.arange(6, dtype=np.int16))
        lay = h5py.VirtualLayout(shape=(6,), dtype=np.int32)
        lay[:] = h5py.VirtualSource(f["short"])
        f.create_virtual_dataset("mixed", lay)
    return d


if __name__ == "__main__":
    make(sys.argv[1] if len(sys.argv) > 1 else ".")
