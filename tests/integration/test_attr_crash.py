#!/usr/bin/python3
"""Crash-state enumeration of attribute changes (issue 31 item 4; the
method of test_append_crash.py, doc/MODIFY.md).

attr_trace (a helper built by make check) applies a sequence of attribute
changes through the engine (in place, into NIL space, new continuation
chunks, messages moved aside, new global heap collections, removals,
typed creations) with its byte source wrapped by the trace source, which
records every write, size change and sync. state_k, what h5py reads after
the first k changes, comes from running the helper on the first k changes
alone. Then the files a crash could leave are built from the trace:

- kill -9: every prefix of the writes (the kernel keeps completed writes,
  in order): h5py must open it and read exactly some state_k;
- power cut: for every sync interval, everything before it plus random
  subsets of the writes since (each landing whole: unsynced writes are
  either new space nothing references yet, or one object header chunk
  per change, whose tearing inside a sector-straddling write is the
  residual risk doc/APPEND.md names): every attribute must hold a value it
  held in some state (each change done or not done);
Dense storage (latest.h5): a group's 9th link and an object's 9th
attribute move them to dense storage in one commit, and later changes
write the store anew and switch its info message (DENSE_LINK_OPS,
DENSE_ATTR_OPS), enumerated as the rest; so are batches of new string attributes in dense
storage (BATCH_OPS: one commit each, the daemon's write-behind of setfattr,
with its disk space allocated ahead and cut back by the sync after, and np.save
streams that stop halfway giving their space back),
and removals that move dense attributes back into the header below
libhdf5's minimum of 6 (SHRINK_OPS), and the same for links
(LINK_SHRINK_OPS). Space freed and taken again (rmdir's group, replaced
dense stores and symbol table nodes, REUSE_DENSE_OPS, REUSE_STAB_OPS).
New datasets (a contiguous int32 dataset written first and linked last,
as np.save through the mount makes one, and one chunked and deflated, as
with -o compress=gzip; an empty growable uint8 one, as cp does) are enumerated the same way, a state's tree holding each
dataset's values: a crash must never leave a dataset with bytes missing.
Groups and links (mkdir, symlink, unlink, and mv and ln; in latest.h5's
compact groups and in default.h5's symbol-table groups, where enough names
split nodes and grow the local heap) are enumerated the same way, their states being the tree of links; a power-cut
image must be opened by h5py, each of its links one that some state has
(two changes of different headers may land without each other after a
power cut). A move across groups is a hard link to the new name, then the
old name removed (write/link_move.c), so its states are those of "ln" then
"unlink" (MOVE_STATES): a kill -9 leaves the object under the old name,
both, or the new one, never neither; a move within a compact group is one
commit.
A group's link storage moved down at unmount (MOVE_DOWN_OPS: names added
after a large dataset, which rm frees, then removed; "compact" is the
unmount's h5_file_compact) is enumerated the same way, with every failing
N of the compact's writes (and 8 of the changes' before it, which the
other cases make), on both files; FILE must end near where it began; and an object's
dense attribute store the same way (MOVE_DOWN_ATTR_OPS), and the global
heap collection of string values set late and kept (MOVE_DOWN_COLL_OPS,
both files).
Modification times (TIME_OPS: what utimens through the mount writes,
write/obj_time.c) are enumerated the same way, each object's time in the
tree.
- a failing Nth write or sync (io_fail_at), for every N of default.h5
  and 8 of each other file: the changes after
  it still run; the file must open and every attribute hold one of its
  values.
A power-cut subset drawn twice in an interval, or one of all or none of
its writes (a prefix), is checked once. H5FS_CRASH_STATES=small (the
sanitizer stage) checks fewer images (crash_replay.py). make check runs
the enumeration in parts (PARTS below, test_attr_crash_PART.py); by hand
`test_attr_crash.py` runs them all, `test_attr_crash.py links` one.
"""
import os
import random
import shutil
import zlib
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import make_write_fixtures as MF  # noqa: E402
from crash_replay import SMALL, SMALL_SUBSETS, apply, fail_picks, parse_trace, prefix_picks  # noqa: E402

HELPER = os.path.join(T.BUILDDIR, "tests", "integration", "attr_trace")
SUBSETS = 10

OPS = [
    "set\t/\ti\t42",                          # in place (same size)
    "set\t/g\tvs\tanother value",             # new global heap collection
    "set\t/\tnote\thello",                    # new: NIL space, or a new chunk
    "typed\t/d\tcnt\t<i2\t1, 2, 3",
    "del\t/g\trm",
    "set\t/g\tfs\ta longer fixed string",     # grows: moves
    "set\t/d\tfa\t9, 8, 7",
    "sync",
    "set\t/\tnote2\t" + "x" * 300,            # larger than any free space
    "set\t/g\tnote\t" + "y" * 40,
    "del\t/\ti",
    "set\t/d\tvs\tz",
]


ATTR_OPS = OPS

