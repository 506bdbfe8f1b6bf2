#!/usr/bin/python3
"""Live files at frozen speed (issue 34): a live mount answers as a frozen
one until FILE first changes, then checks every read; memmap works before
and after a change and on appends; no request waits long on FILE.

  * junk: FILE overwritten in place with bytes of the same size that are
    not HDF5 while readers stat, list and read: every request answers
    (EIO is fine) within a bound, the daemon lives, and a good FILE
    copied back is shown again;
  * the first-change window: readers hammer a default mount while FILE is
    changed in place for the first time (reads that mix are counted and
    printed: the window DESIGN.md states), then while it changes again
    and again: from then on no read mixes versions;
  * memmap: numpy.memmap of a dataset before a change, after a rename over
    FILE and after an in-place rewrite, and of a dataset a writer appends
    to: no ENODEV, the bytes of one version, and a size never ahead of its
    bytes (stat and the mapping agree);
  * kept caches: unchanged names asked nothing again past the refresh
    interval (the daemon's -d log), a change shows exactly (issue 70);
  * strict at mount: FILE whose lock a writer holds is checked from the
    first read (-o verbose says so), as is -o live=strict; -o live=bogus
    is refused.
Fixtures and readers are test_live.py's.
"""
import errno
import fcntl
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402
import test_live as L  # noqa: E402  (requires h5py and FUSE, or exits 77)

ROW, NOMIX, NOMIX_ROWS, Hammer = L.ROW, L.NOMIX, L.NOMIX_ROWS, L.Hammer
np = L.np
wait_for, head_version = L.wait_for, L.head_version
# the most one request may take here: "about a second" on FILE's state,
# with room for a loaded machine (the test reports the largest it saw)
REQ_BOUND = 4.0


class Timed(threading.Thread):
    """stat, listdir and read one path in a loop, timing each request."""

    def __init__(self, path, what):
        super().__init__(daemon=True)
        self.path, self.what = path, what
        self.stop_ev = threading.Event()
        self.worst, self.n, self.errs = 0.0, 0, {}

    def run(self):
        while not self.stop_ev.is_set():
            t0 = time.monotonic()
            try:
                if self.what == "stat":
                    os.stat(self.path)
                elif self.what == "list":
                    os.listdir(self.path)
                else:
                    with open(self.path, "rb") as f:
                        f.read(65536)
            except OSError as e:
                self.errs[e.errno] = self.errs.get(e.errno, 0) + 1
            dt = time.monotonic() - t0
            self.worst = max(self.worst, dt)
            self.n += 1
            time.sleep(0.002)


def test_junk(d):
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    good = os.path.join(d, "good.h5")
    L.run_py(L.VERSION, good, 1)
    subprocess.run(["cp", good, cur], check=True)
    size = os.path.getsize(cur)
    with T.Mount(cur, mnt, ["-o", "ro"]) as m, m.watchdog(90):
        head_version(mnt, "a")
        ts = [Timed(os.path.join(mnt, "a"), "read"), Timed(os.path.join(mnt, "g", "c"), "read"),
              Timed(os.path.join(mnt, "b"), "stat"), Timed(os.path.join(mnt, "g"), "stat"),
              Timed(mnt, "list"), Timed(os.path.join(mnt, "g"), "list")]
        for t in ts:
            t.start()
        time.sleep(0.3)
        junk = bytes((i * 131 + 7) & 0xFF for i in range(size))
        with open(cur, "r+b") as f:         # in place, the same size
            f.write(junk)
        time.sleep(3.0)
        with open(cur, "r+b") as f:         # and again, other junk
            f.write(junk[::-1])
        time.sleep(2.0)
        for t in ts:
            t.stop_ev.set()
        for t in ts:
            t.join(30)
        worst = max(t.worst for t in ts)
        print("junk: %d requests, the slowest %.3f s, errors %s" % (
            sum(t.n for t in ts), worst,
            {errno.errorcode.get(k, k): sum(t.errs.get(k, 0) for t in ts) for k in {k for t in ts for k in t.errs}}))
        if any(t.is_alive() for t in ts):
            T.fail("junk: a request never answered")
        if worst > REQ_BOUND:
            T.fail("junk: a request took %.1f s" % worst)
        if not m.alive():
            T.fail("junk: h5fs died")
        # a good FILE again (a rename over it) is shown again
        subprocess.run(["cp", good, cur + ".tmp"], check=True)
        L.run_py(L.VERSION, cur + ".tmp", 2)
        os.rename(cur + ".tmp", cur)
        wait_for("junk: a good FILE again", lambda: head_version(mnt, "a") == 2)


