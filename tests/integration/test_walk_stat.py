#!/usr/bin/python3
"""A walk's READDIRPLUS answers equal the lookups' (issue 82).

A listing of a mount that does not write reads each child's header once
and answers its READDIRPLUS entry from that read: d_type, and a dataset's
or named datatype's stat kept as a stat-only record without a node
(member/read.c struct dstat, lookup.c show_listed). A name looked up on
its own (no listing: LOOKUP) makes its node from the header instead
(node.c node_make_obj_as). Both must show the same.

Fixtures written by h5py (deterministic), h5py's default format and
libver "latest": datasets contiguous, chunked and deflated, empty, scalar,
never written, variable-length strings (shown as text), with a time of
their own; a named datatype, linked twice; a dataset at two names (hard
links: one st_ino, st_nlink 2); soft links (in the tree, dangling, up the
tree); external links to a dataset, a group and a missing file; a group
of new-style links in the default format (a symbol-table entry that
caches no type) and a group of 300 datasets. Through real -o ro mounts:
  * every name found by scandir (READDIRPLUS) has the lstat fields and the
    type (d_type where the kernel has it) that os.lstat of the same path
    gives on a fresh mount where nothing was listed (a LOOKUP each, in
    reverse order);
  * after FILE is changed by h5py while mounted (a live mount: a new
    generation; objects added, one removed, one rewritten) the same holds
    between the mount that saw both generations and a fresh one.
"""
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

FIELDS = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks", "st_blksize",
          "st_mtime_ns", "st_ctime_ns", "st_atime_ns")


def make(d, libver):
    with h5py.File(os.path.join(d, "ext.h5"), "w") as f:
        f["x/y"] = np.arange(10)
        f.create_group("eg/sub")["z"] = np.arange(3.0)
    path = os.path.join(d, "walk_%s.h5" % libver)
    with h5py.File(path, "w", libver=libver) as f:
        g = f.create_group("g")
        g["contig"] = np.arange(100, dtype="i4")
        g.create_dataset("chunked", data=np.arange(1000), chunks=(100,), compression="gzip")
        g.create_dataset("empty", shape=(0,), dtype="f8")
        g.create_dataset("scalar", data=3.5)
        g.create_dataset("unwritten", shape=(50,), dtype="i2")
        g.create_dataset("vstr", data=np.array(["a", "bcd", "ef"], dtype=object), dtype=h5py.string_dtype())
        g.create_dataset("timed", data=np.arange(3), track_times=True)
        f["dt"] = np.dtype([("a", "i4"), ("b", "f8")])
        g["dt2"] = f["dt"]
        g["hard2"] = g["contig"]
        f["soft"] = h5py.SoftLink("/g/contig")
        g["dangling"] = h5py.SoftLink("/nope")
        g["up"] = h5py.SoftLink("/g")
        g["hardup"] = g
        f["ext"] = h5py.ExternalLink("ext.h5", "/x/y")
        f["extgrp"] = h5py.ExternalLink("ext.h5", "/eg")
        f["extbad"] = h5py.ExternalLink("nofile.h5", "/x")
        t = f.create_group("tracked", track_order=True)
        for i in range(20):
            t["d%02d" % i] = np.arange(i)
        t.create_group("sub")["q"] = np.arange(2)
        big = f.create_group("big")
        for i in range(300):
            big["d%03d" % i] = np.arange(i % 7, dtype="i8")
    return path


def kind(mode):
    return "d" if stat.S_ISDIR(mode) else "l" if stat.S_ISLNK(mode) else "f" if stat.S_ISREG(mode) else "?"


def listed(mnt):
    """rel path -> (type scandir says, its inode, lstat fields) of every
    name, by listings (READDIRPLUS)"""
    out = {}
    stack = [mnt]
    while stack:
        d = stack.pop()
        for e in os.scandir(d):
            rel = os.path.relpath(e.path, mnt)
            t = "d" if e.is_dir(follow_symlinks=False) else "l" if e.is_symlink() else "f"
            s = os.lstat(e.path)
            out[rel] = (t, e.inode(), tuple(getattr(s, k) for k in FIELDS))
            if t == "d":
                stack.append(e.path)
    return out


def looked_up(mnt, rels):
    """the same of each of rels by a lookup of its path alone, deepest
    first (nothing listed)"""
    out = {}
    for rel in sorted(rels, key=lambda r: (-r.count("/"), r)):
        s = os.lstat(os.path.join(mnt, rel))
        out[rel] = (kind(s.st_mode), s.st_ino, tuple(getattr(s, k) for k in FIELDS))
    return out


def shown(v):
    """what must match: a symlink's number is given per (directory, name)
    in the order names are first met, another mount's another"""
    if v is None or v[0] != "l":
        return v
    return (v[0], None, (v[2][0], None) + v[2][2:])


def compare(tag, a, b):
    if not a:
        T.fail("%s: nothing listed" % tag)
    for rel in sorted(set(a) | set(b)):
        if shown(a.get(rel)) != shown(b.get(rel)):
            T.fail("%s: %s: listed %s, looked up %s" % (tag, rel, a.get(rel), b.get(rel)))


def fresh_lookups(path, mnt, rels):
    with T.Mount(path, mnt, ["-o", "ro"]) as m, m.watchdog(60):
        return looked_up(mnt, rels)


def run(libver):
    wd = T.workdir("walk_stat")
    path = make(wd, libver)
    mnt, mnt2 = os.path.join(wd, "mnt"), os.path.join(wd, "mnt2")
    with T.Mount(path, mnt, ["-o", "ro"]) as m, m.watchdog(120):
        first = listed(mnt)
        compare("%s" % libver, first, fresh_lookups(path, mnt2, first))
        # the kinds and records this mount keeps: a second walk answers
        # from them (the kernel's dentries dropped first)
        try:
            with open("/proc/sys/vm/drop_caches", "w") as fh:
                fh.write("2")
        except OSError:
            pass        # (not root: the kernel's copies answer; the same)
        compare("%s again" % libver, listed(mnt), first)
        # a new generation: the live mount lists it
        with h5py.File(path, "a") as f:
            f["g/new"] = np.arange(7, dtype="i2")
            del f["g/scalar"]
            del f["big/d000"]
            f["big/d000"] = np.arange(40, dtype="f4")
            f.create_group("newgrp")["n"] = np.arange(3)
        if not T.wait_until(lambda: os.path.exists(os.path.join(mnt, "newgrp", "n")), 15):
            T.fail("%s: the change never showed" % libver)
            return
        second = listed(mnt)
        if "g/new" not in second or "g/scalar" in second:
            T.fail("%s: the listing after the change: %s" % (libver, sorted(second)[:10]))
        compare("%s changed" % libver, second, fresh_lookups(path, mnt2, second))


for lv in ("earliest", "latest"):
    run(lv)
T.finish()
