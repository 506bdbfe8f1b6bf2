#!/usr/bin/python3
"""One attribute that cannot be decoded spoils nothing else (issue: a
dataset's xattr listing and stat must not fail because of it). A file
written by h5py (v1 object headers, no checksums) gets the datatype of
its attributes named "broken" overwritten with an unknown class; through a
real mount: stat of the group and the dataset works, listxattr lists every
attribute, the other attributes and the reserved user.h5.* ones read,
getxattr of the broken one is EIO with one log line naming the object and
the attribute, and the dataset's bytes equal h5py's."""
import errno
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

fails = []


def make(path):
    with h5py.File(path, "w") as f:
        d = f.create_dataset("ds", data=np.arange(10))
        d.attrs["good"] = 1.5
        d.attrs["broken"] = np.int32(7)
        d.attrs["after"] = "text"
        f.attrs["broken"] = np.int32(8)
        f.attrs["fine"] = 3
    data = bytearray(open(path, "rb").read())
    n = 0
    i = data.find(b"broken\0")
    while i >= 0:
        # v1 attribute message: the datatype follows the name, padded to 8
        dt = i + 8
        if data[dt] & 0x0F != 0:        # class 0 (integer), version 1
            raise SystemExit("unexpected layout at %d" % dt)
        data[dt] = 0x1F                 # version 1, class 15: unknown
        n += 1
        i = data.find(b"broken\0", i + 1)
    if n != 2:
        raise SystemExit("found %d broken attributes, expected 2" % n)
    open(path, "wb").write(data)


def main():
    wd = T.workdir("bad-attr")
    path = os.path.join(wd, "b.h5")
    make(path)
    mnt = os.path.join(wd, "mnt")
    with T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(60):
        for obj, others in (("", {"user.fine": b"3"}), ("ds", {"user.good": b"1.5", "user.after": b"text",
                                                              "user.h5.shape": b"10"})):
            p = os.path.join(mnt, obj)
            os.stat(p)
            names = set(os.listxattr(p))
            if "user.broken" not in names or not set(others) <= names:
                fails.append("/%s: listxattr %r" % (obj, sorted(names)))
            for k, v in others.items():
                got = os.getxattr(p, k)
                if got != v:
                    fails.append("/%s: %s = %r, want %r" % (obj, k, got, v))
            try:
                os.getxattr(p, "user.broken")
                fails.append("/%s: user.broken read" % obj)
            except OSError as e:
                if e.errno != errno.EIO:
                    fails.append("/%s: user.broken: %s, want EIO" % (obj, e))
        with open(os.path.join(mnt, "ds"), "rb") as fh:
            if fh.read() != np.arange(10).tobytes():
                fails.append("/ds: bytes differ")
        if not m.alive():
            fails.append("the daemon died")
    out = m.output()
    for obj in ("/ ", "/ds "):
        lines = [ln for ln in out.splitlines() if "getxattr " + obj in ln + " " and "user.broken" in ln]
        if len(lines) != 1 or "EIO" not in lines[0]:
            fails.append("log lines for %s user.broken: %r" % (obj.strip(), lines))
    for f in fails:
        print("FAIL: " + f)
    print("%d checks failed" % len(fails) if fails else "bad attribute isolated")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
