#!/usr/bin/python3
"""Writing bytes inside existing datasets through a read-write mount
(issue 32 item 1, doc/OVERWRITE.md): pwrite and dd conv=notrunc into every
layout and chunk index, filtered and not - contiguous (allocated and never
written), compact, v1 B-tree, single chunk, implicit, fixed array,
extensible array, v2 B-tree - at odd offsets and lengths crossing element
and chunk edges, into chunks never written (fill value elsewhere in them).

The same byte changes are made to a copy of the fixture with h5py
(ds[...] = the changed array). After unmounting, h5py reads the mounted
file: every dataset equals the h5py-written copy, and a read-only remount
shows the same bytes. Also: the read handle's cached pages show the new
bytes after a close; writes past the end of a fixed dataset: EFBIG (a
write crossing it is short); crossing the end of a growable one appends
the rest; lzf (random values: the optional filter does not pay and the
chunks are stored without it, mask bit set, as libhdf5 does); VDS,
external storage and a third-party filter (no encoder) are
refused at open with EOPNOTSUPP and one log line; h5dump reads the result.
One mount commits every 777 bytes (H5FS_COMMIT_WRITES_BYTES): a partial
element waits for the rest of it.

Chunks taken whole (issue 55: filtered from the request at the put,
chunk_whole.c), one handle, then a check of every byte: whole chunks, one
of them again, a part written over a whole chunk, a whole chunk written
over a kept part, unaligned writes that complete chunks begun by the kept
bytes before them, a write that completes a chunk after a kept part of it
elsewhere - for deflate+shuffle, lzf and unfiltered chunks, 1-D and rows
of 2-D chunks; then a periodic commit every 5,000 bytes over the same.
"""
import errno
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

import bt1_dump  # noqa: E402

MAKE = os.path.join(T.HERE, "make_overwrite_fixtures.py")
REFUSED = ("unk", "ext", "vds")


