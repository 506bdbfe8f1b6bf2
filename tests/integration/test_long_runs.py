#!/usr/bin/python3
"""Long runs keep the host and the data (issue 65), each part short here;
the long versions (fsstress, fsx at 20,000 operations, the soak) are the
stress stage's (tests/stress/):

- growth is sparse: truncate -s 20M, a write far past the end and
  posix_fallocate of 1 GiB grow datasets of every chunk index that grows
  (v1 B-tree, extensible array, v2 B-tree, fixed array below its maximum,
  gzip too) while FILE grows by less than 1 MiB, and h5py reads the fill
  value there and the rows written after; fallocate modes the mount cannot
  honour (keep size alone, zero range) are EOPNOTSUPP at once;
- punch hole (fallocate -p: PUNCH_HOLE | KEEP_SIZE) on every chunk index,
  gzip, a non-zero fill value, N-d chunks and contiguous storage: the
  range reads zeros through the mount and in h5py, with a write kept
  over it before (committed first) and a write into it after; the whole
  chunks inside it lose their storage where the index can drop them
  (v1 B-trees, fixed and extensible arrays; zero fill);
- the host's margin (-o min_free, default the smaller of 5% and 1 GiB): on
  a 32 MiB tmpfs an append runs until ENOSPC, which leaves the file system
  at least 5% free; every write answered before it is in FILE; rm and mkdir
  still work; truncate -s 1G there succeeds and takes no space; with
  -o min_free=0 the same append goes further; 64 descriptors writing 4 KiB
  at scattered offsets of new files until refused: no write answered is
  lost (each commit's chunks held before its answer), the file system
  never below half the margin, and FILE small again once they are gone;
- no crash when descriptors close while their last writes, answered
  early, are still being applied (fsstress -p 8 crashed the daemon in
  ow_pages_settle: the handle freed under the write): 4 processes open,
  pwrite and close one dataset in a loop while others read it, append to
  and truncate a growable one, and punch holes in both, for 3 s; every
  byte then as the last writer left it;
- a name is linked only with its rows: a new file still open 0.5 s after
  its bytes were written, then kill -9 of the daemon, leaves FILE without
  the name or with all of its rows (never the name with no rows); listed
  first (ls links it), or open for 1.6 s (the write-behind links a file
  being written after 1 s, with the rows it has), all of its rows;
- 3,000 mkdir/rmdir in a group of each form (h5py's default symbol
  table, libver="latest" compact and dense) leave FILE under 2 MiB after
  the unmount; a latest group whose first chunk fills with short links
  (a 7-letter name, then 2-letter ones: fsstress -p 8 making p0..p7 got
  ENOSPC from the 6th) takes every mkdir;
- index blocks a commit copies are freed and reused: 100 durable
  overwrites (pwrite, fsync) of a fixed array, an extensible array and a
  v2 B-tree chunk index grow FILE by less than 100 KB (each commit had
  left its old data block or nodes unreferenced: 300 commits of a
  1,024-entry fixed array, 2.5 MB);
- `h5fs -u MNT` returns once FILE is final: a new file and an attribute
  set right before it are in a copy of FILE made at once, and h5py opens
  FILE at once (20 tries; `fusermount3 -u` misses them most times,
  as the kernel does not wait for a FUSE daemon at unmount);
- a plain `fusermount3 -u` at once after the mount is never refused as
  busy (10 tries);
- h5py holding FILE across `fusermount3 -u` does not make the daemon's
  last commit fail (it waits for the lock): nothing lost, FILE no larger
  than after `h5fs -u` (4 tries).

Under a sanitizer (the ASan+UBSan make check) only the parts whose risk
is memory run: the index churn, punch, the
descriptors closing under their writes, sparse growth and the 64
writers refused at the margin (error paths); the plain make check runs
every part (Makefile.am CI_PLAIN_TESTS): the sizes, kills and unmounts
are the same code there, 85 of the 131 s this took under ASan.
"""
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

KINDS = {
    "btree1": ("earliest", dict(chunks=(4096,), maxshape=(None,))),
    "btree1_gz": ("earliest", dict(chunks=(4096,), maxshape=(None,), compression="gzip")),
    "earray": ("latest", dict(chunks=(4096,), maxshape=(None,), fillvalue=7)),
    "farray": ("latest", dict(chunks=(4096,), maxshape=(64 << 20,))),
    "btree2": ("latest", dict(chunks=(256, 16), maxshape=(None, None))),
}
GROW = 20 << 20


