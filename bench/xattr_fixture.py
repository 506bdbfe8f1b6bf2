#!/usr/bin/python3
"""Write the fixture of bench/xattr_bench.py: one HDF5 file of N datasets
(default 50,000) in groups of 500, each with a few attributes of the kinds
real files carry (a variable-length string, as h5py writes str; a fixed
string; float and integer scalars; a small float array), written
deterministically (no object times, values from the index alone).

    xattr_fixture.py OUT.h5 [N]
"""
import sys

import h5py
import numpy as np

PER_GROUP = 500


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
    with h5py.File(out, "w") as f:
        f.attrs["title"] = "xattr benchmark: %d datasets" % n
        f.attrs["version"] = np.int32(3)
        g = None
        for i in range(n):
            if i % PER_GROUP == 0:
                g = f.create_group("g%03d" % (i // PER_GROUP))
                g.attrs["NX_class"] = "NXcollection"
                g.attrs["first"] = np.int64(i)
            d = g.create_dataset("d%05d" % i, data=np.arange(i % 7 + 1, dtype="<i4"), track_times=False)
            d.attrs["units"] = ["m", "s", "kg", "K", "mol"][i % 5]
            d.attrs["long_name"] = np.bytes_(b"quantity %d" % i)
            d.attrs["scale"] = np.float64(i) / 8.0
            d.attrs["count"] = np.int64(i * 3)
            d.attrs["range"] = np.array([i * 0.5, i * 0.5 + 1.25], dtype="<f4")


if __name__ == "__main__":
    main()