# groups and links (compact link storage: latest.h5)
LINK_OPS = [
    "mkdir\t/\tn",
    "mkdir\t/n\ta",
    "symlink\t/g\tsl\t/d",
    "set\t/\tnote\tx",
    "unlink\t/\td",                           # /d stays reachable? no: its only link
    "symlink\t/n\tback\t/g",
    "unlink\t/n\ta",
    "mkdir\t/g\tsub",
]


# the same in symbol-table groups (default.h5), with enough names in /g
# to split its symbol table nodes (2K = 8 entries) and grow its local heap
STAB_OPS = LINK_OPS + ["mkdir\t/g\tm%02d" % i for i in range(12)] + [
    "symlink\t/g\tlong-%s\t/g/m03" % ("n" * 80),
    "unlink\t/g\tm05",
    "unlink\t/g\tm00",
    "mkdir\t/g\tm05",
]

# new datasets (np.save and cp through the mount, issue 32 item 2), in
# both forms of group: the data first, the header and the link last
DSET_OPS = [
    "dset\t/\tsaved\t5000",
    "bytes\t/g\tcopied",
    "dset\t/g\tsmall\t3",
    "mkdir\t/\tn",
    "dset\t/n\tlarge\t70000",
    "unlink\t/\tsaved",
    "dset\t/\tempty\t0",
    "gzdset\t/g\tzipped\t30000",        # -o compress: chunks, B-tree, then header and link
]

# the write-behind of new files (cp -r through the mount, issue 55:
# member/lbatch.c): each file's dataset made loose (nothing references it:
# its commits skip their fsyncs), its bytes appended and committed, then
# the batch linked. A symbol-table group links it in one commit (one
# stage, one root write: all of the batch or none; 12 names split nodes of
# 2K = 8 entries more than once and grow the local heap); compact storage
# one commit per link, so there the batch is of one file
NEWFILE_OPS = [
    "newfiles\t/g\tf\t12\t3000",
    "mkdir\t/\tn",
    "newfiles\t/n\tr\t3\t0",
    "newfiles\t/g\tq\t2\t70000",       # two chunks each, a B-tree
]
NEWFILE_OPS_LATEST = [
    "newfiles\t/g\tf\t1\t3000",
    "newfiles\t/\tr\t1\t0",
    "newfiles\t/g\tq\t1\t70000",
]
# /g in dense storage (its 9th link), then batches into it: one load, the
# store written anew once, one commit (link_dense.c dense_insert_many,
# dense_remove_many for rmdir's batch): all of a batch or none
NEWFILE_OPS_DENSE = ["mkdir\t/g\tm%02d" % i for i in range(9)] + [
    "newfiles\t/g\tf\t12\t3000",
    "rmdirs\t/g\tm01,m05,m02",
    "newfiles\t/g\tq\t2\t70000",
]

# modification times set (utimens through the mount, issue 47:
# write/obj_time.c): a v1 header without a place gets a Modification
# Time message (placed as an attribute's, perhaps in a new continuation
# chunk), one with a place is patched in place, a v2 header's prefix
# times are patched (a v2 header without times has no place: refused,
# nothing written); a time before 1970 replaces a v1 header's 32-bit
# message by the old one (a date), which a later time patches
# (the states then hold each object's time: WITH_TIMES; h5py's datasets
# of libver="latest" are v2 headers without times, so there /d is not set)
TIME_OPS = [
    "mtime\t/d\t1500000000",
    "mtime\t/g\t1500000001",
    "dset\t/\tnew\t100",
    "mtime\t/new\t1500000002",
    "mtime\t/d\t1600000000",
    "mtime\t/new\t-315615540",
    "sync",
    "mtime\t/g\t1700000000",
    "mtime\t/new\t1700000001",
]
TIME_OPS_LATEST = [op for op in TIME_OPS if not op.startswith("mtime\t/d\t") and "\t-" not in op]
WITH_TIMES = [False]

# moves and hard links (latest.h5); the states they may leave, as the
# changes that give them (a move across groups: "ln" then "unlink")
MOVE_OPS = [
    "mkdir\t/\tn",
    "mv\t/\td\t/\td2",                     # one group: one commit
    "ln\t/n\tdl\t/d2",                       # a hard link
    "mv\t/n\tdl\t/g\tmoved",                # across groups (rc 2 -> 3 -> 2)
    "symlink\t/\tsl\t/g",
    "mv\t/\tsl\t/n\tsl2",                   # a soft link across groups
    "mv\t/\tg\t/n\tg2",                     # a group across groups
    "unlink\t/\td2",                          # one of two links
]
MOVE_STATES = [
    "mkdir\t/\tn",
    "mv\t/\td\t/\td2",
    "ln\t/n\tdl\t/d2",
    "ln\t/g\tmoved\t/n/dl",
    "unlink\t/n\tdl",
    "symlink\t/\tsl\t/g",
    "symlink\t/n\tsl2\t/g",
    "unlink\t/\tsl",
    "ln\t/n\tg2\t/g",
    "unlink\t/\tg",
    "unlink\t/\td2",
]

