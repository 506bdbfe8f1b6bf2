#!/usr/bin/python3
"""An append that runs out of disk space (doc/APPEND.md "When a write's
errors are reported"), per chunk index: extensible array, v1 B-tree
(libver "earliest", h5py's default) and v2 B-tree (both dimensions
unlimited).

FILE lies on a 6 MiB tmpfs (a fresh one per index); rows are appended
through the mount 1 MiB at a time until the space is gone. Writes are
answered before the engine stores them (write-behind), so the failure must
come back by a later write(),
fsync() or close() of the same descriptor - never be lost - and once an
answered write failed every later write of that descriptor fails too (a
write refused before its answer lost nothing: its retry may fit). The daemon stays up,
unmounts cleanly, and h5py then reads a valid file whose rows are exactly
the bytes written, including every row an fsync() returned for; nothing
else in FILE is lost (another dataset, an attribute, the index type) and
h5dump reads the whole file.

Then a sweep (sweep()) makes every page of a commit the one missing, so
that ENOSPC hits the chunk write and, for each index, the index writes
after it (B-tree nodes, array blocks), and checks the same, and that FILE
grows on once there is space again.
Last (record_room()), a dataset whose header libhdf5 put across a 4 KiB
page, both formats, so that each commit rewrites its dims in place
through an ordered copy (doc/DESIGN.md "Torn pages"), whose record takes
pages past FILE's end: mounted with no margin (-o min_free=0), the tmpfs
filled to leave a few pages free (bisected for the fewest at which the
write is answered), then rows appended and fsync'd. The write must be refused (ENOSPC from write()) or the rows
land; an ENOSPC after the answer (fsync, close) is a change lost.
And (npsave_margin()) np.save through the mount on a disk with less room
than the array, -o min_free=8M, contiguous and compressed (-o
compress=gzip:1): the stream is refused ENOSPC by a write, the tmpfs
never below the margin while it is written (sampled), FILE intact, a
smaller np.save after it made (issue 71 item 1: np.save's space
through the reserve, before each write is answered).
Needs root (mount -t tmpfs).
"""
import errno
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import bt1_dump  # noqa: E402

ROW = 256                 # int32 values per row: 1 KiB
CHUNK_ROWS = 1024         # 1 MiB chunks
BLOCK_ROWS = 1024         # rows per write()
SPACE = "6m"
# index: libver, maxshape
KINDS = {
    "earray": ("latest", (None, ROW)),
    "btree1": ("earliest", (None, ROW)),
    "btree2": ("latest", (None, None)),
}
KEEP = np.arange(5000, dtype="<f8") * 0.25     # another dataset; must survive


def rows(start, n):
    return (np.arange(start * ROW, (start + n) * ROW, dtype=np.int64) % 1000003).astype(np.int32).reshape(n, ROW)


