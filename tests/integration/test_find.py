#!/usr/bin/python3
"""h5fs-find (issue 35, doc/h5fs-find.1) against an h5py walk computing the
same predicates over a generated collection:
- every test (-name, -path, -type, -attr NAME, -attr NAME=GLOB, -dtype,
  -ndim, -shape, -o, !, parentheses) gives the paths the h5py walk gives,
  sorted bytewise, cold (no index), warm (the index alone) and --noindex;
  --json lines carry the type, dtype, shape and attributes h5py reads;
  -print0 ends each path with a NUL;
- with no test, the paths are those `find` prints through a real mount of
  the collection (h5fs DIR MNT);
- members rewritten, removed and added are seen at the next run (the
  index refreshed: only the new and changed are read - their catalog rows
  are new, the others' untouched);
- an index that is junk is moved aside and rebuilt, the answer unchanged;
  the views files, groups, datasets, attributes answer SQL.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from fnmatch import fnmatchcase

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIND = os.environ.get("H5FS_FIND", os.path.join(T.BUILDDIR, "h5fs-find"))
if not os.path.exists(FIND):
    T.skip("%s not built" % FIND)


# ---- the collection --------------------------------------------------------

def scan(path, seed, temp, units, ndim):
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w", track_order=True) as f:
        f.attrs["sample"] = "LaB6" if seed % 2 else "Si"
        f.attrs["temperature"] = np.float64(temp)
        e = f.create_group("entry")
        e.attrs["NX_class"] = "NXentry"
        shape = (10,) * ndim
        d = e.create_dataset("v", data=rng.random(shape))
        d.attrs["units"] = units
        e.create_dataset("counts", data=rng.integers(0, 9, (4, 3), dtype="<i4"))
        e.create_dataset("label", data=np.bytes_("scan %d" % seed))
        e["up"] = e                      # a hard link to its own group: a symlink in a mount
        e["alias"] = h5py.SoftLink("/entry/v")
        e["ext"] = h5py.ExternalLink("elsewhere.h5", "/x")
        f.attrs["h5.weird"] = np.int32(7)    # user.h5.attr.h5.weird
        f["empty"] = np.float32(1.5)


def make(top):
    os.makedirs(os.path.join(top, "a", "deep"))
    os.makedirs(os.path.join(top, "b"))
    n = 0
    for folder in ("a", "a/deep", "b"):
        for j in range(3):
            scan(os.path.join(top, folder, "s%d.h5" % j), n, 195 + 5 * n, "m/s" if n % 3 else "K",
                 1 + n % 3)
            n += 1
    with open(os.path.join(top, "b", "notes.txt"), "w") as fh:
        fh.write("not HDF5\n")
    with open(os.path.join(top, "b", "fake.h5"), "w") as fh:
        fh.write("named .h5, not HDF5\n")
    scan(os.path.join(top, "a", "nosuffix"), 99, 300, "K", 2)


# ---- the oracle: h5py's walk as a mount shows it -----------------------------

def text(v):
    """An attribute's text as getfattr shows it (doc/h5fs.1, ATTRIBUTES),
    for the types the fixtures use."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, str):
        return v
    a = np.asarray(v)
    if a.dtype.kind == "f":
        return ", ".join(repr(float(x)) for x in a.ravel())
    return ", ".join(str(int(x)) for x in a.ravel())


def entries(top):
    """{path: (type, dtype, shape, ndim, {attr: text})} of every entry."""
    out = {}
    for dirpath, dirs, files in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        rel = "" if rel == "." else rel + "/"
        for d in dirs:
            out[rel + d] = ("d", None, None, None, {}, "folder")
        for name in files:
            p = os.path.join(dirpath, name)
            if not h5py.is_hdf5(p):
                out[rel + name] = ("f", None, None, None, {}, "file")
                continue
            with h5py.File(p, "r") as f:
                walk(f, f, rel + name, out, [f.id.addr if hasattr(f.id, "addr") else None], True)
    return out


def attrs_of(obj):
    return {k: text(obj.attrs[k]) for k in obj.attrs}


def walk(f, g, path, out, up, top=False):
    out[path] = ("d", None, None, None, attrs_of(g), "hdf5" if top else "group")
    addrs = up + [h5py.h5o.get_info(g.id).addr]
    for name in g:
        link = g.get(name, getlink=True)
        child = path + "/" + name
        if isinstance(link, (h5py.SoftLink, h5py.ExternalLink)):
            out[child] = ("l", None, None, None, {}, "link")
            continue
        obj = g[name]
        if isinstance(obj, h5py.Group):
            if h5py.h5o.get_info(obj.id).addr in addrs:
                out[child] = ("l", None, None, None, {}, "link")
            else:
                walk(f, obj, child, out, addrs)
        elif isinstance(obj, h5py.Dataset):
            shape = ",".join(str(n) for n in obj.shape)
            out[child] = ("f", obj.dtype.str, shape, len(obj.shape), attrs_of(obj), "dataset")
        else:
            out[child] = ("f", None, None, None, attrs_of(obj), "datatype")


