#!/usr/bin/python3
"""The commit layer's kinds alike (issue 81 item 4; src/fuse/commit/commit.h):
each kind's policy read from one place, its flush in fs_meta_sync, its
admit before the answer.

  * policy: the write descriptors' kind's max_bytes (H5FS_COMMIT_WRITES_BYTES,
    commit/sched.c) is what the append stream commits by: with 1 KiB, rows
    appended through a descriptor that stays open are committed by the
    writing request, and h5py (not locking FILE) reads them while the
    descriptor is open; with the default (64 MiB), the same rows are not
    committed after the same wait (max_ms set to an hour on both mounts,
    -o idle_commit=0: nothing else commits them).
  * flush: fsyncdir (fs_meta_sync) commits every write descriptor's
    pending rows, durably, and gives FILE's lock back (h5py opens FILE
    with its lock); a write descriptor's own fsync commits its own rows,
    not another dataset's descriptor's (POSIX fsync(2): the file's data).
    The descriptor writes on after the sync, and its close commits.
    Two descriptors overwriting disjoint halves of a chunked dataset and
    a third appending rows, while another thread fsyncdirs without pause
    (each sync commits the descriptors under their writes): no write
    refused, the daemon logs no error, every byte is where the writes put
    it. (The race the first flush had - a hold given back by the sync's
    commit while a write of the descriptor was between its lock and its
    ticket, or applying - showed in test_procs' mix of truncates,
    renames and O_DIRECT writes, EBUSY and ESTALE; see wfile.c
    wfile_give_back.)
  * stream admit: np.save's streams' kind refuses a stream's first bytes
    written out of order (EINVAL) before the answer, and makes an ordered
    one.
  * admit: the names kind refuses, before anything moves, a rename of a
    soft link of a 4,090-byte target into a latest-format group that is
    dense (ENAMETOOLONG: more than its dense store keeps in place), with
    its one log line; the link stays where it was, and the group's later
    creates are all kept (read by h5py after the unmount). The attribute
    values' kind refuses a name pending in its batch with XATTR_CREATE
    (EEXIST) and a new one with XATTR_REPLACE (ENODATA) at once, and
    takes the largest value the kernel passes (64 KiB) into an object's
    dense attribute storage: h5py reads it after the unmount.
"""
import errno
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

ROW = 16
HOUR_MS = str(3600 * 1000)


def rows(a, b):
    return np.frombuffer(b"".join(b"%016d" % r for r in range(a, b)), dtype=np.uint8).reshape(b - a, ROW)


def make(path):
    with h5py.File(path, "w") as f:
        for k in ("log", "other"):
            f.create_dataset(k, data=rows(0, 4), maxshape=(None, ROW), chunks=(8, ROW))


def peek(path, name="log"):
    """The rows FILE has committed, read without FILE's lock (the daemon
    may hold it)."""
    with h5py.File(path, "r", locking=False) as f:
        return f[name][()]


def locked_rows(path, name="log"):
    """FILE's rows as h5py reads them with its lock, or None while the
    daemon holds FILE."""
    try:
        with h5py.File(path, "r") as f:
            return f[name][()]
    except OSError as e:
        if "lock" in str(e).lower():
            return None
        raise


def wait_rows(path, want, limit=10.0):
    t0 = time.monotonic()
    got = peek(path)
    while len(got) < want and time.monotonic() - t0 < limit:
        time.sleep(0.1)
        got = peek(path)
    return got


def policy(wd):
    path, mnt = os.path.join(wd, "p.h5"), os.path.join(wd, "mnt-p")
    for max_bytes, committed in (("1024", True), (None, False)):
        make(path)
        env = {"H5FS_COMMIT_WRITES_MS": HOUR_MS}
        if max_bytes:
            env["H5FS_COMMIT_WRITES_BYTES"] = max_bytes
        with T.Mount(path, mnt, ["-o", "idle_commit=0"], env=env) as m, m.watchdog(60):
            fd = os.open(os.path.join(mnt, "log"), os.O_WRONLY | os.O_APPEND)
            for i in range(4, 132, 8):              # 128 rows of 16 bytes, 128 bytes a write
                os.write(fd, rows(i, i + 8).tobytes())
            if committed:
                got = wait_rows(path, 4 + 64)
                if len(got) < 4 + 64 or not np.array_equal(got, rows(0, len(got))):
                    T.fail("max_bytes 1024: h5py reads %d rows while the descriptor is open, want >= 68"
                           % len(got))
            else:
                time.sleep(1.5)
                got = peek(path)
                if len(got) != 4:
                    T.fail("max_bytes 64 MiB, max_ms 1 h: %d rows committed while the descriptor is open, "
                           "want 4" % len(got))
            os.close(fd)
            if not m.alive():
                T.fail("policy: daemon died: %s" % m.output()[-2000:])
        got = peek(path)
        if not np.array_equal(got, rows(0, 132)):
            T.fail("policy (max_bytes %s): after close %d rows" % (max_bytes, len(got)))
    print("policy: max_bytes 1 KiB commits appended rows while the descriptor is open; 64 MiB does not")


