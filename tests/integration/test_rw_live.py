#!/usr/bin/python3
"""Issue 33, "First contact", last item: a read-write mount is live like a
-o ro one between its own writes (README "Live files", man h5fs LIVE FILES).

- follow: the mount is idle; h5py adds a dataset, rewrites a dataset's
  values in place and adds an attribute; within a few refresh intervals
  the mount shows them (listing, bytes, getfattr).
- write after: setfattr, an append with `cat >>` and a pwrite into a
  dataset through the mount then succeed, and h5py reads them next to
  its own change; a mkdir right after another h5py change (before the
  mount has seen it) follows that change first.
- stale descriptor: descriptors opened before another program's change
  (an append one, a pwrite one) fail their next write with ESTALE and
  one log line; FILE stays as h5py left it, and a descriptor opened
  afterwards writes.
- own writes: the mount's own writes (setfattr, mkdir, an append, a
  pwrite) are no change of FILE: -o verbose never says "reads are
  checked from now on" (the first change's line), and a write descriptor
  opened before them still writes after several refresh intervals (a new
  generation would have made it stale); then an h5py change does give
  that line (the check can fail).
- refresh=0: a read-write mount that does not follow changes refuses
  writes with ESTALE after h5py changed FILE, as before.
Every wait is bounded; every mount is unmounted by its context manager.
"""
import errno
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

FOLLOW_WAIT = 6.0       # seconds: a few refresh intervals (-o refresh=1)
CHECKED = "reads are checked from now on"


def make(path):
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("rows", data=np.arange(40, dtype="<i8").reshape(10, 4), maxshape=(None, 4),
                         chunks=(8, 4))
        f.create_dataset("vals", data=np.arange(16, dtype="<i4"))
        f.attrs["title"] = "v1"


def wait_for(what, fn, timeout=FOLLOW_WAIT):
    """Poll fn() until it is true or timeout seconds passed (a failure)."""
    if T.wait_until(fn, timeout):
        return True
    T.fail("%s: not seen within %.0f s" % (what, timeout))
    return False


def read(path):
    with open(path, "rb") as fh:
        return fh.read()


def xattr(path, name):
    try:
        return os.getxattr(path, name)
    except OSError:
        return None


def write_err(fd, data, off=None):
    """0, or the errno of one write()/pwrite()."""
    try:
        if off is None:
            os.write(fd, data)
        else:
            os.pwrite(fd, data, off)
    except OSError as e:
        return e.errno
    return 0


def sh(cmd):
    return subprocess.run(cmd, shell=True, timeout=30, stdout=subprocess.PIPE, stderr=subprocess.STDOUT).returncode


