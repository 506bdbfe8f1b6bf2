#!/usr/bin/python3
"""Fixtures of test_dense.py, deterministic:

    make_dense_fixtures.py DIR     writes the files below into DIR

  latest.h5  h5py libver="latest":
     /dense     20 groups (dense link storage, no creation order)
     /track     12 datasets, track_order=True (dense, creation order
                tracked and indexed: a type 6 index beside type 5)
     /full      8 groups: compact storage at its limit
     /          15 attributes (dense attribute storage)
     /track     12 attributes (dense, creation order indexed)
     /d         a dataset with 8 attributes: compact at its limit
  netcdf.h5  netCDF4 (NETCDF4 format): 12 variables and 14 global
             attributes (dense storage, creation order tracked and indexed,
             as netCDF-4 makes every group), a group /grp with 3 variables
"""
import os
import sys

import numpy as np


def make_latest(path):
    import h5py

    with h5py.File(path, "w", libver="latest") as f:
        g = f.create_group("dense")
        for i in range(20):
            g.create_group("k%02d" % i)
        t = f.create_group("track", track_order=True)
        for i in range(12):
            t["d%02d" % i] = np.arange(i + 1, dtype=np.int16)
        full = f.create_group("full")
        for i in range(8):
            full.create_group("f%d" % i)
        for i in range(15):
            f.attrs["a%02d" % i] = np.int32(i)
        for i in range(12):
            t.attrs["b%02d" % i] = "value %d" % i
        d = f.create_dataset("d", data=np.arange(6.0))
        for i in range(8):
            d.attrs["c%d" % i] = np.float64(i) / 4


def make_netcdf(path):
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("x", 4)
        for i in range(12):
            v = nc.createVariable("v%02d" % i, "f4", ("x",))
            v[:] = np.arange(4, dtype=np.float32) + i
        for i in range(14):
            nc.setncattr("g%02d" % i, "global %d" % i)
        grp = nc.createGroup("grp")
        for i in range(3):
            grp.createVariable("w%d" % i, "i4", ("x",))[:] = np.arange(4) * i


def make(d):
    os.makedirs(d, exist_ok=True)
    make_latest(os.path.join(d, "latest.h5"))
    make_netcdf(os.path.join(d, "netcdf.h5"))


if __name__ == "__main__":
    make(sys.argv[1])
