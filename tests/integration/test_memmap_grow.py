#!/usr/bin/python3
"""numpy.memmap of datasets that grow, on a read-write mount, while rows
are appended through it (issues 32 item 3, 33 item 2, 34 "memmap keeps
working ... on appends"; member/tail.c).

All descriptors of a dataset that grows use the page cache (memmap: a
direct_io descriptor cannot be mapped with Debian's libfuse), or none
does, the first deciding (member/tail.c). For every dataset of the
overwrite fixtures (make_overwrite_fixtures.py) that can grow - v1
B-tree, v2 B-tree and extensible array indexes, filtered and not - in
both formats:
  * numpy.memmap's default mode (r+) first: bytes changed through the
    mapping are in FILE after flush (h5py reads them); an append
    meanwhile shows at once;
  * with a reader holding the dataset open (tail -f), one descriptor
    appends batches of rows (one of them in two writes that split a row);
    after each write, nothing committed yet: stat shows the accepted size,
    a fresh descriptor reads the last pages as written (never zeros), a
    new mapping of the new size equals every row, and the first mapping
    still shows the first rows; the close commits: h5py reads every row;
  * a partial row left by one descriptor: another's append is EBUSY, the
    close is EINVAL, and the size, a read at the end and a new mapping
    show whole rows only.
Then, on two datasets: readers map and read the end in a loop while one
descriptor appends 150 small batches without closing (with and without a
reader held): any byte that is not what was written fails. On a second
mount, two datasets whose first descriptor is a write-only one (cat >>):
while it appends, stat and reads show committed rows only and mapping
fails with ENODEV; after its close every row reads. After the unmount
h5py reads every row and h5dump reads FILE.
"""
import errno
import os
import random
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

MAKE = os.path.join(T.HERE, "make_overwrite_fixtures.py")
PAGE = 4096


def rows_of(name, k, row, seed):
    rng = random.Random("%s-%s" % (name, seed))
    return bytes(rng.randrange(256) for _ in range(k * row))


def diff(got, want):
    i = T.first_diff(got, want)
    if i >= min(len(got), len(want)):
        return "%d bytes, %d expected" % (len(got), len(want))
    return "byte %d is %s, expected %s" % (i, got[i:i + 8].hex(), want[i:i + 8].hex())


def mapped(p, n):
    """The first n bytes of p through a fresh mapping (mode "r")."""
    if n == 0:
        return b""
    mm = np.memmap(p, dtype=np.uint8, mode="r", shape=(n,))
    try:
        return mm.tobytes()
    finally:
        del mm


def tail_read(p, want, tag):
    """A fresh descriptor's view of the last pages: exactly want's."""
    off = max(0, len(want) - 3 * PAGE - 123)
    fd = os.open(p, os.O_RDONLY)
    try:
        got = os.pread(fd, len(want) - off + PAGE, off)
    finally:
        os.close(fd)
    if got != want[off:]:
        T.fail("%s: pread(%d) of the end: %d bytes, %d expected, %s" % (
            tag, off, len(got), len(want) - off, diff(got, want[off:])))


def check_now(p, want, first, tag):
    st = os.stat(p).st_size
    if st != len(want):
        T.fail("%s: stat shows %d bytes, %d were written" % (tag, st, len(want)))
    tail_read(p, want, tag)
    got = mapped(p, len(want))
    if got != want:
        T.fail("%s: a mapping of %d bytes: %s" % (tag, len(want), diff(got, want)))
    if first is not None and first.tobytes() != want[:len(first)]:
        T.fail("%s: the first mapping changed: %s" % (tag, diff(first.tobytes(), want[:len(first)])))


