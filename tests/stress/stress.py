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
  - stat of a random entry, st_size checked.

Fails on any wrong byte or name, any error, a daemon that dies or hangs,
or any sanitizer report in the daemon's output (h5fs_testlib raises
SanitizerReport at unmount).  Run it against an ASan or TSan build with
H5FS_BIN=/path/to/h5fs.

Environment: H5FS_BIN (daemon), H5FS_STRESS_SECONDS (60),
H5FS_STRESS_THREADS (16), H5FS_STRESS_CACHE_MIB (1), H5FS_STRESS_SEED.
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


def worker(tid, mounts, stats, stop):
    rng = random.Random(SEED * 1000 + tid)
    while not stop.is_set():
        mnt, exp = rng.choice(mounts)
        r = rng.random()
        try:
            if r < 0.6:
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


def main():
    T.require_h5py()
    T.require_fuse()
    wd = T.workdir("stress")
    t0 = time.monotonic()
    names = S.make(wd)
    mounts, ms = [], []
    stats = Stats()
    ok = False
    try:
        for n in names:
            exp = S.Expected(os.path.join(wd, n))
            mnt = os.path.join(wd, "mnt_" + n[:-3])
            m = T.Mount(os.path.join(wd, n), mnt, opts=("-o", "ro,cache_size=%s" % CACHE_MIB), cwd=wd)
            m.start()
            ms.append(m)
            mounts.append((mnt, exp))
        print("stress: %d mounts (cache_size=%s MiB), %d threads, %.0f s, seed %d, daemon %s; setup %.1f s" % (
            len(ms), CACHE_MIB, THREADS, SECONDS, SEED, T.H5FS, time.monotonic() - t0))
        before = [S.proc_status(m.proc.pid) for m in ms]
        io0 = [S.daemon_io(m.proc.pid) for m in ms]
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(i, mounts, stats, stop), daemon=True)
                   for i in range(THREADS)]
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
        ok = not stats.fails
    finally:
        for m in ms:
            m.stop()    # raises SanitizerReport if the daemon printed one
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
