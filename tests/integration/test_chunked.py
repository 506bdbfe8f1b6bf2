#!/usr/bin/python3
"""Chunked datasets through a real mount, byte for byte (issue "Chunked
datasets: every chunk index, every common filter").

make_chunked.py writes the fixtures: every chunk index (v1 B-tree incl.
multi-level, single chunk, implicit, fixed array incl. paged, extensible
array incl. super blocks and 140,000 chunks, v2 B-tree) x {none, deflate,
shuffle+deflate, fletcher32} x {edge chunks, unwritten chunks with a
non-zero fill value} x ranks 1-32; the extra filters (lzf, lz4, bzip2,
blosc with every compressor and shuffle mode, szip, scaleoffset, nbit);
partial edge chunks stored unfiltered; zstd and bitshuffle chunks encoded
by the generator; zfp (written through the H5Z-ZFP plugin in five modes)
and lzo (written by PyTables); unknown filters.

Each file is mounted and compared with what h5py reads (the file's own
type as memory type): names, sizes, every byte, 200 random pread windows
per dataset on a cold cache, and a few `dd bs=4k skip=N count=1` reads.
Datasets h5fs must refuse (a filter it does not implement, or one this
build was configured without) must answer EIO -- never bytes -- and log
one line naming the dataset and the filter.  The daemon must survive
everything; concurrent readers of filtered chunks get the same bytes."""
import errno
import os
import random
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.CHUNKED_STRICT = True          # every dataset here is chunked
import h5py  # noqa: E402
import make_chunked  # noqa: E402

WINDOWS = 200        # random pread windows per dataset
DD_READS = 3         # dd reads per dataset of more than 4 KiB
WATCHDOG = 90        # seconds per mount
# filters that need a library configure may not have found (config.h)
OPTIONAL_LIBS = {4: "HAVE_AEC", 305: "HAVE_LZO", 307: "HAVE_BZ2", 32001: "HAVE_BLOSC", 32004: "HAVE_LZ4",
                 32013: "HAVE_ZFP", 32015: "HAVE_ZSTD"}

fails = []


def build_config():
    """The HAVE_* macros of this build, or None when config.h is not found."""
    for d in (T.BUILDDIR, os.path.dirname(T.H5FS)):
        p = os.path.join(d, "config.h")
        if os.path.exists(p):
            with open(p) as fh:
                return {ln.split()[1] for ln in fh if ln.startswith("#define HAVE_")}
    return None


def missing_libs(ds, have):
    """Filters of ds this build cannot decode: [(filter id, name)]."""
    if have is None:
        return []
    pl = ds.id.get_create_plist()
    out = []
    for i in range(pl.get_nfilters()):
        fid, flags, cd, name = pl.get_filter(i)
        if fid in OPTIONAL_LIBS and OPTIONAL_LIBS[fid] not in have:
            out.append(fid)
        if fid == 32008 and len(cd) > 4 and {2: "HAVE_LZ4", 3: "HAVE_ZSTD"}.get(cd[4], "x") not in have \
                and cd[4] in (2, 3):
            out.append(fid)
    return out


def dd_reads(mnt, expected, rep, rng):
    for p in sorted(expected):
        e = expected[p]
        if e.kind != "file" or not e.data or len(e.data) <= 4096:
            continue
        nblk = (len(e.data) + 4095) // 4096
        for n in sorted({0, nblk - 1, rng.randrange(nblk)})[:DD_READS]:
            try:
                r = subprocess.run(["dd", "if=" + mnt + p, "bs=4k", "skip=%d" % n, "count=1", "status=none"],
                                   capture_output=True, timeout=30)
            except subprocess.TimeoutExpired:
                rep.bad("%s: dd skip=%d timed out" % (p, n))
                return
            want = e.data[n * 4096:(n + 1) * 4096]
            if r.returncode != 0 or r.stdout != want:
                rep.bad("%s: dd bs=4k skip=%d count=1: status %d, %d bytes, %s" % (
                    p, n, r.returncode, len(r.stdout),
                    "first difference at byte %d" % (n * 4096 + T.first_diff(r.stdout, want))
                    if r.returncode == 0 else r.stderr.decode("utf-8", "replace").strip()), chunked=True)


def concurrent_reads(mnt, expected, rep):
    """Four threads read every dataset, in different orders."""
    files = [(p, e.data) for p, e in sorted(expected.items()) if e.kind == "file" and e.data]
    errs = []

    def worker(k):
        order = files[k:] + files[:k]
        for p, data in order[::-1] if k % 2 else order:
            try:
                with open(mnt + p, "rb") as fh:
                    if fh.read() != data:
                        errs.append("%s: differs under concurrent reads" % p)
            except OSError as ex:
                errs.append("%s: %s under concurrent reads" % (p, ex))

    ts = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    for e in errs[:10]:
        rep.bad(e, chunked=True)