# predicates: (h5fs-find words, python test of (path, entry))
def name(p):
    return p.rsplit("/", 1)[-1]


CASES = [
    ([], lambda p, e: True),
    (["-name", "s1.h5"], lambda p, e: name(p) == "s1.h5"),
    (["-name", "*.h5"], lambda p, e: fnmatchcase(name(p), "*.h5")),
    (["-path", "a/*/entry/v"], lambda p, e: fnmatchcase(p, "a/*/entry/v")),
    (["-path", "*deep*", "-type", "f"], lambda p, e: "deep" in p and e[0] == "f"),
    (["-type", "d"], lambda p, e: e[0] == "d"),
    (["-type", "l"], lambda p, e: e[0] == "l"),
    (["-type", "f"], lambda p, e: e[0] == "f"),
    (["-attr", "units"], lambda p, e: "units" in e[4]),
    (["-attr", "units=m/s"], lambda p, e: e[4].get("units") == "m/s"),
    (["-attr", "sample=LaB6", "-attr", "temperature=2[01]?.0"],
     lambda p, e: e[4].get("sample") == "LaB6" and fnmatchcase(e[4].get("temperature", "x"), "2[01]?.0")),
    (["-attr", "h5.weird=7"], lambda p, e: e[4].get("h5.weird") == "7"),
    (["-dtype", "<f8"], lambda p, e: e[1] == "<f8"),
    (["-dtype", "|S*"], lambda p, e: e[1] is not None and e[1].startswith("|S")),
    (["-ndim", "0"], lambda p, e: e[3] == 0),
    (["-ndim", "2"], lambda p, e: e[3] == 2),
    (["-shape", "10,10,10"], lambda p, e: e[2] == "10,10,10"),
    (["-shape", "4,*"], lambda p, e: e[2] is not None and fnmatchcase(e[2], "4,*")),
    (["-dtype", "<f8", "-o", "-type", "l"], lambda p, e: e[1] == "<f8" or e[0] == "l"),
    (["!", "-type", "d"], lambda p, e: e[0] != "d"),
    (["(", "-name", "v", "-o", "-name", "counts", ")", "-path", "b/*"],
     lambda p, e: name(p) in ("v", "counts") and p.startswith("b/")),
    (["-attr", "nope"], lambda p, e: False),
]