def hammers(mnt, want, names, fds):
    hs = [Hammer(os.path.join(mnt, nm), nm, want[nm], fd) for nm, fd in zip(names, fds)]
    hs += [Hammer(os.path.join(mnt, nm), nm, want[nm]) for nm in ("c", "k")]
    for h in hs:
        h.start()
    return hs


def stop(hs):
    for h in hs:
        h.stop_ev.set()
    for h in hs:
        h.join(60)


def test_first_change(d):
    rounds = int(os.environ.get("LIVE_ROUNDS", "6"))
    files, want, c_off = L.make_versions(d, NOMIX, NOMIX_ROWS)
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    names = ("c", "k", "z", "c")
    first_reads = first_mixed = after_reads = 0
    for rnd in range(rounds):
        subprocess.run(["cp", files[1], cur], check=True)
        time.sleep(0.05)
        with T.Mount(cur, mnt, ["-o", "ro"]) as m, m.watchdog(120):
            # descriptors held across both phases: the page cache they
            # filled before the change is what the window is about
            fds = [os.open(os.path.join(mnt, nm), os.O_RDONLY) for nm in names]
            hs = hammers(mnt, want, names, fds)
            try:
                time.sleep(0.3)
                # the first change, in place: the stated window, for every
                # read under way until it is seen
                L.write_version("overwrite", cur, files, want, c_off, 2)
                wait_for("first change: version 2", lambda: head_version(mnt, "c") == 2)
                stop(hs)        # every read that overlapped it is done
                for h in hs:
                    first_reads += h.reads
                    first_mixed += sum("mixed" in b for b in h.bad)
                    for b in h.bad:
                        if "mixed" not in b:
                            T.fail("first change, round %d: %s" % (rnd, b))
                # from now on every read is checked: reads begun after the
                # change was seen never mix, however FILE changes again
                hs = hammers(mnt, want, names, fds)
                time.sleep(0.1)
                for v in range(3, 7):
                    L.write_version("overwrite", cur, files, want, c_off, v)
                    time.sleep(0.05 * (rnd % 4))
                wait_for("after the first change: the last version", lambda: head_version(mnt, "c") == 6)
                time.sleep(0.3)
            finally:
                stop(hs)
                for fd in fds:
                    try:
                        os.close(fd)
                    except OSError as e:
                        if e.errno not in L.OK_ERRNOS:
                            T.fail("first change: close: %s" % e)
            for h in hs:
                after_reads += h.reads
                for b in h.bad[:3]:
                    T.fail("after the first change, round %d (%s): %s" % (
                        rnd, "held fd" if h.fd is not None else "fresh fd", b))
            if not m.alive():
                T.fail("first change, round %d: h5fs died" % rnd)
    print("first change: %d of %d reads overlapping it mixed two versions (the stated window); "
          "after it: %d reads checked, none mixed" % (first_mixed, first_reads, after_reads))


MEMMAP_APPEND = L.GEN + r'''
import time
path, n, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    with h5py.File(path, "a") as f:
        ds = f["log"]
        old = ds.shape[0]
        ds.resize((old + step, 16))
        ds[old:] = rows(0, "log", old, old + step)
    time.sleep(0.05)
'''


