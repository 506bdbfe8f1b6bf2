#!/usr/bin/python3
"""Crash-state enumeration of overwrites (issue 32; doc/OVERWRITE.md
"Crash safety"), per chunk index and layout: v1 B-tree, v2 B-tree, fixed
array, extensible array, single chunk (filtered: rewritten in new space
and switched; unfiltered: in place), implicit (in place), contiguous (in
place), compact (in the object header).

overwrite_trace (a helper built by make check) overwrites bytes through
the engine with its byte source wrapped by the trace source
(source_trace.c), which records every write, size change and sync; the
writes go in three commits (a periodic one, a durable one, the last at
close), crossing chunk and element edges and touching chunks never
written. The trace is replayed onto the original file in part, as
test_append_crash.py does: for every sync interval every prefix of its
writes (kill -9), and random subsets with each write torn into 512-byte
sectors (a power cut) - the in-place rewrites of the object header land
whole or not (the residual risk doc/APPEND.md names; counted).

Each image must open in h5py, and every element must hold a value it had
after some number of commits (old or new, never a mix of both). Where a
commit switches to new chunks (every index but implicit and an
unfiltered single chunk), the whole dataset must equal the state after
some number of commits: commits are all or nothing. The count of states
checked is printed.

btree2-2d-page, farray-2d-page, earray-2d-page: a v2 B-tree's, fixed
array's or extensible array's header spanning a 4 KiB page (issue 65
item 4) is never written in place - a power cut keeping one page of it
tore its checksum - but copied with the commit's nodes or data block
and switched to; the extensible array's blocks all name their header,
so its first commit copies the whole index (the chunks stay).

A punched hole (fallocate PUNCH_HOLE, issue 65) likewise, on an
extensible and a filtered fixed array with a zero fill (whole chunks
dropped from the index, partial ones zeroed) and a v1 B-tree (zeroed):
every image is the old dataset or the punched one.

A shrink (truncate(2) to fewer rows, issue 65: h5_overwrite_resize) on an
extensible array, a filtered fixed array and v1 B-trees, with a fill
value: the chunks past the new end dropped, the boundary chunk's tail
the fill value, then dims[0]; every image is the old dataset, the old
number of rows with those past the new end reading the fill value (the
index switched, dims[0] not yet), or the shorter one.

Rows an append stream has not committed, met by an overwrite's commit
(issue 81 item 3), on extensible arrays and v1 B-trees, filtered or not:
bytes written over those rows only go with the rows in one ordered commit
(every image the old dataset or the new); bytes over old rows too, and
across the old end, follow the rows' own commit (the old, the rows, or
all).
"""
import os
import random
import shutil
import struct
import sys
import time
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

from crash_replay import crash_images, straddling, traced  # noqa: E402

HELPER = os.path.join(T.BUILDDIR, "tests", "integration", "overwrite_trace")
SUBSETS = 30
FILT = dict(compression="gzip", shuffle=True, fletcher32=True)
DURABLE, PERIODIC, PUNCH, SHRINK, APPEND = (1 << 64) - 1, (1 << 64) - 2, (1 << 64) - 5, (1 << 64) - 6, (1 << 64) - 7

# name (index first), libver, shape, maxshape, chunks (None: contiguous,
# "compact"), dtype, filters, rows written at creation (None: all), in place
CASES = [
    ("btree1-2d-filt", "earliest", (40, 30), (None, 30), (6, 7), "<i4", FILT, 20, False),
    ("btree1-1d", "earliest", (300,), (None,), (16,), "<i4", {}, 200, False),
    ("btree2-2d-filt", "latest", (40, 30), (None, None), (6, 7), "<i4", FILT, 20, False),
    # its header (BTHD) placed across a 4 KiB page (an attribute of the
    # root as padding): never rewritten in place, copied (issue 65 item 4)
    ("btree2-2d-page", "latest", (40, 30), (None, None), (6, 7), "<i4", {}, 20, False),
    ("farray-2d-page", "latest", (40, 30), (40, 30), (6, 7), "<i4", {}, 20, False),
    ("farray-2d", "latest", (40, 30), (40, 30), (6, 7), "<i4", {}, 20, False),
    ("farray-2d-filt", "latest", (40, 30), (40, 30), (6, 7), "<i4", FILT, None, False),
    ("earray-2d-page", "latest", (40, 30), (None, 30), (6, 7), "<i4", {}, 20, False),
    ("earray-2d", "latest", (40, 30), (None, 30), (6, 7), "<i4", {}, 20, False),
    ("earray-1d-filt", "latest", (300,), (None,), (16,), "<i4", FILT, 200, False),
    ("single-filt", "latest", (20, 30), (20, 30), (20, 30), "<i4", FILT, None, False),
    ("single-2d", "latest", (20, 30), (20, 30), (20, 30), "<i4", {}, None, True),
    ("implicit-2d", "latest", (40, 30), (40, 30), (6, 7), "<i4", "early", None, True),
    ("contiguous", "earliest", (40, 30), None, None, "<i4", {}, None, True),
    ("compact", "earliest", (20,), None, "compact", "<i4", {}, None, True),
]


