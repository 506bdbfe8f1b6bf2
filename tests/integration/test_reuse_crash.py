#!/usr/bin/python3
"""Crash states of free-space reuse (issue 47 item 3; doc/DESIGN.md
"Free space"): space a committed change freed is written again by a later
change, so a crash there must still leave each change done or not done.

Attributes (attr_trace, test_attr_crash.py's enumeration): one string
attribute changed again and again, a new one made, changed and removed,
on an h5py-default and a libver="latest" file; each change's old value's
global heap collection is freed by its commit and taken by a later one's
new value (after the fsync that makes the freeing durable). Every prefix
of the traced writes (kill -9) is exactly the state after some number of
changes, every power-cut subset holds for each attribute a value it had,
and a failing Nth write or sync (every N) leaves such a file. That the
trace reuses space is checked: a collection is written twice at one
address.

Chunks (overwrite_trace, test_overwrite_crash.py's images): a deflated
dataset per chunk index whose first chunks are rewritten by six durable
commits, the writer closed and opened again after each (what dd does; the
replaced chunks and v1 B-tree nodes are freed then), and at the end the
unmount's move of the last chunk into freed space (h5_file_compact).
Every prefix of every sync interval (kill -9) and torn subsets of it
(power cut) must read as the dataset after some number of commits, and so
must the file after a failing Nth write or sync, for every N. That the
trace reuses space is checked: a write lands in a chunk of the original
file.
"""
import os
import random
import shutil
import struct
import subprocess
import sys
import time
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
import h5py  # noqa: E402

import make_write_fixtures as MF  # noqa: E402
from crash_replay import crash_images, fail_picks, parse_trace, traced  # noqa: E402
import test_attr_crash as AC  # noqa: E402  (the attribute changes' enumeration)
import test_overwrite_crash as OC  # noqa: E402  (the overwrite fixtures and image check)

OW_HELPER = OC.HELPER
DURABLE, REOPEN, COMPACT = (1 << 64) - 1, (1 << 64) - 3, (1 << 64) - 4
SUBSETS = 10
COMMITS = 6

# string attributes of three objects changed in turn, again and again
# (each value's own collection freed, taken by a later value: one of
# another attribute, so an old value read from reused space is one no
# state has), then a new attribute changed twice and removed (its
# collection freed too)
REUSE_ATTR_OPS = ["set\t%s\tvs\tvalue %02d of %s" % (o, k, o) for k in range(4) for o in ("/g", "/", "/d")] + \
    ["sync"] + [
    "set\t/d\tnew1\tfirst",
    "set\t/d\tnew1\tsecond " + "s" * 100,
    "set\t/g\tvs\tvalue 06",
    "set\t/d\tnew1\tthird",
    "del\t/d\tnew1",
    "set\t/g\tvs\tvalue 07",
    "set\t/g\tvs\tvalue 08",
    "sync",
    "set\t/g\tvs\tlast",
]

# filtered chunk indexes of test_overwrite_crash.py (v1 B-tree: its nodes
# are copied and freed too)
CHUNK_CASES = ("btree1-2d-filt", "btree2-2d-filt", "farray-2d-filt", "earray-1d-filt", "single-filt")


def gcol_writes(trace):
    return [op[1] for op in parse_trace(trace) if op[0] == "W" and op[2][:4] == b"GCOL"]


def attr_case(work, fx, rng):
    n = AC.run_case(work, fx, rng, REUSE_ATTR_OPS, MF.OBJS, every_fail=True)
    # the same changes traced once more: collections written at an
    # address an earlier one of this session had
    p = os.path.join(work, "reuse.h5")
    shutil.copy(os.path.join(work, "fx", fx), p)
    trace = os.path.join(work, "reuse.trace")
    AC.run_helper(p, trace, 0, REUSE_ATTR_OPS)
    at = gcol_writes(trace)
    again = len(at) - len(set(at))
    if again < 2:
        T.fail("%s: %d collections written, %d at an address used before: no reuse" % (fx, len(at), again))
    print("%s: %d global heap collections written, %d into freed space" % (fx, len(at), again), flush=True)
    return n


