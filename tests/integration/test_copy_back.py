#!/usr/bin/python3
"""Copies out of the mount and back in with the tools people copy with
give back each dataset's dtype, shape, values and attributes, whatever
order the tools set the description xattrs in (issue 83 item 3; doc/h5fs.1
MODIFYING, "Types set back").

FILE (h5py wrote it) and the copies out are on a tmpfs, which lists a
file's xattrs in its own order (the shape before the dtype). Datasets of
every kind h5fs makes: uint8 of rank 1, 2 (a 32x32 image, which came back
flat (1024,)) and 3, int8 and bool 2-D, integers of both byte orders,
floats, complex, a compound, fixed-length bytes, variable-length strings
1-D, 2-D and scalar, a scalar number, an empty array, a chunked and
gzip-compressed one; a group subtree with attributes on the group and
its datasets (one named h5.note: user.h5.attr.h5.note). Each tool copies
them out to the tmpfs and back into a new group of the mount: `cp -a`,
`tar --xattrs --xattrs-include='*'` (and `tar --xattrs` alone back in),
`rsync -aX`; each exits 0 with nothing on stderr, and h5py reads every
copy as the original (attributes as the text they showed: an xattr has
no type; the chunked one chunked as it was, gzip'd). Then by hand: `setfattr -n user.h5.shape -v 32,32` on a new
flat uint8 file of 1024 bytes makes it (32,32); the shape then the dtype
on a closed file (float64, and int8 after a shape |u1 fits); setting a
description to the value it shows succeeds; a second, other dtype is a
conflict refused (EPERM) with its reason logged once; a shape the bytes
do not fill is refused at the set.

A netCDF-4 file netCDF4-python wrote (a coordinate variable x, an
unlimited t, v(t, x) and a group's variable, with attributes): the same
three tools copy the variables out and back into new groups; the copies
are variables again on netCDF dimensions (their dimension lists, scale
references and dimension ids are the mount's to make: a copied
_Netcdf4Dimid or CLASS would make a second dimension of one id or a scale
of no variable), no bytes' dimension is left behind (rsync -X removes
the bytes' DIMENSION_LIST its source has not), every dimension id is
its own, and ncdump and netCDF4 read each copy with its values and
attributes.
"""
import errno
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
for tool in ("tar", "rsync", "cp", "setfattr"):
    if not shutil.which(tool):
        T.skip("%s not installed" % tool)
import h5py  # noqa: E402
import numpy as np  # noqa: E402

NAMES = ["img", "flat", "cube", "i8", "mask", "be", "f4", "gz", "cplx", "rec", "fixed", "words", "grid",
         "note", "scal", "empty", "grp"]


def make(path):
    with h5py.File(path, "w") as f:
        f["img"] = (np.arange(1024) % 251).astype("u1").reshape(32, 32)
        f["img"].attrs["units"] = "counts"
        f["flat"] = np.arange(100, dtype="u1")
        f["cube"] = np.arange(24, dtype="u1").reshape(2, 3, 4)
        f["i8"] = (np.arange(16) - 8).astype("i1").reshape(4, 4)
        f["mask"] = np.array([[True, False, True], [False, True, False]])
        f["be"] = np.arange(15, dtype=">i4").reshape(3, 5)
        f["f4"] = np.linspace(0, 1, 7, dtype="<f4")
        f["f4"].attrs["scale"] = np.float64(0.5)
        f.create_dataset("gz", data=np.arange(60.).reshape(6, 10), chunks=(3, 5), compression="gzip")
        f["cplx"] = (np.arange(6) + 1j).astype("<c16").reshape(2, 3)
        f["rec"] = np.array([(i, i / 4) for i in range(5)], dtype=[("x", "<i4"), ("y", "<f8")])
        f["fixed"] = np.array([b"ab", b"cdefg", b"", b"h"], dtype="S5")
        f["words"] = np.array(["alpha", "beta", "gamma"], dtype=h5py.string_dtype())
        f["grid"] = np.array([["a", "b"], ["c", "d"]], dtype=h5py.string_dtype())
        f["note"] = "a scalar text"
        f["scal"] = np.float64(2.5)
        f["empty"] = np.zeros((0, 3))
        g = f.create_group("grp")
        g.attrs["title"] = "a subtree"
        g["v"] = np.arange(5, dtype="<f4")
        g["v"].attrs["units"] = "m"
        g["v"].attrs["h5.note"] = "escaped name"
        g["m"] = np.arange(12, dtype="<i8").reshape(3, 4)
        sub = g.create_group("sub")
        sub["img"] = np.arange(64, dtype="u1").reshape(8, 8)