# a "-page" case's index header: signature, bytes (III.A.2, III.J, VII.D)
PAGE_HDR = {"btree2": (b"BTHD", 38), "farray": (b"FAHD", 28), "earray": (b"EAHD", 72)}


def hdr_spanning(path, name):
    """The index header's address when it spans a 4 KiB page, else None."""
    sig, size = PAGE_HDR[name.split("-")[0]]
    a = open(path, "rb").read().find(sig)
    return a if a >= 0 and a // 4096 != (a + size - 1) // 4096 else None


def make(path, case):
    """The dataset's bytes, its object header's range and (a "-page"
    case) the v2 B-tree header's address, which spans a page."""
    page = case[0].endswith("-page")
    for pad in range(3000, 8000, 4) if page else [0]:
        old, ohdr = make_padded(path, case, pad)
        at = hdr_spanning(path, case[0]) if page else None
        if at is not None or not page:
            return old, ohdr, at
    T.fail("%s: no padding places the index header across a page" % case[0])
    return old, ohdr, None


def make_padded(path, case, pad):
    name, libver, shape, maxshape, chunks, dt, filt, rows, _ = case
    v = ((np.arange(int(np.prod(shape))) * 11 + 5) % 30000).astype(dt).reshape(shape)
    with h5py.File(path, "w", libver=libver) as f:
        if pad:
            f.attrs["pad"] = np.zeros(pad, "u1")
        if filt == "early" or chunks == "compact":
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            if filt == "early":
                dcpl.set_chunk(chunks)
                dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            else:
                dcpl.set_layout(h5py.h5d.COMPACT)
            g = f.create_group("g")
            h5py.h5d.create(g.id, b"x", h5py.h5t.py_create(np.dtype(dt)),
                            h5py.h5s.create_simple(shape, maxshape or shape), dcpl=dcpl)
            d = f["g/x"]
        elif chunks is None:
            d = f.create_dataset("g/x", shape=shape, dtype=dt)
        else:
            d = f.create_dataset("g/x", shape=shape, maxshape=maxshape, chunks=chunks, dtype=dt,
                                 fillvalue=-7, **filt)
        if rows is None:
            d[...] = v
        else:
            d[:rows] = v[:rows]
    with h5py.File(path, "r") as f:
        old = f["g/x"][()]
        info = h5py.h5o.get_info(f["g/x"].id)
        return old, (info.addr, info.addr + info.hdr.space.total)