# dense storage (latest.h5): /g's 9th link and each object's 9th attribute
# move them to a new heap and name index in one commit that copies the
# header's continuation chunks (ohdr_edit.c h5_ohdr_commit_cow); then
# changes in dense storage, each a new heap and index switched to by one
# write of the info message
DENSE_LINK_OPS = ["mkdir\t/g\tm%02d" % i for i in range(10)] + [
    "symlink\t/g\tsl\t/d",
    "unlink\t/g\tm03",
    "mv\t/g\tm04\t/g\tm04b",
    "sync",
    "mkdir\t/g\tm10",
    "unlink\t/g\tsl",
]
DENSE_ATTR_OPS = [
    "set\t/\tn1\tone",
    "set\t/\tn2\ttwo",
    "set\t/\tn3\tthree",                  # the 9th: dense
    "set\t/\ti\t43",                      # changed in dense storage
    "del\t/\trm",
    "typed\t/\tcnt\t<i2\t1, 2",
    "sync",
    "set\t/\tn1\tuno",
    "set\t/d\ta1\tx",
    "set\t/d\ta2\ty",
    "set\t/d\ta3\t" + "z" * 200,
    "del\t/\tn2",
]
# batches of new string attributes (the daemon's write-behind of setfattr:
# h5_attr_write_batch) on an object in dense storage: one global heap
# collection for the batch, the store written anew once, one commit
BATCH_OPS = DENSE_ATTR_OPS[:3] + [
    "reserve\t262144",     # the write-behind's space allocated first (issue 47)
    "strs\t/\t40\tb",
    "set\t/\ti\t44",
    "sync",                 # the superblock's EOF address, then the cut
    "stop\t200000",        # an np.save stream that stops: its space back
    "gzstop\t200000",
    "sync",
    "strs\t/\t25\tc",
    "strs\t/\t1\td",
    "batch\t/\t=i=46;+e1=new;=b003=changed;=fa=9, 8, 7",   # values of existing ones too
    "batch\t/d\t+x1=one;=i=3;+x2=two",                     # compact storage: a commit each
]
# below libhdf5's minimum (6) a removal moves dense attributes back into
# the header (one new continuation chunk, the info message naming no
# storage, chunk 0 written last: h5_ohdr_put_many, h5_ohdr_commit_cow)
SHRINK_OPS = ["set\t/d\tn%d\tv%d" % (i, i) for i in range(9)] + ["del\t/d\tn%d" % i for i in range(9)] + [
    "del\t/d\trm",                          # /d's 6 of the fixture: 5 left, compact
    "set\t/d\tafter\tcompact again",
    "sync",
    "del\t/d\tafter",
]
# the same for links: /g's 10 go dense, 5 removed move the rest back;
# then dense again, the chunk the move back filled left out of the copy
# of the header (ohdr_edit.c empty_chunks, issue 81)
LINK_SHRINK_OPS = ["mkdir\t/g\tm%02d" % i for i in range(10)] + \
    ["unlink\t/g\tm%02d" % i for i in (0, 3, 4, 7, 9)] + ["mkdir\t/g\tafter", "sync", "unlink\t/g\tm01"] + \
    ["mkdir\t/g\tc%d" % i for i in range(4)]
# space freed and taken again (issue 56 item 5): a removed group's header
# and link storage (rmdir), a dense store and symbol table nodes replaced
# by a change, reused by the next mkdir once a sync released them
REUSE_DENSE_OPS = ["mkdir\t/g\tm%02d" % i for i in range(10)] + [
    "rmdir\t/g\tm03", "sync", "mkdir\t/g\tr1", "rmdir\t/g\tr1", "sync", "mkdir\t/g\tr2",
    "mkdir\t/g/r2\tx", "sync", "rmdir\t/g/r2\tx", "rmdir\t/g\tm05", "sync", "mkdir\t/g\tr3"]
REUSE_STAB_OPS = ["mkdir\t/g\tm%02d" % i for i in range(12)] + [
    "rmdir\t/g\tm05", "sync", "mkdir\t/g\tr1", "rmdir\t/g\tm00", "sync", "mkdir\t/g/r1\tx",
    "mkdir\t/g\tr2", "sync", "rmdir\t/g/r1\tx", "sync", "mkdir\t/g\tr3",
    # removed names back to the local heap's free list (link_stab.c
    # heap_release): short ones growing the free block before them,
    # longer ones becoming blocks of their own (pushed, or taking in the
    # block after them)
    "mkdir\t/g\tc1", "rmdir\t/g\tc1", "mkdir\t/g\tc2", "rmdir\t/g\tc2", "mkdir\t/g\tc3",
    "mkdir\t/g\tlong-name-number-1", "mkdir\t/g\tlong-name-number-2", "mkdir\t/g\tr7",
    "rmdir\t/g\tlong-name-number-1", "sync", "mkdir\t/g\tr8", "mkdir\t/g\tr9", "mkdir\t/g\tr10",
    "rmdir\t/g\tlong-name-number-2", "sync", "mkdir\t/g\tr11", "mkdir\t/g\tr12"]