def while_writing(mnt, k, want, row, tag):
    """A write-only descriptor first (cat >> before any reader): the
    dataset's descriptors bypass the page cache (member/tail.c). While it
    appends (rows and part of a row, committed at its close here), stat
    and reads show the committed rows and a mapping fails with ENODEV;
    after its close every row reads."""
    p = os.path.join(mnt, k)
    data = rows_of(k, 4, row, tag + "-first")
    cut = 3 * row + row // 2
    with open(p, "ab", buffering=0) as fh:
        fh.write(data[:cut])
        st = os.stat(p).st_size
        if st != len(want):
            T.fail("%s: stat shows %d bytes while rows wait, %d are committed" % (tag, st, len(want)))
        fd = os.open(p, os.O_RDONLY)
        try:
            got = os.pread(fd, len(want) + len(data), 0)
        finally:
            os.close(fd)
        if got != want:
            T.fail("%s: a read while rows wait: %s" % (tag, diff(got, want)))
        T.expect_err("%s: a mapping while a write-only descriptor appends" % tag,
                     lambda: mapped(p, len(want)), (errno.ENODEV,))
        fh.write(data[cut:])
    want += data
    st = os.stat(p).st_size
    with open(p, "rb") as fh:
        got = fh.read()
    if st != len(want) or got != want:
        T.fail("%s: after the close: stat %d, read %s" % (tag, st, diff(got, want)))
    return want


