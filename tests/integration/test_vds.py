#!/usr/bin/python3
"""Virtual datasets read as h5py reads them (make_vds_fixtures.py).

Through a real mount, for every virtual dataset of the fixtures: st_size,
user.h5.layout ("virtual") and user.h5.shape (the extent the sources give
it now, as h5py reports it), the whole file and 300 random pread windows
equal h5py's bytes: whole sources stacked, a missing source (fill value),
strided hyperslabs on both sides, big-endian sources of a little-endian
dataset, a source in the same file, unlimited mappings (block and count
forms) whose source grew after the VDS was written, printf-named sources
(found up to the first missing one), irregular selections, 3000 mappings.
Hostile ones answer EIO with one log line naming the dataset and the
mount stays up: a cycle of VDS files (A reads B reads A; libhdf5 itself
crashes on it, so no h5py reference is taken), a source selection beyond
the source's extent, a source of another type. Sources outside FILE's
directory are refused unless -o ext_any.
"""
import errno
import os
import random
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402

import make_vds_fixtures  # noqa: E402

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def check_dataset(mnt, fx, fname, name):
    global failures
    with h5py.File(os.path.join(fx, fname), "r") as f:
        ds = f[name]
        want = ds[()].tobytes()
        shape = ",".join(str(n) for n in ds.shape)
    p = os.path.join(mnt, name)
    st = os.stat(p)
    if st.st_size != len(want):
        fail("%s/%s: st_size %d, h5py has %d bytes" % (fname, name, st.st_size, len(want)))
        return
    lay = os.getxattr(p, "user.h5.layout").decode()
    if lay != "virtual":
        fail("%s/%s: user.h5.layout %r" % (fname, name, lay))
    got_shape = os.getxattr(p, "user.h5.shape").decode()
    if got_shape != shape:
        fail("%s/%s: user.h5.shape %r, h5py %r" % (fname, name, got_shape, shape))
    with open(p, "rb") as fh:
        got = fh.read()
    if got != want:
        i = T.first_diff(got, want)
        fail("%s/%s: bytes differ from h5py's at %d (%d vs %d bytes)" % (fname, name, i, len(got), len(want)))
        return
    rng = random.Random(hash(fname + name) & 0xffff)
    fd = os.open(p, os.O_RDONLY)
    try:
        for _ in range(300):
            off = rng.randrange(0, len(want) + 8)
            ln = rng.randrange(1, 200)
            got = os.pread(fd, ln, off)
            if got != want[off:off + ln]:
                fail("%s/%s: pread(%d, %d) differs" % (fname, name, off, ln))
                break
    finally:
        os.close(fd)
    print("ok   %s/%s (%d bytes, shape %s)" % (fname, name, len(want), shape))


def expect_eio(m, fname, name, needle):
    p = os.path.join(m.mnt, name)
    try:
        with open(p, "rb") as fh:
            fh.read()
        fail("%s/%s: read succeeded, expected EIO" % (fname, name))
        return
    except OSError as e:
        if e.errno != errno.EIO:
            fail("%s/%s: %s, expected EIO" % (fname, name, e))
            return
    if not m.alive():
        fail("%s: the daemon died" % fname)
        return
    out = m.output()
    if not any("/" + name in ln and "EIO" in ln and needle in ln for ln in out.splitlines()):
        fail("%s/%s: no log line with %r:\n%s" % (fname, name, needle, out[-2000:]))
        return
    print("ok   %s/%s: EIO (%s)" % (fname, name, needle))


def main():
    fx = make_vds_fixtures.make(T.workdir("vds-fx"))
    mnt = T.workdir("vds-mnt")
    good = {
        "stack.h5": ["stack", "partial"],
        "strided.h5": ["strided", "be"],
        "samefile.h5": ["view"],
        "unlim.h5": ["grow", "grow_count"],
        "printf.h5": ["frames"],
        "irregular.h5": ["irr"],
        "many.h5": ["many"],
        "outside.h5": ["good"],
    }
    for fname, names in sorted(good.items()):
        with T.Mount(os.path.join(fx, fname), mnt, opts=("-o", "ro")) as m, m.watchdog(120):
            for name in names:
                check_dataset(mnt, fx, fname, name)
            if not m.alive():
                fail("%s: the daemon died" % fname)
    hostile = [("loop_a.h5", "v", "nested"), ("outside.h5", "bad", "source elements"),
               ("typed.h5", "mixed", "datatype differs")]
    for fname, name, needle in hostile:
        with T.Mount(os.path.join(fx, fname), mnt, opts=("-o", "ro")) as m, m.watchdog(60):
            expect_eio(m, fname, name, needle)

    # a source outside FILE's directory: refused, unless -o ext_any
    sub = os.path.join(fx, "sub")
    os.makedirs(sub, exist_ok=True)
    shutil.copy(os.path.join(fx, "stack.h5"), sub)
    with h5py.File(os.path.join(sub, "up.h5"), "w") as f:
        lay = h5py.VirtualLayout(shape=(4, 6, 5), dtype="<i4")
        lay[:] = h5py.VirtualSource("../src_1.h5", "data", shape=(4, 6, 5))
        f.create_virtual_dataset("up", lay)
    with T.Mount(os.path.join(sub, "up.h5"), mnt, opts=("-o", "ro")) as m, m.watchdog(60):
        expect_eio(m, "up.h5", "up", "outside the directory of FILE")
    with T.Mount(os.path.join(sub, "up.h5"), mnt, opts=("-o", "ro,ext_any")) as m, m.watchdog(60):
        with h5py.File(os.path.join(sub, "up.h5"), "r") as f:
            want = f["up"][()].tobytes()
        with open(os.path.join(mnt, "up"), "rb") as fh:
            if fh.read() != want:
                fail("up.h5 with ext_any: bytes differ")
            else:
                print("ok   up.h5/up with -o ext_any")
    if failures:
        print("%d failure(s)" % failures)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
