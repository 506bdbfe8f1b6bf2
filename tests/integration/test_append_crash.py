#!/usr/bin/python3
"""Crash-state enumeration of appends (issue 13; in the spirit of SQLite's
crash tests and CrashMonkey), per chunk index the engine can append to (v1 B-tree, v2 B-tree,
fixed array, implicit, single chunk unfiltered and filtered, extensible
array).

append_trace (a helper built by make check) appends rows through the
engine with its byte source wrapped by the trace source (source_trace.c),
which records every write, size change and sync in order, with small
commit thresholds so that periodic commits, durable flushes and partial
chunk rewrites all happen.  The trace is then replayed onto the original
file in part, to build the files a crash could leave:

- every sync interval: everything before the interval's sync point, plus
  every prefix of the writes issued since (kill -9: the kernel keeps
  completed writes, in order);
- for every interval, random subsets of the writes since the last sync,
  each write torn into 512-byte sectors that land or not independently
  (a power cut: the disk may store unsynced sectors in any order) - except
  the in-place rewrites of the dataset's object header (dims[0]; the
  layout message's switch), which land whole or not at all: each is one
  write ending in the chunk's checksum, so a torn one that straddles a
  sector boundary is the residual risk doc/APPEND.md names ("Atomicity of
  the in-place writes"), not something the write order can prevent.  They
  are counted.

Each image must open in h5py with a row count between the old one and the
final one, and every row it reports must hold exactly the bytes appended.
The count of states checked is printed.  Bounded: a few thousand images
per run, no timing.  make check runs the cases in three parts (PARTS
below, test_append_crash_PART.py).
"""
import os
import random
import shutil
import sys
import time
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import bt1_dump  # noqa: E402
from crash_replay import crash_images, straddling, traced  # noqa: E402

HELPER = os.path.join(T.BUILDDIR, "tests", "integration", "append_trace")
SUBSETS = 40            # random torn subsets per sync interval
FILT = dict(compression="gzip", shuffle=True, fletcher32=True)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


CASES = [
    # name, libver, shape, maxshape, chunks, dtype, filters, rows appended, piece bytes, flush every
    ("btree1-1d", "earliest", (5,), (None,), (2,), "<i4", {}, 3000, 1000, 3),
    ("btree1-3d-filt", "earliest", (3, 2, 3), (None, 2, 3), (2, 2, 2), "<i2", FILT, 700, 777, 2),
    ("btree2-2d", "latest", (5, 3), (None, None), (2, 2), "<i4", {}, 3000, 1000, 3),
    ("btree2-3d-filt", "latest", (3, 2, 3), (None, 2, None), (2, 2, 2), "<i2", FILT, 700, 777, 2),
    ("farray-paged-filt", "latest", (3, 4), (4000, 4), (1, 3), "<i4", FILT, 2500, 999, 2),
    ("implicit-2d", "latest", (4, 4), (2000, 4), (3, 2), "<i4", "early", 1500, 1000, 3),
    # one chunk the size of the maximum, shrunk by libhdf5 (it makes a single-chunk
    # index only when dims == maxdims): unfiltered it is rewritten in place, filtered
    # it moves and the layout message switches to it
    ("single-2d", "latest", (2, 3), (600, 3), (600, 3), "<i4", "single", 500, 240, 4),
    ("single-2d-filt", "latest", (2, 3), (600, 3), (600, 3), "<i4", "single-filt", 500, 240, 4),
    ("earray-1d", "latest", (5,), (None,), (2,), "<i4", {}, 3000, 1000, 3),
    ("earray-3d-filt", "latest", (3, 2, 3), (None, 2, 3), (2, 2, 2), "<i2", FILT, 700, 777, 2),
]


def check_image(img, tmp, ds_name, old_n, expect):
    with open(tmp, "wb") as fh:
        fh.write(img)
    try:
        with h5py.File(tmp, "r") as f:
            d = f[ds_name]
            n = d.shape[0]
            if n < old_n or n > len(expect):
                return "row count %d outside [%d, %d]" % (n, old_n, len(expect))
            got = d[()]
            if not np.array_equal(got, expect[:n]):
                bad = np.nonzero((got != expect[:n]).reshape(n, -1).any(axis=1))[0]
                return "%d rows, row %d differs" % (n, bad[0])
    except Exception as e:  # noqa: BLE001 - any failure to open or read is a crash-safety bug
        return "h5py: %s" % e
    return None


