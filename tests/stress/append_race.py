#!/usr/bin/python3
"""Readers near the end of a dataset that is being appended to (tail -f
while `cat >>` runs) must only ever see bytes that were written: one
writer appends small batches of rows (O_APPEND write + close) to each
appendable dataset of stresslib.APPEND_SETS on a read-write mount, while
4 threads keep opening the dataset and reading the last few KiB (page
cache kept, as a plain reader would).  Any byte that differs from what was
appended (or from the initial rows) fails, whether it lies before the
committed size (committed rows read wrong) or after it (rows in flight).
At the end every dataset is read whole, through the page cache, and must
hold exactly the committed rows.

Found with stress.py: the kernel caches a page filled by a short read
(the daemon had not applied the rows the kernel already counted in the
size) and zero-fills its tail; with keep_cache that page is served later
as zeros inside the file (README "Appending").

Environment: H5FS_BIN, H5FS_APPEND_RACE_BATCHES (300 per dataset).
Exit 77 without h5py or FUSE.
"""
import errno
import mmap
import os
import random
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib as S  # noqa: E402

T = S.T
BATCHES = int(os.environ.get("H5FS_APPEND_RACE_BATCHES", "300"))
READERS = 4
MAPPERS = 2


def race(mnt, path, final, rowsize, c0, fails):
    p = mnt + path
    state = {"c": c0, "stop": False, "maps": 0}

    def writer():
        rng = random.Random(1)
        c = c0
        try:
            for _ in range(BATCHES):
                k = min(len(final) - c, rowsize * rng.randint(1, 40))
                if k <= 0:
                    break
                with open(p, "ab", buffering=0) as fh:
                    q = c
                    while q < c + k:
                        q += fh.write(final[q:c + k])
                c += k
                state["c"] = c
        except OSError as e:
            fails.append("%s: append at %d: %s" % (path, c, e))
        finally:
            state["stop"] = True

    def reader(t):
        rng = random.Random(t)
        while not state["stop"] and len(fails) < 20:
            c = state["c"]       # committed before the open
            try:
                fd = os.open(p, os.O_RDONLY)
                try:
                    off = max(0, c - rng.randint(0, 9000))
                    got = os.pread(fd, 20000, off)
                finally:
                    os.close(fd)
            except OSError as e:
                fails.append("%s: read: %s" % (path, e))
                return
            want = final[off:off + len(got)]
            if got != want or len(got) < c - off:
                d = T.first_diff(got, want)
                fails.append("%s: pread(20000, %d) with %d bytes committed: %d bytes, %s" % (
                    path, off, c, len(got),
                    "short" if got == want else "byte %d is %s, expected %s (%s committed data)" % (
                        off + d, got[d:d + 8].hex(), want[d:d + 8].hex(),
                        "inside" if off + d < c else "after")))

    def mapper(t):
        """A shared mapping of the whole dataset as fstat sizes it (numpy.memmap
        mode "r"), its last few KiB compared; where mapping a direct_io file
        is refused (no FUSE_DIRECT_IO_ALLOW_MMAP), nothing to check."""
        rng = random.Random(100 + t)
        while not state["stop"] and len(fails) < 20:
            c = state["c"]
            try:
                fd = os.open(p, os.O_RDONLY)
                try:
                    size = os.fstat(fd).st_size
                    try:
                        m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
                    except ValueError:
                        # (Python's own fstat saw another size: rows
                        # accepted meanwhile, shown once committed)
                        continue
                    except OSError as e:
                        if e.errno == errno.ENODEV:
                            return
                        raise
                    try:
                        off = max(0, min(size, c) - rng.randint(0, 9000))
                        got = m[off:size]
                    finally:
                        m.close()
                finally:
                    os.close(fd)
            except OSError as e:
                fails.append("%s: mmap: %s" % (path, e))
                return
            state["maps"] += 1
            want = final[off:off + len(got)]
            if got != want or size < c:
                d = T.first_diff(got, want)
                fails.append("%s: mapping of %d bytes with %d committed: %s" % (
                    path, size, c, "short" if got == want else "byte %d is %s, expected %s (%s committed data)" % (
                        off + d, got[d:d + 8].hex(), want[d:d + 8].hex(), "inside" if off + d < c else "after")))

    ts = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(READERS)]
    ts += [threading.Thread(target=mapper, args=(i,), daemon=True) for i in range(MAPPERS)]
    ts.append(threading.Thread(target=writer, daemon=True))
    for t in ts:
        t.start()
    for t in ts:
        t.join(300)
    c = state["c"]
    with open(p, "rb") as fh:
        got = fh.read()
    if got != final[:c]:
        fails.append("%s: whole read after the appends: %d bytes, %d expected, first difference at %d" % (
            path, len(got), c, T.first_diff(got, final[:c])))
    return c - c0, state["maps"]


def main():
    T.require_h5py()
    T.require_fuse()
    wd = T.workdir("append_race")
    name, sets = S.make_append(wd, 4 << 20)
    mnt = os.path.join(wd, "mnt")
    fails = []
    m = T.Mount(os.path.join(wd, name), mnt, opts=("-o", "cache_size=1"), cwd=wd)
    m.start()
    try:
        with m.watchdog(600):
            for path in sorted(sets):
                final, rowsize, c0 = sets[path]
                n, maps = race(mnt, path, final, rowsize, c0, fails)
                print("%s: %d bytes appended in up to %d batches, %d readers, %d mappings checked" % (
                    path, n, BATCHES, READERS, maps))
        S.daemon_gone(m, fails)
    finally:
        m.stop()
    return S.verdict(fails, wd, "append_race: 0 passed, 1 failed (%d wrong reads)" % len(fails),
                     "append_race: 1 passed, 0 failed")


if __name__ == "__main__":
    sys.exit(main())
