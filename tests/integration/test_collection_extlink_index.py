#!/usr/bin/python3
"""Members with external links in the collection index (issue 35): a
member whose tree shows objects of other files (external links followed
in place, to files beside it, in a subfolder, through a chain of two
files, to a dataset, and one dangling) is recorded with the stamps of the
files it reaches (table related), so that:
- a cold indexed mount and a warm remount show exactly what a -o noindex
  mount shows (names in readdir order, every stat field, st_ino as the
  pattern of which paths share one, symlink targets, xattrs, bytes);
- the warm remount opens no file of DIR (inotify, as
  test_collection_index.py counts) for a walk, find, ls -lR and
  getfattr -R -d: the index answers the member's own objects and those
  reached through its external links;
- rewriting a link's TARGET (not the member) makes the next indexed mount
  show the target's new objects, xattrs and bytes (the member is opened
  and walked again: it and the files it reaches, nothing else);
- the files reached are in the index with their paths in the collection."""
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402
import test_collection_index as CI  # noqa: E402  (snapshot, diff, FileOpens)

MAKE = r'''
import os, sys
import h5py, numpy as np
top, version = sys.argv[1], int(sys.argv[2])
ext = os.path.join(top, "ext")
os.makedirs(os.path.join(ext, "sub"), exist_ok=True)
os.makedirs(os.path.join(top, "plain"), exist_ok=True)
def target(path, v):
    with h5py.File(path, "w", libver="earliest", track_order=True) as f:
        g = f.create_group("g")
        d = g.create_dataset("d", data=np.arange(100 + 10 * v, dtype="<i4") * (v + 1))
        d.attrs["units"] = "counts v%d" % v
        g.attrs["version"] = v
        if v:
            g.create_dataset("added", data=np.full((3, 4), v, dtype="<f8"))
        f["top_ds"] = np.linspace(0, 1, 7 + v)
if version == 0:
    with h5py.File(os.path.join(ext, "other.h5"), "w") as f:
        f["x"] = np.arange(12, dtype="<u2").reshape(3, 4)
        f["x"].attrs["note"] = "other"
    with h5py.File(os.path.join(ext, "sub", "t2.h5"), "w") as f:
        f.create_group("deep/er")["v"] = np.ones(5, dtype="<f4")
    with h5py.File(os.path.join(ext, "chain.h5"), "w") as f:
        f["own"] = np.arange(3)
        f["next"] = h5py.ExternalLink("target.h5", "/g")
    with h5py.File(os.path.join(ext, "member.h5"), "w", track_order=True) as f:
        own = f.create_group("own")
        own.create_dataset("data", data=np.arange(20, dtype="<f8").reshape(4, 5))
        own.attrs["title"] = "the member's own"
        f["el"] = h5py.ExternalLink("target.h5", "/g")
        f["ed"] = h5py.ExternalLink("other.h5", "/x")
        f["esub"] = h5py.ExternalLink("sub/t2.h5", "/deep")
        f["chain"] = h5py.ExternalLink("chain.h5", "/")
        f["dangling"] = h5py.ExternalLink("missing.h5", "/nothing")
    with h5py.File(os.path.join(top, "plain", "m.h5"), "w") as f:
        f["a"] = np.arange(4)
target(os.path.join(ext, "target.h5"), version)
'''


def make(top, version):
    subprocess.run(["/usr/bin/python3", "-c", MAKE, top, str(version)], check=True, timeout=120)


def related_rows(index):
    con = sqlite3.connect("file:%s?mode=ro" % index, uri=True, timeout=10)
    try:
        return sorted(con.execute("SELECT m.path, r.path FROM related r JOIN member m ON m.id = r.member"))
    finally:
        con.close()


