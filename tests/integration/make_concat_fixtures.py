#!/usr/bin/python3
"""Fixtures of h5fs-ls --refs --concat (issue 45; test_refs_concat.py,
test_refs_dask.py, test_refs_concat_s3.py), deterministic:

- nc_series(DIR): a netCDF-4 time series (python3-netcdf4, libnetcdf's own
  layout: dimension scales, a 1-D unlimited time coordinate in chunks of
  512 that no file fills), NFILES files of STEPS steps under shuffled
  names (their names' order is not time's), a variable temp(time, lat,
  lon) chunked one step a chunk, shuffled and deflated, lat and lon the
  same in every file, a global attribute;
- frames(DIR, counts): h5py frame stacks, one file per count, frames
  (count, 16, 16) uint16 in chunks of 2 frames (gzip), a scalar exposure
  the same in every file (h5py has no dimension scales here: axis 0,
  along which every dataset of more than 0 dimensions is concatenated);
- xr_days(DIR): per-day files as xarray writes them (Dataset.to_netcdf),
  each time coordinate in "hours since <that day>" (int64,
  proleptic_gregorian), hourly, a variable tas(time, lat), named so their
  order is not time's; time_units(DIR, ...): netCDF4 files of a time
  coordinate in given units, calendar and dtype (what --concat
  re-encodes, or refuses);
- the oracles: the same data read back with h5py, concatenated.
"""
import os
import random

import numpy as np

NFILES = 6
STEPS = 10
LAT, LON = 16, 20         # a chunk of temp: 1280 bytes, referenced (not inlined)


def nc_series(d, nfiles=NFILES, steps=STEPS, seed=3):
    """Returns the paths in time order."""
    import netCDF4
    os.makedirs(d, exist_ok=True)
    names = ["run%02d.nc" % i for i in range(nfiles)]
    random.Random(seed).shuffle(names)
    out = []
    for k, name in enumerate(names):
        p = os.path.join(d, name)
        with netCDF4.Dataset(p, "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", LAT)
            ds.createDimension("lon", LON)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2000-01-01"
            t.calendar = "standard"
            la = ds.createVariable("lat", "f4", ("lat",))
            la.units = "degrees_north"
            la[:] = np.linspace(-45, 45, LAT)
            lo = ds.createVariable("lon", "f4", ("lon",))
            lo[:] = np.linspace(0, 360, LON, endpoint=False)
            v = ds.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True,
                                  chunksizes=(1, LAT, LON))
            v.units = "K"
            t[:] = np.arange(steps) + steps * k
            rng = np.random.default_rng(seed * 100 + k)
            v[:] = (280 + 10 * rng.standard_normal((steps, LAT, LON))).astype("f4")
            ds.title = "h5fs concat test"
        out.append(p)
    return out


def frames(d, counts, prefix="stack", chunk=2, exposure=0.25, dtype="u2", chunks=None):
    """One file per count; returns the paths in name order."""
    import h5py
    os.makedirs(d, exist_ok=True)
    out = []
    for k, n in enumerate(counts):
        p = os.path.join(d, "%s%03d.h5" % (prefix, k))
        rng = np.random.default_rng(1000 + k)
        with h5py.File(p, "w") as f:
            f.create_dataset("frames", data=rng.integers(0, 60000, (n, 16, 16)).astype(dtype),
                             chunks=chunks or (chunk, 16, 16), compression="gzip")
            f.create_dataset("exposure", data=exposure)
            f.attrs["detector"] = "test"
        out.append(p)
    return out


def h5_concat(paths, name, axis=0):
    import h5py
    parts = []
    for p in paths:
        with h5py.File(p, "r") as f:
            parts.append(f[name][()])
    return np.concatenate(parts, axis=axis)


def h5_read(path, name):
    import h5py
    with h5py.File(path, "r") as f:
        return f[name][()]


DAYS = 3


def xr_days(d, ndays=DAYS):
    """Returns the paths in time order (named z0.nc for the last day)."""
    import pandas as pd
    import xarray as xr
    os.makedirs(d, exist_ok=True)
    out = []
    for k in range(ndays):
        day = pd.Timestamp("2021-03-01") + pd.Timedelta(days=k)
        t = pd.date_range(day, periods=24, freq="H")
        tas = (np.arange(24 * 4, dtype="f4").reshape(24, 4) + 100 * k)
        ds = xr.Dataset({"tas": (("time", "lat"), tas, {"units": "K"})},
                        coords={"time": t, "lat": ("lat", np.arange(4.0), {"units": "degrees_north"})})
        p = os.path.join(d, "z%d.nc" % (ndays - 1 - k))
        ds.to_netcdf(p)
        out.append(p)
    return out


def time_units(d, name, units, values, calendar="standard", dtype="i8", lat_units="degrees_north"):
    """One netCDF4 file: time(time) in units and calendar, lat(lat)."""
    import netCDF4
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, name)
    with netCDF4.Dataset(p, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 2)
        t = ds.createVariable("time", dtype, ("time",))
        t.units = units
        t.calendar = calendar
        t[:] = np.asarray(values, dtype)
        la = ds.createVariable("lat", "f4", ("lat",))
        la.units = lat_units
        la[:] = [0, 1]
    return p
