#!/usr/bin/python3
"""`h5fs DIR MNT` (issue 25 items 1, 2, 5) on a generated collection
(make_collection_fixtures.py: nested folders, a few hundred HDF5 files of
every layout the fixture generators make, user blocks, a .h5 that is not
HDF5, HDF5 without a suffix, plain files, external links between folders,
VDS, two HDF5 files that cannot be opened):
- every folder lists what DIR holds: HDF5 files (by h5py.is_hdf5, i.e.
  libhdf5's signature search) as directories, others as files with their
  own bytes, mode and size;
- inside every member: every name, kind, size, symlink target and byte as
  h5py reads it (st_ino is the mount's: checked unique across members);
  xattrs exactly as a single-FILE mount of the same file shows them (a
  sample), and the attributes of every small file as h5py has them;
- an HDF5 file that cannot be opened is a directory whose listing gives
  EIO, with one log line however often it is tried;
- with -o max_files=8 the daemon never holds more than 8 descriptors on
  files under DIR (/proc/PID/fd, sampled while walking everything);
- files added, removed and changed while mounted show at the next
  listing (a member rewritten shows its new bytes, a plain file that
  becomes HDF5 a directory);
- a read-write mount appends to a member's dataset;
- a MOUNTPOINT inside DIR and an http(s) URL ending in '/' are refused
  with one line and exit status 3.
"""
import errno
import os
import shutil
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import make_collection_fixtures  # noqa: E402

NSMALL = 300
MAX_FILES = 8
BAD = ("bad/corrupt.h5", "bad/badroot.h5")
# virtual datasets that are each other's sources: libhdf5 crashes reading
# them (h5py segfaults), h5fs answers EIO (test_vds.py)
LOOPS = ("vds/loop_a.h5", "vds/loop_b.h5")
# datasets h5fs refuses with EIO where libhdf5 reads something (test_vds.py)
KNOWN_EIO = {("vds/typed.h5", "/mixed"), ("vds/outside.h5", "/bad")}
# chains of external links through more files than max_files allows at
# once: compared on a mount with the default max_files
CHAINS = ("links/master.h5",) + tuple("links/hops/h%02d.h5" % i for i in range(17))


def fd_targets(pid):
    """What pid's descriptors lead to now."""
    d = "/proc/%d/fd" % pid
    out = set()
    for n in os.listdir(d):
        try:
            out.add(os.readlink(os.path.join(d, n)))
        except OSError:
            pass
    return out


class FdSampler(threading.Thread):
    """The most descriptors pid held on files under root, sampled."""

    def __init__(self, pid, root):
        super().__init__(daemon=True)
        self.pid, self.root = pid, root.rstrip("/") + "/"
        self.max, self.worst, self.stop_ev = 0, [], threading.Event()

    def run(self):
        d = "/proc/%d/fd" % self.pid
        while not self.stop_ev.is_set():
            held = []
            try:
                for n in os.listdir(d):
                    try:
                        t = os.readlink(os.path.join(d, n))
                    except OSError:
                        continue
                    if t.startswith(self.root):
                        held.append(t)
            except OSError:
                return
            if len(held) > self.max:
                self.max, self.worst = len(held), held
            time.sleep(0.002)

    def stop(self):
        self.stop_ev.set()
        self.join(timeout=5)


SIG = b"\x89HDF\r\n\x1a\n"


def has_signature(path):
    """The spec's superblock search (II.A): the signature at 0, 512, 1024,
    2048, ... (libhdf5's H5Fis_accessible also needs a readable superblock,
    which the files of bad/ lack)."""
    size = os.path.getsize(path)
    off = 0
    with open(path, "rb") as fh:
        while off + 8 <= size:
            fh.seek(off)
            if fh.read(8) == SIG:
                return True
            off = off * 2 if off else 512
    return False


