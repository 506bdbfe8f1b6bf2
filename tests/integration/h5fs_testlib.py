"""Shared helpers of the h5fs integration tests.

Run by `make check` with H5FS_BIN, H5FS_LS, H5FS_SRCDIR, H5FS_BUILDDIR set
(AM_TESTS_ENVIRONMENT); the defaults below let a test also run by hand from
a build directory.  Exit status 77 = skipped (automake convention).
"""
import contextlib
import errno
import os
import posixpath
import random
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
DEAD = (errno.ENOTCONN, errno.ECONNABORTED)   # the daemon is gone
HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("H5FS_SRCDIR", os.path.abspath(os.path.join(HERE, "..", "..")))
BUILDDIR = os.environ.get("H5FS_BUILDDIR", os.getcwd())
H5FS = os.environ.get("H5FS_BIN", os.path.join(BUILDDIR, "h5fs"))
H5FS_LS = os.environ.get("H5FS_LS", os.path.join(BUILDDIR, "h5fs-ls"))
# The collection index's default place ($XDG_CACHE_HOME/h5fs/, else
# ~/.cache/h5fs/): the tests' own, in the build tree's work directory
# (removed by make clean), not the user's (issue 72: the suite left ~16 MB
# of index databases in ~/.cache/h5fs). The daemons and tools the tests
# start inherit it.
os.environ["XDG_CACHE_HOME"] = os.path.join(BUILDDIR, "tests", "integration", "work", "cache")
MOUNT_WAIT = 10.0      # seconds for a mount to appear
UNMOUNT_WAIT = 10.0
MAX_COMPARE = 64 << 20  # datasets larger than this are not byte-compared
# Chunked (and virtual) mismatches fail a test; H5FS_CHUNKED_STRICT=0 only
# reports them.  Either way the known-unsupported cases below are accepted
# as EIO when the daemon logs why.
CHUNKED_STRICT = os.environ.get("H5FS_CHUNKED_STRICT", "1") == "1"
# Filters libhdf5 may decode (a plugin) that this build of h5fs does not:
# such a dataset must answer EIO, with a log line naming the filter id.
# Every plugin filter the corpus holds is built in when configure finds its
# library (zfp since issue 21); config.h says which were not.
OPTIONAL_FILTERS = {32013: ("HAVE_ZFP", "zfp"), 305: ("HAVE_LZO", "lzo")}


def _unsupported_filters():
    try:
        with open(os.path.join(BUILDDIR, "config.h")) as fh:
            have = {ln.split()[1] for ln in fh if ln.startswith("#define HAVE_")}
    except OSError:
        return {}
    return {fid: name for fid, (macro, name) in OPTIONAL_FILTERS.items() if macro not in have}


UNSUPPORTED_FILTERS = _unsupported_filters()

# Filters h5fs encodes (issue 48: an encoder beside every decoder), the
# codec-library ones when config.h says the library was found; zfp only
# for streams of this libzfp's codec written on a host of this byte order
# (h5_filter_encode_check): not predicted here, no fixture has another.
_ENCODER_MACROS = {4: "HAVE_SZLIB", 305: "HAVE_LZO", 307: "HAVE_BZ2", 32001: "HAVE_BLOSC", 32004: "HAVE_LZ4",
                   32013: "HAVE_ZFP", 32015: "HAVE_ZSTD"}


def _encoded_filters():
    try:
        with open(os.path.join(BUILDDIR, "config.h")) as fh:
            have = {ln.split()[1] for ln in fh if ln.startswith("#define HAVE_")}
    except OSError:
        have = set()
    return {1, 2, 3, 5, 6, 32000, 32008} | {fid for fid, m in _ENCODER_MACROS.items() if m in have}


ENCODED_FILTERS = _encoded_filters()


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)



@contextlib.contextmanager
def small_disk(path, size):
    """A tmpfs of `size` ("2m") mounted at path (made here) for a block,
    unmounted after it: a disk that fills. Skips when none can be mounted
    (needs root)."""
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", path],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        skip("cannot mount a tmpfs: %s" % r.stderr.strip())
    try:
        yield path
    finally:
        subprocess.run(["umount", path], timeout=30)

def require_h5py():
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        skip("h5py/numpy not available to %s (%s); configure PYTHON=/usr/bin/python3" % (sys.executable, e))


def require_fuse():
    if not os.path.exists(H5FS):
        skip("%s not built" % H5FS)
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
        os.close(fd)
    except OSError as e:
        skip("/dev/fuse unusable: %s" % e)
    if not shutil.which("fusermount3"):
        skip("fusermount3 not installed")


def require_curl():
    """h5fs built with libcurl (remote FILEs); a test of them skips otherwise."""
    if "#define HAVE_CURL 1" not in open(os.path.join(BUILDDIR, "config.h")).read():
        skip("h5fs built without libcurl")


def corpus_sample(items):
    """Every Nth of a list of corpus files when H5FS_CORPUS_SAMPLE=N (the
    sanitizer stage, tests/stress/run-sanitizers.sh: the code under the
    sanitizer meets every fixture and a spread of the corpus there, and
    corpus_mt.py reads all of the corpus under ASan); all of them
    otherwise (make check)."""
    items = list(items)
    try:
        n = int(os.environ.get("H5FS_CORPUS_SAMPLE") or 1)
    except ValueError:
        n = 1
    return items[::n] if n > 1 else items


def workdir(name):
    """A fresh scratch directory in the build tree (removed by make clean)."""
    base = os.path.join(BUILDDIR, "tests", "integration", "work")
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=name + "-", dir=base)


def sanitized():
    """Whether h5fs is a sanitizer build: an LD_PRELOAD shim (the fault
    shim) cannot go before its runtime there."""
    with open(H5FS, "rb") as fh:
        b = fh.read()
    return b"__asan_init" in b or b"__tsan_init" in b


