#!/usr/bin/python3
"""Live files (issue 24, -o refresh): a mounted FILE that other processes
change shows its new state, never stale or mixed bytes.

Writers are separate processes (h5py with and without SWMR, cp, cat >,
mv); readers loop over every dataset with pread, cat and getxattr while
they write. Every version's datasets hold rows that name the version, the
dataset and the row (b"%04d%-4s%08d"), so a read that mixes two versions or
returns another object's bytes is caught byte by byte (check_bytes).
Covered:
  * rewrite in place (cat v2 > FILE: the same names at other addresses),
    rename replacement (mv), same-size overwrite of a contiguous dataset
    (h5py r+), truncation to a non-HDF5 file (EIO, no crash, then a good
    file again), deletion (last state kept, a log line), new and removed
    objects and attributes (listings and xattrs equal h5py's);
  * non-SWMR appends on a v1 B-tree dataset, with new groups and a growing
    attribute; SWMR appends (h5py swmr_mode) on an extensible array and a
    v2 B-tree dataset, and by a libhdf5 C writer (live_writer.c); tail -f
    following appends;
  * an external link target file and a VDS source file rewritten; an object replaced on nginx
    (another ETag: opened anew instead of EIO);
  * links (issue 21's rules) across changes: a group reached by an external
    link and shown from it (an absolute soft link inside it a symlink, one
    outside it shown in place, a hard link up the path a "." symlink)
    after its file is rewritten and after the link is pointed at another
    group; a group at two paths (two directories, one st_ino) replaced by
    another group;
  * read()s larger than one request: test_live_dio.py;
  * -o refresh=0 keeps the view as mounted.
"""
import errno
import os
import subprocess
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
WAIT = 15.0          # seconds for a change to show (refresh is 1 s)
OK_ERRNOS = (errno.EIO, errno.ENOENT, errno.ESTALE)


def row(v, name, r):
    return b"%04d%-4s%08d" % (v, name.encode()[:4], r)


# The writers: run as separate processes, deterministic.
GEN = r'''
import sys, h5py, numpy as np
def rows(v, name, a, b):
    return np.frombuffer(b"".join(b"%04d%-4s%08d" % (v, name.encode()[:4], r) for r in range(a, b)),
                         dtype=np.uint8).reshape(b - a, 16)
'''

VERSION = GEN + r'''
path, v = sys.argv[1], int(sys.argv[2])
with h5py.File(path, "w") as f:
    for k in range(v % 3):          # other objects first: names move
        f.create_dataset("pad%d" % k, data=rows(v, "pad%d" % k, 0, 10 + k))
    for nm in (["a", "b"] if v % 2 else ["b", "a"]):
        f.create_dataset(nm, data=rows(v, nm, 0, 100 + 7 * v))
    f.create_dataset("g/c", data=rows(v, "c", 0, 50 + v), chunks=(8, 16), compression="gzip")
    f.attrs["version"] = v
    f["g"].attrs["v%d" % v] = v
'''

OVERWRITE = GEN + r'''
path, v, nm = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with h5py.File(path, "r+") as f:
    f[nm][0:10] = rows(v, nm, 0, 10)
'''

# non-SWMR appends on a v1 B-tree (libver earliest): open, extend, close
APPEND = GEN + r'''
import time
path, n, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    with h5py.File(path, "a") as f:
        ds = f["log"]
        old = ds.shape[0]
        ds.resize((old + step, 16))
        ds[old:] = rows(0, "log", old, old + step)
        f.attrs["rows"] = old + step
        if i % 3 == 2:
            f.create_group("grp%d" % i)
        if i == n // 2 and "gone" in f:
            del f["gone"]
    time.sleep(0.15)
'''

# a VDS source: /a of 64 rows of version v (the VDS file maps all of it)
VDS_SRC = GEN + r'''
path, v = sys.argv[1], int(sys.argv[2])
with h5py.File(path, "w") as f:
    for k in range(v):          # /a at another address each version
        f.create_dataset("pad%d" % k, data=rows(v, "pad", 0, 4))
    f.create_dataset("a", data=rows(v, "a", 0, 64))
'''

SWMR = GEN + r'''
import time
path, n, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
f = h5py.File(path, "a", libver="latest")
f.swmr_mode = True
ea, bt = f["ea"], f["bt2"]
for i in range(n):
    for ds, nm in ((ea, "ea"), (bt, "bt2")):
        old = ds.shape[0]
        ds.resize((old + step, 16))
        ds[old:] = rows(0, nm, old, old + step)
        ds.flush()
    time.sleep(0.05)
f.close()
'''


# external links and per-path directories (test_links_live): FILE main
# (version v) links x to EXT:/inner (v < 3) or EXT:/inner2, and has a group
# g1 also linked as g2; EXT (version v) has pads (addresses move), /inner
# (d; s -> /inner/d; out -> /other/e; up = /inner) and /inner2 (d; s ->
# /inner2/d).
LINKS = GEN + r'''
main, ext, v, which = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if which in ("ext", "both"):
    with h5py.File(ext, "w") as f:
        for k in range(v):
            f.create_dataset("pad%d" % k, data=rows(v, "pad", 0, 4))
        f.create_dataset("inner/d", data=rows(v, "d", 0, 8))
        f["inner/s"] = h5py.SoftLink("/inner/d")
        f["inner/out"] = h5py.SoftLink("/other/e")
        f["inner/up"] = f["inner"]
        f.create_dataset("other/e", data=rows(v, "e", 0, 8))
        f.create_dataset("inner2/d", data=rows(v, "d2", 0, 8))
        f["inner2/s"] = h5py.SoftLink("/inner2/d")
if which in ("main", "both"):
    with h5py.File(main, "w") as f:
        for k in range(v):
            f.create_dataset("pad%d" % k, data=rows(v, "pad", 0, 4))
        f["x"] = h5py.ExternalLink("ext.h5", "/inner" if v < 3 else "/inner2")
        f.create_dataset("g1/k" if v < 3 else "g1/k3", data=rows(v, "k", 0, 8))
        f["g2"] = f["g1"]
'''


