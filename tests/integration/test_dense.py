#!/usr/bin/python3
"""Dense link and attribute storage changed through a read-write mount
(issue 31 items 1 and 2; doc/MODIFY.md "Dense storage").

On the fixtures of make_dense_fixtures.py (latest.h5: dense groups with and
without a creation-order index, a compact group and a dataset at their
compact limits, dense attributes; netcdf.h5: a netCDF-4 file, every group
tracking and indexing creation order): seeded random mkdir, ln -s, rm,
rmdir, mv and setfattr (new, changed, removed attributes) through the
mount, and the same changes by h5py on a copy. Both files must read the
same through h5py: every group's links in libhdf5's iteration order (the
creation order where it is indexed: a move takes a new one, as H5Lmove
gives it), link kinds and soft link paths; every object's attributes in
order with their types and values. The compact group and the dataset at
their limits cross into dense storage, as libhdf5 moves them. h5dump
reads the result (ncdump too, for the netCDF file), libhdf5 1.14 reads
what 1.10 reads (h514.py), h5py 'r+' then adds and removes links and
attributes in what h5fs wrote (libhdf5 changing our heaps and B-trees in
place), and a second mount shows what h5py reads. Removals below
libhdf5's minimum of 6 move dense attributes and links back into the
header, as libhdf5 does (shrink).
"""
import errno
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import h514  # noqa: E402
import make_dense_fixtures as MF  # noqa: E402

h514.require()

# per fixture: the groups whose links change, the objects whose attributes do
TARGETS = {
    "latest.h5": (["/dense", "/track", "/full"], ["/", "/track", "/d", "/full"]),
    "netcdf.h5": (["/", "/grp"], ["/", "/grp"]),
}


def state(path):
    """Every group's links in iteration order and every object's
    attributes in order, as h5py reads them."""
    out = []
    with h5py.File(path, "r") as f:
        def attrs(o, p):
            for k in o.attrs:
                v = o.attrs[k]
                dt = o.attrs.get_id(k).dtype
                out.append(("attr", p, k, str(dt), repr(v.tolist() if isinstance(v, np.ndarray) else v)))

        def walk(g, p):
            attrs(g, p)
            for k in g:
                ln = g.get(k, getlink=True)
                q = p.rstrip("/") + "/" + k
                if isinstance(ln, h5py.SoftLink):
                    out.append(("soft", q, ln.path))
                    continue
                o = g[k]
                if isinstance(o, h5py.Group):
                    out.append(("group", q))
                    walk(o, q)
                else:
                    out.append(("dataset", q, o[()].tolist()))
                    attrs(o, q)
        walk(f, "/")
    return out


def random_ops(path, n, seed):
    """Seeded changes of the fixture's link groups and attributes."""
    rng = random.Random(seed)
    groups, objs = TARGETS[os.path.basename(path)]
    have = {g: {} for g in groups}        # links we made: name -> "g" / "s"
    with h5py.File(path, "r") as f:
        attrs = {o: {k: f[o].attrs.get_id(k).dtype for k in f[o].attrs} for o in objs}
    ops = []
    for i in range(n):
        r = rng.random()
        if r < 0.55:
            g = rng.choice(groups)
            h = have[g]
            name = "n%03d" % rng.randrange(60)
            q = rng.random()
            if q < 0.4 and name not in h:
                ops.append(("mkdir", g, name))
                h[name] = "g"
            elif q < 0.55 and name not in h:
                ops.append(("symlink", g, name))
                h[name] = "s"
            elif q < 0.8 and h:
                k = rng.choice(sorted(h))
                ops.append(("rmdir" if h.pop(k) == "g" else "rm", g, k))
            elif h and name not in h:
                k = rng.choice(sorted(h))
                ops.append(("mv", g, k, name))
                h[name] = h.pop(k)
        else:
            o = rng.choice(objs)
            a = attrs[o]
            q = rng.random()
            name = "x%02d" % rng.randrange(30)
            if q < 0.45 and name not in a:
                ops.append(("setnew", o, name, "text %d" % i))
                # (a new text in a netCDF-4 file is NC_CHAR, fixed-length)
                a[name] = np.dtype("S1") if os.path.basename(path) == "netcdf.h5" else None
            elif q < 0.75 and [k for k in a if a[k] is None or a[k].kind != "S"]:
                # (a fixed-length string gets the text's length through the
                # mount, a new type, which h5py's modify cannot give it
                # without a new creation order: fixed_string() checks it)
                k = rng.choice(sorted(k for k in a if a[k] is None or a[k].kind != "S"))
                ops.append(("setold", o, k, i))
            elif a:
                k = rng.choice(sorted(a))
                ops.append(("del", o, k))
                a.pop(k)
    return ops


