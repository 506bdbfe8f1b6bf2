#!/usr/bin/python3
"""FILE's size against h5py's per workload (issue 65: "FILE stays near its
live size under any mix"), run by hand as root:

    sudo /usr/bin/python3 bench/space_bench.py [--h5fs ./h5fs] [--seconds 60] [--tmpfs-mb 1024]

Each workload runs through a fresh read-write mount of a fresh FILE that
lies on a tmpfs of bounded size (never the machine's own disk), while
FILE's size is sampled every 0.2 s; after `h5fs -u` the tree FILE holds is
written by h5py into a fresh file (same groups, datasets with their type,
shape, chunks, filters and maxshape, attributes), and both sizes are
printed with their ratio, and FILE's largest size while mounted; then
the disk space (st_blocks) of FILE after `h5fs -u`, the largest sampled
while mounted, FILE's live data (h5fs-ls --space: bytes something
reachable uses) and the h5py copy's disk space (issue 69):

  mix     4 processes for --seconds: new files (cp-like), appends,
          truncate up and to 0, overwrites, unlink, rename, mkdir/rmdir,
          setfattr, each in a folder of its own (fsstress-like)
  cptree  cp -r of 1,000 files of 4 KiB
  mkrm    3,000 mkdir/rmdir in a libver="latest" group
  grow    truncate -s 1G of a growable dataset, then 1 MiB appended
  rm      a 300 MiB and a 1 MiB file written, the large one removed
          (FILE's disk usage printed in that mount, after a sync); after
          `h5fs -u` a second mount writes 300 MiB again: how much FILE's
          length grew for it (issue 69: nothing when the freed space is
          found again)
  rmx     40 files of 1 MiB interleaved with 40 setfattr, all removed
  cpmix   cp -r of 500 files of 1-64 KiB (random sizes; NOTE bytes: their sum)
  churn   1,500 rounds of mkdir/rmdir of 8 recurring names and 1,500
          unique ones in a libver="latest" group
  fsstress, fsstress-latest
          xfstests' fsstress -p 8 -n 5000 -s 1 (--fsstress-ops) in the group, FILE h5py
          default or libver="latest" (only with --fsstress PATH: its
          source is not ours; build it outside this tree)

The h5py copy is written on a second bounded tmpfs (fsstress fills
FILE's own up to the -o min_free margin).
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import multiprocessing as mp

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import h5fs_testlib as T  # noqa: E402


def mix_worker(args):
    root, k, secs = args
    rng = random.Random(k)
    d = os.path.join(root, "p%d" % k)
    os.makedirs(d, exist_ok=True)
    end = time.time() + secs
    n = 0
    while time.time() < end:
        n += 1
        op = rng.choice("cwwtTudrmxo")
        name = os.path.join(d, "f%d" % rng.randrange(20))
        try:
            if op == "c":
                with open(name, "wb") as fh:
                    fh.write(os.urandom(rng.randrange(1, 200000)))
            elif op == "w":
                with open(name, "ab") as fh:
                    fh.write(os.urandom(rng.randrange(1, 100000)))
            elif op == "t":
                os.truncate(name, os.stat(name).st_size + rng.randrange(1, 1 << 20))
            elif op == "T":
                os.truncate(name, 0)
            elif op == "u":
                os.unlink(name)
            elif op == "d":
                os.mkdir(os.path.join(d, "d%d" % rng.randrange(5)))
            elif op == "r":
                os.rmdir(os.path.join(d, "d%d" % rng.randrange(5)))
            elif op == "m":
                os.rename(name, os.path.join(d, "f%d" % rng.randrange(20)))
            elif op == "x":
                os.setxattr(name, "user.a%d" % rng.randrange(5), os.urandom(rng.randrange(1, 300)).hex().encode())
            elif op == "o":
                fd = os.open(name, os.O_WRONLY)
                try:
                    sz = os.fstat(fd).st_size
                    if sz:
                        os.pwrite(fd, os.urandom(min(sz, 5000)), rng.randrange(sz))
                finally:
                    os.close(fd)
        except OSError:
            pass
    return n


def w_mix(mnt, secs):
    with mp.Pool(4) as p:
        return "%d operations" % sum(p.map(mix_worker, [(os.path.join(mnt, "g"), k, secs) for k in range(4)]))


def w_cptree(mnt, secs):
    src = tempfile.mkdtemp(prefix="h5fs-cptree-")
    try:
        for i in range(1000):
            with open(os.path.join(src, "f%04d" % i), "wb") as fh:
                fh.write(os.urandom(4096))
        subprocess.run(["cp", "-r", src, os.path.join(mnt, "g", "tree")], check=True)
    finally:
        shutil.rmtree(src)
    return "1,000 files"


def w_mkrm(mnt, secs):
    for i in range(3000):
        p = os.path.join(mnt, "g", "d%d" % (i % 7))
        os.mkdir(p)
        os.rmdir(p)
    return "3,000 mkdir/rmdir"


def w_grow(mnt, secs):
    p = os.path.join(mnt, "g", "big")
    os.truncate(p, 1 << 30)
    with open(p, "ab") as fh:
        fh.write(os.urandom(1 << 20))
    return "1 GiB + 1 MiB"


sync_dir = T.fsync_dir


def put_mib(p, mib):
    block = os.urandom(1 << 20)
    with open(p, "wb") as fh:
        for _ in range(mib):
            fh.write(block)


disk = T.disk_used


NOTE = {}


def w_rm(mnt, secs):
    g = os.path.join(mnt, "g")
    put_mib(os.path.join(g, "big"), 300)
    put_mib(os.path.join(g, "small"), 1)
    sync_dir(g)
    os.unlink(os.path.join(g, "big"))
    sync_dir(g)
    NOTE["rm_mounted"] = disk(NOTE["path"])
    return "300 + 1 MiB, rm 300"


def w_rmx(mnt, secs):
    g = os.path.join(mnt, "g")
    for i in range(40):
        put_mib(os.path.join(g, "f%d" % i), 1)
        os.setxattr(g, "user.a%d" % i, b"x" * 200)
    for i in range(40):
        os.unlink(os.path.join(g, "f%d" % i))
        os.removexattr(g, "user.a%d" % i)
    sync_dir(g)
    return "40 x (1 MiB + setfattr), rm"


def w_cpmix(mnt, secs):
    src = tempfile.mkdtemp(prefix="h5fs-cpmix-")
    rng = random.Random(69)
    total = 0
    try:
        for i in range(500):
            n = rng.randint(1024, 65536)
            total += n
            with open(os.path.join(src, "f%04d" % i), "wb") as fh:
                fh.write(os.urandom(n))
        subprocess.run(["cp", "-r", src, os.path.join(mnt, "g", "tree")], check=True)
    finally:
        shutil.rmtree(src)
    NOTE["bytes"] = total
    return "500 files of 1-64 KiB"


def w_churn(mnt, secs):
    g = os.path.join(mnt, "g")
    for i in range(1500):
        a, b = os.path.join(g, "r%d" % (i % 8)), os.path.join(g, "unique_name_%05d" % i)
        os.mkdir(a)
        os.mkdir(b)
        os.rmdir(a)
        os.rmdir(b)
    return "3,000 mkdir/rmdir"


FSSTRESS = [None, 5000]


def w_fsstress(mnt, secs):
    r = subprocess.run([FSSTRESS[0], "-p", "8", "-n", str(FSSTRESS[1]), "-s", "1", "-d", os.path.join(mnt, "g")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    return "fsstress rc %d" % r.returncode


WORKLOADS = {"mix": ("earliest", w_mix), "cptree": ("earliest", w_cptree), "mkrm": ("latest", w_mkrm),
             "grow": ("earliest", w_grow), "fsstress": ("earliest", w_fsstress),
             "fsstress-latest": ("latest", w_fsstress), "rm": ("earliest", w_rm), "rmx": ("earliest", w_rmx),
             "churn": ("latest", w_churn), "cpmix": ("earliest", w_cpmix)}


def run(h5fs, name, secs, tmpfs_mb):
    libver, fn = WORKLOADS[name]
    fsdir = tempfile.mkdtemp(prefix="h5fs-space-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % tmpfs_mb, "tmpfs", fsdir], check=True)
    try:
        path = os.path.join(fsdir, "f.h5")
        with h5py.File(path, "w", libver=libver) as f:
            f.create_group("g")
            if name == "grow":
                f["g"].create_dataset("big", shape=(0,), maxshape=(None,), chunks=(65536,), dtype="u1")
        mnt = os.path.join(fsdir, "mnt")
        os.makedirs(mnt)
        subprocess.run([h5fs, path, mnt], check=True)
        peak = [0, 0]
        stop = threading.Event()
        NOTE.clear()
        NOTE["path"] = path

        def sample():
            while not stop.is_set():
                try:
                    peak[0] = max(peak[0], os.path.getsize(path))
                    peak[1] = max(peak[1], disk(path))
                except OSError:
                    pass
                time.sleep(0.2)
        th = threading.Thread(target=sample)
        th.start()
        t0 = time.time()
        try:
            what = fn(mnt, secs)
        finally:
            stop.set()
            th.join()
            # (exit 1 when writes were refused ENOSPC earlier: syncfs
            # reports the kernel's writeback errors; FILE is final still)
            urc = subprocess.run([h5fs, "-u", mnt]).returncode
        t = time.time() - t0
        size = os.path.getsize(path)
        fdisk = disk(path)
        live = space_used(h5fs, path)
        if name == "rm":
            subprocess.run([h5fs, path, mnt], check=True)
            try:
                put_mib(os.path.join(mnt, "g", "big2"), 300)
                sync_dir(os.path.join(mnt, "g"))
            finally:
                subprocess.run([h5fs, "-u", mnt])
            NOTE["next_grew"] = os.path.getsize(path) - size
        refdir = tempfile.mkdtemp(prefix="h5fs-space-ref-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % (2 * tmpfs_mb), "tmpfs", refdir], check=True)
        try:
            ref = os.path.join(refdir, "h5py.h5")
            copy_sparse(path, ref, libver)
            rsize = os.path.getsize(ref)
            rdisk = disk(ref)
        finally:
            subprocess.run(["umount", "-l", refdir])
            shutil.rmtree(refdir, ignore_errors=True)
        if urc:
            what += ", h5fs -u exit %d" % urc
        print("%-7s %-22s %6.1f s  FILE %12d  peak %12d  h5py %12d  FILE/h5py %.2f  peak/h5py %.2f" % (
            name, what, t, size, peak[0], rsize, size / rsize, peak[0] / rsize), flush=True)
        print("        disk: FILE %12d  peak %12d  live %12d  h5py %12d  FILE/live %.2f  FILE/h5py %.2f%s" % (
            fdisk, peak[1], live, rdisk, fdisk / max(live, 1), fdisk / max(rdisk, 1),
            "".join("  %s %d" % kv for kv in sorted(NOTE.items()) if kv[0] != "path")), flush=True)
    finally:
        subprocess.run(["umount", "-l", fsdir])
        shutil.rmtree(fsdir, ignore_errors=True)


def space_used(h5fs, path):
    """FILE's live data: h5fs-ls --space's used bytes (0 when unknown)."""
    import json
    ls = os.path.join(os.path.dirname(h5fs), "h5fs-ls")
    r = subprocess.run([ls, "--space", "--json", path], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["used"]
    except (ValueError, KeyError):
        return 0


def copy_sparse(src, dst, libver):
    """h5py_copy, writing only the chunks FILE stores (a dataset grown by
    truncate holds unwritten chunks: h5py's copy leaves them unwritten)."""
    with h5py.File(src, "r") as a, h5py.File(dst, "w", libver=libver) as b:
        def attrs(x, y):
            for k, v in x.attrs.items():
                y.attrs[k] = v

        def walk(x, y):
            attrs(x, y)
            for name in x:
                link = x.get(name, getlink=True)
                if not isinstance(link, h5py.HardLink):
                    continue
                obj = x[name]
                if isinstance(obj, h5py.Group):
                    walk(obj, y.create_group(name))
                    continue
                kw = dict(shape=obj.shape, dtype=obj.dtype, chunks=obj.chunks, compression=obj.compression,
                          compression_opts=obj.compression_opts, shuffle=obj.shuffle, fillvalue=obj.fillvalue)
                if obj.chunks is not None:
                    kw["maxshape"] = obj.maxshape
                ds = y.create_dataset(name, **kw)
                if obj.chunks is not None:
                    for i in range(obj.id.get_num_chunks()):
                        info = obj.id.get_chunk_info(i)
                        sl = tuple(slice(o, min(o + c, n)) for o, c, n in zip(info.chunk_offset, obj.chunks,
                                                                               obj.shape))
                        if all(s.start < s.stop for s in sl):
                            ds[sl] = obj[sl]
                elif obj.size:
                    ds[...] = obj[...]
                attrs(obj, ds)
        walk(a, b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--h5fs", default=os.path.join(HERE, "..", "h5fs"))
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--tmpfs-mb", type=int, default=1024)
    ap.add_argument("--fsstress", help="xfstests' ltp/fsstress binary (enables the fsstress workloads)")
    ap.add_argument("--fsstress-ops", type=int, default=5000, help="fsstress -n (operations per process)")
    ap.add_argument("workloads", nargs="*")
    a = ap.parse_args()
    FSSTRESS[0] = a.fsstress and os.path.abspath(a.fsstress)
    FSSTRESS[1] = a.fsstress_ops
    a.workloads = a.workloads or [w for w in WORKLOADS if a.fsstress or not w.startswith("fsstress")]
    if any(w.startswith("fsstress") for w in a.workloads) and not a.fsstress:
        sys.exit("space_bench.py: the fsstress workloads need --fsstress PATH")
    if os.geteuid() != 0:
        sys.exit("space_bench.py mounts a tmpfs for FILE: run it as root")
    for name in a.workloads:
        run(os.path.abspath(a.h5fs), name, a.seconds, a.tmpfs_mb)


if __name__ == "__main__":
    main()