def chunk_writes(old, rng):
    """COMMITS commits, each rewriting the first rows (every chunk they
    touch gets new bytes, and a new deflated size)."""
    es = old.dtype.itemsize
    row = es * (old.shape[1] if old.ndim > 1 else 1)
    n = min(old.nbytes, row * (7 if old.ndim > 1 else 40))
    return [[(0, bytes(rng.randrange(256 >> (c % 3)) for _ in range(n)))] for c in range(COMMITS)]


def states_of(old, commits):
    cur = bytearray(old.tobytes())
    st = [bytes(cur)]
    for ws in commits:
        for off, b in ws:
            cur[off:off + len(b)] = b
        st.append(bytes(cur))
    return st


def original_chunks(path):
    with h5py.File(path, "r") as f:
        d = f["g/x"]
        return [(c.byte_offset, c.byte_offset + c.size) for c in
                (d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks()))]


def write_records(path, commits):
    with open(path, "wb") as fh:
        for ws in commits:
            for off, b in ws:
                fh.write(struct.pack("<QQ", off, len(b)) + b)
            fh.write(struct.pack("<QQ", 0, DURABLE))
            fh.write(struct.pack("<QQ", 0, REOPEN))
        fh.write(struct.pack("<QQ", 0, COMPACT))


def chunk_case(work, case, rng):
    name = case[0]
    path = os.path.join(work, name + ".h5")
    old, ohdr, _ = OC.make(path, case)
    chunks0 = original_chunks(path)
    commits = chunk_writes(old, rng)
    states = states_of(old, commits)
    wpath = os.path.join(work, name + ".writes")
    write_records(wpath, commits)
    trace = os.path.join(work, name + ".trace")
    base, ops, final, why = traced([OW_HELPER, path, "/g/x", wpath, trace], path, trace)
    if why:
        T.fail("%s: %s" % (name, why))
        return 0
    tmp = os.path.join(work, "img.h5")
    es = old.dtype.itemsize
    err = OC.check_image(final, tmp, states[-1:], es, True)
    if err:
        T.fail("%s: the final file: %s" % (name, err))
        return 0
    reused = sum(1 for op in ops if op[0] == "W" and any(a <= op[1] < b for a, b in chunks0))
    if not reused:
        T.fail("%s: no write landed in a chunk the rewrites replaced: no reuse" % name)
    count = 0
    for where, img in crash_images(base, ops, rng, SUBSETS, ohdr):
        err = OC.check_image(img, tmp, states, es, True)
        count += 1
        if err:
            T.fail("%s: %s: %s" % (name, where, err))
            return count
    # a failing Nth write or sync, every N (a sample under the small
    # budget, crash_replay.fail_picks): the writes stop there
    fpath = os.path.join(work, "fail.h5")
    for n in fail_picks(len(ops), rng, 1):
        with open(fpath, "wb") as fh:
            fh.write(base)
        subprocess.run([OW_HELPER, fpath, "/g/x", wpath, "-", str(n)], capture_output=True, timeout=120)
        err = OC.check_image(open(fpath, "rb").read(), tmp, states, es, True)
        count += 1
        if err:
            T.fail("%s: write or sync %d failing: %s" % (name, n, err))
            return count
    print("%s: %d writes/syncs traced, %d into replaced chunks' space, %d crash states checked"
          % (name, len(ops), reused, count), flush=True)
    return count


def main():
    for h in (AC.HELPER, OW_HELPER):
        if not os.path.exists(h):
            T.skip("%s not built" % os.path.basename(h))
    work = tempfile.mkdtemp(prefix="reuse-crash-", dir=os.path.dirname(T.workdir("reuse-crash")))
    seed = os.environ.get("H5FS_CRASH_SEED", "47")
    total = 0
    try:
        made = MF.make(os.path.join(work, "fx"))
        for fx in ("default.h5", "latest.h5"):
            if fx in made and (len(sys.argv) < 2 or fx in sys.argv[1:]):
                t0 = time.monotonic()
                total += attr_case(work, fx, random.Random("%s %s" % (seed, fx)))
                print("%s: %.1f s" % (fx, time.monotonic() - t0), flush=True)
        for case in OC.CASES:
            if case[0] in CHUNK_CASES and (len(sys.argv) < 2 or case[0] in sys.argv[1:]):
                t0 = time.monotonic()
                total += chunk_case(work, case, random.Random("%s %s" % (seed, case[0])))
                print("%s: %.1f s" % (case[0], time.monotonic() - t0), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d crash states checked in all" % total)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