def sparse(work):
    for name, (libver, kw) in KINDS.items():
        path = os.path.join(work, name + ".h5")
        rows = (np.arange(1000 * 16) % 251).astype("u1").reshape(1000, 16) if name == "btree2" else \
            (np.arange(1000) % 251).astype("u1")
        with h5py.File(path, "w", libver=libver) as f:
            f.create_dataset("d", data=rows, **kw)
        before = os.path.getsize(path)
        mnt = os.path.join(work, "mnt")
        tail = b"\x05" * 32
        with T.Mount(path, mnt) as m:
            p = os.path.join(mnt, "d")
            os.truncate(p, GROW)
            if os.stat(p).st_size != GROW:
                T.fail("%s: truncate -s %d: size %d" % (name, GROW, os.stat(p).st_size))
            fd = os.open(p, os.O_WRONLY)
            try:
                os.pwrite(fd, tail, 2 * GROW)        # past the end: a hole, then the bytes
                os.posix_fallocate(fd, 0, 3 * GROW)  # mode 0: grows, sparsely
                for mode, what in ((1, "keep size"), (16, "zero range")):
                    try:
                        r = subprocess.run(["fallocate", {1: "-n", 16: "-z"}[mode], "-l", "4096", p],
                                           capture_output=True, timeout=30)
                        if r.returncode == 0 or b"support" not in r.stderr.lower():
                            T.fail("%s: fallocate %s: %r (want EOPNOTSUPP)" % (name, what, r.stderr))
                    except FileNotFoundError:
                        pass
            finally:
                os.close(fd)
            size = os.stat(p).st_size
        if m.returncode != 0:
            T.fail("%s: the daemon exited %s" % (name, m.returncode))
        grown = os.path.getsize(path) - before
        print("%s: grown to %d bytes; FILE %d -> %d bytes" % (name, size, before, os.path.getsize(path)))
        if size != 3 * GROW:
            T.fail("%s: posix_fallocate to %d bytes: size %d" % (name, 3 * GROW, size))
        if grown > 1 << 20:
            T.fail("%s: FILE grew by %d bytes for growth that holds only the fill value" % (name, grown))
        fill = kw.get("fillvalue", 0)
        with h5py.File(path, "r") as f:
            got = f["d"][()].reshape(-1)
        n = rows.size
        want_tail = np.frombuffer(tail, "u1")
        if got.size != 3 * GROW or not np.array_equal(got[:n], rows.reshape(-1)) or \
                not np.all(got[n:2 * GROW] == fill) or not np.array_equal(got[2 * GROW:2 * GROW + 32], want_tail) \
                or not np.all(got[2 * GROW + 32:] == fill):
            T.fail("%s: h5py does not read the rows, the fill value and the bytes written past the end" % name)


PUNCH_KINDS = dict(KINDS, contig=("earliest", {}), earray_gz=("latest", dict(
    chunks=(4096,), maxshape=(None,), compression="gzip")))


def punch(work):
    for name, (libver, kw) in PUNCH_KINDS.items():
        path = os.path.join(work, "punch-%s.h5" % name)
        n = 100000
        rows = (np.arange(n * 16) % 251 + 1).astype("u1").reshape(n, 16) if name == "btree2" else \
            (np.arange(n) % 251 + 1).astype("u1")
        with h5py.File(path, "w", libver=libver) as f:
            f.create_dataset("d", data=rows, **kw)
            chunks0 = f["d"].id.get_num_chunks() if f["d"].chunks else 0
        want = rows.reshape(-1).copy()
        mnt = os.path.join(work, "pmnt")
        with T.Mount(path, mnt) as m:
            p = os.path.join(mnt, "d")
            fd = os.open(p, os.O_RDWR)
            try:
                os.pwrite(fd, b"\x09" * 10000, 20000)
                want[20000:30000] = 9
                r = subprocess.run(["fallocate", "-p", "-o", "4096", "-l", str(4096 * 10), p], capture_output=True,
                                   timeout=30)
                if r.returncode != 0:
                    T.fail("%s: fallocate -p: %r" % (name, r.stderr))
                want[4096:4096 * 11] = 0
                os.pwrite(fd, b"\x05" * 100, 8200)
                want[8200:8300] = 5
                if os.pread(fd, 50000, 0) != want[:50000].tobytes():
                    T.fail("%s: the mount reads other bytes after the punch" % name)
            finally:
                os.close(fd)
            with open(p, "rb") as fh:
                shown = fh.read()
        if m.returncode != 0:
            T.fail("%s: the daemon exited %s" % (name, m.returncode))
        with h5py.File(path, "r") as f:
            got = f["d"][()].reshape(-1)
            chunks = f["d"].id.get_num_chunks() if f["d"].chunks else 0
        print("punch %s: chunks %d -> %d" % (name, chunks0, chunks))
        if shown != want.tobytes() or not np.array_equal(got, want):
            T.fail("%s: punched range: the mount %s, h5py %s" % (
                name, "right" if shown == want.tobytes() else "wrong", "right" if np.array_equal(got, want) else "wrong"))
        # chunks 1-10 dropped, chunk 2 written again
        dropped = name in ("earray", "farray", "earray_gz", "btree1", "btree1_gz") and not kw.get("fillvalue")
        if dropped and chunks != chunks0 - 9:
            T.fail("%s: %d chunks after the punch (want %d)" % (name, chunks, chunks0 - 9))