def stream(at, n):
    """n bytes of the row stream rows(0, ...) from its byte at."""
    rb = ROW * 4
    r0 = at // rb
    b = rows(r0, (at + n + rb - 1) // rb - r0).tobytes()
    return b[at - r0 * rb:at - r0 * rb + n]


def make_file(path, kind, chunk_rows=CHUNK_ROWS):
    libver, maxshape = KINDS[kind]
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("d", shape=(0, ROW), maxshape=maxshape, dtype=np.int32,
                         chunks=(chunk_rows, ROW))
        f.create_dataset("g/keep", data=KEEP, chunks=(1000,), compression="gzip")
        f["g"].attrs["note"] = "untouched"
    with h5py.File(path, "r") as f:
        got = bt1_dump.index_type(path, h5py.h5o.get_info(f["d"].id).addr)
    return None if got == kind else "fixture: index %s, expected %s" % (got, kind)


def run(kind, wd, small, failures):
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt, exist_ok=True)

    def bad(msg):
        failures.append("%s: %s" % (kind, msg))

    path = os.path.join(small, "f.h5")
    err = make_file(path, kind)
    if err:
        bad(err)
        return
    # A write on a disk filling up may be short, as on any file system:
    # the kernel splits a 1 MiB write into requests (1 MiB less the
    # buffer's offset in its page, then the rest) and answers with the
    # bytes before the first one refused. The next write goes on from the
    # byte where it ended (its end of the partial row too), and may fit
    # once a commit gave space back. Counted in bytes: counting a short
    # write as whole read a run whose later rows are shifted as "not the
    # bytes written" (1 run in 3-4 under load: the retry after the short
    # one fitted).
    nbytes = 0            # bytes write() returned for
    written = 0           # whole rows in them
    synced = 0            # rows an fsync() returned for
    err = None

    def put(fd):
        nonlocal nbytes, written
        n = os.write(fd, stream(nbytes, BLOCK_ROWS * ROW * 4))
        nbytes += n
        written = nbytes // (ROW * 4)
        if n < BLOCK_ROWS * ROW * 4:
            print("%s: a short write: %d bytes of %d" % (kind, n, BLOCK_ROWS * ROW * 4))

    with T.Mount(path, mnt) as m:
        with m.watchdog(120):
            fd = os.open(os.path.join(mnt, "d"), os.O_WRONLY | os.O_APPEND)
            try:
                put(fd)
                os.fsync(fd)
                synced = written
                for _ in range(32):      # 32 MiB into 6 MiB of space
                    put(fd)
            except OSError as e:
                err = e
            if err is None:
                try:
                    os.fsync(fd)
                except OSError as e:
                    err = e
            if err is not None:
                # The same rows again. A failure of rows answered before
                # (write-behind) is sticky: the descriptor takes no more
                # rows, or they would land after the lost ones. A refusal
                # before the answer lost nothing, and the retry may fit
                # (the reserve counts only rows not placed yet: issue 65);
                # then the rows stay one unbroken run, which h5py's check
                # below holds it to - a sticky error ignored leaves a gap.
                try:
                    put(fd)
                    print("%s: the retry after %s fitted" % (kind, err))
                except OSError as e:
                    if e.errno != err.errno:
                        bad("write after %s failed with %s" % (err, e))
            try:
                os.close(fd)
            except OSError as e:
                err = err or e
            if err is None:
                bad("32 MiB appended to a 6 MiB tmpfs without an error")
            elif err.errno != errno.ENOSPC:
                bad("unexpected error %s" % err)
            else:
                print("%s: reported: %s (after %d rows written, %d synced)" % (kind, err, written, synced))
            # the mount still serves the dataset
            st = os.stat(os.path.join(mnt, "d"))
            if st.st_size % (ROW * 4):
                bad("size %d is not whole rows" % st.st_size)
        if not m.alive():
            bad("the daemon died: %s" % m.output())
    try:
        with h5py.File(path, "r") as f:
            d = f["d"]
            n = d.shape[0]
            if n < synced or n > written:
                bad("h5py sees %d rows, expected %d..%d" % (n, synced, written))
            elif not np.array_equal(d[:n], rows(0, n)):
                bad("the %d rows h5py reads are not the bytes written" % n)
            else:
                print("%s: h5py: %d rows, all exact" % (kind, n))
            if not np.array_equal(f["g/keep"][()], KEEP):
                bad("g/keep reads differently")
            if f["g"].attrs.get("note") != "untouched":
                bad("g's attribute reads %r" % f["g"].attrs.get("note"))
            got = bt1_dump.index_type(path, h5py.h5o.get_info(d.id).addr)
            if got != kind:
                bad("index is now %s" % got)
    except Exception as e:  # noqa: BLE001 - any failure to open or read is a bug
        bad("h5py: %s" % e)
        return
    if shutil.which("h5dump"):
        r = subprocess.run(["h5dump", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
        if r.returncode != 0:
            bad("h5dump exit %d: %s" % (r.returncode, r.stderr.decode()[:300]))


def free_bytes(small):
    st = os.statvfs(small)
    return st.f_bavail * st.f_frsize


def fill(small, nbytes):
    """A filler file taking nbytes (whole pages) of the tmpfs."""
    with open(os.path.join(small, "filler"), "wb") as fh:
        fh.write(b"\xa5" * nbytes)


def append_synced(mnt, blocks):
    """Append each block (bytes) to mnt/d, fsync after each; returns (blocks
    synced, error). An error of write() itself (refused before its answer)
    has at_write set."""
    fd = os.open(os.path.join(mnt, "d"), os.O_WRONLY | os.O_APPEND)
    done, err = 0, None
    try:
        for b in blocks:
            try:
                os.write(fd, b)
            except OSError as e:
                e.at_write = True
                raise
            os.fsync(fd)
            done += 1
    except OSError as e:
        err = e
    try:
        os.close(fd)
    except OSError as e:
        err = err or e
    return done, err


def append_rows(mnt, start, nblocks, block):
    """Rows start.. appended in nblocks blocks of block rows, each synced;
    returns (rows synced, error)."""
    done, err = append_synced(mnt, (rows(start + i * block, block).tobytes() for i in range(nblocks)))
    return start + done * block, err


SWEEP_CHUNK = 3           # rows (3 KiB chunks: commits do not end on page boundaries)
SWEEP_COMMITS = 8


def sweep(kind, wd, small, failures):
    """ENOSPC at every page of a commit: small chunks (3 rows), one fsync'd
    chunk per commit. Since issue 56 the space a write's rows take is
    reserved before the write is answered, so the write itself is refused
    (ENOSPC from write(), nothing answered) rather than a chunk or index
    write of the commit after it.
    A dry run measures the pages each of SWEEP_COMMITS commits takes and
    where its chunk lies; then for each commit k and each page p of it, a
    fresh file gets k-1 commits, a filler leaves p pages too few, and commit
    k must fail with ENOSPC; h5py then reads the k-1 commits' rows (or all
    k, if the commit's switch landed), exact, the other dataset intact; and
    once the filler is gone the same file takes more rows through a new
    mount. Every ENOSPC must come from the write (before its answer)."""
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt, exist_ok=True)
    path = os.path.join(small, "f.h5")
    page = os.statvfs(small).f_frsize
    blk = SWEEP_CHUNK

    def bad(msg):
        failures.append("%s sweep: %s" % (kind, msg))

    # dry run: pages per commit, and each commit's chunk
    make_file(path, kind, SWEEP_CHUNK)
    used = []
    with T.Mount(path, mnt) as m, m.watchdog(60):
        for k in range(SWEEP_COMMITS):
            f0 = free_bytes(small)
            n, err = append_rows(mnt, k * blk, 1, blk)
            if err:
                bad("dry run, commit %d: %s" % (k + 1, err))
                return
            used.append(f0 - free_bytes(small))
    os.unlink(path)
    where = {"write": 0, "after": 0}
    for k in range(SWEEP_COMMITS):
        for short in range(1, used[k] // page + 1):
            make_file(path, kind, SWEEP_CHUNK)
            with T.Mount(path, mnt) as m:
                with m.watchdog(60):
                    n, err = append_rows(mnt, 0, k, blk)
                    if err:
                        bad("commit %d, %d pages short: earlier commits: %s" % (k + 1, short, err))
                    fill(small, free_bytes(small) - (used[k] - short * page))
                    n, err = append_rows(mnt, n, 1, blk)
                if not m.alive():
                    bad("commit %d, %d pages short: the daemon died" % (k + 1, short))
            os.unlink(os.path.join(small, "filler"))
            what = "commit %d, %d pages short" % (k + 1, short)
            if err is None or err.errno != errno.ENOSPC:
                bad("%s: %s, expected ENOSPC" % (what, err))
            where["write" if getattr(err, "at_write", False) else "after"] += 1
            try:
                with h5py.File(path, "r") as f:
                    got = f["d"].shape[0]
                    if got not in (k * blk, (k + 1) * blk) or not np.array_equal(f["d"][()], rows(0, got)):
                        bad("%s: h5py reads %d rows or wrong values" % (what, got))
                    if not np.array_equal(f["g/keep"][()], KEEP):
                        bad("%s: g/keep reads differently" % what)
            except Exception as e:  # noqa: BLE001
                bad("%s: h5py: %s" % (what, e))
                os.unlink(path)
                continue
            # with space again the file grows on
            with T.Mount(path, mnt) as m, m.watchdog(60):
                n2, err2 = append_rows(mnt, got, 1, blk)
            if err2:
                bad("%s: append after freeing space: %s" % (what, err2))
            else:
                with h5py.File(path, "r") as f:
                    if f["d"].shape[0] != n2 or not np.array_equal(f["d"][()], rows(0, n2)):
                        bad("%s: after freeing space h5py reads %d rows, expected %d"
                            % (what, f["d"].shape[0], n2))
            os.unlink(path)
    print("%s sweep: %d commits, pages each %s; ENOSPC refusing the write %d times, after its answer %d times"
          % (kind, SWEEP_COMMITS, [u // page for u in used], where["write"], where["after"]))
    if where["after"]:
        bad("%d ENOSPC came after the write was answered (space not reserved)" % where["after"])


RECORD_MAX = 64           # pages: enough free for the append and its record


def record_room(wd, small, failures):
    """Appends to a dataset whose header crosses a page, on a disk with a
    few pages free and no margin: refused before the answer or landed,
    never answered and then lost at the ordered copy's record. The pages
    probed: a bisection for the fewest free at which write() is answered
    (L), then L+1, and 2L-1, 2L (a reserve allocated twice ahead). Before
    the record was counted, L and 2L lost the rows (the reserve took the
    disk's last page, the record found none)."""
    import test_torn_pages as TP
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt, exist_ok=True)
    page = os.statvfs(small).f_frsize
    where = {"write": 0, "after": 0, "landed": 0}

    def case(libver, src, old, more, free_pages):
        """'refused', 'landed' or 'lost' (a failure counted)"""
        what = "record_room %s, %d pages free" % (libver, free_pages)
        path = os.path.join(small, "f.h5")
        shutil.copy(src, path)
        err = None
        with T.Mount(path, mnt, opts=["-o", "min_free=0"]) as m:
            with m.watchdog(60):
                os.stat(os.path.join(mnt, "d"))
                fill(small, max(0, free_bytes(small) - free_pages * page))
                _, err = append_synced(mnt, [more.tobytes()])
            if not m.alive():
                failures.append("%s: the daemon died" % what)
        os.unlink(os.path.join(small, "filler"))
        out = "refused" if err is not None and getattr(err, "at_write", False) else "lost" if err else "landed"
        if err is not None and err.errno != errno.ENOSPC:
            failures.append("%s: %s, expected ENOSPC or none" % (what, err))
        elif out == "lost":
            failures.append("%s: ENOSPC after the write was answered: %s" % (what, err))
        where["write" if out == "refused" else "after" if out == "lost" else "landed"] += 1
        want = old if out == "refused" else np.concatenate([old, more])
        try:
            with h5py.File(path, "r") as f:
                got = f["d"][()]
            if not np.array_equal(got, want):
                failures.append("%s (%s): h5py reads %d rows, expected %d" % (what, out, len(got), len(want)))
        except Exception as e:  # noqa: BLE001 - any failure to open or read is a bug
            failures.append("%s: h5py: %s" % (what, e))
        os.unlink(path)
        return out

    for libver in ("earliest", "latest"):
        src, a, n, at = TP.fixture(wd, libver, "/d")
        if not src:
            failures.append("record_room %s: no fixture" % libver)
            continue
        with h5py.File(src, "r") as f:
            old = f["d"][()]
        more = np.arange(100, 108, dtype=old.dtype)
        lo, hi = 0, RECORD_MAX
        if case(libver, src, old, more, lo) != "refused":
            continue            # (answered with no page free: checked as it came)
        if case(libver, src, old, more, hi) == "refused":
            failures.append("record_room %s: refused with %d pages free" % (libver, hi))
            continue
        while hi - lo > 1:      # lo refused, hi answered
            mid = (lo + hi) // 2
            if case(libver, src, old, more, mid) == "refused":
                lo = mid
            else:
                hi = mid
        for p in (hi + 1, 2 * hi - 1, 2 * hi):
            if p <= RECORD_MAX:
                case(libver, src, old, more, p)
        print("record_room %s: write() answered from %d pages free" % (libver, hi))
    print("record_room: %d appends refused at the write, %d landed, %d failed after their answer"
          % (where["write"], where["landed"], where["after"]))


def npsave_margin(wd, small, failures):
    import threading
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt, exist_ok=True)
    margin = 8 << 20
    big = np.random.default_rng(7).integers(0, 2**31, size=(20 << 20) // 4, dtype="<i4").reshape(-1, 1024)
    small_arr = np.arange(1 << 18, dtype="<i4").reshape(-1, 1024)   # 1 MiB
    for opts in (["-o", "min_free=8M"], ["-o", "min_free=8M,compress=gzip:1"]):
        what = "npsave_margin %s" % opts[1]
        path = os.path.join(small, "f.h5")
        with h5py.File(path, "w") as f:
            f["keep"] = KEEP
        low = [free_bytes(small)]
        stop = []

        def sample():
            while not stop:
                low[0] = min(low[0], free_bytes(small))
                stop or __import__("time").sleep(0.002)
        err = None
        with T.Mount(path, mnt, opts=opts) as m:
            with m.watchdog(60):
                th = threading.Thread(target=sample)
                th.start()
                try:
                    np.save(os.path.join(mnt, "big.npy"), big)
                except OSError as e:
                    err = e
                finally:
                    stop.append(1)
                    th.join(timeout=30)
                # the refused stream's space back: FILE cut at the next
                # sync of the mount (fsync of its root)
                dfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
                os.fsync(dfd)
                os.close(dfd)
                if os.path.getsize(path) > 2 << 20:
                    failures.append("%s: FILE %d bytes after the refused stream and a sync" % (what, os.path.getsize(path)))
                try:
                    np.save(os.path.join(mnt, "after.npy"), small_arr)
                except OSError as e:
                    failures.append("%s: a 1 MiB np.save after the refusal: %s" % (what, e))
            if not m.alive():
                failures.append("%s: the daemon died" % what)
        if err is None or err.errno != errno.ENOSPC:
            failures.append("%s: np.save of 20 MiB with %d MiB free: %r, expected ENOSPC"
                            % (what, low[0] >> 20, err))
        # (a page of slack: statvfs counts the margin's test in pages)
        if low[0] < margin - 4096:
            failures.append("%s: the disk went down to %d bytes free, under the %d margin" % (what, low[0], margin))
        try:
            with h5py.File(path, "r") as f:
                if not np.array_equal(f["keep"][()], KEEP) or "big" in f or \
                        not np.array_equal(f["after"][()], small_arr):
                    failures.append("%s: FILE holds %r after the refusal" % (what, sorted(f)))
        except Exception as e:  # noqa: BLE001 - any failure to open or read is a bug
            failures.append("%s: h5py: %s" % (what, e))
        os.unlink(path)
        print("%s: refused %s, the disk at least %.1f MiB free (margin 8)" % (what, err and errno.errorcode[err.errno], low[0] / 2**20))


def main():
    if os.geteuid() != 0:
        T.skip("needs root to mount a tmpfs")
    wd = T.workdir("append_enospc")
    failures = []
    for kind in KINDS:
        small = os.path.join(wd, "small-" + kind)
        with T.small_disk(small, SPACE):
            run(kind, wd, small, failures)
            os.unlink(os.path.join(small, "f.h5"))
            sweep(kind, wd, small, failures)
    with T.small_disk(os.path.join(wd, "small-record"), "2m") as small:
        record_room(wd, small, failures)
    with T.small_disk(os.path.join(wd, "small-npsave"), "24m") as small:
        npsave_margin(wd, small, failures)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
