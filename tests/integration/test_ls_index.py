#!/usr/bin/python3
"""h5fs-ls -R of a collection answered from the collection's index
(issue 35 item 3; src/coll/cls.c, doc/h5fs-ls.1 --index).

A collection written here by h5py (deterministic): members in the default
and the latest format with groups, contiguous and deflated datasets, soft
links and attributes, one in a folder; a plain file; a file with HDF5's
signature and nothing else (an error entry).

- Cold and warm runs with --index (text and --json) print exactly what
  --noindex prints, exit 1 both times (the broken member), and the index
  holds one listing per member and form.
- The warm run opens no member: sub/b.h5 is replaced by a file of the
  same size whose dataset x is named w, its mtime put back (the index's
  freshness rule is size, mtime, ETag, as a mount's): the indexed run
  still prints x, --noindex prints w. A new mtime: the indexed run prints
  w, and keeps it.
- A damaged row (its body changed in the database): a miss, listed anew
  with a notice, the output right.
- The index is the mount's (the default path): a mount of DIR with
  -o index= then h5fs-ls --index of the same file both work on it.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def member(path, libver, xname="x"):
    with h5py.File(path, "w", libver=libver, track_order=False) as f:
        f.create_dataset(xname, data=np.arange(10), track_times=False)
        g = f.create_group("g")
        g.create_dataset("y", data=np.ones((3, 4)), track_times=False)
        g.attrs["t"] = 1
        f.create_dataset("z", data=np.arange(1000), chunks=(100,), compression="gzip", track_times=False)
        f["sl"] = h5py.SoftLink("/g/y")


def make(top):
    os.makedirs(os.path.join(top, "sub"))
    member(os.path.join(top, "a.h5"), "earliest")
    member(os.path.join(top, "sub", "b.h5"), "latest")
    with open(os.path.join(top, "plain.txt"), "w") as fh:
        fh.write("not HDF5\n")
    with open(os.path.join(top, "bad.h5"), "wb") as fh:
        fh.write(b"\x89HDF\r\n\x1a\n" + bytes(100))


def ls(args):
    r = subprocess.run([T.H5FS_LS] + args, capture_output=True, timeout=120)
    return r.returncode, r.stdout.decode("utf-8", "surrogateescape"), r.stderr.decode("utf-8", "replace")


def expect(label, got, want):
    if got != want:
        a, b = got.splitlines(), want.splitlines()
        diff = [(x, y) for x, y in zip(a, b) if x != y][:3]
        T.fail("%s: %d lines, want %d; first differences %r" % (label, len(a), len(b), diff))


def main():
    wd = T.workdir("ls_index")
    top = os.path.join(wd, "coll")
    make(top)
    ix = os.path.join(wd, "ls.sqlite")
    forms = (("text", []), ("json", ["--json"]))
    want = {}
    for form, extra in forms:
        rc, want[form], err = ls(["-R", "--noindex"] + extra + [top])
        if rc != 1 or "bad.h5" not in want[form]:
            T.fail("--noindex %s: exit %d (want 1: bad.h5), %s" % (form, rc, err[-300:]))
        for run in ("cold", "warm"):
            rc, out, err = ls(["-R", "--index", ix] + extra + [top])
            if rc != 1:
                T.fail("%s %s: exit %d, want 1: %s" % (run, form, rc, err[-300:]))
            expect("%s %s" % (run, form), out, want[form])
    json.loads(want["json"])
    with sqlite3.connect(ix) as db:
        rows = sorted(db.execute("SELECT path, form, nerr FROM ls_listing"))
    if rows != [("a.h5", 0, 0), ("a.h5", 1, 0), ("bad.h5", 0, 1), ("bad.h5", 1, 1), ("sub/b.h5", 0, 0),
                ("sub/b.h5", 1, 0)]:
        T.fail("the index's listings: %r" % rows)

    # the warm run opens no member: b.h5 becomes another file of the same
    # size and mtime
    b = os.path.join(top, "sub", "b.h5")
    st = os.stat(b)
    other = os.path.join(wd, "other.h5")
    member(other, "latest", xname="w")
    if os.path.getsize(other) != st.st_size:
        T.fail("fixture: the replacement is %d bytes, not %d" % (os.path.getsize(other), st.st_size))
    shutil.copyfile(other, b)
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    rc, out, err = ls(["-R", "--index", ix, top])
    expect("same size and mtime: from the index", out, want["text"])
    rc, fresh, err = ls(["-R", "--noindex", top])
    if "sub/b.h5/w " not in fresh or "sub/b.h5/x " in fresh:
        T.fail("--noindex does not show the replacement: %r" % fresh[-400:])
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    for run in ("changed", "changed, warm"):
        rc, out, err = ls(["-R", "--index", ix, top])
        expect(run, out, fresh)

    # a damaged row: a miss, listed anew
    with sqlite3.connect(ix) as db:
        db.execute("UPDATE ls_listing SET body = X'6e6f6e73656e73650a' WHERE path = 'a.h5' AND form = 0")
    rc, out, err = ls(["-R", "--index", ix, top])
    expect("damaged row", out, fresh)
    if "damaged listing" not in err:
        T.fail("damaged row: no notice: %r" % err[-300:])

    # the mount's index (-o index=): h5fs-ls reads and adds to the same file
    mix = os.path.join(wd, "mount.sqlite")
    mnt = os.path.join(wd, "mnt")
    with T.Mount(top, mnt, ["-o", "ro,index=" + mix]):
        os.listdir(os.path.join(mnt, "a.h5"))
    rc, out, err = ls(["-R", "--index", mix, top])
    expect("on the mount's index", out, fresh)
    rc, out, err = ls(["-R", "--index", mix, top])
    expect("on the mount's index, warm", out, fresh)
    with T.Mount(top, mnt, ["-o", "ro,index=" + mix]):
        if sorted(os.listdir(os.path.join(mnt, "sub", "b.h5"))) != ["g", "sl", "w", "z"]:
            T.fail("a mount on the index h5fs-ls used lists %r" % os.listdir(os.path.join(mnt, "sub", "b.h5")))
    print("h5fs-ls -R from the index: %d listings kept" % len(rows))
    shutil.rmtree(wd, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
