#!/usr/bin/python3
"""Nothing acknowledged is lost, and FILE carries no reserve (issue 47
items 2 and 3; doc/h5fs.1 "WRITE-BEHIND", member/xbatch.c).

- checked before the answer: values too large for their place (a
  5,000-byte fixed string in dense storage, 65,536 bytes in a header, the
  9th attribute of a compact group holding one of 5,000 bytes) are refused
  at once or stored; every setxattr answered 0 is in FILE after unmount
  (h5py), on an h5py-default file and a libver="latest" one, and the
  daemon exits 0 (nothing lost);
- bounded window: a loop setting one existing attribute every 2 ms, the
  daemon killed (-9): FILE holds a value at least as new as the last one
  answered 1 s before the kill (the batch commits within 100 ms of its
  first change, whatever follows);
- a full disk (a small tmpfs, mounted here): setxattr (new names and
  existing ones) and mkdir until ENOSPC, and an np.save larger than the
  disk (ENOSPC, not EINVAL; no dataset made); every call answered success
  is in FILE after unmount; after the filler is removed, setxattr, mkdir
  and np.save work again without a remount; the daemon exits 0;
- a failing disk (fault_shim.so, LD_PRELOAD in the daemon: the Nth pwrite
  or fsync of FILE and every later one fail with EIO): either everything
  answered is in FILE and the daemon exits 0, or the error is reported:
  fsync of the mount's root returns EIO, the next setxattr and mkdir get
  EIO, the daemon exits non-zero; in both cases h5py opens FILE and every
  attribute there holds a value it was given (its last good commit);
- space: with -o idle_commit=1, FILE's size is its end of allocation
  (the superblock's EOF address, without the room commits reserve past
  it) within 5 s after a setxattr and after a mkdir, within 0.9 s after a
  write-behind batch, and after unmount; an np.save whose header declares
  2**40 float64 and that stops after 1 MiB leaves no space taken, and the
  next np.save is placed below it;
- mtime: the idle trim keeps FILE's mtime (datasets without stored times
  show it): a second rsync -a out after it sends nothing (or, when the
  batch of rsync's rename made it durable and trimmed FILE before the
  first rsync out, after 3 s of the idle kind's looks);
- statfs: a read-write mount reports the room of FILE's file system less
  -o min_free's margin as free; a -o ro mount none.
Needs root (mount -t tmpfs)."""
import errno
import os
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

SHIM = os.path.join(T.BUILDDIR, "tests", "integration", "fault_shim.so")


def eoa(path):
    """The superblock's end-of-file address (II.A; 8-byte addresses, no
    user block, as h5py writes)."""
    with open(path, "rb") as fh:
        b = fh.read(64)
    if b[:8] != b"\x89HDF\r\n\x1a\n":
        raise AssertionError("%s: no superblock at 0" % path)
    return struct.unpack("<Q", b[28:36] if b[8] in (2, 3) else b[40:48])[0]


def attrs(path, obj):
    with h5py.File(path, "r") as f:
        out = {}
        for k, v in f[obj].attrs.items():
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, np.generic):
                v = v.item()
                v = v.decode() if isinstance(v, bytes) else v
            out[k] = v
        return out


def same(got, want):
    return str(got) == want


def mount(h5, mnt, opts=(), env=None):
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        m = T.Mount(h5, mnt, opts=["-o", "rw"] + list(opts))
        m.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return m


def set_x(mnt, obj, name, val, done, refused):
    try:
        os.setxattr(os.path.join(mnt, obj), "user." + name, val.encode())
        done.setdefault(obj, {})[name] = val
    except OSError as e:
        refused.append((obj, name, e.errno))


def check_done(path, done, what):
    for obj, kv in done.items():
        have = attrs(path, obj)
        for k, v in kv.items():
            if k not in have:
                T.fail("%s: %s user.%s answered 0, not in FILE" % (what, obj, k))
            elif not same(have[k], v):
                T.fail("%s: %s user.%s answered 0 with %d bytes, FILE holds %d"
                       % (what, obj, k, len(v), len(str(have[k]))))


