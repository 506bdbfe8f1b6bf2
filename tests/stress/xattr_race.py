#!/usr/bin/python3
"""setfattr's write-behind under concurrency (member/xbatch.c): on a
read-write mount of a libver="latest" file, three threads set new
attributes and a new value of an existing one on two groups (alternating
objects commit batches early), one lists and reads xattrs of both, one
appends rows to a dataset, one makes and removes groups, for
H5FS_XATTR_RACE_SECONDS (10). Then, unmounted, every new attribute a
setxattr was answered for must be in FILE with its value (h5py), and the
daemon must have exited cleanly (a sanitizer build's report fails it).

Exit 77 without h5py or FUSE.
"""
import errno
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib as S  # noqa: E402

T = S.T
SECONDS = float(os.environ.get("H5FS_XATTR_RACE_SECONDS", "10"))


def main():
    T.require_h5py()
    T.require_fuse()
    import h5py
    import numpy as np
    wd = T.workdir("xattr_race")
    path = os.path.join(wd, "x.h5")
    with h5py.File(path, "w", libver="latest") as f:
        for g in ("a", "b"):
            f.create_group(g).attrs["n"] = np.int64(0)
        f.create_dataset("rows", data=np.zeros((10, 4), "<i8"), maxshape=(None, 4), chunks=(16, 4))
    mnt = os.path.join(wd, "mnt")
    want = {"a": {}, "b": {}}
    fails = []
    stop = time.monotonic() + SECONDS

    def guard(fn):
        def run():
            try:
                fn()
            except Exception as e:      # a thread's failure is the test's
                fails.append("%s: %r" % (fn.__name__, e))
        return run

    def setter(g, prefix):
        def setter():
            i = 0
            p = os.path.join(mnt, g)
            while time.monotonic() < stop:
                name = "%s%05d" % (prefix, i)
                os.setxattr(p, "user." + name, b"v%d" % i)
                want[g][name] = "v%d" % i
                os.setxattr(p, "user.n", b"%d" % i)
                i += 1
        return setter

    def reader():
        while time.monotonic() < stop:
            for g in ("a", "b"):
                p = os.path.join(mnt, g)
                for nm in os.listxattr(p)[:5]:
                    os.getxattr(p, nm)

    def appender():
        while time.monotonic() < stop:
            try:
                fd = os.open(os.path.join(mnt, "rows"), os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, np.ones((3, 4), "<i8").tobytes())
                finally:
                    os.close(fd)
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise

    def groups():
        i = 0
        while time.monotonic() < stop:
            d = os.path.join(mnt, "a", "d%d" % i)
            os.mkdir(d)
            os.rmdir(d)
            i += 1

    m = T.Mount(path, mnt, cwd=wd)
    m.start()
    try:
        with m.watchdog(SECONDS + 120):
            ts = [threading.Thread(target=guard(f)) for f in (setter("a", "x"), setter("b", "y"), setter("a", "z"),
                                                              reader, appender, groups)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        S.daemon_gone(m, fails)
    finally:
        m.stop()
    if fails:
        print("daemon log:\n" + m.output()[-3000:])
    n = 0
    with h5py.File(path, "r") as f:
        for g in ("a", "b"):
            at = dict(f[g].attrs)
            for k, v in want[g].items():
                got = at.get(k)
                got = got.decode() if isinstance(got, bytes) else got
                n += 1
                if got != v:
                    fails.append("%s/%s: %r, answered %r" % (g, k, got, v))
    return S.verdict(fails, wd, "xattr_race: %d failures" % len(fails),
                     "xattr_race: %d new attributes answered and found in FILE" % n)


if __name__ == "__main__":
    sys.exit(main())
