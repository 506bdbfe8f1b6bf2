#!/usr/bin/python3
"""Fixtures of test_owners.py written by xarray (deterministic):
python3 make_owner_fixtures.py DIR

xr_files(DIR) writes the same dataset with xarray's two netCDF engines,
netcdf4 (netCDF-C underneath) and h5netcdf (h5py underneath), as
xr_netcdf4.nc and xr_h5netcdf.nc: a dimension lat (3) with its coordinate
variable, an unlimited dimension time (4 now) with its coordinate
variable (int32, units "hours since 2000-01-01"), and a data variable
tas(time, lat) float32 with units. Returns {name: path}. Same contents
every run (h5dump equal); the h5netcdf file's bytes differ only by the
root group's object times, which h5py lets HDF5 record there.
"""
import os
import sys

import numpy as np

TIME = np.arange(4, dtype="<i4")
LAT = np.array([-10.0, 0.0, 10.0], dtype="<f4")
TAS = np.arange(12, dtype="<f4").reshape(4, 3) + 270


def dataset():
    import xarray as xr
    return xr.Dataset(
        {"tas": (("time", "lat"), TAS, {"units": "K"})},
        coords={"time": ("time", TIME, {"units": "hours since 2000-01-01"}),
                "lat": ("lat", LAT, {"units": "degrees_north"})},
        attrs={"title": "made by xarray"})


def xr_files(d):
    os.makedirs(d, exist_ok=True)
    out = {}
    ds = dataset()
    # no _FillValue: the file holds what the arrays hold; time kept as numbers
    enc = {k: {"_FillValue": None} for k in ("tas", "lat", "time")}
    for engine in ("netcdf4", "h5netcdf"):
        p = os.path.join(d, "xr_%s.nc" % engine)
        if os.path.exists(p):
            os.unlink(p)
        ds.to_netcdf(p, engine=engine, format="NETCDF4", unlimited_dims=["time"], encoding=enc)
        out["xr-" + engine] = p
    return out


if __name__ == "__main__":
    for name, p in xr_files(sys.argv[1]).items():
        print(name, p)
