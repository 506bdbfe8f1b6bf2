#!/usr/bin/python3
"""Issue 33, item 3, as a new user meets it: a copy of an HDF5 file cut
short (`head -c 200 f.h5 > t.h5`, an interrupted download) is refused at
mount with exit status 5 (corrupt) and one line naming both sizes, as
h5py refuses it ("truncated file: eof = ..., stored_eof = ..."); nothing
is mounted. h5fs-ls refuses it the same way (exit 5, one line). In a
collection (a folder with the whole file and a cut copy) the cut member is
listed by `h5fs-ls -R` with that reason (exit 1: partial), and a mount of
the folder shows it, gives EIO inside it with one log line naming both
sizes, and reads the whole one. A file with bytes after its end (an
appended-to copy) and the whole file still mount."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def main():
    wd = T.workdir("trunc")
    full = os.path.join(wd, "f.h5")
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt)
    with h5py.File(full, "w") as f:
        f["a"] = np.arange(5000, dtype="<f8")
        f.create_group("g").attrs["x"] = 1
    data = open(full, "rb").read()
    for cut in (200, len(data) // 2, len(data) - 1):
        t = os.path.join(wd, "t%d.h5" % cut)
        with open(t, "wb") as fh:
            fh.write(data[:cut])
        try:
            h5py.File(t, "r").close()
            why = None
        except OSError as e:
            why = str(e)
        m = re.search(r"truncated file: eof = (\d+), sblock->base_addr = \d+, stored_eof = (\d+)", why or "")
        r = subprocess.run([T.H5FS, t, mnt], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
        err = r.stderr.decode()
        if T.is_mounted(mnt):
            subprocess.run(["fusermount3", "-uz", mnt], timeout=10)
            T.fail("%d bytes: mounted" % cut)
            continue
        lines = [x for x in err.splitlines() if x.strip()]
        want = "h5fs: %s: truncated file: eof = %s, stored_eof = %s" % (t, m.group(1), m.group(2)) if m else None
        if r.returncode != 5 or len(lines) != 1 or not want or not lines[0].startswith(want):
            T.fail("%d bytes: exit %d, stderr %r (h5py: %r)" % (cut, r.returncode, err, why))
        else:
            print("ok   cut at %d bytes: exit 5, %s" % (cut, lines[0]))
        r = subprocess.run([T.H5FS_LS, t], capture_output=True, timeout=30)
        lines = [x for x in r.stderr.decode().splitlines() if x.strip()]
        want_ls = want.replace("h5fs: ", "h5fs-ls: ", 1) if want else None
        if r.returncode != 5 or len(lines) != 1 or not want_ls or not lines[0].startswith(want_ls):
            T.fail("h5fs-ls of %d bytes: exit %d, stderr %r" % (cut, r.returncode, r.stderr.decode()))
    # a collection with a cut member
    col = os.path.join(wd, "col")
    os.makedirs(col)
    with open(os.path.join(col, "whole.h5"), "wb") as fh:
        fh.write(data)
    with open(os.path.join(col, "cut.h5"), "wb") as fh:
        fh.write(data[:len(data) // 2])
    r = subprocess.run([T.H5FS_LS, "-R", col], capture_output=True, timeout=60)
    out = r.stdout.decode()
    cut_line = [x for x in out.splitlines() if x.startswith("cut.h5 ")]
    if r.returncode != 1 or not cut_line or "truncated file: eof = %d" % (len(data) // 2) not in cut_line[0] \
            or "whole.h5/a" not in out:
        T.fail("h5fs-ls -R of a collection with a cut member: exit %d, %r" % (r.returncode, out[-600:]))
    log = os.path.join(wd, "log.txt")
    with T.Mount(col, mnt, ["-o", "ro,logfile=" + log]):
        if sorted(os.listdir(mnt)) != ["cut.h5", "whole.h5"] or sorted(os.listdir(mnt + "/whole.h5")) != ["a", "g"]:
            T.fail("collection listing: %r" % sorted(os.listdir(mnt)))
        try:
            os.listdir(mnt + "/cut.h5")
            T.fail("the cut member lists")
        except OSError as e:
            if e.errno != 5:
                T.fail("the cut member: %s, expected EIO" % e)
    text = open(log).read() if os.path.exists(log) else ""
    if text.count("truncated file: eof = %d" % (len(data) // 2)) != 1:
        T.fail("log of the cut member: %r" % text[-600:])
    # trailing bytes are not a truncation; the whole file mounts
    longer = os.path.join(wd, "longer.h5")
    with open(longer, "wb") as fh:
        fh.write(data + b"\0" * 1000)
    for p in (full, longer):
        with T.Mount(p, mnt, ["-o", "ro"]):
            if sorted(os.listdir(mnt)) != ["a", "g"]:
                T.fail("%s: listing %r" % (p, os.listdir(mnt)))
            else:
                print("ok   %s mounts" % os.path.basename(p))
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