def run_case(work, case, rng):
    name, libver, shape, maxshape, chunks, dt, filt, nrows, piece, every = case
    path = os.path.join(work, name + ".h5")
    with h5py.File(path, "w", libver=libver) as f:
        if filt == "early":     # implicit index: every chunk allocated at creation
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(chunks)
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            g = f.create_group("g")
            h5py.h5d.create(g.id, b"x", h5py.h5t.py_create(np.dtype(dt)), h5py.h5s.create_simple(shape, maxshape),
                            dcpl=dcpl)
            d = f["g/x"]
        elif filt in ("single", "single-filt"):
            d = f.create_dataset("g/x", shape=maxshape, maxshape=maxshape, chunks=chunks, dtype=dt,
                                 **(FILT if filt == "single-filt" else {}))
            d[:shape[0]] = (np.arange(int(np.prod(shape))) % 1000).reshape(shape)
            d.resize(shape)
        else:
            d = f.create_dataset("g/x", shape=shape, maxshape=maxshape, chunks=chunks, dtype=dt, **filt)
        if not isinstance(filt, str) or filt == "early":
            d[...] = (np.arange(int(np.prod(shape))) % 1000).reshape(shape)
    with h5py.File(path, "r") as f:
        old = f["g/x"][()]
        info = h5py.h5o.get_info(f["g/x"].id)
        index = bt1_dump.index_type(path, info.addr)
        # the object header's first chunk (superblock at 0: addresses are offsets)
        ohdr = (info.addr, info.addr + info.hdr.space.total)
    if index != name.split("-")[0]:
        fail("%s: fixture has a %s index" % (name, index))
        return 0
    tail = shape[1:]
    more = ((np.arange(nrows * int(np.prod(tail))) * 7 + 3) % 30000).astype(dt).reshape((nrows,) + tail)
    expect = np.concatenate([old, more])
    rows_path = os.path.join(work, name + ".rows")
    more.tofile(rows_path)
    trace = os.path.join(work, name + ".trace")
    env = dict(os.environ, H5FS_APPEND_COMMIT_BYTES=str(4 * piece), H5FS_APPEND_COMMIT_MS="100000")
    base, ops, final, why = traced([HELPER, path, "/g/x", rows_path, trace, str(piece), str(every)], path, trace,
                                   env)
    if why:
        fail("%s: %s" % (name, why))
        return 0
    err = check_image(final, os.path.join(work, "img.h5"), "g/x", len(expect), expect)
    if err:
        fail("%s: final file: %s" % (name, err))
        return 0
    states = 0
    tmp = os.path.join(work, "img.h5")
    for where, img in crash_images(base, ops, rng, SUBSETS, ohdr):
        err = check_image(img, tmp, "g/x", len(old), expect)
        states += 1
        if err:
            fail("%s: %s: %s" % (name, where, err))
            return states
    print("%s: %d writes/syncs traced, %d syncs, %d crash states checked; %d object header writes"
          " straddle a sector boundary (kept whole)" % (name, len(ops), sum(op[0] == "S" for op in ops), states,
                                                         straddling(ops, ohdr)), flush=True)
    return states


# make check runs each part as a program of its own
# (test_append_crash_PART.py), so that make -j2 runs them side by side
# (the paged fixed array, thousands of filtered chunks per image, takes
# as long as the rest); by hand, `test_append_crash.py` runs every case,
# `test_append_crash.py btree earray-1d` a part and a case.
PARTS = {
    "farray": ["farray-paged-filt"],
    "btree": ["btree1-1d", "btree1-3d-filt", "btree2-2d", "btree2-3d-filt"],
    "other": ["implicit-2d", "single-2d", "single-2d-filt", "earray-1d", "earray-3d-filt"],
}


def main(names=None):
    names = names or sys.argv[1:]
    want = set()
    for n in names:
        want.update(PARTS.get(n, [n]))
    unknown = want - {c[0] for c in CASES}
    if unknown:
        print("no case or part %s" % ", ".join(sorted(unknown)))
        sys.exit(1)
    if not os.path.exists(HELPER):
        T.skip("append_trace not built")
    work = tempfile.mkdtemp(prefix="append-crash-", dir=os.path.dirname(T.workdir("append-crash")))
    seed = "13"
    total = 0
    try:
        for case in CASES:
            if not want or case[0] in want:
                t0 = time.monotonic()
                total += run_case(work, case, random.Random("%s %s" % (seed, case[0])))
                print("%s: %.1f s" % (case[0], time.monotonic() - t0), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d crash states checked in all" % total)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