def walk_all(mnt):
    for cmd in (["find", mnt, "-printf", "%i %M %s %n %T@ %p\\n"], ["ls", "-lR", mnt],
                ["getfattr", "-R", "-d", "-h", mnt]):
        subprocess.run(cmd, check=True, timeout=60, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    work = T.workdir("collext")
    top = os.path.join(work, "dir")
    make(top, 0)
    mnt = os.path.join(work, "mnt")
    index = os.path.join(work, "index.sqlite")
    opt_ix = ["-o", "index=" + index]

    with T.Mount(top, mnt, ["-o", "noindex"]) as m, m.watchdog(120):
        ref = CI.snapshot(mnt)
    names = [e[0] for e in ref]
    for want in ("ext/member.h5/el/d", "ext/member.h5/ed", "ext/member.h5/esub/er/v",
                 "ext/member.h5/chain/next/d", "ext/member.h5/dangling"):
        if want not in names:
            T.fail("the -o noindex mount shows no %s" % want)

    # cold: records every member, member.h5 with the files it reaches
    with T.Mount(top, mnt, opt_ix) as m, m.watchdog(120):
        cold = CI.snapshot(mnt)
    d = CI.diff(ref, cold)
    if d:
        T.fail("cold indexed mount differs from -o noindex: " + d)
    rel = related_rows(index)
    want = [("ext/chain.h5", "ext/target.h5"), ("ext/member.h5", "ext/chain.h5"),
            ("ext/member.h5", "ext/other.h5"), ("ext/member.h5", "ext/sub/t2.h5"),
            ("ext/member.h5", "ext/target.h5")]
    if rel != want:
        T.fail("related files in the index: %s, want %s" % (rel, want))
    n = CI.members_recorded(index)
    if n != 6:
        T.fail("%d members recorded, want 6 (every HDF5 file of DIR)" % n)

    # warm: no file of DIR opened by the walks
    watch = CI.FileOpens(top)
    try:
        with T.Mount(top, mnt, opt_ix) as m:
            watch.attach(m.proc.pid)
            with m.watchdog(120):
                warm = CI.snapshot(mnt, with_bytes=False)
                walk_all(mnt)
                ev = watch.events()
                print("warm remount: %d files of DIR opened by snapshot + find + ls -lR + getfattr -R -d"
                      % len({p for p, _ in ev}))
                if ev:
                    T.fail("the warm remount's walks touched %s" % sorted({p for p, _ in ev}))
                full = CI.snapshot(mnt)
            if m.output().strip():
                T.fail("warm mount logged: %s" % m.output().strip()[:500])
        strip = [e[:-1] if e[1].startswith("0o100") else e for e in ref]
        d = CI.diff(strip, warm)
        if d:
            T.fail("warm indexed mount differs from -o noindex: " + d)
        d = CI.diff(ref, full)
        if d:
            T.fail("warm indexed mount's bytes differ from -o noindex: " + d)

        # the target rewritten, the member not: its record is stale
        make(top, 1)
        with T.Mount(top, mnt, ["-o", "noindex"]) as m, m.watchdog(120):
            ref2 = CI.snapshot(mnt)
        if CI.diff(ref, ref2) is None or "ext/member.h5/el/added" not in [e[0] for e in ref2]:
            T.fail("the rewritten target.h5 does not show through -o noindex")
        watch.events()
        with T.Mount(top, mnt, opt_ix) as m:
            watch.attach(m.proc.pid)
            with m.watchdog(120):
                got = CI.snapshot(mnt, with_bytes=False)
                ev = {p for p, k in watch.events() if k == "open"}
                got_full = CI.snapshot(mnt)
        d = CI.diff([e[:-1] if e[1].startswith("0o100") else e for e in ref2], got)
        if d:
            T.fail("after target.h5 changed, the indexed mount differs from -o noindex: " + d)
        d = CI.diff(ref2, got_full)
        if d:
            T.fail("after target.h5 changed, the indexed mount's bytes differ: " + d)
        # target.h5 is a member too (changed: re-read), and chain.h5 and
        # member.h5 reach it; other members stay closed
        allowed = {"ext/member.h5", "ext/chain.h5", "ext/target.h5", "ext/other.h5", "ext/sub/t2.h5"}
        if not ev or not ev <= allowed or "ext/member.h5" not in ev:
            T.fail("after target.h5 changed, the remount opened %s, want member.h5 and files it reaches"
                   % sorted(ev))
        if "plain/m.h5" in ev:
            T.fail("after target.h5 changed, the remount opened plain/m.h5")
        # and the next remount is warm again
        watch.events()
        with T.Mount(top, mnt, opt_ix) as m:
            watch.attach(m.proc.pid)
            with m.watchdog(120):
                CI.snapshot(mnt, with_bytes=False)
                walk_all(mnt)
                ev = watch.events()
        if ev:
            T.fail("the remount after the re-record touched %s" % sorted({p for p, _ in ev}))
    finally:
        watch.close()
    print("members with external links: indexed, 0 files opened by a warm walk, stale when a target changes")
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