def fsync_dir(path):
    """fsync(2) of a directory: through a mount, its pending names and
    what they hold made durable (and freed space given back, issue 69)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def disk_used(path):
    """The bytes path takes on its disk (st_blocks x 512): holes excluded."""
    return os.stat(path).st_blocks * 512


def write_through(h5file, mnt, files, tag, opts=("-o", "rw"), group="g", seconds=120):
    """Each of files (name -> bytes) written into mnt/group through a fresh
    mount of h5file (opts), the group fsync'd, then `h5fs -u`: the test
    fails when the unmount exits non-zero (its log's tail said)."""
    with Mount(h5file, mnt, opts=list(opts)) as m, m.watchdog(seconds):
        for name, data in files.items():
            with open(os.path.join(mnt, group, name), "wb") as fh:
                fh.write(data)
        fsync_dir(os.path.join(mnt, group))
    if m.returncode:
        fail("%s: unmount exits %s: %s" % (tag, m.returncode, m.output()[-300:]))


def is_mounted(mnt):
    mnt = os.path.realpath(mnt)
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 1 and parts[1].replace("\\040", " ") == mnt:
                    return True
    except OSError:
        pass
    return False


_failures = [0]


def fail(msg):
    """Count and print one failure (the scripts that check many cases and
    report them all; finish() gives their exit status)."""
    _failures[0] += 1
    print("FAIL: " + msg, flush=True)


def wait_until(fn, seconds, step=0.05):
    """Poll fn() until it is true (True) or seconds passed (False); an
    OSError from fn counts as not yet."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if fn():
                return True
        except OSError:
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(step)


def h5py_opens(path, seconds=5.0):
    """h5py's 'r+' open of path succeeds within seconds: FILE's lock was
    given back (a write-behind's batch committed)."""
    import h5py
    deadline = time.monotonic() + seconds
    while True:
        try:
            with h5py.File(path, "r+"):
                return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)


def expect_err(what, fn, codes):
    """fn() must fail with OSError of errno codes (one, or a tuple of
    them); a descriptor it returns by mistake is closed."""
    codes = codes if isinstance(codes, tuple) else (codes,)
    want = "/".join(errno.errorcode[c] for c in codes)
    try:
        r = fn()
        if isinstance(r, int):
            os.close(r)
        fail("%s succeeded, expected %s" % (what, want))
    except OSError as e:
        if e.errno not in codes:
            fail("%s: %s, expected %s" % (what, e, want))


def finish():
    """Exit status after fail(): 1 with the count of failures, else 0."""
    if _failures[0]:
        print("%d failure(s)" % _failures[0])
        return 1
    print("ok")
    return 0


def stop_process(proc, timeout=10):
    """Stop a server a test started (SIGTERM, then SIGKILL), time-bounded."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


def _default_signals():
    # A shell runs background jobs with SIGINT and SIGQUIT ignored, and
    # libfuse (rightly) leaves an ignored signal alone: a daemon started
    # under `run-tests.sh &` would never see the SIGINT test_signal sends.
    # nohup does the same to SIGHUP.
    import signal
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


class MountError(Exception):
    pass


# What ASan/LSan/UBSan/TSan print (configure --enable-sanitizers, or a TSan
# build): any of these in the daemon's output is a bug, even when the daemon
# exited 0 (LSan reports at exit, after the walk has passed).
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer")


def _without_libfuse_leaks(out):
    """out without the LeakSanitizer reports whose every leak was allocated
    by libfuse alone, no h5fs frame on its stack. libfuse 3.14 keeps a
    FUSE_INTERRUPT whose request was answered already on the session's
    interrupt list, and fuse_session_destroy never frees that list: a reader
    killed in a read at the wrong moment leaves one 128-byte request behind
    (seen in CI's ASan run of test_live, tail -f killed). A leak of ours has
    our function on its stack and still fails the test."""
    start = "ERROR: LeakSanitizer"
    pos = 0
    while True:
        i = out.find(start, pos)
        if i < 0:
            return out
        j = out.find("SUMMARY:", i)
        j = len(out) if j < 0 else out.find("\n", j) if out.find("\n", j) >= 0 else len(out)
        blocks = [b for b in out[i:j].split("\n\n") if "leak of" in b]
        def libfuse_only(b):
            frames = [ln.strip() for ln in b.splitlines() if ln.strip().startswith("#")]
            return len(frames) > 1 and all("libfuse3.so" in f for f in frames[1:])
        if blocks and all(libfuse_only(b) for b in blocks):
            out = out[:i] + "(a leak inside libfuse, see _without_libfuse_leaks)" + out[j:]
            pos = i + 1
        else:
            pos = j


class SanitizerReport(AssertionError):
    """Raised by Mount.start()/stop(): not caught by the tests, so the test
    script dies with status 1 and the report lands in its log."""


class Mount:
    """h5fs FILE MNT -f in the background; always unmounted and reaped.
    nofile: the daemon's RLIMIT_NOFILE (soft and hard), as `ulimit -n`;
    env: variables added to the daemon's environment (a fault shim's
    LD_PRELOAD and settings, commit tunables), ours left alone."""

    def __init__(self, h5file, mnt, opts=(), cwd=None, nofile=None, env=None):
        self.h5file = h5file
        self.mnt = mnt
        self.opts = list(opts)
        self.cwd = cwd
        self.nofile = nofile
        self.env = dict(os.environ, **env) if env else None
        self.proc = None
        self.log = None
        self.hung = False
        # what a plain `fusermount3 -u` said when it failed (stop() then
        # detaches the mount): "unmount never EBUSY" (issue 71) is checked
        # by the tests that inject faults
        self.busy = None
        os.makedirs(mnt, exist_ok=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        if exc and exc[0] is not None:
            # the daemon's log says why a request failed
            print("h5fs log (%s):\n%s" % (self.h5file, self.output()[-3000:]))
        return False

    def start(self):
        self.log = tempfile.TemporaryFile()
        opts = list(self.opts)
        # -o min_free's default margin (the smaller of 5% and 1 GiB) would
        # refuse every write of a test on a disk nearly full already (this
        # machine kind has been seen with 287 MB free): tests that are not
        # about the margin then mount without it
        if not any("min_free" in o for o in opts) and os.path.exists(self.h5file):
            try:
                st = os.statvfs(os.path.dirname(os.path.abspath(self.h5file)))
                if st.f_bavail * st.f_frsize < (2 << 30):
                    opts += ["-o", "min_free=0"]
            except OSError:
                pass
        self.proc = subprocess.Popen([H5FS, "-f"] + opts + [self.h5file, self.mnt],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=self.cwd, env=self.env, preexec_fn=self._preexec)
        deadline = time.monotonic() + MOUNT_WAIT
        while time.monotonic() < deadline:
            if is_mounted(self.mnt):
                return
            if self.proc.poll() is not None:
                out = self.output()
                rc = self.proc.returncode
                self.proc = None
                self.check_sanitizers()
                raise MountError("h5fs exited with status %d before mounting: %s" % (rc, out.strip()))
            time.sleep(0.02)
        self.stop()
        raise MountError("mount did not appear within %.0f s" % MOUNT_WAIT)

    def _preexec(self):
        _default_signals()
        if self.nofile:
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def output(self):
        if not self.log:
            return ""
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def kill(self):
        """Abort a hung daemon: pending requests then fail instead of blocking."""
        self.hung = True
        if self.alive():
            self.proc.kill()
        subprocess.run(["fusermount3", "-uz", self.mnt], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=UNMOUNT_WAIT)

    def stop(self):
        try:
            if is_mounted(self.mnt):
                r = subprocess.run(["fusermount3", "-u", self.mnt], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, timeout=UNMOUNT_WAIT)
                if r.returncode != 0 and is_mounted(self.mnt):
                    self.busy = r.stderr.decode(errors="replace").strip() or "exit %d" % r.returncode
                    subprocess.run(["fusermount3", "-uz", self.mnt], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=UNMOUNT_WAIT)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-uz", self.mnt], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=UNMOUNT_WAIT)
        finally:
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=UNMOUNT_WAIT)
                except subprocess.TimeoutExpired:
                    # (a wait of its own: say so, a test's teardown
                    # that takes UNMOUNT_WAIT each time is CI's time)
                    print("h5fs_testlib: %s: the daemon had not exited %.0f s after the unmount: killed"
                          % (self.h5file, UNMOUNT_WAIT), file=sys.stderr)
                    self.proc.kill()
                    self.proc.wait(timeout=UNMOUNT_WAIT)
            self.returncode = self.proc.returncode if self.proc is not None else None
        self.check_sanitizers()

    def check_sanitizers(self):
        out = _without_libfuse_leaks(self.output())
        hit = [m for m in SANITIZER_MARKS if m in out]
        if hit:
            i = min(out.find(m) for m in hit)
            raise SanitizerReport("sanitizer report in h5fs %s (exit status %s):\n%s" % (
                self.h5file, getattr(self, "returncode", None), out[max(0, i - 200):i + 6000]))

    def watchdog(self, seconds):
        """Kill the daemon if the block runs longer than seconds."""
        return _Watchdog(self, seconds)


class _Watchdog:
    def __init__(self, m, seconds):
        self.t = threading.Timer(seconds, m.kill)
        self.t.daemon = True

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.t.cancel()
        return False


# ---- what h5py sees ------------------------------------------------------

def name_shown(name_bytes):
    """Whether h5fs can show a link name (same rule as the daemon, node/node.c name_ok)."""
    return (0 < len(name_bytes) <= 255 and b"\0" not in name_bytes and b"/" not in name_bytes
            and name_bytes not in (b".", b".."))


def symlink_text(dirpath, target):
    """Expected readlink() of a soft link stored in group dirpath (mount
    relative, "" for the root): resolve lexically, clamp at the root, then
    make relative to dirpath."""
    comps = []
    base = [] if target.startswith("/") else [c for c in dirpath.split("/") if c]
    for c in base + target.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if comps:
                comps.pop()
            continue
        comps.append(c)
    return posixpath.relpath("/" + "/".join(comps), "/" + dirpath.strip("/"))


class Entry:
    __slots__ = ("kind", "addr", "rc", "target", "layout", "size", "data", "why", "dtype",
                 "raw_target", "appendable", "overwritable", "filters")

    def __init__(self, kind):
        self.kind = kind          # "dir", "file", "link"
        self.addr = None
        self.rc = None
        self.target = None
        self.layout = None        # "compact", "contiguous", "chunked", "virtual"
        self.size = None          # expected st_size when known
        self.data = None          # callable -> expected bytes, or None
        self.why = None           # why data is not compared
        self.appendable = False
        self.overwritable = False
        self.dtype = None
        self.raw_target = None    # soft link value as stored
        self.filters = ()         # filter ids of the pipeline


def known_unsupported(e):
    """The text h5fs logs when it refuses to read e on purpose (a filter in
    UNSUPPORTED_FILTERS), or None. Virtual datasets read their bytes."""
    for fid in e.filters or ():
        if fid in UNSUPPORTED_FILTERS:
            return "%d" % fid
    return None


def check_logs(rep, output):
    """Each EIO compare() accepted as a known limitation must have its log
    line naming the dataset and the reason."""
    lines = output.splitlines()
    for p, needle in rep.expect_log:
        if not any(p + " " in ln + " " and "EIO" in ln and needle in ln for ln in lines):
            rep.bad("%s: EIO accepted as known-unsupported (%s), but no log line says so" % (p, needle),
                    chunked=True)
    rep.expect_log = []


def _has_vlen(tid, depth=0):
    import h5py

    cls = tid.get_class()
    if cls == h5py.h5t.VLEN or (cls == h5py.h5t.STRING and tid.is_variable_str()):
        return True
    if depth > 16:
        return False
    if cls == h5py.h5t.COMPOUND:
        return any(_has_vlen(tid.get_member_type(i), depth + 1) for i in range(tid.get_nmembers()))
    if cls == h5py.h5t.ARRAY:
        return _has_vlen(tid.get_super(), depth + 1)
    return False


def values_type(tid, depth=0):
    """The type h5fs shows a stored type as (issue 83 item 1, engine
    format/dtype_conv.c), or None when that is the stored type: numbers at
    a bit offset or precision (n-bit integers of 1, 2, 4 or 8 bytes, n-bit
    floats of 2, 4 or 8) as their container's full type in the same byte
    order (IEEE floats of that size), anywhere in a compound, array or
    enumeration. libhdf5 converts to it as h5fs does."""
    import h5py

    cls = tid.get_class()
    if depth > 16:
        return None
    if cls in (h5py.h5t.INTEGER, h5py.h5t.FLOAT):
        size, prec, off = tid.get_size(), tid.get_precision(), tid.get_offset()
        if (prec == 8 * size and off == 0) or size not in ((1, 2, 4, 8) if cls == h5py.h5t.INTEGER else (2, 4, 8)):
            return None
        be = tid.get_order() == h5py.h5t.ORDER_BE
        if cls == h5py.h5t.FLOAT:
            return {2: (h5py.h5t.IEEE_F16LE, h5py.h5t.IEEE_F16BE), 4: (h5py.h5t.IEEE_F32LE, h5py.h5t.IEEE_F32BE),
                    8: (h5py.h5t.IEEE_F64LE, h5py.h5t.IEEE_F64BE)}[size][be].copy()
        t = tid.copy()
        t.set_offset(0)
        t.set_precision(8 * size)
        return t
    if cls == h5py.h5t.ENUM:
        base = values_type(tid.get_super(), depth + 1)
        if base is None:
            return None
        t = h5py.h5t.enum_create(base)
        for i in range(tid.get_nmembers()):
            t.enum_insert(tid.get_member_name(i), tid.get_member_value(i))
        return t
    if cls == h5py.h5t.ARRAY:
        base = values_type(tid.get_super(), depth + 1)
        return None if base is None else h5py.h5t.array_create(base, tid.get_array_dims())
    if cls == h5py.h5t.COMPOUND:
        members = [(tid.get_member_name(i), tid.get_member_offset(i), tid.get_member_type(i))
                   for i in range(tid.get_nmembers())]
        conv = [values_type(m[2], depth + 1) for m in members]
        if all(c is None for c in conv):
            return None
        t = h5py.h5t.create(h5py.h5t.COMPOUND, tid.get_size())
        for (name, off, mt), c in zip(members, conv):
            t.insert(name, off, mt if c is None else c)
        return t
    return None


def _values_mask(tid, depth=0):
    """bytearray of tid's size: 1 where values_type converts (its numbers'
    bytes), 0 elsewhere (padding and members kept as stored: libhdf5's
    compound conversion does not carry padding bytes, h5fs keeps them)."""
    import h5py

    size = tid.get_size()
    if values_type(tid, depth) is None:
        return bytearray(size)
    cls = tid.get_class()
    if cls == h5py.h5t.ARRAY:
        base = _values_mask(tid.get_super(), depth + 1)
        return base * (size // len(base))
    if cls == h5py.h5t.COMPOUND:
        m = bytearray(size)
        for i in range(tid.get_nmembers()):
            off, sub = tid.get_member_offset(i), _values_mask(tid.get_member_type(i), depth + 1)
            m[off:off + len(sub)] = sub
        return m
    return bytearray(b"\x01" * size)


def dataset_bytes(ds):
    """Expected file contents of a dataset, or (None, reason): read with
    the file's own datatype as memory type, so libhdf5 converts nothing and
    we get the stored element bytes (padding, bytes after a string's NUL,
    long doubles, references) exactly as h5fs must show them; numbers at a
    bit offset or precision converted to their values (values_type)."""
    import h5py
    import numpy as np

    if ds.shape is None:                      # null dataspace
        return b"", None
    tid = ds.id.get_type()
    if _has_vlen(tid):
        return None, "variable-length type"
    n = 1
    for d in ds.shape:
        n *= int(d)
    size = n * tid.get_size()
    if size == 0:
        return b"", None
    if size > (1 << 63) - 1:
        # No st_size can describe it: h5fs answers EIO for such a dataset.
        return None, "unrepresentable: %d bytes exceed the largest file size" % size
    if size > MAX_COMPARE:
        return None, "too large to compare (%d bytes)" % size
    buf = np.empty(ds.shape, dtype="V%d" % tid.get_size())
    ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=tid)
    vt = values_type(tid)
    if vt is not None:
        vals = np.empty(ds.shape, dtype="V%d" % tid.get_size())
        ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, vals, mtype=vt)
        mask = np.frombuffer(bytes(_values_mask(tid)) * n, np.uint8).astype(bool)
        raw = np.frombuffer(buf.tobytes(), np.uint8).copy()
        raw[mask] = np.frombuffer(vals.tobytes(), np.uint8)[mask]
        return raw.tobytes(), None
    return buf.tobytes(), None



def dataset_raw(ds):
    """dataset_bytes of a dataset that has them (asserted), as a bytearray
    a test changes to say what a write must make of it."""
    b, why = dataset_bytes(ds)
    assert why is None, why
    return bytearray(b)


def write_raw(ds, b):
    """b (element bytes, dataset_bytes' form) written over the whole of ds
    by libhdf5 in the dataset's own datatype, nothing converted: what the
    same bytes written through the mount must equal."""
    import h5py
    import numpy as np

    tid = ds.id.get_type()
    arr = np.frombuffer(bytes(b), dtype="V%d" % tid.get_size()).reshape(ds.shape)
    ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(arr), mtype=tid)

def appendable(f, ds):
    """Whether h5fs can append to ds (README "Appending", append.c
    check_layout): chunked, dimension 0 unlimited or below a fixed maximum,
    any chunk index (an Extensible Array only over an unlimited dimension 0
    with the others limited; an implicit index only once libhdf5 allocated
    its chunks, i.e. with rows); fixed-size type; only filters h5fs
    encodes (ENCODED_FILTERS), and no unfiltered partial edge chunks."""
    import h5py
    import bt1_dump
    if ds.chunks is None or ds.maxshape is None or not ds.shape:
        return False
    if ds.maxshape[0] is not None and ds.maxshape[0] <= ds.shape[0]:
        return False
    addr = h5py.h5o.get_info(ds.id).addr
    idx = bt1_dump.index_type(ds.file.filename, addr)
    if idx not in ("btree1", "btree2", "earray", "farray", "implicit", "single"):
        return False
    if idx == "earray" and (ds.maxshape[0] is not None or any(m is None for m in ds.maxshape[1:])):
        return False
    if idx == "implicit" and ds.id.get_storage_size() == 0:
        return False
    if _has_vlen(ds.id.get_type()):
        return False
    pl = ds.id.get_create_plist()
    nf = pl.get_nfilters()
    if nf and bt1_dump.partial_edge_unfiltered(ds.file.filename, addr):
        return False
    return all(pl.get_filter(i)[0] in ENCODED_FILTERS for i in range(nf))


def overwritable(f, ds):
    """Whether h5fs writes bytes inside ds on a read-write mount
    (write/overwrite.c h5_overwrite_check): not virtual, no external
    storage, no variable-length data; chunked with every filter one h5fs
    encodes (ENCODED_FILTERS) and not the partial-edge flag with
    filters."""
    import h5py
    import bt1_dump
    if layout_name(ds) == "virtual" or ds.external or _has_vlen(ds.id.get_type()):
        return False
    if ds.chunks is None:
        return True
    pl = ds.id.get_create_plist()
    nf = pl.get_nfilters()
    addr = h5py.h5o.get_info(ds.id).addr
    if nf and bt1_dump.partial_edge_unfiltered(ds.file.filename, addr):
        return False
    return all(pl.get_filter(i)[0] in ENCODED_FILTERS for i in range(nf))


def layout_name(ds):
    import h5py
    lay = ds.id.get_create_plist().get_layout()
    return {h5py.h5d.COMPACT: "compact", h5py.h5d.CONTIGUOUS: "contiguous",
            h5py.h5d.CHUNKED: "chunked"}.get(lay, "virtual")


def h5py_tree(path, cwd=None, max_depth=64, root_dir=None):
    """{mount-relative path: Entry} as h5py sees the file; errors of single
    objects become entries with why set (h5py could not read them).
    root_dir: the tree external links may reach (default: the file's
    directory; a collection's DIR)."""
    import h5py

    tree = {}
    oldcwd = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        f = h5py.File(path, "r")
        ctx = _WalkCtx(f, os.path.realpath(path), root_dir and os.path.realpath(root_dir))
        try:
            root_addr = h5py.h5o.get_info(f.id).addr
            _walk(f, f, "", tree, [(ctx.top, root_addr)], max_depth, ctx, ctx.top, None)
        finally:
            for g in ctx.files.values():
                if g is not f:
                    g.close()
            f.close()
    finally:
        os.chdir(oldcwd)
    return tree, root_addr


class _WalkCtx:
    """Files reached by external links during one h5py_tree walk."""

    def __init__(self, f, top, root_dir=None):
        self.top = top
        self.root_dir = root_dir or os.path.dirname(top)
        self.files = {top: f}

    def resolve(self, from_path, fn, op):
        """The (file, real path, object) an external link leads to as h5fs
        follows it (related.c: absolute name, then the name beside the
        linking file; only inside FILE's directory), or None."""
        import h5py

        cands = []
        if fn.startswith("/"):
            cands.append(fn)
            fn = os.path.basename(fn)
        cands.append(os.path.join(os.path.dirname(from_path), fn))
        for c in cands:
            if not os.path.isfile(c):
                continue
            real = os.path.realpath(c)
            if not (real == self.root_dir or real.startswith(self.root_dir.rstrip("/") + "/")):
                continue
            g = self.files.get(real)
            if g is None:
                try:
                    g = h5py.File(real, "r")
                except Exception:
                    return None
                self.files[real] = g
            try:
                obj = g.get(op)
            except Exception:
                return None
            if obj is None:
                return None
            return g, real, obj
        return None


def _updirs(k):
    return "." if k == 0 else "/".join([".."] * k)


def _comps(path):
    out = []
    for c in path.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if out:
                out.pop()
            continue
        out.append(c)
    return out


def _mount_target(anchor, target):
    """The mount path ("/x/y") where the object at absolute path target of
    an other file's group is shown (the daemon's mount_target), or None.
    anchor: (mount path of the followed link's target, its path in that
    file), None for FILE (whose root is the mount's)."""
    if anchor is None:
        return "/" + "/".join(_comps(target))
    m, a = _comps(anchor[0]), _comps(anchor[1])
    t = _comps(target)
    if t[:len(a)] != a:
        return None
    return "/" + "/".join(m + t[len(a):])


def _walk(f, g, prefix, tree, stack, max_depth, ctx, fpath, anchor):
    """stack: (real path of the file, object header address) of each group
    from the root down to g, the path it is shown at (so a link up the tree
    is decided on this path alone, as the daemon decides it); f is g's
    file, fpath its real path, anchor where that file is shown (None for
    FILE; else (mount path, path in the file) of the link that led there)."""
    import h5py

    names = []
    try:
        g.id.links.iterate(lambda n: names.append(n), idx_type=h5py.h5.INDEX_NAME)
    except Exception:
        names = [n.encode() if isinstance(n, str) else n for n in g.keys()]
    for nb in names:
        if not name_shown(nb):
            continue
        name = nb.decode("utf-8", "surrogateescape")
        p = prefix + "/" + name
        try:
            lnk = g.id.links.get_info(nb)
        except Exception as e:
            e_ = Entry("?")
            e_.why = "h5py: %s" % e
            tree[p] = e_
            continue
        of, ofpath, oanchor = f, fpath, anchor
        if lnk.type == h5py.h5l.TYPE_SOFT:
            raw = g.id.links.get_val(nb).decode("utf-8", "surrogateescape")
            mt = _mount_target(anchor, raw) if raw.startswith("/") else raw
            if mt is not None:
                e = Entry("link")
                e.raw_target = raw
                e.target = symlink_text(prefix, mt)
                tree[p] = e
                continue
            # an absolute soft link of another file to what is not shown
            # where that file is: followed, shown in place
            try:
                obj = f[raw]
            except Exception:
                e = Entry("link")
                e.target = fpath + "::" + raw
                tree[p] = e
                continue
            oid = obj.id
            of = obj.file
            ofpath = os.path.realpath(of.filename)
            oanchor = (p, raw)
        elif lnk.type == h5py.h5l.TYPE_EXTERNAL:
            fn, op = g.id.links.get_val(nb)
            hit = ctx.resolve(fpath, fn.decode("utf-8", "surrogateescape"), op.decode("utf-8", "surrogateescape"))
            if hit is None:
                e = Entry("link")
                e.target = (fn + b"::" + op).decode("utf-8", "surrogateescape")
                tree[p] = e
                continue
            try:
                g[nb]      # libhdf5 counts links from here: 16 at most
            except KeyError as ex:
                if "too many links" in str(ex):
                    hit = None
            if hit is None:
                e = Entry("link")
                e.target = (fn + b"::" + op).decode("utf-8", "surrogateescape")
                tree[p] = e
                continue
            of, ofpath, obj = hit
            oid = obj.id
            # a chain of external links ends in another file: the object's
            # own, and the path by which it was reached there
            of = obj.file
            ofpath = os.path.realpath(of.filename)
            oanchor = (p, obj.name or op.decode("utf-8", "surrogateescape"))
        elif lnk.type != h5py.h5l.TYPE_HARD:
            continue
        else:
            oid = None
        if ofpath == ctx.top:
            oanchor = None
        try:
            if oid is None:
                oid = h5py.h5o.open(g.id, nb)
            info = h5py.h5o.get_info(oid)
        except Exception as ex:
            e = Entry("?")
            e.why = "h5py cannot open: %s" % ex
            tree[p] = e
            continue
        ident = (ofpath, info.addr)
        # the object of another file: inode numbers are h5fs's own
        other = ofpath != ctx.top
        if info.type == h5py.h5o.TYPE_GROUP and ident in stack:
            # a link up to this group or an ancestor: a symlink there
            e = Entry("link")
            e.target = _updirs(len(stack) - 1 - stack.index(ident))
            tree[p] = e
            continue
        if info.type == h5py.h5o.TYPE_GROUP:
            e = Entry("dir")
            e.addr = None if other else info.addr
            tree[p] = e
            if len(stack) < max_depth:
                _walk(of, h5py.Group(oid), p, tree, stack + [ident], max_depth, ctx, ofpath, oanchor)
        elif info.type == h5py.h5o.TYPE_DATASET:
            e = Entry("file")
            e.addr = None if other else info.addr
            e.rc = info.rc
            tree[p] = e
            try:
                ds = h5py.Dataset(oid)
                e.layout = layout_name(ds)
                e.appendable = not other and appendable(of, ds)
                e.overwritable = not other and overwritable(of, ds)
                try:
                    pl = ds.id.get_create_plist()
                    e.filters = tuple(pl.get_filter(i)[0] for i in range(pl.get_nfilters()))
                except Exception:
                    pass
                try:
                    e.dtype = str(ds.dtype)
                except Exception:
                    e.dtype = "class %d" % ds.id.get_type().get_class()
                data, why = dataset_bytes(ds)
                if data is None:
                    e.why = why
                else:
                    e.data = data
                    e.size = len(data)
            except Exception as ex:
                e.why = "h5py cannot read: %s" % str(ex).splitlines()[0][:120]
        else:
            e = Entry("file")
            e.addr = None if other else info.addr
            e.rc = info.rc
            e.size = 0
            e.data = b""
            tree[p] = e


# ---- what the mount shows --------------------------------------------------

def mount_tree(mnt, max_depth=64, order="dfs"):
    """{path: (kind, lstat, readlink or None, error or None)}, walked
    depth-first (order "dfs"), the same with names in reverse ("rdfs"),
    or breadth-first ("bfs": every entry of a level looked up before any
    of the next)."""
    out = {}
    queue = []

    def walk(d, rel, stack):
        try:
            names = sorted(os.listdir(d))
        except OSError as e:
            if e.errno in DEAD:
                raise
            out[rel or "/"] = ("error", None, None, "listdir: %s" % e)
            return
        for n in (reversed(names) if order == "rdfs" else names):
            p = rel + "/" + n
            full = os.path.join(d, n)
            try:
                st = os.lstat(full)
            except OSError as e:
                if e.errno in DEAD:
                    raise
                out[p] = ("error", None, None, "lstat: %s" % e)
                continue
            if stat.S_ISDIR(st.st_mode):
                out[p] = ("dir", st, None, None)
                if st.st_ino not in stack and len(stack) < max_depth:
                    if order == "bfs":
                        queue.append((full, p, stack + [st.st_ino]))
                    else:
                        walk(full, p, stack + [st.st_ino])
            elif stat.S_ISLNK(st.st_mode):
                try:
                    out[p] = ("link", st, os.readlink(full), None)
                except OSError as e:
                    if e.errno in DEAD:
                        raise
                    out[p] = ("error", st, None, "readlink: %s" % e)
            else:
                out[p] = ("file", st, None, None)

    walk(mnt, "", [os.stat(mnt).st_ino])
    while queue:
        walk(*queue.pop(0))
    return out


class Report:
    def __init__(self, label):
        self.label = label
        self.fail = []
        self.chunked_fail = []
        self.notes = []
        self.compared = 0
        self.chunked_ok = 0
        self.expect_log = []    # (path, text): EIOs accepted as known-unsupported

    def bad(self, msg, chunked=False):
        (self.chunked_fail if chunked else self.fail).append(msg)

    def failed(self):
        return bool(self.fail) or (CHUNKED_STRICT and bool(self.chunked_fail))

    def show(self, limit=25):
        status = "FAIL" if self.failed() else "ok"
        print("%s: %s (%d datasets byte-compared, %d chunked ok, %d chunked failing%s)" % (
            self.label, status, self.compared, self.chunked_ok, len(self.chunked_fail),
            "" if CHUNKED_STRICT else ", not fatal"))
        for m in self.fail[:limit]:
            print("    FAIL " + m)
        if len(self.fail) > limit:
            print("    ... %d more failures" % (len(self.fail) - limit))
        for m in self.chunked_fail[:limit]:
            print("    CHUNKED " + m)
        if len(self.chunked_fail) > limit:
            print("    ... %d more chunked failures" % (len(self.chunked_fail) - limit))
        for m in self.notes[:limit]:
            print("    note " + m)


def run_both_formats(name, run, what):
    """main() of a test whose run(work, latest) checks the default and the
    libver="latest" fixtures and returns how many datasets it checked:
    prints what % that count, removes its work directory when it passed."""
    work = workdir(name)
    n = run(work, False) + run(work, True)
    print(what % n)
    rc = finish()
    if rc == 0:
        shutil.rmtree(work, ignore_errors=True)
    return rc


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def compare(expected, root_addr, mnt, rep, windows=200, seed=1, compare_names=True, eio_ok=False,
            writable=False):
    """See _compare; a dead daemon (ENOTCONN...) ends the walk as a failure.
    writable: the mount is read-write, so appendable datasets are 0644."""
    try:
        return _compare(expected, root_addr, mnt, rep, windows, seed, compare_names, eio_ok, writable)
    except OSError as ex:
        if ex.errno not in DEAD:
            raise
        rep.bad("walk aborted, the daemon is gone: %s" % ex)
        return None


def _compare(expected, root_addr, mnt, rep, windows, seed, compare_names, eio_ok, writable=False):
    """Compare an h5py tree with the mount: names, kinds, sizes, inodes,
    symlink targets, every byte, and random pread windows (done first, on a
    cold cache, so they reach the daemon unaligned)."""
    actual = mount_tree(mnt)
    # No leniency for groups with several paths: the tree is a function of
    # the file (a link up the tree is one on that path), whatever the order
    # of lookups (issue 21 item 6).
    if compare_names:
        for p in sorted(set(expected) - set(actual)):
            if expected[p].kind != "?":
                rep.bad("%s: missing in mount (h5py: %s)" % (p, expected[p].kind))
        for p in sorted(set(actual) - set(expected)):
            if eio_ok:
                rep.notes.append("%s: in mount but not in h5py's tree (accepted: hostile file)" % p)
            else:
                rep.bad("%s: in mount but not in h5py's tree (%s)" % (p, actual[p][0]))
    ino_of_addr = {}
    rng = random.Random(seed)
    # random windows first
    for p in sorted(expected):
        e = expected[p]
        a = actual.get(p)
        if e.kind != "file" or e.data is None or not a or a[0] != "file" or not e.data:
            continue
        if known_unsupported(e):
            continue        # EIO (or no extent): the whole read below checks it
        try:
            fd = os.open(mnt + p, os.O_RDONLY)
        except OSError as ex:
            if ex.errno in DEAD:
                raise
            continue
        try:
            n = max(1, windows // max(1, len(expected)))
            for _ in range(n):
                off = rng.randrange(0, len(e.data) + 16)
                ln = rng.randrange(1, min(len(e.data), 200000) + 2)
                try:
                    got = os.pread(fd, ln, off)
                except OSError as ex:
                    if ex.errno in DEAD:
                        raise
                    if not (eio_ok and ex.errno == errno.EIO):
                        rep.bad("%s: pread(%d, %d): %s" % (p, off, ln, ex),
                                chunked=e.layout in ("chunked", "virtual"))
                    break
                if got != e.data[off:off + ln]:
                    rep.bad("%s: pread(%d, %d) differs at byte %d" % (
                        p, off, ln, off + first_diff(got, e.data[off:off + ln])), chunked=e.layout in ("chunked", "virtual"))
                    break
        finally:
            try:
                os.close(fd)
            except OSError:
                pass
    for p in sorted(expected):
        e = expected[p]
        a = actual.get(p)
        if not a:
            continue
        kind, st, target, err = a
        if err:
            if eio_ok and "[Errno %d]" % errno.EIO in err:
                rep.notes.append("%s: %s (accepted: hostile file)" % (p, err))
                continue
            if e.why and (e.why.startswith(("h5py cannot", "unrepresentable", "remote:"))) \
                    and "[Errno %d]" % errno.EIO in err:
                # libhdf5 itself cannot open it (or no st_size fits): EIO is
                # the right answer for this one object.
                rep.notes.append("%s: %s (accepted: %s)" % (p, err, e.why))
                continue
            rep.bad("%s: %s" % (p, err), chunked=e.layout in ("chunked", "virtual"))
            continue
        if e.kind == "?":
            rep.notes.append("%s: %s; mount shows %s" % (p, e.why, kind))
            continue
        if kind != e.kind:
            rep.bad("%s: mount shows %s, h5py %s" % (p, kind, e.kind))
            continue
        if e.addr is not None:
            want = 1 if e.addr == root_addr else e.addr + 2
            if st.st_ino != want:
                rep.bad("%s: st_ino %d, expected %d (object header 0x%x)" % (p, st.st_ino, want, e.addr))
            ino_of_addr.setdefault(e.addr, set()).add(st.st_ino)
        if kind == "link":
            if target != e.target:
                rep.bad("%s: symlink target %r, expected %r" % (p, target, e.target))
            continue
        if kind == "dir":
            # a read-write mount's groups show FILE's (0644) write bit
            if stat.S_IMODE(st.st_mode) != (0o755 if writable else 0o555):
                rep.bad("%s: directory mode %o" % (p, stat.S_IMODE(st.st_mode)))
            continue
        if stat.S_IMODE(st.st_mode) != (0o644 if writable and (e.appendable or e.overwritable) else 0o444):
            rep.bad("%s: file mode %o" % (p, stat.S_IMODE(st.st_mode)))
        if e.rc and st.st_nlink != e.rc:
            rep.bad("%s: st_nlink %d, object reference count %d" % (p, st.st_nlink, e.rc))
        chunked = e.layout in ("chunked", "virtual")
        known = known_unsupported(e)
        if known and e.layout == "virtual" and e.size is not None and st.st_size != e.size:
            # the extent of a VDS comes from its source files, which h5fs
            # does not read: the stored one is shown, reads answer EIO
            rep.notes.append("%s: st_size %d, h5py %d (accepted: %s)" % (p, st.st_size, e.size, known))
            if st.st_size == 0:
                continue
            want = None         # no bytes can be right: EIO
        elif e.size is not None and st.st_size != e.size:
            rep.bad("%s: st_size %d, expected %d (%s, %s)" % (p, st.st_size, e.size, e.layout, e.dtype),
                    chunked=chunked)
            continue
        else:
            want = e.data
            if want is None:
                rep.notes.append("%s: bytes not compared (%s)" % (p, e.why))
                continue
        try:
            with open(mnt + p, "rb") as fh:
                got = fh.read()
        except OSError as ex:
            if ex.errno in DEAD:
                raise
            if eio_ok and ex.errno == errno.EIO:
                rep.notes.append("%s: read: EIO (accepted: hostile file)" % p)
                continue
            if known and ex.errno == errno.EIO:
                rep.notes.append("%s: read: EIO (accepted: %s)" % (p, known))
                rep.expect_log.append((p, known))
                continue
            rep.bad("%s: read: %s (%s, %s)" % (p, ex, e.layout, e.dtype), chunked=chunked)
            continue
        if want is None:
            rep.bad("%s: read %d bytes of a %s dataset, expected EIO" % (p, len(got), known), chunked=chunked)
            continue
        if got != e.data:
            rep.bad("%s: %d bytes read, %d expected, first difference at byte %d (%s, %s)" % (
                p, len(got), len(e.data), first_diff(got, e.data), e.layout, e.dtype), chunked=chunked)
            continue
        if chunked:
            rep.chunked_ok += 1
        else:
            rep.compared += 1
    for addr, inos in ino_of_addr.items():
        if len(inos) > 1:
            rep.bad("object 0x%x shows several inode numbers %s" % (addr, sorted(inos)))
    return actual


# ---- the S3 test server (test_s3rver.py starts it) ---------------------------------

def s3rver_env(wd, key, secret, **extra):
    """The environment of a test against s3rver: its credentials, HOME in
    the test's folder (no ~/.aws of the machine's), no session token or
    profile, and OpenSSL's legacy provider for node: s3rver's continuation
    tokens are DES-encrypted, which OpenSSL 3 keeps there (without it
    every second page of a listing is a 500). extra: more variables."""
    os.environ.update({"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "HOME": wd})
    os.environ.update(extra)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    os.environ.pop("AWS_PROFILE", None)
    os.environ["NODE_OPTIONS"] = "--openssl-legacy-provider"


def s3rver_log_lines(wd):
    """One line per response s3rver sent: its logger keeps koa-logger's
    "  --> GET /bucket/KEY 206 ..." less the first 16 characters, so
    "t/KEY 206" (an object) or "t?QUERY 200" (the bucket)."""
    out = []
    with open(os.path.join(wd, "s3rver.log"), errors="replace") as fh:
        for ln in fh:
            ln = re.sub(r"\x1b\[[0-9;]*m", "", ln)
            m = re.match(r"info: (t[/?]\S*) (\d{3}) ", ln)
            if m:
                out.append(m.group(1) + " " + m.group(2))
    return out


def s3rver_settled(wd, before=0):
    """The response lines after the first `before`, once s3rver's logger
    (asynchronous: a reply can be sent before its line is written) has
    written no new line for half a second (10 s at most)."""
    n, deadline = -1, time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = s3rver_log_lines(wd)
        if len(lines) == n:
            break
        n = len(lines)
        time.sleep(0.5)
    return lines[before:]


# ---- h5fs-ls --refs and the Python stack that reads its documents ------------------

def require_modules(*names, debian=""):
    """The modules named (dotted names too: "dask.array"), imported, in
    that order; a missing one skips the test (exit 77) naming the Debian
    packages that bring them."""
    import importlib
    out = []
    for n in names:
        try:
            out.append(importlib.import_module(n))
        except ImportError as e:
            skip("%s missing (Debian %s): %s" % ("/".join(names), debian, e))
    return out


def refs_run(*args, env=None, timeout=120):
    """h5fs-ls --refs ARGS: (exit status, stdout bytes, stderr text)."""
    p = subprocess.run([H5FS_LS, "--refs", *args], capture_output=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def save_bytes(wd, name, data):
    """data written to wd/name: its path."""
    p = os.path.join(wd, name)
    with open(p, "wb") as fh:
        fh.write(data)
    return p