def attrs_of(o):
    return sorted((k, v.decode() if isinstance(v, bytes) else str(v)) for k, v in o.attrs.items())


def same(a, b):
    if a.dtype.kind == "O":
        return a.shape == b.shape and \
            [x.decode() if isinstance(x, bytes) else x for x in np.asarray(a[()]).ravel().tolist()] == \
            [x.decode() if isinstance(x, bytes) else x for x in np.asarray(b[()]).ravel().tolist()]
    return a.dtype == b.dtype and a.shape == b.shape and np.asarray(a[()]).tobytes() == np.asarray(b[()]).tobytes()


def compare(f, orig, copy, what):
    """copy (a group or dataset of f) as orig, recursively."""
    o, c = f[orig], f.get(copy)
    if c is None:
        T.fail("%s: %s missing" % (what, copy))
        return
    if attrs_of(c) != attrs_of(o):
        T.fail("%s: %s attributes %r, the original's %r" % (what, copy, attrs_of(c), attrs_of(o)))
    if isinstance(o, h5py.Group):
        if sorted(c) != sorted(o):
            T.fail("%s: %s holds %r, the original %r" % (what, copy, sorted(c), sorted(o)))
        for k in o:
            compare(f, orig + "/" + k, copy + "/" + k, what)
    elif not isinstance(c, h5py.Dataset) or not same(o, c):
        T.fail("%s: %s is %s %s, the original %s %s" % (what, copy, getattr(c, "dtype", "?"), getattr(c, "shape", "?"),
                                                        o.dtype, o.shape))


