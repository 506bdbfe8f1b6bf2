#!/usr/bin/python3
"""A failed replacement leaves what was there; an error returned to its
program leaves the mount writable; a full disk refuses before the answer
(issue 56 items 2-4).

Replacements - np.save over NAME (NAME.npy: a new dataset moved over
NAME), `sed -i` (a temporary file renamed over the name), `cp` over a
dataset (O_TRUNC, new rows) - each run on a mount whose daemon has
fault_shim.so preloaded: the Nth pwrite, or the Nth fsync, of FILE fails
once with EIO (H5FS_FAULT_ONCE), for every N until the replacement
succeeds. Each time `fusermount3 -u` is not refused as busy (issue 71),
and when the program reported an error, FILE (after unmount, read by
h5py) holds the old object byte for byte; when it did
not, the new one; never neither, never a temporary left. After the
failure the same mount still makes a group (the error reached its
program: the mount is not poisoned) and unmount exits 0 unless an
answered change was lost. On h5py's default format (symbol-table groups)
and libver="latest" (compact groups).

Then a full disk (a 8 MiB tmpfs filled by another file): an append and a
cp over a dataset are refused with ENOSPC before their answer (nothing
answered is lost, the old rows kept), and once the filler is removed an
append, mkdir, setfattr and a new file work on the same mount, which
unmounts with 0.
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

SHIM = os.path.join(T.BUILDDIR, "tests", "integration", "fault_shim.so")
OLD = np.arange(60, dtype="<f8").reshape(10, 6)
NEW = np.full((4, 3), 7, dtype="<i4")
TXT_OLD = b"foo bar\n" * 5
TXT_NEW = b"BAR bar\n" * 5


def make(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("g/arr", data=OLD)
        f.create_dataset("txt", data=np.frombuffer(TXT_OLD, dtype="u1"), maxshape=(None,), chunks=(64,))


def replace(kind, mnt, work):
    """Run the replacement; None when it succeeded, else the error."""
    try:
        if kind == "npsave":
            np.save(os.path.join(mnt, "g", "arr.npy"), NEW)
            return None
        if kind == "sed":
            r = subprocess.run(["sed", "-i", "s/foo/BAR/", os.path.join(mnt, "txt")], capture_output=True,
                               timeout=60)
        else:
            src = os.path.join(work, "src.txt")
            with open(src, "wb") as fh:
                fh.write(TXT_NEW)
            r = subprocess.run(["cp", src, os.path.join(mnt, "txt")], capture_output=True, timeout=60)
        return r.stderr.decode().strip() or "exit %d" % r.returncode if r.returncode else None
    except OSError as e:
        return str(e)


def state(path, kind):
    with h5py.File(path, "r") as f:
        if kind == "npsave":
            if "arr" not in f["g"]:
                return "gone"
            a = f["g/arr"][()]
            extra = sorted(set(f["g"]) - {"arr", "made"})
            tag = "new" if a.shape == NEW.shape and np.array_equal(a, NEW) else \
                "old" if np.array_equal(a, OLD) else "other"
        else:
            if "txt" not in f:
                return "gone"
            t = f["txt"][()].tobytes()
            extra = sorted(set(f) - {"g", "txt", "made"})
            tag = "new" if t == TXT_NEW else "old" if t == TXT_OLD else "other %r" % t[:40]
        return tag + (" + leftover %s" % extra if extra else "")


def sweep(work, libver, kind, op):
    h5 = os.path.realpath(os.path.join(work, "r_%s.h5" % libver))
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    for n in range(1, 80):
        make(h5, libver)
        env = {"LD_PRELOAD": SHIM, "H5FS_FAULT_FILE": h5, "H5FS_FAULT_OP": op, "H5FS_FAULT_N": str(n),
               "H5FS_FAULT_ONCE": "1"}
        m = T.Mount(h5, mnt, env=env)
        m.start()
        try:
            err = replace(kind, mnt, work)
            try:
                os.mkdir(os.path.join(mnt, "made"))
                after = None
            except OSError as e:
                after = e
        finally:
            m.stop()
        log = m.output()
        if m.busy:
            T.fail("%s %s %s N=%d: fusermount3 -u after the fault: %s" % (libver, kind, op, n, m.busy))
        got = state(h5, kind)
        what = "%s %s %s N=%d" % (libver, kind, op, n)
        want = "old" if err else "new"
        # Under load the Nth fsync may be a write-behind commit's that no
        # request waits for (for example the link batch's timer, 20 ms idle, commits a
        # temporary file's name apart from its rename): a change answered
        # and then not written marks the mount lost, as documented (h5fs(1)
        # EXIT STATUS, DESIGN.md "Lost"). Then the program's next request
        # fails, FILE keeps the old object, and what was answered before
        # (the temporary's name) may be there.
        lost = m.returncode == 1      # the daemon's exit: an answered change lost
        if lost and err and (got == "old" or got.startswith("old + leftover ")):
            print("%s: the fault met a write-behind commit (the mount marked lost, as documented)" % what)
        else:
            if got != want:
                T.fail("%s: %s, expected %s (the program said: %s; the daemon: %s)" % (
                    what, got, want, err or "success", log.strip()[-600:]))
            if err and after is not None:
                T.fail("%s: after the failure reached its program, mkdir: %s (the mount was poisoned; the "
                       "daemon: %s)" % (what, after, log.strip()[-600:]))
        if err is None:
            return n
    T.fail("%s %s %s: never succeeded" % (libver, kind, op))
    return 0


def full_disk(work):
    disk = os.path.join(work, "disk")
    with T.small_disk(disk, "8m"):
        h5 = os.path.join(disk, "f.h5")
        mnt = os.path.join(work, "mnt_full")
        os.makedirs(mnt, exist_ok=True)
        with h5py.File(h5, "w") as f:
            f.create_dataset("app", data=np.arange(100, dtype="<i8"), maxshape=(None,), chunks=(1024,))
            f.create_dataset("d", data=np.arange(1000, dtype="<i8"), maxshape=(None,), chunks=(1024,))
            f.create_group("g")
        m = T.Mount(h5, mnt)
        m.start()
        try:
            with open(os.path.join(disk, "filler"), "wb") as fh:
                try:
                    while True:
                        fh.write(b"x" * 65536)
                except OSError:
                    pass
            rows = np.arange(5000, dtype="<i8").tobytes()

            def app():
                with open(os.path.join(mnt, "app"), "ab") as fh:
                    fh.write(rows)

            def cpover():
                with open(os.path.join(mnt, "d"), "wb") as fh:
                    fh.write(np.arange(3000, dtype="<i8").tobytes())
            T.expect_err("append on a full disk", app, errno.ENOSPC)
            T.expect_err("cp over a dataset on a full disk", cpover, errno.ENOSPC)
            os.unlink(os.path.join(disk, "filler"))
            app()
            os.mkdir(os.path.join(mnt, "g", "x"))
            os.setxattr(os.path.join(mnt, "g"), "user.k", b"v")
            with open(os.path.join(mnt, "g", "newfile"), "wb") as fh:
                fh.write(b"hello" * 100)
        except OSError as e:
            T.fail("full disk: once space was freed: %s" % e)
        finally:
            m.stop()
        if m.returncode:
            T.fail("full disk: unmount exits %s: %s" % (m.returncode, m.output()[-400:]))
        with h5py.File(h5, "r") as f:
            if f["app"].shape != (5100,) or not np.array_equal(f["app"][100:], np.arange(5000)):
                T.fail("full disk: /app has %s rows after the append that followed the free" % (f["app"].shape,))
            if not np.array_equal(f["d"][()], np.arange(1000)):
                T.fail("full disk: /d lost its old rows: %s rows" % (f["d"].shape,))
            if sorted(f["g"]) != ["newfile", "x"] or f["g"].attrs.get("user.k", f["g"].attrs.get("k")) is None:
                T.fail("full disk: /g holds %s, attrs %s" % (sorted(f["g"]), dict(f["g"].attrs)))


def main():
    if not os.path.exists(SHIM):
        T.skip("fault_shim.so not built")
    work = T.workdir("replace_fault")
    runs = 0
    for libver in ("earliest", "latest"):
        for kind in ("npsave", "sed", "cp"):
            for op in ("pwrite", "fsync"):
                runs += sweep(work, libver, kind, op)
    full_disk(work)
    print("replacements under one-shot faults: %d runs" % runs)
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
