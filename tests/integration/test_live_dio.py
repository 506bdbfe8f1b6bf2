#!/usr/bin/python3
"""Live files (issue 24): a read() larger than the largest FUSE request
(1 MiB) through a descriptor opened once FILE has changed (the page cache
since issue 34, direct_io while descriptors holding pages of a rewritten
version are open) is
the bytes of one version, however FILE changes while the kernel sends its
pieces (src/fuse/live/dio.c). Fixtures, readers and checks are test_live.py's
(test_no_mix), with 4 MiB datasets read by 8 MiB read()s.
"""
import errno
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402
import test_live as L  # noqa: E402  (requires h5py and FUSE, or exits 77)

ROW, NOMIX, NOMIX_ROWS, Hammer = L.ROW, L.NOMIX, L.NOMIX_ROWS, L.Hammer
wait_for, head_version = L.wait_for, L.head_version


# The window: descriptors opened once FILE has changed read
# with direct_io, and a read() larger than the largest request (1 MiB) is
# split by the kernel into requests that may meet a change between them.
# 4 MiB datasets read with 8 MiB read()s (5 requests each) through
# descriptors opened after a first change, held or opened anew, while FILE
# changes again and again: each read() must be the bytes of one version (a
# read() cut short at a change holds the version before).
BIG_ROWS = 262144                    # 4 MiB of rows per dataset
NOMIX_BIG = NOMIX.replace("%d)" % NOMIX_ROWS, "%d)" % BIG_ROWS)


def test_big_reads(d):
    rounds = int(os.environ.get("LIVE_ROUNDS", "6"))
    size, big = BIG_ROWS * ROW, 8 << 20
    files, want, c_off = L.make_versions(d, NOMIX_BIG, BIG_ROWS)
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    total, seen, errs, short = 0, set(), {}, 0
    for rnd in range(rounds):
        how = ("overwrite", "rename", "cat")[rnd % 3]
        subprocess.run(["cp", files[1], cur], check=True)
        time.sleep(0.05)
        with T.Mount(cur, mnt, ["-o", "ro"]) as m, m.watchdog(240):
            # a first change: descriptors opened from now on use direct_io
            L.write_version("overwrite" if how == "overwrite" else "rename", cur, files, want, c_off, 2)
            wait_for("big reads: the first change", lambda: head_version(mnt, "c") == 2)
            names = ("c", "k", "z")
            fds = [os.open(os.path.join(mnt, nm), os.O_RDONLY) for nm in names]
            hs = [Hammer(os.path.join(mnt, nm), nm, want[nm], fd, size, big) for nm, fd in zip(names, fds)]
            hs += [Hammer(os.path.join(mnt, nm), nm, want[nm], None, size, big) for nm in names]
            try:
                for h in hs:
                    h.start()
                time.sleep(0.3)
                for v in (3, 4, 5, 2, 3, 4, 5, 6):
                    L.write_version(how, cur, files, want, c_off, v)
                    time.sleep(0.1 + 0.1 * (rnd % 3))
                wait_for("big reads, %s: the last version" % how, lambda: head_version(mnt, "c") == 6)
                time.sleep(0.3)
                for h in hs:
                    h.stop_ev.set()
                for h in hs:
                    h.join(60)
                # the held descriptors stay usable: a read() that starts
                # after the overwrites is the last version, whole (after a
                # rewrite the objects are at other addresses: ESTALE). They
                # use the page cache (issue 34: memmap after a change), so
                # c's, whose cached pages were overwritten in place, may
                # answer EIO until closed (live/pcache.c)
                for nm, fd in zip(names, fds):
                    last = 6 if how != "overwrite" or nm == "c" else 1
                    try:
                        os.lseek(fd, 0, os.SEEK_SET)
                        data = os.read(fd, big)
                        got = "v%d" % last if data == want[nm][last] else "other bytes (%d)" % len(data)
                    except OSError as e:
                        got = errno.errorcode.get(e.errno, e.errno)
                    if how == "overwrite" and nm == "c" and got == "EIO":
                        continue
                    if got != "v%d" % last and (how == "overwrite" or got != "ESTALE"):
                        T.fail("big reads, round %d (%s): held %s after the changes: %s" % (rnd, how, nm, got))
            finally:
                for h in hs:
                    h.stop_ev.set()
                for h in hs:
                    h.join(60)
                for fd in fds:
                    os.close(fd)
            for h in hs:
                total += h.reads
                seen |= h.seen
                short += getattr(h, "short", 0)
                for k, n in h.errors.items():
                    key = "%s %s" % ("held" if h.fd is not None else "fresh", errno.errorcode.get(k, k))
                    errs[key] = errs.get(key, 0) + n
                for b in h.bad[:3]:
                    T.fail("big reads, round %d (%s, %s): %s" % (rnd, how, "held fd" if h.fd is not None else "fresh fd", b))
            if not m.alive():
                T.fail("big reads, round %d: h5fs died" % rnd)
    print("big reads: %d rounds, %d read()s of 8 MiB checked, %d cut short, versions seen %s, errors %s" % (
        rounds, total, short, sorted(seen), errs))


