#!/usr/bin/python3
"""Power-cut states with torn 4 KiB pages (issue 71 item 5), both formats.

A power cut leaves each page of FILE as of its last writeback: every
write since the last fsync may land page by page, some pages new and
some old (crash_replay.py page_images). Metadata crossing a page
boundary must therefore never be rewritten in place without an ordered
copy (doc/DESIGN.md "Torn pages"). The fixtures put object headers
across a page boundary on purpose (a root attribute of a chosen size
moves /g and /d): the header of /d (a chunked growable dataset) and of
/g, in default.h5 (v1 headers, symbol-table groups) and latest.h5 (v2
headers with checksums, compact links, extensible arrays). Then, traced
through the engine (attr_trace, append_trace):

- attribute changes of /d and /g (in place, new, removed, grown), new
  datasets and groups, modification times (attr_trace);
- appends to /d (its dataspace's dims rewritten at each commit;
  append_trace).

Every torn-page image must open in h5py: attributes each holding a value
some state had (test_attr_crash.py's history), links some state has, /d
with a row count between the old and the new and exactly the rows
appended. An image that ends in an ordered copy's record (a power cut
between the copy and its write in place) is first opened writable by the
engine, as the next read-write mount opens it, which writes the copy in
place again; the count of those h5py could not read before is printed
(the torn header of a libhdf5-placed chunk: nothing else can mend it,
doc/DESIGN.md). Without the ordered copy every case fails, in both
formats ("incorrect metadata checksum", "wrong version number in
dataspace message"). The count of states is printed.

The budget: make check checks a deterministic sample (the default):
every page of every write that spans a page alone after the writes
before it (the object-header crossings, which fail without the ordered
copy), SAMPLE_SUBSETS seeded random per-page prefixes of each sync
interval instead of PAGE_SUBSETS, and /g's attribute changes left out
(/g's header, crossing a page, is still rewritten by the groups-and-
datasets case, and /d's attribute changes run in both formats).
H5FS_TORN_ALL=1 checks every case with PAGE_SUBSETS (by hand, and when
this code changes). H5FS_CRASH_STATES=small (the sanitizer stage) is
the sample too (crash_replay.py).
"""
import os
import random
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import test_attr_crash as AC  # noqa: E402
from crash_replay import PAGE, PAGE_SUBSETS, apply, page_images, parse_trace, spans_page, traced  # noqa: E402

ALL = os.environ.get("H5FS_TORN_ALL", "") == "1"
SAMPLE_SUBSETS = 2
SUBSETS = PAGE_SUBSETS if ALL else SAMPLE_SUBSETS

APPEND = os.path.join(T.BUILDDIR, "tests", "integration", "append_trace")
OBJS = ("/", "/g", "/d")

ATTR_OPS = [
    "set\t/d\ti\t42",                        # in place (same size)
    "set\t/g\ti\t43",
    "set\t/d\tnote\thello",                  # new: NIL space or a new chunk
    "del\t/d\trm",
    "set\t/d\tfs\ta longer fixed string",    # grows: moves
    "sync",
    "set\t/g\tnote\t" + "y" * 40,
    "set\t/d\tnote\tworld",
    "del\t/g\trm",
    "set\t/d\ti\t44",
]
TREE_OPS = [
    "dset\t/g\tsaved\t3000",                 # new headers h5fs writes
    "mkdir\t/g\tn",
    "set\t/g\tnote\tz",
    "mkdir\t/g/n\tm",
    "dset\t/g/n\tsmall\t5",
    "sync",
    "unlink\t/g\tsaved",
    "mkdir\t/g\tk",
]
TIME_OPS = ["mtime\t/g\t1500000001", "mtime\t/d\t1500000002", "sync", "mtime\t/d\t1600000000"]