def plan(name, n, esize, cb):
    """Deterministic writes (offset, bytes) for a dataset of n bytes."""
    rng = random.Random(name)
    ops = [(1, min(n - 1, 3 * esize + 1)), (max(0, n - esize - 3), min(n, esize + 3)),
           (n // 5 + 1, n // 2)]      # across many chunks
    for _ in range(4):
        off = rng.randrange(n)
        ops.append((off, rng.randint(1, max(1, min(n - off, 3 * cb)))))
    return [(o, bytes(rng.randrange(256) for _ in range(k))) for o, k in ops]


def dd(path, off, data):
    # bs=7 from a pipe: writes of 7 bytes or fewer, at odd offsets
    r = subprocess.run(["dd", "of=" + path, "bs=7", "seek=%d" % off, "oflag=seek_bytes", "conv=notrunc",
                        "status=none"], input=data, capture_output=True, timeout=60)
    if r.returncode:
        T.fail("dd into %s at %d: %s" % (path, off, r.stderr.decode().strip()))


def cb_of(ds):
    if ds.chunks is None:
        return 64
    return int(np.prod(ds.chunks)) * ds.dtype.itemsize


def run(work, latest):
    tag = "latest" if latest else "default"
    src = os.path.join(work, tag + ".h5")
    subprocess.run([sys.executable, MAKE, src] + (["--latest"] if latest else []), check=True, cwd=work)
    ref = os.path.join(work, tag + "-h5py.h5")
    shutil.copy(src, ref)
    expect, plans = {}, {}
    with h5py.File(src, "r") as f:
        names = [k for k in f if k not in REFUSED]
        for k in names:
            ds = f[k]
            expect[k] = T.dataset_raw(ds)
            plans[k] = plan(k, len(expect[k]), ds.dtype.itemsize, cb_of(ds))
    mnt = os.path.join(work, "mnt-" + tag)
    env = {"H5FS_COMMIT_WRITES_BYTES": "777"} if latest else {}
    m = T.Mount(src, mnt, env=env)
    m.start()
    try:
        with m.watchdog(120):
            for k in names:
                p = os.path.join(mnt, k)
                st = os.stat(p)
                if not st.st_mode & 0o200:
                    T.fail("%s %s: not owner-writable (mode %o)" % (tag, k, st.st_mode))
                rfd = os.open(p, os.O_RDONLY)
                os.read(rfd, 1 << 20)       # pages the kernel may cache
                ops = plans[k]
                fd = os.open(p, os.O_WRONLY)
                try:
                    for off, data in ops[:-1]:
                        w = os.pwrite(fd, data, off)
                        if w != len(data):
                            T.fail("%s %s: pwrite at %d wrote %d of %d" % (tag, k, off, w, len(data)))
                        expect[k][off:off + len(data)] = data
                finally:
                    os.close(fd)
                off, data = ops[-1]
                dd(p, off, data)
                expect[k][off:off + len(data)] = data
                got = os.pread(rfd, len(expect[k]) + 1, 0)
                os.close(rfd)
                if got != bytes(expect[k]):
                    T.fail("%s %s: read back through the mount differs (%s)" % (tag, k,
                                                                                T.first_diff(got, bytes(expect[k]))))
            # every handle closed and committed: FILE's lock is given back,
            # so libhdf5 (which locks) opens it while it is mounted
            try:
                with h5py.File(src, "r") as f:
                    if bytes(T.dataset_raw(f[names[0]])) != bytes(expect[names[0]]):
                        T.fail("%s: h5py reads %s differently while mounted" % (tag, names[0]))
            except OSError as e:
                T.fail("%s: h5py cannot open FILE after the writes were closed: %s" % (tag, e))
            # refusals
            for k in REFUSED:
                if latest:
                    break
                try:
                    os.close(os.open(os.path.join(mnt, k), os.O_WRONLY))
                    T.fail("%s %s: opened for writing" % (tag, k))
                except OSError as e:
                    if e.errno != errno.EOPNOTSUPP:
                        T.fail("%s %s: open for writing gave %s, not EOPNOTSUPP" % (tag, k, e))
            if not latest:
                p = os.path.join(mnt, "contig")
                n = len(expect["contig"])
                fd = os.open(p, os.O_WRONLY)
                try:
                    try:
                        os.pwrite(fd, b"x" * 8, n)
                        T.fail("write past the end of a fixed dataset succeeded")
                    except OSError as e:
                        if e.errno != errno.EFBIG:
                            T.fail("write past the end gave %s, not EFBIG" % e)
                    w = os.pwrite(fd, b"\x11" * 16, n - 8)
                    if w != 8:
                        T.fail("write crossing the end of a fixed dataset wrote %d, not 8" % w)
                    expect["contig"][n - 8:] = b"\x11" * 8
                    # whole elements go in place at once, parts wait for the
                    # commit: later writes win whichever way each went
                    for off, data in ((3, b"\xa1" * 5), (0, b"\xb2" * 16), (9, b"\xc3" * 3),
                                      (20, b"\xd4" * 4), (16, b"\xe5" * 8), (30, b"\xf6" * 20)):
                        os.pwrite(fd, data, off)
                        expect["contig"][off:off + len(data)] = data
                finally:
                    os.close(fd)
                with open(p, "rb") as fh:
                    if fh.read(64) != bytes(expect["contig"][:64]):
                        T.fail("contig: overlapping writes of whole and partial elements read back wrong")
            else:
                # crossing the end of a growable dataset: the rest appends
                k = "earray_z"
                n = len(expect[k])
                data = bytes(range(5)) + bytes((i * 7) % 256 for i in range(16))
                fd = os.open(os.path.join(mnt, k), os.O_WRONLY)
                try:
                    if os.pwrite(fd, data, n - 5) != len(data):
                        T.fail("write crossing the end of %s was short" % k)
                finally:
                    os.close(fd)
                expect[k][n - 5:] = data
                if os.stat(os.path.join(mnt, k)).st_size != n + 16:
                    T.fail("%s did not grow by two rows" % k)
    finally:
        m.stop()
    out = m.output()
    if not latest:
        for k in REFUSED:
            if not any(("EOPNOTSUPP" in line and "/" + k in line) for line in out.splitlines()):
                T.fail("no log line for the refused %s" % k)
    # the same changes with h5py
    with h5py.File(ref, "r+") as f:
        for k in names:
            ds = f[k]
            if len(expect[k]) > ds.id.get_storage_size() and False:
                pass
            if len(expect[k]) != len(T.dataset_raw(ds)):
                ds.resize(ds.shape[0] + (len(expect[k]) - len(T.dataset_raw(ds))) // (ds.dtype.itemsize * int(
                    np.prod(ds.shape[1:]))), axis=0)
            T.write_raw(ds, expect[k])
    with h5py.File(src, "r") as f, h5py.File(ref, "r") as g:
        for k in names:
            a, b = bytes(T.dataset_raw(f[k])), bytes(T.dataset_raw(g[k]))
            if a != b:
                T.fail("%s %s: h5py reads the mounted result differently from h5py's own writes (%s)" % (
                    tag, k, T.first_diff(a, b)))
            if a != bytes(expect[k]):
                T.fail("%s %s: h5py reads %s" % (tag, k, T.first_diff(a, bytes(expect[k]))))
    # the v1 B-trees h5fs rewrote: keys in order, siblings, levels (bt1_dump's own parser)
    with h5py.File(src, "r") as f:
        for k in names:
            addr = h5py.h5o.get_info(f[k].id).addr
            if f[k].chunks and bt1_dump.index_type(src, addr) == "btree1":
                try:
                    bt1_dump.check(src, addr)
                except bt1_dump.BtError as e:
                    T.fail("%s %s: v1 B-tree: %s" % (tag, k, e))
    if shutil.which("h5dump"):
        r = subprocess.run(["h5dump", "-H", src], capture_output=True, timeout=60)
        if r.returncode:
            T.fail("%s: h5dump exits %d" % (tag, r.returncode))
    with T.Mount(src, mnt, ["-o", "ro"]):
        for k in names:
            with open(os.path.join(mnt, k), "rb") as fh:
                got = fh.read()
            if got != bytes(expect[k]):
                T.fail("%s %s: the remount reads %s" % (tag, k, T.first_diff(got, bytes(expect[k]))))


