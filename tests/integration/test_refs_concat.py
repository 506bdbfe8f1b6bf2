#!/usr/bin/python3
"""h5fs-ls --refs --concat=DIM (issue 45): several files as one dataset,
read back through fsspec's ReferenceFileSystem with xarray and zarr
(Debian python3-xarray, python3-zarr, python3-fsspec) and compared with
h5py's reading of the files, concatenated:

- a netCDF-4 time series in a DIR, files named in shuffled order
  (make_concat_fixtures.nc_series): --concat=time orders them by their
  first time value; xarray.open_dataset("reference://", engine="zarr")
  gives temp, time, lat and lon equal to h5py's; the time coordinate is
  written by value (netCDF-4's 512-step chunks are never filled); a text
  file and a fake .h5 in DIR are skipped with one stderr line each;
- the same DIR again with its index: the same document, and a member
  whose bytes were changed with its size and mtime kept is not opened
  (the document still holds its old references; --noindex sees it);
- FILEs in the order given (time reversed): the document follows it;
- h5py frame stacks along axis 0 (--concat=0), the last file ending
  inside a chunk: zarr reads frames equal to h5py's concatenation and
  the scalar exposure equal to the first file's;
- CF time (issue 63): per-day files as xarray writes them, each in
  "hours since <that day>" (make_concat_fixtures.xr_days), as FILEs and
  as a DIR (ordered by the instant, not the number): the document opened
  with xarray (times decoded) equals xr.open_mfdataset of the files, the
  time coordinate in the first file's units; float days and hours
  re-encoded exactly; refused: a value with no exact form in the first
  file's units, another calendar, a constant's units that differ;
- refusals, each with a non-zero exit, nothing on stdout and a stderr
  line naming the file and the variable: a chunk shape that differs, a
  constant (netCDF-4 lat) whose values differ, a file before the last
  ending inside a chunk, a missing and an extra variable, another
  dtype; --concat without --refs is a usage error.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
fsspec, netCDF4, np, xr, zarr, _ = T.require_modules(
    "fsspec", "netCDF4", "numpy", "xarray", "zarr", "dask",
    debian="python3-xarray python3-zarr python3-fsspec python3-netcdf4 python3-dask")
import make_concat_fixtures as F  # noqa: E402
import test_refs as R  # noqa: E402  (Store)

fail = T.fail
WAIT = 120


run = T.refs_run
save = T.save_bytes


def open_xr(path):
    return xr.open_dataset("reference://", engine="zarr", mask_and_scale=False, decode_times=False,
                           backend_kwargs={"consolidated": False, "storage_options": {"fo": path}})


def open_zarr(doc):
    fs = fsspec.filesystem("reference", fo=doc)
    return zarr.open_group(zarr.storage.KVStore(R.Store(fs.get_mapper(""))), mode="r")


def check_series(what, path, ordered):
    """The document at path against h5py's reading of the files, in order."""
    ds = open_xr(path)
    try:
        for name, axis in (("temp", 0), ("time", 0)):
            want = F.h5_concat(ordered, name, axis)
            got = ds[name].values
            if got.dtype != want.dtype or not np.array_equal(got, want):
                fail("%s: %s: xarray reads %s %s, h5py %s %s" % (what, name, got.dtype, got.shape, want.dtype,
                                                                want.shape))
        for name in ("lat", "lon"):
            if not np.array_equal(ds[name].values, F.h5_read(ordered[0], name)):
                fail("%s: %s differs from the first file's" % (what, name))
        if ds["temp"].dims != ("time", "lat", "lon"):
            fail("%s: temp's dimensions are %s" % (what, ds["temp"].dims))
        if ds.attrs.get("title") != "h5fs concat test" or ds["time"].attrs.get("units") != "days since 2000-01-01":
            fail("%s: attributes: %r, time %r" % (what, ds.attrs, ds["time"].attrs))
        print("%s: temp %s, time %s equal h5py's" % (what, ds["temp"].shape, ds["time"].shape))
    finally:
        ds.close()


def refused(what, args, name, var, words):
    rc, out, err = run(*args)
    if rc == 0 or out:
        fail("%s: exit %d, %d bytes on stdout (expected a refusal and nothing)" % (what, rc, len(out)))
    lines = [ln for ln in err.splitlines() if name in ln and var in ln and words in ln]
    if len(lines) != 1:
        fail("%s: no one stderr line naming %s, %s and '%s': %r" % (what, name, var, words, err))
    else:
        print("%s: refused (exit %d): %s" % (what, rc, lines[0]))


