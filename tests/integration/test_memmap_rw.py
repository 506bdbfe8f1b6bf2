#!/usr/bin/python3
"""numpy.memmap(mode="r+") through a read-write mount (issue 32 items 1 and
3; member/overwrite.c "Page cache"): handles of datasets that cannot grow
write through the kernel's page cache, so shared writable mappings work on
every layout and index such a dataset has - contiguous (allocated and never
written), compact, single chunk, implicit, fixed array, filtered and not.

For each dataset of the overwrite fixtures (make_overwrite_fixtures.py)
that cannot grow, in both formats:
  * round 1: bytes changed through a mapping of the whole dataset (runs
    crossing element, page and chunk edges), then m.flush() (msync): h5py
    opens FILE while the mount is up and reads the new bytes - msync
    commits, and FILE's lock is given back after it;
  * round 2: more bytes changed, the mapping dropped without a flush
    (munmap writes the pages back; the release commits them).
The same byte changes are made with h5py to a copy of the fixture; after
unmounting, every dataset of FILE equals the copy's (h5py), a read-only
remount shows the same bytes, and h5dump reads FILE.

A dataset that can grow is read, and written by write-only descriptors,
around the page cache (direct_io), mapped all the same
(FUSE_DIRECT_IO_ALLOW_MMAP, asked for by mount/initio.c); its O_RDWR
descriptors write through the page cache (member/wqueue.c): while rows are appended through another descriptor
(fsync'd or only answered), each new shared (mode "r") and private
(mode "c") mapping shows every row written, older ones keep showing the
rows they were made with, and a row changed through a mode "r+" mapping
is in FILE after msync.

A page the kernel holds only in part: a pwrite of 3 bytes through an
O_RDWR descriptor (page-cached, as a mapping's) into a page never read,
a read of that page through another descriptor before the
close (which may cache FILE's old bytes), then the close: the reading
descriptor (its page cache kept) must show the new bytes.

pwrite beside a mapping (xfstests generic/346, mmap_pwrite.c): in a new
file, one thread pwrite()s into every page while another stores into
every page through a shared mapping; both markers must be on every page.
"""
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

MAKE = os.path.join(T.HERE, "make_overwrite_fixtures.py")
REFUSED = ("unk", "ext", "vds")
PAGE = 4096


def fixed(ds):
    return ds.maxshape == ds.shape


def changes(name, rnd, n, esize):
    """Deterministic (offset, bytes) runs for a dataset of n bytes."""
    rng = random.Random("%s-%d" % (name, rnd))
    ops = [(0, min(n, esize + 1)), (max(0, n - 2 * esize - 1), min(n, 2 * esize + 1))]
    if n > PAGE + 8:
        ops.append((PAGE - 3, 7))       # across a page edge
    for _ in range(5):
        off = rng.randrange(n)
        ops.append((off, rng.randint(1, max(1, min(n - off, 3 * PAGE)))))
    return [(o, bytes(rng.randrange(256) for _ in range(k))) for o, k in ops]


def file_bytes(path, names):
    with h5py.File(path, "r") as f:
        return {k: T.dataset_raw(f[k]) for k in names}


def partial_page(mnt, name, expect, tag):
    """A page written in part, read meanwhile by another descriptor."""
    p = os.path.join(mnt, name)
    n = len(expect)
    off = PAGE + 5 if n > PAGE + 8 else 1
    data = b"\xa5\x5a\xc3"[:max(1, min(3, n - off))]
    wfd = os.open(p, os.O_RDWR)   # read and write: through the page cache
    rfd = os.open(p, os.O_RDONLY)
    try:
        os.pwrite(wfd, data, off)
        os.pread(rfd, n, 0)       # may cache the page with FILE's old bytes
    finally:
        os.close(wfd)             # commits
    expect[off:off + len(data)] = data
    got = os.pread(rfd, n + 1, 0)
    os.close(rfd)
    if got != bytes(expect):
        T.fail("%s %s: a descriptor open during a partial-page write reads old bytes after the close" %
               (tag, name))


def run(work, latest):
    tag = "latest" if latest else "default"
    src = os.path.join(work, tag + ".h5")
    subprocess.run([sys.executable, MAKE, src] + (["--latest"] if latest else []), check=True, cwd=work)
    ref = os.path.join(work, tag + "-h5py.h5")
    shutil.copy(src, ref)
    with h5py.File(src, "r") as f:
        names = [k for k in f if k not in REFUSED and fixed(f[k]) and f[k].size]
        expect = {k: T.dataset_raw(f[k]) for k in names}
        esize = {k: f[k].dtype.itemsize for k in names}
    if len(names) < 4:
        T.fail("%s: only %d fixed-size datasets in the fixture" % (tag, len(names)))
    probe = names[-1]       # the partial-page check's, not mapped
    mapped = names[:-1]
    mnt = os.path.join(work, "mnt-" + tag)
    with T.Mount(src, mnt) as m, m.watchdog(120):
        for k in mapped:
            p = os.path.join(mnt, k)
            for rnd in (1, 2):
                mm = np.memmap(p, dtype=np.uint8, mode="r+")
                if len(mm) != len(expect[k]):
                    T.fail("%s %s: mapping of %d bytes, the dataset has %d" % (tag, k, len(mm),
                                                                              len(expect[k])))
                for off, data in changes(k, rnd, len(expect[k]), esize[k]):
                    mm[off:off + len(data)] = np.frombuffer(data, dtype=np.uint8)
                    expect[k][off:off + len(data)] = data
                if rnd == 1:
                    mm.flush()
                    got = file_bytes(src, [k])[k]
                    if got != expect[k]:
                        bad = next(i for i in range(len(got)) if got[i] != expect[k][i])
                        T.fail("%s %s: after msync, h5py reads FILE's byte %d as %d, %d was mapped" %
                               (tag, k, bad, got[bad], expect[k][bad]))
                del mm        # round 2: munmap writes back, the release commits
        partial_page(mnt, probe, expect[probe], tag)
    with h5py.File(ref, "r+") as f:
        for k in names:
            T.write_raw(f[k], expect[k])
    got, want = file_bytes(src, names), file_bytes(ref, names)
    for k in names:
        if got[k] != expect[k]:
            T.fail("%s %s: FILE after the unmount differs from what was mapped" % (tag, k))
        if got[k] != want[k]:
            T.fail("%s %s: FILE differs from the h5py-written copy" % (tag, k))
    r = subprocess.run(["h5dump", "-H", src], capture_output=True, timeout=60)
    if r.returncode:
        T.fail("%s: h5dump: %s" % (tag, r.stderr.decode(errors="replace")[-300:]))
    with T.Mount(src, mnt, ["-o", "ro"]) as m, m.watchdog(60):
        for k in names:
            with open(os.path.join(mnt, k), "rb") as fh:
                got = fh.read()
            if got != bytes(expect[k]):
                T.fail("%s %s: a read-only remount reads %s" % (tag, k, T.first_diff(got, bytes(expect[k]))))
    return len(names)


