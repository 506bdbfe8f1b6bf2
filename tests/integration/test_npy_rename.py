#!/usr/bin/python3
"""np.save whose name is renamed while it writes (issue 83 item 7b): the
close succeeds and the array lands under the new name, as it would on a
local disk.

- a stream written in two halves with `mv x.npy y.npy` between them:
  close succeeds, dataset y holds the array (h5py), no x, no x.npy, no
  placeholder left; renamed to a name without .npy (`z`): dataset z;
  renamed into another group: the dataset there;
- np.save("x.npy") 200 times while another thread renames x.npy to y.npy
  as fast as it can: no save fails (it was ENOENT in 704 of 6,350), and
  every dataset h5py finds holds the array;
- a new np.save of the old name meanwhile is not disturbed (its
  placeholder is never taken for the renamed one's).
"""
import errno
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def npy_bytes(a):
    import io
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def halves(mnt, name, a, between):
    """np.save's stream into name in two writes, between() after the first."""
    data = npy_bytes(a)
    fd = os.open(os.path.join(mnt, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data[:len(data) // 2])
        between()
        os.write(fd, data[len(data) // 2:])
    finally:
        os.close(fd)


def main():
    wd = T.workdir("npy_rename")
    h5 = os.path.join(wd, "r.h5")
    mnt = os.path.join(wd, "mnt")
    with h5py.File(h5, "w") as f:
        f.create_group("g")
    a = np.arange(5000, dtype="<f8").reshape(100, 50)
    b = np.arange(300, dtype="<i4")
    errs, renames = [], [0, 0]
    with T.Mount(h5, mnt, ["-o", "rw"]) as m:
        with m.watchdog(120):
            p = lambda n: os.path.join(mnt, n)  # noqa: E731
            halves(mnt, "x.npy", a, lambda: os.rename(p("x.npy"), p("y.npy")))
            halves(mnt, "u.npy", b, lambda: os.rename(p("u.npy"), p("z")))
            halves(mnt, "v.npy", b, lambda: os.rename(p("v.npy"), p("g/w.npy")))
            names = sorted(os.listdir(mnt))
            if names != ["g", "y", "z"] or os.listdir(p("g")) != ["w"]:
                T.fail("after the renames mid-stream: %r, g: %r" % (names, os.listdir(p("g"))))
            else:
                print("ok   renamed mid-stream: y, z and g/w made, nothing else left")

            # the race, as fast as it goes
            stop = []

            def renamer():
                while not stop:
                    try:
                        os.rename(p("x.npy"), p("y.npy"))
                        renames[0] += 1
                    except OSError as e:
                        if e.errno != errno.ENOENT:
                            errs.append("rename: %s" % e)
                        renames[1] += 1
            t = threading.Thread(target=renamer)
            t.start()
            try:
                for i in range(200):
                    try:
                        np.save(p("x.npy"), a)
                    except OSError as e:
                        errs.append("np.save %d: %s" % (i, e))
            finally:
                stop.append(1)
                t.join()
            if errs:
                T.fail("%d of 200 saves or renames failed: %s" % (len(errs), errs[:3]))
            else:
                print("ok   200 np.save of x.npy racing %d renames to y.npy: none failed" % renames[0])
            if renames[0] == 0:
                print("note no rename landed mid-stream on this machine")
    with h5py.File(h5, "r") as f:
        got = {k: f[k][()] for k in ("y", "z", "g/w")}
        extra = sorted(set(f) - {"g", "x", "y", "z"}) + sorted(set(f["g"]) - {"w"})
        if not np.array_equal(got["y"], a) or not np.array_equal(got["z"], b) or \
                not np.array_equal(got["g/w"], b) or ("x" in f and not np.array_equal(f["x"][()], a)):
            T.fail("h5py reads other arrays than were saved")
        elif extra:
            T.fail("left behind: %r (placeholders?)" % extra)
        else:
            print("ok   h5py reads every array under its new name; no placeholder left")
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
