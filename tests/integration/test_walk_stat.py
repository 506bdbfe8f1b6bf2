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
A read-write mount's listing is taken at its word too while none of its
own changes began since it was read (node/hold.c fs_change_begin): the
same through -o rw mounts, against a fresh -o rw mount's lookups, of
  * a cold walk;
  * a walk after the mount's own changes (mkdir, create and write, a
    write that grows a dataset, rename, rename over a name, rm, setfattr,
    utime);
  * a walk of a group of 1,000 names read by getdents64(2) a page at a
    time, with those changes made to names not read yet between two of
    its reads, the kernel's dentries dropped then (as root): every name
    the listing gives has what a lookup of it gives now, or is gone.
The next directory's listing is made ahead of its readdir (member/ahead.c:
after a listing of several groups, the readdir of one asks for the one
after it): one made ahead and then changed, through the -o rw mount
(create, rm, rename) or by h5py while an -o ro mount watches FILE (a new
generation), lists what a fresh mount lists, not what was made ahead.
"""
import ctypes
import os
import platform
import stat
import sys
import time

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


def lstat_of(mnt, rel):
    """what looked_up gives of one name, None when it is gone"""
    try:
        s = os.lstat(os.path.join(mnt, rel))
    except FileNotFoundError:
        return None
    return (kind(s.st_mode), s.st_ino, tuple(getattr(s, k) for k in FIELDS))


def looked_up(mnt, rels):
    """the same of each of rels by a lookup of its path alone, deepest
    first (nothing listed)"""
    out = {}
    for rel in sorted(rels, key=lambda r: (-r.count("/"), r)):
        out[rel] = lstat_of(mnt, rel)
    return out


def shown(v):
    """what must match: a symlink's number is given per (directory, name)
    in the order names are first met, another mount's another"""
    if v is None or v[0] != "l":
        return v
    return (v[0], None, (v[2][0], None) + v[2][2:])


def shown_rw(v):
    """shown, and a symlink's times not either: a symlink shows FILE's
    time as the mount found it (node.c node_make_link: fs->file_mtime),
    the fresh mount's a second later where this mount's changes moved it"""
    v = shown(v)
    if v is None or v[0] != "l":
        return v
    return (v[0], None, v[2][:8])


def compare(tag, a, b, show=shown):
    if not a:
        T.fail("%s: nothing listed" % tag)
    for rel in sorted(set(a) | set(b)):
        if show(a.get(rel)) != show(b.get(rel)):
            T.fail("%s: %s: listed %s, looked up %s" % (tag, rel, a.get(rel), b.get(rel)))


def fresh_lookups(path, mnt, rels, mode="ro"):
    with T.Mount(path, mnt, ["-o", mode]) as m, m.watchdog(60):
        return looked_up(mnt, rels)


SYS_GETDENTS64 = {"x86_64": 217, "aarch64": 61}.get(platform.machine())
_libc = ctypes.CDLL(None, use_errno=True)


def getdents(fd, size=4096):
    """the names one getdents64(2) of a size-byte buffer gives (a page:
    one READDIRPLUS, so the rest of the listing is read after what the
    caller does next)"""
    buf = ctypes.create_string_buffer(size)
    n = _libc.syscall(SYS_GETDENTS64, fd, buf, size)
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    names, i, raw = [], 0, buf.raw[:n]
    while i < n:
        reclen = int.from_bytes(raw[i + 16:i + 18], "little")
        names.append(raw[i + 19:i + reclen].split(b"\0", 1)[0].decode())
        i += reclen
    return names


def drop_dentries():
    """the kernel's dentries and inodes dropped, and its FORGETs (sent
    after) given the daemon a moment to arrive"""
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("2")
    except OSError:
        return      # (not root: the kernel keeps what it holds; still compared)
    time.sleep(0.3)


def walk_interleaved(mnt, rel, changes, ahead):
    """rel path -> lstat_of of the names directory rel's listing gives
    after changes() ran: read a page at a time, the first `ahead` names
    (or more: a page's) before it, the kernel's dentries dropped after it.
    (What was read before shows FILE's time then, an object's own where
    it has none: every change moves it.)"""
    out, before = {}, 0
    fd = os.open(os.path.join(mnt, rel), os.O_RDONLY | os.O_DIRECTORY)
    changed = False
    try:
        while True:
            names = getdents(fd)
            if not names:
                break
            for nm in names:
                if nm in (".", ".."):
                    continue
                s = lstat_of(mnt, os.path.join(rel, nm))
                if changed:
                    out[os.path.join(rel, nm)] = s
                else:
                    before += 1
            if not changed and before >= ahead:
                changes()
                drop_dentries()
                changed = True
    finally:
        os.close(fd)
    if not changed or before + len(out) < 1000:
        T.fail("rw interleaved: %d names before the changes, %d after" % (before, len(out)))
    return out


def compare_now(tag, a, b):
    """a (names that may be gone: None) against b"""
    if not any(a.values()):
        T.fail("%s: nothing listed" % tag)
    for rel in sorted(a):
        if shown(a[rel]) != shown(b.get(rel)):
            T.fail("%s: %s: listed %s, looked up %s" % (tag, rel, a[rel], b.get(rel)))


