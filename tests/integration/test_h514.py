#!/usr/bin/python3
"""What h5fs writes, read by libhdf5 1.14 too (issues 31 and 32: "libhdf5
(h5py, h5dump, the Debian libhdf5 and 1.14) reads exactly what the same
change made through h5py gives").

Debian bookworm has libhdf5 1.10 only; h5wasm 0.8.11 (npm) is libhdf5
1.14.6.  Fixtures in h5py's default format and libver="latest" get, through
a real read-write mount, every kind of change h5fs makes (attributes
changed, added, typed, removed; bytes written into contiguous, compact and
deflate-chunked datasets; rows appended; groups, soft and hard links made,
moved and removed); then libhdf5 1.14 must read each file exactly as libhdf5 1.10
(h5py) does, object by object (h514.compare), and h5dump must open it.
The first check is that both read the untouched fixtures alike.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h514  # noqa: E402

h514.require()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def make(path, libver):
    """A deterministic fixture: every layout a write reaches, attributes of
    several types, a group tree."""
    kw = {"libver": "latest"} if libver == "latest" else {}
    with h5py.File(path, "w", **kw) as f:
        f.attrs["title"] = "h514 fixture"
        f.attrs["n"] = np.int32(7)
        f.attrs["scale"] = np.array([0.5, 1.5, 2.5])
        f.attrs.create("fixed", np.bytes_(b"abcdef"), dtype="S6")
        f.create_dataset("contig", data=np.arange(4096, dtype="<f8"))
        f.create_dataset("compact", data=np.arange(16, dtype="<i2"),
                         dcpl=_compact_dcpl(), shape=(16,), dtype="<i2")
        f.create_dataset("deflate", data=np.arange(20000, dtype="<i4").reshape(200, 100), chunks=(50, 25),
                         compression="gzip", shuffle=True)
        f.create_dataset("rows", data=np.arange(300, dtype="<u2"), maxshape=(None,), chunks=(64,))
        g = f.create_group("g")
        g.attrs["units"] = "m/s"
        g.create_dataset("v", data=np.linspace(0, 1, 33))
        f.create_group("g/h")


def _compact_dcpl():
    p = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    p.set_layout(h5py.h5d.COMPACT)
    return p


def changes(mnt):
    """The writes, every one of them in both formats."""
    os.setxattr(mnt + "/", "user.n", b"42")
    os.setxattr(mnt + "/", "user.scale", b"1, 2, 3")
    os.setxattr(mnt + "/", "user.fixed", b"longer text")
    os.setxattr(mnt + "/g", "user.note", "ünïcode".encode())
    os.setxattr(mnt + "/contig", "user.h5.new.<f4.gain", b"0.25, 4")
    os.removexattr(mnt + "/g", "user.units")
    with open(mnt + "/contig", "r+b") as fh:
        fh.seek(8 * 1000 + 3)
        fh.write(bytes(range(251)) * 20)
    with open(mnt + "/compact", "r+b") as fh:
        fh.seek(5)
        fh.write(b"\x01\x02\x03\x04\x05")
    with open(mnt + "/deflate", "r+b") as fh:
        fh.seek(4 * 4950 + 2)
        fh.write(b"\xab" * 9000)
    with open(mnt + "/rows", "ab") as fh:
        fh.write(np.arange(1000, 1100, dtype="<u2").tobytes())
    for what, fn in (("mkdir", lambda: os.mkdir(mnt + "/g/new")),
                     ("mkdir -p", lambda: os.makedirs(mnt + "/p/q/r")),
                     ("ln -s", lambda: os.symlink("../contig", mnt + "/g/sl")),
                     ("rmdir", lambda: os.rmdir(mnt + "/g/h")),
                     ("ln", lambda: os.link(mnt + "/g/v", mnt + "/v2")),
                     ("mv", lambda: os.rename(mnt + "/g/v", mnt + "/g/w")),
                     ("mv across", lambda: os.rename(mnt + "/compact", mnt + "/g/compact")),
                     ("rm", lambda: os.unlink(mnt + ("/g/w" if os.path.exists(mnt + "/g/w") else "/g/v")))):
        fn()


def main():
    work = T.workdir("h514")
    for libver in ("default", "latest"):
        path = os.path.join(work, libver + ".h5")
        make(path, libver)
        bad = h514.compare(path)
        if bad:
            T.fail("%s fixture: libhdf5 1.10 and 1.14 disagree before any change:\n  %s" % (libver, "\n  ".join(bad)))
        mnt = os.path.join(work, "mnt")
        with T.Mount(path, mnt) as m, m.watchdog(120):
            changes(mnt)
        bad = h514.compare(path)
        if bad:
            T.fail("%s after the writes: libhdf5 1.14 reads otherwise than 1.10:\n  %s" % (libver, "\n  ".join(bad[:30])))
        with h5py.File(path, "r") as f:
            if f.attrs["n"] != 42 or list(f.attrs["scale"]) != [1, 2, 3] or f.attrs["fixed"] != b"longer text":
                T.fail("%s: attributes not written: %r" % (libver, dict(f.attrs)))
            if f["rows"].shape != (400,) or f["rows"][-1] != 1099:
                T.fail("%s: rows not appended" % libver)
            if ("new" not in f["g"] or "v" in f["g"] or "w" in f["g"] or "r" not in f["p/q"]
                                       or "compact" not in f["g"] or "v2" not in f):
                T.fail("%s: link changes missing: %r" % (libver, list(f["g"])))
        r = subprocess.run(["h5dump", "-H", path], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            T.fail("h5dump -H %s: %s" % (libver, r.stderr[-400:]))
        print("%s: libhdf5 1.10 and 1.14 read the same after every write" % libver)
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