def run_py(code, *args):
    subprocess.run([sys.executable, "-c", code] + [str(a) for a in args], check=True, timeout=120)


def check_bytes(name, off, data, versions=None):
    """The bytes read at off of dataset `name` are rows of one version of
    that dataset (or of the appending writer's, version 0)."""
    if not data:
        return None
    first = (off + ROW - 1) // ROW * ROW
    if first + ROW > off + len(data):
        return None      # no whole row to tell the version by
    head = data[first - off:first - off + ROW]
    try:
        v = int(head[:4])
    except ValueError:
        return "%s [%d+%d]: not a row: %r" % (name, off, len(data), head)
    if versions is not None and v not in versions:
        return "%s [%d+%d]: version %d, expected one of %s" % (name, off, len(data), v, sorted(versions))
    r0, r1 = off // ROW, (off + len(data) + ROW - 1) // ROW
    want = b"".join(row(v, name.split("/")[-1], r) for r in range(r0, r1))[off - r0 * ROW:][:len(data)]
    if data != want:
        i = next(k for k in range(len(data)) if data[k] != want[k])
        return "%s [%d+%d]: byte %d is %r, version %d's is %r (mixed or foreign bytes)" % (
            name, off, len(data), off + i, data[i:i + 16], v, want[i:i + 16])
    return None


class Reader(threading.Thread):
    """Loops over the datasets with pread (whole and random windows), cat
    and getxattr until stopped; every successful read is checked."""

    def __init__(self, mnt, names, versions=None):
        super().__init__(daemon=True)
        self.mnt, self.names, self.versions = mnt, names, versions
        self.stop_ev = threading.Event()
        self.bad, self.reads, self.errors = [], 0, {}

    def note_err(self, e):
        if e.errno not in OK_ERRNOS:
            self.bad.append("unexpected %s" % e)
        self.errors[e.errno] = self.errors.get(e.errno, 0) + 1

    def run(self):
        k = 0
        while not self.stop_ev.is_set():
            for nm in self.names:
                p = os.path.join(self.mnt, nm)
                k += 1
                try:
                    if k % 7 == 0:
                        r = subprocess.run(["cat", p], capture_output=True, timeout=30)
                        if r.returncode == 0:
                            err = check_bytes(nm, 0, r.stdout, self.versions)
                            if err:
                                self.bad.append("cat: " + err)
                        continue
                    fd = os.open(p, os.O_RDONLY)
                    try:
                        size = os.fstat(fd).st_size
                        for off, ln in ((0, 1 << 20), ((k * 37) % max(size, 1), 53)):
                            data = os.pread(fd, ln, off)
                            self.reads += 1
                            err = check_bytes(nm, off, data, self.versions)
                            if err:
                                self.bad.append("pread: " + err)
                    finally:
                        os.close(fd)
                    os.listxattr(p)
                except OSError as e:
                    self.note_err(e)
            try:
                os.getxattr(self.mnt, "user.version")
            except OSError as e:
                if e.errno != errno.ENODATA:
                    self.note_err(e)

    def finish(self, label):
        self.stop_ev.set()
        self.join(60)
        for b in self.bad[:10]:
            T.fail("%s: %s" % (label, b))
        print("%s: %d reads checked, errors %s" % (label, self.reads, self.errors))


def wait_for(what, fn):
    deadline = time.monotonic() + WAIT
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last is True:
                return True
        except OSError as e:
            last = e
        time.sleep(0.05)
    T.fail("%s: not seen within %.0f s (last: %r)" % (what, WAIT, last))
    return False


def head_version(mnt, nm):
    with open(os.path.join(mnt, nm), "rb") as f:
        return int(f.read(4))


