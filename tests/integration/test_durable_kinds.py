#!/usr/bin/python3
"""Nothing answered success is lost, for every kind of write (issue 47
item 2 and its Tests): on a failing disk (fault_shim.so preloaded in the
daemon: the Nth pwrite or fsync of FILE, and every later one, fails with
EIO, or with ENOSPC as a full disk answers), a script of writes runs
through a read-write mount, each made durable by its own fsync(2) before
it counts as answered:

  append     cat >> rows (O_APPEND, 64 KiB of rows)
  overwrite  dd conv=notrunc into a contiguous dataset (a pwrite inside it)
  npy        np.save of a new array (NAME.npy -> dataset NAME)
  create     a new file written, fsync'd (cp: a uint8 dataset)
  trunc      cat x > d: O_TRUNC of a dataset that grows, new rows
  grow       truncate -s to more rows (fill rows appended)
  mkdir      a group; symlink: a soft link; rename: mv of a dataset
  xattr      setfattr of a new attribute (fsync of its object after)
  utime      touch -d of a dataset (its modification time)
  npygz      (a second series, mounted -o compress=gzip, where npy and
             create are deflated too) np.save of a 2 MiB array, its
             chunks filtered 16 at a time on the daemon's threads

After unmount, h5py must open FILE, and every write whose every call
returned success must be in it with its exact bytes, values or names;
writes that failed may be there or not. Once an error was returned, the
daemon must exit non-zero (it was not only a log line). Every N from 1 to
the count of the script's calls of that kind is tried, so the failure
lands in each write and each step of each commit in turn.
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

SHIM = os.path.join(T.BUILDDIR, "tests", "integration", "fault_shim.so")
ROWS0 = np.arange(40, dtype="<i4").reshape(20, 2)
MORE = (np.arange(16384 * 2, dtype="<i4") * 3).reshape(16384, 2)
NEWROWS = np.arange(200, 260, dtype="<i4").reshape(30, 2)
PATCH = bytes(range(256)) * 32
ARR = np.linspace(0, 1, 5000)
BLOB = bytes((i * 7) % 251 for i in range(70000))
BIG = np.round(np.cumsum(np.random.default_rng(47).standard_normal(1 << 18)), 2)


def make(path):
    with h5py.File(path, "w") as f:
        for n in ("rows", "trunc", "grow"):
            f.create_dataset(n, data=ROWS0, maxshape=(None, 2), chunks=(64, 2), fillvalue=-1)
        f.create_dataset("contig", data=np.zeros(65536, "u1"))
        f.create_dataset("mv_me", data=np.arange(3))
        f.create_group("g")


def fsync_path(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(p, data, flags):
    fd = os.open(p, flags, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def script(mnt, wd, gz):
    x = os.path.join(wd, "newrows.bin")
    NEWROWS.tofile(x)
    return ([("npygz", lambda: (np.save(mnt + "/big.npy", BIG), fsync_path(mnt + "/big")))] if gz else []) + [
        ("append", lambda: write_file(mnt + "/rows", MORE.tobytes(), os.O_WRONLY | os.O_APPEND)),
        ("overwrite", lambda: subprocess.run(
            "dd if=/dev/stdin of=%s/contig bs=8192 seek=1 conv=notrunc,fsync status=none" % mnt, shell=True,
            input=PATCH, check=True, timeout=60, stderr=subprocess.DEVNULL)),
        ("npy", lambda: (np.save(mnt + "/arr.npy", ARR), fsync_path(mnt + "/arr"))),
        ("create", lambda: write_file(mnt + "/blob", BLOB, os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
        ("trunc", lambda: subprocess.run("cat %s > %s/trunc && sync %s/trunc" % (x, mnt, mnt), shell=True,
                                         check=True, timeout=60, stderr=subprocess.DEVNULL)),
        ("grow", lambda: (os.truncate(mnt + "/grow", ROWS0.nbytes + 16), fsync_path(mnt + "/grow"))),
        ("mkdir", lambda: (os.mkdir(mnt + "/g/new"), fsync_path(mnt + "/g"))),
        ("symlink", lambda: (os.symlink("../rows", mnt + "/g/ln"), fsync_path(mnt + "/g"))),
        ("rename", lambda: (os.rename(mnt + "/mv_me", mnt + "/g/moved"), fsync_path(mnt))),
        ("xattr", lambda: (os.setxattr(mnt + "/g", "user.note", b"kept"), fsync_path(mnt + "/g"))),
        ("utime", lambda: (os.utime(mnt + "/grow", (1700000000, 1700000000)), fsync_path(mnt + "/grow"))),
    ]


def present(f, kind):
    """Whether FILE (open in h5py) holds the effect of the write `kind`."""
    if kind == "append":
        return np.array_equal(f["rows"][()], np.concatenate([ROWS0, MORE]))
    if kind == "overwrite":
        return f["contig"][8192:8192 + len(PATCH)].tobytes() == PATCH
    if kind == "npy":
        return "arr" in f and np.array_equal(f["arr"][()], ARR)
    if kind == "create":
        return "blob" in f and f["blob"][()].tobytes() == BLOB
    if kind == "trunc":
        return np.array_equal(f["trunc"][()], NEWROWS)
    if kind == "grow":
        return np.array_equal(f["grow"][()], np.concatenate([ROWS0, np.full((2, 2), -1, "<i4")]))
    if kind == "mkdir":
        return isinstance(f["g"].get("new"), h5py.Group)
    if kind == "symlink":
        lk = f["g"].get("ln", getlink=True)
        return isinstance(lk, h5py.SoftLink)
    if kind == "rename":
        return "moved" in f["g"] and "mv_me" not in f
    if kind == "xattr":
        v = f["g"].attrs.get("note")
        return (v.decode() if isinstance(v, bytes) else v) == "kept"
    if kind == "npygz":
        return "big" in f and f["big"].compression == "gzip" and np.array_equal(f["big"][()], BIG)
    if kind == "utime":
        return True     # (a time: stat after remount is test_tools.py's; here only that FILE opens)
    raise AssertionError(kind)


GZ_SEEN = set()     # whether npygz was answered, over the runs that had it


def run(wd, op, nth, err, gz=False):
    what = "%s %d (%s)%s" % (op, nth, errno.errorcode[err], " -o compress=gzip" if gz else "")
    h5 = os.path.join(wd, "kinds-%s-%d-%d%s.h5" % (op, nth, err, "-gz" if gz else ""))
    make(h5)
    mnt = os.path.join(wd, "mnt")
    saved = dict(os.environ)
    os.environ.update({"LD_PRELOAD": SHIM, "H5FS_FAULT_FILE": os.path.realpath(h5), "H5FS_FAULT_OP": op,
                       "H5FS_FAULT_N": str(nth), "H5FS_FAULT_ERRNO": str(err)})
    try:
        m = T.Mount(h5, mnt, opts=["-o", "rw,compress=gzip" if gz else "rw"])
        m.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    answered, failed = [], []
    try:
        with m.watchdog(180):
            for kind, fn in script(mnt, wd, gz):
                try:
                    fn()
                    answered.append(kind)
                except (OSError, subprocess.CalledProcessError) as e:
                    failed.append((kind, str(e)[:80]))
    finally:
        m.stop()
    try:
        with h5py.File(h5, "r") as f:
            for kind in answered:
                if not present(f, kind):
                    T.fail("%s: %s answered success, not in FILE after unmount" % (what, kind))
    except (OSError, KeyError) as e:
        T.fail("%s: h5py cannot read FILE: %s" % (what, e))
        return None
    if gz:
        GZ_SEEN.add("npygz" in answered)
    if failed and m.returncode == 0:
        T.fail("%s: %s failed, the daemon exited 0" % (what, failed[0][0]))
    if not failed and m.returncode != 0:
        T.fail("%s: nothing failed, the daemon exited %s" % (what, m.returncode))
    return bool(failed)


def main():
    if not os.path.exists(SHIM):
        T.fail("%s not built (make check builds it)" % SHIM)
        sys.exit(T.finish())
    if T.sanitized():
        print("SKIP: a sanitizer build (its runtime must be the first preloaded library)")
        sys.exit(77)
    wd = T.workdir("durable-kinds")
    reported = 0
    runs = 0
    for op, ns in (("pwrite", range(1, 60, 3)), ("fsync", range(1, 40, 2))):
        for nth in ns:
            for err in ((errno.EIO, errno.ENOSPC) if op == "pwrite" else (errno.EIO,)):
                r = run(wd, op, nth, err)
                runs += 1
                reported += bool(r)
    # deflated: the failure in each of the first writes (np.save's chunks
    # come first: 128 of 16 KiB) and fsyncs, then every 23rd, past them
    for op, ns in (("pwrite", list(range(1, 12)) + list(range(12, 260, 23))), ("fsync", range(1, 40, 4))):
        for nth in ns:
            r = run(wd, op, nth, errno.EIO, gz=True)
            runs += 1
            reported += bool(r)
    print("durable kinds: %d runs, %d with an error returned" % (runs, reported))
    if GZ_SEEN != {True, False}:
        T.fail("-o compress=gzip: np.save was %s: the failures never landed both in it and after it"
               % ("always answered" if True in GZ_SEEN else "never answered"))
    if not reported:
        T.fail("no injected error was ever returned")
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