def checked(wd):
    for lib in ("earliest", "latest"):
        h5 = os.path.join(wd, "checked-%s.h5" % lib)
        with h5py.File(h5, "w", libver=lib) as f:
            g = f.create_group("g")
            g.attrs["fs"] = np.bytes_("abc")
            d = f.create_group("dense")
            for i in range(10):
                d.attrs["a%d" % i] = np.bytes_("v%d" % i)
            c = f.create_group("c")
            c.attrs["large"] = np.bytes_("L" * 5000)
            for i in range(7):
                c.attrs["s%d" % i] = np.int32(i)
        mnt = os.path.join(wd, "mnt")
        done, refused = {}, []
        m = mount(h5, mnt)
        try:
            with m.watchdog(120):
                set_x(mnt, "dense", "a1", "x" * 5000, done, refused)
                set_x(mnt, "g", "fs", "y" * 65536, done, refused)
                set_x(mnt, "c", "ninth", "9", done, refused)
                for i in range(20):
                    set_x(mnt, "c", "more%d" % i, "m%d" % i, done, refused)
        finally:
            m.stop()
        what = "checked (%s)" % lib
        if m.returncode != 0:
            T.fail("%s: the daemon exited %s: %s" % (what, m.returncode, m.output()[-2000:]))
        check_done(h5, done, what)
        have = attrs(h5, "g")
        if ("g", "fs", errno.ENOSPC) in [(o, n, e) for o, n, e in refused] and have["fs"] != "abc":
            T.fail("%s: g user.fs refused, FILE holds %d bytes" % (what, len(have["fs"])))
        print("%s: answered 0: %d, refused: %s" % (what, sum(len(v) for v in done.values()),
                                                  [(o, n, errno.errorcode[e]) for o, n, e in refused]))


def window(wd):
    h5 = os.path.join(wd, "window.h5")
    with h5py.File(h5, "w", libver="latest") as f:
        f.create_group("g").attrs["x"] = np.int64(0)
        f["g"].attrs["s"] = "text"
    mnt = os.path.join(wd, "mnt")
    m = mount(h5, mnt)
    acked = []
    try:
        with m.watchdog(60):
            p = os.path.join(mnt, "g")
            t_end = time.monotonic() + 2.5
            i = 0
            while time.monotonic() < t_end:
                i += 1
                os.setxattr(p, "user.x", str(i).encode())
                os.setxattr(p, "user.s", ("s%d" % i).encode())
                acked.append((time.monotonic(), i))
                time.sleep(0.002)
            killed = time.monotonic()
            m.proc.send_signal(signal.SIGKILL)
            m.proc.wait(timeout=10)
    finally:
        m.kill()
        m.stop()
    floor = max([i for t, i in acked if t <= killed - 1.0], default=0)
    have = attrs(h5, "g")
    if int(have["x"]) < floor or int(str(have["s"])[1:]) < floor:
        T.fail("window: after kill -9 FILE holds x=%s s=%s; %d was answered 1 s before the kill (of %d)"
               % (have["x"], have["s"], floor, len(acked)))
    print("window: %d changes answered, x=%s after kill -9, floor %d" % (len(acked), have["x"], floor))


