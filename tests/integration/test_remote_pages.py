#!/usr/bin/python3
"""Remote FILEs made with paged aggregation (issue 15): libhdf5's
fs_strategy="page" keeps metadata and raw data in separate pages, and the
superblock extension's file space info message gives the page size; h5fs
then fetches whole pages, so one request brings a page of metadata.

A file of 6000 datasets with attributes (1 MiB pages, several metadata
pages past the first 4 MiB) served by remote_server.py on 127.0.0.1:
h5fs-ls -R of its URL prints what it prints for the local file, every
page it fetched from was fetched whole (the union of the ranges asked
covers each page touched), in few requests; through a mount, datasets
read back exactly as h5py reads them.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import remote_server  # noqa: E402

PAGE = 1 << 20
BLOCK = 512 << 10  # blockcache.h BC_BLOCK
fail = T.fail


def make(path):
    with h5py.File(path, "w", libver="latest", fs_strategy="page", fs_page_size=PAGE, fs_persist=True) as f:
        for i in range(6000):
            g = f.require_group("g%02d" % (i % 20))
            d = g.create_dataset("d%04d" % i, data=np.full(1024, i, dtype="<f8"))
            for k in range(8):
                d.attrs["a%d" % k] = "attribute %d of dataset %d " % (k, i) * 6


def ranges(log):
    out = []
    for rng, status, n in log:
        a, z = map(int, rng.split("=", 1)[1].split("-"))
        out.append((a, z + 1))
    return out


def main():
    wd = T.workdir("pages")
    path = os.path.join(wd, "f.h5")
    make(path)
    data = open(path, "rb").read()
    local = subprocess.run([T.H5FS_LS, "-R", path], capture_output=True, timeout=120)
    srv = remote_server.Server(data)
    try:
        r = subprocess.run([T.H5FS_LS, "-R", srv.url], capture_output=True, timeout=120)
        if r.returncode != 0 or r.stdout != local.stdout:
            fail("h5fs-ls -R URL: status %d, output %s the local file's: %r" % (
                r.returncode, "equals" if r.stdout == local.stdout else "differs from", r.stderr[:300]))
        got = ranges(srv.state.log)
        print("h5fs-ls -R: %d requests: %s" % (len(got), ", ".join("%d-%d" % (a, z - 1) for a, z in got)))
        # every page touched after the first fetch was fetched whole
        fetched = set()
        for a, z in got:
            fetched.update(range(a // BLOCK, (z + BLOCK - 1) // BLOCK))
        pages = {b * BLOCK // PAGE for b in fetched}
        for p in sorted(pages):
            whole = set(range(p * PAGE // BLOCK, min((p + 1) * PAGE, len(data)) // BLOCK))
            if not whole <= fetched:
                fail("page %d (at %d) fetched in part: blocks %s" % (p, p * PAGE, sorted(whole & fetched)))
        if len(pages) <= 4:
            fail("no page past the first 4 MiB was read: the file no longer tests paging")
        # the first fetch, then a request a page, give or take the
        # superblock extension's page (read before its page size is known)
        if len(got) > len(pages) - 4 + 3:
            fail("%d requests for %d pages past the first fetch" % (len(got), len(pages) - 4))

        mnt = os.path.join(wd, "mnt")
        with T.Mount(srv.url, mnt, ["-o", "retries=2,timeout=10"]) as m, m.watchdog(120):
            with h5py.File(path, "r") as f:
                for i in (0, 1234, 5999):
                    name = "g%02d/d%04d" % (i % 20, i)
                    with open(os.path.join(mnt, name), "rb") as fh:
                        if fh.read() != f[name][()].tobytes():
                            fail("%s: wrong bytes through the mount" % name)
                    v = os.getxattr(os.path.join(mnt, name), "user.a7")
                    if b"attribute 7 of dataset %d " % i not in v:
                        fail("%s: attribute a7 is %r" % (name, v[:80]))
    finally:
        srv.stop()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
