#!/usr/bin/python3
"""Stopping h5fs while reads are in flight (doc/h5fs.1, DESCRIPTION and
EXIT STATUS):
- SIGTERM (and SIGINT, SIGHUP) to a foreground daemon whose readers are
  busy decompressing chunks: it exits 0 within the time bound, the mount
  is gone, every reader ends (with correct bytes or ENOTCONN-like errors,
  never wrong bytes, never a hang), and FILE is unchanged;
- fusermount3 -u during reads either unmounts or is refused as busy; when
  refused the mount keeps serving correct bytes, and once the readers stop
  fusermount3 -u succeeds and the daemon exits 0."""
import errno
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

fails = []
GONE = (errno.ENOTCONN, errno.ECONNABORTED, errno.ENODEV, errno.EIO, errno.ENOENT)
EXIT_WAIT = 20.0
N = 8 << 20          # elements: 32 MiB of float32


def make(path):
    rng = np.random.default_rng(3)
    # compressible but not trivially: every read decompresses 256 KiB chunks
    data = (np.cumsum(rng.integers(-3, 4, N)) / 7.0).astype("<f4")
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("big", data=data, chunks=(65536,), compression="gzip", compression_opts=6,
                         shuffle=True, track_times=False)
    return data.tobytes()


class Readers:
    def __init__(self, path, want, n=4):
        self.path, self.want = path, want
        self.stop = threading.Event()
        self.wrong = []
        self.errors = []
        self.reads = 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(k,), daemon=True) for k in range(n)]

    def run(self, k):
        rng = random.Random(k)
        while not self.stop.is_set():
            try:
                # O_DIRECT-like behaviour is not needed: a fresh open and a
                # random 1 MiB window mostly misses the page cache
                fd = os.open(self.path, os.O_RDONLY)
            except OSError as e:
                self.end(e)
                return
            try:
                for _ in range(4):
                    off = rng.randrange(0, len(self.want) - (1 << 20))
                    got = os.pread(fd, 1 << 20, off)
                    if got != self.want[off:off + len(got)]:
                        with self.lock:
                            self.wrong.append("pread(%d, 1 MiB) returned wrong bytes" % off)
                    with self.lock:
                        self.reads += 1
            except OSError as e:
                self.end(e)
                return
            finally:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def end(self, e):
        with self.lock:
            self.errors.append(e)
        self.stop.set()

    def start(self):
        for t in self.threads:
            t.start()

    def join(self, timeout):
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)


def wait_reads(rd, n, timeout=30):
    deadline = time.monotonic() + timeout
    while rd.reads < n and time.monotonic() < deadline and not rd.stop.is_set():
        time.sleep(0.01)
    return rd.reads >= n


def drop_caches():
    # make the readers reach the daemon instead of the page cache
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("1\n")
    except OSError:
        pass


def signal_case(h5, mnt, want, sig):
    label = signal.Signals(sig).name
    m = T.Mount(h5, mnt, opts=["-o", "cache_size=1"])
    m.start()
    rd = Readers(os.path.join(mnt, "big"), want)
    try:
        drop_caches()
        rd.start()
        if not wait_reads(rd, 8):
            fails.append("%s: readers did not get going (%d reads, errors %r)" % (label, rd.reads, rd.errors))
        m.proc.send_signal(sig)
        try:
            rc = m.proc.wait(timeout=EXIT_WAIT)
        except subprocess.TimeoutExpired:
            fails.append("%s: daemon still running %.0f s after the signal" % (label, EXIT_WAIT))
            m.kill()
            return
        rd.stop.set()
        if not rd.join(EXIT_WAIT):
            fails.append("%s: a reader hung after the daemon exited" % label)
        deadline = time.monotonic() + EXIT_WAIT
        while T.is_mounted(mnt) and time.monotonic() < deadline:
            time.sleep(0.05)
        bad = []
        if rc != 0:
            bad.append("exit status %d" % rc)
        if T.is_mounted(mnt):
            bad.append("still mounted")
        if rd.wrong:
            bad.append("wrong bytes: %s" % rd.wrong[:3])
        odd = [e for e in rd.errors if e.errno not in GONE]
        if odd:
            bad.append("readers got unexpected errors %r" % odd[:3])
        if bad:
            fails.append("%s during reads: %s; log: %s" % (label, "; ".join(bad), m.output()[-1000:]))
        else:
            print("ok   %s during reads: exit 0, unmounted, %d reads correct, readers ended with %s" % (
                label, rd.reads, sorted({errno.errorcode.get(e.errno, str(e.errno)) for e in rd.errors})))
    finally:
        rd.stop.set()
        rd.join(5)
        m.stop()


def fusermount_case(h5, mnt, want):
    m = T.Mount(h5, mnt, opts=["-o", "cache_size=1"])
    m.start()
    rd = Readers(os.path.join(mnt, "big"), want)
    try:
        drop_caches()
        rd.start()
        wait_reads(rd, 8)
        r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=EXIT_WAIT)
        busy = r.returncode != 0
        if busy:
            # refused (files open): the mount must keep working
            before = rd.reads
            wait_reads(rd, before + 8)
            if rd.reads < before + 8 or rd.errors:
                fails.append("fusermount3 -u refused, but reads stopped working: %r" % rd.errors[:3])
        rd.stop.set()
        if not rd.join(EXIT_WAIT):
            fails.append("fusermount3 -u: a reader hung")
        if busy:
            r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=EXIT_WAIT)
            if r.returncode != 0:
                fails.append("fusermount3 -u after the readers stopped: %s" % r.stderr.decode()[:300])
        try:
            rc = m.proc.wait(timeout=EXIT_WAIT)
        except subprocess.TimeoutExpired:
            fails.append("fusermount3 -u: daemon still running")
            m.kill()
            return
        bad = []
        if rc != 0:
            bad.append("exit status %d" % rc)
        if T.is_mounted(mnt):
            bad.append("still mounted")
        if rd.wrong:
            bad.append("wrong bytes: %s" % rd.wrong[:3])
        odd = [e for e in rd.errors if e.errno not in GONE]
        if odd:
            bad.append("readers got unexpected errors %r" % odd[:3])
        if bad:
            fails.append("fusermount3 -u during reads: %s" % "; ".join(bad))
        else:
            print("ok   fusermount3 -u during reads (%s): exit 0, unmounted, %d reads correct" % (
                "refused while busy, then done" if busy else "unmounted at once", rd.reads))
    finally:
        rd.stop.set()
        rd.join(5)
        m.stop()


def main():
    wd = T.workdir("signal")
    h5 = os.path.join(wd, "big.h5")
    want = make(h5)
    digest = hashlib.sha256(open(h5, "rb").read()).hexdigest()
    mnt = os.path.join(wd, "mnt")
    t0 = time.monotonic()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal_case(h5, mnt, want, sig)
    fusermount_case(h5, mnt, want)
    if hashlib.sha256(open(h5, "rb").read()).hexdigest() != digest:
        fails.append("FILE changed")
    with h5py.File(h5, "r") as f:
        if f["big"][:1000].tobytes() != want[:4000]:
            fails.append("h5py reads different data afterwards")
    print("(%.1f s)" % (time.monotonic() - t0))
    for f in fails:
        print("FAIL " + f)
    if not fails:
        shutil.rmtree(wd, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