# a group's link storage moved down at unmount (issue 53, link_write.c
# h5_link_move_down): names added after a large dataset, whose space the
# rm frees, place the group's symbol table nodes and grown local heap (a
# dense group's store) at the end; "compact" commits them again into the
# freed space below, and the end is cut (MOVE_DOWN_OPS, both files)
MOVE_DOWN_OPS = ["mkdir\t/g\tearly%d" % i for i in range(3)] + ["dset\t/g\tbig\t200000"] + [
    "mkdir\t/g\tlate-name-that-needs-room-in-the-heap-%02d" % i for i in range(12)] + [
    "rm\t/g\tbig", "sync"] + [
    "rmdir\t/g\tlate-name-that-needs-room-in-the-heap-%02d" % i for i in range(12)] + ["sync", "compact"]
# the same for an object's dense attribute store (attr_write.c
# h5_attr_move_down): a number attribute (no global heap collection) set
# after the large dataset, which is then removed: the store written at
# the end moves down (40 attributes: a store larger than the rest of a
# page the large dataset's header skipped, which it would take instead,
# space.c h5_space_alloc_page)
MOVE_DOWN_EARLY = 40
MOVE_DOWN_ATTR_OPS = ["strs\t/g\t%d\tearly" % MOVE_DOWN_EARLY, "dset\t/\tbig\t200000"] + [
    "typed\t/g\tlate\t<i4\t7", "rm\t/\tbig", "sync", "compact"]
# the same for string values' global heap collections (attr_move.c): two
# new string attributes set after the large dataset by one batch (one
# collection at the end), kept when the dataset is removed: the
# collection is copied down and both messages point at the copy
MOVE_DOWN_COLL_OPS = ["dset\t/\tbig\t200000", "batch\t/g\t+late1=late one;+late2=late two",
                      "rm\t/\tbig", "sync", "compact"]
MOVE_DOWN_COLL_STATES = MOVE_DOWN_COLL_OPS[:1] + ["batch\t/g\t+late1=late one", "batch\t/g\t+late2=late two"] + \
    MOVE_DOWN_COLL_OPS[2:]
# (the batch: one commit per compact attribute, the dense rest in one; a
# state after each attribute covers both)
MOVE_DOWN_ATTR_STATES = ["set\t/g\tearly%03d\tearly value %d" % (i, i) for i in range(MOVE_DOWN_EARLY)] + \
    MOVE_DOWN_ATTR_OPS[1:]
# the compact batch is a commit per change: its states are those of three
BATCH_STATES = BATCH_OPS[:-1] + ["batch\t/d\t+x1=one", "batch\t/d\t=i=3", "batch\t/d\t+x2=two"]


# rename, link and unlink's write-behind (issue 82 item 2, behind/mbatch.c:
# h5_link_change_batch): many names of one symbol-table group changed in
# one commit - counts raised first (durable at the stage), the root's one
# write, counts lowered after; each batch all or nothing, and every
# image's counts at least its names (COUNTS). Datasets of distinct sizes
# (their values tell the objects apart); 10 of them and the group's
# names split its nodes (2K = 8 entries).
LCHANGE_OPS = ["dset\t/g\tx%02d\t%d" % (i, 3 + i) for i in range(10)] + [
    # mv x00 y00, ln x01 l01, mv x02 z02, ln x03 l03: one commit
    "lchange\t/g\tx00=-,y00=/g/x00,l01=/g/x01,x02=-,z02=/g/x02,l03=/g/x03",
    # rm l01 (one of two), mv x04 w04, ln x05 k05, ln x06 k06
    "lchange\t/g\tl01=-,x04=-,w04=/g/x04,k05=/g/x05,k06=/g/x06",
    # a name the batch freed taken (mv x07 x04's old name... x04 is free):
    # mv x07 x04, mv x08 x07, rm x03 (l03 keeps it), ln z02 x02
    "lchange\t/g\tx07=-,x04=/g/x07,x08=/g/x08,x03=-,x02=/g/z02",
    # rm of two datasets' one names (their storage freed after the
    # commit, as the daemon frees it), of one of x06's two names and of
    # a soft link; a new dataset then placed in the space freed (only
    # once the removal is durable)
    "symlink\t/g\tsl\tx09",
    "lchange\t/g\tx09=-,w04=-,k06=-,sl=-",
    "dset\t/g\tnew\t40",
]
# The same in a latest-format file: /g's ten names make it dense (its
# store written anew per batch, the Link Info message switched), and a
# group of five stays compact (one header change per batch: names that
# go NIL, the new ones put together, one write of the chunk or copies of
# the chunks changed and chunk 0's write).
LCHANGE_OPS_COMPACT = ["dset\t/g\tx%02d\t%d" % (i, 3 + i) for i in range(5)] + [
    "lchange\t/g\tx00=-,y00=/g/x00,l01=/g/x01",
    "lchange\t/g\tl01=-,x02=-,w02=/g/x02,k03=/g/x03",
    "symlink\t/g\tsl\tx04",
    "lchange\t/g\tx04=-,k03=-,x02=/g/w02,sl=-",
    "dset\t/g\tnew\t40",
]
COUNTS = [False]