def map_rw(mnt, src, k, want, row, tag):
    """numpy.memmap's default mode (r+): bytes changed through the mapping,
    committed by flush (msync); meanwhile another descriptor's append is
    EBUSY (its acceptance would drop pages the mapping's writes hold)."""
    p = os.path.join(mnt, k)
    want = bytearray(want)
    mm = np.memmap(p, dtype=np.uint8)
    try:
        rng = random.Random(tag + "-rw")
        for off in (0, len(want) // 2 - 3, len(want) - row - 1):
            data = bytes(rng.randrange(256) for _ in range(min(row + 2, len(want) - off)))
            mm[off:off + len(data)] = np.frombuffer(data, dtype=np.uint8)
            want[off:off + len(data)] = data
        mm.flush()
        with h5py.File(src, "r") as f:
            got = T.dataset_raw(f[k])
        if got != bytes(want):
            T.fail("%s: h5py after msync of a mapping (r+): %s" % (tag, diff(got, bytes(want))))
        # an append meanwhile goes through the page cache too: shown at once
        more = rows_of(k, 2, row, tag + "-more")
        with open(p, "ab", buffering=0) as other:
            other.write(more)
            want += more
            check_now(p, bytes(want), mm, tag + " appended while mapped r+")
    finally:
        del mm
    check_now(p, bytes(want), None, tag + " after a mapping r+")
    return bytes(want)


def grow(mnt, src, k, want, row, tag):
    """Appends through one open descriptor, checked after every write."""
    p = os.path.join(mnt, k)
    first = np.memmap(p, dtype=np.uint8, mode="r")
    if first.tobytes() != want:
        T.fail("%s: the mapping differs from h5py's bytes: %s" % (tag, diff(first.tobytes(), want)))
    # a reader holds the dataset (tail -f): the writer goes through the cache
    held = os.open(p, os.O_RDONLY)
    with open(p, "ab", buffering=0) as fh:
        for i, nrows in enumerate((1, 3, 2, 5)):
            data = rows_of(k, nrows, row, "%s-%d" % (tag, i))
            if i == 2:              # a row split over two writes
                cut = row // 2 + 1
                fh.write(data[:cut])
                fh.write(data[cut:])
            else:
                fh.write(data)
            want += data
            check_now(p, want, first, "%s after batch %d" % (tag, i))
    os.close(held)
    del first
    # the close committed: FILE has every row (the lock is given back)
    with h5py.File(src, "r") as f:
        got = T.dataset_raw(f[k])
    if got != want:
        T.fail("%s: h5py reads FILE after the close: %s" % (tag, diff(got, want)))
    check_now(p, want, None, tag + " after the close")
    return want


def partial(mnt, k, want, row, tag):
    """A partial row: the others' appends wait for it; the close drops it."""
    p = os.path.join(mnt, k)
    fh = open(p, "ab", buffering=0)
    try:
        fh.write(rows_of(k, 1, row, tag + "-p")[:max(1, row // 3)])
        with open(p, "ab", buffering=0) as other:
            T.expect_err("%s: another descriptor's append during a partial row" % tag,
                         lambda: other.write(rows_of(k, 1, row, tag + "-o")), (errno.EBUSY,))
    finally:
        T.expect_err("%s: close after a partial row" % tag, fh.close, (errno.EINVAL,))
    check_now(p, want, None, tag + " after a partial row was dropped")


def race(mnt, k, want, row, tag, held, batches=150, readers=3):
    """Readers at the end while one descriptor appends small batches without
    closing (the dataset's descriptors use the page cache). held: a reader
    holds the dataset open meanwhile, and readers also map it and must
    read every row written; else they only read, short reads allowed,
    wrong bytes never."""
    p = os.path.join(mnt, k)
    hfd = os.open(p, os.O_RDONLY) if held else None
    final = want + rows_of(k, batches * 4, row, tag + "-race")
    state = {"n": len(want), "stop": False}
    bad = []

    def reader(t):
        rng = random.Random(t)
        while not state["stop"] and len(bad) < 5:
            n = state["n"]           # written before this look
            try:
                if held and rng.random() < 0.5:
                    got = mapped(p, n)
                    base = 0
                else:
                    base = max(0, n - rng.randint(0, 3 * PAGE))
                    fd = os.open(p, os.O_RDONLY)
                    try:
                        got = os.pread(fd, 4 * PAGE, base)
                    finally:
                        os.close(fd)
            except (OSError, ValueError) as e:
                bad.append("%s: reader: %s" % (tag, e))
                return
            exp = final[base:base + len(got)]
            if got != exp or (held and base + len(got) < n):
                bad.append("%s: %d bytes at %d with %d written: %s" % (
                    tag, len(got), base, n, "short" if got == exp else diff(got, exp)))

    ts = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(readers)]
    for t in ts:
        t.start()
    rng = random.Random(tag)
    try:
        with open(p, "ab", buffering=0) as fh:
            n = len(want)
            while n < len(final):
                k2 = min(len(final) - n, row * rng.randint(1, 8))
                fh.write(final[n:n + k2])
                n += k2
                state["n"] = n
    finally:
        state["stop"] = True
        for t in ts:
            t.join(60)
        if hfd is not None:
            os.close(hfd)
    for b in bad:
        T.fail(b)
    check_now(p, final, None, tag + " after the race")
    return final


def run(work, latest):
    tag = "latest" if latest else "default"
    src = os.path.join(work, tag + ".h5")
    subprocess.run([sys.executable, MAKE, src] + (["--latest"] if latest else []), check=True, cwd=work)
    with h5py.File(src, "r") as f:
        names = [k for k in f if f[k].maxshape[0] is None and f[k].size]
        start = {k: T.dataset_raw(f[k]) for k in names}
        row = {k: f[k].dtype.itemsize * int(np.prod(f[k].shape[1:])) for k in names}
    if len(names) < 3:
        T.fail("%s: only %d growable datasets in the fixture" % (tag, len(names)))
    final = {}
    mnt = os.path.join(work, "mnt-" + tag)
    os.environ["H5FS_APPEND_COMMIT_MS"] = "60000"   # rows wait for close, fsync
    with T.Mount(src, mnt) as m, m.watchdog(240):
        for k in names:
            # a mapping first: every descriptor of k uses the page cache
            w = map_rw(mnt, src, k, bytes(start[k]), row[k], "%s %s" % (tag, k))
            w = grow(mnt, src, k, w, row[k], "%s %s" % (tag, k))
            partial(mnt, k, w, row[k], "%s %s" % (tag, k))
            final[k] = w
        for k in names[:1] + [x for x in names if "_z" in x][:1]:
            final[k] = race(mnt, k, final[k], row[k], "%s %s race" % (tag, k), True)
            final[k] = race(mnt, k, final[k], row[k], "%s %s race, write-only" % (tag, k), False)
    # a second mount, a write-only descriptor first
    with T.Mount(src, mnt) as m, m.watchdog(120):
        for k in names[:1] + [x for x in names if "_z" in x][:1]:
            final[k] = while_writing(mnt, k, final[k], row[k], "%s %s write-only first" % (tag, k))
    with h5py.File(src, "r") as f:
        for k in names:
            got = T.dataset_raw(f[k])
            if got != final[k]:
                T.fail("%s %s: h5py after the unmount: %s" % (tag, k, diff(got, final[k])))
    r = subprocess.run(["h5dump", "-H", src], capture_output=True, timeout=60)
    if r.returncode:
        T.fail("%s: h5dump: %s" % (tag, r.stderr.decode(errors="replace")[-300:]))
    return len(names)


def main():
    return T.run_both_formats("memmap_grow", run, "memmap of growing datasets: %d datasets in two formats")


if __name__ == "__main__":
    sys.exit(main())
