#!/usr/bin/python3
"""Rows answered and not committed, read through another descriptor
(member/tail.c, issue 44): the daemon keeps no copy of whole rows, only the
trailing partial row; a read that reaches whole rows not committed has them
committed first (read.c, write.c wfile_show, the engine's h5_append_show)
and reads them from the dataset.

For an unfiltered (1 MiB chunk rows, rows of 24 bytes) and a gzip dataset
(chunks of 64 rows), each appended through the mount with large commit
thresholds (H5FS_COMMIT_WRITES_BYTES/_MS: nothing is committed by the
appender itself while the test runs):
  * whole rows plus part of the next written, then read by a second
    descriptor from before the committed end to the end: every byte, the
    partial row's included; the size stat shows is the accepted end;
  * the partial row completed, more rows and another part; read again;
  * a reader thread reading the last 4 KiB over and over while a writer
    appends 1000 writes of odd sizes: every read is a prefix of what was
    written (never zeros, never a short answer below the size when the
    read began), the daemon alive;
  * after close (the partial row: EINVAL), h5py reads FILE: the whole rows
    exactly.
A disk failing under the commit a read makes (fault_shim.so: the first
fsync of FILE fails with EIO): the read answers the committed rows only
(the rows not committed are taken back: the size goes back), the daemon
stays up, the writer's next write fails with EIO, and FILE holds its
original rows exactly.
"""
import errno
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_fuse()
T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

ROW = 24
SHIM = os.path.join(T.BUILDDIR, "tests", "integration", "fault_shim.so")


