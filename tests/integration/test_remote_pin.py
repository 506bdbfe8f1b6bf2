#!/usr/bin/python3
"""Remote reads answered from the block cache (issue 15): a FUSE read of
contiguous storage or of unfiltered chunks of a remote FILE is written to
/dev/fuse from the source's cached blocks, pinned until the reply is out
(h5_dataset_pin, the source's pin op). Through remote_server.py with the
smallest cache (-o cache_size=1: 16 blocks of 512 KiB, at most 4 pinned)
and four readers at once (two whole cats, two of random preads), every
byte stays exact while the blocks are evicted and reused under them, and
each dataset is fetched about once by the cats.

Then parallel metadata (the source's prefetch op): groups whose
children's object headers lie 1 MiB apart (each dataset's data written
after its header, in old-style and new-style groups), listed with ls -l
through a server answering after 20 ms: several header fetches are in
flight at once, each header is fetched once, and every size is right.
"""
import os
import random
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import remote_server  # noqa: E402

OPTS = ["-o", "retries=2,timeout=10,cache_size=1"]
MiB = 1 << 20
fail = T.fail


def make(path):
    rng = np.random.default_rng(152)
    with h5py.File(path, "w") as f:
        f["contig"] = rng.integers(0, 1 << 62, size=24 * MiB // 8, dtype="<i8")
        f.create_dataset("plainchunks", data=rng.integers(0, 255, size=(1024, 16 * 1024), dtype="u1"),
                         chunks=(64, 4096))
        f["small"] = np.arange(3000, dtype="<i4")
    with h5py.File(path, "r") as f:
        return {n: f[n][()].tobytes() for n in f}


def cat(mnt, name, bs):
    out = []
    with open(os.path.join(mnt, name), "rb", buffering=0) as fh:
        while True:
            b = fh.read(bs)
            if not b:
                return b"".join(out)
            out.append(b)


def preads(mnt, name, want, seed, errs):
    rnd = random.Random(seed)
    fd = os.open(os.path.join(mnt, name), os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        for _ in range(300):
            off = rnd.randrange(len(want))
            n = rnd.choice([1, 4096, 100000, 600000, 1 << 20])
            if os.pread(fd, n, off) != want[off:off + n]:
                errs.append("pread %s %d+%d: wrong bytes" % (name, off, n))
                return
    finally:
        os.close(fd)


def make_groups(path):
    sizes = {}
    # no metadata aggregation: each header where the file ends when it is
    # made, right after the data written before it
    # a compound of 160 named fields: a header above libhdf5's 2 KiB
    # metadata blocks gets a place of its own, where the file ends when it
    # is made, right after the data written before it
    dt = np.dtype([("field%03d" % k, "u1") for k in range(160)])
    with h5py.File(path, "w") as f:
        for g in ("old", "new"):
            if g == "new":
                grp = f.create_group(g, track_order=True)  # link messages: compact or dense storage
            else:
                grp = f.create_group(g)                    # symbol table
            for i in range(12):
                grp["d%02d" % i] = np.full(MiB // 160 + i, i, dtype=dt)
                sizes["%s/d%02d" % (g, i)] = (MiB // 160 + i) * 160
    return sizes


def hints(wd, mnt):
    path = os.path.join(wd, "groups.h5")
    sizes = make_groups(path)
    srv = remote_server.Server(open(path, "rb").read())
    srv.state.delay = 0.02
    try:
        with T.Mount(srv.url, mnt, OPTS) as m, m.watchdog(120):
            for g in ("old", "new"):
                srv.state.max_active = 0
                n0 = len(srv.state.log)
                for name in sorted(os.listdir(os.path.join(mnt, g))):
                    st = os.stat(os.path.join(mnt, g, name))
                    if st.st_size != sizes["%s/%s" % (g, name)]:
                        fail("%s/%s: size %d" % (g, name, st.st_size))
                ranges = [r for r, _, _ in srv.state.log[n0:]]
                print("ls -l %s: %d requests, %d at once at most" % (g, len(srv.state.log) - n0,
                                                                     srv.state.max_active))
                if srv.state.max_active < 2:
                    fail("ls -l %s: never two header fetches at once: no metadata prefetch" % g)
                if len(set(ranges)) != len(ranges):
                    fail("ls -l %s: a range fetched twice" % g)
    finally:
        srv.stop()


def main():
    wd = T.workdir("remote_pin")
    path = os.path.join(wd, "f.h5")
    want = make(path)
    data = open(path, "rb").read()
    mnt = os.path.join(wd, "mnt")
    srv = remote_server.Server(data)
    try:
        with T.Mount(srv.url, mnt, OPTS) as m, m.watchdog(300):
            for name, w in want.items():
                got = cat(mnt, name, 128 << 10)
                if got != w:
                    fail("cat %s: %s" % (name, T.first_diff(got, w)))
            sent = sum(n for _, _, n in srv.state.log)
            print("one reader: %d requests, %d bytes for %d stored" % (len(srv.state.log), sent, len(data)))
            if sent > 1.5 * len(data):
                fail("one reader: %d bytes fetched for %d stored" % (sent, len(data)))
        with T.Mount(srv.url, mnt, OPTS) as m, m.watchdog(300):
            got, errs = {}, []
            th = [threading.Thread(target=lambda n=n, bs=bs: got.__setitem__(n, cat(mnt, n, bs)))
                  for n, bs in (("contig", 1 << 20), ("plainchunks", 200000))]
            th += [threading.Thread(target=preads, args=(mnt, n, want[n], k, errs))
                   for k, n in enumerate(("contig", "plainchunks"))]
            for t in th:
                t.start()
            for t in th:
                t.join(240)
            for n in ("contig", "plainchunks"):
                if got.get(n) != want[n]:
                    fail("four readers: cat %s: %s" % (n, T.first_diff(got.get(n, b""), want[n])))
            for e in errs:
                fail("four readers: " + e)
            if not m.alive():
                fail("the daemon died")
    finally:
        srv.stop()
    hints(wd, mnt)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