def enospc(wd):
    small = os.path.join(wd, "small")
    with T.small_disk(small, "3m"):
        h5 = os.path.join(small, "f.h5")
        with h5py.File(h5, "w", libver="latest") as f:
            f.create_group("g").attrs["x"] = np.int64(0)
            f.create_group("c").attrs["y"] = "start"
        st = os.statvfs(small)
        with open(os.path.join(small, "fill"), "wb") as fh:
            fh.write(b"\0" * (st.f_bavail * st.f_frsize - (256 << 10)))
        mnt = os.path.join(wd, "mnt")
        done, refused, dirs = {}, [], []
        m = mount(h5, mnt)
        try:
            with m.watchdog(300):
                for i in range(1500):
                    set_x(mnt, "g", "n%04d" % i, "v%d-" % i + "p" * 300, done, refused)
                    set_x(mnt, "g", "x", str(i), done, refused)
                    if i % 50 == 0:
                        set_x(mnt, "c", "y", "c%d" % i, done, refused)
                        try:
                            os.mkdir(os.path.join(mnt, "d%04d" % i))
                            dirs.append("d%04d" % i)
                        except OSError as e:
                            refused.append(("/", "d%04d" % i, e.errno))
                if not any(e == errno.ENOSPC for o, n, e in refused):
                    T.fail("enospc: 1,500 x 300 bytes set on a 3 MiB tmpfs without ENOSPC")
                # np.save of 8 MB: the real errno, nothing made
                try:
                    np.save(os.path.join(mnt, "big.npy"), np.ones(1 << 20))
                    T.fail("enospc: np.save of 8 MB on a full 3 MiB tmpfs succeeded")
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        T.fail("enospc: np.save: %s, expected ENOSPC" % e)
                others = set(e for o, n, e in refused if e != errno.ENOSPC)
                if others:
                    T.fail("enospc: errors other than ENOSPC: %s" % sorted(errno.errorcode[e] for e in others))
                # space freed: writes work again, no remount
                os.unlink(os.path.join(small, "fill"))
                before = len(refused)
                set_x(mnt, "g", "after", "freed", done, refused)
                set_x(mnt, "g", "x", "-1", done, refused)
                try:
                    os.mkdir(os.path.join(mnt, "after"))
                    dirs.append("after")
                except OSError as e:
                    refused.append(("/", "after", e.errno))
                try:
                    np.save(os.path.join(mnt, "small.npy"), np.arange(100))
                except OSError as e:
                    T.fail("enospc: np.save after space was freed: %s" % e)
                if len(refused) > before:
                    T.fail("enospc: after space was freed: %s" % refused[before:])
        finally:
            m.stop()
        if m.returncode != 0:
            T.fail("enospc: the daemon exited %s: %s" % (m.returncode, m.output()[-2000:]))
        check_done(h5, done, "enospc")
        with h5py.File(h5, "r") as f:
            for d in dirs:
                if d not in f:
                    T.fail("enospc: mkdir %s answered 0, not in FILE" % d)
            if "big" in f:
                T.fail("enospc: the np.save that failed made dataset big")
            if "small" not in f or not np.array_equal(f["small"][()], np.arange(100)):
                T.fail("enospc: the np.save after space was freed is not in FILE")
        nspc = sum(1 for o, n, e in refused if e == errno.ENOSPC)
        log_lines = m.output().count("No space left on device")
        # refusals for space are logged once a minute at most (issue 65:
        # "logged once"; a writer at the margin is refused at every
        # write), the first at once
        if nspc and not log_lines:
            T.fail("enospc: %d refusals, no log line" % nspc)
        print("enospc: answered 0: %d, ENOSPC: %d, groups: %d" % (sum(len(v) for v in done.values()), nspc,
                                                                  len(dirs)))