def old_value(f, o, k, i):
    """A new value for attribute k of the type it has: a number, or a
    string of the old one's length (h5py's modify keeps a fixed-length
    string's size)."""
    v = f[o].attrs[k]
    dt = f[o].attrs.get_id(k).dtype
    if dt.kind in "iuf":
        return (str(i % 100), np.array(i % 100, dtype=dt))
    s = v.decode() if isinstance(v, bytes) else str(v if not isinstance(v, np.ndarray) else v.flat[0])
    t = ("%d" % i * 40)[:len(s)] if s else ""
    if dt.kind == "S":
        return (t, np.bytes_(t.encode()))
    return (t, t)


def mount_apply(mnt, ops, path):
    for op in ops:
        if op[0] in ("mkdir", "symlink", "rmdir", "rm", "mv"):
            p = mnt + op[1].rstrip("/") + "/" + op[2]
            if op[0] == "mkdir":
                os.mkdir(p)
            elif op[0] == "symlink":
                os.symlink(soft_target(path), p)
            elif op[0] == "rmdir":
                os.rmdir(p)
            elif op[0] == "rm":
                os.unlink(p)
            else:
                os.rename(p, mnt + op[1].rstrip("/") + "/" + op[3])
        elif op[0] == "setnew":
            os.setxattr(mnt + op[1], "user." + op[2], op[3].encode())
        elif op[0] == "setold":
            os.setxattr(mnt + op[1], "user." + op[2], op[4].encode())
        else:
            os.removexattr(mnt + op[1], "user." + op[2])


def resolve_values(path, ops):
    """setold ops get their text and h5py value from the attribute as it
    is when the op comes (its type and length), replayed on a scratch copy."""
    out = []
    with h5py.File(path, "r+") as f:
        for op in ops:
            if op[0] == "setold":
                text, val = old_value(f, op[1], op[2], op[3])
                f[op[1]].attrs.modify(op[2], val)
                out.append(("setold", op[1], op[2], val, text))
                continue
            h5py_one(f, op, path)
            out.append(op)
    return out


def soft_target(path):
    # not an ancestor in the netCDF file: ncdump recurses into such a loop
    return "/dense" if "latest" in path else "/v00"


def h5py_one(f, op, path):
    if op[0] in ("mkdir", "symlink", "rmdir", "rm", "mv"):
        g = f[op[1]]
        if op[0] == "mkdir":
            g.create_group(op[2])
        elif op[0] == "symlink":
            g[op[2]] = h5py.SoftLink(soft_target(path))
        elif op[0] in ("rmdir", "rm"):
            del g[op[2]]
        else:
            g.move(op[2], op[3])
    elif op[0] == "setnew" and path == "netcdf.h5":
        # a new text in a netCDF-4 file is NC_CHAR, as netCDF-C writes it
        # (issue 57): scalar, fixed-length, null-terminated, ASCII
        # (written in its own type: libhdf5 would cut a converted text to
        # leave room for a NUL, which netCDF-C does not store)
        b = op[3].encode()
        t = h5py.h5t.C_S1.copy()
        t.set_size(max(len(b), 1))
        t.set_strpad(h5py.h5t.STR_NULLTERM)
        aid = h5py.h5a.create(f[op[1]].id, op[2].encode(), t, h5py.h5s.create(h5py.h5s.SCALAR))
        aid.write(np.array(b, dtype="S%d" % max(len(b), 1)), mtype=t)
    elif op[0] == "setnew":
        f[op[1]].attrs[op[2]] = op[3]
    elif op[0] == "setold":
        f[op[1]].attrs.modify(op[2], op[3])
    else:
        del f[op[1]].attrs[op[2]]


def compare(what, a, b):
    if a != b:
        da = [x for x in a if x not in b][:6]
        db = [x for x in b if x not in a][:6]
        order = da == [] and db == []
        T.fail("%s: %s\n  mount %r\n  h5py  %r" % (what, "order differs" if order else "contents differ", da, db))


