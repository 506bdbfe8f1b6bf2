#!/usr/bin/python3
"""Concurrency stress: mount the stress fixtures (stresslib.py) with
-o cache_size=1 (1 MiB, so decoded chunks and metadata are evicted all the
time), then 16 threads for H5FS_STRESS_SECONDS (default 60) each do random
operations on all mounts at once:

  - pread of a random window (1 byte .. 1 MiB, any alignment) of a random
    dataset, with the page cache of that file dropped first so the read
    reaches the daemon; every byte checked against h5py's;
  - whole-file reads of small datasets;
  - listing a random group, names checked against h5py's;
  - stat of a random entry, st_size checked;
  - with H5FS_STRESS_APPEND=1 (default) a third file, mounted read-write,
    has one writer thread per appendable dataset (stresslib.APPEND_SETS:
    filtered, unfiltered, and one that starts with no rows) appending rows
    with `>>`-style O_APPEND writes of random sizes and closes (fsync now
    and then), while the readers read those datasets too: every byte read
    must be the one written (or initial), and nothing that a finished
    close() committed may be missing.  After unmounting, h5py must read
    exactly the initial plus the committed rows.

Fails on any wrong byte or name, any error, a daemon that dies or hangs,
or any sanitizer report in the daemon's output (h5fs_testlib raises
SanitizerReport at unmount).  Run it against an ASan or TSan build with
H5FS_BIN=/path/to/h5fs.

Environment: H5FS_BIN (daemon), H5FS_STRESS_SECONDS (60),
H5FS_STRESS_THREADS (16), H5FS_STRESS_CACHE_MIB (1), H5FS_STRESS_SEED,
H5FS_STRESS_APPEND (1), H5FS_STRESS_APPEND_MIB (16: bytes per appendable
dataset at most).
Exit 77 (skip) without h5py or FUSE.
"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib as S  # noqa: E402

T = S.T
SECONDS = float(os.environ.get("H5FS_STRESS_SECONDS", "60"))
THREADS = int(os.environ.get("H5FS_STRESS_THREADS", "16"))
CACHE_MIB = os.environ.get("H5FS_STRESS_CACHE_MIB", "1")
SEED = int(os.environ.get("H5FS_STRESS_SEED", str(int(time.time()))))
APPEND = os.environ.get("H5FS_STRESS_APPEND", "1") == "1"
APPEND_BYTES = int(float(os.environ.get("H5FS_STRESS_APPEND_MIB", "16")) * (1 << 20))
MAX_FAILS = 20


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = {}
        self.bytes = 0
        self.fails = []

    def add(self, op, nbytes=0):
        with self.lock:
            self.ops[op] = self.ops.get(op, 0) + 1
            self.bytes += nbytes

    def fail(self, msg):
        with self.lock:
            self.fails.append(msg)
            return len(self.fails) >= MAX_FAILS


def window_len(rng):
    r = rng.random()
    if r < 0.4:
        return rng.randint(1, 4096)
    if r < 0.8:
        return rng.randint(4096, 131072)
    return rng.randint(131072, 1 << 20)


class Appends:
    """The read-write mount and what its writers have committed."""

    def __init__(self, mnt, sets):
        self.mnt = mnt
        self.sets = sets                      # path -> (final, rowsize, initial bytes)
        self.committed = {p: v[2] for p, v in sets.items()}
        self.paths = sorted(sets)


def writer(tid, app, path, stats, stop):
    """Append the rows of path in random batches through O_APPEND writes of
    random sizes; a batch counts as committed once close() returned."""
    rng = random.Random(SEED * 1000 + 500 + tid)
    final, rowsize, pos = app.sets[path]
    while not stop.is_set() and pos < len(final):
        end = min(len(final), pos + rowsize * rng.choice((1, 3, 17, 100, 500, 2000)))
        try:
            with open(app.mnt + path, "ab", buffering=0) as fh:
                q = pos
                while q < end:
                    q += fh.write(final[q:min(end, q + rng.randint(1, 70000))])
                if rng.random() < 0.2:
                    os.fsync(fh.fileno())
        except OSError as e:
            if stats.fail("%s%s: append of bytes %d..%d: %s" % (app.mnt, path, pos, end, e)) or e.errno in T.DEAD:
                stop.set()
            return
        stats.add("append", end - pos)
        pos = end
        app.committed[path] = pos


def read_appended(rng, app, stats, stop):
    path = rng.choice(app.paths)
    final, rowsize, _ = app.sets[path]
    c = app.committed[path]            # before the open: all of it must be seen
    fd = os.open(app.mnt + path, os.O_RDONLY)
    try:
        if rng.random() < 0.3:
            st = os.fstat(fd)
            if not c <= st.st_size <= len(final):
                if stats.fail("%s%s: st_size %d while %d bytes are committed (of %d)" % (
                        app.mnt, path, st.st_size, c, len(final))):
                    stop.set()
        if rng.random() < 0.9:
            S.drop_page_cache(fd)
        off = rng.randrange(0, c + 64 * rowsize)
        ln = window_len(rng)
        got = os.pread(fd, ln, off)
        want = final[off:off + len(got)]
        short = len(got) < min(ln, max(0, c - off))
        if got != want or short:
            if stats.fail("%s%s: pread(%d, %d) while %d bytes committed: %s" % (
                    app.mnt, path, ln, off, c,
                    "%d bytes only" % len(got) if got == want else
                    "first difference at byte %d" % (off + T.first_diff(got, want)))):
                stop.set()
        stats.add("pread-appending", len(got))
    finally:
        os.close(fd)


def worker(tid, mounts, stats, stop, app=None):
    rng = random.Random(SEED * 1000 + tid)
    while not stop.is_set():
        mnt, exp = rng.choice(mounts)
        r = rng.random()
        try:
            if app and rng.random() < 0.15:
                read_appended(rng, app, stats, stop)
            elif r < 0.6:
                p = rng.choice(exp.big if rng.random() < 0.85 else exp.small)
                data = exp.files[p]
                fd = os.open(mnt + p, os.O_RDONLY)
                try:
                    for _ in range(rng.randint(1, 4)):
                        if rng.random() < 0.9:
                            S.drop_page_cache(fd)
                        off = rng.randrange(0, len(data) + 64)
                        ln = window_len(rng)
                        got = os.pread(fd, ln, off)
                        want = data[off:off + ln]
                        if got != want:
                            i = T.first_diff(got, want)
                            if stats.fail("%s%s: pread(%d, %d): %d bytes, expected %d, first difference at byte %d"
                                          % (mnt, p, ln, off, len(got), len(want), off + i)):
                                stop.set()
                        stats.add("pread", len(got))
                finally:
                    os.close(fd)
            elif r < 0.75:
                p = rng.choice(exp.small)
                with open(mnt + p, "rb") as fh:
                    if rng.random() < 0.5:
                        S.drop_page_cache(fh.fileno())
                    got = fh.read()
                if got != exp.files[p]:
                    if stats.fail("%s%s: whole read differs at byte %d" % (mnt, p, T.first_diff(got, exp.files[p]))):
                        stop.set()
                stats.add("read", len(got))
            elif r < 0.9:
                d = rng.choice(exp.dirlist)
                got = set(os.listdir(mnt + d))
                if got != exp.dirs[d]:
                    if stats.fail("%s%s/: listing differs: missing %s, extra %s" % (
                            mnt, d, sorted(exp.dirs[d] - got)[:5], sorted(got - exp.dirs[d])[:5])):
                        stop.set()
                stats.add("listdir")
            else:
                p = rng.choice(exp.small if rng.random() < 0.5 else exp.big)
                st = os.stat(mnt + p)
                if st.st_size != len(exp.files[p]):
                    if stats.fail("%s%s: st_size %d, expected %d" % (mnt, p, st.st_size, len(exp.files[p]))):
                        stop.set()
                stats.add("stat")
        except OSError as e:
            if stats.fail("%s: %s" % (mnt, e)) or e.errno in T.DEAD:
                stop.set()


def check_appended(app, stats):
    """After unmounting: libhdf5 must read the initial plus exactly the
    committed rows of every appended dataset."""
    import h5py

    with h5py.File(am_file(app), "r") as f:
        for p in app.paths:
            final, rowsize, init = app.sets[p]
            c = app.committed[p]
            got, why = T.dataset_bytes(f[p])
            if got != final[:c]:
                stats.fail("h5py after unmount: %s holds %s bytes, %d expected (%d appended)%s" % (
                    p, "?" if got is None else len(got), c, c - init,
                    "" if got is None or len(got) != c else
                    ", first difference at byte %d" % T.first_diff(got, final[:c])))
            print("  %s: %d rows appended, %d bytes, h5py reads them back" % (p, (c - init) // rowsize, c - init))
    return not stats.fails


def am_file(app):
    return os.path.join(os.path.dirname(app.mnt), "stress_append.h5")


def main():
    T.require_h5py()
    T.require_fuse()
    wd = T.workdir("stress")
    t0 = time.monotonic()
    names = S.make(wd)
    mounts, ms = [], []
    stats = Stats()
    ok = False
    app = am = None
    try:
        if APPEND:
            an, sets = S.make_append(wd, APPEND_BYTES)
            amnt = os.path.join(wd, "mnt_append")
            am = T.Mount(os.path.join(wd, an), amnt, opts=("-o", "cache_size=%s" % CACHE_MIB), cwd=wd)
            am.start()
            app = Appends(amnt, sets)
        for n in names:
            exp = S.Expected(os.path.join(wd, n))
            mnt = os.path.join(wd, "mnt_" + n[:-3])
            m = T.Mount(os.path.join(wd, n), mnt, opts=("-o", "ro,cache_size=%s" % CACHE_MIB), cwd=wd)
            m.start()
            ms.append(m)
            mounts.append((mnt, exp))
        print("stress: %d mounts (cache_size=%s MiB), %d threads%s, %.0f s, seed %d, daemon %s; setup %.1f s" % (
            len(ms) + bool(am), CACHE_MIB, THREADS,
            " + %d appending" % len(app.paths) if app else "", SECONDS, SEED, T.H5FS, time.monotonic() - t0))
        before = [S.proc_status(m.proc.pid) for m in ms]
        io0 = [S.daemon_io(m.proc.pid) for m in ms]
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(i, mounts, stats, stop, app), daemon=True)
                   for i in range(THREADS)]
        if app:
            threads += [threading.Thread(target=writer, args=(i, app, p, stats, stop), daemon=True)
                        for i, p in enumerate(app.paths)]
        t1 = time.monotonic()
        # a hung daemon blocks the workers in the kernel: kill it then
        with ms[0].watchdog(SECONDS + 120), ms[-1].watchdog(SECONDS + 120):
            for t in threads:
                t.start()
            stop.wait(SECONDS)
            stop.set()
            for t in threads:
                t.join(60)
        el = time.monotonic() - t1
        if any(t.is_alive() for t in threads):
            stats.fail("worker threads still blocked 60 s after the end: daemon hung")
        for m, b, i0 in zip(ms, before, io0):
            if m.hung or not m.alive():
                stats.fail("daemon for %s %s: %s" % (m.h5file, "hung" if m.hung else "died", m.output()[-3000:]))
                continue
            a = S.proc_status(m.proc.pid)
            i1 = S.daemon_io(m.proc.pid)
            print("  %s: daemon RSS %d -> %d KiB, fds %d -> %d, threads %d -> %d, read %s MiB from the file" % (
                os.path.basename(m.h5file), b[0], a[0], b[1], a[1], b[2], a[2],
                "?" if i0 is None or i1 is None else (i1 - i0) >> 20))
        total = sum(stats.ops.values())
        print("  %d operations in %.1f s (%.0f/s): %s; %d MiB verified" % (
            total, el, total / max(el, 1e-9), ", ".join("%s=%d" % kv for kv in sorted(stats.ops.items())),
            stats.bytes >> 20))
        if am and (am.hung or not am.alive()):
            stats.fail("read-write daemon %s: %s" % ("hung" if am.hung else "died", am.output()[-3000:]))
        ok = not stats.fails
    finally:
        for m in ms + ([am] if am else []):
            m.stop()    # raises SanitizerReport if the daemon printed one
    if app and ok:
        ok = check_appended(app, stats)
    for f in stats.fails[:MAX_FAILS]:
        print("FAIL " + f)
    if ok:
        import shutil
        shutil.rmtree(wd, ignore_errors=True)
        print("stress: 1 passed, 0 failed")
        return 0
    print("stress: 0 passed, 1 failed (fixtures kept in %s; seed %d)" % (wd, SEED))
    return 1


if __name__ == "__main__":
    sys.exit(main())
