#!/usr/bin/python3
"""Combined references computed on with Dask distributed (issue 45 item 2),
as README and doc/h5fs-ls.1 show it: a distributed.LocalCluster of 2
worker processes (Debian python3-dask, python3-distributed,
python3-xarray) computes

- on dask.array.from_zarr("reference://", component="frames",
  storage_options={"fo": DOC}) of h5py frame stacks combined along axis
  0: the mean, the sum over frames and the total, equal to numpy's on
  h5py's concatenation of the files (sums exactly, the mean to rounding);
- on xarray.open_dataset("reference://", engine="zarr", chunks={}, ...)
  of a netCDF-4 time series combined along time: the mean over time and
  the total of temp, equal to numpy's on h5py's concatenation.
Both worker processes must have run tasks of each computation (its task
stream), so the references were opened in processes other than this one.
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
da, distributed, np, xr, _, _ = T.require_modules(
    "dask.array", "distributed", "numpy", "xarray", "zarr", "netCDF4",
    debian="python3-dask python3-distributed python3-xarray python3-zarr python3-netcdf4")
import make_concat_fixtures as F  # noqa: E402

fail = T.fail
WAIT = 120


def combined(wd, name, *args):
    rc, out, err = T.refs_run(*args, timeout=WAIT)
    if rc != 0:
        raise RuntimeError("h5fs-ls --refs %s: exit %d: %s" % (" ".join(args), rc, err))
    json.loads(out)
    return T.save_bytes(wd, name, out)


def on_workers(client, what, fn):
    """fn() computed on the cluster; both workers must run tasks of it."""
    with distributed.get_task_stream(client) as ts:
        out = fn()
    workers = {t["worker"] for t in ts.data}
    if len(workers) != 2:
        fail("%s: tasks ran on %d worker(s), not 2" % (what, len(workers)))
    return out


def main():
    wd = T.workdir("refs_dask")
    stacks = F.frames(os.path.join(wd, "frames"), [10] * 8)
    frames_doc = combined(wd, "frames.json", "--concat=0", os.path.join(wd, "frames"))
    ordered = F.nc_series(os.path.join(wd, "nc"))
    nc_doc = combined(wd, "nc.json", "--concat=time", "--noindex", os.path.join(wd, "nc"))
    want_frames = F.h5_concat(stacks, "frames")
    want_temp = F.h5_concat(ordered, "temp")

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        if len(pids) != 2 or os.getpid() in pids:
            fail("the cluster's workers are not 2 other processes: %s" % pids)

        a = da.from_zarr("reference://", component="frames", storage_options={"fo": frames_doc})
        if a.shape != want_frames.shape or a.dtype != want_frames.dtype:
            fail("from_zarr: %s %s, h5py %s %s" % (a.shape, a.dtype, want_frames.shape, want_frames.dtype))
        mean, fsum, total = on_workers(client, "frames", lambda: client.gather(
            client.compute([a.mean(), a.sum(axis=0), a.sum()])))
        if not np.isclose(mean, want_frames.mean(), rtol=1e-12, atol=0):
            fail("frames: mean %r, numpy %r" % (mean, want_frames.mean()))
        if not np.array_equal(fsum, want_frames.sum(axis=0)) or total != want_frames.sum():
            fail("frames: sums differ from numpy's")
        print("frames %s on 2 workers: mean %.6f, sums equal numpy's" % (a.shape, mean))

        ds = xr.open_dataset("reference://", engine="zarr", chunks={},
                             backend_kwargs={"consolidated": False, "storage_options": {"fo": nc_doc}})
        try:
            t = ds["temp"]
            if t.shape != want_temp.shape or t.chunks is None:
                fail("xarray: temp %s, chunks %s" % (t.shape, t.chunks))
            tmean, ttotal = on_workers(client, "xarray", lambda: [
                v.values for v in client.gather(client.compute([t.mean("time"), t.sum()]))])
            if not np.allclose(tmean, want_temp.mean(axis=0, dtype="f8"), rtol=1e-6):
                fail("xarray: mean over time differs from numpy's")
            if not np.isclose(ttotal, want_temp.sum(dtype="f8"), rtol=1e-6):
                fail("xarray: total %r, numpy %r" % (ttotal, want_temp.sum(dtype="f8")))
            print("xarray temp %s on 2 workers: mean over time and total equal numpy's" % (t.shape,))
        finally:
            ds.close()
    shutil.rmtree(wd)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