def norm(v):
    if isinstance(v, bytes):
        return v.rstrip(b"\0")
    if isinstance(v, str):
        return v
    return repr(np.asarray(v).tolist())


def state_of(path, objs=MF.OBJS):
    try:
        with h5py.File(path, "r") as f:
            if objs is None:
                # the tree: every link of every group, by name and kind
                tree = []

                def walk(g, prefix):
                    for k in g:
                        ln = g.get(k, getlink=True)
                        kind = type(ln).__name__ + (":" + ln.path if isinstance(ln, h5py.SoftLink) else "")
                        if isinstance(ln, h5py.HardLink) and isinstance(g[k], h5py.Dataset):
                            # a new dataset must come whole: its values too
                            v = g[k][()]
                            kind += ":%s:%s:%08x" % (v.dtype.str, v.shape, zlib.crc32(np.asarray(v).tobytes()))
                        if WITH_TIMES[0] and isinstance(ln, h5py.HardLink):
                            # its modification time (TIME_OPS: utimens)
                            kind += ":t%d" % h5py.h5g.get_objinfo(g.id, k.encode()).mtime
                        tree.append(((prefix + k), kind))
                        if isinstance(ln, h5py.HardLink) and isinstance(g[k], h5py.Group):
                            walk(g[k], prefix + k + "/")
                walk(f, "/")
                if COUNTS[0]:
                    # every object's count at least its names (a crash
                    # never leaves one that a removal would free early)
                    seen = {}

                    def count(g, prefix):
                        for k in g:
                            ln = g.get(k, getlink=True)
                            if isinstance(ln, h5py.HardLink):
                                info = h5py.h5g.get_objinfo(g.id, k.encode())
                                seen.setdefault(tuple(info.objno), [info.nlink, 0])[1] += 1
                                if isinstance(g[k], h5py.Group):
                                    count(g[k], prefix + k + "/")
                    count(f, "/")
                    low = [v for v in seen.values() if v[0] < v[1]]
                    if low:
                        return "h5py: an object's count below its names: %r" % low[:3]
                return (("tree", tuple(sorted(tree))),) + tuple(
                    (o, tuple(sorted((k, norm(f[o].attrs[k])) for k in f[o].attrs.keys()))) for o in ("/",))
            return tuple((o, tuple(sorted((k, norm(f[o].attrs[k])) for k in f[o].attrs.keys()))) for o in objs)
    except Exception as e:  # noqa: BLE001 - any failure to open or read is a crash-safety bug
        return "h5py: %s" % e


# The runs that make each state after the first K changes run a prefix of
# what the traced run runs in full: under ASan their leak check at exit (half
# of each run's 0.2-0.4 s; test_attr_crash_links makes 244 of them) finds
# nothing the traced run's does not, so they go without it. The traced run
# and the failing-Nth-write runs (error paths) keep it.
NO_LEAK_CHECK = dict(os.environ, ASAN_OPTIONS=":".join(
    [o for o in os.environ.get("ASAN_OPTIONS", "").split(":") if o and not o.startswith("detect_leaks=")] +
    ["detect_leaks=0"]))


def run_helper(path, trace, fail_at, ops, leaks=True):
    r = subprocess.run([HELPER, path, trace, str(fail_at)] + ops, capture_output=True, timeout=60,
                       env=None if leaks else NO_LEAK_CHECK)
    if r.returncode != 0:
        raise AssertionError("attr_trace exit %d: %s" % (r.returncode, r.stderr.decode()[-400:]))
    return r.stdout.decode().splitlines()


def history(states):
    """Per (object, name): every value it had (None: absent)."""
    h = {}
    for s in states:
        for o, attrs in s:
            d = dict(attrs)
            for o2, attrs2 in states[0]:
                pass
            for k, v in d.items():
                h.setdefault((o, k), set()).add(v)
    for s in states:
        for o, attrs in s:
            names = dict(attrs)
            for (o2, k) in list(h):
                if o2 == o and k not in names:
                    h[(o2, k)].add(None)
    return h


def fits_history(st, h):
    if isinstance(st, str):
        return st
    for o, attrs in st:
        d = dict(attrs)
        for k, v in d.items():
            if v not in h.get((o, k), ()):
                return "%s %s = %r, never a value of it" % (o, k, v)
        for (o2, k), vals in h.items():
            if o2 == o and k not in d and None not in vals:
                return "%s %s missing" % (o, k)
    return None


