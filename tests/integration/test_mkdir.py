#!/usr/bin/python3
"""Groups and links changed through a read-write mount (issue 31 item 2;
doc/h5fs.1 MODIFYING), in groups of compact link storage (libver="latest")
and in symbol-table groups (h5py's default format).

On each fixture of make_write_fixtures.py (latest.h5, default.h5) with one
extra hard link (/g/hl to /d): mkdir, mkdir -p, ln -s (relative and absolute
targets: stored as the HDF5 path they resolve to), rmdir, rm (of an
object with another hard link: it stays, its reference count drops); the
same changes made by h5py on a copy; both trees compared as h5py reads
them (names, link kinds, soft link paths, dataset values, reference
counts) and h5dump must read the result. Refusals change nothing:
rmdir of a non-empty group (ENOTEMPTY), rm of a group (EISDIR), rmdir of
a dataset (ENOTDIR), mkdir of an existing name (EEXIST), a name that is
not there (ENOENT). A compact group's 9th link moves it to dense storage.

At scale: 700 seeded random mkdir, ln -s, rm, rmdir and mv in one group
of each format: a symbol-table group (many symbol table nodes split and
dropped, the B-tree one level deeper, the local heap grown) and a compact
group that goes dense (its heap and name index written anew per change);
the same changes by h5py on a copy; both trees equal, h5dump reads it,
and h5py 'r+' then adds 300 groups and removes 50 links (libhdf5 writing
into what h5fs wrote), and a second mount lists what h5py reads.
"""
import random
import errno
import os
import re
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
                    # (libhdf5's H5Lcreate_soft folds repeated and trailing
                    # slashes, which the mount keeps as written: the same link)
                    out.append((p, "soft", re.sub("/+", "/", ln.path).rstrip("/") or "/"))
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


expect_err = T.expect_err


