#!/usr/bin/python3
"""Variable-length data in files with other offset/length sizes: the global
heap collection and object headers are padded to 8 bytes (libhdf5's
H5HG_SIZEOF_HDR and H5HG_SIZEOF_OBJHDR), which only shows when lengths are
not 8 bytes. Files written by h5py with H5Pset_sizes (offsets, lengths) =
(4, 4), (8, 4), (4, 8), (2, 2) and (8, 8); through a real mount the
variable-length string attributes (scalar and array), a string attribute
of a dataset, and a variable-length string dataset and a vlen int dataset
(read as text) equal what h5py reads."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from h5py import h5f, h5p  # noqa: E402

failures = []
SIZES = [(4, 4), (8, 4), (4, 8), (2, 2), (8, 8)]


def make(path, so, sl):
    fcpl = h5p.create(h5p.FILE_CREATE)
    fcpl.set_sizes(so, sl)
    fid = h5f.create(path.encode(), h5f.ACC_TRUNC, fcpl=fcpl)
    with h5py.File(fid) as f:
        f.attrs["title"] = "hello vlen %d/%d" % (so, sl)
        f.attrs.create("many", ["a", "bb", "ccc", "", "caf\u00e9"], dtype=h5py.string_dtype())
        words = np.array(["w%d" % i * (i % 7) for i in range(300)], dtype=object)
        d = f.create_dataset("s", data=words, dtype=h5py.string_dtype())
        d.attrs["note"] = "attr on ds"
        v = f.create_dataset("v", shape=(5,), dtype=h5py.vlen_dtype(np.int32))
        for i in range(5):
            v[i] = np.arange(i, dtype=np.int32)


def main():
    wd = T.workdir("gheap-sizes")
    mnt = os.path.join(wd, "mnt")
    for so, sl in SIZES:
        path = os.path.join(wd, "sizes_%d_%d.h5" % (so, sl))
        try:
            make(path, so, sl)
        except Exception as e:      # a combination this libhdf5 refuses
            print("note: sizes (%d, %d) not written by h5py: %s" % (so, sl, e))
            continue
        with h5py.File(path, "r") as f:
            title = f.attrs["title"]
            title = title.decode() if isinstance(title, bytes) else title
            many = [x.decode() if isinstance(x, bytes) else x for x in f.attrs["many"]]
            words = [x.decode() for x in f["s"][()]]
            vals = [list(x) for x in f["v"][()]]
        with T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(60):
            label = "sizes (%d, %d)" % (so, sl)
            got = os.getxattr(mnt, "user.title").decode()
            if got != title:
                failures.append("%s: user.title %r, h5py %r" % (label, got, title))
            got = os.getxattr(mnt, "user.many").decode()
            if got != "\n".join(many):
                failures.append("%s: user.many %r, h5py %r" % (label, got, many))
            got = os.getxattr(os.path.join(mnt, "s"), "user.note").decode()
            if got != "attr on ds":
                failures.append("%s: user.note %r" % (label, got))
            with open(os.path.join(mnt, "s"), "rb") as fh:
                got = fh.read().decode()
            if got != "".join(w + "\n" for w in words):
                failures.append("%s: /s reads %r..." % (label, got[:80]))
            with open(os.path.join(mnt, "v"), "rb") as fh:
                got = fh.read().decode().splitlines()
            want = ["[" + ", ".join(str(x) for x in v) + "]" for v in vals]
            if got != want:
                failures.append("%s: /v reads %r, want %r" % (label, got, want))
            if not m.alive():
                failures.append("%s: the daemon died" % label)
            print("checked %s" % label)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