def check_cf_time(wd, env):
    """Per-file CF time units re-encoded in the first file's (issue 63)."""
    d = os.path.join(wd, "days")
    days = F.xr_days(d)
    want = xr.open_mfdataset(days, combine="by_coords").load()
    for what, args in (("per-day FILEs", days), ("per-day DIR", [d])):
        rc, out, err = run("--concat=time", *args, env=env)
        if rc != 0:
            fail("%s: exit %d: %s" % (what, rc, err))
            continue
        got = xr.open_dataset("reference://", engine="zarr",
                              backend_kwargs={"consolidated": False,
                                              "storage_options": {"fo": save(wd, "days.json", out)}})
        try:
            got.load()
            try:
                xr.testing.assert_equal(got, want)
            except AssertionError as e:
                fail("%s: xarray reads other than open_mfdataset: %s" % (what, e))
            if got["time"].encoding.get("units") != "hours since 2021-03-01 00:00:00" or \
                    got["tas"].attrs.get("units") != "K":
                fail("%s: time's units %r, tas's attributes %r" % (what, got["time"].encoding.get("units"),
                                                                  got["tas"].attrs))
            print("%s: %d steps %s .. %s, equal to open_mfdataset's" % (what, got.sizes["time"],
                                                                      got["time"].values[0],
                                                                      got["time"].values[-1]))
        finally:
            got.close()
    # float days and hours: re-encoded exactly
    tu = os.path.join(wd, "tunits")
    f1 = F.time_units(tu, "f1.nc", "days since 2021-03-01", [0.5, 1.0], dtype="f8")
    f2 = F.time_units(tu, "f2.nc", "hours since 2021-03-03 00:00", [0, 6], dtype="f8")
    rc, out, err = run("--concat=time", f1, f2)
    if rc != 0:
        fail("float times: exit %d: %s" % (rc, err))
    else:
        ds = open_xr(save(wd, "f.json", out))
        if list(ds["time"].values) != [0.5, 1.0, 2.0, 2.25] or ds["time"].attrs["units"] != "days since 2021-03-01":
            fail("float times: %r %r" % (ds["time"].values, ds["time"].attrs))
        ds.close()
    a = F.time_units(tu, "a.nc", "days since 2021-03-01", [0, 1])
    b = F.time_units(tu, "b.nc", "hours since 2021-03-03", [0, 12])
    refused("a time with no exact form", ["--concat=time", a, b], b, "/time", "not a whole number")
    c = F.time_units(tu, "c.nc", "days since 2021-03-03", [0, 1], calendar="noleap")
    refused("another calendar", ["--concat=time", a, c], c, "/time", "two calendars")
    e = F.time_units(tu, "e.nc", "days since 2021-03-03", [0, 1], lat_units="degrees")
    refused("a constant's units", ["--concat=time", a, e], e, "/lat", "only CF time units")