def writes(old, rng):
    """Three commits of byte writes: (list of (off, bytes)) each."""
    n = old.nbytes
    es = old.dtype.itemsize
    out = []
    held = []
    # commit 0's last write, at a place fixed in advance: a run ending
    # inside an element, which the periodic commit keeps back
    run_off, run_len = (n // 2 // es) * es, 3 * es + 2
    for c in range(3):
        ws = []
        for _ in range(3):
            # writes of one commit do not overlap (nor commit 0's the run
            # it ends with, nor commit 1's the element commit 0 held
            # back): an element written twice before the commit would
            # hold the first value in a crash state, which is neither the
            # old nor the committed one
            taken = ws + held + ([(run_off, b"\0" * run_len)] if c == 0 else [])
            while True:
                off = rng.randrange(n)
                ln = rng.randint(1, min(n - off, 700))
                lo, hi = off // es * es, -(-(off + ln) // es) * es
                if all(hi <= o // es * es or lo >= -(-(o + len(b)) // es) * es for o, b in taken):
                    break
            ws.append((off, bytes(rng.randrange(256) for _ in range(ln))))
        if c == 0:
            ws.append((run_off, bytes(rng.randrange(256) for _ in range(run_len))))
            held = ws[-1:]      # (its partial element is written with commit 1)
        else:
            held = []
        out.append(ws)
    return out


def states_of(old, commits):
    """Bytes of the dataset after 0, 1, 2, 3 commits (the periodic first
    commit holds back the last write's trailing partial element)."""
    es = old.dtype.itemsize
    cur = bytearray(old.tobytes())
    st = [bytes(cur)]
    held = None
    for c, ws in enumerate(commits):
        if held:
            ws = [held] + ws
            held = None
        for i, (off, b) in enumerate(ws):
            if c == 0 and i == len(ws) - 1:
                end = off + len(b)
                cut = max(off, end - end % es)
                if cut < end:
                    held = (cut, b[cut - off:])
                    b = b[:cut - off]
            cur[off:off + len(b)] = b
        st.append(bytes(cur))
    if held:
        cur[held[0]:held[0] + len(held[1])] = held[1]
        st[-1] = bytes(cur)
    return st


def check_image(img, tmp, states, es, whole):
    with open(tmp, "wb") as fh:
        fh.write(img)
    try:
        with h5py.File(tmp, "r") as f:
            d = f["g/x"]
            got = np.empty(d.shape, dtype="V%d" % es)
            tid = d.id.get_type()
            d.id.read(h5py.h5s.ALL, h5py.h5s.ALL, got, mtype=tid)
    except Exception as e:  # noqa: BLE001 - any failure to open or read is a crash-safety bug
        return "h5py: %s" % e
    g = got.tobytes()
    if whole:
        return None if g in states else "not the state after any number of commits"
    a = np.frombuffer(g, np.uint8).reshape(-1, es)
    ok = np.zeros(a.shape[0], bool)
    for s in states:
        ok |= (a == np.frombuffer(s, np.uint8).reshape(-1, es)).all(axis=1)
    if not ok.all():
        i = int(np.nonzero(~ok)[0][0])
        return "element %d is neither old nor new (%s; states %s)" % (
            i, a[i].tobytes().hex(), [s[i * es:(i + 1) * es].hex() for s in states])
    return None


def run_case(work, case, rng):
    name, in_place = case[0], case[-1]
    path = os.path.join(work, name + ".h5")
    old, ohdr, page_hdr = make(path, case)
    commits = writes(old, rng)
    states = states_of(old, commits)
    wpath = os.path.join(work, name + ".writes")
    with open(wpath, "wb") as fh:
        for c, ws in enumerate(commits):
            for off, b in ws:
                fh.write(struct.pack("<QQ", off, len(b)) + b)
            if c < 2:
                fh.write(struct.pack("<QQ", 0, PERIODIC if c == 0 else DURABLE))
    trace = os.path.join(work, name + ".trace")
    base, ops, final, why = traced([HELPER, path, "/g/x", wpath, trace], path, trace)
    if why:
        T.fail("%s: %s" % (name, why))
        return 0
    if page_hdr is not None:
        # (its space, freed after the switch, may hold a later chunk)
        sig = PAGE_HDR[name.split("-")[0]][0]
        if any(op[0] == "W" and op[1] == page_hdr and op[2][:4] == sig for op in ops):
            T.fail("%s: the index header across a page (at %d) was written in place" % (name, page_hdr))
        size = PAGE_HDR[name.split("-")[0]][1]
        last = [op[1] + op[2].find(sig) for op in ops if op[0] == "W" and sig in op[2]]
        if not last or last[-1] // 4096 != (last[-1] + size - 1) // 4096:
            T.fail("%s: the index header was not copied within a page (%s)" % (name, last[-1:]))
    tmp = os.path.join(work, "img.h5")
    es = old.dtype.itemsize
    with h5py.File(path, "r") as f:
        got = np.empty(f["g/x"].shape, dtype="V%d" % es)
        f["g/x"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, got, mtype=f["g/x"].id.get_type())
    if got.tobytes() != states[-1]:
        T.fail("%s: the final file does not hold every write (byte %d)" % (name, T.first_diff(got.tobytes(),
                                                                                              states[-1])))
        return 0
    whole = not in_place
    count = 0
    for where, img in crash_images(base, ops, rng, SUBSETS, ohdr):
        err = check_image(img, tmp, states, es, whole)
        count += 1
        if err:
            T.fail("%s: %s: %s" % (name, where, err))
            return count
    print("%s: %d writes/syncs traced, %d syncs, %d crash states checked; %d object header writes"
          " straddle a sector boundary (kept whole)" % (name, len(ops), sum(op[0] == "S" for op in ops), count,
                                                         straddling(ops, ohdr)), flush=True)
    return count


# name, libver, maxshape, filters, elements a chunk, whole chunks punched
PUNCH_CASES = [
    ("punch-earray", "latest", (None,), {}, 16, 5),
    ("punch-farray-filt", "latest", (300,), FILT, 16, 5),
    ("punch-btree1", "earliest", (None,), {}, 16, 5),
    # 150 chunks, leaves of 64: one leaf wholly punched leaves the tree
    # (h5_bt1w_remove, issue 81: its neighbours rewritten)
    ("punch-btree1-leaves", "earliest", (None,), {}, 2, 70),
]


def one_dataset(work, name, libver, maxshape, filt, ce, **kw):
    """A 300-row int32 dataset /g/x: (path, its values, its object
    header's range, its chunks)."""
    path = os.path.join(work, name + ".h5")
    v = ((np.arange(300) * 11 + 5) % 30000).astype("<i4")
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("g/x", data=v, maxshape=maxshape, chunks=(ce,), **filt, **kw)
    with h5py.File(path, "r") as f:
        info = h5py.h5o.get_info(f["g/x"].id)
        ohdr = (info.addr, info.addr + info.hdr.space.total)
        chunks0 = f["g/x"].id.get_num_chunks()
    return path, v, ohdr, chunks0


def trace_op(work, name, path, record):
    """The helper's one operation (record: its packed write) traced:
    (base image, ops), or None (failed, said)."""
    wpath = os.path.join(work, name + ".writes")
    with open(wpath, "wb") as fh:
        fh.write(record)
    trace = os.path.join(work, name + ".trace")
    base, ops, final, why = traced([HELPER, path, "/g/x", wpath, trace], path, trace)
    if why:
        T.fail("%s: %s" % (name, why))
        return None
    return base, ops


def crashes_checked(work, name, base, ops, rng, ohdr, states):
    """Every crash image of the trace holds one of states: how many."""
    tmp = os.path.join(work, "img.h5")
    count = 0
    for where, img in crash_images(base, ops, rng, SUBSETS, ohdr):
        err = check_image(img, tmp, states, 4, True)
        count += 1
        if err:
            T.fail("%s: %s: %s" % (name, where, err))
            break
    return count


def punch_case(work, case, rng):
    name, libver, maxshape, filt, ce, nwhole = case
    path, v, ohdr, chunks0 = one_dataset(work, name, libver, maxshape, filt, ce)
    cb = 4 * ce
    # a partial chunk, whole ones, a partial one (leaves: from the first
    # chunk, so that the first leaf is punched whole)
    off, ln = (0, cb * nwhole + cb // 2) if name.endswith("leaves") else (cb + cb // 2, cb * nwhole + cb)
    new = bytearray(v.tobytes())
    new[off:off + ln] = bytes(ln)
    states = [v.tobytes(), bytes(new)]
    tr = trace_op(work, name, path, struct.pack("<QQQ", off, PUNCH, ln))
    if tr is None:
        return 0
    with h5py.File(path, "r") as f:
        got = f["g/x"][()].tobytes()
        chunks = f["g/x"].id.get_num_chunks()
    if got != states[1]:
        T.fail("%s: the final file does not read the punched range as zeros" % name)
        return 0
    if chunks != chunks0 - nwhole:
        T.fail("%s: %d chunks after the punch (want %d)" % (name, chunks, chunks0 - nwhole))
    count = crashes_checked(work, name, tr[0], tr[1], rng, ohdr, states)
    print("%s: %d writes/syncs traced, %d crash states checked; chunks %d -> %d" % (
        name, len(tr[1]), count, chunks0, chunks), flush=True)
    return count


# name, libver, maxshape, filters, elements a chunk, elements kept
SHRINK_CASES = [
    ("shrink-earray", "latest", (None,), {}, 16, 37),
    ("shrink-farray-filt", "latest", (400,), FILT, 16, 40),
    ("shrink-btree1", "earliest", (None,), {}, 16, 37),
    # 150 chunks, leaves of 64: the leaves past the new end leave the tree
    # (h5_bt1w_remove, issue 81)
    ("shrink-btree1-leaves", "earliest", (None,), {}, 2, 9),
]


def shrink_case(work, case, rng):
    name, libver, maxshape, filt, ce, keep = case
    path, v, ohdr, _ = one_dataset(work, name, libver, maxshape, filt, ce, fillvalue=-3)
    mid = v.copy()
    mid[keep:] = -3
    states = [v.tobytes(), mid.tobytes(), v[:keep].tobytes()]
    tr = trace_op(work, name, path, struct.pack("<QQ", 4 * keep, SHRINK))
    if tr is None:
        return 0
    with h5py.File(path, "a") as f:
        d = f["g/x"]
        got = d[()].tobytes()
        chunks = d.id.get_num_chunks()
        d.resize((300,))        # libhdf5 grows it again: the fill value past the end
        again = d[()]
    if got != states[2]:
        T.fail("%s: the final file does not hold the first %d rows (%d bytes)" % (name, keep, len(got)))
        return 0
    if not np.array_equal(again, mid):
        T.fail("%s: grown again by h5py, rows past %d are not the fill value" % (name, keep))
    want = -(-keep // ce)
    if chunks != want:
        T.fail("%s: %d chunks after the shrink (want %d)" % (name, chunks, want))
    count = crashes_checked(work, name, tr[0], tr[1], rng, ohdr, states)
    print("%s: %d writes/syncs traced, %d crash states checked; %d chunks left" % (
        name, len(tr[1]), count, chunks), flush=True)
    return count


# name, libver, maxshape, filters, elements a chunk
JOIN_CASES = [
    ("join-earray", "latest", (None,), {}, 16),
    ("join-earray-filt", "latest", (None,), FILT, 16),
    ("join-btree1", "earliest", (None,), {}, 16),
    ("join-btree1-filt", "earliest", (None,), FILT, 16),
]


def join_case(work, case, rng):
    """Rows appended and not committed by their stream, then a durable
    commit of the overwriter (issue 81 item 3): with bytes written over
    those rows only, the commit takes the rows into its one ordered
    commit (the old dataset or the new, nothing between); with bytes over
    old rows too, and across the old end, the rows are committed first,
    then the bytes (the old, the rows with what they held, or the new)."""
    name, libver, maxshape, filt, ce = case
    path, v, ohdr, _ = one_dataset(work, name, libver, maxshape, filt, ce, fillvalue=-3)
    cur = bytearray(v.tobytes())
    states = [bytes(cur)]
    rec = b""
    # a chunk row left partly filled, bytes written over the new rows only
    # (one commit: the rows with them); then completed, bytes written over
    # old rows too (the rows committed first, then the overwrite)
    for k, spans in ((37, "new"), (21, "old new across")):
        rows = ((np.arange(k) * 7 + len(cur) // 4) % 30000).astype("<i4").tobytes()
        rec += struct.pack("<QQ", len(rows), APPEND) + rows
        old_end = len(cur)
        cur += rows
        if "old" in spans:
            states.append(bytes(cur))
        ranges = {"old": (0, old_end), "new": (old_end, len(cur)), "across": (old_end - 24, old_end + 24)}
        for lo, hi in (ranges[x] for x in spans.split()):
            off = rng.randrange(lo // 4, (hi - 8) // 4) * 4
            b = bytes(rng.randrange(256) for _ in range(4 * rng.randint(1, 2)))
            rec += struct.pack("<QQ", off, len(b)) + b
            cur[off:off + len(b)] = b
        rec += struct.pack("<QQ", 0, DURABLE)
        states.append(bytes(cur))
    os.environ["H5FS_APPEND_COMMIT_MS"] = "600000"    # the stream commits nothing itself
    try:
        tr = trace_op(work, name, path, rec)
    finally:
        del os.environ["H5FS_APPEND_COMMIT_MS"]
    if tr is None:
        return 0
    with h5py.File(path, "r") as f:
        got = f["g/x"][()].tobytes()
    if got != states[-1]:
        T.fail("%s: the final file does not hold the rows and the writes (%d bytes, want %d)" % (
            name, len(got), len(states[-1])))
        return 0
    count = crashes_checked(work, name, tr[0], tr[1], rng, ohdr, states)
    syncs = sum(op[0] == "S" for op in tr[1])
    print("%s: %d writes/syncs traced, %d syncs, %d crash states checked" % (name, len(tr[1]), syncs, count),
          flush=True)
    return count


def main():
    if not os.path.exists(HELPER):
        T.skip("overwrite_trace not built")
    work = tempfile.mkdtemp(prefix="overwrite-crash-", dir=os.path.dirname(T.workdir("overwrite-crash")))
    seed = os.environ.get("H5FS_CRASH_SEED", "32")
    total = 0
    try:
        for case in CASES:
            if len(sys.argv) < 2 or case[0] in sys.argv[1:]:
                t0 = time.monotonic()
                total += run_case(work, case, random.Random("%s %s" % (seed, case[0])))
                print("%s: %.1f s" % (case[0], time.monotonic() - t0), flush=True)
        for case in PUNCH_CASES:
            if len(sys.argv) < 2 or case[0] in sys.argv[1:]:
                total += punch_case(work, case, random.Random("%s %s" % (seed, case[0])))
        for case in SHRINK_CASES:
            if len(sys.argv) < 2 or case[0] in sys.argv[1:]:
                total += shrink_case(work, case, random.Random("%s %s" % (seed, case[0])))
        for case in JOIN_CASES:
            if len(sys.argv) < 2 or case[0] in sys.argv[1:]:
                total += join_case(work, case, random.Random("%s %s" % (seed, case[0])))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d crash states checked in all" % total)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