def check_eio(mnt, p, e, rep, data=None):
    """Reads of p fail with EIO, never give other bytes: with data (the
    dataset's bytes, when h5py could decode them) a read may also give
    correct bytes, from chunks the filter was skipped for (an optional
    filter that did not compress them: the filter mask bit).  Returns how
    many probes got EIO."""
    try:
        st = os.stat(mnt + p)
    except OSError as ex:
        rep.bad("%s: stat: %s (a dataset with an unknown filter is still listed)" % (p, ex))
        return 0
    if e.size is not None and st.st_size != e.size:
        rep.bad("%s: st_size %d, expected %d" % (p, st.st_size, e.size))
    size = st.st_size
    rng = random.Random(p)
    probes = [(0, size)] + [(rng.randrange(size), rng.randrange(1, 5000)) for _ in range(8)]
    neio = 0
    try:
        fd = os.open(mnt + p, os.O_RDONLY)
    except OSError as ex:
        rep.bad("%s: open: %s" % (p, ex))
        return 0
    try:
        for off, ln in probes:
            try:
                got = os.pread(fd, ln, off)
            except OSError as ex:
                if ex.errno in T.DEAD:
                    raise
                if ex.errno != errno.EIO:
                    rep.bad("%s: pread(%d, %d): %s, expected EIO" % (p, off, ln, ex))
                    return neio
                neio += 1
                continue
            # a short read is what the kernel makes of pages read before
            # one that failed
            if data is None or not got or got != data[off:off + len(got)]:
                rep.bad("%s: pread(%d, %d) returned %d %s bytes, expected EIO" % (
                    p, off, ln, len(got), "wrong" if data is not None else "(undecodable)"))
                return neio
    finally:
        os.close(fd)
    return neio


def check_windows(mnt, p, size, wins, rep):
    """A dataset too large to read whole: st_size and windows of known bytes
    (written chunks, and the fill value around and far from them)."""
    try:
        st = os.stat(mnt + p)
    except OSError as ex:
        rep.bad("%s: stat: %s" % (p, ex), chunked=True)
        return
    if st.st_size != size:
        rep.bad("%s: st_size %d, expected %d" % (p, st.st_size, size), chunked=True)
        return
    with open(mnt + p, "rb") as fh:
        for off, want in wins:
            try:
                got = os.pread(fh.fileno(), len(want), off)
            except OSError as ex:
                if ex.errno in T.DEAD:
                    raise
                rep.bad("%s: pread(%d, %d): %s" % (p, off, len(want), ex), chunked=True)
                continue
            if got != want:
                rep.bad("%s: pread(%d, %d) differs at byte %d" % (p, off, len(want), off + T.first_diff(got, want)),
                        chunked=True)
    off, want = wins[-1]
    n = off // 4096
    r = subprocess.run(["dd", "if=" + mnt + p, "bs=4k", "skip=%d" % n, "count=1", "status=none"],
                       capture_output=True, timeout=30)
    k = off - n * 4096
    if r.returncode != 0 or r.stdout[k:k + len(want)] != want[:4096 - k]:
        rep.bad("%s: dd bs=4k skip=%d count=1: status %d, %d bytes" % (p, n, r.returncode, len(r.stdout)),
                chunked=True)