def main():
    wd = T.workdir("refs_concat")
    env = dict(os.environ, HOME=wd, XDG_CACHE_HOME=os.path.join(wd, "cache"))

    # ---- a netCDF-4 time series in a DIR ----------------------------------------
    nc = os.path.join(wd, "nc")
    ordered = F.nc_series(nc)
    if sorted(ordered) == ordered:
        fail("fixture: the names are in time order (no test of the order)")
    with open(os.path.join(nc, "notes.txt"), "w") as fh:
        fh.write("not HDF5\n")
    with open(os.path.join(nc, "fake.h5"), "w") as fh:
        fh.write("a text file named like HDF5\n" * 40)
    rc, out, err = run("--concat=time", nc, env=env)
    if rc != 0:
        fail("DIR: exit %d: %s" % (rc, err))
    for bad in ("notes.txt", "fake.h5"):
        n = len([ln for ln in err.splitlines() if bad in ln and "skipped" in ln])
        if n != 1:
            fail("DIR: %d stderr lines skipping %s: %r" % (n, bad, err))
    if len(err.splitlines()) != 2:
        fail("DIR: stderr: %r" % err)
    doc = json.loads(out)
    refs = doc["refs"]
    tz = json.loads(refs["time/.zarray"])
    if tz["shape"] != [F.NFILES * F.STEPS] or tz["filters"] is not None or \
            not all(isinstance(refs[k], str) and refs[k].startswith("base64:") for k in refs
                    if k.startswith("time/") and not k.startswith("time/.")):
        fail("DIR: time is not written by value: %s" % refs["time/.zarray"])
    za = json.loads(refs["temp/.zarray"])
    if za["shape"] != [F.NFILES * F.STEPS, F.LAT, F.LON] or za["chunks"] != [1, F.LAT, F.LON]:
        fail("DIR: temp/.zarray %s" % refs["temp/.zarray"])
    keys = sorted(int(k.split("/")[1].split(".")[0]) for k in refs if k.startswith("temp/") and k[5] != ".")
    if keys != list(range(F.NFILES * F.STEPS)):
        fail("DIR: temp's chunk keys along time: %s" % keys)
    # the references name the files by absolute path, in time order
    urls = [refs["temp/%d.0.0" % (k * F.STEPS)][0] for k in range(F.NFILES)]
    if urls != [os.path.realpath(p) for p in ordered]:
        fail("DIR: files in the order %s, time's is %s" % (urls, ordered))
    doc_path = save(wd, "nc.json", out)
    check_series("DIR", doc_path, ordered)

    # ---- again, with the index the first run made ----------------------------------
    rc, out2, err2 = run("--concat=time", nc, env=env)
    if rc != 0 or out2 != out:
        fail("DIR, indexed: exit %d, document %s" % (rc, "the same" if out2 == out else "differs"))
    # a member's bytes changed with its size and mtime kept: the index's
    # record stands for it, so an indexed run does not open it
    victim = ordered[2]
    st = os.stat(victim)
    keep = open(victim, "rb").read()
    with open(victim, "r+b") as fh:
        fh.write(b"\0" * 8)          # no HDF5 signature any more
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    rc, out3, err3 = run("--concat=time", nc, env=env)
    if rc != 0 or out3 != out:
        fail("DIR, indexed, a member changed behind the index's back: exit %d, document %s: it was opened: %s"
             % (rc, "the same" if out3 == out else "differs", err3))
    rc, out4, err4 = run("--concat=time", "--noindex", nc, env=env)
    if out4 == out or os.path.basename(victim) not in err4:
        fail("--noindex: the changed member was not read (exit %d): %s" % (rc, err4))
    with open(victim, "wb") as fh:
        fh.write(keep)
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    print("indexed run: same document, the changed member not opened; --noindex reads it")

    # ---- FILEs in the order given --------------------------------------------------
    rev = list(reversed(ordered))
    rc, out, err = run("--concat=time", *rev)
    if rc != 0:
        fail("FILEs: exit %d: %s" % (rc, err))
    else:
        check_series("FILEs reversed", save(wd, "rev.json", out), rev)

    # ---- frame stacks along axis 0 -------------------------------------------------
    fr = os.path.join(wd, "frames")
    stacks = F.frames(fr, [10, 10, 10, 10, 7])
    rc, out, err = run("--concat=0", fr, env=env)
    if rc != 0:
        fail("frames: exit %d: %s" % (rc, err))
    else:
        g = open_zarr(json.loads(out))
        want = F.h5_concat(stacks, "frames")
        got = g["frames"][:]
        if got.shape != (47, 16, 16) or not np.array_equal(got, want):
            fail("frames: zarr reads %s, h5py %s" % (got.shape, want.shape))
        if g["exposure"][()] != F.h5_read(stacks[0], "exposure"):
            fail("frames: exposure differs from the first file's")
        if g.attrs.get("detector") != "test":
            fail("frames: attributes %r" % dict(g.attrs))
        print("frames: %s equal h5py's concatenation" % (got.shape,))

    # ---- CF time units per file -------------------------------------------------
    check_cf_time(wd, env)

    # ---- refusals -----------------------------------------------------------------
    bad = os.path.join(wd, "bad")
    a = F.frames(bad, [10, 10], prefix="a")
    b = F.frames(bad, [10], prefix="chunks5", chunks=(5, 16, 16))
    refused("chunk shape", ["--concat=0"] + a + b, b[0], "/frames", "chunk shape")
    c = F.frames(bad, [10], prefix="exposure", exposure=0.5)
    refused("differing scalar", ["--concat=0"] + a + c, c[0], "/exposure", "values differ")
    lat = F.nc_series(os.path.join(wd, "lat"), nfiles=3)
    with netCDF4.Dataset(lat[1], "a") as ds:
        ds["lat"][:] = ds["lat"][:] + 1
    refused("differing constant", ["--concat=time"] + lat, lat[1], "/lat", "values differ")
    d = F.frames(bad, [7], prefix="short")
    refused("a partial chunk before the last file", ["--concat=0", a[0], d[0], a[1]], d[0], "/frames",
            "whole number of chunks")
    e = F.frames(bad, [10], prefix="f8", dtype="f8")
    refused("dtype", ["--concat=0"] + a + e, e[0], "/frames", "dtype")
    import h5py
    with h5py.File(os.path.join(bad, "extra.h5"), "w") as f:
        f.create_dataset("frames", data=np.zeros((10, 16, 16), "u2"), chunks=(2, 16, 16), compression="gzip")
        f.create_dataset("exposure", data=F.h5_read(a[0], "exposure"))
        f.create_dataset("other", data=np.zeros(3))
    refused("an extra variable", ["--concat=0", a[0], os.path.join(bad, "extra.h5")],
            os.path.join(bad, "extra.h5"), "/other", "not in the first file")
    refused("a missing variable", ["--concat=0", os.path.join(bad, "extra.h5"), a[0]], a[0], "/other",
            "missing")
    p = subprocess.run([T.H5FS_LS, "--concat=0", a[0], a[1]], capture_output=True, timeout=WAIT)
    if p.returncode != 2:
        fail("--concat without --refs: exit %d" % p.returncode)
    shutil.rmtree(wd)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
