#!/usr/bin/python3
"""Every netCDF dimension the mount makes has a _Netcdf4Dimid of its own,
however many files arrive at once (issue 83 item 2; doc/h5fs.1 MODIFYING,
"Files of netCDF-4").

A netCDF-4 file netCDF4-python wrote (one dimension x = 3), on a tmpfs,
mounted read-write. First the issue's case alone: `cp -r` of a tree of
.npy files in two groups (t2/a.npy (3,4), t2/sub/b.npy (5,4)): the new
groups' links wait in the new files' batch while their variables' new
dimensions are made, where a walk of FILE does not reach, and two
dimensions got one id (ncdump showed `double a(x, dim_0)` with dim_0 = 5,
netCDF4 and xarray failed "Start+count exceeds dimension bound"). Then
cp -r, tar x and rsync -a at once, each into groups of its own (nested),
twice over, and np.save into one group from four threads. After the
unmount: no two dimensions share an id, ncdump reads the whole file, and
netCDF4 and xarray read every variable with its values.
"""
import os
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
for tool in ("ncdump", "rsync", "tar"):
    if not shutil.which(tool):
        T.skip("%s not installed" % tool)
try:
    import netCDF4  # noqa: E402
    import xarray  # noqa: E402
except ImportError as e:
    T.skip("netCDF4 or xarray missing: %s" % e)
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def arrays(tag, k):
    """The .npy files of tree tag (relative path -> array): two groups,
    shapes sharing an axis length and not, several dtypes."""
    return {
        tag + "/a.npy": np.arange(12, dtype="<f8").reshape(3, 4) + k,
        tag + "/sub/b.npy": np.arange(20, dtype="<f8").reshape(5, 4) + 100 + k,
        tag + "/sub/c.npy": np.arange(14, dtype="<i4").reshape(7, 2) - k,
        tag + "/sub/deep/d.npy": (np.arange(6, dtype="<f4") * (k + 1)).reshape(6),
    }


def write_tree(top, files):
    for rel, a in files.items():
        os.makedirs(os.path.join(top, os.path.dirname(rel)), exist_ok=True)
        np.save(os.path.join(top, rel), a)


def run(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        T.fail("%s: exit %d: %s" % (what, r.returncode, r.stderr.decode(errors="replace")[-300:]))
    return r


def at_once(cmds):
    """Run the commands concurrently; each must exit 0 with nothing on
    stderr."""
    procs = [(subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE), c) for c in cmds]
    for p, c in procs:
        out, err = p.communicate(timeout=60)
        if p.returncode != 0 or err:
            T.fail("%s: exit %d: %s" % (" ".join(c[:2]), p.returncode, err.decode(errors="replace")[-300:]))


def check(name, path, want):
    """Unique ids; ncdump, netCDF4 and xarray read each variable of want
    (HDF5 path -> array)."""
    ids = {}
    with h5py.File(path, "r") as f:
        def visit(n, o):
            if "_Netcdf4Dimid" in o.attrs:
                ids.setdefault(int(o.attrs["_Netcdf4Dimid"]), []).append(n)
        f.visititems(visit)
    dup = {k: v for k, v in ids.items() if len(v) > 1}
    if dup:
        T.fail("%s: dimensions sharing a _Netcdf4Dimid: %s" % (name, dup))
    r = subprocess.run(["ncdump", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        T.fail("%s: ncdump exits %d: %s" % (name, r.returncode, r.stderr.decode(errors="replace")[-300:]))
    try:
        d = netCDF4.Dataset(path)
    except Exception as e:  # noqa: BLE001 - netCDF-C's error is the finding
        T.fail("%s: netCDF4 opens the file: %s" % (name, e))
        return
    with d:
        for hp, a in want.items():
            g, _, v = hp.rpartition("/")
            try:
                got = d[hp][:]
            except Exception as e:  # noqa: BLE001 - netCDF-C's error is the finding
                T.fail("%s: netCDF4 reads %s: %s" % (name, hp, e))
                continue
            if got.shape != a.shape or not np.array_equal(np.asarray(got), a):
                T.fail("%s: netCDF4 reads %s as %s %s, not %s" % (name, hp, got.shape, got, a.shape))
    groups = {}
    for hp, a in want.items():
        g, _, v = hp.rpartition("/")
        groups.setdefault(g or "/", {})[v] = a
    for g, vs in groups.items():
        try:
            with xarray.open_dataset(path, group=g, engine="netcdf4") as ds:
                for v, a in vs.items():
                    if not np.array_equal(ds[v].values, a):
                        T.fail("%s: xarray reads %s/%s as %s" % (name, g, v, ds[v].values))
        except Exception as e:  # noqa: BLE001
            T.fail("%s: xarray opens group %s: %s" % (name, g, e))


def main():
    wd = T.workdir("nc_dimids")
    disk = os.path.join(wd, "disk")
    with T.small_disk(disk, "64m"):
        src = os.path.join(disk, "src")
        mnt = os.path.join(wd, "mnt")
        path = os.path.join(disk, "f.nc")
        with netCDF4.Dataset(path, "w") as d:
            d.createDimension("x", 3)
            d.createVariable("x", "f8", ("x",))[:] = [1.0, 2.0, 3.0]
        want = {}

        # the case: one cp -r of two groups
        t2 = {"t2/a.npy": np.arange(12.).reshape(3, 4), "t2/sub/b.npy": np.arange(20.).reshape(5, 4)}
        write_tree(src, t2)
        want.update({k[:-4]: v for k, v in t2.items()})
        with T.Mount(path, mnt, opts=["-o", "rw"]) as m, m.watchdog(120):
            run(["cp", "-r", os.path.join(src, "t2"), mnt + "/"], "cp -r t2")
        check("cp -r", path, want)

        # cp -r, tar x and rsync -a at once into groups of their own,
        # twice, then np.save from four threads into one group
        for k, tags in enumerate((("c1", "t1", "r1"), ("c2", "t2x", "r2"))):
            trees = {tag: arrays(tag, 10 * k + i) for i, tag in enumerate(tags)}
            for files in trees.values():
                write_tree(src, files)
                want.update({rel[:-4]: a for rel, a in files.items()})
            tarball = os.path.join(disk, "t%d.tar" % k)
            run(["tar", "cf", tarball, "-C", src, tags[1]], "tar c")
            with T.Mount(path, mnt, opts=["-o", "rw"]) as m, m.watchdog(120):
                at_once([["cp", "-r", os.path.join(src, tags[0]), mnt + "/"],
                         ["tar", "xf", tarball, "-C", mnt],
                         ["rsync", "-a", os.path.join(src, tags[2]), mnt + "/"]])
            if m.returncode:
                T.fail("round %d: unmount exits %s" % (k, m.returncode))
            check("cp -r, tar x, rsync -a at once (round %d)" % k, path, want)

        with T.Mount(path, mnt, opts=["-o", "rw"]) as m, m.watchdog(120):
            os.mkdir(os.path.join(mnt, "np"))
            errs = []

            def save(i):
                try:
                    np.save(os.path.join(mnt, "np", "v%d.npy" % i), np.arange(8 + i, dtype="<f8"))
                except OSError as e:
                    errs.append(e)
            th = [threading.Thread(target=save, args=(i,)) for i in range(4)]
            for t in th:
                t.start()
            for t in th:
                t.join()
            for e in errs:
                T.fail("np.save from threads: %s" % e)
        want.update({"np/v%d" % i: np.arange(8 + i, dtype="<f8") for i in range(4)})
        check("np.save from four threads", path, want)
    shutil.rmtree(wd, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
