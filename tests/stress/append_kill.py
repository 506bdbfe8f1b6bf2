#!/usr/bin/python3
"""Random kill -9 of the daemon during appends, per chunk index
(extensible array, v1 and v2 B-tree, fixed array, implicit (early
allocation), single chunk unfiltered and filtered): H5FS_APPEND_KILL_ROUNDS
(default 20; tests/stress/run-sanitizers.sh runs 8) rounds per index, each
killing the daemon at a random point while rows stream to the file
uncommitted, during periodic commits, after fsync() and after close();
each time h5py must open the file and see a row count that never goes
down and covers every row fsync() returned for, with every row it
reports holding exactly the bytes written; at the end h5dump -H reads the
file and a `cat >>` still appends.

Every crash state of an append is test_append_crash.py's enumeration (the
engine's traced writes replayed in part: every kill -9 prefix, power-cut
subsets) in make check; this loop, moved here from test_append.py (it was
the longest part of make check), checks the same through a real mount
and a real kill, timing included, in the stress stage of
contrib/run-tests.sh (with the plain build, beside growth.py).

By hand: `append_kill.py single implicit` runs those indexes only.
Environment: H5FS_BIN, H5FS_APPEND_KILL_ROUNDS. Exit 77 without h5py or FUSE.
"""
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib as S  # noqa: E402

T = S.T
T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import bt1_dump  # noqa: E402  (tests/integration, on the path through stresslib)

ROUNDS = int(os.environ.get("H5FS_APPEND_KILL_ROUNDS", "20"))
SHELL_WAIT = 60          # seconds for one shell command
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def sh(cmd, **kw):
    return subprocess.run(["/bin/bash", "-c", cmd], capture_output=True, timeout=SHELL_WAIT, **kw)


ROW = 8          # int64 rows: row i holds i
CHUNK = 1000     # rows per chunk: commits end inside chunks