def run(cmd, what, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0 or r.stderr:
        T.fail("%s: exit %d: %s" % (what, r.returncode, r.stderr.decode(errors="replace")[-600:]))


def nc_round_trip(disk, mnt):
    try:
        import netCDF4
    except ImportError:
        print("netCDF round trip: netCDF4 missing: skipped")
        return
    if not shutil.which("ncdump"):
        print("netCDF round trip: ncdump missing: skipped")
        return
    path = os.path.join(disk, "f.nc")
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("x", 4)
        d.createDimension("t", None)
        x = d.createVariable("x", "f8", ("x",))
        x[:] = [1.0, 2.0, 3.0, 4.0]
        x.units = "m"
        v = d.createVariable("v", "f4", ("t", "x"))
        v[:] = np.arange(8, dtype="f4").reshape(2, 4)
        v.long_name = "vee"
        g = d.createGroup("g")
        w = g.createVariable("w", "i4", ("x",))
        w[:] = [5, 6, 7, 8]
    names = ["x", "v", "g"]
    outs = {k: os.path.join(disk, "nc_out_" + k) for k in ("cp", "tar", "rsync")}
    tar1, tar2 = os.path.join(disk, "nc_out.tar"), os.path.join(disk, "nc_back.tar")
    x = ["--xattrs", "--xattrs-include=*"]
    with T.Mount(path, mnt, opts=["-o", "rw"]) as m, m.watchdog(120):
        for d in outs.values():
            os.mkdir(d)
        for g in ("cp", "tar", "rsync"):
            os.mkdir(os.path.join(mnt, g))
        run(["cp", "-a"] + names + [outs["cp"] + "/"], "nc: cp -a out", cwd=mnt)
        run(["cp", "-a"] + names + [os.path.join(mnt, "cp") + "/"], "nc: cp -a back", cwd=outs["cp"])
        run(["tar"] + x + ["-cf", tar1] + names, "nc: tar c out", cwd=mnt)
        run(["tar"] + x + ["-xf", tar1, "-C", outs["tar"]], "nc: tar x out")
        run(["tar"] + x + ["-cf", tar2] + names, "nc: tar c back", cwd=outs["tar"])
        run(["tar"] + x + ["-xf", tar2, "-C", os.path.join(mnt, "tar")], "nc: tar x back")
        run(["rsync", "-aX"] + names + [outs["rsync"] + "/"], "nc: rsync -aX out", cwd=mnt)
        run(["rsync", "-aX", outs["rsync"] + "/", os.path.join(mnt, "rsync") + "/"], "nc: rsync -aX back")
    if m.returncode:
        T.fail("nc: unmount exits %s: %s" % (m.returncode, m.output()[-2000:]))
    bad = [ln for ln in m.output().splitlines() if "EPERM" in ln or "not updated" in ln or "without" in ln]
    if bad:
        T.fail("nc: refusals or failures logged:\n%s" % "\n".join(bad[:10]))
    ids = {}
    with h5py.File(path, "r") as f:
        def visit(n, o):
            if "_Netcdf4Dimid" in o.attrs:
                ids.setdefault(int(o.attrs["_Netcdf4Dimid"]), []).append(n)
        f.visititems(visit)
    dup = {k: v for k, v in ids.items() if len(v) > 1}
    if dup:
        T.fail("nc: dimensions sharing a _Netcdf4Dimid: %s" % dup)
    r = subprocess.run(["ncdump", "-h", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    cdl = r.stdout.decode(errors="replace")
    if r.returncode != 0 or "phony_dim" in cdl or "0 currently" in cdl:
        T.fail("nc: ncdump -h exits %d (an axis on no dimension, or a bytes' dimension left):\n%s%s" % (
            r.returncode, cdl, r.stderr.decode(errors="replace")))
    with netCDF4.Dataset(path) as d:
        for g in ("cp", "tar", "rsync"):
            for name, want, attrs in (("x", [1.0, 2.0, 3.0, 4.0], {"units": "m"}),
                                      ("v", np.arange(8).reshape(2, 4).tolist(), {"long_name": "vee"}),
                                      ("g/w", [5, 6, 7, 8], {})):
                try:
                    var = d[g + "/" + name]
                    got = var[:].tolist()
                    at = {k: var.getncattr(k) for k in var.ncattrs()}
                except Exception as e:  # noqa: BLE001 - netCDF-C's error is the finding
                    T.fail("nc: netCDF4 reads %s/%s: %s" % (g, name, e))
                    continue
                if got != want or at != attrs:
                    T.fail("nc: %s/%s reads %r %r, not %r %r" % (g, name, got, at, want, attrs))


def main():
    wd = T.workdir("copy_back")
    disk = os.path.join(wd, "disk")
    mnt = os.path.join(wd, "mnt")
    with T.small_disk(disk, "64m"):
        path = os.path.join(disk, "f.h5")
        make(path)
        out = {k: os.path.join(disk, "out_" + k) for k in ("cp", "tar", "rsync")}
        tar1, tar2 = os.path.join(disk, "out.tar"), os.path.join(disk, "back.tar")
        x = ["--xattrs", "--xattrs-include=*"]
        with T.Mount(path, mnt, opts=["-o", "rw"]) as m, m.watchdog(120):
            for d in out.values():
                os.mkdir(d)
            for g in ("cp", "tar", "tar1", "rsync"):
                os.mkdir(os.path.join(mnt, g))
            run(["cp", "-a"] + NAMES + [out["cp"] + "/"], "cp -a out", cwd=mnt)
            run(["cp", "-a"] + NAMES + [os.path.join(mnt, "cp") + "/"], "cp -a back", cwd=out["cp"])
            run(["tar"] + x + ["-cf", tar1] + NAMES, "tar c out", cwd=mnt)
            run(["tar"] + x + ["-xf", tar1, "-C", out["tar"]], "tar x out")
            run(["tar"] + x + ["-cf", tar2] + NAMES, "tar c back", cwd=out["tar"])
            run(["tar"] + x + ["-xf", tar2, "-C", os.path.join(mnt, "tar")], "tar x back")
            run(["tar", "--xattrs", "-xf", tar2, "-C", os.path.join(mnt, "tar1")], "tar --xattrs x back")
            run(["rsync", "-aX"] + NAMES + [out["rsync"] + "/"], "rsync -aX out", cwd=mnt)
            run(["rsync", "-aX", out["rsync"] + "/", os.path.join(mnt, "rsync") + "/"], "rsync -aX back")
            # a shape on a new flat uint8 file
            flat = os.path.join(mnt, "new_flat")
            with open(flat, "wb") as fh:
                fh.write(bytes(range(256)) * 4)
            os.setxattr(flat, "user.h5.shape", b"32,32")
            # the shape, then the dtype, on closed files
            f8 = os.path.join(mnt, "new_f8")
            with open(f8, "wb") as fh:
                fh.write(np.arange(6.).tobytes())
            os.setxattr(f8, "user.h5.shape", b"2,3")
            os.setxattr(f8, "user.h5.dtype", b"<f8")
            i1 = os.path.join(mnt, "new_i1")
            with open(i1, "wb") as fh:
                fh.write((np.arange(16) - 8).astype("i1").tobytes())
            os.setxattr(i1, "user.h5.shape", b"4,4")
            os.setxattr(i1, "user.h5.dtype", b"|i1")
            # the value it shows: no change
            os.setxattr(os.path.join(mnt, "gz"), "user.h5.chunks", b"3,5")
            os.setxattr(os.path.join(mnt, "img"), "user.h5.shape", b"32,32")
            # a conflict: refused with its reason, the first kept
            cf = os.path.join(mnt, "conflict")
            with open(cf, "wb") as fh:
                fh.write(np.arange(4.).tobytes())
            os.setxattr(cf, "user.h5.dtype", b"<f8")
            T.expect_err("a second, other dtype", lambda: os.setxattr(cf, "user.h5.dtype", b"<i4"), errno.EPERM)
            os.setxattr(cf, "user.h5.shape", b"4")
            # more bytes than the shape takes: refused at the set
            big = os.path.join(mnt, "too_big")
            with open(big, "wb") as fh:
                fh.write(bytes(24))
            os.setxattr(big, "user.h5.dtype", b"<f8")
            T.expect_err("<f8 (2,) on 24 bytes", lambda: os.setxattr(big, "user.h5.shape", b"2"), errno.EPERM)
        log = m.output()
        if m.returncode:
            T.fail("unmount exits %s: %s" % (m.returncode, log[-2000:]))
        # (too_big's refusal: its writer's descriptor is closed, or still
        # open when the kernel's release of it comes after the setxattr)
        for what, words in (("conflict", ("setxattr /conflict user.h5.dtype <i4: EPERM: user.h5.dtype <f8 was set "
                                          "already",)),
                            ("too_big", ("/too_big", "its 24 bytes are not the 16 that <f8 of its shape takes"))):
            k = len([ln for ln in log.splitlines() if all(w in ln for w in words)])
            if k != 1:
                T.fail("%s: %d log lines of %r:\n%s" % (what, k, words, log[-2000:]))
        others = [ln for ln in log.splitlines() if "EPERM" in ln and "/conflict" not in ln and "/too_big" not in ln]
        if others:
            T.fail("refusals logged in the round trips:\n%s" % "\n".join(others[:10]))
        with h5py.File(path, "r") as f:
            for g in ("cp", "tar", "tar1", "rsync"):
                for n in NAMES:
                    compare(f, n, g + "/" + n, g)
            for name, want in (("new_flat", np.frombuffer(bytes(range(256)) * 4, "u1").reshape(32, 32)),
                               ("new_f8", np.arange(6.).reshape(2, 3)),
                               ("new_i1", (np.arange(16) - 8).astype("i1").reshape(4, 4)),
                               ("conflict", np.arange(4.)),
                               ("too_big", np.zeros(24, "u1"))):
                d = f[name]
                if d.dtype != want.dtype or d.shape != want.shape or d[()].tobytes() != want.tobytes():
                    T.fail("%s: %s %s, expected %s %s" % (name, d.dtype, d.shape, want.dtype, want.shape))
                # (the chunks and gzip of the copy's xattrs honoured)
                gz = f[g + "/gz"]
                if gz.chunks != (3, 5) or gz.compression != "gzip":
                    T.fail("%s/gz: chunks %s, %s, not (3, 5), gzip" % (g, gz.chunks, gz.compression))
            left = [k for g in ("cp", "tar", "tar1", "rsync") for k in f[g] if k not in NAMES]
            if left:
                T.fail("names left: %r" % left)
        nc_round_trip(disk, mnt)
    shutil.rmtree(wd, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