def find(top, words, *opts):
    r = subprocess.run([FIND, top] + list(opts) + words, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    return r.returncode, r.stdout, r.stderr.decode()


def check_cases(top, truth, opts, label):
    for words, pred in CASES:
        rc, out, err = find(top, words, *opts)
        want = sorted((p for p, e in truth.items() if pred(p, e)), key=lambda s: s.encode())
        got = out.decode().split("\n")[:-1] if out else []
        if rc != 0:
            T.fail("%s %s: exit %d: %s" % (label, words, rc, err))
        elif got != want:
            i = T.first_diff(got, want)
            T.fail("%s %s: got %d paths, h5py %d; first difference at %d: %r vs %r" % (
                label, words, len(got), len(want), i, got[i:i + 1], want[i:i + 1]))
        elif label == "cold":
            print("%s: %d paths" % (" ".join(words) or "(no test)", len(got)))


def check_json(top, truth, opts):
    rc, out, err = find(top, ["-type", "f", "-o", "-type", "d"], "--json", *opts)
    seen = 0
    for line in out.decode().splitlines():
        j = json.loads(line)
        e = truth.get(j["path"])
        if e is None:
            T.fail("--json: %s not in h5py's walk" % j["path"])
            continue
        seen += 1
        if e[5] in ("dataset", "group", "hdf5", "datatype") and j.get("attributes", {}) != e[4]:
            T.fail("--json %s: attributes %r, h5py %r" % (j["path"], j.get("attributes"), e[4]))
        if e[5] == "dataset":
            shape = [int(x) for x in e[2].split(",")] if e[2] else []
            if j.get("dtype") != e[1] or j.get("shape") != shape or j["type"] != "dataset":
                T.fail("--json %s: %r vs h5py %r" % (j["path"], j, e))
        elif j["type"] != e[5] and not (e[5] == "group" and j["type"] == "group"):
            T.fail("--json %s: type %s, h5py %s" % (j["path"], j["type"], e[5]))
    if seen != sum(1 for e in truth.values() if e[0] in "fd"):
        T.fail("--json: %d lines, h5py %d entries" % (seen, sum(1 for e in truth.values() if e[0] in "fd")))
    rc, out, err = find(top, ["-name", "s*.h5"], "-print0", *opts)
    want = sorted(p for p, e in truth.items() if fnmatchcase(name(p), "s*.h5"))
    if out != b"".join(p.encode() + b"\0" for p in want):
        T.fail("-print0: %r" % out[:200])


def check_mount(top, work, truth):
    """No test: exactly the entries find(1) sees through a mount."""
    if not os.path.exists(T.H5FS) or not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        print("no mount here: the mount comparison skipped")
        return
    mnt = os.path.join(work, "mnt")
    with T.Mount(top, mnt, ["-o", "noindex"]):
        r = subprocess.run(["find", mnt, "-mindepth", "1"], stdout=subprocess.PIPE, timeout=60)
        # a member that is not HDF5 (fake.h5 is plain by signature) and
        # external links: find lists them as the mount shows them
        shown = sorted(os.path.relpath(p, mnt) for p in r.stdout.decode().splitlines())
    rc, out, err = find(top, [], "--noindex")
    got = out.decode().split("\n")[:-1]
    if sorted(got) != shown:
        T.fail("h5fs-find vs find through a mount: %s" % T.first_diff(sorted(got), shown))


def main():
    work = T.workdir("find")
    top = os.path.join(work, "coll")
    ix = os.path.join(work, "index.db")
    try:
        make(top)
        truth = entries(top)
        check_cases(top, truth, ["--index", ix], "cold")       # the first: cases[0] builds it
        check_cases(top, truth, ["--index", ix], "warm")
        check_cases(top, truth, ["--noindex"], "noindex")
        check_json(top, truth, ["--index", ix])
        check_mount(top, work, truth)

        # the views
        db = sqlite3.connect(ix)
        nfiles = db.execute("SELECT count(*) FROM files WHERE collection = ?", (os.path.realpath(top),)).fetchone()[0]
        want_files = sum(1 for e in truth.values() if e[5] == "hdf5")
        if nfiles != want_files:
            T.fail("files view: %d, h5py %d HDF5 files" % (nfiles, want_files))
        got = sorted(r[0] for r in db.execute("SELECT path FROM datasets WHERE dtype = '<f8' AND ndim = 2"))
        want = sorted(p for p, e in truth.items() if e[1] == "<f8" and e[3] == 2)
        if got != want:
            T.fail("datasets view: %s" % T.first_diff(got, want))
        got = sorted(r[0] for r in db.execute("SELECT path FROM attributes WHERE name = 'units' AND value = 'K'"))
        want = sorted(p for p, e in truth.items() if e[4].get("units") == "K")
        if got != want:
            T.fail("attributes view: %s" % T.first_diff(got, want))
        got = sorted(r[0] for r in db.execute("SELECT path FROM groups"))
        want = sorted(p for p, e in truth.items() if e[5] in ("group", "hdf5"))
        if got != want:
            T.fail("groups view: %s" % T.first_diff(got, want))
        ids_before = dict(db.execute("SELECT path, id FROM cat_member"))
        db.close()

        # stale members: rewritten (another size), removed, added
        scan(os.path.join(top, "a", "s0.h5"), 500, 250, "m/s", 3)
        os.unlink(os.path.join(top, "b", "s2.h5"))
        scan(os.path.join(top, "b", "new.h5"), 501, 260, "K", 1)
        truth = entries(top)
        check_cases(top, truth, ["--index", ix], "refreshed")
        db = sqlite3.connect(ix)
        ids_after = dict(db.execute("SELECT path, id FROM cat_member"))
        db.close()
        if "b/s2.h5" in ids_after or "b/new.h5" not in ids_after:
            T.fail("refresh: removed or added member not followed: %s" % sorted(ids_after))
        reread = sorted(p for p in ids_after if ids_before.get(p) != ids_after[p])
        if reread != ["a/s0.h5", "b/new.h5"]:
            T.fail("refresh read again %s, not just the changed and the new" % reread)

        # a damaged index: moved aside, rebuilt, same answers
        with open(ix, "r+b") as fh:
            fh.write(b"this is no SQLite database at all" * 4)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(ix + suffix):
                os.unlink(ix + suffix)
        rc, out, err = find(top, ["-dtype", "<f8"], "--index", ix)
        if rc != 0 or "bad" not in err:
            T.fail("damaged index: exit %d, stderr %r (want a line about %s.bad)" % (rc, err, ix))
        check_cases(top, truth, ["--index", ix], "rebuilt")
        if not os.path.exists(ix + ".bad"):
            T.fail("damaged index not moved to .bad")

        # usage errors: exit 2; a missing DIR: exit 3; no match: exit 0
        if find(top, ["-type", "x"])[0] != 2 or find(top, ["("])[0] != 2:
            T.fail("bad expression not exit 2")
        if find(os.path.join(work, "none"), [])[0] != 3:
            T.fail("missing DIR not exit 3")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