def flush(wd):
    path, mnt = os.path.join(wd, "s.h5"), os.path.join(wd, "mnt-s")
    make(path)
    env = {"H5FS_COMMIT_WRITES_MS": HOUR_MS, "H5FS_COMMIT_WRITES_BYTES": str(1 << 40)}
    with T.Mount(path, mnt, ["-o", "idle_commit=0"], env=env) as m, m.watchdog(60):
        fd = os.open(os.path.join(mnt, "log"), os.O_WRONLY | os.O_APPEND)
        od = os.open(os.path.join(mnt, "other"), os.O_WRONLY | os.O_APPEND)
        os.write(fd, rows(4, 14).tobytes())
        os.write(od, rows(4, 6).tobytes())
        time.sleep(0.3)
        if len(peek(path)) != 4 or locked_rows(path) is not None:
            T.fail("flush: rows committed, or FILE let go, before any sync")
        # another dataset's descriptor's fsync: its own rows, not these
        os.fsync(od)
        if len(peek(path, "other")) != 6:
            T.fail("flush: a descriptor's fsync did not commit its own rows")
        if len(peek(path)) != 4:
            T.fail("flush: a descriptor's fsync committed another descriptor's rows")
        # fsyncdir: every kind flushed, the write descriptors' too
        dfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)
        got = locked_rows(path)
        if got is None or not np.array_equal(got, rows(0, 14)):
            T.fail("flush: after fsyncdir h5py (locking FILE) reads %r" % (None if got is None else len(got)))
        # the descriptors write on, and close commits
        os.write(fd, rows(14, 20).tobytes())
        os.close(fd)
        os.close(od)
        got = locked_rows(path)
        if got is None or not np.array_equal(got, rows(0, 20)):
            T.fail("flush: after close %r" % (None if got is None else len(got)))
        if not m.alive():
            T.fail("flush: daemon died: %s" % m.output()[-2000:])
    print("flush: fsyncdir commits every descriptor's rows and lets FILE go; a descriptor's fsync its own")


def flush_race(wd):
    path, mnt = os.path.join(wd, "r.h5"), os.path.join(wd, "mnt-r")
    size, cb = 1 << 20, 64 << 10
    rng = random.Random(81)
    base = bytes(rng.randbytes(size))
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("big", data=np.frombuffer(base, np.uint8), maxshape=(None,), chunks=(cb,))
        f.create_dataset("log", data=rows(0, 4), maxshape=(None, ROW), chunks=(8, ROW))
    model = bytearray(base)
    errs = []
    stop = threading.Event()

    def writer(k):
        r = random.Random(k)
        fd = os.open(os.path.join(mnt, "big"), os.O_WRONLY)
        try:
            for _ in range(300):
                n = r.choice((512, 4096, 70000))
                off = k * size // 2 + r.randrange(0, size // 2 - n)
                b = r.randbytes(n)
                os.pwrite(fd, b, off)
                model[off:off + n] = b
        except OSError as e:
            errs.append("overwrite: %s" % errno.errorcode.get(e.errno, e.errno))
        finally:
            os.close(fd)

    def appender():
        fd = os.open(os.path.join(mnt, "log"), os.O_WRONLY | os.O_APPEND)
        try:
            for i in range(4, 604, 3):
                os.write(fd, rows(i, i + 3).tobytes())
        except OSError as e:
            errs.append("append: %s" % errno.errorcode.get(e.errno, e.errno))
        finally:
            os.close(fd)

    syncs = [0]

    def syncer():
        while not stop.is_set():
            dfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dfd)
                syncs[0] += 1
            except OSError as e:
                errs.append("fsyncdir: %s" % errno.errorcode.get(e.errno, e.errno))
            finally:
                os.close(dfd)

    with T.Mount(path, mnt, ["-o", "idle_commit=0"]) as m, m.watchdog(120):
        ts = [threading.Thread(target=writer, args=(k,)) for k in (0, 1)] + [threading.Thread(target=appender)]
        s = threading.Thread(target=syncer)
        s.start()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        stop.set()
        s.join()
        if errs:
            T.fail("flush race: refused: %r" % errs[:10])
        with open(os.path.join(mnt, "big"), "rb") as fh:
            if fh.read() != bytes(model):
                T.fail("flush race: the mount reads other bytes than were written")
        log = m.output()
    for bad in ("without its lock", "EBUSY", "ESTALE", "lost"):
        if bad in log:
            T.fail("flush race: the daemon logs %r: %s" % (bad, log[-1500:]))
    with h5py.File(path, "r") as f:
        if bytes(f["big"][()]) != bytes(model):
            T.fail("flush race: h5py reads other bytes than were written")
        if not np.array_equal(f["log"][()], rows(0, 604)):
            T.fail("flush race: h5py reads %d rows, want 604" % len(f["log"]))
    print("flush race: %d fsyncdirs beside two overwriters and an appender, nothing refused, every byte kept"
          % syncs[0])


