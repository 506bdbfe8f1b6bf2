#!/usr/bin/python3
"""Background read-ahead of remote FILEs (issue 15, blockcache_ra.c over source_http.c).

Through remote_server.py on 127.0.0.1 with 20 ms before each answer: a
full cat of every dataset of a 100+ MiB file (in file order) gives h5py's
bytes, fetches at most 1.1x the bytes stored, and has several requests in
flight at once even for one reader reading 128 KiB at a time (the
read-ahead overlaps round trips); a cat of one contiguous dataset fetches
its bytes and at most a block more at each end (read-ahead stops at its
end); two readers at
once get exact bytes.
Then the server
process is killed while read-ahead requests are in flight: every byte a
read returns is still right, a read past what was fetched is EIO, the
mount stays up, and once the server is back on the same port the whole
dataset reads again, exactly.
"""
import errno
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import remote_server  # noqa: E402

OPTS = ["-o", "retries=2,timeout=10"]
MiB = 1 << 20
fail = T.fail


def make(path):
    rng = np.random.default_rng(151)
    with h5py.File(path, "w") as f:
        f["small"] = np.arange(1000, dtype="<i8")
        f["big"] = rng.integers(0, 1 << 62, size=96 * MiB // 8, dtype="<i8")
        f.create_dataset("chunked", data=np.arange(2 * MiB, dtype="<f4"), chunks=(1 << 16,),
                         compression="gzip")
        f["tail"] = rng.integers(0, 255, size=10 * MiB, dtype="u1")


def in_file_order(path):
    """[(name, bytes)] of every dataset, by where its data starts."""
    out = []
    with h5py.File(path, "r") as f:
        for n in f:
            d = f[n]
            off = d.id.get_offset()
            if off is None:
                off = min(d.id.get_chunk_info(i).byte_offset for i in range(d.id.get_num_chunks()))
            out.append((off, n, d[()].tobytes()))  # native little-endian types: the stored bytes
    return [(n, b) for _, n, b in sorted(out)]


def cat(mnt, name):
    with open(os.path.join(mnt, name), "rb") as fh:
        return fh.read()


def quiet(srv, seconds=10):
    """Wait (bounded) until the server answers no request."""
    deadline = time.monotonic() + seconds
    while srv.state.active and time.monotonic() < deadline:
        time.sleep(0.05)


def full_cat(path, data, mnt):
    exp = in_file_order(path)
    srv = remote_server.Server(data)
    srv.state.delay = 0.02
    try:
        with T.Mount(srv.url, mnt, OPTS) as m, m.watchdog(300):
            t0 = time.monotonic()
            for name, want in exp:
                got = cat(mnt, name)
                if got != want:
                    fail("cat %s: %s" % (name, T.first_diff(got, want)))
            dt = time.monotonic() - t0
        log = list(srv.state.log)
        sent = sum(n for _, _, n in log)
        print("full cat, 20 ms per answer: %.2f s, %d requests, %d at once at most, %d bytes for %d stored "
              "(%.3fx)" % (dt, len(log), srv.state.max_active, sent, len(data), sent / len(data)))
        if sent > 1.1 * len(data):
            fail("%d bytes fetched for %d stored (want <= 1.1x)" % (sent, len(data)))
        if any(s != 206 for _, s, _ in log):
            fail("a request not answered 206: %r" % log[:5])

        # one reader, one read at a time (no kernel read-ahead): only the
        # background read-ahead can have several requests in flight
        with T.Mount(srv.url, mnt, OPTS) as m, m.watchdog(300):
            srv.state.max_active = 0
            want = dict(exp)["big"]
            fd = os.open(os.path.join(mnt, "big"), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                t0 = time.monotonic()
                for off in range(0, 48 * MiB, 128 << 10):
                    if os.pread(fd, 128 << 10, off) != want[off:off + (128 << 10)]:
                        fail("one reader: wrong bytes at %d" % off)
                        break
                dt = time.monotonic() - t0
            finally:
                os.close(fd)
        print("one reader, 128 KiB reads of 48 MiB: %.2f s, %d requests at once at most" % (
            dt, srv.state.max_active))
        if srv.state.max_active < 2:
            fail("one reader: never two requests in flight at once: no background read-ahead")

        # one dataset alone: its read-ahead stops at its end, the 18 MiB
        # of datasets stored after it are not fetched
        quiet(srv)
        with T.Mount(srv.url, mnt, OPTS) as m, m.watchdog(300):
            os.listdir(mnt)
            quiet(srv)
            n0 = len(srv.state.log)
            want = dict(exp)["big"]
            got = cat(mnt, "big")
            if got != want:
                fail("cat big alone: %s" % T.first_diff(got, want))
            quiet(srv)
            sent = sum(n for _, _, n in srv.state.log[n0:])
        print("cat big alone: %d bytes fetched for its %d" % (sent, len(want)))
        # its bytes, and at most a 512 KiB block more at either end
        if sent > len(want) + MiB:
            fail("cat big alone: %d bytes fetched for its %d: read ahead past its end" % (sent, len(want)))

        # two streams at once (the worker turns to whichever reads): both
        # exact, each byte fetched about once
        quiet(srv)  # requests the last unmount left in flight log late
        n0 = len(srv.state.log)
        with T.Mount(srv.url, mnt, OPTS) as m, m.watchdog(300):
            got = {}
            th = [threading.Thread(target=lambda n=n: got.__setitem__(n, cat(mnt, n))) for n in ("big", "tail")]
            for t in th:
                t.start()
            for t in th:
                t.join(240)
        for n in ("big", "tail"):
            if got.get(n) != dict(exp)[n]:
                fail("two readers: %s: wrong bytes" % n)
        sent = sum(n for _, _, n in srv.state.log[n0:])
        print("two readers (big, tail): %d requests, %d bytes for %d stored" % (
            len(srv.state.log) - n0, sent, len(data)))
        if sent > 1.1 * len(data):
            fail("two readers: %d bytes fetched for %d stored" % (sent, len(data)))
    finally:
        srv.stop()


def server_dies(path, want, mnt):
    """The server process is killed with read-ahead requests in flight."""
    script = os.path.join(T.HERE, "remote_server.py")
    proc = T.subprocess.Popen([sys.executable, script, path, "0", "0.1"], stdout=T.subprocess.PIPE)
    try:
        port = int(proc.stdout.readline())
        url = "http://127.0.0.1:%d/f.h5" % port
        with T.Mount(url, mnt, OPTS) as m, m.watchdog(300):
            fd = os.open(os.path.join(mnt, "big"), os.O_RDONLY)
            try:
                off, err = 0, None
                while off < 8 * MiB:  # a sequential stream: read-ahead starts
                    b = os.pread(fd, MiB, off)
                    if b != want[off:off + len(b)] or not b:
                        fail("before the kill: wrong bytes at %d" % off)
                        break
                    off += len(b)
                proc.kill()  # with 100 ms per answer, read-ahead is in flight
                proc.wait(10)
                while off < len(want):
                    try:
                        b = os.pread(fd, MiB, off)
                    except OSError as e:
                        err = e
                        break
                    if not b or b != want[off:off + len(b)]:
                        fail("after the kill: %s at %d" % ("EOF" if not b else "wrong bytes", off))
                        break
                    off += len(b)
                print("server killed at 8 MiB: %d MiB read right, then %s" % (off // MiB, err))
                if err is None:
                    fail("after the kill: all %d bytes read (read-ahead of the whole dataset?)" % len(want))
                elif err.errno != errno.EIO:
                    fail("after the kill: %s, not EIO" % err)
            finally:
                os.close(fd)
            if not m.alive():
                fail("the daemon died with the server")
            proc = T.subprocess.Popen([sys.executable, script, path, str(port)], stdout=T.subprocess.PIPE)
            proc.stdout.readline()
            got = cat(mnt, "big")
            if got != want:
                fail("server back: %s" % T.first_diff(got, want))
    finally:
        proc.kill()
        proc.wait(10)


def main():
    wd = T.workdir("readahead")
    path = os.path.join(wd, "f.h5")
    make(path)
    data = open(path, "rb").read()
    mnt = os.path.join(wd, "mnt")
    full_cat(path, data, mnt)
    with h5py.File(path, "r") as f:
        want = f["big"][()].tobytes()
    server_dies(path, want, mnt)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