def tmpfs(work, size):
    d = tempfile.mkdtemp(prefix="tmpfs-", dir=work)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d" % size, "tmpfs", d], capture_output=True)
    if r.returncode != 0:
        return None
    return d


def tmpfs_or_skip(work, size):
    fs = tmpfs(work, size)
    if fs is None:
        print("SKIP: cannot mount a tmpfs (not root?)")
        sys.exit(77)
    return fs


def fill_up(work, opts):
    """Append to a growable dataset until ENOSPC; (answered bytes, free
    bytes left, tmpfs size), the rest checked here."""
    size = 32 << 20
    fs = tmpfs_or_skip(work, size)
    try:
        path = os.path.join(fs, "f.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("log", shape=(0,), maxshape=(None,), chunks=(65536,), dtype="u1")
            f.create_dataset("other", data=np.arange(100000, dtype="u1"))
        mnt = os.path.join(work, "mnt")
        answered = 0
        block = bytes(range(256)) * 1024
        with T.Mount(path, mnt, opts) as m:
            fd = os.open(os.path.join(mnt, "log"), os.O_WRONLY | os.O_APPEND)
            err = None
            try:
                for _ in range(200):
                    os.write(fd, block)
                    answered += len(block)
            except OSError as e:
                err = e.errno
            try:
                os.close(fd)
            except OSError as e:
                err = err or e.errno
            if err != errno.ENOSPC:
                T.fail("%s: appending %d bytes to a 32 MiB file system: %s, not ENOSPC" % (
                    opts, answered, err and errno.errorcode[err]))
            st = os.statvfs(fs)
            free = st.f_bavail * st.f_frsize
            # on a file system at the margin: what frees space works
            os.unlink(os.path.join(mnt, "other"))
            os.mkdir(os.path.join(mnt, "g2"))
            os.truncate(os.path.join(mnt, "log"), 1 << 30)   # sparse: fits
        if m.returncode != 0:
            T.fail("%s: the daemon exited %s" % (opts, m.returncode))
        with h5py.File(path, "r") as f:
            got = f["log"][()]
            if "other" in f or "g2" not in f:
                T.fail("%s: rm and mkdir at the margin not in FILE" % opts)
        if got.size != 1 << 30 or got[:answered].tobytes() != (block * (answered // len(block)))[:answered]:
            T.fail("%s: FILE does not hold the %d bytes answered (%d rows)" % (opts, answered, got.size))
        if os.path.getsize(path) > size:
            T.fail("%s: FILE is %d bytes after truncate -s 1G" % (opts, os.path.getsize(path)))
        return answered, free, size
    finally:
        subprocess.run(["umount", "-l", fs], capture_output=True)
        shutil.rmtree(fs, ignore_errors=True)


def margin(work):
    # (the default, the smaller of 5% and 1 GiB, is 5% here; said
    # explicitly: the test library mounts without a margin on a disk
    # nearly full)
    answered, free, size = fill_up(work, ["-o", "min_free=5%"])
    print("margin 5%%: %d bytes answered, %d free at ENOSPC (of %d)" % (answered, free, size))
    if free < size * 5 // 100:
        T.fail("ENOSPC left %d bytes free on a %d-byte file system: less than 5%%" % (free, size))
    answered0, free0, _ = fill_up(work, ["-o", "min_free=0"])
    print("-o min_free=0: %d bytes answered, %d free at ENOSPC" % (answered0, free0))
    if answered0 <= answered:
        T.fail("-o min_free=0 answered %d bytes, no more than the default's %d" % (answered0, answered))


def margin_writers(work, nfiles=64, rounds=20):
    """Many writers at the margin: each holds what its commit may take
    (stress-ng aiol: 64 descriptors' scattered 4 KiB writes, answered,
    then their commits took a chunk each past the margin and filled the
    file system; rows answered were lost at the close)."""
    size, keep = 32 << 20, 4 << 20
    fs = tmpfs_or_skip(work, size)
    try:
        path = os.path.join(fs, "w.h5")
        with h5py.File(path, "w") as f:
            f.create_group("g")
        s0 = os.path.getsize(path)
        mnt = os.path.join(work, "mnt")
        low = [size]
        done = []

        def sample():
            while not done:
                st = os.statvfs(fs)
                low[0] = min(low[0], st.f_bavail * st.f_frsize)
                time.sleep(0.005)
        import random
        import threading
        rnd = random.Random(65)
        want = [bytearray() for _ in range(nfiles)]
        refused = 0
        with T.Mount(path, mnt, ["-o", "min_free=%d" % keep]) as m, m.watchdog(120):
            th = threading.Thread(target=sample)
            th.start()
            fds = [os.open(os.path.join(mnt, "g", "f%d" % i), os.O_CREAT | os.O_RDWR) for i in range(nfiles)]
            for r in range(rounds):
                base = rnd.randrange(0, 8 << 20) & ~4095
                for i, fd in enumerate(fds):
                    buf = bytes([(r * 31 + i) % 251 + 1]) * 4096
                    off = base + i * 4096
                    try:
                        os.pwrite(fd, buf, off)
                    except OSError as e:
                        if e.errno != errno.ENOSPC:
                            T.fail("margin writers: pwrite: %s" % e)
                        refused += 1
                        continue
                    w = want[i]
                    if len(w) < off + 4096:
                        w.extend(bytes(off + 4096 - len(w)))
                    w[off:off + 4096] = buf
            for fd in fds:
                try:
                    os.close(fd)
                except OSError as e:
                    T.fail("margin writers: close: %s (an answered write lost)" % e)
            for i in range(nfiles):
                with open(os.path.join(mnt, "g", "f%d" % i), "rb") as fh:
                    got = fh.read()
                w = bytes(want[i])
                if got[:len(w)] != w or got[len(w):].strip(b"\0"):
                    T.fail("margin writers: f%d does not hold the %d bytes answered (%d)" % (i, len(w), len(got)))
            # (in the same session: space freed by an earlier one is not
            # known to the next - FILE's free space is not stored)
            shutil.rmtree(os.path.join(mnt, "g"))
            done.append(1)
            th.join()
        print("margin writers: %d of %d writes refused; least free %d bytes (margin %d)" % (
            refused, nfiles * rounds, low[0], keep))
        if not refused:
            T.fail("margin writers: nothing refused: the test no longer reaches the margin")
        # a commit of answered changes may use half of the margin (h5fs.1)
        if low[0] < keep // 2:
            T.fail("margin writers: the file system fell to %d bytes free, margin %d" % (low[0], keep))
        if m.returncode:
            T.fail("margin writers: unmount exits %s" % m.returncode)
        with h5py.File(path, "r") as f:
            if list(f):
                T.fail("margin writers: FILE still holds %s" % list(f))
        if os.path.getsize(path) > s0 + (64 << 10):
            T.fail("margin writers: FILE %d bytes after the files went" % os.path.getsize(path))
    finally:
        subprocess.run(["umount", "-l", fs], capture_output=True)
        shutil.rmtree(fs, ignore_errors=True)


def unmount_final(work, tries=20):
    path = os.path.join(work, "u.h5")
    mnt = os.path.join(work, "umnt")
    os.makedirs(mnt, exist_ok=True)
    payload = os.urandom(30000)
    bad = 0
    for i in range(tries):
        with h5py.File(path, "w") as f:
            f.create_group("g")
        p = subprocess.Popen([T.H5FS, "-f", path, mnt], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 10
            while not T.is_mounted(mnt) and time.monotonic() < deadline:
                time.sleep(0.02)
            with open(os.path.join(mnt, "g", "new"), "wb") as fh:
                fh.write(payload)
            os.setxattr(os.path.join(mnt, "g"), "user.k", b"v%d" % i)
            r = subprocess.run([T.H5FS, "-u", mnt], capture_output=True, timeout=60)
            if r.returncode != 0:
                T.fail("try %d: h5fs -u: exit %d: %s" % (i, r.returncode, r.stderr.decode()))
            if p.poll() is None:
                T.fail("try %d: h5fs -u returned while its daemon still runs" % i)
                bad += 1
                continue
            backup = path + ".bak"
            shutil.copy(path, backup)
            for what in (path, backup):
                try:
                    with h5py.File(what, "r") as f:
                        if f["g/new"][()].tobytes() != payload or f["g"].attrs.get("k") not in (b"v%d" % i,
                                                                                             "v%d" % i):
                            T.fail("try %d: %s lacks the new file or the attribute" % (i, what))
                            bad += 1
                except Exception as e:  # noqa: BLE001 - h5py's lock error, a missing name
                    T.fail("try %d: h5py opening %s at once: %s" % (i, what, e))
                    bad += 1
        finally:
            if T.is_mounted(mnt):
                subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=30)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    print("h5fs -u: %d tries, %d with FILE not final" % (tries, bad))
    r = subprocess.run([T.H5FS, "-u", work], capture_output=True, timeout=30)
    if r.returncode != 2 or b"is not an h5fs mount" not in r.stderr or b"No data available" in r.stderr:
        T.fail("h5fs -u of a plain folder: exit %d: %s" % (r.returncode, r.stderr.decode()))


def daemon_on_new(path, mnt, stderr):
    """A fresh FILE at path (an empty group g) and its daemon in the
    foreground (-f) on mnt, waited for (10 s at most): its Popen."""
    with h5py.File(path, "w") as f:
        f.create_group("g")
    p = subprocess.Popen([T.H5FS, "-f", path, mnt], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=stderr)
    deadline = time.monotonic() + 10
    while not T.is_mounted(mnt) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.02)
    return p


def daemon_stop(p):
    """The daemon killed by its PID when it is still there."""
    if p.poll() is None:
        p.kill()
        p.wait()


def make_changes(mnt, payload, i):
    """The changes of try i that the unmount checks look for: four new
    files of payload in g, and g's attributes k0..k3 set to v<i>."""
    for k in range(4):
        with open(os.path.join(mnt, "g", "new%d" % k), "wb") as fh:
            fh.write(payload)
        os.setxattr(os.path.join(mnt, "g"), "user.k%d" % k, b"v%d" % i)


def unmount_at_once(work, tries=10):
    """A plain `fusermount3 -u` right after the mount appeared is not
    refused as busy (issue 71: nothing of the daemon's own walks into its
    mountpoint; its read-ahead thread's stat() of it did, and under load
    1 unmount in about 140 met it)."""
    path = os.path.join(work, "ao.h5")
    mnt = os.path.join(work, "aomnt")
    os.makedirs(mnt, exist_ok=True)
    busy = 0
    for i in range(tries):
        p = daemon_on_new(path, mnt, subprocess.PIPE)
        try:
            u = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=30)
            if u.returncode:
                busy += 1
                T.fail("try %d: fusermount3 -u at once after the mount: %s" % (i, u.stderr.decode().strip()))
            try:
                err = p.communicate(timeout=30)[1].decode(errors="replace")
                if p.returncode:
                    T.fail("try %d: the daemon exits %d: %s" % (i, p.returncode, err[-300:]))
            except subprocess.TimeoutExpired:
                T.fail("try %d: the daemon did not exit" % i)
        finally:
            if T.is_mounted(mnt):
                subprocess.run(["fusermount3", "-uz", mnt], capture_output=True, timeout=30)
            daemon_stop(p)
    print("fusermount3 -u at once after the mount: %d tries, %d busy" % (tries, busy))


def fusermount_then_open(work, tries=4):
    """Issue 72 item 3: `fusermount3 -u` returns before the daemon's last
    commit (made durable, FILE compacted); a program holding FILE open
    then (h5py: LOCK_SH) must not make it fail. h5py opens FILE as soon as
    the changes' commit gave the lock back and holds it across the
    unmount: the daemon says it waits, then exits 0 with no refusal and
    no "could not be fsync'd"; nothing answered lost; FILE no larger than
    after `h5fs -u` of the same changes (16 KiB of slack: batches may
    split differently; the issue saw 1.05 MB)."""
    path = os.path.join(work, "fu.h5")
    mnt = os.path.join(work, "fumnt")
    os.makedirs(mnt, exist_ok=True)
    payload = os.urandom(30000)
    sizes = {}
    for i in range(tries + 1):
        how = "h5fs -u" if i == 0 else "fusermount3 -u"
        p = daemon_on_new(path, mnt, subprocess.PIPE)
        held = None
        try:
            make_changes(mnt, payload, i)
            if i == 0:
                subprocess.run([T.H5FS, "-u", mnt], capture_output=True, timeout=60)
            else:
                deadline = time.monotonic() + 30
                while held is None:
                    try:
                        held = h5py.File(path, "r")      # once the commit gave the lock back
                    except OSError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.005)
                u = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=30)
                if u.returncode:
                    T.fail("try %d: fusermount3 -u: %s" % (i, u.stderr.decode().strip()))
                time.sleep(0.5)
                held.close()
            try:
                err = p.communicate(timeout=90)[1].decode(errors="replace")
            except subprocess.TimeoutExpired:
                p.kill()
                err = p.communicate()[1].decode(errors="replace")
                T.fail("try %d: the daemon did not exit after %s" % (i, how))
            if p.returncode != 0 or "could not be fsync" in err or "refused" in err or "lost" in err:
                T.fail("try %d (%s): daemon exit %d: %s" % (i, how, p.returncode, err[-600:]))
            with h5py.File(path, "r") as f:
                for k in range(4):
                    if f["g/new%d" % k][()].tobytes() != payload or f["g"].attrs.get("k%d" % k) not in (b"v%d" % i, "v%d" % i):
                        T.fail("try %d (%s): new%d or k%d not as answered" % (i, how, k, k))
            sizes.setdefault(how, []).append(os.path.getsize(path))
        finally:
            if held is not None:
                held.close()
            if T.is_mounted(mnt):
                subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=30)
            daemon_stop(p)
    if max(sizes.get("fusermount3 -u", [0])) > sizes["h5fs -u"][0] + 16384:
        T.fail("FILE after fusermount3 -u with h5py holding it: %s bytes, after h5fs -u: %s" % (
            sizes["fusermount3 -u"], sizes["h5fs -u"]))
    print("fusermount3 -u with h5py holding FILE: %d tries; sizes %r" % (tries, sizes))