def scenario(work, fx, name):
    base = os.path.join(fx, name)
    with h5py.File(base, "r+") as f:
        f["g/hl"] = f["d"]          # a second hard link to /d
    a, b = os.path.join(work, "mount-" + name), os.path.join(work, "h5py-" + name)
    shutil.copy(base, a)
    shutil.copy(base, b)
    mnt = os.path.join(work, "mnt")
    with T.Mount(a, mnt) as m, m.watchdog(60):
        os.mkdir(mnt + "/n")
        os.makedirs(mnt + "/n/a/b")
        os.symlink("../d", mnt + "/g/sl")
        os.symlink("/g", mnt + "/n/abs")
        os.symlink("./a/../../g/./hl", mnt + "/n/rel")
        # relative without "..": stored and read back as written (libhdf5
        # resolves "." and repeated slashes as the kernel does)
        os.symlink("./a/./b", mnt + "/n/dots")
        os.symlink("a//b/", mnt + "/n/slashes")
        if os.readlink(mnt + "/g/sl") != "../d":
            T.fail("readlink g/sl: %r" % os.readlink(mnt + "/g/sl"))
        for k, v in (("dots", "./a/./b"), ("slashes", "a//b/")):
            if os.readlink(mnt + "/n/" + k) != v or not os.path.isdir(mnt + "/n/" + k):
                T.fail("readlink n/%s: %r, not %r as written" % (k, os.readlink(mnt + "/n/" + k), v))
        if not os.path.isdir(mnt + "/n/a/b") or sorted(os.listdir(mnt + "/n")) != ["a", "abs", "dots", "rel",
                                                                                    "slashes"]:
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
        if name == "latest.h5":
            extra = ["x%d" % i for i in range(len(os.listdir(mnt + "/n/a")), 8)]
            for x in extra:
                os.mkdir(mnt + "/n/a/" + x)
            os.mkdir(mnt + "/n/a/x99")      # the 9th: dense storage
            if sorted(os.listdir(mnt + "/n/a")) != sorted(extra + ["x99"] + [x for x in os.listdir(mnt + "/n/a")
                                                                           if x not in extra + ["x99"]]):
                T.fail("a 9th link: /n/a holds %r" % sorted(os.listdir(mnt + "/n/a")))
            for x in extra + ["x99"]:
                os.rmdir(mnt + "/n/a/" + x)
        if not m.alive():
            T.fail("daemon died: %s" % m.output()[-2000:])
    with h5py.File(b, "r+") as f:
        f.create_group("n")
        f.create_group("n/a/b")
        f["g/sl"] = h5py.SoftLink("/d")
        f["n/abs"] = h5py.SoftLink("/g")
        f["n/rel"] = h5py.SoftLink("/g/hl")
        f["n/dots"] = h5py.SoftLink("./a/./b")
        f["n/slashes"] = h5py.SoftLink("a//b/")
        del f["n/a/b"]
        del f["d"]
    ta, tb = tree(a), tree(b)
    if ta != tb:
        T.fail("%s: trees differ:\n  mount %r\n  h5py  %r" % (name, [x for x in ta if x not in tb],
                                                              [x for x in tb if x not in ta]))
    r = subprocess.run(["h5dump", a], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        T.fail("%s: h5dump: exit %d: %s" % (name, r.returncode, r.stderr.decode()[-300:]))
    print("%s: mkdir, ln -s, rmdir, rm as h5py makes them" % name)


def random_ops(n, seed):
    """(op, name[, new name]) changes of one group's links, seeded."""
    rng = random.Random(seed)
    have, ops = {}, []
    for _ in range(n):
        r, name = rng.random(), "n%04d" % rng.randrange(2 * n)
        if r < 0.5 and name not in have:
            ops.append(("mkdir", name))
            have[name] = "g"
        elif r < 0.65 and name not in have:
            ops.append(("symlink", name))
            have[name] = "s"
        elif r < 0.85 and have:
            k = rng.choice(sorted(have))
            ops.append(("rmdir" if have.pop(k) == "g" else "rm", k))
        elif have and name not in have:
            k = rng.choice(sorted(have))
            ops.append(("mv", k, name))
            have[name] = have.pop(k)
    return ops


def at_scale(work, fx, name):
    base = os.path.join(fx, name)
    a, b = os.path.join(work, "scale-mount-" + name), os.path.join(work, "scale-h5py-" + name)
    shutil.copy(base, a)
    shutil.copy(base, b)
    ops = random_ops(700, 31)
    mnt = os.path.join(work, "mnt")
    with T.Mount(a, mnt) as m, m.watchdog(300):
        for op in ops:
            p = mnt + "/g/" + op[1]
            if op[0] == "mkdir":
                os.mkdir(p)
            elif op[0] == "symlink":
                os.symlink("../d", p)
            elif op[0] == "rmdir":
                os.rmdir(p)
            elif op[0] == "rm":
                os.unlink(p)
            else:
                os.rename(p, mnt + "/g/" + op[2])
        shown = sorted(os.listdir(mnt + "/g"))
        if not m.alive():
            T.fail("daemon died: %s" % m.output()[-2000:])
    with h5py.File(b, "r+") as f:
        g = f["g"]
        for op in ops:
            if op[0] == "mkdir":
                g.create_group(op[1])
            elif op[0] == "symlink":
                g[op[1]] = h5py.SoftLink("/d")
            elif op[0] in ("rmdir", "rm"):
                del g[op[1]]
            else:
                g.move(op[1], op[2])
        want = sorted(g)
    if shown != want:
        T.fail("at scale: the mount listed %d names, h5py %d" % (len(shown), len(want)))
    ta, tb = tree(a), tree(b)
    if ta != tb:
        T.fail("at scale: trees differ:\n  mount %r\n  h5py  %r" % ([x for x in ta if x not in tb][:10],
                                                                   [x for x in tb if x not in ta][:10]))
    r = subprocess.run(["h5dump", "-n", a], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        T.fail("at scale: h5dump: exit %d: %s" % (r.returncode, r.stderr.decode()[-300:]))
    with h5py.File(a, "r+") as f:
        g = f["g"]
        for k in sorted(g)[:50]:
            del g[k]
        for i in range(300):
            g.create_group("h%03d" % i)
        want = sorted(g)
    with T.Mount(a, mnt, ["-o", "ro"]):
        if sorted(os.listdir(mnt + "/g")) != want:
            T.fail("at scale: after h5py r+, a second mount lists otherwise than h5py")
    print("%s group at scale: %d changes as h5py makes them, then h5py r+ on top"
          % ("symbol-table" if name == "default.h5" else "compact, then dense,", len(ops)))


def main():
    work = T.workdir("mkdir")
    fx = os.path.join(work, "fx")
    MF.make(fx)
    for name in ("latest.h5", "default.h5"):
        scenario(work, fx, name)
    for name in ("default.h5", "latest.h5"):
        at_scale(work, fx, name)
    shutil.rmtree(work, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
