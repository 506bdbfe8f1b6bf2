#!/usr/bin/python3
"""The --refs recipes of README and h5fs-ls(1) run exactly as printed on
the stack the project installs (Debian's fsspec, zarr, xarray, Dask;
issue 57 item 3), on files with chunks never written, which have no
reference: a dataset made with a fill value and partly written, a netCDF
dimension without a coordinate variable, a variable partly written.

- README's zarr one-liner (python3 -c '...') and h5fs-ls(1)'s zarr
  lines, on run.json of a file holding images/gradient: they print the
  array h5py reads;
- README's xarray and Dask session (">>>" lines, a LocalCluster of 4
  workers), on era.json of h5fs-ls --refs --concat=time over two netCDF
  files: the mean and the sum they compute equal what netCDF4 reads.
"""
import os
import re
import shutil
import subprocess
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
try:
    import netCDF4  # noqa: F401
    import fsspec  # noqa: F401
    import zarr  # noqa: F401
    import xarray  # noqa: F401
    import dask.array  # noqa: F401
    import distributed  # noqa: F401
except ImportError as e:
    T.skip("the refs readers are not installed: %s" % e)
import h5py  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def readme():
    return open(os.path.join(T.SRCDIR, "README"), encoding="utf-8").read()


def man_ls():
    text = open(os.path.join(T.SRCDIR, "doc", "h5fs-ls.1"), encoding="utf-8").read()
    return text.replace("\\-", "-").replace("\\&", "").replace("\\(aq", "'")


def zarr_oneliner():
    """README's python3 -c '...' after h5fs-ls --refs ... > run.json."""
    m = re.search(r"\$ python3 -c '(import fsspec, zarr\n.*?)'\n", readme(), re.S)
    if not m:
        raise SystemExit("FAIL: README has no zarr one-liner")
    return "\n".join(ln.strip() for ln in m.group(1).split("\n"))


def man_zarr():
    m = re.search(r"Reading the references with zarr.*?\.RS\n(.*?)\n\.RE", man_ls(), re.S)
    if not m:
        raise SystemExit("FAIL: h5fs-ls(1) has no zarr lines")
    return m.group(1)


def session(text, after):
    """The '>>>' and '...' lines of the first session after `after`."""
    at = text.index(after)
    lines, started = [], False
    for ln in text[at:].split("\n"):
        s = ln.strip()
        if s.startswith(">>> ") or (started and s.startswith("... ")):
            started = True
            code = s[4:]
            lines.append(("    " + code) if s.startswith("... ") else code)
        elif started:
            break
    return "\n".join(lines).replace("(\n    ", "(").replace(",\n    ", ", ")


def run_py(code, cwd, what):
    r = subprocess.run([sys.executable, "-c", code], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=180)
    if r.returncode != 0:
        T.fail("%s: exit %d: %s" % (what, r.returncode, r.stderr.decode()[-800:]))
    return r.stdout.decode()


def make_run(path):
    with h5py.File(path, "w") as f:
        g = f.create_group("images")
        d = g.create_dataset("gradient", (6, 8), chunks=(2, 4), dtype="<i4", fillvalue=-1)
        d[2:4, :] = np.arange(16).reshape(2, 8)     # 4 of 6 chunks never written
        return None


def make_era(d):
    for k in range(2):
        with netCDF4.Dataset(os.path.join(d, "era_%d.nc" % k), "w") as nc:
            nc.createDimension("time", 3)
            nc.createDimension("x", 8)          # no coordinate variable: no chunk
            t = nc.createVariable("time", "f8", ("time",))
            t.units = "hours since 2000-01-01"
            t[:] = np.arange(3) + 3 * k
            v = nc.createVariable("t2m", "f4", ("time", "x"), chunksizes=(1, 4), fill_value=-9.0)
            v[0, :4] = np.arange(4) + 10 * k     # some chunks never written


def main():
    work = T.workdir("refs_recipe")
    run_h5 = os.path.join(work, "run.h5")
    make_run(run_h5)
    with open(os.path.join(work, "run.json"), "w") as fh:
        subprocess.run([T.H5FS_LS, "--refs", run_h5], stdout=fh, check=True, timeout=60)
    with h5py.File(run_h5, "r") as f:
        want = str(f["images/gradient"][:])
    np.set_printoptions()
    for what, code in (("README's zarr one-liner", zarr_oneliner()), ("h5fs-ls(1)'s zarr lines", man_zarr())):
        out = run_py(code, work, what).strip()
        if out != want:
            T.fail("%s printed %r, h5py reads %r" % (what, out[:300], want[:300]))
    era = os.path.join(work, "era")
    os.makedirs(era)
    make_era(era)
    with open(os.path.join(work, "era.json"), "w") as fh:
        subprocess.run([T.H5FS_LS, "--refs", "--concat=time", era], stdout=fh, check=True, timeout=60)
    code = session(readme(), "ReferenceFileSystem (no kerchunk needed")
    if "era.json" not in code or "LocalCluster" not in code:
        T.fail("README's xarray session not found: %r" % code)
    # what the session computes, printed
    code += "\nprint(repr(ds['t2m'].mean('time').values.tolist()))\nprint(repr(a.sum(axis=0).compute().tolist()))\n"
    code = "if __name__ == '__main__':\n" + "\n".join("    " + ln for ln in code.split("\n"))
    out = run_py(code, work, "README's xarray and Dask session").strip().split("\n")
    raw = np.concatenate([netCDF4.Dataset(os.path.join(era, "era_%d.nc" % k)).variables["t2m"][:].filled(-9.0)
                          for k in range(2)])
    masked = np.where(raw == -9.0, np.nan, raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # columns never written: all NaN
        mean = np.nanmean(masked, axis=0)
    if len(out) < 2 or not np.allclose(eval(out[-2].replace("nan", "float('nan')")), mean, equal_nan=True) or \
            eval(out[-1]) != raw.sum(axis=0).tolist():
        T.fail("README's session computed %r, netCDF4 reads mean %r sum %r" % (
            out[-2:], mean.tolist(), raw.sum(axis=0).tolist()))
    shutil.rmtree(work, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
