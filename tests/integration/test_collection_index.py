#!/usr/bin/python3
"""The persistent index of a collection (h5fs DIR MNT -o index=PATH; issue
25 item 4, doc/h5fs.1 COLLECTIONS):
- a mount with the index (cold: it records) and a remount on it (warm)
  show exactly what a -o noindex mount shows: names in readdir order,
  every stat field (st_ino compared as the pattern of which paths share
  one), symlink targets, xattr names in order and values, file bytes;
- the warm remount opens no file of DIR while ls -R / find / stat /
  getfattr walk it (inotify IN_OPEN/IN_ACCESS on DIR's folders: the
  kernel's count, not a log line of ours), and then opens only the member
  whose dataset bytes are read;
- a changed member and a new member are re-read (and only they are
  opened), a removed one is gone;
- an index file that is junk, truncated, or another database is moved to
  PATH.bad and rebuilt with one log line, the mount unharmed;
- a daemon killed with SIGKILL in the middle of a cold scan: the remount
  on that index shows what a noindex mount shows;
- two mounts of one collection sharing one index at once;
- a live remount (-o ro, refresh 1 s) answers from the index too (no file
  of DIR opened by find / ls -lR / getfattr -R); a member rewritten while
  mounted shows its new tree, bytes and xattrs after the refresh interval
  (against h5py and a -o noindex mount), only it opened; a member deleted
  is gone."""
import ctypes
import errno
import hashlib
import os
import re
import shutil
import sqlite3
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "make_index_collection.py")

IN_ACCESS, IN_OPEN, IN_ISDIR = 0x1, 0x20, 0x40000000


class FileOpens:
    """Opens and reads of DIR's files, counted by the kernel: inotify
    (IN_OPEN, IN_ACCESS) on every folder of DIR, folders' own opens left
    out (the daemon is the only one touching DIR during a walk). When the
    user's inotify instances are all taken (fs.inotify.max_user_instances:
    every live mount holds some), strace of the daemon's openat calls
    instead: attach(pid) after the mount is up."""

    def __init__(self, top):
        self.top = top
        self.libc = ctypes.CDLL(None, use_errno=True)
        # H5FS_TEST_STRACE=1: the strace way even when inotify works
        self.fd = -1 if os.environ.get("H5FS_TEST_STRACE") else \
            self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        self.strace = self.trace_file = None
        self.seen = 0
        self.wd = {}
        if self.fd < 0:
            if not shutil.which("strace"):
                T.skip("inotify unusable (errno %d) and no strace" % ctypes.get_errno())
            print("strace counts the daemon's opens (inotify: %s)" % (
                "H5FS_TEST_STRACE set" if os.environ.get("H5FS_TEST_STRACE") else "errno %d" % ctypes.get_errno()))
            return
        for d, _dirs, _files in os.walk(top):
            wd = self.libc.inotify_add_watch(self.fd, d.encode(), IN_OPEN | IN_ACCESS)
            if wd < 0:
                T.skip("inotify_add_watch %s: errno %d" % (d, ctypes.get_errno()))
            self.wd[wd] = os.path.relpath(d, top)

    def attach(self, pid):
        if self.fd >= 0:
            return
        self.detach()
        self.trace_file = tempfile.NamedTemporaryFile(prefix="strace-", delete=False).name
        self.seen = 0
        self.strace = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=open,openat", "-e", "signal=none",
                                        "-o", self.trace_file, "-p", str(pid)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)     # attached to every thread by then
        if self.strace.poll() is not None:
            T.skip("strace could not attach to the daemon")

    def detach(self):
        if self.strace:
            T.stop_process(self.strace)
            self.strace = None

    def events(self):
        """(path relative to DIR, 'open' or 'read') since the last call."""
        return self._strace_events() if self.fd < 0 else self._inotify_events()

    def _strace_events(self):
        out = []
        if not self.trace_file:
            return out
        time.sleep(0.2)     # strace writes as it goes
        with open(self.trace_file, errors="replace") as fh:
            lines = fh.read().splitlines()
        top = os.path.realpath(self.top)
        for ln in lines[self.seen:]:
            m = re.search(r'open(?:at)?\((?:[^,]*, )?"([^"]*)", ([^,)]*)', ln)
            if not m or "O_DIRECTORY" in m.group(2) or "= -1" in ln:
                continue
            p = os.path.realpath(m.group(1)) if os.path.isabs(m.group(1)) else m.group(1)
            if p.startswith(top + "/"):
                out.append((os.path.relpath(p, top), "open"))
        self.seen = len(lines)
        return out

    def _inotify_events(self):
        out = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            i = 0
            while i < len(buf):
                wd, mask, _cookie, ln = struct.unpack_from("iIII", buf, i)
                name = buf[i + 16:i + 16 + ln].rstrip(b"\0").decode()
                i += 16 + ln
                if mask & IN_ISDIR or not name:
                    continue
                out.append((os.path.normpath(os.path.join(self.wd.get(wd, "?"), name)),
                            "open" if mask & IN_OPEN else "read"))

    def close(self):
        self.detach()
        if self.trace_file:
            os.unlink(self.trace_file)
            self.trace_file = None
        if self.fd >= 0:
            os.close(self.fd)


