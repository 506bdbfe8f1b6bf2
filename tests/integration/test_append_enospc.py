#!/usr/bin/python3
"""An append that runs out of disk space (doc/APPEND.md "When a write's
errors are reported").

FILE lies on a 6 MiB tmpfs; rows are appended through the mount 1 MiB at a
time until the space is gone. Writes are answered before the engine stores
them (write-behind), so the failure must come back by a later write(),
fsync() or close() of the same descriptor - never be lost - and once one
failed every later write of that descriptor fails too. The daemon stays up,
unmounts cleanly, and h5py then reads a valid file whose rows are exactly
the bytes written, including every row an fsync() returned for.
Needs root (mount -t tmpfs).
"""
import errno
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

ROW = 256                 # int32 values per row: 1 KiB
CHUNK_ROWS = 1024         # 1 MiB chunks
BLOCK_ROWS = 1024         # rows per write()
SPACE = "6m"


def rows(start, n):
    return (np.arange(start * ROW, (start + n) * ROW, dtype=np.int64) % 1000003).astype(np.int32).reshape(n, ROW)


def main():
    if os.geteuid() != 0:
        T.skip("needs root to mount a tmpfs")
    wd = T.workdir("append_enospc")
    small = os.path.join(wd, "small")
    mnt = os.path.join(wd, "mnt")
    os.makedirs(small)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + SPACE, "tmpfs", small],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        T.skip("cannot mount a tmpfs: %s" % r.stderr.strip())
    failures = []
    try:
        path = os.path.join(small, "f.h5")
        with h5py.File(path, "w", libver="latest") as f:
            f.create_dataset("d", shape=(0, ROW), maxshape=(None, ROW), dtype=np.int32,
                             chunks=(CHUNK_ROWS, ROW))
        written = 0           # rows whose write() returned
        synced = 0            # rows an fsync() returned for
        err = None
        with T.Mount(path, mnt) as m:
            with m.watchdog(120):
                fd = os.open(os.path.join(mnt, "d"), os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, rows(0, BLOCK_ROWS).tobytes())
                    os.fsync(fd)
                    written = synced = BLOCK_ROWS
                    for _ in range(32):      # 32 MiB into 6 MiB of space
                        os.write(fd, rows(written, BLOCK_ROWS).tobytes())
                        written += BLOCK_ROWS
                except OSError as e:
                    err = e
                if err is None:
                    try:
                        os.fsync(fd)
                    except OSError as e:
                        err = e
                if err is not None:
                    # sticky: the descriptor takes no more rows
                    try:
                        os.write(fd, rows(written, BLOCK_ROWS).tobytes())
                        failures.append("a write after the failure (%s) succeeded" % err)
                    except OSError as e:
                        if e.errno != err.errno:
                            failures.append("write after %s failed with %s" % (err, e))
                try:
                    os.close(fd)
                except OSError as e:
                    err = err or e
                if err is None:
                    failures.append("32 MiB appended to a 6 MiB tmpfs without an error")
                elif err.errno != errno.ENOSPC:
                    failures.append("unexpected error %s" % err)
                else:
                    print("reported: %s (after %d rows written, %d synced)" % (err, written, synced))
                # the mount still serves the dataset
                st = os.stat(os.path.join(mnt, "d"))
                if st.st_size % (ROW * 4):
                    failures.append("size %d is not whole rows" % st.st_size)
            if not m.alive():
                failures.append("the daemon died: %s" % m.output())
        with h5py.File(path, "r") as f:
            d = f["d"]
            n = d.shape[0]
            if n < synced or n > written:
                failures.append("h5py sees %d rows, expected %d..%d" % (n, synced, written))
            elif not np.array_equal(d[:n], rows(0, n)):
                failures.append("the %d rows h5py reads are not the bytes written" % n)
            else:
                print("h5py: %d rows, all exact" % n)
    finally:
        subprocess.run(["umount", small], timeout=30)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
