#!/usr/bin/python3
"""Two read-write mounts of one collection show the same modes (issue 35):
the first mount opens the members read-write (their datasets
owner-writable, 644: the growable one appends, both take bytes written in
place) and holds them; a second mount of the same DIR then opens them
read-only (another process holds them) and must still show 644, not 444 - what a mount shows never depends on which mount holds
the lock. Also a third mount sharing the first one's index."""
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def make(top):
    os.makedirs(os.path.join(top, "sub"))
    for i, rel in enumerate(("a.h5", "sub/b.h5")):
        with h5py.File(os.path.join(top, rel), "w", libver="latest") as f:
            f.create_dataset("grow", data=np.arange(10, dtype="<i4"), maxshape=(None,), chunks=(4,))
            f.create_dataset("fixed", data=np.arange(5, dtype="<f8"))
            f.attrs["i"] = i
        os.chmod(os.path.join(top, rel), 0o644)


def modes(mnt):
    out = {}
    for d, dirs, files in os.walk(mnt):
        for n in dirs + files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, mnt)] = stat.S_IMODE(os.lstat(p).st_mode)
    return out


def main():
    wd = T.workdir("coll_modes")
    top = os.path.join(wd, "coll")
    make(top)
    ix = os.path.join(wd, "index.sqlite")
    with T.Mount(top, os.path.join(wd, "m1"), ["-o", "index=" + ix]) as m1:
        first = modes(m1.mnt)
        if first.get("a.h5/grow") != 0o644 or first.get("a.h5/fixed") != 0o644:
            T.fail("first mount: grow %o, fixed %o (want 644, 644)" % (
                first.get("a.h5/grow", 0), first.get("a.h5/fixed", 0)))
        # the members stay open (and locked) in m1 while these walk
        with T.Mount(top, os.path.join(wd, "m2"), ["-o", "noindex"]) as m2:
            second = modes(m2.mnt)
        with T.Mount(top, os.path.join(wd, "m3"), ["-o", "index=" + ix]) as m3:
            third = modes(m3.mnt)
        with T.Mount(top, os.path.join(wd, "m4"), ["-o", "index=" + os.path.join(wd, "other.sqlite")]) as m4:
            fourth = modes(m4.mnt)
    for label, got in (("noindex mount", second), ("mount on the same index", third),
                       ("mount with its own index", fourth)):
        diff = sorted(k for k in set(first) | set(got) if first.get(k) != got.get(k))
        if diff:
            T.fail("%s: modes differ from the first mount's: %s" % (
                label, ", ".join("%s %o/%o" % (k, first.get(k, 0), got.get(k, 0)) for k in diff[:4])))
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
