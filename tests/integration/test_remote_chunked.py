#!/usr/bin/python3
"""Chunk-aware read-ahead of remote chunked datasets (issue 23).

A file with a 96 MiB float64 dataset in 256 KiB shuffle+deflate chunks
("data"), a 2-D one chunked by rows and columns ("grid") and a chunked
dataset stored behind them ("after") is served by nginx on 127.0.0.1,
and by a second nginx with limit_rate 2 MiB/s per connection (nginx
sends the first second's worth at once, so a 4 MiB request then lasts
long enough for its timestamps to show which overlap). From nginx's logs, counting from
after the dataset's lookup (the first 4 MiB fetch is the open's; the
index blocks between the chunks are fetched by the lookup):
- a cat of data or grid gives h5py's bytes, fetches every chunk once (no
  byte of the file in two requests, every chunk's stored bytes in one of
  them), in coalesced requests (fewer than the chunks), with more than
  one request in flight at once (the intervals [end - request_time, end]
  of two requests overlap), and at most 1.1x the chunks' stored bytes;
- a jump: 16 MiB read from the start, then 2 MiB from the middle: after
  the jump the chunk jumped to is fetched, and nothing outside the
  first window from there (8 MiB of chunks: the window started over)
  but single blocks of the index;
- reads out of order (1000 KiB each, 8 of every 32 read 24 MiB late, as
  FUSE threads serve the kernel's readahead on a loaded machine): the
  same bytes, every chunk fetched once, at most 1.1x the stored bytes;
- random reads (fadvise RANDOM, 4 KiB at the start of each of four
  neighbouring chunks, in four places): the same bytes, and nothing
  fetched but the blocks of the chunks read and single blocks of the
  index (a chunk's read announces its extent: before, two neighbours
  read in turn started a byte stream that fetched 4 MiB and more past
  them);
- a cat of a virtual dataset whose source is a chunked dataset of
  another file on the server: the source's chunks are fetched the same
  way (once, coalesced, bounded);
- through delay_proxy.py (20 ms each way) the same cat gives the same
  bytes, each byte fetched once, in no more requests than 4 MiB pieces of
  the chunks' runs allow.
"""
import bisect
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
import test_remote_nginx as N  # noqa: E402  (skips without nginx)
import h5py  # noqa: E402
import numpy as np  # noqa: E402

# a cache that holds the file's blocks: the index's blocks the lookups
# fetched stay until the stream reaches the chunks beside them
# timeout: a request's whole time; 90 s leaves room for a loaded CI
# machine under the 2 MiB/s server (a cat failed there once with EIO at
# 30 s; the watchdogs are 300 s)
OPTS = ["-o", "retries=2,timeout=90,cache_size=1024"]
MiB = 1 << 20
BLOCK = 512 << 10   # the HTTP source's cache block
PIECE = 4 * MiB     # its read-ahead requests, at least
FIRST = 4 * MiB     # its first fetch, at the open
fail = T.fail