def fusermount_at_once(work, tries=5):
    """Issue 72 item 3, as a script types it: the changes, `fusermount3 -u`,
    then at once an h5py open, tried again while it meets "unable to lock
    file" (the daemon still commits what it answered: the kernel does not
    wait for it, man h5fs; bench by hand: 95 of 100 such opens met it at
    once, none after a pause of 1 s). Whenever h5py gets FILE, the daemon
    exits 0 without a refusal, nothing answered is lost, and FILE's size is
    the size `h5fs -u` of the same changes leaves (try 0)."""
    path = os.path.join(work, "fa.h5")
    mnt = os.path.join(work, "famnt")
    os.makedirs(mnt, exist_ok=True)
    payload = os.urandom(30000)
    sizes, waits = [], 0
    for i in range(tries + 1):
        p = daemon_on_new(path, mnt, subprocess.PIPE)
        try:
            if not T.is_mounted(mnt):
                T.fail("try %d: not mounted" % i)
                continue
            make_changes(mnt, payload, i)
            if i == 0:
                subprocess.run([T.H5FS, "-u", mnt], capture_output=True, timeout=60)
            else:
                u = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=30)
                if u.returncode:
                    T.fail("try %d: fusermount3 -u: %s" % (i, u.stderr.decode().strip()))
                deadline = time.monotonic() + 30
                while True:
                    try:
                        with h5py.File(path, "r") as f:
                            f["g"].attrs.get("k0")
                        break
                    except OSError:
                        waits += 1
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.005)
            try:
                err = p.communicate(timeout=90)[1].decode(errors="replace")
            except subprocess.TimeoutExpired:
                p.kill()
                err = p.communicate()[1].decode(errors="replace")
                T.fail("try %d: the daemon did not exit" % i)
            if p.returncode != 0 or "could not be fsync" in err or "refused" in err or "lost" in err:
                T.fail("try %d: daemon exit %d: %s" % (i, p.returncode, err[-600:]))
            with h5py.File(path, "r") as f:
                for k in range(4):
                    if f["g/new%d" % k][()].tobytes() != payload or \
                            f["g"].attrs.get("k%d" % k) not in (b"v%d" % i, "v%d" % i):
                        T.fail("try %d: new%d or k%d not as answered" % (i, k, k))
            sizes.append(os.path.getsize(path))
        finally:
            if T.is_mounted(mnt):
                subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=30)
            daemon_stop(p)
    # (as fusermount_then_open: within 16 KiB of h5fs -u's; under load one
    # try of five left FILE 328 bytes larger - a header placed otherwise
    # by the last commit - where the issue met 1.05 MB)
    if sizes and any(abs(sz - sizes[0]) > 16384 for sz in sizes[1:]):
        T.fail("FILE after fusermount3 -u and an h5py open at once: %r bytes, after h5fs -u: %d" % (
            sizes[1:], sizes[0]))
    print("fusermount3 -u then an h5py open at once: %d tries, %d opens met the daemon's lock; sizes %r" % (
        tries, waits, sizes))