def tree_fits(st, states):
    """Each link of the image's tree is one some state has (each change
    done or not: two changes of different headers may land alone)."""
    if isinstance(st, str):
        return st
    seen = set()
    for s in states:
        seen |= set(s[0][1])
    extra = [x for x in st[0][1] if x not in seen]
    return "links no state has: %r" % extra[:3] if extra else None


def run_case(work, fx, rng, OPS=OPS, objs=MF.OBJS, STATES=None, every_fail=False):
    """every_fail: a failing Nth write for every N (True), for every N of
    the last change's writes ("last") and a sample before it, or a sample
    (False; crash_replay.fail_picks)."""
    t0 = time.monotonic()
    base_path = os.path.join(work, "fx", fx)
    base = open(base_path, "rb").read()
    tmp = os.path.join(work, "img.h5")
    states = []
    STATES = STATES or OPS
    for k in range(len(STATES) + 1):
        p = os.path.join(work, "state.h5")
        shutil.copy(base_path, p)
        out = run_helper(p, "-", 0, STATES[:k], leaks=(k == len(STATES)))
        if any(line != "ok" for line in out):
            T.fail("%s: the first %d changes: %s" % (fx, k, out))
            return 0
        states.append(state_of(p, objs))
    if any(isinstance(s, str) for s in states):
        T.fail("%s: a state does not open: %s" % (fx, [s for s in states if isinstance(s, str)][:1]))
        return 0
    h = history(states)
    path = os.path.join(work, "traced.h5")
    shutil.copy(base_path, path)
    trace = os.path.join(work, "trace")
    run_helper(path, trace, 0, OPS)
    final = open(path, "rb").read()
    ops = parse_trace(trace)
    img = bytearray(base)
    for op in ops:
        apply(img, op)
    if bytes(img) != final:
        T.fail("%s: the replayed trace does not rebuild the final file" % fx)
        return 0
    checked = 0
    # kill -9: every prefix is exactly some state
    img = bytearray(base)
    picks = prefix_picks(len(ops))
    for i in range(len(ops) + 1):
        if i:
            apply(img, ops[i - 1])
        if i and ops[i - 1][0] == "S" or i not in picks:
            continue
        with open(tmp, "wb") as fh:
            fh.write(img)
        st = state_of(tmp, objs)
        checked += 1
        if st not in states:
            T.fail("%s: after %d of %d writes: %s" % (fx, i, len(ops), st if isinstance(st, str) else
                                                        "a state no prefix of the changes gives"))
            return checked
    # power cut: subsets of the writes since each sync
    syncs = [i for i, op in enumerate(ops) if op[0] == "S"] + [len(ops)]
    durable = bytearray(base)
    start = 0
    for s in syncs:
        pending = ops[start:s]
        seen = set()
        for _ in range((SMALL_SUBSETS if SMALL else SUBSETS) if len(pending) > 1 else 0):
            img = bytearray(durable)
            landed = tuple(rng.random() < 0.5 for op in pending)
            # a subset drawn before, or all or none of the writes (a
            # prefix, checked above), is not checked again
            if landed in seen or all(landed) or not any(landed):
                continue
            seen.add(landed)
            for op, did in zip(pending, landed):
                if did:
                    apply(img, op)
            with open(tmp, "wb") as fh:
                fh.write(img)
            err = fits_history(state_of(tmp, objs), h) if objs else tree_fits(state_of(tmp, objs), states)
            checked += 1
            if err:
                T.fail("%s: power cut in interval ending at %d: %s" % (fx, s, err))
                return checked
        for op in pending:
            apply(durable, op)
        start = s + 1
    # a failing Nth write or sync (every N on the first file, a sample on
    # the others: each is a run of the helper)
    nio = len(ops)
    if every_fail == "last":
        # the writes before the last change are the other cases' (and
        # their failing N a sample here): every N of the last change's
        p = os.path.join(work, "before-last.h5")
        shutil.copy(base_path, p)
        run_helper(p, trace + "-before-last", 0, OPS[:-1], leaks=False)
        every_from = len(parse_trace(trace + "-before-last")) + 1
    elif every_fail or (fx == "default.h5" and OPS is ATTR_OPS):
        every_from = 1
    else:
        every_from = None
    for n in fail_picks(nio, rng, every_from):
        p = os.path.join(work, "fail.h5")
        shutil.copy(base_path, p)
        run_helper(p, "-", n, OPS)
        st = state_of(p, objs)
        err = fits_history(st, h) if objs else tree_fits(st, states)
        checked += 1
        if err:
            T.fail("%s: write %d failing: %s" % (fx, n, err))
            return checked
    print("%s: %d writes/syncs traced, %d crash states checked (%.1f s)" % (fx, len(ops), checked,
                                                                     time.monotonic() - t0), flush=True)
    return checked