def faults(wd):
    if not os.path.exists(SHIM):
        T.fail("faults: %s not built (make check builds it)" % SHIM)
        return
    if T.sanitized():
        print("faults: skipped (a sanitizer build: its runtime must be the first preloaded library)")
        return
    reported = kept = 0
    for op in ("pwrite", "fsync"):
        for nth in (1, 2, 3, 5, 8, 13):
            h5 = os.path.join(wd, "fault-%s-%d.h5" % (op, nth))
            with h5py.File(h5, "w", libver="latest") as f:
                g = f.create_group("g")
                g.attrs["x"] = np.int64(0)
                for i in range(10):
                    g.attrs["old%d" % i] = "o%d" % i
            given = {}       # every value each attribute was given
            with h5py.File(h5, "r") as f:
                for k, v in f["g"].attrs.items():
                    given[k] = {str(v.decode() if isinstance(v, bytes) else v)}
            mnt = os.path.join(wd, "mnt")
            done, refused = {}, []
            env = {"LD_PRELOAD": SHIM, "H5FS_FAULT_FILE": os.path.realpath(h5), "H5FS_FAULT_OP": op,
                   "H5FS_FAULT_N": str(nth)}
            m = mount(h5, mnt, env=env)
            what = "faults (%s %d)" % (op, nth)
            sync_err = None
            try:
                with m.watchdog(120):
                    for i in range(40):
                        set_x(mnt, "g", "n%02d" % i, "v%d" % i, done, refused)
                        given.setdefault("n%02d" % i, set()).add("v%d" % i)
                        set_x(mnt, "g", "x", str(i + 1), done, refused)
                        given["x"].add(str(i + 1))
                    fd = os.open(mnt, os.O_RDONLY)
                    try:
                        os.fsync(fd)
                    except OSError as e:
                        sync_err = e.errno
                    finally:
                        os.close(fd)
                    if sync_err is not None:
                        if sync_err != errno.EIO:
                            T.fail("%s: fsync: %s, expected EIO" % (what, errno.errorcode[sync_err]))
                        T.expect_err(what + ": setxattr after the error",
                                     lambda: os.setxattr(os.path.join(mnt, "g"), "user.late", b"1"), errno.EIO)
                        T.expect_err(what + ": mkdir after the error",
                                     lambda: os.mkdir(os.path.join(mnt, "late")), errno.EIO)
            finally:
                m.stop()
            if m.busy:
                T.fail("%s: fusermount3 -u after the fault: %s" % (what, m.busy))
            try:
                have = attrs(h5, "g")
            except (OSError, KeyError) as e:
                T.fail("%s: h5py cannot read FILE: %s" % (what, e))
                continue
            for k, v in have.items():
                if str(v) not in given.get(k, ()):
                    T.fail("%s: user.%s holds %r, never given" % (what, k, v))
            if sync_err is None:
                kept += 1
                if m.returncode != 0:
                    T.fail("%s: nothing reported, the daemon exited %s" % (what, m.returncode))
                check_done(h5, done, what)
            else:
                reported += 1
                if m.returncode == 0:
                    T.fail("%s: fsync said EIO, the daemon exited 0" % what)
                if "lost" not in m.output():
                    T.fail("%s: no log line of the lost changes: %s" % (what, m.output()[-1000:]))
    if not reported:
        T.fail("faults: no injected error was ever reported")
    print("faults: %d runs reported the error, %d kept everything" % (reported, kept))


def space(wd):
    h5 = os.path.join(wd, "space.h5")
    with h5py.File(h5, "w", libver="latest") as f:
        f.create_group("g").attrs["x"] = np.int64(0)
        f.create_dataset("d", data=np.arange(5000))
    size0 = os.path.getsize(h5)
    mnt = os.path.join(wd, "mnt")
    m = mount(h5, mnt, opts=["-o", "idle_commit=1"])
    try:
        with m.watchdog(60):
            # the EOF address covers the room commits reserve ahead
            # (1 MiB at least) until the idle commit gives it back
            def trimmed():
                return os.path.getsize(h5) == eoa(h5) and os.path.getsize(h5) < size0 + (64 << 10)
            os.setxattr(os.path.join(mnt, "g"), "user.new", b"value")
            if not T.wait_until(trimmed, 5):
                T.fail("space: 5 s after a setxattr FILE is %d bytes, its end of allocation %d (was %d)"
                       % (os.path.getsize(h5), eoa(h5), size0))
            os.mkdir(os.path.join(mnt, "newgroup"))
            if not T.wait_until(trimmed, 5):
                T.fail("space: 5 s after a mkdir FILE is %d bytes, its end of allocation %d"
                       % (os.path.getsize(h5), eoa(h5)))
            grown = os.path.getsize(h5) - size0
            # and without -o idle_commit's wait: a write-behind batch
            # is trimmed by its own commit (100 ms)
            os.setxattr(os.path.join(mnt, "g"), "user.again", b"v2")
            if not T.wait_until(trimmed, 0.9):
                T.fail("space: 0.9 s after a setxattr FILE is %d bytes, its end of allocation %d"
                       % (os.path.getsize(h5), eoa(h5)))
    finally:
        m.stop()
    if os.path.getsize(h5) != eoa(h5) or os.path.getsize(h5) >= size0 + (64 << 10):
        T.fail("space: after unmount FILE is %d bytes, its end of allocation %d" % (os.path.getsize(h5), eoa(h5)))
    if m.returncode != 0:
        T.fail("space: the daemon exited %s" % m.returncode)
    with h5py.File(h5, "r") as f:
        if f["g"].attrs["new"] != "value" or "newgroup" not in f:
            T.fail("space: the changes are not in FILE")
    print("space: %d -> %d bytes after a setxattr and a mkdir (grown %d while mounted)"
          % (size0, os.path.getsize(h5), grown))
    promise(wd)