def whole_chunks(work, commit_bytes=None):
    src = os.path.join(work, "whole.h5")
    rng = np.random.default_rng(55)
    kinds = {"w_gz": ((20000,), (1000,), dict(compression="gzip", shuffle=True)),
             "w_lzf": ((20000,), (1000,), dict(compression="lzf")),
             "w_plain": ((20000,), (1000,), {}),
             "w_rows": ((800, 25), (40, 25), dict(compression="gzip"))}
    with h5py.File(src, "w") as f:
        for k, (shape, chunks, kw) in kinds.items():
            f.create_dataset(k, data=rng.integers(0, 1 << 20, shape).astype("<i4"), chunks=chunks,
                             maxshape=(None,) + shape[1:], **kw)
    expect = {}
    with h5py.File(src, "r") as f:
        for k in kinds:
            expect[k] = T.dataset_raw(f[k])
    cb = 4000       # every kind's chunk: 1000 int32 (40 rows of 25)
    ops = [(0, 3 * cb), (cb, cb), (cb + 10, 30), (5 * cb + 100, 50), (5 * cb, cb),
           (7 * cb, 1000), (8 * cb - 3000 + 1000, 1500), (8 * cb - 500, 700), (8 * cb + 200, cb),
           (10 * cb + 8, 24), (11 * cb - 100, 100), (11 * cb, cb), (13 * cb + 1, 2 * cb - 1),
           (18 * cb, 2 * cb)]
    mnt = os.path.join(work, "mnt-whole")
    env = {"H5FS_COMMIT_WRITES_BYTES": str(commit_bytes)} if commit_bytes else {}
    m = T.Mount(src, mnt, env=env)
    m.start()
    try:
        with m.watchdog(60):
            for k in kinds:
                p = os.path.join(mnt, k)
                fd = os.open(p, os.O_WRONLY)
                try:
                    for i, (off, n) in enumerate(ops):
                        data = bytes(rng.integers(0, 256, n, dtype=np.uint8))
                        try:
                            w = os.pwrite(fd, data, off)
                        except OSError as e:
                            T.fail("whole %s: pwrite %d (%d, %d): %s" % (k, i, off, n, e))
                            break
                        if w != n:
                            T.fail("whole %s: pwrite %d short" % (k, i))
                        expect[k][off:off + n] = data
                finally:
                    os.close(fd)
                with open(p, "rb") as fh:
                    got = fh.read()
                if got != bytes(expect[k]):
                    T.fail("whole %s (commit %s): read back %s" % (k, commit_bytes,
                                                                   T.first_diff(got, bytes(expect[k]))))
    finally:
        m.stop()
    with h5py.File(src, "r") as f:
        for k in kinds:
            a = bytes(T.dataset_raw(f[k]))
            if a != bytes(expect[k]):
                T.fail("whole %s (commit %s): h5py reads %s" % (k, commit_bytes, T.first_diff(a, bytes(expect[k]))))


def main():
    work = T.workdir("overwrite")
    run(work, False)
    run(work, True)
    whole_chunks(work)
    whole_chunks(work, 5000)
    rc = T.finish()
    if rc == 0:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