def admit(wd):
    path, mnt = os.path.join(wd, "n.h5"), os.path.join(wd, "mnt-n")
    with h5py.File(path, "w", libver="latest") as f:
        f.create_group("c")
        e = f.create_group("e")
        for i in range(12):
            e["x%d" % i] = [i]
    target = "x" * 4090
    big = b"v" * 65536
    with T.Mount(path, mnt) as m, m.watchdog(60):
        os.setxattr(mnt + "/e", "user.fresh", b"1")        # pending in the attribute batch
        T.expect_err("XATTR_CREATE of a pending name",
                     lambda: os.setxattr(mnt + "/e", "user.fresh", b"2", os.XATTR_CREATE), (errno.EEXIST,))
        T.expect_err("XATTR_REPLACE of a new name",
                     lambda: os.setxattr(mnt + "/e", "user.none", b"2", os.XATTR_REPLACE), (errno.ENODATA,))
        for i in range(12):                                # /e's attributes go dense
            os.setxattr(mnt + "/e", "user.a%d" % i, b"%d" % i)
        os.setxattr(mnt + "/e", "user.big", big)
        os.symlink(target, mnt + "/c/l")       # a compact group takes it
        T.expect_err("rename of a 4 KiB soft link into a dense group",
                     lambda: os.rename(mnt + "/c/l", mnt + "/e/l"), (errno.ENAMETOOLONG,))
        for i in range(10):
            with open(mnt + "/e/f%d" % i, "w") as fh:
                fh.write("data%d\n" % i)
        os.mkdir(mnt + "/e/after")
        if os.readlink(mnt + "/c/l") != target or os.path.lexists(mnt + "/e/l"):
            T.fail("admit: the refused rename moved the link")
        if not m.alive():
            T.fail("admit: daemon died")
        log = m.output()
    if "rename /e/l: File name too long" not in log or "dense store keeps in place" not in log:
        T.fail("admit: the names kind's refusal not logged: %s" % log[-1500:])
    if "lost" in log:
        T.fail("admit: the daemon lost a change: %s" % log[-1500:])
    with h5py.File(path, "r") as f:
        names = sorted(f["e"])
        if "l" in names or "after" not in names or any("f%d" % i not in names for i in range(10)):
            T.fail("admit: h5py reads %r" % names)
        if f["c"].get("l", getlink=True).path != target or bytes(f["e/f9"][()]) != b"data9\n":
            T.fail("admit: the link or a file's bytes differ")
        v = f["e"].attrs.get("big")
        v = v.encode() if isinstance(v, str) else bytes(v) if v is not None else None
        if v != big or f["e"].attrs.get("fresh") not in ("1", b"1") or "none" in f["e"].attrs:
            T.fail("admit: attributes read %r" % sorted(f["e"].attrs))
    print("admit: a rename the dense group cannot take refused at once (ENAMETOOLONG), nothing lost")


def stream_admit(wd):
    """np.save's streams' kind admits a write before the answer: the
    first bytes out of order are EINVAL at once (logged, no dataset made,
    the descriptor's later writes answer the same); a stream written in
    order after it is made as np.save's is."""
    import io
    path, mnt = os.path.join(wd, "s.h5"), os.path.join(wd, "mnt-s")
    with h5py.File(path, "w") as f:
        f.create_group("g")
    buf = io.BytesIO()
    np.save(buf, np.arange(1000, dtype="<i4"))
    data = buf.getvalue()
    with T.Mount(path, mnt) as m, m.watchdog(60):
        fd = os.open(mnt + "/g/bad.npy", os.O_CREAT | os.O_WRONLY, 0o644)
        try:
            T.expect_err("np.save stream's first bytes out of order",
                         lambda: os.pwrite(fd, data[200:], 200), (errno.EINVAL,))
            T.expect_err("the same stream's write in order after its refusal",
                         lambda: os.pwrite(fd, data, 0), (errno.EINVAL,))
        finally:
            try:
                os.close(fd)
            except OSError:
                pass
        with open(mnt + "/g/good.npy", "wb") as fh:
            fh.write(data)
        log = m.output()
    if "np.save /g/bad.npy: the stream's first bytes written out of order" not in log:
        T.fail("stream admit: the refusal not logged: %s" % log[-1500:])
    with h5py.File(path, "r") as f:
        if "bad" in f["g"] or not np.array_equal(f["g/good"][()], np.arange(1000, dtype="<i4")):
            T.fail("stream admit: h5py reads %r" % sorted(f["g"]))
    print("stream admit: a stream's bytes out of order refused at once (EINVAL), an ordered one made")


def main():
    wd = T.workdir("kinds")
    policy(wd)
    flush(wd)
    flush_race(wd)
    admit(wd)
    stream_admit(wd)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