def snapshot(mnt, with_bytes=True):
    """Everything a walk sees, in readdir order; st_ino as the index of the
    first path that showed it (so mounts numbering in the same order
    compare equal, and paths sharing an inode share it here too)."""
    out, inos = [], {}

    def walk(rel):
        for n in os.listdir(os.path.join(mnt, rel)):
            r = os.path.join(rel, n)
            p = os.path.join(mnt, r)
            st = os.lstat(p)
            ent = [r, oct(st.st_mode), st.st_size, st.st_nlink, inos.setdefault(st.st_ino, len(inos)),
                   st.st_mtime_ns, st.st_ctime_ns, st.st_blocks, st.st_blksize, st.st_uid, st.st_gid]
            if stat.S_ISLNK(st.st_mode):
                ent.append(os.readlink(p))
            else:
                names = os.listxattr(p, follow_symlinks=False)
                ent.append([(x, os.getxattr(p, x, follow_symlinks=False)) for x in names])
            if stat.S_ISREG(st.st_mode) and with_bytes:
                with open(p, "rb") as fh:
                    ent.append(hashlib.sha256(fh.read()).hexdigest())
            out.append(ent)
            if stat.S_ISDIR(st.st_mode):
                walk(r)

    walk("")
    return out


def diff(a, b):
    if a == b:
        return None
    for x, y in zip(a, b):
        if x != y:
            return "first difference:\n  %r\n  %r" % (x, y)
    return "lengths %d and %d" % (len(a), len(b))


def members_recorded(index):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % index, uri=True, timeout=10)
        try:
            return con.execute("SELECT count(*) FROM member").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return -1


def generate(top, folders, per):
    subprocess.run(["/usr/bin/python3", GEN, top, str(folders), str(per)], check=True, timeout=600)


def views_from_index(mnt, top):
    import h5py
    import numpy as np
    rel = os.path.join("f01", "m002.h5", "entry", "data")
    with h5py.File(os.path.join(top, "f01", "m002.h5"), "r") as f:
        want = f["entry/data"][()]
    try:
        got = np.load(os.path.join(mnt, rel + ".npy"))
        if got.dtype != want.dtype or not np.array_equal(got, want):
            T.fail("%s.npy on the warm remount: %s %s, h5py %s %s" % (rel, got.dtype, got.shape, want.dtype,
                                                                      want.shape))
        else:
            print("ok   %s.npy opens on the warm remount (unlisted), equal to h5py" % rel)
        if os.path.getsize(os.path.join(mnt, rel + ".csv")) == 0:
            T.fail("%s.csv on the warm remount is empty" % rel)
    except OSError as e:
        T.fail("%s's views on the warm remount: %s" % (rel, e))
    try:
        os.stat(os.path.join(mnt, rel + "_nope.npy"))
        T.fail("a view of no dataset found on the warm remount")
    except FileNotFoundError:
        pass


