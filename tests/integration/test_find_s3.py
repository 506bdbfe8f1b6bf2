#!/usr/bin/python3
"""h5fs-find on an S3 prefix (issue 35) against s3rver on 127.0.0.1, and the
indexed remount of a prefix:
- test_find.py's collection uploaded under coll/: every test gives the
  paths an h5py walk of the same files gives under the prefix's rules
  (members by suffix: fake.h5, named .h5 and not HDF5, is an HDF5 entry
  with nothing inside and a line on stderr; `nosuffix` a plain file),
  cold and warm;
- the warm run (the index up to date) fetches no object: s3rver's log
  shows list requests only, 0 GETs;
- a mount of the prefix with an index, walked (find, getfattr -R), then a
  remount on that index walked again: the remount GETs no object either
  (fake.h5 included: the index remembers it is no HDF5 at its ETag), and
  shows the same tree.
"""
import os
import subprocess
import sys
from fnmatch import fnmatchcase

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402
import test_find as F  # noqa: E402  (skips when h5fs-find is not built)
import test_s3rver as S  # noqa: E402  (skips without s3rver, botocore, FUSE, libcurl)

SUFFIXES = (".h5", ".hdf5", ".he5", ".nc", ".nc4", ".nwb", ".h5ad")


def s3_truth(truth):
    """The local truth under the prefix's rules: members by name."""
    out = {}
    for p, e in truth.items():
        top = p.split("/")
        # the HDF5 file (or plain file) this entry is in or is
        for i in range(len(top)):
            head = "/".join(top[:i + 1])
            if truth.get(head, ("",) * 6)[5] in ("hdf5", "file"):
                break
        else:
            head = p
        kind = truth[head][5] if head in truth else "folder"
        by_name = head.lower().endswith(SUFFIXES)
        if kind == "hdf5" and not by_name:
            if p == head:
                out[p] = ("f", None, None, None, {}, "file")
            continue        # a member without suffix: a plain object
        if kind == "file" and by_name:
            if p == head:
                out[p] = ("d", None, None, None, {}, "hdf5")  # fetched: no HDF5, shown empty
            continue
        out[p] = e
    return out


def object_requests(lines):
    return [ln for ln in lines if ln.startswith("t/")]


def walk_mount(mnt):
    """Every entry with its kind and xattrs, as find + getfattr -R see them."""
    out = {}
    for d, dirs, files in os.walk(mnt):
        for n in dirs + files:
            p = os.path.join(d, n)
            try:
                xs = sorted((x, os.getxattr(p, x, follow_symlinks=False))
                            for x in os.listxattr(p, follow_symlinks=False))
            except OSError as e:
                xs = "error %d" % e.errno
            out[os.path.relpath(p, mnt)] = (os.lstat(p).st_mode >> 12, xs)
    return out


def main():
    wd = T.workdir("find_s3")
    top = os.path.join(wd, "coll")
    F.make(top)
    truth = s3_truth(F.entries(top))
    T.s3rver_env(wd, S.KEY, S.SECRET)
    proc, port = S.start_s3rver(wd)
    o = "s3_endpoint=http://127.0.0.1:%d,s3_path_style,retries=1,timeout=20" % port
    url = "s3://bucket/coll/"
    ix = os.path.join(wd, "find.sqlite")
    try:
        for d, _dirs, files in os.walk(top):
            for n in files:
                p = os.path.join(d, n)
                S.put(port, "coll/" + os.path.relpath(p, top), p)
        for label in ("cold", "warm"):
            before = len(T.s3rver_settled(wd, 0))
            F.check_cases(url, truth, ["-O", o, "--index", ix], "s3 " + label)
            objs = object_requests(T.s3rver_settled(wd, before))
            print("s3 %s: %d object requests" % (label, len(objs)))
            if label == "warm" and objs:
                T.fail("s3 warm: objects fetched with the index up to date: %r" % objs[:5])
            if label == "cold" and not any("fake.h5" in x for x in objs):
                T.fail("s3 cold: fake.h5 never fetched?")
        rc, out, err = F.find(url, ["-name", "fake.h5"], "-O", o, "--index", ix)
        if rc != 0 or out != b"b/fake.h5\n" or "fake.h5" not in err:
            T.fail("s3 fake.h5: exit %d, %r, stderr %r" % (rc, out, err))

        # h5fs-ls -R on an index: the warm run fetches no object either
        # (fake.h5, not HDF5, is remembered as such) and prints what
        # --noindex prints
        lix = os.path.join(wd, "ls.sqlite")
        ls_want = subprocess.run([T.H5FS_LS, "-R", "--noindex", "-o", o, url], capture_output=True, timeout=300)
        for label in ("cold", "warm"):
            before = len(T.s3rver_settled(wd, 0))
            r = subprocess.run([T.H5FS_LS, "-R", "--index", lix, "-o", o, url], capture_output=True, timeout=300)
            objs = object_requests(T.s3rver_settled(wd, before))
            print("h5fs-ls -R s3 %s: %d object requests" % (label, len(objs)))
            if r.returncode != ls_want.returncode or r.stdout != ls_want.stdout:
                T.fail("h5fs-ls -R s3 %s: exit %d, %d bytes; --noindex: exit %d, %d bytes" % (
                    label, r.returncode, len(r.stdout), ls_want.returncode, len(ls_want.stdout)))
            if label == "warm" and objs:
                T.fail("h5fs-ls -R s3 warm: objects fetched with the index up to date: %r" % objs[:5])

        # the mount: a remount on its index fetches no object
        mnt = os.path.join(wd, "mnt")
        mix = os.path.join(wd, "mount.sqlite")
        opts = ["-o", o + ",ro,refresh=0,index=" + mix]
        with T.Mount(url, mnt, opts):
            first = walk_mount(mnt)
        before = len(T.s3rver_settled(wd, 0))
        with T.Mount(url, mnt, opts):
            second = walk_mount(mnt)
        objs = object_requests(T.s3rver_settled(wd, before))
        print("indexed remount: %d object requests: %r" % (len(objs), objs[:6]))
        if objs:
            T.fail("indexed remount of the prefix fetched %d objects: %r" % (len(objs), objs[:6]))
        if first != second:
            diff = sorted(k for k in set(first) | set(second) if first.get(k) != second.get(k))
            T.fail("indexed remount shows another tree: %r" % diff[:5])
        if not any(fnmatchcase(k, "b/fake.h5") for k in second):
            T.fail("fake.h5 not shown by the remount")
    finally:
        T.stop_process(proc)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
