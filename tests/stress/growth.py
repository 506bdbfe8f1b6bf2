#!/usr/bin/python3
"""Leak and fd growth: H5FS_GROWTH_CYCLES (default 100000) open/read/close
cycles on the mounted stress fixtures (stresslib.py), spread round-robin
over every dataset of both files, with a directory listing every 16th
cycle and an xattr listing every 32nd.  Each read drops the file's page
cache first so it reaches the daemon, and is checked against h5py's bytes.

The daemon's VmRSS and open fd count (/proc/PID/status, /proc/PID/fd) are
sampled at the start, after a warm-up (a tenth of the cycles, at least one
per dataset), every further ninth of the rest and at the end.  Passes when the fd count at the
end is no higher than after the warm-up or than the start plus libfuse's
per-thread splice pipes, and RSS grew by less than
H5FS_GROWTH_RSS_MIB (default 16) MiB after the warm-up.

The cache budget is -o cache_size=H5FS_GROWTH_CACHE_MIB (default 4): the
files hold more than that, so a full cache is reached during the warm-up
and any later growth is memory the daemon does not give back.  Run it
against a build without sanitizers: ASan's quarantine, allocator and fake
stacks grow RSS by themselves (tests/stress/run-sanitizers.sh uses a plain
build).  Measured on the plain build (2 cores): 100,000 cycles take about
8 s; RSS grows about 4-6 MiB after the warm-up and levels off, which is
malloc arena fragmentation (glibc mallinfo2: live heap bytes stay flat
within 30 KiB from 50,000 to 200,000 cycles).

Environment: H5FS_BIN, H5FS_GROWTH_CYCLES, H5FS_GROWTH_THREADS (4),
H5FS_GROWTH_RSS_MIB, H5FS_GROWTH_CACHE_MIB.  Exit 77 without h5py/FUSE.
"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib as S  # noqa: E402

FUSE_MAX_IDLE_THREADS = 10   # libfuse 3 default (-o max_idle_threads)

T = S.T
CYCLES = int(os.environ.get("H5FS_GROWTH_CYCLES", "100000"))
THREADS = int(os.environ.get("H5FS_GROWTH_THREADS", "4"))
RSS_LIMIT_KIB = int(float(os.environ.get("H5FS_GROWTH_RSS_MIB", "16")) * 1024)
CACHE_MIB = os.environ.get("H5FS_GROWTH_CACHE_MIB", "4")


def main():
    T.require_h5py()
    T.require_fuse()
    wd = T.workdir("growth")
    names = S.make(wd, big=2)
    ms, work = [], []
    fails = []
    ok = False
    try:
        for n in names:
            exp = S.Expected(os.path.join(wd, n))
            mnt = os.path.join(wd, "mnt_" + n[:-3])
            m = T.Mount(os.path.join(wd, n), mnt, opts=("-o", "ro,cache_size=%s" % CACHE_MIB), cwd=wd)
            m.start()
            ms.append(m)
            for p in sorted(exp.files):
                work.append((mnt, p, exp.files[p]))
        random.Random(1).shuffle(work)
        print("growth: %d cycles, %d threads, %d datasets on %d mounts (cache_size=%s MiB), daemon %s" % (
            CYCLES, THREADS, len(work), len(ms), CACHE_MIB, T.H5FS))

        lock = threading.Lock()
        state = {"next": 0, "done": 0}
        stop = threading.Event()

        def cycle(i, rng):
            mnt, p, data = work[i % len(work)]
            fd = os.open(mnt + p, os.O_RDONLY)
            try:
                S.drop_page_cache(fd)
                off = rng.randrange(0, len(data)) if data else 0
                ln = rng.randint(1, 65536)
                got = os.pread(fd, ln, off)
                if got != data[off:off + ln]:
                    raise AssertionError("%s%s: pread(%d, %d) differs at byte %d" % (
                        mnt, p, ln, off, off + T.first_diff(got, data[off:off + ln])))
            finally:
                os.close(fd)
            if i % 16 == 0:
                os.listdir(mnt + os.path.dirname(p))
            if i % 32 == 0:
                try:
                    os.listxattr(mnt + p)
                except OSError as e:
                    if e.errno in T.DEAD:
                        raise

        def worker(tid, upto):
            rng = random.Random(tid)
            while not stop.is_set():
                with lock:
                    i = state["next"]
                    if i >= upto:
                        return
                    state["next"] = i + 1
                try:
                    cycle(i, rng)
                except (OSError, AssertionError) as e:
                    with lock:
                        fails.append(str(e))
                    stop.set()
                    return
                with lock:
                    state["done"] += 1

        def run_until(upto):
            ts = [threading.Thread(target=worker, args=(k * 7919 + upto, upto), daemon=True)
                  for k in range(THREADS)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(600)
            if any(t.is_alive() for t in ts):
                fails.append("cycles blocked for 10 minutes: daemon hung")
                stop.set()

        samples = []

        def sample(label):
            pids = [m.proc.pid for m in ms]
            st = [S.proc_status(pid) for pid in pids]
            samples.append((label, state["done"], time.monotonic() - t1, st))
            print("  %-10s %7d cycles %7.1f s  %s" % (
                label, state["done"], time.monotonic() - t1,
                "  ".join("RSS %6d KiB fds %d" % (s[0], s[1]) for s in st)), flush=True)

        t1 = time.monotonic()
        io0 = [S.daemon_io(m.proc.pid) for m in ms]
        sample("start")
        # the warm-up visits every dataset once, so the daemon's inode table
        # and the kernel's dentries are complete before the baseline
        warm = min(CYCLES, max(1000, CYCLES // 10, len(work)))
        with ms[0].watchdog(3600), ms[-1].watchdog(3600):
            run_until(warm)
            sample("warm-up")
            step = max(1, (CYCLES - warm) // 9)
            upto = warm
            while upto < CYCLES and not stop.is_set():
                upto = min(CYCLES, upto + step)
                run_until(upto)
                sample("end" if upto >= CYCLES else "")
        el = time.monotonic() - t1
        for k, m in enumerate(ms):
            if m.hung or not m.alive():
                fails.append("daemon for %s %s: %s" % (m.h5file, "hung" if m.hung else "died", m.output()[-3000:]))
                continue
            start, warmed, end = samples[0][3][k], samples[1][3][k], samples[-1][3][k]
            grow = end[0] - warmed[0]
            io1 = S.daemon_io(m.proc.pid)
            print("  %s: RSS %d KiB at start, %d after warm-up, %d at the end (%+d KiB; limit %d); fds %d -> %d; "
                  "daemon read %s MiB" % (
                      os.path.basename(m.h5file), start[0], warmed[0], end[0], grow, RSS_LIMIT_KIB, start[1], end[1],
                      "?" if io0[k] is None or io1 is None else (io1 - io0[k]) >> 20))
            # libfuse keeps one splice pipe (2 fds) per worker thread once
            # splice replies are used, and starts workers on demand (at
            # most 10 idle ones stay): that much is not a leak.
            fd_limit = max(warmed[1], start[1] + 2 * FUSE_MAX_IDLE_THREADS)
            if end[1] > fd_limit:
                fails.append("%s: daemon fd count %d at start, %d after warm-up, %d after %d cycles "
                             "(limit %d)" % (m.h5file, start[1], warmed[1], end[1], state["done"], fd_limit))
            if grow >= RSS_LIMIT_KIB:
                fails.append("%s: daemon RSS grew by %d KiB after warm-up (limit %d KiB)" % (
                    m.h5file, grow, RSS_LIMIT_KIB))
        if state["done"] < CYCLES and not fails:
            fails.append("only %d of %d cycles done" % (state["done"], CYCLES))
        print("  %d cycles in %.1f s (%.0f/s)" % (state["done"], el, state["done"] / max(el, 1e-9)))
        ok = not fails
    finally:
        for m in ms:
            m.stop()    # raises SanitizerReport if the daemon printed one
    for f in fails[:20]:
        print("FAIL " + f)
    if ok:
        import shutil
        shutil.rmtree(wd, ignore_errors=True)
        print("growth: 1 passed, 0 failed")
        return 0
    print("growth: 0 passed, 1 failed (fixtures kept in %s)" % wd)
    return 1


if __name__ == "__main__":
    sys.exit(main())