def make(path):
    rng = np.random.default_rng(23)
    ck = 256 * 1024 // 8
    with h5py.File(path, "w") as f:
        f["small"] = np.arange(100, dtype="<i4")
        d = f.create_dataset("data", shape=(96 * MiB // 8,), dtype="<f8", chunks=(ck,), shuffle=True,
                             compression="gzip")
        for i in range(0, d.shape[0], 32 * ck):
            d[i:i + 32 * ck] = np.round(rng.normal(size=32 * ck) * 1000, 2)
        g = f.create_dataset("grid", shape=(1024, 2048), dtype="<f8", chunks=(128, 256), shuffle=True,
                             compression="gzip")
        for r in range(0, 1024, 128):
            g[r:r + 128] = np.round(rng.normal(size=(128, 2048)) * 1000, 2)
        a = f.create_dataset("after", shape=(4 * MiB,), dtype="<f8", chunks=(ck,), shuffle=True,
                             compression="gzip")
        a[...] = np.round(rng.normal(size=4 * MiB) * 1000, 2)


def chunks(path, name):
    """[(offset, size)] of the dataset's stored chunks, in row-major order."""
    with h5py.File(path, "r") as f:
        d = f[name].id
        out = []
        for i in range(d.get_num_chunks()):
            c = d.get_chunk_info(i)
            out.append((c.chunk_offset, c.byte_offset, c.size))
    return [(o, s) for _, o, s in sorted(out)]


def requests(wd, name="/f.h5"):
    """[(start, end, first byte, last byte, bytes sent)] of the requests
    for name, from timing.log. The one-byte If-Match probes of byte 0
    that a live mount's watcher sends (at most one per refresh interval,
    src/fuse/live/live.c; README "Live files") ask whether the object
    changed, fetch no data and are left out."""
    out = []
    for ln in open(os.path.join(wd, "timing.log")).read().splitlines():
        p = ln.split()
        if p[5] != name:
            continue
        rng = p[2].strip('"')
        if rng == "bytes=0-0" and p[3] == "206":
            continue
        if not rng.startswith("bytes=") or p[3] != "206":
            fail("a request without a range or not answered 206: %s" % ln)
            continue
        lo, hi = (int(x) for x in rng[6:].split("-"))
        out.append((float(p[0]) - float(p[1]), float(p[0]), lo, hi, int(p[4])))
    return out


def reset_log(wd):
    for n in ("access.log", "timing.log"):
        open(os.path.join(wd, n), "w").close()
    subprocess.run(["kill", "-USR1", open(os.path.join(wd, "nginx.pid")).read().strip()], check=True)
    time.sleep(0.3)


def quiet(wd, seconds=20):
    """Wait (bounded) until nginx's log stops growing: requests still in
    flight when a read returned are logged when they end."""
    deadline = time.monotonic() + seconds
    last = -1
    while time.monotonic() < deadline:
        n = os.path.getsize(os.path.join(wd, "timing.log"))
        if n == last:
            return
        last = n
        time.sleep(0.5)


def most_at_once(reqs):
    ev = sorted([(s, 1) for s, _, _, _, _ in reqs] + [(e, -1) for _, e, _, _, _ in reqs])
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def check_once(what, reqs, cks):
    """No byte in two requests, and every chunk's bytes fetched (the
    first 4 MiB in the open's request, before the log starts)."""
    iv = sorted((lo, hi) for _, _, lo, hi, _ in reqs)
    spans = []
    for lo, hi in iv:
        if spans and lo <= spans[-1][1]:
            fail("%s: bytes %d-%d fetched twice" % (what, lo, min(hi, spans[-1][1])))
            return
        if spans and lo == spans[-1][1] + 1:
            spans[-1][1] = hi
        else:
            spans.append([lo, hi])
    starts = [lo for lo, _ in spans]
    for off, size in cks:
        if off + size <= FIRST:
            continue  # fetched by the open
        if off < FIRST:
            off, size = FIRST, off + size - FIRST
        i = bisect.bisect_right(starts, off) - 1
        if i < 0 or spans[i][1] < off + size - 1:
            fail("%s: the chunk at %d (+%d) not fetched" % (what, off, size))
            return


def blocks_of(cks):
    """[lo, hi): the cache blocks holding the chunks cks."""
    lo = cks[0][0] // BLOCK * BLOCK
    hi = (max(o + s for o, s in cks) + BLOCK - 1) // BLOCK * BLOCK
    return lo, hi


def cat_checked(url, mnt, wd, name, want, cks, what, overlap):
    reset_log(wd)
    with T.Mount(url, mnt, OPTS) as m, m.watchdog(300):
        os.stat(os.path.join(mnt, name))
        quiet(wd)
        n0 = len(requests(wd))
        t0 = time.monotonic()
        try:
            with open(os.path.join(mnt, name), "rb") as fh:
                got = fh.read()
        except OSError as e:
            fail("%s: %s after %.1f s; h5fs said:\n%s" % (what, e, time.monotonic() - t0, m.output()[-3000:]))
            return
        dt = time.monotonic() - t0
        if got != want:
            fail("%s: %s" % (what, T.first_diff(got, want)))
        quiet(wd)
    # the open and the lookup fetched the first 4 MiB and the index's
    # blocks (which lie between the chunks): counted for "once", not as
    # the cat's
    every = requests(wd)
    reqs = every[n0:]
    stored = sum(s for _, s in cks)
    sent = sum(r[4] for r in reqs)
    at_once = most_at_once(reqs)
    print("%s: %.2f s, %d requests for %d chunks, %d bytes for %d stored (%.3fx), %d at once at most" % (
        what, dt, len(reqs), len(cks), sent, stored, sent / stored, at_once))
    check_once(what, every, cks)
    if len(reqs) >= len(cks):
        fail("%s: %d requests for %d chunks: not coalesced" % (what, len(reqs), len(cks)))
    if sent > 1.1 * stored:
        fail("%s: %d bytes fetched for %d stored (want <= 1.1x)" % (what, sent, stored))
    if overlap and at_once < 2:
        fail("%s: never two requests in flight at once (nginx's timestamps)" % what)
    return reqs


def jump(url, mnt, wd, want, cks):
    """16 MiB from the start, then 2 MiB from 48 MiB on."""
    ck = 256 << 10
    reset_log(wd)
    with T.Mount(url, mnt, OPTS) as m, m.watchdog(300):
        fd = os.open(os.path.join(mnt, "data"), os.O_RDONLY)
        try:
            # no kernel read-ahead: the stream is what the test reads
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            for off in range(0, 16 * MiB, 128 << 10):
                if os.pread(fd, 128 << 10, off) != want[off:off + (128 << 10)]:
                    fail("jump: wrong bytes at %d" % off)
                    break
            quiet(wd)
            before = sum(r[4] for r in requests(wd)[1:])  # all but the open's
            reset_log(wd)
            for off in range(48 * MiB, 50 * MiB, 128 << 10):
                if os.pread(fd, 128 << 10, off) != want[off:off + (128 << 10)]:
                    fail("jump: wrong bytes at %d" % off)
                    break
            quiet(wd)
        finally:
            os.close(fd)
    reqs = requests(wd)
    t = 48 * MiB // ck                     # the chunk jumped to
    # read: 8 chunks; the first window: 8 MiB of chunks (32) from there
    lo, hi = blocks_of(cks[t:t + 32])
    sent = sum(r[4] for r in reqs)
    print("16 MiB read: %d bytes fetched; then a jump to 48 MiB, 2 MiB read: %d requests, %d bytes (the "
          "first window's chunks: %d bytes)" % (before, len(reqs), sent, hi - lo))
    # before the jump the window had grown past its first size
    grown = sum(s for _, s in cks[:64]) + 2 * (hi - lo)
    if before < grown:
        fail("jump: %d bytes fetched for the first 16 MiB: the window never grew (want >= %d)" % (before, grown))
    if not any(r[2] <= lo + BLOCK and r[3] >= lo for r in reqs):
        fail("jump: the chunk jumped to (at %d) not fetched after the jump" % lo)
    for r in reqs:
        # one block outside: the index's blocks the lookups read
        if (r[2] < lo or r[3] >= hi) and r[4] > BLOCK:
            fail("jump: bytes %d-%d fetched, outside the restarted window %d-%d" % (r[2], r[3], lo, hi))
            break
    if sent > hi - lo + 2 * BLOCK:
        fail("jump: %d bytes fetched after the jump, more than the first window's %d" % (sent, hi - lo))


def out_of_order(url, mnt, wd, want, cks):
    """The whole dataset in 1000 KiB reads (FUSE's size), each 32 of them
    with their first 8 last: 24 MiB behind the furthest read, as FUSE
    threads serving the kernel's readahead on a loaded machine came (a
    dozen MiB and more). Still every chunk fetched once and at most 1.1x
    the stored bytes: such reads are no jump (the hints restarted and
    readers overtook them), the blocks they need are not let go (before
    75f273f: 1.39x), and a late read just before the chunks' span starts
    no byte-stream window over it (before: 8 MiB of 64 fetched twice)."""
    piece = 1000 << 10
    n = (len(want) + piece - 1) // piece
    order = []
    for g in range(0, n, 32):
        grp = list(range(g, min(g + 32, n)))
        order += grp[8:] + grp[:8]
    reset_log(wd)
    with T.Mount(url, mnt, OPTS) as m, m.watchdog(300):
        fd = os.open(os.path.join(mnt, "data"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # the order is ours
            quiet(wd)
            n0 = len(requests(wd))
            for i in order:
                off = i * piece
                if os.pread(fd, piece, off) != want[off:off + piece]:
                    fail("out of order: wrong bytes at %d" % off)
                    break
            quiet(wd)
        finally:
            os.close(fd)
    every = requests(wd)
    reqs = every[n0:]
    stored = sum(s for _, s in cks)
    sent = sum(r[4] for r in reqs)
    print("out of order (8 of each 32 reads 24 MiB late): %d requests for %d chunks, %d bytes for %d stored "
          "(%.3fx)" % (len(reqs), len(cks), sent, stored, sent / stored))
    check_once("out of order", every, cks)
    if sent > 1.1 * stored:
        fail("out of order: %d bytes fetched for %d stored (want <= 1.1x)" % (sent, stored))


def make_vds(root):
    """src.h5: a chunked, compressed "data"; vds.h5: a virtual dataset of
    all of it (its source beside it on the server)."""
    rng = np.random.default_rng(232)
    n = 32 * MiB // 8
    with h5py.File(os.path.join(root, "src.h5"), "w") as f:
        f.create_dataset("data", data=np.round(rng.normal(size=n) * 1000, 2), chunks=(1 << 15,), shuffle=True,
                         compression="gzip")
    lay = h5py.VirtualLayout(shape=(n,), dtype="<f8")
    lay[:] = h5py.VirtualSource("src.h5", "data", shape=(n,))
    with h5py.File(os.path.join(root, "vds.h5"), "w") as f:
        f.create_virtual_dataset("v", lay, fillvalue=-1)


def vds(url, mnt, wd, root):
    """A cat of the virtual dataset: its source's chunks are read ahead
    like a chunked dataset's of FILE."""
    with h5py.File(os.path.join(root, "vds.h5"), "r") as f:
        want = f["v"][()].tobytes()
    cks = chunks(os.path.join(root, "src.h5"), "data")
    reset_log(wd)
    with T.Mount(url, mnt, OPTS) as m, m.watchdog(300):
        os.stat(os.path.join(mnt, "v"))
        quiet(wd)
        n0 = len(requests(wd, "/src.h5"))
        with open(os.path.join(mnt, "v"), "rb") as fh:
            got = fh.read()
        if got != want:
            fail("cat of the VDS: %s" % T.first_diff(got, want))
        quiet(wd)
    every = requests(wd, "/src.h5")
    reqs = every[n0:]
    stored = sum(s for _, s in cks)
    sent = sum(r[4] for r in reqs)
    print("cat of a VDS over a remote chunked source: %d requests for %d chunks, %d bytes for %d stored" % (
        len(reqs), len(cks), sent, stored))
    check_once("VDS source", every, cks)
    if len(reqs) >= len(cks):
        fail("VDS source: %d requests for %d chunks: not coalesced" % (len(reqs), len(cks)))
    if sent > 1.1 * stored:
        fail("VDS source: %d bytes fetched for %d stored" % (sent, stored))


def random_reads(url, mnt, wd, want, cks):
    """4 KiB at the start of each of 4 neighbouring chunks, at 10, 30, 50
    and 70 MiB of data: the blocks of those chunks are fetched, and
    beyond them single blocks of the index only."""
    ck = 256 << 10
    groups = [list(range(m * MiB // ck, m * MiB // ck + 4)) for m in (10, 30, 50, 70)]
    reset_log(wd)
    with T.Mount(url, mnt, OPTS) as m, m.watchdog(300):
        fd = os.open(os.path.join(mnt, "data"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            quiet(wd)
            n0 = len(requests(wd))
            for g in groups:
                for c in g:
                    off = c * ck
                    if os.pread(fd, 4096, off) != want[off:off + 4096]:
                        fail("random reads: wrong bytes at %d" % off)
            quiet(wd)
        finally:
            os.close(fd)
    reqs = requests(wd)[n0:]
    spans = [blocks_of(cks[g[0]:g[-1] + 1]) for g in groups]
    sent = sum(r[4] for r in reqs)
    allowed = sum(hi - lo for lo, hi in spans) + 4 * BLOCK
    print("random reads of 4 chunks in 4 places: %d requests, %d bytes (their blocks: %d)" % (
        len(reqs), sent, allowed - 4 * BLOCK))
    for r in reqs:
        inside = any(r[2] >= lo and r[3] < hi for lo, hi in spans)
        if not inside and r[4] > BLOCK:
            fail("random reads: bytes %d-%d fetched, beyond the blocks of the chunks read" % (r[2], r[3]))
            break
    if sent > allowed:
        fail("random reads: %d bytes fetched, more than the chunks' blocks and 4 of the index (%d)" % (
            sent, allowed))


def main():
    wd = T.workdir("remote-chunked")
    root = os.path.join(wd, "www")
    os.makedirs(root)
    path = os.path.join(root, "f.h5")
    make(path)
    make_vds(root)
    with h5py.File(path, "r") as f:
        want = {n: f[n][()].tobytes() for n in ("data", "grid")}
    cks = {n: chunks(path, n) for n in ("data", "grid")}
    slow = os.path.join(wd, "slow")
    os.makedirs(slow)
    proc, port = N.start_nginx(root, wd)
    sproc, sport = N.start_nginx(root, slow, rate="2m")
    mnt = os.path.join(wd, "mnt")
    proxy = None
    try:
        for n in ("data", "grid"):
            cat_checked("http://127.0.0.1:%d/f.h5" % sport, mnt, slow, n, want[n], cks[n],
                        "cat %s (2 MiB/s a connection)" % n, True)
        url = "http://127.0.0.1:%d/f.h5" % port
        cat_checked(url, mnt, wd, "data", want["data"], cks["data"], "cat data", False)
        jump(url, mnt, wd, want["data"], cks["data"])
        out_of_order(url, mnt, wd, want["data"], cks["data"])
        random_reads(url, mnt, wd, want["data"], cks["data"])
        vds("http://127.0.0.1:%d/vds.h5" % port, mnt, wd, root)

        proxy = T.subprocess.Popen([sys.executable, os.path.join(T.HERE, "delay_proxy.py"), str(port), "20"],
                                   stdout=T.subprocess.PIPE)
        purl = "http://127.0.0.1:%d/f.h5" % int(proxy.stdout.readline())
        reqs = cat_checked(purl, mnt, wd, "data", want["data"], cks["data"], "cat data, 20 ms each way", False)
        # the chunks' runs (blocks touching) cut in pieces of PIECE: what
        # the read-ahead may ask for, plus a piece more per window step
        runs, cur = [], None
        for o, s in cks["data"]:
            b0, b1 = o // BLOCK, (o + s + BLOCK - 1) // BLOCK
            if cur and b0 <= cur[1]:
                cur[1] = max(cur[1], b1)
            else:
                cur = [b0, b1]
                runs.append(cur)
        allowed = sum((b1 - b0) * BLOCK // PIECE + 1 for b0, b1 in runs) * 2
        if len(reqs) > allowed:
            fail("20 ms: %d requests, more than %d (4 MiB pieces of the chunks' runs)" % (len(reqs), allowed))
    finally:
        if proxy:
            T.stop_process(proxy)
        T.stop_process(sproc)
        T.stop_process(proc)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
