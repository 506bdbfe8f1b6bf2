"""crash_replay.py - the crash states a traced write leaves, for the crash
tests (test_append_crash.py, test_overwrite_crash.py, test_truncate_crash.py,
test_attr_crash.py).

A helper built by make check runs one write through the engine with its
byte source wrapped by the trace source (source_trace.c), which records
every write (W), size change (T) and sync (S) in order. The trace is
replayed onto the original file in part to build the files a crash could
leave:

- every sync interval: everything before the interval's sync point, plus
  every prefix of the writes issued since (kill -9: the kernel keeps
  completed writes, in order);
- for every interval, random subsets of the writes since the last sync,
  each write torn into 512-byte sectors that land or not independently
  (a power cut: the disk may store unsynced sectors in any order; a
  subset drawn twice, or one of all or none of the writes, a prefix, is
  checked once) - except
  writes inside `whole` (an object header's in-place rewrites, one write
  ending in the chunk's checksum), which land whole or not at all: a torn
  one that straddles a sector boundary is the residual risk doc/APPEND.md
  names, counted by straddling().

The budget: H5FS_CRASH_STATES=small (tests/stress/run-sanitizers.sh sets
it for its ASan+UBSan make check) keeps every run of a trace helper, the
code a sanitizer watches (the traced changes, each prefix of the changes,
failing Nth writes: fail_picks), but checks only a few of the images built
from the trace, which h5py reads and no sanitizer watches: the first,
middle and last prefix of each sync interval (prefix_picks) and
SMALL_SUBSETS torn subsets. Every kind of state is still checked there;
the plain make check checks all of them ("full", the default).

Torn pages (issue 71 item 5): the page cache writes a file back by 4 KiB
pages (file offsets), so a power cut leaves each page as of its last
writeback: every page touched since the last fsync holds its durable
bytes plus some prefix of the writes since that touched it, the pages
independent of each other - a write spanning a page boundary lands page
by page, some pages new and some old, whatever "whole" says of sectors.
page_images() builds those states: for every write that spans a page
boundary, each of its pages alone after every write before it (the
states a rewrite in place across a page leaves), and random prefixes per
page of each sync interval (PAGE_SUBSETS; SMALL_SUBSETS under the small
budget).
"""
import os
import struct
import subprocess

SMALL = os.environ.get("H5FS_CRASH_STATES", "full") == "small"
SMALL_SUBSETS = 2
SMALL_FAILS = 8
PAGE = 4096
PAGE_SUBSETS = 8