def growable(work):
    path = os.path.join(work, "grow.h5")
    rows = np.arange(4000, dtype="<i8").reshape(1000, 4)
    with h5py.File(path, "w") as f:
        f.create_dataset("rows", data=rows, maxshape=(None, 4), chunks=(64, 4), compression="gzip")
    mnt = os.path.join(work, "mnt-grow")
    want = rows.ravel()
    with T.Mount(path, mnt) as m, m.watchdog(120):
        p = os.path.join(mnt, "rows")
        first = np.memmap(p, dtype="<i8", mode="r")
        private = np.memmap(p, dtype="<i8", mode="c")
        for mm, what in ((first, "shared"), (private, "private")):
            if not np.array_equal(mm, want):
                T.fail("a %s mapping of a dataset that grows: %s" % (what, T.first_diff(mm.tobytes(), want.tobytes())))
        fd = os.open(p, os.O_WRONLY | os.O_APPEND)
        try:
            for k in range(5):
                more = np.arange(1000 * 4 * (k + 1), 1000 * 4 * (k + 1) + 4 * 37, dtype="<i8")
                os.write(fd, more.tobytes())
                if k % 2:
                    os.fsync(fd)       # committed, or only answered: both shown
                want = np.concatenate([want, more])
                for mode in ("r", "c"):
                    mm = np.memmap(p, dtype="<i8", mode=mode)
                    if not np.array_equal(mm, want):
                        T.fail("mapping (%s) after append %d: %d elements, %d written; %s" % (
                            mode, k, len(mm), len(want), T.first_diff(mm.tobytes(), want.tobytes())))
                    del mm
                if not np.array_equal(first, rows.ravel()) or not np.array_equal(private, rows.ravel()):
                    T.fail("the first mappings changed after append %d" % k)
        finally:
            os.close(fd)
        del first, private
        # a shared writable mapping: a row changed in place, committed by msync
        mm = np.memmap(p, dtype="<i8", mode="r+")
        mm[4:8] = -1
        mm.flush()
        del mm
        want[4:8] = -1
    with h5py.File(path, "r") as f:
        if not np.array_equal(f["rows"][()].ravel(), want):
            T.fail("FILE after the appends differs from what the mappings showed")
    print("a dataset that grows: shared and private mappings exact across 5 appends, r+ committed")

def pwrite_beside_mapping(work):
    """xfstests generic/346 (src/holetest.c): a new file, zero-filled
    through a shared mapping, then pwrite() markers into every page while
    another thread stores markers through the mapping (mmap_pwrite.c).
    With its O_RDWR descriptor around the page cache a pwrite's bytes were
    lost (the kernel dropped the page before the WRITE, a fault read it
    back before the daemon had the bytes, the store's writeback took them
    away): 6 of 6 runs failed with main's binary of the time."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("SKIP pwrite beside a mapping: no C compiler")
        return
    exe = os.path.join(work, "mmap_pwrite")
    src = os.path.join(T.SRCDIR, "tests", "integration", "mmap_pwrite.c")
    b = subprocess.run([cc, "-O2", "-pthread", "-o", exe, src], capture_output=True, text=True, timeout=120)
    if b.returncode != 0:
        T.fail("mmap_pwrite.c does not build: %s" % b.stderr[-500:])
        return
    path, mnt = os.path.join(work, "new.h5"), os.path.join(work, "mnt-new")
    with h5py.File(path, "w"):
        pass
    with T.Mount(path, mnt) as m, m.watchdog(120):
        r = subprocess.run([exe, os.path.join(mnt, "t"), "256", "6"], capture_output=True, text=True, timeout=110)
        if r.returncode != 0:
            T.fail("pwrite beside a shared mapping of a new file (exit %d): %s" % (r.returncode, r.stderr[-500:]))
            return
    with h5py.File(path, "r") as f:
        if list(f):
            T.fail("FILE after the rounds (each unlinks its file) holds %s" % list(f))
    print("pwrite beside stores through a mapping of a new file: every marker kept, 6 rounds")


def main():
    rc = T.run_both_formats("memmap_rw", run, "memmap r+: %d datasets in two formats, two rounds each")
    growable(T.workdir("memmap_grow"))
    pwrite_beside_mapping(T.workdir("memmap_pwrite"))
    return rc or T.finish()


if __name__ == "__main__":
    sys.exit(main())