def open_then_kill(work, tries=3):
    import signal
    path = os.path.join(work, "k.h5")
    mnt = os.path.join(work, "kmnt")
    os.makedirs(mnt, exist_ok=True)
    payload = os.urandom(30000)
    for listed, wait in ((False, 0.5), (True, 0.5), (False, 1.6)):
        for i in range(tries):
            p = daemon_on_new(path, mnt, subprocess.DEVNULL)
            fh = None
            try:
                fh = open(os.path.join(mnt, "g", "new"), "wb")
                fh.write(payload)
                fh.flush()
                time.sleep(wait)
                if listed:
                    os.listdir(os.path.join(mnt, "g"))
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=30)
            finally:
                subprocess.run(["fusermount3", "-uz", mnt], capture_output=True, timeout=30)
                if fh:
                    try:
                        fh.close()
                    except OSError:
                        pass
                daemon_stop(p)
            with h5py.File(path, "r") as f:
                got = f["g/new"][()].tobytes() if "new" in f["g"] else None
            if (got is None and (listed or wait > 1)) or (got is not None and got != payload):
                T.fail("kill -9 with a new file open %.1f s%s: %s" % (
                    wait, " and listed" if listed else "", "absent" if got is None else "%d of %d bytes" % (
                        len(got), len(payload))))
    print("kill -9 with a new file open: absent or whole, %d tries each" % tries)