# kill -9 rounds per chunk index: libver, shape, maxshape, chunks, filtered,
# early allocation, rows already there (0..n-1), rows per round at most,
# write sizes (rows), longest pause between writes (s).
# btree2 datasets are (n, 1): the same 8-byte rows.
# implicit: unfiltered, every chunk of the maximum allocated at creation (a
# sparse 160 MiB FILE; libhdf5 allocates nothing while dims[0] is 0, and
# h5fs does not allocate an implicit index's space, so the fixture has 10
# rows).
# single/single_f: one chunk the size of the maximum (libhdf5 makes one only
# when dims == maxdims, so the fixture is shrunk to 10 rows); every commit
# rewrites that 4 MiB chunk, so rounds write less, more slowly (kills must
# still land while the writer writes).
SINGLE_MAX = 1 << 19
BIG_ROUND = (6 << 20) // ROW      # ~6 MiB per round keeps the file (and the run) small
BIG_WRITES = (1000, 8191, 65536 // ROW, 300000 // ROW)
SMALL_WRITES = (1, 100, 1000, 4096)
CRASH_KINDS = {
    "earray": ("latest", (0,), (None,), (CHUNK,), True, False, 0, BIG_ROUND, BIG_WRITES, 0.008),
    "btree1": ("earliest", (0,), (None,), (CHUNK,), True, False, 0, BIG_ROUND, BIG_WRITES, 0.008),
    "btree2": ("latest", (0, 1), (None, None), (CHUNK, 1), True, False, 0, BIG_ROUND, BIG_WRITES, 0.008),
    "farray": ("latest", (0,), (20 << 20,), (CHUNK,), True, False, 0, BIG_ROUND, BIG_WRITES, 0.008),
    "implicit": ("latest", (10,), (20 << 20,), (CHUNK,), False, True, 10, BIG_ROUND, BIG_WRITES, 0.008),
    "single": ("latest", (10,), (SINGLE_MAX,), (SINGLE_MAX,), False, False, 10, 20000, SMALL_WRITES, 0.03),
    "single_f": ("latest", (10,), (SINGLE_MAX,), (SINGLE_MAX,), True, False, 10, 20000, SMALL_WRITES, 0.03),
}
FILT1 = dict(compression="gzip", compression_opts=1, shuffle=True, fletcher32=True)


def make_crash_file(path, kind):
    libver, shape, maxshape, chunks, filtered, early, first = CRASH_KINDS[kind][:7]
    with h5py.File(path, "w", libver=libver) as f:
        if early:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(chunks)
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            h5py.h5d.create(f.id, b"x", h5py.h5t.py_create(np.dtype("<i8")),
                            h5py.h5s.create_simple(shape, maxshape), dcpl=dcpl)
            f["x"][:] = np.arange(first, dtype="<i8")
        elif kind.startswith("single"):
            d = f.create_dataset("x", shape=maxshape, maxshape=maxshape, chunks=chunks, dtype="<i8",
                                 **(FILT1 if filtered else {}))
            d[:first] = np.arange(first, dtype="<i8")
            d.resize(shape)
        else:
            f.create_dataset("x", shape=shape, maxshape=maxshape, chunks=chunks, dtype="<i8",
                             **(FILT1 if filtered else {}))
    with h5py.File(path, "r") as f:
        got = bt1_dump.index_type(path, h5py.h5o.get_info(f["x"].id).addr)
        n = f["x"].shape[0]
    if got != kind.split("_")[0]:
        fail("crash fixture %s: index %s" % (kind, got))
    if n != first:
        fail("crash fixture %s: %d rows, expected %d" % (kind, n, first))


def test_crash(wd, kind="earray"):
    """kill -9 at random points, per chunk index (CRASH_KINDS): while rows
    stream to the file (staged, not committed), while commits run, after
    fsync() and after close().  Odd rounds make the daemon commit every
    256 KiB or 30 ms (H5FS_COMMIT_WRITES_BYTES/_MS), so that kills also land
    among non-durable periodic commits and reserved space; even rounds use
    the defaults (64 MiB / 1 s), so that only fsync() and close() commit."""
    path = os.path.join(wd, "crash-%s.h5" % kind)
    mnt = os.path.join(wd, "mnt-c")
    first, per_round, sizes, pause = CRASH_KINDS[kind][6:]
    make_crash_file(path, kind)
    # rows written but not committed at a kill: more than a chunk, or for a
    # single chunk (never complete) any row
    pending_min = 1 if kind.startswith("single") else CHUNK
    rng = random.Random(1234)
    last = first
    kills = 0
    streaming = 0            # kills with rows written but not committed
    midwrite = 0             # kills while the writer was still writing
    saved = {k: os.environ.get(k) for k in ("H5FS_COMMIT_WRITES_BYTES", "H5FS_COMMIT_WRITES_MS")}
    for it in range(ROUNDS):
        start = last
        if it % 2:
            os.environ["H5FS_COMMIT_WRITES_BYTES"] = str(256 << 10)
            os.environ["H5FS_COMMIT_WRITES_MS"] = "30"
        else:
            for k in saved:
                os.environ.pop(k, None)
        m = T.Mount(path, mnt)
        try:
            m.start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        stop = threading.Event()
        st = {"pos": start, "durable": start, "done": False}
        hold = it % 4 >= 2       # keep the file open after writing: the kill finds staged rows
        wrng = random.Random(rng.random())

        def writer():
            pos = start
            try:
                fd = os.open(os.path.join(mnt, "x"), os.O_WRONLY | os.O_APPEND)
            except OSError:
                return
            try:
                while not stop.is_set() and pos - start < per_round:
                    n = wrng.choice(sizes)
                    os.write(fd, np.arange(pos, pos + n, dtype="<i8").tobytes())
                    pos += n
                    st["pos"] = pos
                    if wrng.random() < 0.1:
                        os.fsync(fd)
                        st["durable"] = pos
                    # paced, so that kills land while rows stream in
                    time.sleep(wrng.uniform(0, pause))
                st["done"] = True
                while hold and not stop.is_set():
                    time.sleep(0.01)
            except OSError:
                pass
            try:
                os.close(fd)
            except OSError:
                pass

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        # the random delay counts from the writer's first row: on a loaded
        # machine (the sanitizer builds) opening the file alone can take
        # longer than the delay, and a kill before any write tests nothing
        t_end = time.monotonic() + 20
        while st["pos"] == start and t.is_alive() and time.monotonic() < t_end:
            time.sleep(0.005)
        delay = rng.uniform(0.02, 0.4)
        if it >= ROUNDS // 2 and last == first:
            # nothing committed yet in half the kills: a slow build (TSan
            # on a loaded machine) commits a filtered single chunk slower
            # than the window; let some commits through so that the
            # kills also meet committed rows
            delay *= 5
        time.sleep(delay)
        m.proc.kill()                     # kill -9
        kills += 1
        acked = st["pos"]
        durable = st["durable"]
        if not st["done"]:
            midwrite += 1
        stop.set()
        m.kill()                          # lazy unmount; pending requests fail
        t.join(timeout=20)
        m.stop()
        try:
            with h5py.File(path, "r") as f:
                x = f["x"][()].reshape(-1)
        except Exception as e:   # noqa: BLE001
            fail("crash %d: h5py cannot read the file: %s" % (it, e))
            return
        n = x.shape[0]
        if n < last:
            fail("crash %d: %d rows, fewer than the %d before" % (it, n, last))
        if n < durable:
            fail("crash %d: %d rows, fewer than the %d fsync() had made durable" % (it, n, durable))
        bad = np.nonzero(x != np.arange(n, dtype="<i8"))[0]
        if bad.size:
            fail("crash %d: row %d holds %d" % (it, bad[0], x[bad[0]]))
            return
        if acked - n >= pending_min:
            streaming += 1
        last = n
    r = subprocess.run(["h5dump", "-H", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=SHELL_WAIT)
    if r.returncode != 0:
        fail("after crashes: h5dump -H exit %d" % r.returncode)
    if last == first:
        fail("no rows survived any of %d kills" % kills)
    # (3 of 20 kills, as many in proportion for fewer rounds)
    need = -(-3 * ROUNDS // 20)
    if streaming < need or midwrite < need:
        fail("only %d of %d kills found rows written but not committed, %d came while writing"
             % (streaming, kills, midwrite))
    # and the file still grows
    with T.Mount(path, mnt) as m, m.watchdog(60):
        r = sh("cat >> '%s'" % os.path.join(mnt, "x"), input=np.arange(last, last + 5000, dtype="<i8").tobytes())
        if r.returncode:
            fail("append after the crashes: %s" % r.stderr.decode()[:200])
    with h5py.File(path, "r") as f:
        x = f["x"][()].reshape(-1)
        if x.shape[0] != last + 5000 or (x != np.arange(last + 5000)).any():
            fail("append after the crashes: %d rows, or wrong values" % x.shape[0])
    print("crash test (%s): %d kills (%d while writing, %d with rows written but not committed), %d rows committed"
          % (kind, kills, midwrite, streaming, last))


def main():
    wd = T.workdir("append-kill")
    kinds = sys.argv[1:] or list(CRASH_KINDS)
    t0 = time.monotonic()
    for kind in kinds:
        t = time.monotonic()
        try:
            test_crash(wd, kind)
        except T.MountError as e:
            fail("%s: %s" % (kind, e))
        print("%s: %.1f s" % (kind, time.monotonic() - t), flush=True)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("OK (%.1f s)" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
