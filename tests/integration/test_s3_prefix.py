#!/usr/bin/python3
"""S3 prefixes mounted (issue 25 item 3) and collections listed by h5fs-ls
(item 6) against a real S3-compatible server, s3rver (npm) on 127.0.0.1.

The prefix coll/ holds more than 1,000 keys in one folder (many/: two
pages of ListObjectsV2), nested folders (a/b/), HDF5 members under every
suffix rule (.h5, .nc, a key with a space, '&', '+' and UTF-8), a `.h5`
that is not HDF5 and plain objects. Uploads are botocore-signed PUTs; the
fixtures are written by h5py (a deterministic generator below).

- h5fs-ls -R --json s3://bucket/coll/ names every folder, member, plain
  object and every object inside each member exactly as h5py visits the
  local copy; the member that is not HDF5 is an error entry (exit 1);
  the list requests in s3rver's log are ceil(keys/1000) per folder and
  no member is fetched without -R.
- h5fs-ls -R DIR on the same tree on disk (the HDF5 file without a
  suffix is a member there: by signature) gives the same entries.
- a progress line appears on stderr only when it is a terminal.
- h5fs s3://bucket/coll/ MNT: every folder, member and plain object by
  name; every byte of every dataset of every member against h5py, every
  xattr against a single-FILE mount of the same file, plain objects'
  bytes; list requests per folder = ceil(keys/1000) for a whole walk
  (-o refresh=600: nothing listed twice), none at all of a member until
  something inside it is looked up; the `.h5` that is not HDF5 gives EIO
  and one log line; -o h5_suffixes; a missing bucket refused (exit 3).
"""
import errno
import json
import math
import os
import pty
import re
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
import test_s3rver as S  # noqa: E402  (skips without s3rver or botocore)

import h5py  # noqa: E402
import numpy as np  # noqa: E402

fail = T.fail
NMANY = 1100   # plain keys in many/: two pages


def ls_bin():
    return T.H5FS_LS


def make_member(path, seed, userblock=0):
    """A small HDF5 file of several layouts, attributes and groups."""
    rng = np.random.default_rng(seed)
    kw = {"userblock_size": userblock} if userblock else {}
    with h5py.File(path, "w", **kw) as f:
        f.attrs["seed"] = seed
        f["contig"] = rng.integers(0, 1000, size=257, dtype="<i4")
        g = f.create_group("grp")
        g.attrs["units"] = "m/s"
        g.create_dataset("chunked", data=np.arange(3000, dtype="<f8").reshape(30, 100), chunks=(8, 32),
                         compression="gzip", shuffle=True)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        data = np.arange(10, dtype="<i2")
        sid = h5py.h5s.create_simple(data.shape)
        h5py.h5d.create(g.id, b"compact", h5py.h5t.STD_I16LE, sid, dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, data)
        g.create_group("empty")