def churn_worker(args):
    mnt, k, secs = args
    import random as R
    rng = R.Random(k)
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        n += 1
        if k < 4:
            fd = os.open(os.path.join(mnt, "fixed"), os.O_WRONLY)
            try:
                for _ in range(rng.randint(1, 6)):
                    os.pwrite(fd, bytes([k]) * 4096, 4096 * rng.randrange(64))
            finally:
                os.close(fd)
        elif k == 4:
            with open(os.path.join(mnt, "fixed"), "rb") as fh:
                fh.read()
        elif k == 6:
            # punched holes under the writers and the appender (zeros:
            # a value the check allows)
            p = os.path.join(mnt, "fixed" if n % 2 else "grow")
            r = subprocess.run(["fallocate", "-p", "-o", str(rng.randrange(64 * 4096)), "-l",
                                str(rng.randint(1, 3 * 8192)), p], capture_output=True, timeout=30)
            if r.returncode != 0:
                raise OSError(errno.EIO, "fallocate -p %s: %s" % (p, r.stderr.decode().strip()))
        else:
            p = os.path.join(mnt, "grow")
            with open(p, "ab") as fh:
                fh.write(bytes([k]) * rng.randint(1, 20000))
            os.truncate(p, os.stat(p).st_size + rng.randint(1, 50000))
    return n