def follow_and_write(wd):
    h5 = os.path.join(wd, "run.h5")
    mnt = os.path.join(wd, "mnt")
    make(h5)
    rows_bin = os.path.join(wd, "rows.bin")
    with open(rows_bin, "wb") as fh:
        fh.write(np.arange(200, 208, dtype="<i8").tobytes())
    with T.Mount(h5, mnt, ["-o", "verbose"]) as m, m.watchdog(120):
        # seen once before the change: the kernel and the mount cache them
        if sorted(os.listdir(mnt)) != ["rows", "vals"] or read(os.path.join(mnt, "vals")) != \
                np.arange(16, dtype="<i4").tobytes() or xattr(mnt, "user.title") != b"v1":
            T.fail("mounted tree: %r" % (sorted(os.listdir(mnt)),))

        # (1) h5py changes FILE while the mount is idle
        with h5py.File(h5, "r+") as f:
            f.create_dataset("added", data=np.arange(5, dtype="<i2"))
            f["vals"][...] = np.arange(16, dtype="<i4") * 10
            f.attrs["note"] = "foreign"
        new_vals = (np.arange(16, dtype="<i4") * 10).tobytes()
        ok = wait_for("h5py's new dataset in the listing", lambda: "added" in os.listdir(mnt))
        ok &= wait_for("h5py's new dataset's bytes",
                       lambda: read(os.path.join(mnt, "added")) == np.arange(5, dtype="<i2").tobytes())
        ok &= wait_for("h5py's rewritten values", lambda: read(os.path.join(mnt, "vals")) == new_vals)
        ok &= wait_for("h5py's new attribute", lambda: xattr(mnt, "user.note") == b"foreign")
        if ok:
            print("ok   a read-write mount shows h5py's dataset, values and attribute")
        if CHECKED not in m.output():
            T.fail("the change was not logged as the first change (-o verbose): %r" % m.output()[-2000:])

        # (2) writes through the mount after the change
        try:
            os.setxattr(os.path.join(mnt, "vals"), "user.by_mount", b"yes")
        except OSError as e:
            T.fail("setfattr after h5py's change: %s" % e)
        rc = sh("cat %s >> %s" % (rows_bin, os.path.join(mnt, "rows")))
        if rc:
            T.fail("cat >> after h5py's change: exit status %d" % rc)
        fd = os.open(os.path.join(mnt, "vals"), os.O_WRONLY)
        try:
            e = write_err(fd, np.array([7, 7], dtype="<i4").tobytes(), 8)
        finally:
            os.close(fd)
        if e:
            T.fail("pwrite after h5py's change: %s" % os.strerror(e))
        # a change the mount has not seen yet when the next write comes:
        # the write follows it first (mkdir at once after h5py's close)
        with h5py.File(h5, "r+") as f:
            f.attrs["late"] = "x"
        try:
            os.mkdir(os.path.join(mnt, "grp"))
            # mkdir joins the link batch (linked within a second, FILE's
            # lock held meanwhile): the directory's fsync is where it is
            # in FILE, as for a new file (MODIFY.md)
            T.fsync_dir(mnt)
        except OSError as e:
            T.fail("mkdir right after h5py's change: %s" % e)
        with h5py.File(h5, "r") as f:
            if "grp" not in f or f.attrs.get("late") != "x":
                T.fail("h5py after its change and an immediate mkdir: %r, %r" % (list(f), f.attrs.get("late")))
            else:
                print("ok   mkdir right after h5py's change: both there")
        with h5py.File(h5, "r") as f:
            want_vals = np.arange(16, dtype="<i4") * 10
            want_vals[2:4] = 7
            got = (f["vals"].attrs.get("by_mount"), f["rows"].shape, f["rows"][10:].tolist(),
                   f["vals"][...].tolist(), f["added"][...].tolist(), f.attrs.get("note"))
            want = ("yes", (12, 4), np.arange(200, 208).reshape(2, 4).tolist(), want_vals.tolist(),
                    list(range(5)), "foreign")
            if got != want:
                T.fail("h5py after the mount's writes: %r, expected %r" % (got, want))
            else:
                print("ok   setfattr, cat >> and pwrite after h5py's change: h5py reads them and its own")

        # (3) descriptors opened before another program's change
        fa = os.open(os.path.join(mnt, "rows"), os.O_WRONLY | os.O_APPEND)
        fw = os.open(os.path.join(mnt, "vals"), os.O_WRONLY)
        try:
            with h5py.File(h5, "r+") as f:
                f["rows"].resize((13, 4))
                f["rows"][12] = [9, 9, 9, 9]
            wait_for("h5py's row", lambda: os.stat(os.path.join(mnt, "rows")).st_size == 13 * 32)
            e1 = write_err(fa, np.arange(4, dtype="<i8").tobytes())
            e2 = write_err(fw, np.array([5], dtype="<i4").tobytes(), 0)
        finally:
            os.close(fa)
            os.close(fw)
        if e1 != errno.ESTALE or e2 != errno.ESTALE:
            T.fail("writes of descriptors opened before h5py's change: %s, %s, expected ESTALE"
                   % (errno.errorcode.get(e1, e1), errno.errorcode.get(e2, e2)))
        else:
            print("ok   descriptors opened before h5py's change: ESTALE")
        with h5py.File(h5, "r") as f:
            if f["rows"].shape != (13, 4) or f["rows"][12].tolist() != [9, 9, 9, 9] or f["vals"][0] != 0:
                T.fail("FILE after the refused writes: rows %r, vals[0] %r" % (f["rows"].shape, f["vals"][0]))
        rc = sh("cat %s >> %s" % (rows_bin, os.path.join(mnt, "rows")))
        with h5py.File(h5, "r") as f:
            if rc or f["rows"].shape != (15, 4) or f["rows"][12].tolist() != [9, 9, 9, 9]:
                T.fail("a new descriptor's append: status %d, rows %r" % (rc, f["rows"].shape))
            else:
                print("ok   a descriptor opened after the change appends")
    stale = [ln for ln in m.output().splitlines() if "ESTALE" in ln]
    if not stale or not all("after this descriptor was opened" in ln for ln in stale) or len(stale) > 2:
        T.fail("expected one log line per refused descriptor write, got %r" % stale)


