#!/usr/bin/python3
"""h5fs-ls --refs --concat against a Python combiner (issue 45). Run by hand.

    /usr/bin/python3 bench/concat_bench.py [--h5fs-ls ./h5fs-ls] [--files 1000]
        [--big 10000] [--chunks 50] [--repeat 5] [--dir /tmp/concat-bench]
        [--before OLD-h5fs-ls] [--no-floor] [--cold]

--files HDF5 files (h5py) of one dataset "frames" (--chunks, 32, 32)
uint16, one frame a chunk (2 KiB of noise each, gzip: every chunk
referenced, none inlined), in one folder. The time to one kerchunk
document of all of them concatenated along axis 0:
  - py: the combiner kerchunk's approach comes down to without its
    per-chunk Python overhead: per file h5py.File, get_num_chunks and
    get_chunk_info(i) for each chunk, the keys renumbered along axis 0,
    then json.dump of the whole dict;
  - noindex: h5fs-ls --refs --concat=0 --noindex DIR > file (every file
    opened);
  - index: the same on the collection's index (--index FILE, filled by a
    first run outside the timing): no member is opened.
  - before (--before OLD): OLD h5fs-ls --noindex, the same way (a
    change's before and after under the same load);
  - floor: bench/concat_floor.c (built with cc), one thread listing DIR
    and per file openat, fstat, one pread of 8 KiB, close: the system
    calls a member costs at least, with a process start; and the start
    of h5fs-ls alone (--version: its libraries loaded).
They alternate in each of --repeat rounds (the machine is shared:
alternating spreads its load over all of them); warm (the files in the
page cache after the first round), or with --cold each run after DIR's
files are dropped from the page cache (posix_fadvise DONTNEED on each:
only these files, not the machine's whole cache). h5fs-ls is started with
posix_spawn and reaped with wait4 (its CPU from the rusage): its wall
time is its own process's, start included, as a user runs it (until
2026-11-26 it was run under /usr/bin/time, whose own start, 5-15 ms
here, was counted in h5fs-ls's wall time). Both documents are checked
equal (keys and [url, offset, length]). Then --big files (default
10,000, 0: none): h5fs-ls --noindex and indexed, and py once. Peak RSS
of h5fs-ls (/usr/bin/time's %M, in untimed runs: a posix_spawn'd
child's ru_maxrss counts the Python pages it shared until exec) at both
sizes shows memory flat in the number of files.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np


def make(d, nfiles, nchunks):
    stamp = os.path.join(d, ".made-%d-%d" % (nfiles, nchunks))
    if os.path.exists(stamp):
        return
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(1)
    base = rng.integers(0, 65535, (nchunks, 32, 32), dtype="u2")
    for i in range(nfiles):
        with h5py.File(os.path.join(d, "f%05d.h5" % i), "w") as f:
            f.create_dataset("frames", data=base ^ np.uint16(i & 0xffff), chunks=(1, 32, 32), compression="gzip",
                             compression_opts=1)
    open(stamp, "w").close()


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def py_combine(d, out):
    """Per file: h5py.File, get_chunk_info per chunk; keys along axis 0.
    Returns (seconds, CPU seconds)."""
    if COLD:
        drop_cache(COLD)
    t = time.monotonic()
    c = cpu_self()
    refs = {}
    base = 0
    zarray = None
    for name in sorted(n for n in os.listdir(d) if n.endswith(".h5")):
        p = os.path.join(os.path.realpath(d), name)
        with h5py.File(p, "r") as f:
            ds = f["frames"]
            dsid = ds.id
            ch = ds.chunks
            for i in range(dsid.get_num_chunks()):
                ci = dsid.get_chunk_info(i)
                idx = [o // c for o, c in zip(ci.chunk_offset, ch)]
                idx[0] += base
                refs["frames/" + ".".join(map(str, idx))] = [p, ci.byte_offset, ci.size]
            base += ds.shape[0] // ch[0]
            zarray = (ds.dtype.str, ch)
    refs["frames/.zarray"] = json.dumps({"chunks": zarray[1], "dtype": zarray[0], "shape_rows": base})
    with open(out, "w") as fh:
        json.dump({"version": 1, "refs": refs}, fh)
    return time.monotonic() - t, cpu_self() - c


def peak_rss(argv, out):
    """argv's peak RSS in KiB, by /usr/bin/time (untimed: a posix_spawn'd
    child's ru_maxrss counts this Python's pages it shared until exec)."""
    with open(out, "wb") as fh:
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, stdout=fh, stderr=subprocess.PIPE, check=True)
    return int(p.stderr.decode().strip().splitlines()[-1])


COLD = None     # DIR whose files are dropped from the page cache before each run (--cold)


def drop_cache(d):
    for n in os.listdir(d):
        fd = os.open(os.path.join(d, n), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def spawn(argv, out):
    """argv with stdout to file out, stderr to a scratch file: (wall s,
    CPU s) of that process alone (posix_spawn, wait4)."""
    err = out + ".err"
    if COLD:
        drop_cache(COLD)
    with open(out, "wb") as fh, open(err, "wb") as eh:
        t = time.monotonic()
        pid = os.posix_spawn(argv[0], argv, os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, fh.fileno(), 1),
                                           (os.POSIX_SPAWN_DUP2, eh.fileno(), 2)])
        _, status, ru = os.wait4(pid, 0)
        el = time.monotonic() - t
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise RuntimeError("%s: exit %d: %s" % (argv[0], rc, open(err, errors="replace").read()[-500:]))
    return el, ru.ru_utime + ru.ru_stime


def h5fs(ls, d, out, *opts):
    """(wall s, CPU s) of h5fs-ls --refs --concat=0 opts d."""
    return spawn([ls, "--refs", "--concat=0", *opts, d], out)


def h5fs_rss(ls, d, out, *opts):
    return peak_rss([ls, "--refs", "--concat=0", *opts, d], out)


def check(py_out, ls_out):
    a = json.load(open(py_out))["refs"]
    b = json.load(open(ls_out))["refs"]
    ka = {k: v for k, v in a.items() if not k.endswith(".zarray")}
    kb = {k: v for k, v in b.items() if "/." not in k and not k.startswith(".")}
    if ka != kb:
        diff = sorted(set(ka) ^ set(kb))[:5] or [k for k in ka if ka[k] != kb.get(k)][:5]
        raise RuntimeError("the documents differ: %s" % diff)
    return len(ka)


def rng(v):
    return "%.3f s (%.3f-%.3f, median %.3f)" % (min(v), min(v), max(v), statistics.median(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs-ls", default="./h5fs-ls")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--big", type=int, default=10000)
    ap.add_argument("--chunks", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "h5fs-concat-bench"))
    ap.add_argument("--before", help="another h5fs-ls (a change's before), --noindex, alternated")
    ap.add_argument("--no-floor", action="store_true", help="no concat_floor (no cc)")
    ap.add_argument("--cold", action="store_true", help="DIR's files dropped from the page cache before each run")
    a = ap.parse_args()
    global COLD
    ls = os.path.abspath(a.h5fs_ls)
    before = os.path.abspath(a.before) if a.before else None
    floor = None
    if not a.no_floor:
        os.makedirs(a.dir, exist_ok=True)
        floor = os.path.join(a.dir, "concat_floor")
        subprocess.run(["cc", "-O2", "-o", floor, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                "concat_floor.c")], check=True)
    print("load average %s" % open("/proc/loadavg").read().split()[:3])
    for n in [a.files] + ([a.big] if a.big else []):
        d = os.path.join(a.dir, "n%d" % n)
        t = time.monotonic()
        make(d, n, a.chunks)
        print("%d files x %d chunks in %s (made in %.0f s)" % (n, a.chunks, d, time.monotonic() - t))
        ix = os.path.join(a.dir, "index-%d.sqlite" % n)
        for f in (ix, ix + "-wal", ix + "-shm"):
            if os.path.exists(f):
                os.unlink(f)
        py_out, ls_out = os.path.join(a.dir, "py.json"), os.path.join(a.dir, "ls.json")
        COLD = None
        h5fs(ls, d, ls_out, "--index", ix)        # fills the index, warms the page cache
        COLD = d if a.cold else None
        rounds = a.repeat if n == a.files else 1
        py_t, no_t, ix_t, no_rss, ix_rss, py_c, no_c, ix_c = [], [], [], [], [], [], [], []
        be_t, be_c, be_rss, fl_t, fl_c, st_t = [], [], [], [], [], []
        for r in range(rounds):
            if before:
                el, cpu = h5fs(before, d, ls_out, "--noindex")
                be_t.append(el)
                be_c.append(cpu)
            if floor:
                el, cpu = spawn([floor, d], ls_out)
                fl_t.append(el)
                fl_c.append(cpu)
                st_t.append(spawn([ls, "--version"], ls_out)[0])
            el, cpu = py_combine(d, py_out)
            py_t.append(el)
            py_c.append(cpu)
            el, cpu = h5fs(ls, d, ls_out, "--noindex")
            no_t.append(el)
            no_c.append(cpu)
            if r == 0:
                nrefs = check(py_out, ls_out)
            el, cpu = h5fs(ls, d, ls_out, "--index", ix)
            ix_t.append(el)
            ix_c.append(cpu)
            if r == 0:
                check(py_out, ls_out)
        # peak RSS: twice each, untimed
        COLD = None
        for _ in range(2):
            no_rss.append(h5fs_rss(ls, d, ls_out, "--noindex"))
            ix_rss.append(h5fs_rss(ls, d, ls_out, "--index", ix))
            if before:
                be_rss.append(h5fs_rss(before, d, ls_out, "--noindex"))
        print("  %d references, %s, %d round(s)" % (nrefs, "cold (DIR's files dropped before each run)"
                                                   if a.cold else "warm", rounds))
        print("  py get_chunk_info combiner: %s; CPU %s" % (rng(py_t), rng(py_c)))
        if floor:
            print("  floor (concat_floor):      %s; CPU %s" % (rng(fl_t), rng(fl_c)))
            print("  h5fs-ls --version (start): %s" % rng(st_t))
            print("  %-26s wall best %.1fx, median %.1fx (h5fs-ls --noindex / floor)" % (
                "", min(no_t) / min(fl_t), statistics.median(no_t) / statistics.median(fl_t)))
        runs = [("h5fs-ls --noindex", no_t, no_c, no_rss), ("h5fs-ls, indexed", ix_t, ix_c, ix_rss)]
        if before:
            runs.append(("before: --noindex", be_t, be_c, be_rss))
        for name, t, c, m in runs:
            print("  %-26s %s; CPU %s; peak RSS %d-%d KiB" % (name + ":", rng(t), rng(c), min(m), max(m)))
            print("  %-26s wall best %.1fx, median %.1fx; CPU best %.1fx, median %.1fx" % (
                "", min(py_t) / min(t), statistics.median(py_t) / statistics.median(t),
                min(py_c) / min(c), statistics.median(py_c) / statistics.median(c)))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