# The other window: one write() that takes longer than the 30 ms h5fs
# waits for FILE's times to settle (a 256 MiB pwrite takes 60-500 ms here),
# so that a generation opened while it copies its bytes in would read a
# file that is half one version and half the next. Every 1 MiB read must
# be one version (EIO allowed).
LONG_EL = 32 << 20                   # int64: 256 MiB


def test_long_write(d):
    import numpy as np
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    L.run_py("import h5py, numpy as np, sys\n"
           "with h5py.File(sys.argv[1], 'w') as f:\n"
           "    f.create_dataset('c', data=np.full(%d, 1, dtype='<i8'))\n" % LONG_EL, cur)
    with L.h5py.File(cur, "r") as f:
        off = f["c"].id.get_offset()
    stop, bad, counts = [False], [], {"reads": 0, "EIO": 0, "short": 0}

    def reader():
        while not stop[0]:
            try:
                fd = os.open(os.path.join(mnt, "c"), os.O_RDONLY)
            except OSError as e:
                if e.errno not in L.OK_ERRNOS:
                    bad.append("open: %s" % e)
                continue
            try:
                for o in range(0, LONG_EL * 8, 1 << 20):
                    if stop[0]:
                        break
                    try:
                        a = np.frombuffer(os.pread(fd, 1 << 20, o), dtype="<i8")
                    except OSError as e:
                        if e.errno not in L.OK_ERRNOS:
                            bad.append("read at %d: %s" % (o, e))
                        counts["EIO"] += 1
                        continue
                    counts["reads"] += 1
                    # cut short at a change (live/dio.c): what came is one version
                    counts["short"] += a.size < min(1 << 17, LONG_EL - o // 8)
                    if a.size == 0 or (a != a[0]).any():
                        bad.append("read at %d: %d elements, values %s (mixed)"
                                   % (o, a.size, sorted(set(a.tolist()))[:4]))
            finally:
                os.close(fd)

    # -o live=strict: v1 -> v2 is FILE's first change in place, which by
    # default may mix (the stated window, test_live_fast.py)
    with T.Mount(cur, mnt, ["-o", "ro,live=strict"]) as m, m.watchdog(300):
        ths = [threading.Thread(target=reader, daemon=True) for _ in range(3)]
        for t in ths:
            t.start()
        times = []
        try:
            for v in range(2, 8):
                time.sleep(0.3)
                buf = np.full(LONG_EL, v, dtype="<i8").tobytes()
                with open(cur, "r+b") as f:
                    t0 = time.monotonic()
                    os.pwrite(f.fileno(), buf, off)
                    times.append(time.monotonic() - t0)
            time.sleep(0.3)
        finally:
            stop[0] = True
            for t in ths:
                t.join(timeout=60)
    print("long writes (%s ms): %d reads of 1 MiB checked, %d cut short, %d EIO"
          % ("/".join("%.0f" % (x * 1000) for x in times), counts["reads"], counts["short"], counts["EIO"]))
    if bad:
        T.fail("long writes: %d bad reads, first: %s" % (len(bad), bad[:3]))
    if counts["reads"] == 0:
        T.fail("long writes: no read answered")


def main():
    d = os.path.join(T.workdir("live_dio"), "big_reads")
    os.makedirs(d)
    test_big_reads(d)
    d = os.path.join(T.workdir("live_dio"), "long_write")
    os.makedirs(d)
    test_long_write(d)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