def run_file(fx, wd, name, what, have, opts=(), concurrent=False, seed=1):
    path = os.path.join(wd, name)
    label = name + (" " + " ".join(opts) if opts else "")
    rep = T.Report(label)
    t0 = time.monotonic()
    expected, root_addr = T.h5py_tree(path, cwd=wd)
    eio = {}                  # mount path -> text the log line must hold
    eio_data = {}             # for filters this build lacks: what h5py read
    with h5py.File(path, "r") as f:
        for p, e in expected.items():
            if e.kind != "file":
                continue
            known = fx.known.get((name, p))
            if known is not None:       # h5py cannot decode it: the encoder's input
                e.data, e.size, e.why = known, len(known), None
            if (name, p) in fx.windows:
                e.why = "windows checked"
                continue
            if (name, p) in fx.eio:
                eio[p] = fx.eio[(name, p)]
            else:
                miss = missing_libs(f[p], have)
                if miss:
                    eio[p] = "%d" % miss[0]
                    eio_data[p] = e.data
            if p in eio:
                e.data, e.why = None, "expected EIO"
            elif e.data is None:
                rep.bad("%s: no expected bytes (%s)" % (p, e.why))
    for p in fx.known:
        if p[0] == name and p[1] not in expected:
            rep.bad("%s: missing in h5py's tree" % p[1])
    nds = sum(1 for e in expected.values() if e.kind == "file")
    mnt = os.path.join(wd, "mnt")
    m = T.Mount(path, mnt, opts=("-o", "ro") + tuple(opts))
    neio = {}                 # mount path -> reads that failed with EIO
    try:
        m.start()
    except T.MountError as ex:
        rep.bad("mount failed: %s" % ex)
        rep.show()
        fails.append(label)
        return
    try:
        with m.watchdog(WATCHDOG):
            T.compare(expected, root_addr, mnt, rep, windows=WINDOWS * len(expected), seed=seed)
            if m.alive():
                dd_reads(mnt, expected, rep, random.Random(seed))
            for p in sorted(eio):
                if m.alive():
                    neio[p] = check_eio(mnt, p, expected[p], rep, eio_data.get(p))
                    if not neio[p] and p not in eio_data:
                        rep.bad("%s: no read failed" % p)
            for (fn, p), (size, wins) in sorted(fx.windows.items()):
                if fn == name and m.alive():
                    check_windows(mnt, p, size, wins, rep)
                    if not any(p in x for x in rep.chunked_fail):
                        rep.chunked_ok += 1
            if concurrent and m.alive():
                concurrent_reads(mnt, expected, rep)
        if m.hung:
            rep.bad("daemon hung (killed after %d s)" % WATCHDOG)
        elif not m.alive():
            rep.bad("daemon died (status %s): %s" % (m.proc.returncode, m.output()[-2000:]))
    finally:
        m.stop()
    log = [ln for ln in m.output().splitlines() if ln.strip()]
    for p, needle in sorted(eio.items()):
        if not neio.get(p) and p in eio_data:
            rep.notes.append("%s: every chunk probed had filter %s skipped" % (p, needle))
            continue
        hits = [ln for ln in log if p + " " in ln + " " and "EIO" in ln and needle in ln]
        if not hits:
            rep.bad("%s: no EIO log line naming the dataset and filter %s: %r" % (
                p, needle, [ln for ln in log if p in ln][:3] or log[-3:]))
        else:
            rep.notes.append("%s: EIO as expected: %s" % (p, hits[0][:160]))
    for ln in log:
        if "EIO" in ln and not any(p + " " in ln + " " for p in eio):
            rep.bad("unexpected log line: %s" % ln[:300])
    if m.returncode != 0:
        rep.bad("exit status %s after unmount" % m.returncode)
    ok = not rep.failed()
    print("%-4s %-28s %-62s %3d datasets, %3d byte-compared, %d EIO as expected (%.1f s)" % (
        "ok" if ok else "FAIL", label, what[:62], nds, rep.chunked_ok + rep.compared, len(eio),
        time.monotonic() - t0))
    if not ok:
        rep.notes = [n for n in rep.notes if "EIO as expected" not in n]
        rep.show(limit=12)
        fails.append(label)
        for ln in log[-10:]:
            print("      log: " + ln)
    elif rep.chunked_ok + rep.compared + len(eio) != nds:
        print("FAIL %s: %d datasets, %d compared, %d EIO" % (label, nds, rep.chunked_ok + rep.compared, len(eio)))
        fails.append(label)


def main():
    t0 = time.monotonic()
    wd = T.workdir("chunked")
    fx = make_chunked.make(wd)
    print("fixtures written in %.1f s" % (time.monotonic() - t0))
    for n in fx.notes:
        print("note: " + n)
    for n in fx.problems:
        print("FAIL fixture: " + n)
        fails.append(n)
    have = build_config()
    if have is None:
        print("note: config.h not found: optional filters are expected to work")
    else:
        for fid, macro in sorted(OPTIONAL_LIBS.items()):
            if macro not in have:
                print("note: built without %s: filter %d is expected to answer EIO" % (macro, fid))
    for i, (name, what) in enumerate(fx.files):
        run_file(fx, wd, name, what, have, concurrent=name in ("idx_btree2.h5", "filters.h5"), seed=i + 1)
    # a tiny cache (chunks evicted while in use) and a single thread
    run_file(fx, wd, "filters.h5", "again with a 1 MiB cache, single-threaded", have,
             opts=("-o", "cache_size=1", "-s"), seed=99)
    print("test_chunked: %d files, %.0f s, %s" % (len(fx.files) + 1, time.monotonic() - t0,
                                                  "FAILED: " + " ".join(fails) if fails else "all ok"))
    if not fails:
        shutil.rmtree(wd, ignore_errors=True)
    else:
        print("fixtures kept in %s" % wd)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
