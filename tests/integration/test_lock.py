#!/usr/bin/python3
"""Issue 33, item 1, as a new user meets it: a read-write mount takes
FILE's lock only while it writes.

- While the mount is idle (mounted, datasets read, a write descriptor
  open but not written), h5py opens the mounted FILE 'r' and 'r+'
  (libhdf5 takes flock LOCK_SH / LOCK_EX and fails with "unable to lock
  file" if anyone holds it).
- An append while h5py holds FILE open fails at once with EBUSY (no wait),
  with one log line; once h5py closed it, the append goes through and
  h5py reads every row.
- While an append descriptor is writing (rows not committed), h5py cannot
  open FILE (the lock is held); after fsync it can, with the rows there.
- FILE changed by another program since it was mounted: the mount
  follows it (a read-write mount is live, test_rw_live.py has the rest),
  so the next append, right after that program closed FILE, goes on from
  FILE as that program left it: its row and ours are both there.
"""
import errno
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

# "never a wait": a write that waited for the lock would not return while
# h5py holds FILE, which it does until the append returns; the bound only
# keeps a broken build from hanging the test (no speed is measured here)
FAST = 10.0


def make(path):
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("rows", data=np.arange(40, dtype="<i8").reshape(10, 4), maxshape=(None, 4),
                         chunks=(8, 4))


def h5py_opens(path, mode):
    try:
        with h5py.File(path, mode) as f:
            return f["rows"].shape[0]
    except OSError as e:
        return e


def append(path, rows):
    """open O_WRONLY|O_APPEND, write, close: (errno or 0, seconds)."""
    t0 = time.monotonic()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, rows.tobytes())
        finally:
            os.close(fd)
    except OSError as e:
        return e.errno, time.monotonic() - t0
    return 0, time.monotonic() - t0


def main():
    wd = T.workdir("lock")
    h5 = os.path.join(wd, "run.h5")
    mnt = os.path.join(wd, "mnt")
    make(h5)
    ds = os.path.join(mnt, "rows")
    more = np.arange(100, 108, dtype="<i8").reshape(2, 4)
    with T.Mount(h5, mnt) as m:
        with m.watchdog(60):
            # idle: read through the mount, h5py opens FILE both ways
            with open(ds, "rb") as fh:
                fh.read()
            for mode in ("r", "r+"):
                got = h5py_opens(h5, mode)
                if got != 10:
                    T.fail("idle mount: h5py.File(FILE, %r): %r" % (mode, got))
                else:
                    print("ok   idle mount: h5py opens FILE %r" % mode)
            # an open write descriptor that has not written holds nothing
            fd = os.open(ds, os.O_WRONLY | os.O_APPEND)
            try:
                got = h5py_opens(h5, "r")
                if got != 10:
                    T.fail("write descriptor open, nothing written: h5py.File(FILE, 'r'): %r" % (got,))
                else:
                    print("ok   a write descriptor not written yet holds no lock")
            finally:
                os.close(fd)

            # h5py holds FILE: an append is refused at once with EBUSY
            with h5py.File(h5, "r") as f:
                e, dt = append(ds, more)
                if e != errno.EBUSY or dt > FAST:
                    T.fail("append while h5py has FILE open: errno %s after %.2f s, expected EBUSY fast"
                           % (e and errno.errorcode.get(e, e), dt))
                else:
                    print("ok   append while h5py holds FILE: EBUSY in %.3f s" % dt)
                if f["rows"].shape[0] != 10:
                    T.fail("h5py sees %d rows after a refused append" % f["rows"].shape[0])
            with h5py.File(h5, "r+") as f:   # a writer's lock too
                e, dt = append(ds, more)
                if e != errno.EBUSY or dt > FAST:
                    T.fail("append while h5py has FILE open r+: errno %s after %.2f s" % (e, dt))
            # h5py closed it: the append goes through
            e, dt = append(ds, more)
            if e:
                T.fail("append after h5py closed FILE: %s" % os.strerror(e))
            got = h5py_opens(h5, "r")
            if got != 12:
                T.fail("after one append h5py sees %r rows, expected 12" % (got,))
            else:
                print("ok   append once h5py closed FILE: h5py reads 12 rows")

            # a descriptor with rows not committed holds the lock; fsync gives it back
            fd = os.open(ds, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, more.tobytes())
                got = h5py_opens(h5, "r")
                if not isinstance(got, OSError) or "lock" not in str(got):
                    T.fail("rows written, not committed: h5py.File(FILE) gave %r, expected a lock error" % (got,))
                else:
                    print("ok   while rows are being written h5py is kept out (%s)" % str(got)[:60])
                os.fsync(fd)
                got = h5py_opens(h5, "r")
                if got != 14:
                    T.fail("after fsync h5py.File(FILE): %r, expected 14 rows" % (got,))
                else:
                    print("ok   after fsync h5py opens FILE and reads 14 rows, descriptor still open")
                os.write(fd, more.tobytes())   # and takes it again
            finally:
                os.close(fd)
            got = h5py_opens(h5, "r")
            if got != 16:
                T.fail("after the second write and close: %r rows, expected 16" % (got,))

            # another program changes FILE: the mount follows it before it
            # writes, never from its stale view
            with h5py.File(h5, "r+") as f:
                f["rows"].resize((17, 4))
                f["rows"][16] = [7, 7, 7, 7]
            e, dt = append(ds, more)
            if e:
                T.fail("append after h5py changed FILE: %s" % os.strerror(e))
            with h5py.File(h5, "r") as f:
                if f["rows"].shape[0] != 19 or list(f["rows"][16]) != [7, 7, 7, 7] or \
                        f["rows"][17:].tolist() != more.tolist():
                    T.fail("after h5py's change and an append: %r" % (f["rows"][...],))
                else:
                    print("ok   append after h5py changed FILE: both rows there")
    out = m.output()
    busy = [ln for ln in out.splitlines() if "EBUSY" in ln]
    if len(busy) != 1 or "locked by another program" not in busy[0]:
        T.fail("expected one EBUSY log line, got %r" % busy)
    stale = [ln for ln in out.splitlines() if "ESTALE" in ln]
    if stale:
        T.fail("expected no ESTALE log line, got %r" % stale)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
