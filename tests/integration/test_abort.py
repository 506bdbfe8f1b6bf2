#!/usr/bin/python3
"""The connection ends with descriptors open (fusectl abort; an unmount
that drops the kernel's queued RELEASE/RELEASEDIR does the same to the
last few): the daemon exits by itself, in time, with no sanitizer report
(the handles the kernel never released are released at stop), and FILE
is left as libhdf5 opens it with the open append done or not done.

Three mounts: one FILE -o ro, a collection (a directory and a dataset of
a member open), one FILE read-write with an append descriptor that wrote
rows it never fsynced.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

CONN = "/sys/fs/fuse/connections"


def fusectl_mounted():
    with open("/proc/self/mounts") as f:
        return any(line.split()[2:3] == ["fusectl"] for line in f)


def fusectl():
    """The fuse control file system, mounted if it is not (root)."""
    if not fusectl_mounted():
        subprocess.run(["mount", "-t", "fusectl", "none", CONN], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=10)
    if not fusectl_mounted():
        T.skip("no fusectl at %s (mount -t fusectl none %s)" % (CONN, CONN))


def make(path, n=10):
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("rows", data=np.arange(4 * n, dtype="<i8").reshape(n, 4), maxshape=(None, 4),
                         chunks=(8, 4))
        f.create_group("g").create_dataset("x", data=np.arange(1000, dtype="<f8"))
        f["g"].attrs["note"] = "here"


def abort(m, what):
    """Abort m's connection, close nothing first; the daemon must go."""
    dev = os.stat(m.mnt).st_dev
    with open(os.path.join(CONN, str(os.minor(dev)), "abort"), "w") as f:
        f.write("1")
    if not T.wait_until(lambda: not m.alive(), 10):
        T.fail("%s: the daemon did not exit within 10 s of the abort" % what)


def close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def run_one(path, mnt, what, opts, opener):
    with T.Mount(path, mnt, opts) as m:
        fds = opener(mnt)
        abort(m, what)
        close_all(fds)
    # Mount.stop unmounts what is left and raises on a sanitizer report


def main():
    fusectl()
    work = T.workdir("abort")
    mnt = os.path.join(work, "mnt")

    ro = os.path.join(work, "ro.h5")
    make(ro)

    def open_ro(mnt):
        d = os.open(os.path.join(mnt, "g"), os.O_RDONLY | os.O_DIRECTORY)
        os.listdir(d)
        f = os.open(os.path.join(mnt, "g", "x"), os.O_RDONLY)
        os.read(f, 100)
        return [d, f]
    run_one(ro, mnt, "-o ro", ["-o", "ro"], open_ro)

    coll = os.path.join(work, "coll")
    os.makedirs(os.path.join(coll, "sub"))
    make(os.path.join(coll, "a.h5"))
    make(os.path.join(coll, "sub", "b.h5"))

    def open_coll(mnt):
        d = os.open(os.path.join(mnt, "sub", "b.h5", "g"), os.O_RDONLY | os.O_DIRECTORY)
        os.listdir(d)
        top = os.open(os.path.join(mnt, "sub"), os.O_RDONLY | os.O_DIRECTORY)
        os.listdir(top)
        f = os.open(os.path.join(mnt, "a.h5", "g", "x"), os.O_RDONLY)
        os.read(f, 100)
        return [d, top, f]
    run_one(coll, mnt, "collection", ["-o", "ro"], open_coll)

    rw = os.path.join(work, "rw.h5")
    make(rw)
    extra = np.arange(1000, 1000 + 4 * 5, dtype="<i8").reshape(5, 4)

    def open_rw(mnt):
        d = os.open(os.path.join(mnt, "g"), os.O_RDONLY | os.O_DIRECTORY)
        os.listdir(d)
        a = os.open(os.path.join(mnt, "rows"), os.O_WRONLY | os.O_APPEND)
        os.write(a, extra.tobytes())
        return [d, a]
    run_one(rw, mnt, "read-write", [], open_rw)
    base = np.arange(40, dtype="<i8").reshape(10, 4)
    try:
        with h5py.File(rw, "r") as f:
            got = f["rows"][()]
            if not (np.array_equal(got, base) or np.array_equal(got, np.concatenate([base, extra]))):
                T.fail("read-write: rows after the abort are %d rows, neither before nor after the append"
                       % got.shape[0])
            if f["g"].attrs["note"] != "here" or not np.array_equal(f["g/x"][()], np.arange(1000.0)):
                T.fail("read-write: g changed")
    except OSError as e:
        T.fail("read-write: h5py cannot open FILE after the abort: %s" % e)
    print("aborted connections: -o ro, a collection and a read-write mount exit clean")
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
