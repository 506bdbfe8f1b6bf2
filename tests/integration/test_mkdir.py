#!/usr/bin/python3
"""Groups and links changed through a read-write mount (issue 31 item 2,
the part done: groups of compact link storage; doc/h5fs.1 MODIFYING).

On a libver="latest" fixture (make_write_fixtures.py) with one extra hard
link (/g/hl to /d): mkdir, mkdir -p, ln -s (relative and absolute
targets: stored as the HDF5 path they resolve to), rmdir, rm (of an
object with another hard link: it stays, its reference count drops); the
same changes made by h5py on a copy; both trees compared as h5py reads
them (names, link kinds, soft link paths, dataset values, reference
counts) and h5dump must read the result. Refusals change nothing:
rmdir of a non-empty group (ENOTEMPTY), rm of a group (EISDIR), rmdir of
a dataset (ENOTDIR), mkdir of an existing name (EEXIST), a name that is
not there (ENOENT), a full compact storage (ENOSPC), and every change in a
symbol-table group (h5py's default format: ENOTSUP).
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
import h5py  # noqa: E402

import make_write_fixtures as MF  # noqa: E402


def tree(path):
    out = []
    with h5py.File(path, "r") as f:
        def walk(g, prefix):
            for k in g:
                ln = g.get(k, getlink=True)
                p = prefix + k
                if isinstance(ln, h5py.SoftLink):
                    out.append((p, "soft", ln.path))
                    continue
                o = g[k]
                rc = h5py.h5o.get_info(o.id).rc
                if isinstance(o, h5py.Group):
                    out.append((p, "group", rc))
                    walk(o, p + "/")
                else:
                    out.append((p, "dataset", rc, o[()].tolist()))
        walk(f, "/")
    return sorted(out)


def expect_err(what, fn, code):
    try:
        fn()
        T.fail("%s succeeded, expected %s" % (what, errno.errorcode[code]))
    except OSError as e:
        if e.errno != code:
            T.fail("%s: %s, expected %s" % (what, e, errno.errorcode[code]))


def main():
    work = T.workdir("mkdir")
    fx = os.path.join(work, "fx")
    MF.make(fx)
    base = os.path.join(fx, "latest.h5")
    with h5py.File(base, "r+") as f:
        f["g/hl"] = f["d"]          # a second hard link to /d
    a, b = os.path.join(work, "mount.h5"), os.path.join(work, "h5py.h5")
    shutil.copy(base, a)
    shutil.copy(base, b)
    mnt = os.path.join(work, "mnt")
    with T.Mount(a, mnt) as m, m.watchdog(60):
        os.mkdir(mnt + "/n")
        os.makedirs(mnt + "/n/a/b")
        os.symlink("../d", mnt + "/g/sl")
        os.symlink("/g", mnt + "/n/abs")
        os.symlink("./a/../../g/./hl", mnt + "/n/rel")
        if os.readlink(mnt + "/g/sl") != "../d":
            T.fail("readlink g/sl: %r" % os.readlink(mnt + "/g/sl"))
        if not os.path.isdir(mnt + "/n/a/b") or sorted(os.listdir(mnt + "/n")) != ["a", "abs", "rel"]:
            T.fail("after mkdir: /n holds %r" % sorted(os.listdir(mnt + "/n")))
        os.rmdir(mnt + "/n/a/b")
        os.unlink(mnt + "/d")
        if os.path.exists(mnt + "/d") or "b" in os.listdir(mnt + "/n/a"):
            T.fail("removed names still shown")
        expect_err("rmdir non-empty", lambda: os.rmdir(mnt + "/n"), errno.ENOTEMPTY)
        expect_err("rm a group", lambda: os.unlink(mnt + "/n"), errno.EISDIR)
        expect_err("rmdir a dataset", lambda: os.rmdir(mnt + "/g/hl"), errno.ENOTDIR)
        expect_err("mkdir existing", lambda: os.mkdir(mnt + "/g"), errno.EEXIST)
        expect_err("rmdir absent", lambda: os.rmdir(mnt + "/nope"), errno.ENOENT)
        expect_err("rm absent", lambda: os.unlink(mnt + "/nope"), errno.ENOENT)
        extra = ["x%d" % i for i in range(len(os.listdir(mnt + "/n/a")), 8)]
        for x in extra:
            os.mkdir(mnt + "/n/a/" + x)
        expect_err("a 9th link", lambda: os.mkdir(mnt + "/n/a/x99"), errno.ENOSPC)
        for x in extra:
            os.rmdir(mnt + "/n/a/" + x)
        if not m.alive():
            T.fail("daemon died: %s" % m.output()[-2000:])
    with h5py.File(b, "r+") as f:
        f.create_group("n")
        f.create_group("n/a/b")
        f["g/sl"] = h5py.SoftLink("/d")
        f["n/abs"] = h5py.SoftLink("/g")
        f["n/rel"] = h5py.SoftLink("/g/hl")
        del f["n/a/b"]
        del f["d"]
    ta, tb = tree(a), tree(b)
    if ta != tb:
        T.fail("trees differ:\n  mount %r\n  h5py  %r" % ([x for x in ta if x not in tb], [x for x in tb if x not in ta]))
    r = subprocess.run(["h5dump", a], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        T.fail("h5dump: exit %d: %s" % (r.returncode, r.stderr.decode()[-300:]))
    # symbol-table groups: refused, nothing changed
    c = os.path.join(work, "default.h5")
    shutil.copy(os.path.join(fx, "default.h5"), c)
    before = tree(c)
    with T.Mount(c, mnt):
        expect_err("mkdir in a symbol-table group", lambda: os.mkdir(mnt + "/x"), errno.ENOTSUP)
        expect_err("ln -s in a symbol-table group", lambda: os.symlink("/g", mnt + "/g/x"), errno.ENOTSUP)
        expect_err("rm in a symbol-table group", lambda: os.unlink(mnt + "/d"), errno.ENOTSUP)
    if tree(c) != before:
        T.fail("a refused change changed the symbol-table file")
    shutil.rmtree(work, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