def settled(path, quiet=0.3, bound=5.0):
    """Wait (at most bound s) until path's mtime has not moved for quiet s."""
    import time
    end = time.monotonic() + bound
    last, since = os.stat(path).st_mtime_ns, time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.05)
        now = os.stat(path).st_mtime_ns
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return


def mtime_kept(wd, tries=5):
    """Issue 72 item 4: the idle trim changes no content, so FILE keeps the
    mtime of its last change, which datasets without stored times show: a
    second `rsync -a` out of the mount (after the trim, the kernel's
    caches dropped so that the daemon answers anew) sends nothing. A try
    counts only when the trim came after the first rsync out (its log
    line): else it is tried again."""
    import shutil
    import subprocess
    if not shutil.which("rsync"):
        print("mtime: rsync missing: skipped")
        return
    src = os.path.join(wd, "rs_src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "a.bin"), "wb") as fh:
        fh.write(os.urandom(300000))
    for i in range(tries):
        h5 = os.path.join(wd, "mt.h5")
        with h5py.File(h5, "w") as f:
            f["x"] = np.arange(10)          # no stored times: shows FILE's
        out = os.path.join(wd, "rs_out%d" % i)
        mnt = os.path.join(wd, "mnt")
        m = mount(h5, mnt, opts=["-o", "idle_commit=1", "-o", "verbose"])
        try:
            with m.watchdog(60):
                subprocess.run(["rsync", "-a", src + "/", mnt + "/"], check=True, timeout=60)
                # the write-behind's commits of what rsync made (the new
                # name's link batch, ~100 ms) land first: FILE's mtime,
                # which the root shows, is then the last change's (under
                # load a commit after the first rsync out moved it: CI)
                settled(h5)
                subprocess.run(["rsync", "-a", mnt + "/", out + "/"], check=True, timeout=60)
                # the trim's log line: the idle one, or the one of storage
                # freed (rsync's temporary name renamed over), which trims
                # at once and leaves no idle one to wait for
                trim = "trimmed to its end of allocation"
                if trim in m.output():
                    continue            # trimmed already: this try proves nothing
                # rsync's last change, the rename of its temporary name,
                # joins the batch of link changes (behind/mbatch.c, issue
                # 82), whose settle after its commit made it durable and
                # trimmed FILE before the first rsync out (settled()):
                # then no idle trim comes, and what is checked is that
                # nothing moved FILE's mtime since (the idle looks of 3 s)
                idle = T.wait_until(lambda: trim in m.output(), 3)
                with open("/proc/sys/vm/drop_caches", "w") as fh:
                    fh.write("2")
                r = subprocess.run(["rsync", "-a", "--itemize-changes", mnt + "/", out + "/"],
                                   capture_output=True, timeout=60)
                sent = r.stdout.decode().split()
                if r.returncode != 0 or sent:
                    T.fail("mtime: the second rsync -a out after the idle trim sent %r (exit %d)" % (
                        sent, r.returncode))
                elif idle:
                    print("mtime: the idle trim kept FILE's mtime: the second rsync -a out sent nothing")
                else:
                    print("mtime: trimmed by the batch's settle before the first rsync out; nothing moved "
                          "FILE's mtime in the 3 s after: the second rsync -a out sent nothing")
                return
        finally:
            m.stop()
    print("mtime: the idle trim came before the first rsync out in %d tries: not checked" % tries)


def statfs_room(wd):
    """Issue 72 item 7: statfs of a read-write mount reports the room of
    the file system holding FILE, less -o min_free's margin (here 64 MiB),
    as free, and no read-only flag; a -o ro mount none, read-only."""
    h5 = os.path.join(wd, "room.h5")
    with h5py.File(h5, "w") as f:
        f["x"] = np.arange(10)
    mnt = os.path.join(wd, "mnt")
    for opts, rw in ((["-o", "min_free=64M"], True), (["-o", "ro"], False)):
        m = T.Mount(h5, mnt, opts=opts)
        m.start()
        try:
            got = os.statvfs(mnt)
            disk = os.statvfs(wd)
        finally:
            m.stop()
        free = got.f_bavail * got.f_frsize
        room = disk.f_bavail * disk.f_frsize - (64 << 20)
        if rw and (got.f_flag & os.ST_RDONLY or abs(free - room) > (256 << 20) or got.f_bfree != got.f_bavail or
                   got.f_blocks < got.f_bfree):
            T.fail("statfs rw: free %d, the disk's room less the margin %d, flags %#x" % (free, room, got.f_flag))
        if not rw and (free or not got.f_flag & os.ST_RDONLY):
            T.fail("statfs ro: free %d, flags %#x" % (free, got.f_flag))
    print("statfs: a read-write mount reports its disk's room less the margin; -o ro none")


def promise(wd):
    """An NPY stream whose header declares 2**40 float64 and that stops
    after 1 MiB makes nothing and leaves no space taken: FILE's size and
    end of allocation stay small, and the next np.save is placed below."""
    import io
    h5 = os.path.join(wd, "promise.h5")
    with h5py.File(h5, "w", libver="latest") as f:
        f.create_group("g")
    size0 = os.path.getsize(h5)
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f8", "fortran_order": False, "shape": (2 ** 40,)})
    mnt = os.path.join(wd, "mnt")
    m = mount(h5, mnt)
    try:
        with m.watchdog(60):
            fd = os.open(os.path.join(mnt, "g", "big.npy"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, hdr.getvalue())
                os.write(fd, b"\1" * (1 << 20))
            finally:
                try:
                    os.close(fd)
                except OSError:
                    pass        # the stream did not end: refused at close
            np.save(os.path.join(mnt, "g", "small.npy"), np.arange(1000, dtype="<i4"))
    finally:
        m.stop()
    size, end = os.path.getsize(h5), eoa(h5)
    st = os.stat(h5)
    if size != end or size > size0 + (1 << 20):
        T.fail("promise: FILE is %d bytes (%d allocated on disk), its end of allocation %d, was %d"
               % (size, st.st_blocks * 512, end, size0))
    with h5py.File(h5, "r") as f:
        if "big" in f["g"]:
            T.fail("promise: the stream that stopped made dataset big")
        if "small" not in f["g"] or not np.array_equal(f["g/small"][()], np.arange(1000)):
            T.fail("promise: the np.save after it is not in FILE")
        elif f["g/small"].id.get_offset() > size0 + (1 << 20):
            T.fail("promise: the next dataset is placed at %d, past the stream's promise"
                   % f["g/small"].id.get_offset())
    print("promise: %d -> %d bytes after a 2**40-element stream stopped and a small np.save" % (size0, size))


def main():
    if os.geteuid() != 0:
        T.skip("needs root to mount a tmpfs")
    wd = T.workdir("durable")
    checked(wd)
    window(wd)
    space(wd)
    mtime_kept(wd)
    statfs_room(wd)
    faults(wd)
    enospc(wd)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
