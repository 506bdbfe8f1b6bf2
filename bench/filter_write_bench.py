#!/usr/bin/python3
"""Re-encoding through the mount with every filter h5fs encodes (issue 48;
doc/OVERWRITE.md), run by hand, never in CI. Per filter, a dataset of
--size-mib (1 MiB chunks) written by h5py with that filter (its plugin:
hdf5plugin's lz4/bzip2/zfp, the Debian blosc plugin, bitshuffle.h5,
PyTables for lzo); per round, alternated, each from a fresh copy of it
(the page cache warm with it, as after the copy):

  h5fs   dd if=SRC of=MNT/d bs=1M conv=notrunc   (every chunk decoded, changed,
         re-encoded into new space; close commits, fsync'd)
  h5py   ds[...] = SRC's array in slabs of 64 MiB; flush; fsync

The mount is made before the clock starts and unmounted after it stops.
Ratio: h5py time / h5fs time (above 1: h5fs is faster; issue: >= 1). zstd
has no HDF5 plugin in Debian: h5fs alone, no ratio. Lossless filters are
checked (h5py reads SRC back); lossy ones (zfp rate) are not.

    bench/filter_write_bench.py --h5fs ./h5fs [--size-mib 256] [--rounds 2] [--dir DIR]
                                [--baseline OLD_H5FS] [--floor] [--bs 1M] [NAME...]

--baseline: an older daemon's dd too, in the same rounds (h5fs, baseline,
h5py alternated), and its ratio. --floor: the same dd into
bench/fuse_write_floor.c (write_bench.py's null floor: a FUSE file system
that takes every request and stores nothing) each round, and floor time /
h5fs time: no FUSE file system takes the bytes faster. zstd's result is read back through a
fresh mount of the new daemon and compared.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

import numpy as np
import h5py

from benchlib import Mount, fsync_path, say

try:
    import hdf5plugin
except ImportError:
    hdf5plugin = None
try:
    import bitshuffle.h5 as bsh5
except ImportError:
    bsh5 = None
try:
    import tables
except ImportError:
    tables = None

MIB = 1 << 20


def filters():
    """name: (dtype, create_dataset keywords or a maker, lossless)"""
    out = {"deflate": ("<i4", dict(compression="gzip", compression_opts=4, shuffle=True), True),
           "lzf": ("<i4", dict(compression="lzf"), True),
           "szip": ("<i4", dict(compression="szip", compression_opts=("nn", 16)), True),
           "scaleoffset": ("<i4", dict(scaleoffset=0), True),
           "nbit": ("<u4", "nbit", True),
           "zstd": ("<i4", "zstd", True)}
    if hdf5plugin is not None:
        out.update({"lz4": ("<i4", dict(hdf5plugin.LZ4()), True),
                    "bzip2": ("<i4", dict(hdf5plugin.BZip2(blocksize=9)), True),
                    "zfp": ("<f8", dict(hdf5plugin.Zfp(rate=16)), False)})
        if h5py.h5z.filter_avail(32001):
            out["blosc"] = ("<i4", dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=1)), True)
    if bsh5 is not None:
        out["bitshuffle"] = ("<i4", dict(compression=bsh5.H5FILTER, compression_opts=(0, 2)), True)
    if tables is not None and tables.which_lib_version("lzo"):
        out["lzo"] = ("<i4", "lzo", True)
    return out


def data(n, dtype, seed):
    rng = np.random.default_rng(seed)
    v = np.cumsum(rng.integers(-40, 41, n))
    if np.dtype(dtype).kind == "f":
        return (v / 7.0).astype(dtype)
    if dtype == "<u4":
        return (v % (1 << 20)).astype(dtype)      # nbit: 20 bits
    return v.astype(dtype)


def fixture(path, n, dtype, kw, chunk):
    v = data(n, dtype, 48)
    if kw == "lzo":
        with tables.open_file(path, "w") as f:
            f.create_carray("/", "d", obj=v, chunkshape=(chunk,), filters=tables.Filters(complib="lzo",
                                                                                           complevel=1))
        return
    with h5py.File(path, "w") as f:
        if kw in ("nbit", "zstd"):
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((chunk,))
            if kw == "nbit":
                t = h5py.h5t.STD_U32LE.copy()
                t.set_precision(20)
                dcpl.set_filter(5, 0, ())
            else:
                # no zstd plugin: libhdf5 stores the chunks unfiltered (optional),
                # h5fs encodes every chunk it rewrites
                t = h5py.h5t.STD_I32LE
                dcpl.set_filter(32015, h5py.h5z.FLAG_OPTIONAL, (3,))
            h5py.h5d.create(f.id, b"d", t, h5py.h5s.create_simple((n,)), dcpl=dcpl)
            d = f["d"]
        else:
            d = f.create_dataset("d", shape=(n,), dtype=dtype, chunks=(chunk,), **kw)
        step = 64 * MIB // np.dtype(dtype).itemsize
        for o in range(0, n, step):
            d[o:o + step] = v[o:o + step]


def timed(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--encode-floor", action="store_true",
                    help="blosc only: the same dd into bench/fuse_encode_floor.c (Blosc lz4 on a thread per CPU)")
    ap.add_argument("--bs", default="1M", help="dd's block size (1000000: writes across chunk edges)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    work = a.dir or os.path.join(os.getcwd(), "filter-write-bench")
    os.makedirs(work, exist_ok=True)
    mnt = os.path.join(work, "mnt")
    log = os.path.join(work, "h5fs.log")
    results = []
    floor = None
    if a.floor:
        from write_bench import build_floor
        floor = build_floor(work)
    efloor = None
    if a.encode_floor:
        efloor = os.path.join(work, "fuse_encode_floor")
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                               capture_output=True, text=True).stdout.split()
        subprocess.run(["cc", "-O2", "-o", efloor, os.path.join(HERE, "fuse_encode_floor.c"),
                        os.path.join(HERE, "floor_common.c")] + flags + ["-lblosc", "-lpthread"], check=True)
    for name, (dtype, kw, lossless) in filters().items():
        if a.names and name not in a.names:
            continue
        es = np.dtype(dtype).itemsize
        n = a.size_mib * MIB // es
        chunk = MIB // es
        pristine = os.path.join(work, name + ".h5")
        fixture(pristine, n, dtype, kw, chunk)
        src = os.path.join(work, "src.bin")
        newv = data(n, dtype, 7)
        newv.tofile(src)
        f5 = os.path.join(work, "run.h5")
        t5, tp, tb, tf, te = [], [], [], [], []

        def dd():
            subprocess.run(["dd", "if=" + src, "of=" + os.path.join(mnt, "d"), "bs=" + a.bs, "conv=notrunc",
                            "status=none"], check=True)
        for r in range(a.rounds):
            if a.floor:
                with Mount([floor, "-f", str(n * es), mnt], mnt, log):
                    tf.append(timed(lambda: subprocess.run(
                        ["dd", "if=" + src, "of=" + os.path.join(mnt, "data"), "bs=" + a.bs, "conv=notrunc",
                         "status=none"], check=True)))
            if efloor and name == "blosc":
                with Mount([efloor, "-f", str(n * es), mnt, os.path.join(work, "encode_floor.out")], mnt, log):
                    te.append(timed(lambda: subprocess.run(
                        ["dd", "if=" + src, "of=" + os.path.join(mnt, "data"), "bs=" + a.bs, "conv=notrunc",
                         "status=none"], check=True)))
                os.unlink(os.path.join(work, "encode_floor.out"))
            if a.baseline:
                shutil.copyfile(pristine, f5)
                with Mount([a.baseline, "-f", f5, mnt], mnt, log):
                    tb.append(timed(dd))
            shutil.copyfile(pristine, f5)
            with Mount([a.h5fs, "-f", f5, mnt], mnt, log):
                t5.append(timed(dd))
            if kw == "zstd":
                with Mount([a.h5fs, "-f", "-o", "ro", f5, mnt], mnt, log):
                    with open(os.path.join(mnt, "d"), "rb") as fh:
                        if fh.read() != newv.tobytes():
                            say("%s round %d: the mounted write does not read back!" % (name, r))
                            return 1
            if lossless and kw != "zstd":
                with h5py.File(f5, "r") as f:
                    raw = np.empty(f["d"].shape, dtype="V%d" % es)
                    f["d"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=f["d"].id.get_type())
                    if raw.tobytes() != newv.tobytes():
                        say("%s round %d: the mounted write does not read back!" % (name, r))
                        return 1
            if kw == "zstd":
                say("%s round %d: h5fs %.2f s%s (no h5py plugin)" % (
                    name, r, t5[-1], ", baseline %.2f s" % tb[-1] if tb else ""))
                continue
            shutil.copyfile(pristine, f5)

            def h5py_write():
                with h5py.File(f5, "r+") as f:
                    d = f["d"]
                    step = 64 * MIB // es
                    for o in range(0, n, step):
                        d[o:o + step] = newv[o:o + step]
                    f.flush()
                fsync_path(f5)
            tp.append(timed(h5py_write))
            say("%s round %d: h5fs %.2f s, h5py %.2f s%s" % (name, r, t5[-1], tp[-1],
                                                            ", baseline %.2f s" % tb[-1] if tb else ""))
        mib = n * es / MIB
        ratio = "-" if not tp else "%.2f-%.2fx" % (min(h / t for h, t in zip(tp, t5)),
                                                  max(h / t for h, t in zip(tp, t5)))
        line = "%-11s h5fs %4.0f-%4.0f MiB/s  h5py %s  ratio %s" % (
            name, mib / max(t5), mib / min(t5),
            "%4.0f-%4.0f MiB/s" % (mib / max(tp), mib / min(tp)) if tp else "     -      ", ratio)
        if tf:
            line += "  floor %4.0f-%4.0f MiB/s, floor/h5fs %.2f-%.2fx" % (
                mib / max(tf), mib / min(tf), min(f / t for f, t in zip(tf, t5)), max(f / t for f, t in zip(tf, t5)))
        if te:
            line += "  encode floor %4.0f-%4.0f MiB/s, h5py/floor %s, floor/h5fs %.2f-%.2fx" % (
                mib / max(te), mib / min(te),
                "-" if not tp else "%.2f-%.2fx" % (min(h / e for h, e in zip(tp, te)),
                                                  max(h / e for h, e in zip(tp, te))),
                min(e / t for e, t in zip(te, t5)), max(e / t for e, t in zip(te, t5)))
        if tb:
            line += "  baseline %4.0f-%4.0f MiB/s, h5py/baseline %s, baseline/h5fs %.2f-%.2fx" % (
                mib / max(tb), mib / min(tb),
                "-" if not tp else "%.2f-%.2fx" % (min(h / t for h, t in zip(tp, tb)),
                                                  max(h / t for h, t in zip(tp, tb))),
                min(b / t for b, t in zip(tb, t5)), max(b / t for b, t in zip(tb, t5)))
        results.append(line)
        say(line)
        os.unlink(pristine)
    say("%d MiB per filter, %d rounds (warm: FILE copied just before)" % (a.size_mib, a.rounds))
    for line in results:
        say("  " + line)
    shutil.rmtree(mnt, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
