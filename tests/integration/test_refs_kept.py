#!/usr/bin/python3
"""h5fs-ls --refs keeps what Zarr holds (issue 83 item 6):

- a file that is not netCDF-4 (h5py's): its bool attributes (h5py's enum,
  scalar and arrays, on groups and datasets) are JSON true/false in the
  .zattrs, as kerchunk writes them, and zarr gives them back equal to
  h5py's; no "not written" line for them;
- a netCDF-4 file (netCDF4-python's, _NCProperties; a bool attribute added
  by h5py): netCDF-C's view, the bool left out with a line naming it;
  xarray opens the references as xr.open_dataset opens the file, and what
  it opens saves with to_netcdf and reads back so;
- a dataset never allocated (contiguous never written, chunked without a
  chunk) with a fill value of its own (h5py's fillvalue=): no chunk key at
  all and the fill value in .zarray, with the default --inline, with
  --inline=0 and with --fill=exact; zarr reads the fill value everywhere,
  as h5py does. One with some chunks written, or no fill value of its
  own, keeps netCDF's rule (fill_value null, unwritten chunks inline).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
try:
    import fsspec  # noqa: E402,F401
    import numpy as np  # noqa: E402
    import zarr  # noqa: E402,F401
except ImportError as e:
    T.skip("fsspec/zarr missing (Debian python3-fsspec python3-zarr python3-numcodecs): %s" % e)
import h5py  # noqa: E402
import test_refs as R  # noqa: E402  (open_refs, equal_arrays)

fail = T.fail


def refs(path, *opts):
    p = subprocess.run([T.H5FS_LS, "--refs", *opts, path], capture_output=True, timeout=60)
    if p.returncode != 0:
        fail("%s %s: exit %d: %s" % (path, " ".join(opts), p.returncode, p.stderr.decode()[-400:]))
    return json.loads(p.stdout or b"{}"), p.stderr.decode("utf-8", "replace")


def make_h5py(path):
    with h5py.File(path, "w") as f:
        f.attrs["flag"] = np.bool_(True)
        f.attrs["flags"] = np.array([True, False, True])
        f.attrs["n"] = 3
        d = f.create_dataset("data", data=np.arange(6, dtype="i2"))
        d.attrs["ok"] = np.bool_(False)
        d.attrs["grid"] = np.array([[True, False], [False, True]])
        d.attrs["units"] = "m"
        f.create_dataset("c_fill", shape=(5, 3), dtype="f8", fillvalue=-1.5)
        f.create_dataset("k_fill", shape=(9,), dtype="i4", fillvalue=7, chunks=(4,))
        f.create_dataset("k_fill_gz", shape=(9,), dtype="i4", fillvalue=-3, chunks=(4,), compression="gzip")
        k = f.create_dataset("k_part", shape=(8,), dtype="i4", fillvalue=5, chunks=(4,))
        k[:4] = [1, 2, 3, 4]
        f.create_dataset("c_nofill", shape=(4,), dtype="f8")


def check_h5py_file(path):
    for opts in ((), ("--inline=0",), ("--fill=exact",)):
        doc, err = refs(path, *opts)
        if not doc:
            continue
        r = doc["refs"]
        label = "%s %s" % (os.path.basename(path), " ".join(opts) or "(default)")
        # the JSON itself: true/false, as kerchunk writes them
        za = json.loads(r[".zattrs"])
        if za.get("flag") is not True or za.get("flags") != [True, False, True]:
            fail("%s: root .zattrs bools %r %r" % (label, za.get("flag"), za.get("flags")))
        zd = json.loads(r["data/.zattrs"])
        if zd.get("ok") is not False or zd.get("grid") != [[True, False], [False, True]]:
            fail("%s: data/.zattrs bools %r %r" % (label, zd.get("ok"), zd.get("grid")))
        if "a bool" in err:
            fail("%s: a bool reported left out: %s" % (label, err.strip()))
        g = R.open_refs(doc)
        with h5py.File(path, "r") as f:
            for obj, zobj in ((f, g), (f["data"], g["data"])):
                for k, v in obj.attrs.items():
                    got = zobj.attrs.get(k)
                    if got is None or np.asarray(got).tolist() != np.asarray(v).tolist():
                        fail("%s: attribute %s: zarr %r, h5py %r" % (label, k, got, v))
            for n, fillv in (("c_fill", -1.5), ("k_fill", 7), ("k_fill_gz", -3)):
                keys = [k for k in r if k.startswith(n + "/") and not k.split("/")[-1].startswith(".")]
                za = json.loads(r[n + "/.zarray"])
                if keys:
                    fail("%s: %s never allocated has chunk keys %s" % (label, n, keys))
                if za["fill_value"] != fillv:
                    fail("%s: %s: fill_value %r, its fill value %r" % (label, n, za["fill_value"], fillv))
                if not R.equal_arrays(g[n][...], f[n][()]):
                    fail("%s: %s: zarr reads %s, h5py %s" % (label, n, g[n][...], f[n][()]))
            # some chunks written, or no fill value of its own: netCDF's rule
            for n in ("k_part", "c_nofill"):
                if json.loads(r[n + "/.zarray"])["fill_value"] is not None:
                    fail("%s: %s: fill_value %r, expected null" % (label, n,
                                                                   json.loads(r[n + "/.zarray"])["fill_value"]))
                if not R.equal_arrays(g[n][...], f[n][()]):
                    fail("%s: %s: zarr reads %s, h5py %s" % (label, n, g[n][...], f[n][()]))
        print("ok   %s: bools kept as JSON booleans, never-allocated datasets by their fill value" % label,
              flush=True)


def check_netcdf(wd):
    try:
        import netCDF4
        import xarray as xr
    except ImportError as e:
        print("SKIP netCDF part: netCDF4/xarray missing (%s)" % e)
        return
    path = os.path.join(wd, "nc.nc")
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("x", 4)
        v = nc.createVariable("v", "f4", ("x",))
        v[:] = [1, 2, 3, 4]
        v.units = "K"
        nc.title = "t"
    with h5py.File(path, "a") as f:
        f.attrs["hflag"] = np.bool_(True)
        f["v"].attrs["vflag"] = np.bool_(False)
    doc, err = refs(path)
    if not doc:
        return
    za, zv = json.loads(doc["refs"][".zattrs"]), json.loads(doc["refs"]["v/.zattrs"])
    if "hflag" in za or "vflag" in zv:
        fail("nc.nc: a bool attribute of a netCDF-4 file is in the references")
    for name in ("hflag", "vflag"):
        if not any(name in ln and "a bool" in ln for ln in err.splitlines()):
            fail("nc.nc: no line says %s was left out: %r" % (name, err))
    j = os.path.join(wd, "nc.json")
    with open(j, "w") as fh:
        json.dump(doc, fh)
    want = xr.open_dataset(path).load()
    store = zarr.storage.KVStore(fsspec.filesystem("reference", fo=j).get_mapper(""))
    got = xr.open_dataset(store, engine="zarr", consolidated=False).load()
    try:
        xr.testing.assert_equal(got, want)
    except AssertionError as e:
        fail("nc.nc: xarray reads the references otherwise than the file: %s" % str(e)[:800])
        return
    out = os.path.join(wd, "nc_saved.nc")
    try:
        got.to_netcdf(out)
        back = xr.open_dataset(out).load()
        xr.testing.assert_equal(back, want)
        if back["v"].attrs.get("units") != "K" or back.attrs.get("title") != "t":
            fail("nc.nc: attributes lost in the saved copy: %r %r" % (back["v"].attrs, back.attrs))
    except Exception as e:
        fail("nc.nc: to_netcdf of the references' dataset: %r" % e)
        return
    print("ok   nc.nc: netCDF-4: bools left out with a line, xarray reads and saves as the file", flush=True)


def main():
    wd = T.workdir("refs_kept")
    path = os.path.join(wd, "plain.h5")
    make_h5py(path)
    check_h5py_file(path)
    check_netcdf(wd)
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