def test_memmap(d):
    import numpy as np
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    L.run_py(L.VERSION, cur, 1)

    def mm(name):
        return bytes(np.memmap(os.path.join(mnt, name), dtype=np.uint8, mode="r"))

    with T.Mount(cur, mnt, ["-o", "ro"]) as m, m.watchdog(120):
        before = np.memmap(os.path.join(mnt, "a"), dtype=np.uint8, mode="r")
        if L.check_bytes("a", 0, bytes(before), {1}):
            T.fail("memmap before a change: bytes differ")
        L.run_py(L.VERSION, cur + ".new", 2)
        os.rename(cur + ".new", cur)
        wait_for("memmap: version 2", lambda: head_version(mnt, "a") == 2)
        try:
            got = mm("a")
        except OSError as e:
            T.fail("memmap after a rename over FILE: %s" % e)
        else:
            if L.check_bytes("a", 0, got, {2}):
                T.fail("memmap after a rename over FILE: not version 2")
        del before
        # rewritten in place (cat v3 > FILE)
        L.run_py(L.VERSION, cur + ".v3", 3)
        subprocess.run(["sh", "-c", 'cat "$1" > "$2"', "sh", cur + ".v3", cur], check=True)
        wait_for("memmap: version 3", lambda: head_version(mnt, "a") == 3)
        try:
            got = mm("g/c")
        except OSError as e:
            T.fail("memmap after a rewrite in place: %s" % e)
        else:
            if L.check_bytes("c", 0, got, {3}):
                T.fail("memmap after a rewrite in place: not version 3")

    app = os.path.join(d, "app.h5")
    with L.h5py.File(app, "w", libver="earliest") as f:
        f.create_dataset("log", shape=(0, 16), maxshape=(None, 16), chunks=(8, 16), dtype="u1")
    n, step = 30, 7
    with T.Mount(app, mnt, ["-o", "ro"]) as m, m.watchdog(120):
        w = subprocess.Popen([sys.executable, "-c", MEMMAP_APPEND, app, str(n), str(step)])
        maps, bad = 0, []
        while w.poll() is None or maps == 0:
            p = os.path.join(mnt, "log")
            try:
                size = os.stat(p).st_size
                if size:
                    a = bytes(np.memmap(p, dtype=np.uint8, mode="r"))
                    maps += 1
                    # the size stat showed, or later a larger one: never
                    # bytes the size is ahead of (zeros)
                    if len(a) < size or L.check_bytes("log", 0, a, {0}):
                        bad.append("mapping of %d bytes (stat %d) is not rows of the writer" % (len(a), size))
                    with open(p, "rb") as f:
                        data = f.read()
                    if L.check_bytes("log", 0, data, {0}):
                        bad.append("read of %d bytes is not rows of the writer" % len(data))
            except OSError as e:
                if e.errno not in L.OK_ERRNOS:
                    bad.append("memmap of a growing dataset: %s" % e)
            time.sleep(0.02)
        final = n * step * ROW
        wait_for("memmap appends: size", lambda: os.stat(os.path.join(mnt, "log")).st_size == final)
        a = bytes(np.memmap(os.path.join(mnt, "log"), dtype=np.uint8, mode="r"))
        if a != b"".join(L.row(0, "log", r) for r in range(n * step)):
            T.fail("memmap after appends: bytes differ")
        print("memmap: %d mappings of a growing dataset checked" % maps)
        for b in bad[:3]:
            T.fail("memmap appends: %s" % b)


def test_strict_at_mount(d):
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    L.run_py(L.VERSION, cur, 1)
    with open(cur, "rb") as lk:
        fcntl.flock(lk.fileno(), fcntl.LOCK_EX)     # as a libhdf5 writer holds it
        with T.Mount(cur, mnt, ["-o", "ro,verbose"]) as m, m.watchdog(30):
            head_version(mnt, "a")
            if "locked by a writer: reads are checked from the start" not in m.output():
                T.fail("a writer's lock at mount: not checked from the start: %s" % m.output()[-500:])
    with T.Mount(cur, mnt, ["-o", "ro,verbose"]) as m, m.watchdog(30):
        head_version(mnt, "a")
        if "checked" in m.output():
            T.fail("an unlocked FILE: checked from the start: %s" % m.output()[-500:])
        # the first change switches it (logged once)
        L.run_py(L.VERSION, cur + ".new", 2)
        os.rename(cur + ".new", cur)
        wait_for("strict: version 2", lambda: head_version(mnt, "a") == 2)
        if "reads are checked from now on" not in m.output():
            T.fail("the first change: no switch to checked reads logged")
    with T.Mount(cur, mnt, ["-o", "ro,live=strict"]) as m, m.watchdog(30):
        if head_version(mnt, "a") != 2:
            T.fail("-o live=strict: wrong version")
    r = subprocess.run([T.H5FS, "-o", "live=bogus", cur, mnt], capture_output=True, text=True, timeout=30)
    if r.returncode == 0 or "live=bogus" not in r.stderr:
        T.fail("-o live=bogus: exit %d, %r" % (r.returncode, r.stderr))
        if T.is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", mnt], timeout=30)


