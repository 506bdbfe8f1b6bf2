#!/usr/bin/env python3
"""check_layers.py - the folders of src/ are layers (doc/DESIGN.md): fail
on an #include that runs up a layer, or that ties two folders of one rank
together (an include cycle between folders needs one of the two).

    tests/check_layers.py [SRCDIR]      (SRCDIR: the checkout, default ..)

Run by make check (Makefile.am TESTS). Exit 0 when every include of every
.c/.h under src/ goes to its own folder or to a lower layer, 1 with one
line per offending include otherwise, 99 on a folder that is in no layer
(add it to LAYERS below, where it belongs).

In the engine (src/h5core) only io/ may call open(2) and its kin. In the
daemon only kit/notify.c may call fuse_lowlevel_notify_*: one thread tells
the kernel what to drop (kit/notify.h; issued from a request's thread a
notification can deadlock against the kernel's locks).

Includes are resolved as the compiler resolves them: "x.h" first beside
the including file, then along the engine's include path (AM_CPPFLAGS:
one folder per engine layer, then src/common); <x.h> is the system's.
"""
import os
import re
import sys

# Rank of each folder of src/, lowest first; a file may include files of
# its own folder and of folders of a LOWER rank only. Folders of one rank
# (the programs) must not include each other. A folder not named here
# takes the rank of the nearest named folder above it.
LAYERS = [
    ("src/h5core", 0),          # h5core.h, h5core_test.h: the public API
    ("src/h5core/base", 1),
    ("src/h5core/io", 2),
    ("src/h5core/filter", 3),
    ("src/h5core/format", 4),
    ("src/h5core/file", 5),
    ("src/h5core/dataset", 6),
    ("src/h5core/write", 7),
    ("src/common", 8),          # shared by the daemon and the tools
    ("src/coll", 9),            # the collection library (daemon side)
    ("src/tools", 10),
    ("src/fuse", 10),
    # the daemon's folders, lowest first (doc/DESIGN.md "The daemon")
    ("src/fuse/kit", 11),       # what every root shares: root.h, ids
    ("src/fuse/state", 12),     # a single-file mount's state: nodes, generations, log
    ("src/fuse/live", 13),      # live files: refresh, read checks, ledgers, watcher
    ("src/fuse/node", 14),      # the node model of a single-file mount
    ("src/fuse/commit", 15),    # admit, order, schedule and make durable every write
    ("src/fuse/behind", 16),    # the write-behind kinds, each registered with commit/
    ("src/fuse/member", 17),    # the single-file (member) root's operations
    ("src/fuse/dispatch", 18),  # FUSE handlers over a table of roots
    ("src/fuse/collection", 19),  # folder and indexed roots over libh5coll
    ("src/fuse/mount", 20),     # main: options, startup
]
# The programs (src/tools, src/fuse and its folders) do not include each
# other: what they share lives in src/common or below.
PROGRAMS = ["src/tools", "src/fuse"]
RANK = dict(LAYERS)
# the compiler's search order for "x.h" after the including file's folder
SEARCH = ["src/h5core"] + [d for d, r in LAYERS if d.startswith("src/h5core/")] + ["src/common"]
# ... and src/coll, on the include path of the programs that link libh5coll
SEARCH += ["src/coll"]
# ... and the daemon's folders, on the daemon's include path (FUSE_CPPFLAGS)
FUSE_SEARCH = [d for d, r in LAYERS if d.startswith("src/fuse/")]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# The engine opens files only in io/ (the byte sources and beneath.c, which
# keeps names inside FILE's tree): a call of these elsewhere in src/h5core
# is a layer fault too (issue 54).
OPEN_CALL = re.compile(r'(?<![\w.>])(open|openat|openat2|opendir|fopen|creat)\s*\(')
# The daemon's kernel notifications go through kit/notify.c's one thread
# (issue 71 item 6): a call elsewhere in src/fuse is a fault too.
NOTIFY_CALL = re.compile(r'(?<![\w.>])(fuse_lowlevel_notify_\w+)\s*\(')
NOTIFY_HOME = "src/fuse/kit/notify.c"
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.S)


def folder_rank(folder):
    f = folder
    while f and f not in RANK:
        f = os.path.dirname(f)
    return (f, RANK[f]) if f else (None, None)


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    files = []
    for d, _, names in os.walk(os.path.join(top, "src")):
        for n in names:
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(d, n), top))
    present = set(files)
    bad = []
    for f in sorted(files):
        folder = os.path.dirname(f)
        layer, rank = folder_rank(folder)
        if layer is None:
            print("check_layers: %s: folder %s is in no layer (tests/check_layers.py LAYERS)" % (f, folder))
            return 99
        with open(os.path.join(top, f), encoding="utf-8", errors="replace") as fp:
            text = fp.read()
        for m in INCLUDE.finditer(text):
            name = m.group(1)
            target = None
            search = SEARCH + (FUSE_SEARCH if f.startswith("src/fuse/") else [])
            for d in [folder] + search:
                cand = os.path.normpath(os.path.join(d, name))
                if cand in present:
                    target = cand
                    break
            if target is None:
                continue        # config.h and the like: generated, not ours
            tlayer, trank = folder_rank(os.path.dirname(target))
            line = text.count("\n", 0, m.start()) + 1
            prog = [p for p in PROGRAMS if layer == p or layer.startswith(p + "/")]
            tprog = [p for p in PROGRAMS if tlayer == p or tlayer.startswith(p + "/")]
            if prog and tprog and prog != tprog:
                bad.append("%s:%d: includes %s: across programs %s and %s" % (f, line, target, prog[0], tprog[0]))
            elif trank > rank:
                bad.append("%s:%d: includes %s: up from %s to %s" % (f, line, target, layer, tlayer))
            elif trank == rank and tlayer != layer:
                bad.append("%s:%d: includes %s: across %s and %s (one rank)" % (f, line, target, layer, tlayer))
        if f.startswith("src/h5core/") and not f.startswith("src/h5core/io/"):
            code = COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
            for m in OPEN_CALL.finditer(code):
                line = code.count("\n", 0, m.start()) + 1
                bad.append("%s:%d: calls %s(): the engine opens files in src/h5core/io only" % (f, line, m.group(1)))
        if f.startswith("src/fuse/") and f != NOTIFY_HOME:
            code = COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
            for m in NOTIFY_CALL.finditer(code):
                line = code.count("\n", 0, m.start()) + 1
                bad.append("%s:%d: calls %s(): kernel notifications go through %s's thread only"
                           % (f, line, m.group(1), NOTIFY_HOME))
    for b in bad:
        print("check_layers: " + b)
    if bad:
        print("check_layers: %d fault(s) against the layers of doc/DESIGN.md" % len(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