def prefix_picks(n):
    """The prefixes 0..n of a run of n writes whose images are checked."""
    return set(range(n + 1)) if not SMALL else {0, n // 2, n}


def fail_picks(n, rng, every_from=None):
    """The N (1..n) of the failing-Nth-write runs (each a run of the
    helper): every N from every_from on and a sample of SMALL_FAILS below
    it (every_from None: a sample of all); under the small budget a sample
    of SMALL_FAILS in all."""
    if every_from is None or SMALL:
        return sorted(rng.sample(range(1, n + 1), min(SMALL_FAILS, n)))
    lo = min(n, max(0, every_from - 1))
    return sorted(rng.sample(range(1, lo + 1), min(SMALL_FAILS, lo))) + list(range(lo + 1, n + 1))


def parse_trace(path):
    ops = []
    with open(path, "rb") as fh:
        data = fh.read()
    p = 0
    while p < len(data):
        tag = data[p:p + 1]
        if tag == b"S":
            ops.append(("S",))
            p += 1
        elif tag in (b"W", b"T"):
            off, ln = struct.unpack_from("<QQ", data, p + 1)
            p += 17
            if tag == b"W":
                ops.append(("W", off, data[p:p + ln]))
                p += ln
            else:
                ops.append(("T", off))
        else:
            raise AssertionError("bad trace tag %r at %d" % (tag, p))
    return ops


def apply(img, op):
    if op[0] == "W":
        off, b = op[1], op[2]
        if len(img) < off + len(b):
            img.extend(b"\0" * (off + len(b) - len(img)))
        img[off:off + len(b)] = b
    elif op[0] == "T":
        if op[1] < len(img):
            del img[op[1]:]
        else:
            img.extend(b"\0" * (op[1] - len(img)))


def _whole(op, whole):
    if callable(whole):
        return whole(op)
    return bool(whole) and whole[0] <= op[1] and op[1] + len(op[2]) <= whole[1]


def torn(img, op, rng, whole=None):
    """Apply a write sector by sector (512-byte file sectors), each or not;
    a write inside the range whole = (start, end), or one whole(op) says
    is whole, lands whole or not. Returns which pieces landed (a tuple of
    bools: the same choices give the same image)."""
    if op[0] != "W" or _whole(op, whole):
        if rng.random() < 0.5:
            apply(img, op)
            return (True,)
        return (False,)
    off, b = op[1], op[2]
    pos = 0
    landed = []
    while pos < len(b):
        end = min(len(b), ((off + pos) // 512 + 1) * 512 - off)
        landed.append(rng.random() < 0.5)
        if landed[-1]:
            apply(img, ("W", off + pos, b[pos:end]))
        pos = end
    return tuple(landed)


def rebuilds(base, ops, final):
    """Whether the whole trace replayed onto base gives the final file."""
    img = bytearray(base)
    for op in ops:
        apply(img, op)
    return bytes(img) == final


def traced(argv, path, trace, env=None):
    """Run the trace helper argv, which writes to FILE `path` and its trace
    to `trace`: (base, ops, final, None) - FILE's bytes before and after
    and the writes between - or (None, None, None, why) when the helper
    failed or the trace does not rebuild the final file."""
    base = open(path, "rb").read()
    r = subprocess.run(argv, env=env, capture_output=True, timeout=120)
    if r.returncode != 0:
        return None, None, None, "%s exit %d: %s" % (os.path.basename(argv[0]), r.returncode,
                                                     r.stderr.decode()[-500:])
    final = open(path, "rb").read()
    ops = parse_trace(trace)
    if not rebuilds(base, ops, final):
        return None, None, None, "the replayed trace does not rebuild the final file"
    return base, ops, final, None


def _spans(op):
    return op[0] == "W" and op[1] // 512 != (op[1] + len(op[2]) - 1) // 512


def crash_images(base, ops, rng, subsets, whole=None):
    """Yield (where, image) for every crash state: each prefix of each sync
    interval, then `subsets` torn subsets of it. An image is valid until
    the next one is asked for."""
    syncs = [i for i, op in enumerate(ops) if op[0] == "S"]
    bounds = [-1] + syncs + [len(ops)]
    durable = bytearray(base)
    if SMALL:
        subsets = min(subsets, SMALL_SUBSETS)
    for k in range(len(bounds) - 1):
        pending = [op for op in ops[bounds[k] + 1:bounds[k + 1]] if op[0] != "S"]
        cur = bytearray(durable)
        picks = prefix_picks(len(pending))
        for j in range(len(pending) + 1):
            if j:
                apply(cur, pending[j - 1])
            if j in picks:
                yield "interval %d, prefix %d/%d" % (k, j, len(pending)), cur
        # torn subsets (power cut): also of a lone write that spans sectors;
        # a subset drawn before in this interval (the same pieces landed:
        # the same image), or all or none of it (the last or first prefix),
        # is not checked again
        tearable = len(pending) > 1 or any(_spans(op) for op in pending)
        seen = set()
        for _ in range(subsets if tearable else 0):
            img = bytearray(durable)
            landed = tuple(torn(img, op, rng, whole) for op in pending)
            pieces = [x for t in landed for x in t]
            if landed in seen or all(pieces) or not any(pieces):
                continue
            seen.add(landed)
            yield "interval %d, torn subset" % k, img
        for op in pending:
            apply(durable, op)


def rewrites_in_place(base, ops, most=512):
    """whole() for torn(): the in-place rewrites of small metadata (at most
    `most` bytes over bytes the base file or an earlier write of the trace
    holds: a superblock, an object header, an extensible array header),
    which doc/APPEND.md "Atomicity of the in-place writes" takes as
    atomic; new space (chunks, new blocks) is torn by sectors."""
    seen = [(0, len(base))]
    keep = set()
    for op in ops:
        if op[0] != "W":
            continue
        lo, hi = op[1], op[1] + len(op[2])
        if len(op[2]) <= most and any(a < hi and lo < b for a, b in seen):
            keep.add(id(op))
        seen.append((lo, hi))
    return lambda op: id(op) in keep


def straddling(ops, whole):
    """Writes inside whole that cross a sector boundary (kept whole)."""
    return sum(1 for op in ops if op[0] == "W" and whole[0] <= op[1] and op[1] + len(op[2]) <= whole[1]
               and _spans(op))


def _pages(op):
    """The 4 KiB pages a write touches, each as (page, piece): the part of
    the write inside that page."""
    off, b = op[1], op[2]
    out = []
    pos = 0
    while pos < len(b):
        end = min(len(b), ((off + pos) // PAGE + 1) * PAGE - off)
        out.append(((off + pos) // PAGE, ("W", off + pos, b[pos:end])))
        pos = end
    return out


def spans_page(op):
    return op[0] == "W" and op[1] // PAGE != (op[1] + len(op[2]) - 1) // PAGE


def page_images(base, ops, rng, subsets=PAGE_SUBSETS):
    """Yield (where, image) for the torn-page states of a trace (the
    module's doc): each page of each page-spanning write alone, after
    every write before it; then `subsets` random states per sync interval,
    each page touched since the sync holding a random prefix of the writes
    that touched it (a size change since the sync lands with the first
    page of the writes after it: FILE's length is the inode's, written
    back with it). An image is valid until the next one is asked for.
    Images equal to a prefix of the trace are not yielded again."""
    if SMALL:
        subsets = min(subsets, SMALL_SUBSETS)
    img = bytearray(base)
    for i, op in enumerate(ops):
        if spans_page(op):
            parts = _pages(op)
            for n, (pg, piece) in enumerate(parts):
                t = bytearray(img)
                apply(t, piece)
                yield "write %d (%d bytes at 0x%x): page %d of %d alone" % (
                    i, len(op[2]), op[1], n + 1, len(parts)), t
        apply(img, op)
    syncs = [i for i, op in enumerate(ops) if op[0] == "S"]
    bounds = [-1] + syncs + [len(ops)]
    durable = bytearray(base)
    for k in range(len(bounds) - 1):
        pending = [op for op in ops[bounds[k] + 1:bounds[k + 1]] if op[0] != "S"]
        # per page, the pieces of the pending writes in order; size
        # changes apply in order before any page lands after them
        per_page = {}
        for j, op in enumerate(pending):
            if op[0] == "W":
                for pg, piece in _pages(op):
                    per_page.setdefault(pg, []).append((j, piece))
        seen = set()
        for _ in range(subsets if per_page else 0):
            cut = {pg: rng.randint(0, len(v)) for pg, v in per_page.items()}
            key = tuple(sorted(cut.items()))
            if key in seen or all(c == len(per_page[pg]) for pg, c in cut.items()) or not any(cut.values()):
                continue
            seen.add(key)
            t = bytearray(durable)
            for op in pending:
                if op[0] == "T":
                    apply(t, op)
            for pg, v in per_page.items():
                for j, piece in v[:cut[pg]]:
                    apply(t, piece)
            yield "interval %d, torn pages" % k, t
        for op in pending:
            apply(durable, op)