def opcodes(out, since):
    """The FUSE requests h5fs -d logged after offset `since` of its output."""
    counts = {}
    for line in out[since:].splitlines():
        i = line.find("opcode: ")
        if i >= 0:
            op = line[i + 8:].split(" ", 1)[0].rstrip(",")
            counts[op] = counts.get(op, 0) + 1
    return counts


def test_kept_caches(d):
    """A local live mount keeps the kernel's entries, attributes and
    listings as a frozen one does (issue 70): looked at again, unchanged
    names ask the daemon nothing, past the refresh interval too. A change
    drops exactly what changed: a name added, one removed, a dataset grown
    and a listing replaced all show, and stay shown."""
    cur = os.path.join(d, "kept.h5")
    L.run_py("""import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["keep"] = np.arange(100, dtype="i4")
    f["gone"] = np.arange(10, dtype="i4")
    f.create_dataset("grow", data=np.arange(10, dtype="i4"), maxshape=(None,))
    f.create_group("g")["a"] = [1]
""", cur)
    # FILE a second old at the mount (live.h LIVE_SETTLE_NS): its stamp
    # vouches for it. Written just before, the mount opens it again once it
    # is quiet and rightly drops the kernel's caches then (a write within
    # a clock tick leaves the stamp as it was): when that fell between the
    # two looks below, every name was asked again (1 run in 3)
    time.sleep(1.1)
    mnt = os.path.join(d, "mnt")
    with T.Mount(cur, mnt, ["-o", "ro,refresh=1", "-d"]) as m, m.watchdog(60):
        def look():
            names = sorted(os.listdir(mnt)), sorted(os.listdir(os.path.join(mnt, "g")))
            sizes = {n: os.stat(os.path.join(mnt, n)).st_size for n in names[0] if n != "g"}
            with open(os.path.join(mnt, "keep"), "rb") as f:
                data = f.read()
            return names, sizes, data
        first = look()
        if first != ((["g", "gone", "grow", "keep"], ["a"]), {"gone": 40, "grow": 40, "keep": 400},
                     np.arange(100, dtype="i4").tobytes()):
            T.fail("kept caches: the tree as mounted: %r" % (first[:2],))
        time.sleep(1.3)         # past the refresh interval (the old timeouts)
        mark = len(m.output())
        again = look()
        asked = opcodes(m.output(), mark)
        if again != first:
            T.fail("kept caches: looked at again: %r" % (again[:2],))
        # (OPEN, OPENDIR and their releases always come; nothing else should)
        extra = {k: v for k, v in asked.items() if k in ("LOOKUP", "GETATTR", "READDIR", "READDIRPLUS", "READ")}
        if extra:
            T.fail("kept caches: unchanged names asked the daemon again: %r" % extra)
        L.run_py("""import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "a") as f:
    del f["gone"]
    f["new"] = np.arange(3, dtype="i4")
    f["grow"].resize((20,))
    f["grow"][10:] = np.arange(10, 20, dtype="i4")
    del f["g"]["a"]
    f["g"]["b"] = [2]
""", cur)
        want = ((["g", "grow", "keep", "new"], ["b"]), {"grow": 80, "keep": 400, "new": 12},
                np.arange(100, dtype="i4").tobytes())
        wait_for("kept caches: the change", lambda: look() == want)
        if not os.path.exists(os.path.join(mnt, "new")) or os.path.exists(os.path.join(mnt, "gone")):
            T.fail("kept caches: names after the change")
        with open(os.path.join(mnt, "grow"), "rb") as f:
            if f.read() != np.arange(20, dtype="i4").tobytes():
                T.fail("kept caches: grown dataset's bytes")
        time.sleep(1.3)         # a reply of the old tree must not have stuck
        if look() != want:
            T.fail("kept caches: after the change, later: %r" % (look()[:2],))


def main():
    base = T.workdir("live_fast")
    only = os.environ.get("LIVE_ONLY")
    for t in (test_kept_caches, test_junk, test_strict_at_mount, test_memmap, test_first_change):
        if only and t.__name__ != only:
            continue
        d = os.path.join(base, t.__name__)
        os.makedirs(d)
        print("--", t.__name__, flush=True)
        t(d)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