def make(path, gz):
    rows = np.arange(3 * 1000, dtype="<i8").reshape(1000, 3)
    with h5py.File(path, "w") as f:
        if gz:
            f.create_dataset("d", data=rows, maxshape=(None, 3), chunks=(64, 3), compression="gzip")
        else:
            f.create_dataset("d", data=rows, maxshape=(None, 3), chunks=((1 << 20) // ROW, 3))
    return rows.tobytes()


def pread_all(p, off):
    fd = os.open(p, os.O_RDONLY)
    try:
        out = b""
        while True:
            b = os.pread(fd, 1 << 20, off + len(out))
            if not b:
                return out
            out += b
    finally:
        os.close(fd)


def run(work, gz):
    tag = "gzip" if gz else "plain"
    path = os.path.join(work, tag + ".h5")
    want = bytearray(make(path, gz))
    mnt = os.path.join(work, "mnt-" + tag)
    rng = np.random.default_rng(7 if gz else 8)
    env = {"H5FS_COMMIT_WRITES_BYTES": str(1 << 40), "H5FS_COMMIT_WRITES_MS": str(3600 * 1000)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with T.Mount(path, mnt) as m, m.watchdog(180):
            p = os.path.join(mnt, "d")
            fd = os.open(p, os.O_WRONLY | os.O_APPEND)
            closed = False
            try:
                for step, (whole, part) in enumerate(((5000, 7), (300, 13), (0, 3), (70000, 1))):
                    # (step 2 completes no row: 13 + 3 < 24)
                    more = rng.integers(0, 256, whole * ROW + part, dtype=np.uint8).tobytes()
                    os.write(fd, more)
                    want += more
                    size = os.stat(p).st_size
                    if size != len(want):
                        T.fail("%s step %d: stat says %d bytes, %d written" % (tag, step, size, len(want)))
                    start = max(0, len(want) - len(more) - 5000)
                    got = pread_all(p, start)
                    if got != bytes(want[start:]):
                        T.fail("%s step %d: a read of rows not committed: %s" % (
                            tag, step, T.first_diff(got, bytes(want[start:]))))
                # a reader racing the writer
                bad = []
                stop = threading.Event()

                def reader():
                    rfd = os.open(p, os.O_RDONLY)
                    try:
                        while not stop.is_set():
                            n = os.fstat(rfd).st_size
                            off = max(0, n - 4096)
                            b = os.pread(rfd, 8192, off)
                            if len(b) < n - off:
                                bad.append("short: %d bytes at %d, size %d" % (len(b), off, n))
                            with lock:
                                w = bytes(want[off:off + len(b)])
                            if b != w:
                                bad.append("at %d: %s" % (off, T.first_diff(b, w)))
                    finally:
                        os.close(rfd)

                lock = threading.Lock()
                th = threading.Thread(target=reader)
                th.start()
                try:
                    for i in range(1000):
                        more = rng.integers(0, 256, int(rng.integers(1, 3000)), dtype=np.uint8).tobytes()
                        with lock:
                            want += more   # before the write: the reader may see it once answered
                        os.write(fd, more)
                finally:
                    stop.set()
                    th.join(60)
                if th.is_alive():
                    T.fail("%s: the reader did not finish" % tag)
                for b in bad[:5]:
                    T.fail("%s racing reader: %s" % (tag, b))
                if not m.alive():
                    T.fail("%s: the daemon died" % tag)
                whole = len(want) - len(want) % ROW
                closed = True
                try:
                    os.close(fd)
                    if len(want) % ROW:
                        T.fail("%s: close with a partial row succeeded" % tag)
                except OSError as e:
                    if not len(want) % ROW or e.errno != 22:
                        T.fail("%s: close: %s" % (tag, e))
            finally:
                if not closed:
                    try:
                        os.close(fd)
                    except OSError:
                        pass    # (a partial row: reported above or not the point)
        with h5py.File(path, "r") as f:
            got = f["d"][()].tobytes()
        if got != bytes(want[:whole]):
            T.fail("%s: FILE after the appends: %d bytes, %d written; %s" % (
                tag, len(got), whole, T.first_diff(got, bytes(want[:whole]))))
        print("%s: rows answered and not committed read exactly (%d rows, a racing reader)" % (tag, whole // ROW))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def fault(work):
    if T.sanitized():
        print("fault: skipped (a sanitizer build: its runtime must be the first preloaded library)")
        return
    if not os.path.exists(SHIM):
        T.fail("fault: %s not built (make check builds it)" % SHIM)
        return
    path = os.path.join(work, "fault.h5")
    want = make(path, False)
    mnt = os.path.join(work, "mnt-fault")
    env = {"H5FS_COMMIT_WRITES_BYTES": str(1 << 40), "H5FS_COMMIT_WRITES_MS": str(3600 * 1000),
           "LD_PRELOAD": SHIM, "H5FS_FAULT_FILE": os.path.realpath(path), "H5FS_FAULT_OP": "fsync",
           "H5FS_FAULT_N": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with T.Mount(path, mnt) as m, m.watchdog(120):
            for k in ("LD_PRELOAD", "H5FS_FAULT_FILE"):
                os.environ.pop(k)   # (this process's children: not the shim)
            p = os.path.join(mnt, "d")
            fd = os.open(p, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, bytes(range(256)) * (3 * ROW))     # 3 * 256 whole rows
                got = pread_all(p, 0)
                if got != want:
                    T.fail("fault: the read after a failed commit: %d bytes, %d committed; %s" % (
                        len(got), len(want), T.first_diff(got, want)))
                if os.stat(p).st_size != len(want):
                    T.fail("fault: stat says %d bytes after the failed commit, %d committed" % (
                        os.stat(p).st_size, len(want)))
                T.expect_err("fault: the next write", lambda: (os.write(fd, bytes(ROW)), None)[1], errno.EIO)
            finally:
                try:
                    os.close(fd)
                except OSError:
                    pass    # (the error again)
            if not m.alive():
                T.fail("fault: the daemon died")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    with h5py.File(path, "r") as f:
        if f["d"][()].tobytes() != want:
            T.fail("fault: FILE after the failed commit differs from its original rows")
    print("fault: a commit for a reader failing (EIO at fsync): committed rows read, the rest taken back")


def main():
    work = T.workdir("append_tail")
    run(work, False)
    run(work, True)
    fault(work)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
