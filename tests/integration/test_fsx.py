#!/usr/bin/python3
"""An fsx-style model checker (issue 53): random reads, writes inside,
appends, writes crossing the end, copy_file_range, truncates (up, down
and to 0; issue 65: a shrink drops the chunks past the new end),
punched holes (fallocate PUNCH_HOLE | KEEP_SIZE: zeros), fsync and mmap
(reads, and writes through a shared mapping, msync'd or not) on one
descriptor of one dataset, every read compared with an in-memory model
of its bytes - over contiguous, fixed chunked (plain and gzip), growable
and growable gzip datasets, and a growable one of a libver="latest" FILE
(an extensible array: punched chunks leave the index), and files made
empty through the mount by the descriptor that writes them (new,
new_latest: issue 71's mapped writes after a truncate first). After the run: a fresh descriptor reads the
model, and after unmounting h5py reads it from FILE.

Each kind runs for H5FS_FSX_SECONDS (default 2) or H5FS_FSX_OPS operations
(default 4000), whichever ends first, with a seed printed first
(H5FS_FSX_KINDS=kind,kind: only those; the stress stage runs the growable
kinds at 20,000 operations, tests/stress/run-sanitizers.sh; named only,
by hand: growable_gz_latest, and cp, cp_latest - a dataset cp made through
the mount); replay
one with H5FS_FSX_SEED=kind:seed (and H5FS_FSX_OPS to stop where it
failed; H5FS_FSX_SKIP=op,op leaves operations out). A failure prints the
last operations.
"""
import collections
import ctypes
import mmap
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

SIZE = 192 << 10        # a fixed dataset's bytes, a growable one's first
CHUNK = 16 << 10
MAXLEN = 3 * CHUNK // 2  # the longest read or write
KINDS = {
    "contig": dict(),
    "chunked": dict(chunks=(CHUNK,)),
    "chunked_gz": dict(chunks=(CHUNK,), compression="gzip"),
    "growable": dict(chunks=(CHUNK,), maxshape=(None,)),
    "growable_gz": dict(chunks=(CHUNK,), maxshape=(None,), compression="gzip"),
    "growable_latest": dict(chunks=(CHUNK,), maxshape=(None,)),     # in a libver="latest" FILE
    # only when H5FS_FSX_KINDS names them (by hand: issue 65's 20,000
    # operations x 5 seeds): gzip in a latest FILE, and datasets cp made
    # through the mount (h5fs's own chunking) in either FILE
    "growable_gz_latest": dict(chunks=(CHUNK,), maxshape=(None,), compression="gzip"),
    "cp": None,
    "cp_latest": None,
    # a file made empty through the mount by the descriptor that then
    # writes it (O_CREAT, as fsx, fio and editors make theirs): its chunks
    # are made smaller at its first commit while the descriptor is open
    # (issue 71: mmap writes landed at the wrong chunk)
    "new": "new",
    "new_latest": "new",
}
BY_HAND = ("growable_gz_latest", "cp", "cp_latest")
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
PUNCH_HOLE = 0x01 | 0x02        # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
SECONDS = float(os.environ.get("H5FS_FSX_SECONDS", "2"))
OPS = int(os.environ.get("H5FS_FSX_OPS", "4000"))
FULL = os.environ.get("H5FS_FSX_FULL") == "1"   # the whole file compared after every change (bisecting)