def run(work, fx, name, seed):
    base = os.path.join(fx, name)
    a = os.path.join(work, "mount-" + name)
    b = os.path.join(work, "h5py-" + name)
    scratch = os.path.join(work, "scratch-" + name)
    for p in (a, b, scratch):
        shutil.copy(base, p)
    ops = resolve_values(scratch, random_ops(base, 400, seed))
    mnt = os.path.join(work, "mnt")
    with T.Mount(a, mnt) as m, m.watchdog(300):
        mount_apply(mnt, ops, name)
        if not m.alive():
            T.fail("%s: daemon died: %s" % (name, m.output()[-2000:]))
    with h5py.File(b, "r+") as f:
        for op in ops:
            h5py_one(f, op, name)
    sa, sb = state(a), state(b)
    compare("%s after %d changes" % (name, len(ops)), sa, sb)
    r = subprocess.run(["h5dump", a], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        T.fail("%s: h5dump: exit %d: %s" % (name, r.returncode, r.stderr.decode()[-300:]))
    if name == "netcdf.h5":
        ra, rb = [subprocess.run(["ncdump", "-h", p], capture_output=True, timeout=120) for p in (a, b)]
        if ra.returncode != 0 or rb.returncode != 0 or ra.stdout.replace(b"mount-", b"") != rb.stdout.replace(b"h5py-", b""):
            T.fail("ncdump -h: exit %d (h5py's copy: %d), or the headers differ: %s" %
                   (ra.returncode, rb.returncode, ra.stderr.decode()[-300:]))
    # (h5wasm shows object references otherwise: netCDF's DIMENSION_LIST
    # and REFERENCE_LIST differ so in the fixture as netCDF wrote it)
    bad = [x for x in h514.compare(a) if "HDF5 object reference" not in x]
    if bad:
        T.fail("%s: libhdf5 1.14 reads otherwise than 1.10: %r" % (name, bad[:5]))
    # libhdf5 changing in place what h5fs wrote, then a second mount
    groups, objs = TARGETS[name]
    for p in (a, b):
        with h5py.File(p, "r+") as f:
            for g in groups:
                for i in range(30):
                    f[g].create_group("h%02d" % i)
                for k in [k for k in f[g] if k.startswith("n")][:10]:
                    del f[g][k]
            for o in objs:
                for i in range(20):
                    f[o].attrs["y%02d" % i] = np.int64(i)
                for k in [k for k in f[o].attrs if k.startswith("x")][:5]:
                    del f[o].attrs[k]
    compare("%s after h5py r+" % name, state(a), state(b))
    with T.Mount(a, mnt, ["-o", "ro"]):
        with h5py.File(b, "r") as f:
            for g in groups:
                if sorted(os.listdir(mnt + g)) != sorted(f[g]):
                    T.fail("%s: a second mount lists %s otherwise than h5py" % (name, g))
            for o in objs:
                shown = sorted(x[5:] for x in os.listxattr(mnt + o) if not x.startswith("user.h5."))
                if shown != sorted(k for k in f[o].attrs if not k.startswith("h5.")):
                    T.fail("%s: a second mount shows %s's attributes otherwise than h5py" % (name, o))
    print("%s: %d changes of dense links and attributes as h5py makes them, then h5py r+ on top"
          % (name, len(ops)))


def fixed_string(work, fx):
    """A fixed-length string attribute in dense storage (netCDF's NC_CHAR)
    set through the mount takes the text's length, as in compact storage."""
    a = os.path.join(work, "fixed.h5")
    shutil.copy(os.path.join(fx, "netcdf.h5"), a)
    mnt = os.path.join(work, "mnt")
    with T.Mount(a, mnt):
        os.setxattr(mnt, "user.g03", b"a longer global text")
        os.setxattr(mnt, "user.g04", b"s")
        got = os.getxattr(mnt, "user.g03")
    with h5py.File(a, "r") as f:
        if (got != b"a longer global text" or f.attrs["g03"] != b"a longer global text" or f.attrs["g04"] != b"s"
                or f.attrs.get_id("g03").dtype.kind != "S"):
            T.fail("fixed-length strings in dense storage: %r %r %r" % (got, f.attrs["g03"], f.attrs["g04"]))
        if list(f.attrs)[:6] != ["_NCProperties", "g00", "g01", "g02", "g03", "g04"]:
            T.fail("fixed-length strings in dense storage: the order changed: %r" % list(f.attrs)[:6])
    r = subprocess.run(["ncdump", "-h", a], capture_output=True, timeout=120)
    if r.returncode != 0 or b'g03 = "a longer global text"' not in r.stdout:
        T.fail("ncdump -h after fixed-length strings: exit %d: %r" % (r.returncode, r.stdout[-300:]))
    print("netcdf.h5: fixed-length string attributes in dense storage, ncdump reads them")


def large(work):
    """A dense group whose heap is past the root's direct blocks (512 KiB
    of link messages: child indirect blocks), changed through the mount,
    then by h5py 'r+' (libhdf5 allocating after our blocks)."""
    a, b = os.path.join(work, "large.h5"), os.path.join(work, "large-ref.h5")
    with h5py.File(a, "w", libver="latest") as f:
        g = f.create_group("big")
        for i in range(5000):
            g["s%05d_%s" % (i, "x" * 50)] = h5py.SoftLink("/target/%05d/%s" % (i, "y" * 50))
    shutil.copy(a, b)
    mnt = os.path.join(work, "mnt")
    gone, moved = "s00007_" + "x" * 50, "s00008_" + "x" * 50
    with T.Mount(a, mnt):
        os.mkdir(mnt + "/big/newdir")
        os.unlink(mnt + "/big/" + gone)
        os.rename(mnt + "/big/" + moved, mnt + "/big/renamed")
        if len(os.listdir(mnt + "/big")) != 5000:
            T.fail("large: %d names listed, expected 5000" % len(os.listdir(mnt + "/big")))
    with h5py.File(b, "r+") as f:
        g = f["big"]
        g.create_group("newdir")
        del g[gone]
        g.move(moved, "renamed")
    for p in (a, b):
        with h5py.File(p, "r+") as f:
            g = f["big"]
            for i in range(800):
                g["t%04d_%s" % (i, "z" * 60)] = h5py.SoftLink("/q%d" % i)
            for k in list(g)[::7]:
                del g[k]
    compare("large dense group", state(a), state(b))
    r = subprocess.run(["h5dump", "-H", a], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        T.fail("large: h5dump: exit %d: %s" % (r.returncode, r.stderr.decode()[-300:]))
    print("a dense group of 5000 links (a 650 KB heap): changes through the mount, then h5py r+ on top")


def attr_heap(path, what="Attributes"):
    """h5stat's bytes of attribute (or group) heaps (0: no dense storage)."""
    r = subprocess.run(["h5stat", path], capture_output=True, timeout=120)
    part = r.stdout.decode().split("\t%s:\n" % what, 1)
    if r.returncode or len(part) < 2:
        return None
    for line in part[1].splitlines():
        if line.strip().startswith("Heap:"):
            return int(line.split(":")[1])
    return None


def shrink(work):
    """Removals below libhdf5's minimum of dense attributes (6) move them
    back into the header, as libhdf5 does (H5O__attr_remove_update): with
    and without creation order tracked and indexed, the attributes in
    h5py's order, no attribute heap left (h5stat), and libhdf5 going dense
    again from there when h5py adds attributes."""
    a, b = os.path.join(work, "shrink.h5"), os.path.join(work, "shrink-h5py.h5")
    for path in (a, b):
        with h5py.File(path, "w", libver="latest") as f:
            for name, track in (("g", False), ("t", True)):
                g = f.create_group(name, track_order=track)
                for i in range(10):
                    g.attrs["a%d" % i] = np.int64(i) if i % 2 else "s%d" % i
                    g.create_group("m%d" % i)
    mnt = os.path.join(work, "mnt-shrink")
    with T.Mount(a, mnt):
        for name in ("g", "t"):
            for i in (0, 3, 4, 7, 9):
                os.removexattr(os.path.join(mnt, name), "user.a%d" % i)
                os.rmdir(os.path.join(mnt, name, "m%d" % i))
    with h5py.File(b, "r+") as f:
        for name in ("g", "t"):
            for i in (0, 3, 4, 7, 9):
                del f[name].attrs["a%d" % i]
                del f[name]["m%d" % i]
    compare("shrink", state(a), state(b))
    bad = h514.compare(a)
    if bad:
        T.fail("shrink: libhdf5 1.14 reads otherwise than 1.10:\n  %s" % "\n  ".join(bad[:10]))
    for what in ("Attributes", "Groups"):
        ha, hb = attr_heap(a, what), attr_heap(b, what)
        if ha != 0 or hb != 0:
            T.fail("shrink: %s heaps after the removals: h5fs %r, h5py %r bytes (0: compact)" % (what, ha, hb))
    for path in (a, b):
        with h5py.File(path, "r+") as f:
            for name in ("g", "t"):
                for i in range(10, 16):
                    f[name].attrs["b%d" % i] = np.float64(i)
                    f[name].create_group("n%d" % i)
    compare("shrink, then h5py", state(a), state(b))
    for what in ("Attributes", "Groups"):
        if attr_heap(a, what) != attr_heap(b, what):
            T.fail("shrink, then h5py: %s heaps %r vs %r bytes" % (what, attr_heap(a, what), attr_heap(b, what)))


def long_links(work):
    """Issue 81: a soft link of a 4,090-byte target (a 4,097-byte Link
    message, more than a new dense store's heap keeps in place) in a
    latest-format compact group, then ten creates that take the group past
    its compact limit in one batch, and a mkdir: every one answered is in
    FILE (the group stays compact past its limit: libhdf5 reads it, and
    moves it to dense storage at its own next insert, where h5fs then
    changes it). The same link into a group already dense is refused at
    once (ENAMETOOLONG), nothing of it written."""
    a = os.path.join(work, "long.h5")
    with h5py.File(a, "w", libver="latest") as f:
        f.create_group("g/d")
        e = f.create_group("g/e")
        for i in range(12):
            e["x%d" % i] = [i]
    mnt = os.path.join(work, "mnt-long")
    target = "x" * 4090
    with T.Mount(a, mnt):
        os.symlink(target, mnt + "/g/d/l")
        for i in range(10):
            with open(mnt + "/g/d/f%d" % i, "w") as fh:
                fh.write("data%d\n" % i)
        os.mkdir(mnt + "/g/after")
        T.expect_err("a 4 KiB soft link into a dense group", lambda: os.symlink(target, mnt + "/g/e/l"),
                     (errno.ENAMETOOLONG,))
        if len(os.listdir(mnt + "/g/d")) != 11 or os.readlink(mnt + "/g/d/l") != target:
            T.fail("long links: the mount lists %r" % sorted(os.listdir(mnt + "/g/d"))[:12])
    with h5py.File(a, "r+") as f:
        d = f["g/d"]
        names = sorted(d)
        if names != sorted(["l"] + ["f%d" % i for i in range(10)]) or "after" not in f["g"]:
            T.fail("long links: h5py reads %r" % names)
        if d.get("l", getlink=True).path != target or bytes(d["f9"][()]) != b"data9\n":
            T.fail("long links: the link or a file's bytes differ")
        if "l" in f["g/e"]:
            T.fail("long links: the refused link is in the dense group")
        d["by_h5py"] = [1]  # libhdf5 moves the group to dense storage (the link a huge object)
    with T.Mount(a, mnt):
        with open(mnt + "/g/d/more", "w") as fh:
            fh.write("more\n")
        os.unlink(mnt + "/g/d/f0")
        if os.readlink(mnt + "/g/d/l") != target:
            T.fail("long links: the link after libhdf5 moved the group to dense storage")
    with h5py.File(a, "r") as f:
        names = sorted(f["g/d"])
        if "more" not in names or "f0" in names or "by_h5py" not in names or len(names) != 12:
            T.fail("long links: after h5fs changed libhdf5's dense group (a huge link in it): %r" % names)
    print("a 4 KiB soft link: its group stays compact past the limit, every create kept; refused at once "
          "into dense storage")


def main():
    work = T.workdir("dense")
    long_links(work)
    fx = os.path.join(work, "fx")
    MF.make(fx)
    run(work, fx, "latest.h5", 41)
    run(work, fx, "netcdf.h5", 42)
    fixed_string(work, fx)
    large(work)
    shrink(work)
    shutil.rmtree(work, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
