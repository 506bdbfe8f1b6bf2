#!/usr/bin/python3
"""External links followed, and directory cycles shown as symlinks.

Fixtures written by h5py (deterministic): an Eiger-like master file whose
/entry/data/data_00000N external links lead to datasets of data files in a
subdirectory, a data file with an external link of its own (nested) and
one back to the master's root (a cycle across files), a group linked into
its own subtree (libhdf5's h5ex_g_visit does this), a link to a group of
the same file through an external link naming it, links to a missing
file and a missing object, and one to a file outside FILE's directory.
Through a real mount:
  * every followed link shows the object it names: a dataset's bytes,
    st_size and xattrs (incl. its attributes) equal h5py's, a group's
    listing equals h5py's; objects of other files have inode numbers of
    their own, the same object the same number;
  * links up to a group or its ancestors are symlinks ("..", "../..")
    that resolve to that group; unresolvable or refused links stay
    "FILE::/path" symlinks, each with a log line;
  * ls -lR, find, du, tar and rsync walk the whole mount without an error;
  * -o ext_any follows the link outside the tree;
  * h5fs-ls says where each external link leads.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

fails = []


def make(d):
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    os.makedirs(os.path.join(d, "..", "elsewhere"), exist_ok=True)
    for i in (1, 2, 3):
        with h5py.File(os.path.join(d, "data", "series_data_%06d.h5" % i), "w") as f:
            ds = f.create_dataset("entry/data/data", data=(np.arange(2 * 5 * 6, dtype=np.uint16) + 100 * i)
                                  .reshape(2, 5, 6), chunks=(1, 5, 6), compression="gzip")
            ds.attrs["image_nr_low"] = np.int32(2 * i - 1)
            ds.attrs["image_nr_high"] = np.int32(2 * i)
            if i == 1:
                # nested: data file 1 links on into data file 2, and back to the master
                f["entry/next"] = h5py.ExternalLink("series_data_000002.h5", "/entry/data")
                f["entry/master"] = h5py.ExternalLink("../series_master.h5", "/")
    with h5py.File(os.path.join(d, "..", "elsewhere", "secret.h5"), "w") as f:
        f.create_dataset("x", data=np.arange(4))
    with h5py.File(os.path.join(d, "series_master.h5"), "w") as f:
        data = f.create_group("entry/data")
        for i in (1, 2, 3):
            data["data_%06d" % i] = h5py.ExternalLink("data/series_data_%06d.h5" % i, "/entry/data/data")
        data["data_000004"] = h5py.ExternalLink("data/series_data_000004.h5", "/entry/data/data")
        data["bad_object"] = h5py.ExternalLink("data/series_data_000002.h5", "/entry/nothing")
        f["entry/first_file"] = h5py.ExternalLink("data/series_data_000001.h5", "/")
        f["entry/outside"] = h5py.ExternalLink("../elsewhere/secret.h5", "/x")
        f["entry/again"] = h5py.ExternalLink("series_master.h5", "/entry/instrument")
        inst = f.create_group("entry/instrument/detector")
        inst.create_dataset("count_time", data=np.float64(0.01))
        inst.attrs["description"] = "Eiger-like"
        # a group linked into its own subtree (h5ex_g_visit)
        f["entry/instrument/detector/up"] = f["entry/instrument"]
        f["entry/instrument/self"] = f["entry/instrument"]


def readlink(p):
    try:
        return os.readlink(p)
    except OSError as e:
        return "error %s" % e


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL: " + what)


def main():
    wd = T.workdir("extlink")
    d = os.path.join(wd, "tree")
    make(d)
    master = os.path.join(d, "series_master.h5")
    mnt = os.path.join(wd, "mnt")
    with T.Mount(master, mnt, opts=("-o", "ro")) as m, m.watchdog(120):
        f = h5py.File(master, "r")
        # followed links: datasets of the data files
        inos = {}
        for i in (1, 2, 3):
            p = os.path.join(mnt, "entry/data/data_%06d" % i)
            ds = f["entry/data/data_%06d" % i]
            want = ds[()].tobytes()
            st = os.lstat(p)
            check(not os.path.islink(p), "data_%06d is a symlink" % i)
            check(st.st_size == len(want), "data_%06d: size %d, want %d" % (i, st.st_size, len(want)))
            with open(p, "rb") as fh:
                check(fh.read() == want, "data_%06d: bytes differ" % i)
            check(os.getxattr(p, "user.image_nr_high") == str(2 * i).encode(), "data_%06d: xattr" % i)
            check(os.getxattr(p, "user.h5.shape") == b"2,5,6", "data_%06d: user.h5.shape" % i)
            inos[i] = st.st_ino
        check(len(set(inos.values())) == 3, "data files' inodes not distinct: %r" % inos)
        # the same object through two paths: one inode
        a = os.stat(os.path.join(mnt, "entry/data/data_000002"))
        b = os.stat(os.path.join(mnt, "entry/first_file/entry/next/data"))
        check(a.st_ino == b.st_ino, "data_000002 reached twice: inodes %d, %d" % (a.st_ino, b.st_ino))
        with open(os.path.join(mnt, "entry/first_file/entry/next/data"), "rb") as fh:
            check(fh.read() == f["entry/data/data_000002"][()].tobytes(), "nested link: bytes differ")
        # cycles: symlinks up the tree
        check(readlink(os.path.join(mnt, "entry/first_file/entry/master")) == "../../..",
              "link back to the master's root: %r" % readlink(os.path.join(mnt, "entry/first_file/entry/master")))
        check(readlink(os.path.join(mnt, "entry/instrument/detector/up")) == "..",
              "h5ex_g_visit-like cycle: %r" % readlink(os.path.join(mnt, "entry/instrument/detector/up")))
        check(readlink(os.path.join(mnt, "entry/instrument/self")) == ".",
              "link to itself: %r" % readlink(os.path.join(mnt, "entry/instrument/self")))
        check(os.path.samefile(os.path.join(mnt, "entry/instrument/detector/up"),
                               os.path.join(mnt, "entry/instrument")), "cycle symlink resolves elsewhere")
        # a group of the same file through an external link: a directory
        again = os.path.join(mnt, "entry/again")
        check(os.path.isdir(again) and not os.path.islink(again), "entry/again is not a directory")
        check(sorted(os.listdir(again)) == sorted(f["entry/instrument"].keys()), "entry/again listing")
        # not followed: symlinks with a log line each
        for name, text in (("entry/data/data_000004", "data/series_data_000004.h5::/entry/data/data"),
                           ("entry/data/bad_object", "data/series_data_000002.h5::/entry/nothing"),
                           ("entry/outside", "../elsewhere/secret.h5::/x")):
            check(readlink(os.path.join(mnt, name)) == text, "%s: readlink %r" % (name, readlink(os.path.join(mnt, name))))
        # tree walkers: no errors
        for cmd in (["ls", "-lR", mnt], ["find", mnt], ["du", "-s", mnt],
                    ["tar", "-cf", os.path.join(wd, "t.tar"), "-C", mnt, "."],
                    ["rsync", "-a", mnt + "/", os.path.join(wd, "copy")]):
            if not shutil.which(cmd[0]):
                print("note: %s not installed" % cmd[0])
                continue
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            check(r.returncode == 0 and not r.stderr.strip(), "%s: exit %d: %s" % (cmd[0], r.returncode, r.stderr[:300]))
        check(m.alive(), "the daemon died")
        f.close()
    out = m.output()
    for name in ("/entry/data/data_000004", "/entry/data/bad_object", "/entry/outside"):
        check(any(name in ln and "not followed" in ln for ln in out.splitlines()), "no log line for %s" % name)
    check(any("/entry/outside" in ln and "ext_any" in ln for ln in out.splitlines()), "refusal does not name ext_any")

    # -o ext_any: the link outside the tree is followed
    with T.Mount(master, mnt, opts=("-o", "ro,ext_any")) as m, m.watchdog(60):
        p = os.path.join(mnt, "entry/outside")
        check(not os.path.islink(p), "ext_any: entry/outside still a symlink")
        with open(p, "rb") as fh:
            check(fh.read() == np.arange(4).tobytes(), "ext_any: bytes differ")

    # h5fs-ls says where each link leads
    r = subprocess.run([T.H5FS_LS, "-R", master], capture_output=True, text=True, timeout=60)
    out = r.stdout
    check("series_data_000001.h5 (dataset)" in out, "h5fs-ls: no resolution of data_000001:\n" + out)
    check("(not followed: file not found: data/series_data_000004.h5)" in out, "h5fs-ls: missing file not reported")
    print("%d checks failed" % len(fails) if fails else "external links: all checks passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
