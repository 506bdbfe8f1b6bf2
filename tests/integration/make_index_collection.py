#!/usr/bin/python3
"""Write a small collection for test_collection_index.py and
bench/collection_index_bench.py, deterministically (same bytes every run
for the same arguments):

  make_index_collection.py DIR [FOLDERS [FILES_PER_FOLDER]]

DIR/fNN/mNNN.h5: HDF5 files with a group, a contiguous and a chunked
(gzip) dataset, a soft link, scalar, string and array attributes; every
folder also holds notes.txt (not HDF5) and, in f00, an HDF5 file without
suffix (`nosuffix`) and one with a 512-byte user block (`ub.h5`)."""
import os
import sys

import h5py
import numpy as np


def member(path, seed, userblock=0, libver="earliest"):
    """libver: h5py's ("earliest" by default, what the tests compare;
    bench/collection_index_bench.py --scale alternates with "latest")."""
    rng = np.random.default_rng(seed)
    kw = {"userblock_size": userblock} if userblock else {}
    with h5py.File(path, "w", libver=libver, track_order=True, **kw) as f:
        f.attrs["title"] = "member %d" % seed
        f.attrs["seed"] = np.int64(seed)
        g = f.create_group("entry", track_order=True)
        g.attrs["NX_class"] = "NXentry"
        d = g.create_dataset("data", data=rng.integers(0, 1000, (16, 8), dtype="<i4"))
        d.attrs["units"] = "counts"
        d.attrs["scale"] = np.array([1.5, 2.5], dtype="<f8")
        c = g.create_dataset("chunked", data=np.arange(seed, seed + 200, dtype="<f4"), chunks=(50,),
                             compression="gzip")
        c.attrs["long_name"] = "ramp"
        f["time"] = np.float64(seed) / 10
        f["entry/alias"] = h5py.SoftLink("/entry/data")
    # fixed times: a regenerated collection has the same keys
    os.utime(path, ns=(1700000000000000000 + seed, 1700000000000000000 + seed))


def main():
    top = sys.argv[1]
    folders = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    os.makedirs(top, exist_ok=True)
    for i in range(folders):
        d = os.path.join(top, "f%02d" % i)
        os.makedirs(d, exist_ok=True)
        for j in range(per):
            member(os.path.join(d, "m%03d.h5" % j), i * 1000 + j)
        with open(os.path.join(d, "notes.txt"), "w") as fh:
            fh.write("folder %d\n" % i)
    member(os.path.join(top, "f00", "nosuffix"), 99999)
    member(os.path.join(top, "f00", "ub.h5"), 88888, userblock=512)


if __name__ == "__main__":
    main()