def own_writes(wd):
    h5 = os.path.join(wd, "own.h5")
    mnt = os.path.join(wd, "mnt-own")
    make(h5)
    # mounted at once: FILE's stamp may be too fresh to vouch for the first
    # generation, which is then opened anew without a change; a descriptor
    # opened before that writes on (test_append_fixed.py met it)
    with T.Mount(h5, mnt, ["-o", "verbose"]) as m, m.watchdog(120):
        rows = os.path.join(mnt, "rows")
        fa = os.open(rows, os.O_WRONLY | os.O_APPEND)
        try:
            os.setxattr(os.path.join(mnt, "vals"), "user.mine", b"1")
            os.mkdir(os.path.join(mnt, "grp"))
            if sh("printf '%%032d' 0 >> %s" % rows):
                T.fail("own append failed")
            fd = os.open(os.path.join(mnt, "vals"), os.O_WRONLY)
            try:
                os.pwrite(fd, b"\1\0\0\0", 0)
            finally:
                os.close(fd)
            time.sleep(3.5)     # several refresh intervals, the watcher's looks
            e = write_err(fa, np.arange(4, dtype="<i8").tobytes())
        finally:
            os.close(fa)
        if e:
            T.fail("a write descriptor opened before the mount's own writes: %s" % os.strerror(e))
        if CHECKED in m.output():
            T.fail("the mount's own writes were taken for another program's change: %r" % m.output()[-2000:])
        else:
            print("ok   the mount's own writes are no change (same generation, descriptor still writes)")
        if os.stat(rows).st_size != 12 * 32:
            T.fail("rows after two appends: %d bytes" % os.stat(rows).st_size)
        with h5py.File(h5, "r+") as f:
            f.attrs["x"] = 1
        wait_for("h5py's change after the mount's writes", lambda: CHECKED in m.output())


def no_refresh(wd):
    h5 = os.path.join(wd, "frozen.h5")
    mnt = os.path.join(wd, "mnt-frozen")
    make(h5)
    with T.Mount(h5, mnt, ["-o", "refresh=0"]) as m, m.watchdog(60):
        with h5py.File(h5, "r+") as f:
            f.attrs["note"] = "foreign"
        try:
            os.setxattr(os.path.join(mnt, "vals"), "user.by_mount", b"yes")
            T.fail("setfattr on a refresh=0 mount after h5py's change succeeded")
        except OSError as e:
            if e.errno != errno.ESTALE:
                T.fail("setfattr on a refresh=0 mount after h5py's change: %s, expected ESTALE" % e)
            else:
                print("ok   -o refresh=0: writes after h5py's change are ESTALE")
        if xattr(mnt, "user.note") is not None:
            T.fail("a refresh=0 mount followed h5py's change")


def main():
    wd = T.workdir("rw_live")
    follow_and_write(wd)
    own_writes(wd)
    no_refresh(wd)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