def churn(work, secs=3):
    import multiprocessing as mp
    path = os.path.join(work, "churn.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("fixed", data=np.zeros(64 * 4096, "u1"))
        f.create_dataset("grow", shape=(0,), maxshape=(None,), chunks=(8192,), dtype="u1")
    mnt = os.path.join(work, "cmnt")
    with T.Mount(path, mnt) as m:
        with mp.Pool(7) as pool:
            ops = sum(pool.map(churn_worker, [(mnt, k, secs) for k in range(7)]))
        alive = m.alive()
        with open(os.path.join(mnt, "fixed"), "rb") as fh:
            shown = fh.read()
        gsize = os.stat(os.path.join(mnt, "grow")).st_size
    if not alive or m.returncode != 0:
        T.fail("write churn: the daemon %s (exit status %s)" % ("died" if not alive else "exited badly",
                                                                 m.returncode))
        return
    with h5py.File(path, "r") as f:
        if f["fixed"][()].tobytes() != shown or f["grow"].shape[0] != gsize:
            T.fail("write churn: FILE differs from what the mount showed before its unmount")
        if any(b not in (0, 1, 2, 3) for b in set(shown)):
            T.fail("write churn: bytes no writer wrote")
    print("write churn: %d operations by 7 processes, daemon alive" % ops)


def group_churn(work):
    # (FILE on a tmpfs when one can be mounted: 6,000 durable commits on
    # the disk took 24 s, on a tmpfs 3 s)
    fs = tmpfs(work, 64 << 20)
    try:
        group_churn_in(work, fs or work)
    finally:
        if fs:
            subprocess.run(["umount", "-l", fs], capture_output=True)


def group_churn_in(work, where):
    for form in ("earliest", "latest", "latest-dense"):
        path = os.path.join(where, "mkrm-%s.h5" % form)
        keep = ["keep%d" % i for i in range(20)] if form == "latest-dense" else []
        with h5py.File(path, "w", libver=form.split("-")[0]) as f:
            g = f.create_group("g")
            for k in keep:
                g.create_group(k)
        mnt = os.path.join(work, "mmnt")
        made = []
        with T.Mount(path, mnt) as m:
            g = os.path.join(mnt, "g")
            for i in range(3000):
                q = os.path.join(g, "d%d" % (i % 7))
                os.mkdir(q)
                os.rmdir(q)
            # short links filling the first chunk (fsstress's start), and
            # files right after the 3,000 rmdirs, one with a removed
            # group's name: a new file's header in the space of a removed
            # group's (given back to the allocation end) was answered from
            # the group's cached header, EISDIR, about 1 run in 10 (the
            # engine's alloc_high, space.c end_lower)
            for name in ("fss5261", "d3"):
                try:
                    open(os.path.join(g, name), "wb").close()
                except OSError as e:
                    T.fail("%s: create %s after the rmdirs: %s" % (form, name, e))
                    continue
                made.append(name)
            for i in range(8):
                try:
                    os.mkdir(os.path.join(g, "p%d" % i))
                    made.append("p%d" % i)
                except OSError as e:
                    T.fail("%s: mkdir p%d: %s" % (form, i, e))
        size = os.path.getsize(path)
        print("mkdir/rmdir x 3,000, %s group: FILE %d bytes after the unmount" % (form, size))
        if m.returncode != 0:
            T.fail("%s: the daemon exited %s" % (form, m.returncode))
        if size >= 2 << 20:
            T.fail("%s: FILE %d bytes after 3,000 mkdir/rmdir (want < 2 MiB)" % (form, size))
        with h5py.File(path, "r") as f:
            if sorted(f["g"]) != sorted(keep + made):
                T.fail("%s: h5py lists %s" % (form, sorted(f["g"])))


def index_churn(work):
    fs = tmpfs(work, 64 << 20)
    where = fs or work
    try:
        for name, shape, kw in (("farray", (1 << 22,), dict(chunks=(4096,), maxshape=(1 << 22,))),
                                ("earray", (1 << 22,), dict(chunks=(4096,), maxshape=(None,))),
                                ("btree2", (4096, 256), dict(chunks=(64, 64), maxshape=(None, None)))):
            path = os.path.join(where, "ix-%s.h5" % name)
            with h5py.File(path, "w", libver="latest") as f:
                f.create_dataset("a", data=np.ones(shape, "u1"), **kw)
            before = os.path.getsize(path)
            mnt = os.path.join(work, "imnt")
            with T.Mount(path, mnt) as m:
                fd = os.open(os.path.join(mnt, "a"), os.O_RDWR)
                try:
                    for i in range(100):
                        os.pwrite(fd, b"\x07" * 100, (i * 102953) % (1 << 20) + (3 << 20) * (name != "btree2"))
                        os.fsync(fd)
                finally:
                    os.close(fd)
            grown = os.path.getsize(path) - before
            print("100 overwrite commits, %s index: FILE grew %d bytes" % (name, grown))
            if m.returncode != 0:
                T.fail("%s: the daemon exited %s" % (name, m.returncode))
            if grown > 100000:
                T.fail("%s: FILE grew %d bytes in 100 overwrite commits (index blocks not reused?)" % (name, grown))
    finally:
        if fs:
            subprocess.run(["umount", "-l", fs], capture_output=True)


def main():
    work = T.workdir("longruns")
    full = not T.sanitized()
    index_churn(work)
    if full:
        group_churn(work)
    punch(work)
    churn(work)
    if full:
        open_then_kill(work)
    sparse(work)
    if full:
        unmount_final(work)
        unmount_at_once(work)
        fusermount_then_open(work)
        fusermount_at_once(work)
        margin(work)
    else:
        print("(sanitized: the group churn, kill -9, unmount and margin parts are the plain make check's)")
    margin_writers(work)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