def dir_listing(col):
    """{rel path: "dir" | "member" | "file"} of DIR as h5fs should show it."""
    out = {}
    for dirpath, dirs, files in os.walk(col):
        rel = os.path.relpath(dirpath, col)
        rel = "" if rel == "." else rel + "/"
        for d in dirs:
            out[rel + d] = "dir"
        for f in files:
            p = os.path.join(dirpath, f)
            out[rel + f] = "member" if has_signature(p) else "file"
            if (rel + f) not in BAD and h5py.is_hdf5(p) != (out[rel + f] == "member"):
                raise SystemExit("%s: libhdf5 and the signature search disagree" % p)
    return out


def check_folders(col, mnt, kinds, rep):
    for rel, kind in sorted(kinds.items()):
        try:
            st = os.lstat(os.path.join(mnt, rel))
        except OSError as e:
            if rel in BAD and e.errno == errno.EIO:
                continue
            rep.bad("%s: lstat: %s" % (rel, e))
            continue
        want_dir = kind in ("dir", "member")
        if stat.S_ISDIR(st.st_mode) != want_dir:
            rep.bad("%s: shown as %s, DIR has a %s" % (rel, "dir" if stat.S_ISDIR(st.st_mode) else "file", kind))
            continue
        src = os.stat(os.path.join(col, rel))
        if kind == "file":
            if stat.S_IMODE(st.st_mode) != stat.S_IMODE(src.st_mode) & 0o444:
                rep.bad("%s: mode %o" % (rel, stat.S_IMODE(st.st_mode)))
            if st.st_size != src.st_size:
                rep.bad("%s: st_size %d, DIR %d" % (rel, st.st_size, src.st_size))
            with open(os.path.join(mnt, rel), "rb") as fh:
                got = fh.read()
            if got != open(os.path.join(col, rel), "rb").read():
                rep.bad("%s: bytes differ" % rel)
            else:
                rep.compared += 1
        elif stat.S_IMODE(st.st_mode) != 0o555:
            rep.bad("%s: directory mode %o" % (rel, stat.S_IMODE(st.st_mode)))
    # every folder lists exactly DIR's names (members' insides are below)
    for dirpath, dirs, files in os.walk(col):
        rel = os.path.relpath(dirpath, col)
        try:
            got = sorted(os.listdir(os.path.join(mnt, rel)))
        except OSError as e:
            rep.bad("%s: listdir: %s" % (rel, e))
            continue
        if got != sorted(dirs + files):
            rep.bad("%s: lists %s, DIR has %s" % (rel, sorted(set(got) ^ set(dirs + files)), "the others"))


def check_members(col, mnt, members, rep, inos):
    for rel in members:
        if rel in BAD:
            continue
        if rel in LOOPS:
            try:
                open(os.path.join(mnt, rel, "v"), "rb").read()
                rep.bad("%s/v: read, expected EIO" % rel)
            except OSError as e:
                if e.errno != errno.EIO:
                    rep.bad("%s/v: %s, expected EIO" % (rel, e))
            continue
        expected, _root = T.h5py_tree(os.path.join(col, rel), root_dir=col)
        for e in expected.values():
            e.addr = None       # st_ino is the mount's own in a collection
        for r, p in KNOWN_EIO:
            if r == rel and p in expected:
                # compare() accepts EIO for what "h5py cannot" read
                expected[p].kind = "?"
                expected[p].why = "h5py cannot: h5fs refuses it (test_vds.py)"
                try:
                    os.lstat(os.path.join(mnt, rel) + p)
                    rep.bad("%s%s: found, expected EIO" % (rel, p))
                except OSError as e:
                    if e.errno != errno.EIO:
                        rep.bad("%s%s: %s, expected EIO" % (rel, p, e))
        sub = T.Report(rel)
        actual = T.compare(expected, None, os.path.join(mnt, rel), sub, windows=20)
        rep.compared += sub.compared + sub.chunked_ok
        for m in sub.fail + sub.chunked_fail:
            rep.bad("%s: %s" % (rel, m))
        for p, (kind, st, _t, _err) in (actual or {}).items():
            if st is not None and kind != "link":
                inos.setdefault(st.st_ino, set()).add(rel)


