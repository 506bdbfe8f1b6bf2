#!/usr/bin/python3
"""Crash states of a dataset emptied and written anew (`cat x > d`, `cp x
d`: open with O_TRUNC through the mount; engine write/dset_empty.c, then
the append path), per chunk index that grows: v1 B-tree, v2 B-tree and
extensible array, filtered and not.

append_trace (H5FS_TRACE_EMPTY set) empties the dataset and appends the
new rows with every write and sync recorded; the trace is replayed in part
as test_append_crash.py does (every prefix of every sync interval: kill
-9; random torn subsets: a power cut, the in-place rewrites of small
metadata - superblock, object header, array header - whole, as
doc/APPEND.md "Atomicity of the in-place writes" takes them). Every image must open in h5py and show one of:
  - the old rows (nothing done yet);
  - the old number of rows, each the fill value (the index gone, dims[0]
    not yet: the truncation done, its size not yet);
  - the first n of the new rows, 0 <= n <= all of them;
and the attribute set before must still be there. The count of states
checked is printed.
"""
import os
import random
import sys
import time
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

from crash_replay import crash_images, rewrites_in_place, traced  # noqa: E402

HELPER = os.path.join(T.BUILDDIR, "tests", "integration", "append_trace")

SUBSETS = 30
FILT = dict(compression="gzip", shuffle=True, fletcher32=True)
CASES = [
    # name, libver, shape, maxshape, chunks, dtype, filters, fill, new rows, piece, flush every
    ("btree1-1d", "earliest", (9,), (None,), (2,), "<i4", {}, 5, 1500, 1000, 3),
    ("btree1-3d-filt", "earliest", (3, 2, 3), (None, 2, 3), (2, 2, 2), "<i2", FILT, 0, 300, 777, 2),
    ("btree2-2d", "latest", (5, 3), (None, None), (2, 2), "<i4", {}, -1, 1500, 1000, 3),
    ("earray-1d", "latest", (7,), (None,), (2,), "<i4", {}, 3, 1500, 1000, 3),
    ("earray-3d-filt", "latest", (3, 2, 3), (None, 2, 3), (2, 2, 2), "<i2", FILT, 0, 300, 777, 2),
]
# Sparse growth (truncate(2) up: h5_overwrite_resize), then appended rows,
# not emptied: grown by GROW rows - dims[0] raised, no chunk written: the
# old edge chunk's part past the old end holds the fill value already -
# each image holds the old rows, then 0 or GROW rows of the fill value
# (one commit), then new rows.
GROW = 11
GROW_CASES = [
    ("grow-btree1-1d", "earliest", (9,), (None,), (4,), "<i4", {}, 5, 300, 400, 2),
    ("grow-earray-2d-filt", "latest", (3, 2), (None, 2), (2, 2), "<i2", FILT, 0, 100, 200, 2),
]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def check_image(img, tmp, old, fill, new, grow=0):
    with open(tmp, "wb") as fh:
        fh.write(img)
    try:
        with h5py.File(tmp, "r") as f:
            d = f["g/x"]
            if d.attrs.get("units") != "m":
                return "the attribute is gone"
            got = d[()]
            n = got.shape[0]
            if grow:
                o = old.shape[0]
                if n >= o and np.array_equal(got[:o], old) and n in (o, o + grow) and np.all(got[o:] == fill):
                    return None
                if n > o + grow and np.array_equal(got[:o], old) and np.all(got[o:o + grow] == fill) and \
                        np.array_equal(got[o + grow:], new[:n - o - grow]):
                    return None
                return "%d rows: not the old rows, the fill rows grown and new rows after" % n
            if n == old.shape[0] and np.array_equal(got, old):
                return None
            if n == old.shape[0] and np.all(got == fill):
                return None
            if n <= new.shape[0] and np.array_equal(got, new[:n]):
                return None
            return "%d rows: neither the old rows, the old count of fill values, nor new rows" % n
    except Exception as e:  # noqa: BLE001 - any failure to open or read is a crash-safety bug
        return "h5py: %s" % e


def run_case(work, case, rng, grow=0):
    name, libver, shape, maxshape, chunks, dt, filt, fill, nrows, piece, every = case
    path = os.path.join(work, name + ".h5")
    with h5py.File(path, "w", libver=libver) as f:
        d = f.create_dataset("g/x", shape=shape, maxshape=maxshape, chunks=chunks, dtype=dt, fillvalue=fill,
                             **filt)
        d[...] = (np.arange(int(np.prod(shape))) % 1000 + 100).reshape(shape)
        d.attrs["units"] = "m"
    with h5py.File(path, "r") as f:
        old = f["g/x"][()]
    tail = shape[1:]
    new = ((np.arange(nrows * int(np.prod(tail))) * 7 + 3) % 30000).astype(dt).reshape((nrows,) + tail)
    rows_path = os.path.join(work, name + ".rows")
    new.tofile(rows_path)
    trace = os.path.join(work, name + ".trace")
    env = dict(os.environ, H5FS_APPEND_COMMIT_BYTES=str(4 * piece), H5FS_APPEND_COMMIT_MS="100000")
    if grow:
        env["H5FS_TRACE_GROW"] = str(grow * new[:1].nbytes)
    else:
        env["H5FS_TRACE_EMPTY"] = "1"
    base, ops, final, why = traced([HELPER, path, "/g/x", rows_path, trace, str(piece), str(every)], path, trace,
                                   env)
    if why:
        fail("%s: %s" % (name, why))
        return 0
    tmp = os.path.join(work, "img.h5")
    want = np.concatenate([old, np.full((grow,) + tail, fill, dtype=dt), new]) if grow else new
    with h5py.File(path, "r") as f:
        if not np.array_equal(f["g/x"][()], want) or f["g/x"].attrs.get("units") != "m":
            fail("%s: the final file does not hold exactly the new rows and the attribute" % name)
            return 0
    states = 0
    for where, img in crash_images(base, ops, rng, SUBSETS, rewrites_in_place(base, ops)):
        err = check_image(img, tmp, old, fill, new, grow)
        states += 1
        if err:
            fail("%s: %s: %s" % (name, where, err))
            return states
    print("%s: %d writes/syncs traced, %d syncs, %d crash states checked"
          % (name, len(ops), sum(op[0] == "S" for op in ops), states), flush=True)
    return states


def main():
    if not os.access(HELPER, os.X_OK):
        print("SKIP: %s not built" % HELPER)
        sys.exit(77)
    seed = "47"
    total = 0
    with tempfile.TemporaryDirectory(prefix="h5fs-trunc-crash-") as work:
        for case, grow in [(c, 0) for c in CASES] + [(c, GROW) for c in GROW_CASES]:
            if len(sys.argv) < 2 or case[0] in sys.argv[1:]:
                t0 = time.monotonic()
                total += run_case(work, case, random.Random("%s %s" % (seed, case[0])), grow)
                print("%s: %.1f s" % (case[0], time.monotonic() - t0), flush=True)
    print("%d crash states of emptying and rewriting checked" % total)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