def make(path, libver, pad):
    with h5py.File(path, "w", libver=libver) as f:
        if pad:
            f.attrs["pad"] = np.zeros(pad, "u1")
        g = f.create_group("g")
        d = f.create_dataset("d", data=np.arange(12, dtype=np.int32), maxshape=(None,), chunks=(4,))
        for o in (f, g, d):
            o.attrs["i"] = np.int32(7)
            o.attrs["fa"] = np.array([0.5, 1.5, 2.5])
            o.attrs["fs"] = np.bytes_("fixed")
            o.attrs["vs"] = "variable"
            o.attrs["rm"] = np.int64(3)


def chunk0(path, name):
    """(address, length) of an object's first header chunk."""
    b = open(path, "rb").read()
    with h5py.File(path, "r") as f:
        a = h5py.h5o.get_info(f[name].id).addr
    if b[a:a + 4] == b"OHDR":
        flags = b[a + 5]
        p = a + 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
        w = 1 << (flags & 3)
        n = int.from_bytes(b[p:p + w], "little")
        return a, (p + w - a) + n + 4
    return a, 16 + int.from_bytes(b[a + 8:a + 12], "little")


def crossing(path, name):
    """Where a page boundary cuts the object's first chunk (None: it does
    not cross one)."""
    a, n = chunk0(path, name)
    cut = (a // PAGE + 1) * PAGE
    return cut - a if cut < a + n else None


def fixture(work, libver, name):
    """A file whose object `name` has its first header chunk cut by a
    page boundary late in it (the pad searched for)."""
    path = os.path.join(work, "%s-%s.h5" % (libver, name.strip("/")))
    pad = 0
    for _ in range(12):
        make(path, libver, pad)
        a, n = chunk0(path, name)
        at = crossing(path, name)
        if at is not None and 3 * n // 5 <= at <= n - 16:
            return path, a, n, at
        # move the header so that the boundary falls late in it: most
        # messages before it (changed there, with the checksum after it)
        pad = max(8, pad + ((PAGE - 4 * n // 5 - a % PAGE) % PAGE or 8))
    T.fail("%s %s: no pad puts its header across a page (last at 0x%x, %d bytes)" % (libver, name, a, n))
    return None, 0, 0, 0


RECOVERED = [0]


def recover(path, check):
    """An image ending in an ordered copy's record (io/ordered.h: a power
    cut between the copy and its write in place) is opened writable by the
    engine first (attr_trace, no changes), as h5fs's next mount opens it:
    the record is written in place again. Counts the images h5py could
    not read before that and could after (check: path -> error or None).
    Every other image h5py must read as it is."""
    with open(path, "rb") as fh:
        fh.seek(-8, 2)
        if fh.read(8) != b"H5FSOCP2":
            return
    before = check(path)
    AC.run_helper(path, "-", 0, [])
    if before and not check(path):
        RECOVERED[0] += 1


def attr_case(work, path, ops, objs, rng, label):
    """attr_trace's ops on a copy of path; every torn-page image checked
    against the states of the ops' prefixes."""
    states = []
    for k in range(len(ops) + 1):
        p = os.path.join(work, "state.h5")
        shutil.copy(path, p)
        AC.run_helper(p, "-", 0, ops[:k])
        states.append(AC.state_of(p, objs))
    if any(isinstance(s, str) for s in states):
        T.fail("%s: a state does not open: %s" % (label, [s for s in states if isinstance(s, str)][:1]))
        return 0
    h = AC.history(states) if objs else None
    traced_path = os.path.join(work, "traced.h5")
    shutil.copy(path, traced_path)
    trace = os.path.join(work, "trace")
    AC.run_helper(traced_path, trace, 0, ops)
    ops_t = parse_trace(trace)
    base = open(path, "rb").read()
    img = bytearray(base)
    for op in ops_t:
        apply(img, op)
    if bytes(img) != open(traced_path, "rb").read():
        T.fail("%s: the replayed trace does not rebuild the final file" % label)
        return 0
    tmp = os.path.join(work, "img.h5")
    checked = 0
    for where, im in page_images(base, ops_t, rng, SUBSETS):
        with open(tmp, "wb") as fh:
            fh.write(im)

        def check(p):
            st = AC.state_of(p, objs)
            return AC.fits_history(st, h) if objs else AC.tree_fits(st, states)
        recover(tmp, check)
        err = check(tmp)
        checked += 1
        if err:
            T.fail("%s: %s: %s" % (label, where, err))
            return checked
    print("%s: %d writes/syncs, %d span a page, %d torn-page states checked" % (
        label, len(ops_t), sum(spans_page(op) for op in ops_t), checked), flush=True)
    return checked


def append_case(work, path, rng, label):
    """Appends to /d in pieces, periodic and durable commits: /d's dims
    rewritten at each; every torn-page image holds a row count between the
    old and the new and exactly the rows appended."""
    with h5py.File(path, "r") as f:
        old = f["d"][()]
    more = ((np.arange(1500) * 7 + 3) % 30000).astype("<i4")
    expect = np.concatenate([old, more])
    rows = os.path.join(work, "rows")
    more.tofile(rows)
    p = os.path.join(work, "append.h5")
    shutil.copy(path, p)
    trace = os.path.join(work, "atrace")
    env = dict(os.environ, H5FS_APPEND_COMMIT_BYTES="1600", H5FS_APPEND_COMMIT_MS="100000")
    base, ops, final, why = traced([APPEND, p, "/d", rows, trace, "400", "3"], p, trace, env)
    if why:
        T.fail("%s: %s" % (label, why))
        return 0
    tmp = os.path.join(work, "img.h5")
    checked = 0
    for where, im in page_images(base, ops, rng, SUBSETS):
        with open(tmp, "wb") as fh:
            fh.write(im)
        recover(tmp, lambda p: rows_error(p, len(old), expect))
        err = rows_error(tmp, len(old), expect)
        checked += 1
        if err:
            T.fail("%s: %s: %s" % (label, where, err))
            return checked
    print("%s: %d writes/syncs, %d span a page, %d torn-page states checked" % (
        label, len(ops), sum(spans_page(op) for op in ops), checked), flush=True)
    return checked


def rows_error(path, old_n, expect):
    try:
        with h5py.File(path, "r") as f:
            d = f["d"]
            n = d.shape[0]
            if n < old_n or n > len(expect):
                return "row count %d outside [%d, %d]" % (n, old_n, len(expect))
            if not np.array_equal(d[()], expect[:n]):
                return "%d rows, not the rows appended" % n
    except Exception as e:  # noqa: BLE001 - any failure to open or read is a crash-safety bug
        return "h5py: %s" % e
    return None


def main():
    for helper in (AC.HELPER, APPEND):
        if not os.path.exists(helper):
            T.skip("%s not built" % os.path.basename(helper))
    work = T.workdir("torn-pages")
    rng = random.Random("71 torn pages")
    total = 0
    t0 = time.monotonic()
    for libver in ("earliest", "latest"):
        for name in ("/d", "/g"):
            path, a, n, at = fixture(work, libver, name)
            if not path:
                continue
            label = "%s, %s's header at 0x%x (%d bytes, a page boundary at +%d)" % (libver, name, a, n, at)
            print(label, flush=True)
            if name == "/d":
                total += attr_case(work, path, ATTR_OPS, OBJS, rng, libver + " attributes")
                total += append_case(work, path, rng, libver + " appends")
                if libver == "earliest":
                    total += attr_case(work, path, TIME_OPS, OBJS, rng, libver + " times")
            else:
                if ALL:
                    total += attr_case(work, path, ATTR_OPS, OBJS, rng, libver + " attributes")
                total += attr_case(work, path, TREE_OPS, None, rng, libver + " groups and datasets")
    shutil.rmtree(work, ignore_errors=True)
    print("%d torn-page states checked in all (%s), %d of them read by h5py only after the engine's open wrote"
          " an ordered copy in place again (%.1f s)" % (
              total, "every case, H5FS_TORN_ALL=1" if ALL else "the sample; H5FS_TORN_ALL=1 for all",
              RECOVERED[0], time.monotonic() - t0))
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