def xattrs_of(root):
    """{path: {name: value}} of every entry under root."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for n in [""] + dirs + files:
            p = os.path.join(dirpath, n) if n else dirpath
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                continue
            try:
                out[rel] = {a: os.getxattr(p, a) for a in os.listxattr(p)}
            except OSError as e:
                out[rel] = "error %d" % e.errno
    return out


def check_xattrs(col, mnt, wd, sample, rep):
    """xattrs in the collection = those of a single-FILE mount of the file."""
    single = os.path.join(wd, "single")
    for rel in sample:
        # ext_any: the collection follows links anywhere inside DIR
        with T.Mount(os.path.join(col, rel), single, ["-o", "ro,ext_any"]) as m:
            with m.watchdog(120):
                want = xattrs_of(single)
        got = xattrs_of(os.path.join(mnt, rel))
        if got != want:
            diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            rep.bad("%s: xattrs differ from a single-FILE mount at %s" % (rel, diff[:5]))
        else:
            rep.compared += 1


def check_small_attrs(col, mnt, rep):
    for i in range(NSMALL):
        rel = "many/a%02d/b%02d/f%03d.h5" % (i // 50, i // 10 % 5, i)
        p = os.path.join(mnt, rel)
        try:
            title = os.getxattr(p, "user.title")
            index = os.getxattr(p, "user.index")
            scale = os.getxattr(os.path.join(p, "grp"), "user.scale")
        except OSError as e:
            rep.bad("%s: getxattr: %s" % (rel, e))
            continue
        with h5py.File(os.path.join(col, rel), "r") as f:
            want = (f.attrs["title"], int(f.attrs["index"]), float(f["grp"].attrs["scale"]))
        got = (title.decode(), int(index), float(scale))
        if got != want:
            rep.bad("%s: attributes %r, h5py %r" % (rel, got, want))


def check_bad(mnt, m, rep):
    for rel in BAD:
        p = os.path.join(mnt, rel)
        st = os.stat(p)
        if not stat.S_ISDIR(st.st_mode):
            rep.bad("%s: not shown as a directory" % rel)
        for _ in range(3):
            try:
                os.listdir(p)
                rep.bad("%s: listed, expected EIO" % rel)
            except OSError as e:
                if e.errno != errno.EIO:
                    rep.bad("%s: listdir: %s, expected EIO" % (rel, e))
            try:
                os.stat(os.path.join(p, "x"))
                rep.bad("%s/x: found, expected EIO" % rel)
            except OSError as e:
                if e.errno != errno.EIO:
                    rep.bad("%s/x: %s, expected EIO" % (rel, e))
        lines = [ln for ln in m.output().splitlines() if rel in ln]
        if len(lines) != 1:
            rep.bad("%s: %d log lines, expected one: %r" % (rel, len(lines), lines[:3]))


def wait_for(what, fn, seconds=10):
    return T.wait_until(fn, seconds, 0.1)


def check_changes(col, mnt, rep, pid):
    odd = os.path.join(col, "odd")
    # added: an HDF5 file and a plain one
    with h5py.File(os.path.join(odd, "added.h5"), "w") as f:
        f["d"] = np.arange(7, dtype="<i4")
    open(os.path.join(odd, "added.txt"), "w").write("new\n")
    names = os.listdir(os.path.join(mnt, "odd"))
    if "added.h5" not in names or "added.txt" not in names:
        rep.bad("added files not in the next listing: %s" % sorted(names))
    else:
        got = open(os.path.join(mnt, "odd", "added.h5", "d"), "rb").read()
        if got != np.arange(7, dtype="<i4").tobytes():
            rep.bad("odd/added.h5/d: bytes differ")
        if open(os.path.join(mnt, "odd", "added.txt")).read() != "new\n":
            rep.bad("odd/added.txt: bytes differ")
    # removed
    os.unlink(os.path.join(odd, "README"))
    if "README" in os.listdir(os.path.join(mnt, "odd")):
        rep.bad("odd/README still listed after its removal")
    if not wait_for("README gone", lambda: not os.path.exists(os.path.join(mnt, "odd", "README"))):
        rep.bad("odd/README still found 10 s after its removal")
    # a folder added
    os.makedirs(os.path.join(col, "newdir", "deeper"))
    if "newdir" not in os.listdir(mnt) or os.listdir(os.path.join(mnt, "newdir")) != ["deeper"]:
        rep.bad("newdir/deeper not shown")
    # a member rewritten: its new bytes (live files, -o refresh)
    rel = "many/a00/b00/f001.h5"
    before = open(os.path.join(mnt, rel, "contig"), "rb").read()
    new = np.arange(100, 140, dtype="<i4")
    tmp = os.path.join(col, "many", "a00", "b00", ".f001.tmp")
    with h5py.File(tmp, "w") as f:
        f["contig"] = new
    os.rename(tmp, os.path.join(col, rel))
    if not wait_for("rewritten", lambda: open(os.path.join(mnt, rel, "contig"), "rb").read() == new.tobytes()):
        rep.bad("%s: still %d old bytes 10 s after it was rewritten" % (rel, len(before)))
    # a member replaced while it was closed (max_files: the members read
    # after it close it), where no look for changes reaches: at its next
    # opening the kernel's pages of the old file go too (they stayed for
    # good: dataset ids keep their numbers across openings)
    rel = "many/a00/b00/f002.h5"
    before = open(os.path.join(mnt, rel, "contig"), "rb").read()
    real = os.path.realpath(os.path.join(col, rel))

    def closed():
        for i in range(3, 3 + MAX_FILES):
            open(os.path.join(mnt, "many/a%02d/b%02d/f%03d.h5" % (i // 50, i // 10 % 5, i), "contig"), "rb").read()
        return real not in fd_targets(pid)
    if not wait_for("closed", closed):
        rep.bad("%s: still open after %d other members were read (max_files=%d)" % (rel, MAX_FILES, MAX_FILES))
    new = np.arange(200, 233, dtype="<i4")
    tmp = os.path.join(col, "many", "a00", "b00", ".f002.tmp")
    with h5py.File(tmp, "w") as f:
        f["contig"] = new
    os.rename(tmp, os.path.join(col, rel))
    if not wait_for("replaced while closed",
                    lambda: open(os.path.join(mnt, rel, "contig"), "rb").read() == new.tobytes()):
        rep.bad("%s: replaced while closed, still %d old bytes 10 s after" % (rel, len(before)))
    # a plain file that becomes HDF5 (same name)
    p = os.path.join(odd, "fake.h5")
    with h5py.File(p + ".tmp", "w") as f:
        f["now"] = np.arange(3, dtype="<u1")
    os.rename(p + ".tmp", p)
    if not wait_for("plain to HDF5", lambda: os.path.isdir(os.path.join(mnt, "odd", "fake.h5"))
                    and os.listdir(os.path.join(mnt, "odd", "fake.h5")) == ["now"]):
        rep.bad("odd/fake.h5: not shown as the HDF5 file it became")


def check_append(wd, rep):
    col = os.path.join(wd, "rwcol")
    os.makedirs(os.path.join(col, "sub"))
    p = os.path.join(col, "sub", "grow.h5")
    with h5py.File(p, "w", libver="latest") as f:
        f.create_dataset("rows", data=np.arange(8, dtype="<i8"), chunks=(4,), maxshape=(None,))
    mnt = os.path.join(wd, "rwmnt")
    with T.Mount(col, mnt, []) as m:
        with m.watchdog(60):
            ds = os.path.join(mnt, "sub", "grow.h5", "rows")
            with open(ds, "ab") as fh:
                fh.write(np.arange(8, 20, dtype="<i8").tobytes())
            if os.stat(ds).st_size != 20 * 8:
                rep.bad("appended dataset: st_size %d, expected %d" % (os.stat(ds).st_size, 160))
    with h5py.File(p, "r") as f:
        got = f["rows"][()]
    if not np.array_equal(got, np.arange(20, dtype="<i8")):
        rep.bad("append through a collection: h5py reads %r" % got[:24])


def expect_refused(label, args, rep, hint):
    r = subprocess.run([T.H5FS, "-f"] + args, capture_output=True, timeout=30)
    err = r.stderr.decode("utf-8", "replace").strip().splitlines()
    if r.returncode != 3 or len(err) != 1 or not err[0].startswith("h5fs: %s: " % args[0]) or hint not in err[0]:
        rep.bad("%s: exit %d, stderr %r" % (label, r.returncode, err))
    if T.is_mounted(args[1]):
        subprocess.run(["fusermount3", "-u", args[1]], timeout=10)
        rep.bad("%s: something was mounted" % label)


def main():
    wd = T.workdir("collection")
    col = os.path.join(wd, "col")
    t0 = time.monotonic()
    make_collection_fixtures.make(col, NSMALL)
    kinds = dir_listing(col)
    members = sorted(r for r, k in kinds.items() if k == "member")
    print("collection: %d HDF5 files, %d plain files, %d folders (%.1f s to write)" % (
        len(members), sum(k == "file" for k in kinds.values()), sum(k == "dir" for k in kinds.values()),
        time.monotonic() - t0))
    rep = T.Report("collection")
    mnt = os.path.join(wd, "mnt")
    inos = {}
    with T.Mount(col, mnt, ["-o", "ro,max_files=%d" % MAX_FILES]) as m:
        sampler = FdSampler(m.proc.pid, os.path.realpath(col))
        sampler.start()
        try:
            with m.watchdog(900):
                t1 = time.monotonic()
                check_folders(col, mnt, kinds, rep)
                print("  %s: %.1f s" % ('check_folders', time.monotonic() - t1), flush=True)
                t1 = time.monotonic()
                check_members(col, mnt, [r for r in members if r not in CHAINS], rep, inos)
                print("  %s: %.1f s" % ('check_members', time.monotonic() - t1), flush=True)
                t1 = time.monotonic()
                check_small_attrs(col, mnt, rep)
                print("  %s: %.1f s" % ('check_small_attrs', time.monotonic() - t1), flush=True)
                t1 = time.monotonic()
                check_bad(mnt, m, rep)
                print("  %s: %.1f s" % ('check_bad', time.monotonic() - t1), flush=True)
                sample = ["fixtures/sink_latest.h5", "fixtures/sink_userblock.h5", "xlink/top.h5",
                          "vds/stack.h5", "chunked/idx_earray.h5", "links/sub/data.h5", "odd/noext",
                          "many/a02/b03/f133.h5"]
                t1 = time.monotonic()
                check_xattrs(col, mnt, wd, sample, rep)
                print("  %s: %.1f s" % ('check_xattrs', time.monotonic() - t1), flush=True)
        finally:
            sampler.stop()
        print("most descriptors under DIR held at once: %d (max_files=%d)" % (sampler.max, MAX_FILES))
        if sampler.max > MAX_FILES:
            rep.bad("%d descriptors under DIR at once, max_files=%d: %s" % (
                sampler.max, MAX_FILES, sorted(sampler.worst)))
        if sampler.max == 0:
            rep.bad("the sampler saw no descriptor under DIR at all")
        shared = {i: r for i, r in inos.items() if len(r) > 1}
        if shared:
            i, r = next(iter(shared.items()))
            rep.bad("%d st_ino values shown in several files, e.g. %d in %s" % (len(shared), i, sorted(r)))
        with m.watchdog(120):
            check_changes(col, mnt, rep, m.proc.pid)
    # chains of 16 external links need 17 descriptors at once
    with T.Mount(col, mnt, ["-o", "ro"]) as m:
        with m.watchdog(300):
            check_members(col, mnt, [r for r in members if r in CHAINS], rep, {})
    check_append(wd, rep)
    expect_refused("MOUNTPOINT inside DIR", [col, os.path.join(col, "odd")], rep, "the mountpoint")
    os.makedirs(os.path.join(wd, "m3"), exist_ok=True)
    expect_refused("http URL ending in /", ["http://127.0.0.1:9/some/dir/", os.path.join(wd, "m3")], rep,
                   "HTTP")
    rep.show()
    if rep.failed():
        return 1
    shutil.rmtree(wd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
