#!/usr/bin/python3
"""The idle commit (issue 33: "an idle timer for a descriptor that wrote
without fsync"): on a read-write mount, a descriptor that appended rows and
sits open holds FILE's lock, so h5py cannot open FILE; once it has not
written for -o idle_commit seconds its rows are committed (as fsync would)
and the lock is given back: h5py opens FILE and reads the rows. Writing
again through the same descriptor takes the lock again; closing commits.
A partial row keeps the lock (rows are whole or not at all) until close
drops it; -o idle_commit=0 keeps the old behaviour (only fsync and close
commit). Every wait is bounded.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

ROW = 16


def rows(a, b):
    return np.frombuffer(b"".join(b"%016d" % r for r in range(a, b)), dtype=np.uint8).reshape(b - a, ROW)


def make(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("log", data=rows(0, 4), maxshape=(None, ROW), chunks=(8, ROW))


def h5py_rows(path):
    """FILE's rows as h5py reads them, or None while it is locked."""
    try:
        with h5py.File(path, "r") as f:
            return f["log"][()]
    except OSError as e:
        if "lock" in str(e).lower():
            return None
        raise


def wait_for(what, fn, limit=15.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        v = fn()
        if v is not None:
            return v
        time.sleep(0.2)
    T.fail("%s: not within %.0f s" % (what, limit))
    return None


def main():
    wd = T.workdir("idle")
    path, mnt = os.path.join(wd, "f.h5"), os.path.join(wd, "mnt")
    make(path)
    with T.Mount(path, mnt, ["-o", "idle_commit=1"]) as m, m.watchdog(90):
        fd = os.open(os.path.join(mnt, "log"), os.O_WRONLY | os.O_APPEND)
        os.write(fd, rows(4, 6).tobytes())
        if h5py_rows(path) is not None:
            T.fail("FILE not locked right after a write")
        got = wait_for("the idle commit", lambda: h5py_rows(path))
        if got is not None and not np.array_equal(got, rows(0, 6)):
            T.fail("after the idle commit h5py reads %d rows, want 6" % len(got))
        # the same descriptor writes on: the lock again, then close commits
        os.write(fd, rows(6, 9).tobytes())
        if h5py_rows(path) is not None:
            T.fail("FILE not locked after a second write")
        os.close(fd)
        got = h5py_rows(path)
        if got is None or not np.array_equal(got, rows(0, 9)):
            T.fail("after close: %r" % (None if got is None else len(got)))
        # a partial row keeps the lock past the idle time
        fd = os.open(os.path.join(mnt, "log"), os.O_WRONLY | os.O_APPEND)
        os.write(fd, rows(9, 10).tobytes()[:7])
        time.sleep(3)
        if h5py_rows(path) is not None:
            T.fail("a partial row let FILE go")
        try:
            os.close(fd)
        except OSError:
            pass    # EINVAL: the partial row is dropped and said
        got = h5py_rows(path)
        if got is None or not np.array_equal(got, rows(0, 9)):
            T.fail("after the partial row's close: %r" % (None if got is None else len(got)))
        if not m.alive():
            T.fail("daemon died: %s" % m.output()[-2000:])
    # idle_commit=0: only fsync and close commit
    with T.Mount(path, mnt, ["-o", "idle_commit=0"]) as m, m.watchdog(60):
        fd = os.open(os.path.join(mnt, "log"), os.O_WRONLY | os.O_APPEND)
        os.write(fd, rows(9, 10).tobytes())
        time.sleep(3)
        if h5py_rows(path) is not None:
            T.fail("idle_commit=0: FILE let go without fsync or close")
        os.fsync(fd)
        got = h5py_rows(path)
        if got is None or not np.array_equal(got, rows(0, 10)):
            T.fail("idle_commit=0 after fsync: %r" % (None if got is None else len(got)))
        os.close(fd)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