def moved_down(work, fx, ops, grew, what):
    """FILE's size before ops, before their last (the compact) and after:
    the changes must have grown it by grew bytes and the compact brought
    it back near where it began."""
    p = os.path.join(work, "md.h5")
    sizes = [os.path.getsize(os.path.join(work, "fx", fx))]
    for upto in (ops[:-1], ops):
        shutil.copy(os.path.join(work, "fx", fx), p)
        run_helper(p, "-", 0, upto, leaks=upto is ops)
        sizes.append(os.path.getsize(p))
    before, kept, after = sizes
    print("%s %s move down: FILE %d bytes, %d before the compact, %d after" % (fx, what, before, kept, after))
    if kept < before + grew or after > before + 65536:
        T.fail("%s %s move down: FILE %d bytes before the changes, %d before the compact, %d after: "
               "nothing moved down" % (fx, what, before, kept, after))


def move_down_groups(work, rng):
    """MOVE_DOWN_OPS enumerated as the rest, on both files; the compact
    must have moved something (FILE ends far below the large dataset's
    end) and the crash states of its commit are among those checked:
    every failing N of the compact's writes (a sample of the changes'
    before it, which the other cases make)."""
    total = 0
    for fx in ("default.h5", "latest.h5"):
        moved_down(work, fx, MOVE_DOWN_OPS, 800000, "group storage")
        total += run_case(work, fx, rng, MOVE_DOWN_OPS, None, every_fail="last")
    return total


def move_down_attrs(work, rng):
    """The same for a dense attribute store and for string values'
    collections."""
    moved_down(work, "latest.h5", MOVE_DOWN_ATTR_OPS, 800000, "dense attribute store")
    total = run_case(work, "latest.h5", rng, MOVE_DOWN_ATTR_OPS, MF.OBJS, MOVE_DOWN_ATTR_STATES, every_fail="last")
    for fx in ("default.h5", "latest.h5"):
        moved_down(work, fx, MOVE_DOWN_COLL_OPS, 190000, "string values")
        total += run_case(work, fx, rng, MOVE_DOWN_COLL_OPS, MF.OBJS, MOVE_DOWN_COLL_STATES, every_fail="last")
    return total


def part_attrs(work, rng):
    """Attribute changes: in compact and dense storage, batches, shrinking."""
    total = 0
    for fx in ("default.h5", "latest.h5"):
        total += run_case(work, fx, rng)
    total += run_case(work, "latest.h5", rng, DENSE_ATTR_OPS)
    total += run_case(work, "latest.h5", rng, BATCH_OPS, MF.OBJS, BATCH_STATES)
    total += run_case(work, "latest.h5", rng, SHRINK_OPS)
    return total


def stab_root(path, group):
    """The address of a symbol-table group's B-tree root (its version 1
    object header's Symbol Table message, type 0x11)."""
    with h5py.File(path, "r") as f:
        addr = h5py.h5o.get_info(f[group].id).addr
    b = open(path, "rb").read()
    nmsgs = int.from_bytes(b[addr + 2:addr + 4], "little")
    p, end = addr + 16, addr + 16 + int.from_bytes(b[addr + 8:addr + 12], "little")
    for _ in range(nmsgs):
        if p + 8 > end:
            break
        t, size = int.from_bytes(b[p:p + 2], "little"), int.from_bytes(b[p + 2:p + 4], "little")
        if t == 0x11:
            return int.from_bytes(b[p + 8:p + 16], "little")
        p += 8 + size
    raise AssertionError("%s: no Symbol Table message in its first chunk" % group)