def main():
    work = T.workdir("collindex")
    top = os.path.join(work, "dir")
    generate(top, 3, 6)
    mnt = os.path.join(work, "mnt")
    index = os.path.join(work, "index.sqlite")
    opt_ix = ["-o", "index=" + index]

    # the reference: no index at all
    with T.Mount(top, mnt, ["-o", "noindex"]) as m:
        with m.watchdog(120):
            ref = snapshot(mnt)
    if os.path.exists(index):
        T.fail("-o noindex made %s" % index)
    nfiles = sum(1 for e in ref if e[1].startswith("0o100"))
    print("reference: %d entries, %d regular files" % (len(ref), nfiles))

    # cold: records; same answers
    with T.Mount(top, mnt, opt_ix) as m:
        with m.watchdog(120):
            cold = snapshot(mnt)
    d = diff(ref, cold)
    if d:
        T.fail("cold indexed mount differs from -o noindex: " + d)
    n = members_recorded(index)
    if n != 20:
        T.fail("%d members recorded after a cold walk, want 20 (18 + nosuffix + ub.h5)" % n)

    # warm: no file of DIR opened by the walk (metadata only) ...
    watch = FileOpens(top)
    with T.Mount(top, mnt, opt_ix) as m:
        watch.attach(m.proc.pid)
        with m.watchdog(120):
            warm = snapshot(mnt, with_bytes=False)
            ev = watch.events()
            if ev:
                T.fail("the warm remount's walk touched %d files of DIR, e.g. %s" % (len(ev), ev[:5]))
            subprocess.run(["find", mnt, "-printf", "%i %M %s %n %T@ %p\\n"], check=True, timeout=60,
                           stdout=subprocess.DEVNULL)
            subprocess.run(["ls", "-lR", mnt], check=True, timeout=60, stdout=subprocess.DEVNULL)
            subprocess.run(["getfattr", "-R", "-d", "-h", mnt], check=True, timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ev = watch.events()
            if ev:
                T.fail("find/ls -lR/getfattr -R on the warm remount touched %s" % ev[:5])
            # ... the bytes of one dataset: that member, and only it
            with open(os.path.join(mnt, "f01", "m002.h5", "entry", "data"), "rb") as fh:
                got = fh.read()
            ev = {p for p, _ in watch.events()}
            if ev != {os.path.join("f01", "m002.h5")}:
                T.fail("reading f01/m002.h5/entry/data touched %s" % sorted(ev))
            if hashlib.sha256(got).hexdigest() != [e for e in ref if e[0] == "f01/m002.h5/entry/data"][0][-1]:
                T.fail("f01/m002.h5/entry/data: wrong bytes through the indexed root")
            full = snapshot(mnt)
            # views open whether listed or not, also served from the
            # index (issue 72: FileNotFoundError after an indexed remount)
            views_from_index(mnt, top)
    strip = [e[:-1] if e[1].startswith("0o100") else e for e in ref]
    d = diff(strip, warm)
    if d:
        T.fail("warm indexed mount differs from -o noindex: " + d)
    d = diff(ref, full)
    if d:
        T.fail("warm indexed mount's bytes differ from -o noindex: " + d)
    if m.output().strip():
        T.fail("warm mount logged: %s" % m.output().strip()[:500])

    # a changed member, a new one, a removed one
    gen_one = ("import sys; sys.path.insert(0, %r); import make_index_collection as g; "
               "g.member(sys.argv[1], int(sys.argv[2]))" % HERE)
    subprocess.run(["/usr/bin/python3", "-c", gen_one, os.path.join(top, "f02", "m001.h5"), "4242"],
                   check=True, timeout=60)
    subprocess.run(["/usr/bin/python3", "-c", gen_one, os.path.join(top, "f02", "new.h5"), "4343"],
                   check=True, timeout=60)
    os.unlink(os.path.join(top, "f01", "m005.h5"))
    with T.Mount(top, mnt, ["-o", "noindex"]) as m:
        with m.watchdog(120):
            ref2 = snapshot(mnt)
    watch.close()
    watch = FileOpens(top)
    with T.Mount(top, mnt, opt_ix) as m:
        watch.attach(m.proc.pid)
        with m.watchdog(120):
            got = snapshot(mnt, with_bytes=False)
            ev = {p for p, _ in watch.events()}
    want = {os.path.join("f02", "m001.h5"), os.path.join("f02", "new.h5")}
    if ev != want:
        T.fail("after a change, the remount touched %s, want only %s" % (sorted(ev), sorted(want)))
    d = diff([e[:-1] if e[1].startswith("0o100") else e for e in ref2], got)
    if d:
        T.fail("after a change, the indexed mount differs from -o noindex: " + d)
    n = members_recorded(index)
    if n != 20:
        T.fail("%d members recorded after changes, want 20 (one new, one removed)" % n)
    watch.close()

    # an index that is no index: moved aside, rebuilt, one log line
    for what, spoil in (("junk", lambda: open(index, "wb").write(os.urandom(3000) + b"x" * 5000)),
                        ("truncated", lambda: os.truncate(index, os.path.getsize(index) // 3)),
                        ("another database", lambda: other_db(index))):
        # a settled index first (no WAL beside it)
        with T.Mount(top, mnt, opt_ix) as m:
            with m.watchdog(120):
                snapshot(mnt, with_bytes=False)
        for side in ("-wal", "-shm", ".bad"):
            if os.path.exists(index + side):
                os.unlink(index + side)
        spoil()
        with T.Mount(top, mnt, opt_ix) as m:
            with m.watchdog(120):
                got = snapshot(mnt)
        out = m.output()
        d = diff(ref2, got)
        if d:
            T.fail("%s index: mount differs from -o noindex: %s" % (what, d))
        lines = [ln for ln in out.splitlines() if "moved to" in ln]
        if len(lines) != 1 or not os.path.exists(index + ".bad"):
            T.fail("%s index: want one 'moved to' log line and %s.bad; log: %s" % (what, index, out[:800]))
        if members_recorded(index) != 20:
            T.fail("%s index: %d members recorded after the rebuild" % (what, members_recorded(index)))

    # two mounts sharing one index at once, both cold
    shared = os.path.join(work, "shared.sqlite")
    mnt2 = os.path.join(work, "mnt2")
    res = {}
    with T.Mount(top, mnt, ["-o", "index=" + shared]) as m1, T.Mount(top, mnt2, ["-o", "index=" + shared]) as m2:
        with m1.watchdog(180), m2.watchdog(180):
            th = [threading.Thread(target=lambda k, p: res.__setitem__(k, snapshot(p)), args=(k, p))
                  for k, p in ((1, mnt), (2, mnt2))]
            for t in th:
                t.start()
            for t in th:
                t.join(170)
    # two read-write mounts of the same members: the one that opens a
    # member second gets it read-only (the other holds its flock), so its
    # writable datasets show no owner write bit there
    def no_wbit(snap):
        return [[e[0], oct(int(e[1], 8) & ~0o200)] + list(e[2:]) if e[1].startswith("0o100") else e for e in snap]
    for k in (1, 2):
        d = diff(no_wbit(ref2), no_wbit(res.get(k, [])))
        if d:
            T.fail("shared index, mount %d differs from -o noindex: %s" % (k, d))
    for mm in (m1, m2):
        if "h5fs" in mm.output():
            T.fail("shared index: a mount logged: %s" % mm.output()[:500])
    if members_recorded(shared) != 20:
        T.fail("shared index: %d members recorded" % members_recorded(shared))

    live_remount(work)
    kill9(work)
    unreadable(work)
    shutil.rmtree(work, ignore_errors=True)
    return T.finish()


def live_remount(work):
    """-o ro (refresh=1, the default): the index serves unchanged members,
    a member's change is seen within the refresh interval."""
    top = os.path.join(work, "live")
    generate(top, 2, 4)
    mnt = os.path.join(work, "mnt4")
    index = os.path.join(work, "live.sqlite")
    opt = ["-o", "ro,index=" + index]
    changed, gone = os.path.join("f01", "m001.h5"), os.path.join("f00", "m002.h5")
    with T.Mount(top, mnt, ["-o", "ro,noindex"]) as m:
        with m.watchdog(120):
            ref = snapshot(mnt)
    with T.Mount(top, mnt, opt) as m:           # cold: records (the ro view)
        with m.watchdog(120):
            d = diff(ref, snapshot(mnt))
    if d:
        T.fail("live cold indexed mount differs from -o ro,noindex: " + d)
    if members_recorded(index) != 10:
        T.fail("live: %d members recorded after the cold walk, want 10" % members_recorded(index))
    watch = FileOpens(top)
    with T.Mount(top, mnt, opt) as m:
        watch.attach(m.proc.pid)
        with m.watchdog(180):
            warm = snapshot(mnt, with_bytes=False)
            subprocess.run(["find", mnt, "-printf", "%i %M %s %n %T@ %p\\n"], check=True, timeout=60,
                           stdout=subprocess.DEVNULL)
            subprocess.run(["ls", "-lR", mnt], check=True, timeout=60, stdout=subprocess.DEVNULL)
            subprocess.run(["getfattr", "-R", "-d", "-h", mnt], check=True, timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)     # past the refresh interval: looks at the files, opens none
            snapshot(mnt, with_bytes=False)
            ev = watch.events()
            if ev:
                T.fail("a live (-o ro) remount of an unchanged collection touched %s" % ev[:5])
            d = diff([e[:-1] if e[1].startswith("0o100") else e for e in ref], warm)
            if d:
                T.fail("live warm indexed mount differs from -o ro,noindex: " + d)
            # the kernel caches pages of this dataset; its number stays
            # the same in the rewritten file (same object address)
            data = os.path.join(mnt, changed, "entry", "data")
            with open(data, "rb") as fh:
                old = fh.read()
            watch.events()
            gen_one = ("import sys; sys.path.insert(0, %r); import make_index_collection as g; "
                       "g.member(sys.argv[1], int(sys.argv[2]))" % HERE)
            subprocess.run(["/usr/bin/python3", "-c", gen_one, os.path.join(top, changed), "4242"],
                           check=True, timeout=60)
            os.unlink(os.path.join(top, gone))
            watch.events()      # the rewrite's own opens (inotify sees every process)
            time.sleep(2.5)     # > refresh (1 s): the kernel's entries expired too
            got = snapshot(mnt, with_bytes=False)
            # opens only: the member read above may still be read by its
            # prefetch workers (inotify's IN_ACCESS)
            ev = {p for p, k in watch.events() if k == "open"}
            if ev != {changed}:
                T.fail("after one member changed, the live mount's walk opened %s, want only %s"
                       % (sorted(ev), changed))
            if os.path.lexists(os.path.join(mnt, gone)) or \
                    os.path.basename(gone) in os.listdir(os.path.join(mnt, os.path.dirname(gone))):
                T.fail("a deleted member still shows: %s" % gone)
            full = snapshot(mnt)
            with open(data, "rb") as fh:
                new = fh.read()
            xnames = os.listxattr(os.path.join(mnt, changed))
            xvals = [os.getxattr(os.path.join(mnt, changed), x) for x in xnames]
    watch.close()
    import h5py
    import numpy as np
    with h5py.File(os.path.join(top, changed), "r") as f:
        want = {k: np.ascontiguousarray(f[k][()]).tobytes() for k in ("entry/data", "entry/chunked", "time")}
    if new != want["entry/data"] or new == old:
        T.fail("the rewritten member's entry/data: %s bytes through the live indexed mount"
               % ("old" if new == old else "wrong"))
    for k, v in want.items():
        ent = [e for e in full if e[0] == os.path.join(changed, k)]
        if not ent or ent[0][-1] != hashlib.sha256(v).hexdigest():
            T.fail("the rewritten member's %s differs from h5py" % k)
    if not any(b"member 4242" in v for v in xvals):
        T.fail("the rewritten member's xattrs do not show its new title: %r" % list(zip(xnames, xvals)))
    with T.Mount(top, mnt, ["-o", "ro,noindex"]) as m:
        with m.watchdog(120):
            ref2 = snapshot(mnt)
    d = diff([e[:-1] if e[1].startswith("0o100") else e for e in ref2], got)
    if d:
        T.fail("after a change, the live indexed mount's walk differs from -o ro,noindex: " + d)
    d = diff(ref2, full)
    if d:
        T.fail("after a change, the live indexed mount's bytes differ from -o ro,noindex: " + d)


def other_db(path):
    for side in ("", "-wal", "-shm"):
        if os.path.exists(path + side):
            os.unlink(path + side)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE photos(name TEXT, taken INTEGER)")
    con.execute("INSERT INTO photos VALUES ('a', 1)")
    con.commit()
    con.close()


def kill9(work):
    """SIGKILL the daemon in the middle of a cold scan (some members
    recorded, not all), then remount on that index."""
    top = os.path.join(work, "big")
    generate(top, 6, 25)
    total = 6 * 25 + 2
    mnt = os.path.join(work, "mnt3")
    index = os.path.join(work, "kill.sqlite")
    with T.Mount(top, mnt, ["-o", "noindex"]) as m:
        with m.watchdog(300):
            ref = snapshot(mnt, with_bytes=False)
    m = T.Mount(top, mnt, ["-o", "index=" + index])
    m.start()
    seen = -1
    try:
        walker = threading.Thread(target=lambda: _quiet_walk(mnt), daemon=True)
        walker.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            seen = members_recorded(index)
            if seen >= 5:
                break
            time.sleep(0.005)
        m.proc.kill()           # SIGKILL
        m.proc.wait(10)
    finally:
        m.kill()
        m.stop()
    walker.join(30)
    print("killed with %d of %d members recorded" % (seen, total))
    if not 0 < seen < total:
        print("note: the kill did not land mid-scan (%d of %d recorded)" % (seen, total))
    with T.Mount(top, mnt, ["-o", "index=" + index]) as m:
        with m.watchdog(300):
            got = snapshot(mnt, with_bytes=False)
    d = diff(ref, got)
    if d:
        T.fail("remount after kill -9 mid-scan differs from -o noindex: " + d)
    if "moved to" in m.output():
        print("note: the index was rebuilt after kill -9: " + m.output().strip()[:300])
    if members_recorded(index) != total:
        T.fail("after the remount's walk %d members recorded, want %d" % (members_recorded(index), total))


def unreadable(work):
    """Members the index remembers as unreadable: one with HDF5's signature
    and junk after it, one cut short (head -c of a good file). A cold mount
    answers EIO with a log line and records why; a remount answers the same
    EIO and line (saying it is the index's) without opening either file;
    a new mtime opens the file again, and a member repaired meanwhile shows
    its tree."""
    import h5py
    import numpy as np
    top = os.path.join(work, "bad")
    os.makedirs(top)
    with h5py.File(os.path.join(top, "good.h5"), "w") as f:
        f["x"] = np.arange(100)
    with open(os.path.join(top, "junk.h5"), "wb") as fh:
        fh.write(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 4)
    with open(os.path.join(top, "good.h5"), "rb") as fh:
        head = fh.read(900)
    with open(os.path.join(top, "cut.h5"), "wb") as fh:
        fh.write(head)
    mnt = os.path.join(work, "mnt4")
    opts = ["-o", "ro,refresh=0,index=" + os.path.join(work, "bad.sqlite")]

    def eio(what, m, name):
        try:
            os.listdir(os.path.join(mnt, name))
            T.fail("%s: %s listed" % (what, name))
        except OSError as e:
            if e.errno != errno.EIO:
                T.fail("%s: %s: %s, want EIO" % (what, name, e))
        lines = [ln for ln in m.output().splitlines() if name + ": cannot be opened" in ln]
        if len(lines) != 1:
            T.fail("%s: %d log lines for %s, want 1: %r" % (what, len(lines), name, m.output()[-500:]))
        return lines[0] if lines else ""

    with T.Mount(top, mnt, opts) as m, m.watchdog(60):
        for name in ("junk.h5", "cut.h5"):
            if "by the index" in eio("cold", m, name):
                T.fail("cold: %s said to be the index's" % name)
        os.listdir(os.path.join(mnt, "good.h5"))
    watch = FileOpens(top)
    with T.Mount(top, mnt, opts) as m, m.watchdog(60):
        watch.attach(m.proc.pid)
        for name in ("junk.h5", "cut.h5"):
            if "by the index" not in eio("remount", m, name):
                T.fail("remount: %s's line does not say it is the index's" % name)
        ev = watch.events()
        if ev:
            T.fail("the remount opened %s for members the index knows to be unreadable" % ev[:5])
    watch.close()
    st = os.stat(os.path.join(top, "junk.h5"))
    os.utime(os.path.join(top, "junk.h5"), ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    shutil.copyfile(os.path.join(top, "good.h5"), os.path.join(top, "cut.h5"))
    with T.Mount(top, mnt, opts) as m, m.watchdog(60):
        if "by the index" in eio("touched", m, "junk.h5"):
            T.fail("touched: junk.h5 answered from the index")
        if os.listdir(os.path.join(mnt, "cut.h5")) != ["x"]:
            T.fail("repaired: cut.h5 lists %r" % os.listdir(os.path.join(mnt, "cut.h5")))
    print("unreadable members: remembered by the index, not opened on a remount")


def _quiet_walk(mnt):
    try:
        snapshot(mnt, with_bytes=False)
    except OSError:
        pass        # the daemon is killed under it


if __name__ == "__main__":
    sys.exit(main())