def make_rw(d):
    path = make(d, "earliest")
    with h5py.File(path, "a") as f:
        g = f.create_group("g/grow")
        g.create_dataset("log", data=np.arange(10, dtype="u1"), maxshape=(None,), chunks=(16,))
        # (times of their own: a stat-only record keeps only those, or
        # FILE's current one, so a stale size or time would be kept)
        w = f.create_group("wide")
        for i in range(1000):
            w.create_dataset("d%03d" % i, data=np.arange(i % 5, dtype="i1"), track_times=True)
        w.create_dataset("tail", data=np.arange(4, dtype="u1"), maxshape=(None,), chunks=(8,), track_times=True)
    return path


def own_changes(mnt, top, names):
    """a read-write mount's own changes in directory top, of the listed
    names names[0..5] (datasets) and of new ones"""
    a, b, c, d, e, grow = names
    os.mkdir(os.path.join(mnt, top, "newdir"))
    with open(os.path.join(mnt, top, "newfile"), "wb") as fh:
        fh.write(b"abc")
    with open(os.path.join(mnt, top, grow), "ab") as fh:
        fh.write(bytes(range(40)))
    os.rename(os.path.join(mnt, top, a), os.path.join(mnt, top, "moved"))
    os.rename(os.path.join(mnt, top, b), os.path.join(mnt, top, c))
    os.unlink(os.path.join(mnt, top, d))
    os.setxattr(os.path.join(mnt, top, e), "user.note", b"set while walking")
    os.utime(os.path.join(mnt, top, e), (1000000000, 1000000000))


def run_rw():
    if SYS_GETDENTS64 is None:
        T.skip("getdents64's number on %s not known" % platform.machine())
    wd = T.workdir("walk_stat_rw")
    path = make_rw(wd)
    mnt, mnt2 = os.path.join(wd, "mnt"), os.path.join(wd, "mnt2")
    rw = ["-o", "rw"]
    with T.Mount(path, mnt, rw) as m, m.watchdog(120):
        first = listed(mnt)
        if "wide/d999" not in first or first["g/grow/log"][2][0] & 0o200 == 0:
            T.fail("rw: the walk: %d names, g/grow/log %s" % (len(first), first.get("g/grow/log")))
    compare("rw", first, fresh_lookups(path, mnt2, first, "rw"))
    # the mount's own changes, then a walk: its listings read after them
    with T.Mount(path, mnt, rw) as m, m.watchdog(120):
        own_changes(mnt, "g", ("contig", "chunked", "empty", "scalar", "timed", "grow/log"))
        drop_dentries()
        second = listed(mnt)
        if "g/moved" not in second or "g/scalar" in second or "g/newdir" not in second:
            T.fail("rw changed: the walk: %s" % sorted(second)[:20])
    compare("rw changed", second, fresh_lookups(path, mnt2, second, "rw"), shown_rw)
    # the same changes between two reads of one listing (the names
    # changed are read after them)
    with T.Mount(path, mnt, rw) as m, m.watchdog(120):
        third = walk_interleaved(mnt, "wide", lambda: own_changes(
            mnt, "wide", ("d750", "d780", "d790", "d760", "d770", "tail")), 100)
        if "wide/d760" not in third or third["wide/d760"] is not None or third["wide/d750"] is not None:
            T.fail("rw interleaved: %d names, d760 %s, d750 %s" % (len(third), third.get("wide/d760"),
                                                                     third.get("wide/d750")))
    compare_now("rw interleaved", third, fresh_lookups(path, mnt2, third, "rw"))


def make_ahead(d):
    path = os.path.join(d, "ahead.h5")
    with h5py.File(path, "w") as f:
        for g in range(6):
            for i in range(5):
                f["s%d/d%d" % (g, i)] = np.arange(i + 1, dtype="i4")
    return path


def ahead_case(tag, path, mnt, opts, change, ready):
    """s1's listing made ahead (s0's readdir asks for it), then change():
    s1 lists what a fresh mount lists"""
    with T.Mount(path, mnt, opts) as m, m.watchdog(60):
        os.listdir(mnt)                          # several groups: s0, s1, ...
        os.listdir(os.path.join(mnt, "s0"))      # s1's made ahead now
        time.sleep(0.5)
        change()
        if not T.wait_until(ready, 15):
            T.fail("%s: the change never showed" % tag)
            return
        got = sorted(os.listdir(os.path.join(mnt, "s1")))
    with T.Mount(path, mnt, ["-o", "ro"]) as m, m.watchdog(60):
        want = sorted(os.listdir(os.path.join(mnt, "s1")))
    if got != want:
        T.fail("%s: s1 listed %s, a fresh mount lists %s" % (tag, got, want))


def run_ahead():
    wd = T.workdir("walk_stat_ahead")
    mnt = os.path.join(wd, "mnt")
    path = make_ahead(wd)

    def own():
        s1 = os.path.join(mnt, "s1")
        with open(os.path.join(s1, "new"), "wb") as fh:
            fh.write(b"abc")
        os.unlink(os.path.join(s1, "d1"))
        os.rename(os.path.join(s1, "d2"), os.path.join(s1, "moved"))
    ahead_case("ahead rw", path, mnt, ["-o", "rw"], own, lambda: True)

    def other():
        with h5py.File(path, "a") as f:
            f["s1/ext"] = np.arange(3)
            del f["s1/d3"]
    ahead_case("ahead live", path, mnt, ["-o", "ro"], other,
               lambda: os.path.exists(os.path.join(mnt, "s1", "ext")))


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
run_rw()
run_ahead()
T.finish()