def tree_of(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            out[name] = dict(obj.attrs)
        f.visititems(visit)
        out[""] = dict(f.attrs)
    return out


def check_tree(mnt, h5path, label):
    """Listing, sizes, bytes and attribute names equal h5py's."""
    want = tree_of(h5path)
    with h5py.File(h5path, "r") as f:
        for name in sorted(want):
            p = os.path.join(mnt, name) if name else mnt
            if name and isinstance(f[name], h5py.Dataset):
                got = open(p, "rb").read()
                if got != f[name][()].tobytes():
                    T.fail("%s: %s bytes differ from h5py's" % (label, name))
            elif name or True:
                kids = sorted(f[name].keys()) if name else sorted(f.keys())
                if sorted(os.listdir(p)) != kids:
                    T.fail("%s: listing of /%s %s, h5py %s" % (label, name, sorted(os.listdir(p)), kids))
            xs = sorted(x[5:] for x in os.listxattr(p) if x.startswith("user.") and not x.startswith("user.h5."))
            if xs != sorted(want[name]):
                T.fail("%s: attributes of /%s %s, h5py %s" % (label, name, xs, sorted(want[name])))


def test_rewrites(d):
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    for v in range(1, 6):
        run_py(VERSION, os.path.join(d, "v%d.h5" % v), v)
    subprocess.run(["cp", os.path.join(d, "v1.h5"), cur], check=True)
    names = ["a", "b", "g/c", "pad0", "pad1"]
    # -o live=strict: the Reader runs across FILE's first change, which by
    # default may mix two versions in a read overlapping it (README "Live
    # files", measured by test_live_fast.py); that window lasts until the
    # watcher has seen the write, which on a loaded machine is long enough
    # for the Reader to meet it ("mixed or foreign bytes" under load). Once
    # changed, a default mount checks every read as this one does.
    with T.Mount(cur, mnt, ["-o", "ro,live=strict"]) as m, m.watchdog(240):
        check_tree(mnt, cur, "v1")
        rd = Reader(mnt, names, versions={1, 2, 3})
        rd.start()
        # in place: the same names at other addresses (the example)
        subprocess.run(["sh", "-c", 'cat "$1" > "$2"', "sh", os.path.join(d, "v2.h5"), cur], check=True)
        wait_for("rewrite in place", lambda: head_version(mnt, "a") == 2 and head_version(mnt, "g/c") == 2)
        time.sleep(1.5)
        # replaced by rename (the old file keeps its bytes; the path is followed)
        subprocess.run(["cp", os.path.join(d, "v3.h5"), cur + ".tmp"], check=True)
        os.rename(cur + ".tmp", cur)
        wait_for("rename replacement", lambda: head_version(mnt, "b") == 3)
        time.sleep(1.5)
        rd.finish("rewrite/rename")
        check_tree(mnt, cur, "v3")
        if os.path.exists(os.path.join(mnt, "pad0")):
            T.fail("pad0 (not in v3) still listed")
        # same-size overwrite of a contiguous dataset in place
        run_py(OVERWRITE, cur, 4, "a")
        wait_for("same-size overwrite", lambda: head_version(mnt, "a") == 4)
        data = open(os.path.join(mnt, "a"), "rb").read()
        want = b"".join(row(4, "a", r) for r in range(10)) + b"".join(row(3, "a", r) for r in range(10, 121))
        if data != want:
            T.fail("same-size overwrite: bytes differ (%d vs %d)" % (len(data), len(want)))
        # truncated to something that is not HDF5: EIO, the daemon lives
        subprocess.run(["sh", "-c", 'echo not hdf5 > "$1"', "sh", cur], check=True)

        def eio():
            try:
                open(os.path.join(mnt, "b"), "rb").read()
                return "still readable"
            except OSError as e:
                return e.errno == errno.EIO or e
        wait_for("truncated to non-HDF5: EIO", eio)
        wait_for("truncation: the log line", lambda: "cannot be read now" in m.output())
        if not m.alive():
            T.fail("h5fs died on a truncated FILE")
        # a good file again
        subprocess.run(["cp", os.path.join(d, "v5.h5"), cur], check=True)
        wait_for("v5 after the truncation", lambda: head_version(mnt, "a") == 5)
        rd = Reader(mnt, names, versions={5})
        rd.start()
        time.sleep(1.0)
        rd.finish("v5")
        check_tree(mnt, cur, "v5")
        # deleted: the last state stays, with a log line
        os.unlink(cur)
        time.sleep(2.5)
        if head_version(mnt, "a") != 5:
            T.fail("deleted FILE: last state not kept")
        if "was deleted" not in m.output():
            T.fail("deleted FILE: no log line")


def test_appends(d):
    path, mnt = os.path.join(d, "app.h5"), os.path.join(d, "mnt")
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("log", shape=(0, 16), maxshape=(None, 16), chunks=(8, 16), dtype="u1")
        f.create_dataset("gone", data=[1, 2, 3])
        f.attrs["rows"] = 0
    n, step = 12, 5
    with T.Mount(path, mnt, ["-o", "ro"]) as m, m.watchdog(240):
        os.listdir(mnt)
        tail = subprocess.Popen(["tail", "-c", "+1", "-f", os.path.join(mnt, "log")], stdout=subprocess.PIPE)
        rd = Reader(mnt, ["log"], versions={0})
        rd.start()
        run_py(APPEND, path, n, step)
        final = n * step * ROW
        wait_for("non-SWMR appends (v1 B-tree): size", lambda: os.stat(os.path.join(mnt, "log")).st_size == final)
        rd.finish("appends")
        want = b"".join(row(0, "log", r) for r in range(n * step))
        if open(os.path.join(mnt, "log"), "rb").read() != want:
            T.fail("appends: bytes differ")
        wait_for("appends: attribute", lambda: os.getxattr(mnt, "user.rows") == str(n * step).encode())
        check_tree(mnt, path, "appends")
        # tail -f printed every row as it came
        got = b""
        deadline = time.monotonic() + WAIT
        os.set_blocking(tail.stdout.fileno(), False)
        while len(got) < final and time.monotonic() < deadline:
            chunk = tail.stdout.read()
            if chunk:
                got += chunk
            else:
                time.sleep(0.1)
        T.stop_process(tail)
        if got != want:
            T.fail("tail -f: %d bytes of %d, %s" % (len(got), final, "equal so far" if want.startswith(got) else "differ"))


def test_swmr(d):
    path, mnt = os.path.join(d, "swmr.h5"), os.path.join(d, "mnt")
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("ea", shape=(0, 16), maxshape=(None, 16), chunks=(4, 16), dtype="u1")
        f.create_dataset("bt2", shape=(0, 16), maxshape=(None, None), chunks=(4, 16), dtype="u1")
        for k in range(3):
            f.create_dataset("idle%d" % k, data=[k])
    with h5py.File(path, "r") as f:
        from h5py import h5d
        kinds = {nm: f[nm].id.get_create_plist().get_layout() for nm in ("ea", "bt2")}
        assert all(k == h5d.CHUNKED for k in kinds.values())
    n, step = 40, 3
    with T.Mount(path, mnt, ["-o", "ro"]) as m, m.watchdog(240):
        rd = Reader(mnt, ["ea", "bt2"], versions={0})
        rd.start()
        sizes = {"ea": [], "bt2": []}
        w = subprocess.Popen([sys.executable, "-c", SWMR, path, str(n), str(step)])
        t0, idle = time.monotonic(), 0
        while w.poll() is None:
            # objects looked up once, at different generations, then idle
            if idle < 3 and time.monotonic() - t0 > 0.5 * idle:
                os.stat(os.path.join(mnt, "idle%d" % idle))
                idle += 1
            for nm in sizes:
                try:
                    sizes[nm].append(os.stat(os.path.join(mnt, nm)).st_size)
                except OSError as e:
                    T.fail("SWMR: stat %s: %s" % (nm, e))
            time.sleep(0.1)
        if w.returncode != 0:
            T.fail("SWMR writer failed")
        final = n * step * ROW
        for nm in sizes:
            wait_for("SWMR %s size" % nm, lambda nm=nm: os.stat(os.path.join(mnt, nm)).st_size == final)
            if sizes[nm] != sorted(sizes[nm]):
                T.fail("SWMR %s: size went down: %s" % (nm, sizes[nm]))
            if len(set(sizes[nm])) < 3:
                T.fail("SWMR %s: growth not followed while writing: %s" % (nm, sorted(set(sizes[nm]))))
            want = b"".join(row(0, nm, r) for r in range(n * step))
            if open(os.path.join(mnt, nm), "rb").read() != want:
                T.fail("SWMR %s: bytes differ" % nm)
        rd.finish("swmr")
        # old generations are closed once nothing holds them: one or two
        # descriptors of FILE open, not one per generation an idle object
        # was last read in
        time.sleep(2.5)
        fds = [x for x in os.listdir("/proc/%d/fd" % m.proc.pid)
               if os.path.realpath("/proc/%d/fd/%s" % (m.proc.pid, x)) == os.path.realpath(path)]
        if len(fds) > 2:
            T.fail("SWMR: %d descriptors of FILE still open: old generations kept" % len(fds))
        if os.environ.get("LIVE_LOG"):
            print(m.output()[-3000:])


def test_c_writer(d):
    """SWMR appends by a libhdf5 C writer (live_writer.c)."""
    import shutil
    cc = shutil.which("cc") or shutil.which("gcc")
    r = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5-serial"], capture_output=True, text=True)
    if r.returncode != 0:
        r = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5"], capture_output=True, text=True)
    if not cc or r.returncode != 0:
        print("SKIP test_c_writer: no C compiler or libhdf5-dev")
        return
    exe, path, mnt = os.path.join(d, "live_writer"), os.path.join(d, "c.h5"), os.path.join(d, "mnt")
    src = os.path.join(T.SRCDIR, "tests", "integration", "live_writer.c")
    b = subprocess.run([cc, "-O1", "-o", exe, src] + r.stdout.split(), capture_output=True, text=True, timeout=120)
    if b.returncode != 0:
        T.fail("live_writer.c does not build: %s" % b.stderr[-500:])
        return
    subprocess.run([exe, path, "create"], check=True, timeout=60)
    n, step = 30, 5
    with T.Mount(path, mnt, ["-o", "ro"]) as m, m.watchdog(120):
        rd = Reader(mnt, ["c"], versions={0})
        rd.start()
        sizes = []
        w = subprocess.Popen([exe, path, "append", str(n), str(step)])
        while w.poll() is None:
            sizes.append(os.stat(os.path.join(mnt, "c")).st_size)
            time.sleep(0.1)
        if w.returncode != 0:
            T.fail("live_writer failed (%d)" % w.returncode)
        wait_for("C SWMR writer: size", lambda: os.stat(os.path.join(mnt, "c")).st_size == n * step * ROW)
        rd.finish("c writer")
        if len(set(sizes)) < 3:
            T.fail("C SWMR writer: growth not followed while writing: %s" % sorted(set(sizes)))
        want = b"".join(row(0, "c", r) for r in range(n * step))
        if open(os.path.join(mnt, "c"), "rb").read() != want:
            T.fail("C SWMR writer: bytes differ")


def test_extlink(d):
    main, ext, mnt = os.path.join(d, "main.h5"), os.path.join(d, "ext.h5"), os.path.join(d, "mnt")
    run_py(VERSION, ext, 1)
    with h5py.File(main, "w") as f:
        f["link"] = h5py.ExternalLink("ext.h5", "/")
    with T.Mount(main, mnt, ["-o", "ro"]) as m, m.watchdog(120):
        if head_version(mnt, "link/a") != 1:
            T.fail("external link: v1 not shown")
        run_py(VERSION, os.path.join(d, "ext2.h5"), 2)
        subprocess.run(["sh", "-c", 'cat "$1" > "$2"', "sh", os.path.join(d, "ext2.h5"), ext], check=True)
        # Seen when a/'s size is version 2's (a new generation's metadata):
        # a read before that may fall in the first change's window (issue
        # 34: old metadata on new bytes, stated, not checked here)
        wait_for("external link target rewritten",
                 lambda: os.stat(os.path.join(mnt, "link/a")).st_size == (100 + 7 * 2) * ROW)
        err = check_bytes("a", 0, open(os.path.join(mnt, "link/a"), "rb").read(), {2})
        if err:
            T.fail("external link: " + err)


def test_links_live(d):
    """Issue 21's tree (links shown in place, anchors of another file's
    groups, directories one node per path) re-resolved on a live FILE."""
    main, ext, mnt = os.path.join(d, "main.h5"), os.path.join(d, "ext.h5"), os.path.join(d, "mnt")

    def rewrite(v, which):
        new = os.path.join(d, "new%d%s" % (v, which))
        os.makedirs(new)
        run_py(LINKS, os.path.join(new, "main.h5"), os.path.join(new, "ext.h5"), v, which)
        for nm in (["main.h5"] if which == "main" else ["ext.h5"]):
            subprocess.run(["sh", "-c", 'cat "$1" > "$2"', "sh", os.path.join(new, nm), os.path.join(d, nm)],
                           check=True)

    def read(p):
        with open(os.path.join(mnt, p), "rb") as f:
            return f.read()

    def check_x(label, v, inner):
        """x shows EXT:/inner (or /inner2) of version v as issue 21 does."""
        want = ["d", "out", "s", "up"] if inner == "inner" else ["d", "s"]
        if sorted(os.listdir(os.path.join(mnt, "x"))) != want:
            T.fail("%s: x lists %s, want %s" % (label, sorted(os.listdir(os.path.join(mnt, "x"))), want))
            return
        dn = "d" if inner == "inner" else "d2"
        err = check_bytes(dn, 0, read("x/d"), {v})
        if err:
            T.fail("%s: x/d: %s" % (label, err))
        # an absolute soft link inside the anchor: a symlink to x/d
        if not os.path.islink(os.path.join(mnt, "x/s")) or read("x/s") != read("x/d"):
            T.fail("%s: x/s is not a symlink to x/d (%r)" % (label, os.path.islink(os.path.join(mnt, "x/s"))))
        if inner == "inner":
            # outside the anchor: followed, shown in place
            if os.path.islink(os.path.join(mnt, "x/out")):
                T.fail("%s: x/out is a symlink" % label)
            err = check_bytes("e", 0, read("x/out"), {v})
            if err:
                T.fail("%s: x/out: %s" % (label, err))
            # a hard link to its own group: "."
            if os.readlink(os.path.join(mnt, "x/up")) != ".":
                T.fail("%s: x/up -> %r" % (label, os.readlink(os.path.join(mnt, "x/up"))))

    def check_g(label, kid):
        s1, s2 = os.stat(os.path.join(mnt, "g1")), os.stat(os.path.join(mnt, "g2"))
        l1, l2 = sorted(os.listdir(os.path.join(mnt, "g1"))), sorted(os.listdir(os.path.join(mnt, "g2")))
        if s1.st_ino != s2.st_ino or l1 != [kid] or l2 != [kid]:
            T.fail("%s: g1 %d %s, g2 %d %s (want one st_ino, [%s])" % (label, s1.st_ino, l1, s2.st_ino, l2, kid))

    run_py(LINKS, main, ext, 1, "both")
    with T.Mount(main, mnt, ["-o", "ro"]) as m, m.watchdog(120):
        check_x("v1", 1, "inner")
        check_g("v1", "k")
        # the external file rewritten in place (its group moves)
        rewrite(2, "ext")
        wait_for("external file rewritten", lambda: head_version(mnt, "x/d") == 2)
        check_x("ext v2", 2, "inner")
        check_g("ext v2", "k")
        # FILE rewritten, x still to EXT:/inner: x is re-resolved through
        # the link to the same group from the same anchor, so a descriptor
        # of it stays good (ESTALE had the anchor come out otherwise)
        fd = os.open(os.path.join(mnt, "x"), os.O_RDONLY | os.O_DIRECTORY)
        try:
            link = os.readlink("s", dir_fd=fd)
            rewrite(2, "main")
            wait_for("FILE rewritten", lambda: os.path.exists(os.path.join(mnt, "pad1")))
            check_x("main v2", 2, "inner")
            check_g("main v2", "k")
            try:
                if sorted(os.listdir(fd)) != ["d", "out", "s", "up"] or os.readlink("s", dir_fd=fd) != link:
                    T.fail("main v2: x's descriptor lists %s" % sorted(os.listdir(fd)))
            except OSError as e:
                T.fail("main v2: x's descriptor: %s" % e)
        finally:
            os.close(fd)
        # FILE rewritten: x leads to another group of EXT (a new anchor),
        # g1 (and g2) to another group
        rewrite(3, "main")
        wait_for("external link pointed elsewhere", lambda: sorted(os.listdir(os.path.join(mnt, "x"))) == ["d", "s"])
        check_x("main v3", 2, "inner2")
        wait_for("group replaced", lambda: os.listdir(os.path.join(mnt, "g1")) == ["k3"])
        check_g("main v3", "k3")


def test_vds_source(d):
    """A virtual dataset's source file rewritten in place."""
    src, vds, mnt = os.path.join(d, "src.h5"), os.path.join(d, "vds.h5"), os.path.join(d, "mnt")
    run_py(VDS_SRC, src, 1)
    lay = h5py.VirtualLayout(shape=(64, 16), dtype="u1")
    lay[:] = h5py.VirtualSource("src.h5", "a", shape=(64, 16))
    with h5py.File(vds, "w", libver="latest") as f:
        f.create_virtual_dataset("a", lay)
    # -o live=strict, as in test_rewrites: the Reader runs across the
    # source's first change, whose window a default mount has (README)
    with T.Mount(vds, mnt, ["-o", "ro,live=strict"]) as m, m.watchdog(120):
        if head_version(mnt, "a") != 1:
            T.fail("VDS source: v1 not shown")
        rd = Reader(mnt, ["a"], versions={1, 2})
        rd.start()
        run_py(VDS_SRC, os.path.join(d, "src2.h5"), 2)
        # the source, opened by the first read, is watched from the
        # watcher's next look (at most refresh seconds)
        time.sleep(1.2)
        subprocess.run(["sh", "-c", 'cat "$1" > "$2"', "sh", os.path.join(d, "src2.h5"), src], check=True)
        # the whole of v2's a: v2's other rows read at v1's addresses (a
        # source changed unseen) would pass a look at the first row alone
        v2 = b"".join(row(2, "a", r) for r in range(64))
        wait_for("VDS source rewritten", lambda: open(os.path.join(mnt, "a"), "rb").read() == v2)
        rd.finish("vds source")
        err = check_bytes("a", 0, open(os.path.join(mnt, "a"), "rb").read(), {2})
        if err:
            T.fail("VDS source: " + err)


def test_remote(d):
    """An object replaced on nginx (another ETag) is opened anew."""
    import shutil
    if "#define HAVE_CURL 1" not in open(os.path.join(T.BUILDDIR, "config.h")).read():
        print("SKIP test_remote: h5fs built without libcurl")
        return
    if not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        print("SKIP test_remote: nginx not installed")
        return
    import test_remote_nginx as N
    root, mnt = os.path.join(d, "www"), os.path.join(d, "mnt")
    os.makedirs(root)
    run_py(VERSION, os.path.join(root, "cur.h5"), 1)
    run_py(VERSION, os.path.join(d, "v2.h5"), 2)
    proc, port = N.start_nginx(root, d)
    try:
        url = "http://127.0.0.1:%d/cur.h5" % port
        with T.Mount(url, mnt) as m, m.watchdog(120):
            rd = Reader(mnt, ["a", "b", "g/c"], versions={1, 2})
            rd.start()
            # a cat across the switch, made deterministic: v1's b read to
            # its end on a descriptor held over the change, then the rest
            # (v2's b has the same address and is 7 rows longer): never
            # v1's rows followed by v2's (what CI once caught a cat doing)
            held = os.open(os.path.join(mnt, "b"), os.O_RDONLY)
            first = os.read(held, 1 << 20)
            time.sleep(0.5)
            subprocess.run(["cp", os.path.join(d, "v2.h5"), os.path.join(root, "cur.tmp")], check=True)
            os.rename(os.path.join(root, "cur.tmp"), os.path.join(root, "cur.h5"))
            wait_for("remote object replaced", lambda: head_version(mnt, "a") == 2 and head_version(mnt, "g/c") == 2)
            try:
                os.fstat(held)
                rest = os.pread(held, 1 << 20, len(first))
            except OSError as e:
                if e.errno not in OK_ERRNOS:
                    T.fail("remote: held descriptor: %s" % e)
                rest = b""
            finally:
                os.close(held)
            err = check_bytes("b", 0, first + rest, {1, 2})
            if err:
                T.fail("remote: a descriptor held over the change: " + err)
            time.sleep(1.0)
            rd.finish("remote")
            check_tree(mnt, os.path.join(root, "cur.h5"), "remote v2")
    finally:
        T.stop_process(proc)


def test_first_change(d):
    """Bytes read before FILE's first change (unchecked, answered as a frozen
    mount answers them) by a descriptor still open when it comes: what that
    descriptor reads on is never the new version's next to them. A rename
    over with the dataset at the same address (v2's b is 7 rows longer):
    EIO, while new descriptors read v2; appends: the old rows are verified
    equal and the new ones read."""
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    run_py(VERSION, cur, 1)
    run_py(VERSION, cur + ".new", 2)
    with T.Mount(cur, mnt, ["-o", "ro"]) as m, m.watchdog(60):
        held = os.open(os.path.join(mnt, "b"), os.O_RDONLY)
        first = os.read(held, 1 << 20)
        os.rename(cur + ".new", cur)
        wait_for("rename over seen", lambda: head_version(mnt, "a") == 2)
        # the kernel's size of b is v2's (attributes dropped or timed out),
        # so the read past v1's end reaches h5fs
        wait_for("b's new size seen", lambda: os.fstat(held).st_size == 114 * ROW)
        try:
            rest = os.pread(held, 1 << 20, len(first))
            T.fail("first change: a descriptor read v1's b unchecked, then %d bytes after the change" % len(rest))
        except OSError as e:
            if e.errno not in OK_ERRNOS:
                T.fail("first change: %s" % e)
            rest = b""
        err = check_bytes("b", 0, first + rest, {1, 2})
        if err:
            T.fail("first change: " + err)
        with open(os.path.join(mnt, "b"), "rb") as fh:     # meanwhile: direct_io
            if fh.read() != b"".join(row(2, "b", r) for r in range(100 + 14)):
                T.fail("first change: a new descriptor does not read v2")
        os.close(held)
        with open(os.path.join(mnt, "b"), "rb") as fh:     # the page cache again
            if fh.read() != b"".join(row(2, "b", r) for r in range(100 + 14)):
                T.fail("first change: the next descriptor does not read v2")
    path = os.path.join(d, "app.h5")
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("log", data=np.frombuffer(b"".join(row(0, "log", r) for r in range(64)), dtype="u1")
                         .reshape(64, 16), maxshape=(None, 16), chunks=(8, 16))
    with T.Mount(path, mnt, ["-o", "ro"]) as m, m.watchdog(60):
        held = os.open(os.path.join(mnt, "log"), os.O_RDONLY)
        first = os.read(held, 1 << 20)
        run_py(APPEND, path, 1, 5)
        wait_for("append seen", lambda: os.stat(os.path.join(mnt, "log")).st_size == 69 * ROW)
        try:
            os.fstat(held)
            rest = os.pread(held, 1 << 20, len(first))
        except OSError as e:
            T.fail("first change, appends: a descriptor held over them: %s" % e)
            rest = b""
        os.close(held)
        if first + rest != b"".join(row(0, "log", r) for r in range(69)):
            T.fail("first change, appends: %d + %d bytes, not the 69 rows" % (len(first), len(rest)))


def test_frozen(d):
    cur, mnt = os.path.join(d, "frozen.h5"), os.path.join(d, "mnt")
    run_py(VERSION, cur, 1)
    run_py(VERSION, cur + ".new", 2)
    with T.Mount(cur, mnt, ["-o", "ro,refresh=0"]) as m, m.watchdog(60):
        head_version(mnt, "a")
        os.rename(cur + ".new", cur)
        time.sleep(2.5)
        if head_version(mnt, "a") != 1 or check_bytes("a", 0, open(os.path.join(mnt, "a"), "rb").read(), {1}):
            T.fail("-o refresh=0: the view changed")


# The two windows of issue 24's closing note, hammered: a FILE changing
# while readers loop. Each round mounts anew (the first change of a mount is
# where a spliced read or a descriptor with the page cache meets it),
# opens descriptors before the change (the page cache) and after, and
# changes FILE several times in quick succession: same-size overwrites by
# pwrite (one syscall per version: the file is never torn), rename over,
# or cat v > FILE. Every read must be the bytes of one version.
NOMIX_ROWS = 32768                   # 512 KiB of rows per dataset
NOMIX = GEN + r"""
path, v, shift = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with h5py.File(path, "w") as f:
    for k in range(shift):          # the same names at other addresses
        f.create_dataset("pad%d" % k, data=rows(v, "pad", 0, 100 + 50 * k))
    f.create_dataset("c", data=rows(v, "c", 0, N))
    f.create_dataset("k", data=rows(v, "k", 0, N), chunks=(2048, 16))
    f.create_dataset("z", data=rows(v, "z", 0, N), chunks=(2048, 16), compression="gzip")
""".replace("N)", "%d)" % NOMIX_ROWS)


class Hammer(threading.Thread):
    """pread in a tight loop over one dataset: through a descriptor held
    from before the change (fd given: the page cache), or opened anew each
    time (and now and then cat); whole and partial windows. Every
    successful read is compared with the version its first row names."""

    def __init__(self, path, name, want, fd=None, size=NOMIX_ROWS * ROW, big=0):
        super().__init__(daemon=True)
        self.path, self.name, self.want, self.fd = path, name, want, fd
        self.size, self.big = size, big     # big: read()s of that many bytes only
        self.stop_ev = threading.Event()
        self.bad, self.reads, self.seen, self.errors = [], 0, set(), {}

    def check(self, off, data):
        if len(data) < ROW or off % ROW:
            return
        try:
            v = int(data[:4])
        except ValueError:
            self.bad.append("%s [%d+%d]: not a row: %r" % (self.name, off, len(data), data[:16]))
            return
        w = self.want.get(v)
        if w is None:
            self.bad.append("%s [%d+%d]: version %d is none written" % (self.name, off, len(data), v))
            return
        self.seen.add(v)
        if data != w[off:off + len(data)]:
            i = next((k for k in range(len(data)) if k + off >= len(w) or data[k] != w[off + k]), len(data))
            self.bad.append("%s [%d+%d]: byte %d is %r, version %d's %r (mixed)" % (
                self.name, off, len(data), off + i, data[i // ROW * ROW:i // ROW * ROW + ROW], v,
                w[off + i // ROW * ROW:off + i // ROW * ROW + ROW]))

    def run(self):
        size = self.size
        k = 0
        while not self.stop_ev.is_set() and len(self.bad) < 5:
            k += 1
            if self.fd is None and k % 16 == 0 and not self.big:
                # cat: read() calls of st_blksize (128 KiB), each of one
                # version (FILE may change between two of them)
                r = subprocess.run(["cat", self.path], capture_output=True, timeout=30)
                if r.returncode == 0:
                    for off in range(0, len(r.stdout), 1 << 17):
                        self.check(off, r.stdout[off:off + (1 << 17)])
                        self.reads += 1
                continue
            fd = self.fd
            try:
                if fd is None:
                    fd = os.open(self.path, os.O_RDONLY)
                if self.big:
                    # one read() of several requests (the kernel sends at
                    # most 1 MiB at a time): from the start with os.read,
                    # and from a row inside with pread
                    todo = ((0, self.big), ((k * 40009) % size // ROW * ROW, self.big))
                else:
                    todo = ((0, size), ((k * 4099) % size // ROW * ROW, 3 * 65536 + 48))
                for off, ln in todo:
                    if self.big and off == 0:
                        os.lseek(fd, 0, os.SEEK_SET)
                        data = os.read(fd, ln)
                    else:
                        data = os.pread(fd, ln, off)
                    if self.big and len(data) < min(ln, size - off):
                        self.short = getattr(self, "short", 0) + 1     # cut at a change
                    self.check(off, data)
                    self.reads += 1
            except OSError as e:
                if e.errno not in OK_ERRNOS:
                    self.bad.append("%s: unexpected %s" % (self.name, e))
                self.errors[e.errno] = self.errors.get(e.errno, 0) + 1
                time.sleep(0.001)
            finally:
                if self.fd is None and fd is not None:
                    try:
                        os.close(fd)    # (the kernel reports a failed readahead at close)
                    except OSError as e:
                        if e.errno not in OK_ERRNOS:
                            self.bad.append("%s: close: %s" % (self.name, e))


def make_versions(d, script, nrows):
    """Versions 1..6 of the no-mix file written by SCRIPT (NOMIX or a
    larger copy): {v: path}, {name: {v: bytes}}, and the file offset of
    v1's contiguous /c (for same-size overwrites in place)."""
    want, files = {}, {}
    for v in range(1, 7):
        files[v] = os.path.join(d, "v%d.h5" % v)
        run_py(script, files[v], v, v % 3)
        for nm in ("c", "k", "z"):
            want.setdefault(nm, {})[v] = b"".join(row(v, nm, r) for r in range(nrows))
    with h5py.File(files[1], "r") as f:
        c_off = f["c"].id.get_offset()
    return files, want, c_off


def write_version(how, cur, files, want, c_off, v):
    """FILE becomes version v of make_versions' files: c's rows of it
    written over the same addresses in one pwrite ("overwrite"), a copy
    renamed over FILE ("rename"), or FILE rewritten in place ("cat")."""
    if how == "overwrite":
        with open(cur, "r+b") as f:
            os.pwrite(f.fileno(), want["c"][v], c_off)
    elif how == "rename":
        subprocess.run(["cp", files[v], cur + ".tmp"], check=True)
        os.rename(cur + ".tmp", cur)
    else:
        subprocess.run(["sh", "-c", 'cat "$1" > "$2"', "sh", files[v], cur], check=True)


def test_no_mix(d):
    rounds = int(os.environ.get("LIVE_ROUNDS", "6"))
    files, want, c_off = make_versions(d, NOMIX, NOMIX_ROWS)
    cur, mnt = os.path.join(d, "cur.h5"), os.path.join(d, "mnt")
    total, seen, errs = 0, set(), {}
    for rnd in range(3 * rounds):
        how = ("overwrite", "rename", "cat")[rnd % 3]
        subprocess.run(["cp", files[1], cur], check=True)
        time.sleep(0.05)        # FILE quiet when mounted: its stamp vouches for it
        # -o live=strict: the first change is hammered too (by default
        # a read overlapping it may mix: test_live_fast.py measures that)
        with T.Mount(cur, mnt, ["-o", "ro,live=strict"]) as m, m.watchdog(120):
            fds = [os.open(os.path.join(mnt, nm), os.O_RDONLY) for nm in ("c", "k", "z", "c")]
            hs = [Hammer(os.path.join(mnt, nm), nm, want[nm], fd) for nm, fd in zip(("c", "k", "z", "c"), fds)]
            hs += [Hammer(os.path.join(mnt, nm), nm, want[nm]) for nm in ("c", "k")]
            try:
                for h in hs:
                    h.start()
                time.sleep(0.3)
                for v in range(2, 7):
                    write_version(how, cur, files, want, c_off, v)
                    time.sleep(0.05 * (rnd % 4))
                wait_for("%s: the last version" % how, lambda: head_version(mnt, "c") == 6)
                time.sleep(0.3)
                if how == "overwrite":
                    # held descriptors (the page cache): k and z did not
                    # change and read on (the pages recorded verified equal);
                    # c's cached pages are another version's now: EIO
                    for h in hs[:4]:
                        h.stop_ev.set()
                        h.join(60)
                    for nm, fd in zip(("c", "k", "z"), fds):
                        try:
                            data = os.pread(fd, NOMIX_ROWS * ROW, 0)
                            got = "v1" if data == want[nm][1] else "other bytes"
                        except OSError as e:
                            got = errno.errorcode.get(e.errno, e.errno)
                        if got != ("EIO" if nm == "c" else "v1"):
                            T.fail("no mix, round %d: held %s after the overwrites: %s" % (rnd, nm, got))
            finally:
                for h in hs:
                    h.stop_ev.set()
                for h in hs:
                    h.join(60)
                for fd in fds:
                    try:
                        os.close(fd)    # (the kernel reports a failed readahead at close)
                    except OSError as e:
                        if e.errno not in OK_ERRNOS:
                            T.fail("no mix: close: %s" % e)
            for h in hs:
                total += h.reads
                seen |= h.seen
                for k, n in h.errors.items():
                    key = "%s %s" % ("held" if h.fd is not None else "fresh", errno.errorcode.get(k, k))
                    errs[key] = errs.get(key, 0) + n
                for b in h.bad[:3]:
                    T.fail("no mix, round %d (%s, %s): %s" % (rnd, how, "held fd" if h.fd is not None else "fresh fd", b))
            if not m.alive():
                T.fail("no mix, round %d: h5fs died" % rnd)
    print("no mix: %d rounds, %d reads checked, versions seen %s, errors %s" % (3 * rounds, total, sorted(seen), errs))


def main():
    base = T.workdir("live")
    only = os.environ.get("LIVE_ONLY")     # one test by name, by hand
    for t in (test_rewrites, test_appends, test_swmr, test_c_writer, test_extlink, test_links_live, test_vds_source, test_remote, test_first_change, test_frozen,
              test_no_mix):
        if only and t.__name__ != only:
            continue
        d = os.path.join(base, t.__name__)
        os.makedirs(d)
        print("--", t.__name__, flush=True)
        t(d)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