class Fsx:
    def __init__(self, path, kind, seed):
        self.path = path
        self.kind = kind
        self.grows = not isinstance(KINDS[kind], dict) or "maxshape" in KINDS[kind]
        self.rng = random.Random(seed)
        self.seed = seed
        self.fd = os.open(path, os.O_RDWR | (os.O_CREAT | os.O_EXCL if KINDS[kind] == "new" else 0), 0o644)
        with open(path, "rb") as fh:
            self.model = bytearray(fh.read())
        self.log = collections.deque(maxlen=int(os.environ.get("H5FS_FSX_LOG", "12")))
        self.bad = None
        self.counts = collections.Counter()

    def note(self, what):
        self.log.append(what)
        self.counts[what.split()[0]] += 1

    def fail(self, msg):
        self.bad = "%s seed %d op %d: %s\n  last operations: %s" % (
            self.kind, self.seed, sum(self.counts.values()), msg, "; ".join(self.log))
        return False

    def data(self, n):
        return bytes(self.rng.getrandbits(8) for _ in range(n)) if n < 64 else \
            self.rng.getrandbits(8 * n).to_bytes(n, "little")

    def span(self, lo, hi, maxlen=MAXLEN):
        off = self.rng.randrange(lo, hi)
        return off, self.rng.randint(1, maxlen)

    def compare(self, got, off, what):
        want = bytes(self.model[off:off + len(got)])
        if len(got) != min(len(want) + 0, len(got)) or got != want:
            i = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
            return self.fail("%s at %d: byte %d reads %s, the model has %s (%d bytes read, %d expected)" % (
                what, off, off + i, got[i] if i < len(got) else "EOF", want[i] if i < len(want) else "EOF",
                len(got), len(want)))
        return True

    # ---- operations: each returns False on a mismatch (self.bad says why)
    def op_read(self):
        n = len(self.model)
        off, ln = self.span(0, n + 16) if n else (0, 100)
        self.note("read %d+%d" % (off, ln))
        got = os.pread(self.fd, ln, off)
        if len(got) != max(0, min(ln, n - off)):
            return self.fail("read %d+%d: %d bytes, the model has %d" % (off, ln, len(got), max(0, min(ln, n - off))))
        return self.compare(got, off, "read")

    def op_mapread(self):
        n = len(self.model)
        if not n:
            return True
        off, ln = self.span(0, n)
        ln = min(ln, n - off)
        self.note("mapread %d+%d" % (off, ln))
        with mmap.mmap(self.fd, n, mmap.MAP_SHARED, mmap.PROT_READ) as mm:
            got = mm[off:off + ln]
        return self.compare(got, off, "mapped read")

    def op_mapwrite(self):
        n = len(self.model)
        if not n:
            return True
        off, ln = self.span(0, n)
        ln = min(ln, n - off)
        b = self.data(ln)
        self.note("mapwrite %d+%d" % (off, ln))
        with mmap.mmap(self.fd, n, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as mm:
            mm[off:off + ln] = b
            if self.rng.random() < 0.5:
                mm.flush()
        self.model[off:off + ln] = b
        return True

    def _write(self, off, ln, what):
        n = len(self.model)
        b = self.data(ln)
        self.note("%s %d+%d (size %d)" % (what, off, ln, n))
        w = os.pwrite(self.fd, b, off)
        want = ln if self.grows else min(ln, n - off)
        if w != want:
            return self.fail("%s %d+%d: wrote %d, expected %d" % (what, off, ln, w, want))
        if off > n:
            self.model.extend(bytes(off - n))
        self.model[off:off + w] = b[:w]
        return True

    def op_write(self):
        n = len(self.model)
        if not n:
            return True
        off, ln = self.span(0, n)
        return self._write(off, min(ln, n - off), "write")

    def op_cross(self):
        n = len(self.model)
        if not n:
            return True
        off = self.rng.randrange(max(0, n - MAXLEN // 2), n)
        return self._write(off, n - off + self.rng.randint(1, MAXLEN // 2), "cross")

    def op_append(self):
        if not self.grows:
            return True
        return self._write(len(self.model), self.rng.randint(1, MAXLEN), "append")

    def op_copy(self):
        n = len(self.model)
        if n < 2:
            return True
        ln = self.rng.randint(1, min(MAXLEN, n // 2))
        src = self.rng.randrange(0, n - ln + 1)
        top = n + (ln // 2 if self.grows else 0) - ln
        # a destination not overlapping the source (the kernel refuses that)
        cands = [d for d in (self.rng.randrange(0, max(1, top + 1)) for _ in range(8))
                 if d + ln <= src or d >= src + ln]
        if not cands:
            return True
        dst = cands[0]
        self.note("copy %d+%d to %d (size %d)" % (src, ln, dst, n))
        w = os.copy_file_range(self.fd, self.fd, ln, src, dst)
        if w != ln:
            return self.fail("copy_file_range %d+%d to %d: copied %d" % (src, ln, dst, w))
        self.model[dst:dst + ln] = self.model[src:src + ln]
        return True

    def op_truncate(self):
        if not self.grows:
            return True
        n = len(self.model)
        r = self.rng.random()
        to = 0 if r < 0.1 else self.rng.randint(0, n) if r < 0.5 and n else n + self.rng.randint(1, MAXLEN)
        self.note("truncate %d (size %d)" % (to, n))
        os.ftruncate(self.fd, to)
        if to < n:
            del self.model[to:]
        else:
            self.model.extend(bytes(to - n))
        return True

    def op_punch(self):
        n = len(self.model)
        if not n:
            return True
        off, ln = self.span(0, n, 3 * CHUNK)
        self.note("punch %d+%d (size %d)" % (off, ln, n))
        if LIBC.fallocate(self.fd, PUNCH_HOLE, off, ln) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "fallocate punch: %s" % os.strerror(e))
        end = min(n, off + ln)
        self.model[off:end] = bytes(end - off)
        return True

    def op_fsync(self):
        self.note("fsync")
        os.fsync(self.fd)
        return True

    def op_stat(self):
        self.note("stat")
        st = os.fstat(self.fd).st_size
        if st != len(self.model):
            return self.fail("fstat: size %d, the model has %d" % (st, len(self.model)))
        return True

    WEIGHTS = (("read", 30), ("mapread", 6), ("mapwrite", 5), ("write", 25), ("cross", 6), ("append", 8),
               ("copy", 8), ("truncate", 3), ("punch", 3), ("fsync", 3), ("stat", 4))

    def prelude(self):
        """issue 71's case, first on a new file: a write, a truncate up,
        then mapped writes of whole 64 KiB ranges (chunks of the size the
        file was made with, smaller since its first commit)"""
        for what, off, ln in (("write", 0x4b6, 0xc32e), ("truncate", 0x699fe, 0), ("map", 0x34975, 0x5b38),
                              ("map", 0x400e6, 0x11530)):
            b = self.data(ln)
            self.note("%s %d+%d (prelude)" % (what, off, ln))
            if what == "write":
                os.pwrite(self.fd, b, off)
                self.model.extend(bytes(off + ln - len(self.model)))
            elif what == "truncate":
                os.ftruncate(self.fd, off)
                self.model.extend(bytes(off - len(self.model)))
            else:
                with mmap.mmap(self.fd, len(self.model), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as mm:
                    mm[off:off + ln] = b
                    mm.flush()
            self.model[off:off + ln] = b
            if not self.compare(os.pread(self.fd, len(self.model) + 1, 0), 0, "read after the prelude's " + what):
                return False
        return True

    def run(self, seconds, ops):
        skip = os.environ.get("H5FS_FSX_SKIP", "").split(",")   # ops left out (bisecting a failure)
        names = [k for k, _ in self.WEIGHTS if k not in skip]
        weights = [w for k, w in self.WEIGHTS if k not in skip]
        end = time.monotonic() + seconds
        for i in range(ops):
            if time.monotonic() > end:
                break
            op = self.rng.choices(names, weights)[0]
            try:
                ok = getattr(self, "op_" + op)()
            except OSError as e:
                ok = self.fail("%s: %s" % (op, e))
            if ok and FULL and op not in ("read", "mapread", "stat"):
                self.note("(full read)")
                ok = self.compare(os.pread(self.fd, len(self.model) + 1, 0), 0, "full read")
            if not ok:
                return False
        return True

    def close(self):
        try:
            os.close(self.fd)
        except OSError as e:
            return self.fail("close: %s" % e)
        with open(self.path, "rb") as fh:
            got = fh.read()
        if got != bytes(self.model):
            return self.compare(got, 0, "after close, a fresh descriptor's read") and \
                self.fail("after close: %d bytes, the model has %d" % (len(got), len(self.model)))
        return True


def main():
    work = T.workdir("fsx")
    src = os.path.join(work, "fsx.h5")
    replay = os.environ.get("H5FS_FSX_SEED")
    only, fixed_seed = (replay.split(":")[0], int(replay.split(":")[1])) if replay else (None, None)
    pick = os.environ.get("H5FS_FSX_KINDS")     # e.g. growable,growable_gz (the stress stage)
    kinds = [k for k in KINDS if only in (None, k) and (k in pick.split(",") if pick else k not in BY_HAND)]
    init = np.frombuffer(random.Random(7).getrandbits(8 * SIZE).to_bytes(SIZE, "little"), dtype="u1")
    srcs = {"earliest": src, "latest": os.path.join(work, "fsx-latest.h5")}
    libver = {k: "latest" if k.endswith("_latest") else "earliest" for k in kinds}
    seeds = {k: fixed_seed if fixed_seed is not None else random.SystemRandom().randrange(1 << 31) for k in kinds}
    models = {}
    out = ""
    for lv, path in srcs.items():
        mine = [k for k in kinds if libver[k] == lv]
        if not mine:
            continue
        with h5py.File(path, "w", libver=lv) as f:
            for k in mine:
                if isinstance(KINDS[k], dict):
                    f.create_dataset(k, data=init, **KINDS[k])
        mnt = os.path.join(work, "mnt")
        with T.Mount(path, mnt) as m, m.watchdog(60 + 4 * SECONDS * len(mine)):
            for k in mine:
                if k.startswith("new"):
                    f_path = os.path.join(mnt, "g_" + k)     # a group: the default format's new files
                    os.mkdir(f_path)
                if KINDS[k] is None:    # cp's dataset: made through the mount
                    with open(os.path.join(work, "init.bin"), "wb") as fh:
                        fh.write(init.tobytes())
                    subprocess.run(["cp", os.path.join(work, "init.bin"), os.path.join(mnt, k)], check=True,
                                   timeout=60)
                print("%s: seed %d (replay: H5FS_FSX_SEED=%s:%d)" % (k, seeds[k], k, seeds[k]), flush=True)
                fx = Fsx(os.path.join(mnt, "g_" + k if k.startswith("new") else "", k), k, seeds[k])
                ok = (KINDS[k] != "new" or fx.prelude()) and fx.run(SECONDS, OPS) and fx.close()
                if not ok:
                    T.fail(fx.bad)
                    try:
                        os.close(fx.fd)
                    except OSError:
                        pass
                print("  %d operations (%s), %d bytes" % (sum(fx.counts.values()), ", ".join(
                    "%s %d" % kv for kv in sorted(fx.counts.items())), len(fx.model)), flush=True)
                models[k] = bytes(fx.model) if ok else None
            out += m.output()
    for k in kinds:
        with h5py.File(srcs[libver[k]], "r") as f:
            name = "g_%s/%s" % (k, k) if k.startswith("new") else k
            if models[k] is not None and T.dataset_raw(f[name]) != models[k]:
                T.fail("%s seed %d: FILE after the unmount differs from the model (h5py)" % (k, seeds[k]))
    if T._failures[0]:
        print(out[-3000:])
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