def build_tree(top):
    """{relative key: local file} of the collection, written under top."""
    files = {}

    def add(rel, writer):
        p = os.path.join(top, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        writer(p)
        files[rel] = p

    add("top.h5", lambda p: make_member(p, 1))
    add("a/b/deep.nc", lambda p: make_member(p, 2, userblock=512))
    add("a/odd & name+\u00e9.h5", lambda p: make_member(p, 3))
    add("a/notes.txt", lambda p: open(p, "w").write("plain\n"))
    add("a/_SUCCESS", lambda p: open(p, "w").close())    # empty: no byte to GET
    add("fake.h5", lambda p: open(p, "wb").write(b"this is not HDF5" * 64))
    add("many/m1.h5", lambda p: make_member(p, 4))
    add("many/m2.NC4", lambda p: make_member(p, 5))
    for i in range(NMANY):
        add("many/p%04d.txt" % i, lambda p, i=i: open(p, "w").write("%d\n" % i))
    return files


def h5py_paths(path):
    """Every object path inside the file, h5py's view, with its kind."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            out[name] = "dataset" if isinstance(obj, h5py.Dataset) else "group"
        f.visititems(visit)
    return out


def is_hdf5(path):
    try:
        with h5py.File(path, "r"):
            return True
    except OSError:
        return False


def expected_entries(files, by_suffix):
    """{path: kind} h5fs-ls -R should print for the tree."""
    exp = {}
    for rel, p in files.items():
        parts = rel.split("/")
        for i in range(1, len(parts)):
            exp["/".join(parts[:i])] = "folder"
        if by_suffix:
            member = re.search(r"\.(h5|hdf5|he5|nc|nc4|nwb|h5ad)$", rel, re.I) is not None
        else:
            member = is_hdf5(p)
        if not member:
            exp[rel] = "file"
            continue
        if not is_hdf5(p):
            exp[rel] = "error"
            continue
        exp[rel] = "hdf5"
        for name, kind in h5py_paths(p).items():
            exp[rel + "/" + name] = kind
    return exp


def run_ls(args, env=None):
    r = subprocess.run([ls_bin()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
                       env=env)
    return r.returncode, r.stdout.decode("utf-8", "surrogateescape"), r.stderr.decode("utf-8", "replace")


def got_entries(out, label):
    try:
        doc = json.loads(out)
    except ValueError as e:
        fail("%s: output is not JSON: %s: %r" % (label, e, out[:300]))
        return {}
    got = {}
    for e in doc["entries"]:
        kind = "error" if "error" in e else e["kind"]
        if e["path"] in got:
            fail("%s: %s listed twice" % (label, e["path"]))
        got[e["path"]] = kind
    return got


def compare_entries(got, exp, label):
    bad = [p for p in sorted(set(exp) | set(got)) if got.get(p) != exp.get(p)]
    for p in bad[:20]:
        fail("%s: %s: listed as %s, expected %s" % (label, p, got.get(p), exp.get(p)))
    if len(bad) > 20:
        fail("%s: ... and %d more entries differ" % (label, len(bad) - 20))
    if not bad:
        print("%s: %d entries as expected" % (label, len(exp)))


def list_requests(lines, prefix):
    """ListObjectsV2 replies for one folder (prefix as stored)."""
    enc = "prefix=" + re.sub(r"[^A-Za-z0-9_.~-]", lambda m: "".join("%%%02X" % b for b in m.group(0).encode()),
                             prefix)
    return [ln for ln in lines if "list-type=2" in ln and re.search(re.escape(enc) + r"(&|\s|$)", ln)]


def check_list_counts(lines, folders, label):
    """Each folder ({prefix: keys in it}) listed in ceil(keys / 1000)
    requests (at least one): a request a page of ListObjectsV2."""
    for d, n in sorted(folders.items()):
        nreq = len(list_requests(lines, d))
        want = max(1, math.ceil(n / 1000))
        print("%s: %s: %d keys, %d list requests (want %d)" % (label, d, n, nreq, want))
        if nreq != want:
            fail("%s: %s: %d list requests for %d keys, want %d" % (label, d, nreq, n, want))


def object_gets(lines):
    """Requests of objects (after the uploads, all are GETs)."""
    return [ln for ln in lines if ln.startswith("t/")]


def progress_on_tty(args, env):
    """stderr on a pseudo-terminal, stdout a pipe: (exit, stdout, what
    reached the terminal). Both read as they come (a full terminal
    buffer would stop the writer)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([ls_bin()] + args, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out, seen = b"", b""
    fds = {p.stdout.fileno(): "out", master: "tty"}
    deadline = time.monotonic() + 120
    while fds and time.monotonic() < deadline:
        r, _, _ = select.select(list(fds), [], [], 0.5)
        for fd in r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:     # EIO: the terminal's last writer is gone
                chunk = b""
            if not chunk:
                del fds[fd]
            elif fds[fd] == "out":
                out += chunk
            else:
                seen += chunk
    if fds:
        p.kill()
    p.wait(30)
    os.close(master)
    return p.returncode, out, seen.decode("utf-8", "replace")


def mount_view(top):
    """{relative path: (kind, size, xattrs, bytes)} of a mounted tree."""
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            full = os.path.join(d, n)
            rel = os.path.relpath(full, top)
            st = os.lstat(full)
            kind = "dir" if os.path.isdir(full) and not os.path.islink(full) else \
                "link" if os.path.islink(full) else "file"
            xattrs = {}
            if kind != "link":
                for a in sorted(os.listxattr(full)):
                    xattrs[a] = os.getxattr(full, a)
            data = None
            if kind == "file":
                with open(full, "rb") as fh:
                    data = fh.read()
            elif kind == "link":
                data = os.readlink(full).encode()
            out[rel] = (kind, st.st_size if kind == "file" else None, xattrs, data)
    return out


def check_mount(wd, port, files, opts):
    """h5fs s3://bucket/coll/ MNT against h5py and single-FILE mounts."""
    mnt = os.path.join(wd, "mnt")
    one = os.path.join(wd, "one")
    os.makedirs(mnt, exist_ok=True)
    os.makedirs(one, exist_ok=True)
    folders = {"coll/": 0, "coll/a/": 0, "coll/a/b/": 0, "coll/many/": 0}
    for rel in files:
        folders["coll/" + rel.rsplit("/", 1)[0] + "/" if "/" in rel else "coll/"] += 1
    members = sorted(r for r in files if re.search(r"\.(h5|nc|nc4)$", r, re.I) and is_hdf5(files[r]))
    mopts = opts + ["-o", "ro,refresh=600"]
    before = len(T.s3rver_settled(wd, 0))
    with T.Mount("s3://bucket/coll/", mnt, mopts) as m, m.watchdog(300):
        lines = T.s3rver_settled(wd, before)
        if len(lines) != 1 or not list_requests(lines, "coll/"):
            fail("mount: %d requests, want the top's one listing: %r" % (len(lines), lines[:5]))
        # folders listed and every entry stat'ed: listings only, no GET
        top = sorted(os.listdir(mnt))
        if top != ["a", "fake.h5", "many", "top.h5"]:
            fail("mount: top lists %r" % top)
        many = os.listdir(os.path.join(mnt, "many"))
        if len(many) != NMANY + 2:
            fail("mount: many/ lists %d entries, want %d" % (len(many), NMANY + 2))
        for rel, p in files.items():
            st = os.stat(os.path.join(mnt, rel))
            want_dir = rel in members or rel == "fake.h5"
            if stat_isdir(st) != want_dir:
                fail("mount: %s: %s, want %s" % (rel, "dir" if stat_isdir(st) else "file",
                                                 "dir" if want_dir else "file"))
            elif st.st_size != os.path.getsize(p):
                fail("mount: %s: size %d, object %d" % (rel, st.st_size, os.path.getsize(p)))
        lines = T.s3rver_settled(wd, before)
        if object_gets(lines):
            fail("mount: objects fetched by listing and stat alone: %r" % object_gets(lines)[:3])

        # the member that is not HDF5: EIO, one log line however often asked
        for _ in range(3):
            try:
                os.listdir(os.path.join(mnt, "fake.h5"))
                fail("mount: fake.h5 lists")
            except OSError as e:
                if e.errno != errno.EIO:
                    fail("mount: fake.h5: %s, not EIO" % e)
        nlog = m.output().count("fake.h5: cannot be opened as HDF5")
        if nlog != 1:
            fail("mount: fake.h5: %d log lines, want 1: %r" % (nlog, m.output()[-500:]))

        # every member: names against h5py, dataset bytes against h5py,
        # everything (xattrs too) against a single-FILE mount of the file
        for rel in members:
            view = mount_view(os.path.join(mnt, rel))
            names = {k: ("dataset" if v[0] == "file" else "group") for k, v in view.items()}
            if names != h5py_paths(files[rel]):
                fail("mount: %s: names %r, h5py %r" % (rel, sorted(names), sorted(h5py_paths(files[rel]))))
            with h5py.File(files[rel], "r") as f:
                for k, v in view.items():
                    if v[0] == "file" and v[3] != T.dataset_bytes(f[k])[0]:
                        fail("mount: %s/%s: bytes differ from h5py's" % (rel, k))
            topx = {a: os.getxattr(os.path.join(mnt, rel), a) for a in os.listxattr(os.path.join(mnt, rel))}
            with T.Mount(files[rel], one, ["-o", "ro"]) as m1, m1.watchdog(120):
                single = mount_view(one)
                onex = {a: os.getxattr(one, a) for a in os.listxattr(one)}
            if topx != onex or not topx:
                fail("mount: %s: the member's own xattrs %r, a single-FILE mount's %r" % (rel, topx, onex))
            if view != single:
                diff = [k for k in sorted(set(view) | set(single)) if view.get(k) != single.get(k)]
                fail("mount: %s: differs from a single-FILE mount at %r" % (rel, diff[:5]))
            else:
                print("mount: %s: %d objects equal h5py's and a single-FILE mount's" % (rel, len(view)))
        # plain objects: their own bytes
        for rel in ("a/notes.txt", "a/_SUCCESS", "many/p0007.txt", "many/p1099.txt"):
            with open(os.path.join(mnt, rel), "rb") as fh:
                if fh.read() != open(files[rel], "rb").read():
                    fail("mount: %s: bytes differ from the object's" % rel)
        lines = T.s3rver_settled(wd, before)
        check_list_counts(lines, folders, "mount")
        got = sorted({ln.split()[0] for ln in object_gets(lines)})
        want = sorted("t/coll/" + urlq(r) for r in members + ["fake.h5", "a/notes.txt", "many/p0007.txt",
                                                             "many/p1099.txt"])
        if got != want:
            fail("mount: objects fetched %r, want %r" % (got, want))
        if not m.alive():
            fail("mount: the daemon died")

    # -o h5_suffixes=.nc4: m1.h5 is a plain object now
    with T.Mount("s3://bucket/coll/", mnt, opts + ["-o", "ro,h5_suffixes=.nc4"]) as m, m.watchdog(120):
        k1 = stat_isdir(os.stat(os.path.join(mnt, "many", "m1.h5")))
        k2 = stat_isdir(os.stat(os.path.join(mnt, "many", "m2.NC4")))
        if k1 or not k2:
            fail("h5_suffixes=.nc4: m1.h5 %s, m2.NC4 %s" % ("dir" if k1 else "file", "dir" if k2 else "file"))

    # refused at mount, with the server's word: a missing bucket
    r = subprocess.run([T.H5FS, "-f"] + opts + ["s3://nobucket/x/", mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 3 or b"NoSuchBucket" not in r.stderr:
        fail("mount of a missing bucket: exit %d, %r" % (r.returncode, r.stderr[:300]))
    if T.is_mounted(mnt):
        subprocess.run(["fusermount3", "-uz", mnt], timeout=30)
        fail("mount of a missing bucket: mounted")


def stat_isdir(st):
    import stat as S_
    return S_.S_ISDIR(st.st_mode)


def urlq(rel):
    """A key as s3rver's log shows its path (percent-encoded as h5fs sends it)."""
    return re.sub(r"[^A-Za-z0-9_.~/-]", lambda m: "".join("%%%02X" % b for b in m.group(0).encode()), rel)


def main():
    wd = T.workdir("s3_prefix")
    top = os.path.join(wd, "tree")
    files = build_tree(top)
    saved = dict(os.environ)
    T.s3rver_env(wd, S.KEY, S.SECRET)
    proc, port = S.start_s3rver(wd)
    o = "s3_endpoint=http://127.0.0.1:%d,s3_path_style,retries=1,timeout=20" % port
    try:
        t0 = time.monotonic()
        for rel, p in sorted(files.items()):
            S.put(port, "coll/" + rel, p)
        # an object named as a folder beside it (coll/a/b and coll/a/b/...):
        # the folder is shown, once (no local twin: a file and a directory
        # cannot share a name there)
        S.put(port, "coll/a/b", files["a/notes.txt"])
        print("uploaded %d objects in %.1f s" % (len(files), time.monotonic() - t0))
        # objects directly in each folder (a page holds 1000 of them)
        folders = {"coll/": 0, "coll/a/": 0, "coll/a/b/": 0, "coll/many/": 0}
        for rel in files:
            folders["coll/" + rel.rsplit("/", 1)[0] + "/" if "/" in rel else "coll/"] += 1

        # one level, members not opened: no GET of any object
        before = len(T.s3rver_settled(wd, 0))
        rc, out, err = run_ls(["--json", "-o", o, "s3://bucket/coll/"])
        lines = T.s3rver_settled(wd, before)
        got = got_entries(out, "ls s3 one level")
        want = {"a": "folder", "many": "folder", "top.h5": "hdf5", "fake.h5": "hdf5"}
        if rc != 0 or got != want:
            fail("ls s3 one level: exit %d, %r (want %r) %s" % (rc, got, want, err[:300]))
        if object_gets(lines) or len(lines) != 1:
            fail("ls s3 one level: %d requests, GETs of objects: %r" % (len(lines), object_gets(lines)[:3]))

        # -R: every entry, every object in every member
        before = len(T.s3rver_settled(wd, 0))
        rc, out, err = run_ls(["-R", "--json", "-o", o, "s3://bucket/coll/"])
        lines = T.s3rver_settled(wd, before)
        exp = expected_entries(files, by_suffix=True)
        compare_entries(got_entries(out, "ls -R s3"), exp, "ls -R s3://bucket/coll/")
        if rc != 1 or "fake.h5" not in out:
            fail("ls -R s3: exit %d (want 1: fake.h5 is not HDF5): %s" % (rc, err[:300]))
        check_list_counts(lines, folders, "ls -R s3")
        nplain_get = [ln for ln in object_gets(lines) if ".txt" in ln]
        if nplain_get:
            fail("ls -R s3: plain objects fetched: %r" % nplain_get[:3])

        # -o h5_suffixes: only .nc4 (case-insensitive) is a member now
        rc, out, err = run_ls(["--json", "-o", o + ",h5_suffixes=.nc4", "s3://bucket/coll/many/"])
        got = got_entries(out, "h5_suffixes")
        kinds = {p: k for p, k in got.items() if k != "file"}
        if kinds != {"m2.NC4": "hdf5"} or len(got) != NMANY + 2:
            fail("h5_suffixes=.nc4: %r, %d entries" % (kinds, len(got)))

        # a missing bucket: exit 3, the server's word in the message
        rc, out, err = run_ls(["-o", o, "s3://nobucket/x/"])
        if rc != 3 or "NoSuchBucket" not in err:
            fail("missing bucket: exit %d, %r" % (rc, err[:300]))

        # the same tree on disk: members by signature (all HDF5 files
        # whatever their names; fake.h5 a plain file)
        rc, out, err = run_ls(["-R", "--json", top])
        compare_entries(got_entries(out, "ls -R DIR"), expected_entries(files, by_suffix=False), "ls -R DIR")
        if rc != 0:
            fail("ls -R DIR: exit %d: %s" % (rc, err[:300]))
        # text output: one line per entry
        rc, out, err = run_ls(["-R", top])
        if rc != 0 or len(out.splitlines()) != len(expected_entries(files, by_suffix=False)):
            fail("ls -R DIR text: exit %d, %d lines" % (rc, len(out.splitlines())))

        # an http(s) URL ending in '/': refused, usage
        rc, out, err = run_ls(["https://example.invalid/data/"])
        if rc != 2 or "listing" not in err:
            fail("http folder URL: exit %d, %r" % (rc, err))

        # the progress line: on a terminal only (after 0 ms here)
        env = dict(os.environ, H5FS_LS_PROGRESS_AFTER_MS="0")
        rc, out, tty = progress_on_tty(["-R", "-o", o, "s3://bucket/coll/"], env)
        if "h5fs-ls: " not in tty or "folders" not in tty:
            fail("progress: nothing on the terminal: %r" % tty[:200])
        if "folders," in out.decode("utf-8", "replace"):
            fail("progress: the line reached stdout")
        rc, out, err = run_ls(["-R", "-o", o, "s3://bucket/coll/"], env=env)
        if "folders," in err:
            fail("progress: printed to a stderr that is not a terminal: %r" % err[:200])

        check_mount(wd, port, files, ["-o", o])
    finally:
        os.environ.clear()
        os.environ.update(saved)
        T.stop_process(proc)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