def torn_stab(work, rng):
    """Torn pages (issue 65): a symbol-table group whose 544-byte B-tree
    root spans a 4 KiB page boundary, its first 48-64 bytes in the first
    page, takes 12 mkdirs (two symbol table nodes); every write of the
    trace that spans a page boundary lands with only its first page, or
    only the rest, after every write before it: h5py must open the group
    and list links some state has (the root rewritten in place had left
    "ring type mismatch")."""
    path = os.path.join(work, "torn.h5")
    pad = 0
    for _ in range(8):
        with h5py.File(path, "w") as f:
            if pad:     # (in a continuation chunk of /'s header, before /g)
                f.attrs["pad"] = np.zeros(pad, "u1")
            g = f.create_group("g")
            for i in range(3):
                g.create_group("k%d" % i)
        r = stab_root(path, "/g")
        # (its first 48 bytes in the first page: header, key, child, key)
        if 4096 - 64 <= r % 4096 <= 4096 - 48:
            break
        pad = max(8, pad + (4096 - 56 - r % 4096) % 4096)
    else:
        T.fail("torn pages: no padding puts /g's B-tree root across a page")
        return 0
    base = open(path, "rb").read()
    ops = ["mkdir\t/g\tm%02d" % i for i in range(12)]
    states = []
    for k in range(len(ops) + 1):
        p = os.path.join(work, "state.h5")
        shutil.copy(path, p)
        run_helper(p, "-", 0, ops[:k], leaks=False)
        states.append(state_of(p, None))
    trace = os.path.join(work, "trace")
    traced_path = os.path.join(work, "traced.h5")
    shutil.copy(path, traced_path)
    run_helper(traced_path, trace, 0, ops)
    tr = parse_trace(trace)
    tmp = os.path.join(work, "img.h5")
    img = bytearray(base)
    checked = torn_writes = 0
    for op in tr:
        if op[0] == "W" and op[1] // 4096 != (op[1] + len(op[2]) - 1) // 4096:
            cut = (op[1] // 4096 + 1) * 4096 - op[1]
            torn_writes += 1
            for part in (("W", op[1], op[2][:cut]), ("W", op[1] + cut, op[2][cut:])):
                t = bytearray(img)
                apply(t, part)
                with open(tmp, "wb") as fh:
                    fh.write(t)
                err = tree_fits(state_of(tmp, None), states)
                checked += 1
                if err:
                    T.fail("torn pages: /g's root at 0x%x, a write of %d bytes at 0x%x torn at its page: %s" % (
                        r, len(op[2]), op[1], err))
                    return checked
        apply(img, op)
    print("torn pages: /g's root at 0x%x; %d writes span a page, %d torn images checked" % (
        r, torn_writes, checked), flush=True)
    return checked


def part_links(work, rng):
    """Groups and links: compact, symbol-table and dense storage, moves,
    shrinking, space reused."""
    total = run_case(work, "latest.h5", rng, LINK_OPS, None)
    total += run_case(work, "latest.h5", rng, MOVE_OPS, None, MOVE_STATES)
    total += run_case(work, "default.h5", rng, STAB_OPS, None)
    total += run_case(work, "default.h5", rng, MOVE_OPS, None, MOVE_STATES)
    total += run_case(work, "latest.h5", rng, DENSE_LINK_OPS, None)
    total += run_case(work, "latest.h5", rng, LINK_SHRINK_OPS, None)
    total += run_case(work, "latest.h5", rng, REUSE_DENSE_OPS, None)
    total += run_case(work, "default.h5", rng, REUSE_STAB_OPS, None)
    total += torn_stab(work, rng)
    return total


def part_lchange(work, rng):
    """Renames, links and unlinks of one group in one commit (the daemon's
    write-behind of them): each batch all or nothing, counts >= names."""
    COUNTS[0] = True
    try:
        total = run_case(work, "default.h5", rng, LCHANGE_OPS, None, every_fail="last")
        total += run_case(work, "latest.h5", rng, LCHANGE_OPS, None, every_fail="last")
        return total + run_case(work, "latest.h5", rng, LCHANGE_OPS_COMPACT, None, every_fail="last")
    finally:
        COUNTS[0] = False


def part_dsets(work, rng):
    """New datasets, the write-behind of new files, modification times."""
    total = run_case(work, "default.h5", rng, DSET_OPS, None)
    total += run_case(work, "latest.h5", rng, DSET_OPS, None)
    total += run_case(work, "default.h5", rng, NEWFILE_OPS, None)
    total += run_case(work, "latest.h5", rng, NEWFILE_OPS_LATEST, None)
    total += run_case(work, "latest.h5", rng, NEWFILE_OPS_DENSE, None)
    WITH_TIMES[0] = True
    try:
        total += run_case(work, "default.h5", rng, TIME_OPS, None)
        total += run_case(work, "latest.h5", rng, TIME_OPS_LATEST, None)
    finally:
        WITH_TIMES[0] = False
    return total


# make check runs each part as a program of its own (test_attr_crash_PART.py),
# so that make -j2 runs them side by side; by hand, `test_attr_crash.py`
# runs them all, `test_attr_crash.py links dsets` those.
PARTS = {
    "attrs": part_attrs,
    "links": part_links,
    "lchange": part_lchange,
    "dsets": part_dsets,
    "movedown": move_down_groups,
    "movedown_attrs": move_down_attrs,
}


def main(parts=None):
    parts = parts or sys.argv[1:] or list(PARTS)
    bad = [p for p in parts if p not in PARTS]
    if bad:
        T.fail("no part %s (parts: %s)" % (", ".join(bad), ", ".join(PARTS)))
        return T.finish()
    if not os.path.exists(HELPER):
        T.skip("attr_trace not built")
    work = T.workdir("attr-crash")
    MF.make(os.path.join(work, "fx"))
    total = 0
    for part in parts:
        # each part its own random sequence: the same states by hand and
        # in make check
        t0 = time.monotonic()
        n = PARTS[part](work, random.Random("31 " + part))
        print("part %s: %d crash states checked (%.1f s)" % (part, n, time.monotonic() - t0), flush=True)
        total += n
    shutil.rmtree(work, ignore_errors=True)
    print("%d crash states checked in all" % total)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
