#!/usr/bin/python3
"""Live files (issue 24): how soon a mount shows what a writer appended,
what watching costs reads, and whether a reader keeps up with a SWMR
writer. Run by hand (never in CI):

    /usr/bin/python3 bench/live_bench.py --h5fs ./h5fs [--dir /var/tmp/h5fs-live]

1. latency: a SWMR writer (h5py, this process) appends one row to an
   extensible-array dataset and flushes, 100 times; after each flush the
   time until stat() of the mounted dataset shows the new size, and until
   a read returns the new row's bytes. Also the same with a plain writer
   (open, extend, close: a new file generation each time). Default
   refresh (1 s; inotify makes it sooner). Median and max.
2. throughput: sequential 1 MiB reads of a contiguous and of a deflate
   dataset (fresh: the first read of a new mount, FILE in the page cache;
   cold: page cache dropped when root; warm: a second read; the daemon's
   CPU ms per GiB of the fresh and cold reads)
   and 20,000 random 4 KiB reads, on a -o ro mount (watching on, the
   default: FILE never changes, so reads go the frozen way) and a -o
   ro,refresh=0 mount (and --strict: -o ro,live=strict; --base BINARY,
   another build such as main's, -o ro), alternated --repeat times; the
   range over the runs of each.
2b. changed: the same sequential reads after FILE changed once (touched:
   a new generation, so reads are checked from now on: copied, and every
   page the page cache is given hashed, live/pcache.c), with 8 MiB read()s, read twice (first, second), watching against refresh=0 (which
   never sees the touch) and --base; throughput and the daemon's CPU ms
   per GiB.
3. follow: a SWMR writer process appends 1 MiB rows at 100 rows/s for
   --follow-seconds; a reader follows the mounted dataset (stat, then
   reads the rows that appeared) and checks every row (its number and the
   writer's clock are in its first bytes); rows lost and the lag from the
   writer's flush to the reader's read (median, max).
"""
import argparse
import os
import statistics
import struct
import subprocess
import sys
import time

import h5py
import numpy as np

import benchlib as B
from benchlib import drop_caches, say

MiB = 1 << 20


def Mount(args, path, opts, binary=None):
    """h5fs (or `binary`) -o OPTS on `path` at DIR/mnt."""
    mnt = os.path.join(args.dir, "mnt")
    return B.Mount([binary or args.h5fs, "-f", "-o", opts, path, mnt], mnt,
                   os.path.join(args.dir, "h5fs.log"), timeout=10, poll=0.02, close_timeout=20)


def cpu_s(pid):
    """The daemon's user + system CPU seconds so far: what a read cost it,
    steadier than throughput on a loaded machine."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ms(v):
    return "%.1f ms" % (v * 1000)


# ---- 1. latency -------------------------------------------------------------

def wait_until(pred, limit=10.0):
    t0 = time.perf_counter()
    while not pred():
        if time.perf_counter() - t0 > limit:
            return None
        time.sleep(0.0005)
    return time.perf_counter()


def latency(args):
    path = os.path.join(args.dir, "lat.h5")
    row = 4096
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("d", shape=(0, row), maxshape=(None, row), chunks=(1, row), dtype="u1")
    for mode in ("swmr", "plain"):
        st_lat, rd_lat = [], []
        with Mount(args, path, "ro") as m:
            ds_path = os.path.join(m.mnt, "d")
            f = None
            if mode == "swmr":
                f = h5py.File(path, "a", libver="latest")
                f.swmr_mode = True
            for i in range(args.appends):
                n0 = (f["d"].shape[0] if f else h5py.File(path, "r")["d"].shape[0])
                content = np.full((1, row), (i * 7 + 1) % 251, dtype=np.uint8)
                if f:
                    d = f["d"]
                    d.resize((n0 + 1, row))
                    d[n0:] = content
                    d.flush()
                else:
                    with h5py.File(path, "a") as g:
                        g["d"].resize((n0 + 1, row))
                        g["d"][n0:] = content
                t0 = time.perf_counter()
                size = (n0 + 1) * row
                t1 = wait_until(lambda: os.stat(ds_path).st_size == size)

                def new_bytes():
                    with open(ds_path, "rb") as r:
                        r.seek(n0 * row)
                        return r.read(row) == content.tobytes()
                t2 = wait_until(new_bytes)
                if t1 is None or t2 is None:
                    say("  %s append %d: not seen within 10 s" % (mode, i))
                    continue
                st_lat.append(t1 - t0)
                rd_lat.append(t2 - t0)
                time.sleep(0.02)
            if f:
                f.close()
        say("latency (%s writer, %d appends, refresh 1 s): stat median %s max %s; read median %s max %s"
            % (mode, len(st_lat), ms(statistics.median(st_lat)), ms(max(st_lat)),
               ms(statistics.median(rd_lat)), ms(max(rd_lat))))


# ---- 2. throughput ------------------------------------------------------------

def make_data(args):
    path = os.path.join(args.dir, "tp.h5")
    if os.path.exists(path):
        return path
    n = args.size_mib * MiB // 4
    rng = np.random.default_rng(1)
    with h5py.File(path + ".tmp", "w") as f:
        c = f.create_dataset("contig", shape=(n,), dtype="u4")
        z = f.create_dataset("deflate", shape=(n,), dtype="u4", chunks=(MiB // 4,), compression="gzip",
                             compression_opts=1)
        step = 16 * MiB // 4
        for a in range(0, n, step):
            b = min(n, a + step)
            v = (np.arange(a, b, dtype=np.uint64) // 64).astype(np.uint32) ^ rng.integers(0, 16, b - a, dtype=np.uint32)
            c[a:b] = v
            z[a:b] = v
    os.rename(path + ".tmp", path)
    return path


def seq_read(p, bs=MiB):
    fd = os.open(p, os.O_RDONLY)
    t0 = time.perf_counter()
    total = 0
    while True:
        b = os.read(fd, bs)
        if not b:
            break
        total += len(b)
    dt = time.perf_counter() - t0
    os.close(fd)
    return total / MiB / dt


def rand_read(p, n):
    fd = os.open(p, os.O_RDONLY)
    size = os.fstat(fd).st_size
    rng = np.random.default_rng(7)
    offs = rng.integers(0, size // 4096, n) * 4096
    t0 = time.perf_counter()
    for o in offs:
        os.pread(fd, 4096, int(o))
    dt = time.perf_counter() - t0
    os.close(fd)
    return n / dt


def throughput(args):
    path = make_data(args)
    res, cpu = {}, {}
    cold_ok = True
    variants = [("watching", "ro", None), ("refresh=0", "ro,refresh=0", None)]
    if args.strict:     # -o live=strict: the checked path from the first read
        variants.append(("strict", "ro,live=strict", None))
    if args.base:       # another build (main), watching: interleaved with ours
        variants.append(("base", "ro", args.base))
    for rep in range(args.repeat):
        for label, opts, binary in variants:
            seq_read(path)      # FILE in the page cache, for "fresh"
            with Mount(args, path, opts, binary) as m:
                def timed(ds, kind):
                    # and the daemon's CPU ms per GiB (a warm read is the kernel's)
                    c0 = cpu_s(m.proc.pid)
                    res.setdefault((label, ds, kind), []).append(seq_read(os.path.join(m.mnt, ds)))
                    cpu.setdefault((label, ds, kind), []).append(
                        (cpu_s(m.proc.pid) - c0) * 1000 * 1024 / args.size_mib)
                for ds in ("contig", "deflate"):
                    timed(ds, "fresh")  # a new mount: nothing in its page cache, FILE warm
                for ds in ("contig", "deflate"):
                    cold_ok = drop_caches() and cold_ok
                    timed(ds, "cold")
                    res.setdefault((label, ds, "warm"), []).append(seq_read(os.path.join(m.mnt, ds)))
                cold_ok = drop_caches() and cold_ok
                res.setdefault((label, "random 4 KiB", "reads/s"), []).append(
                    rand_read(os.path.join(m.mnt, "deflate"), args.reads))
    say("throughput (%d MiB datasets, %d runs; MiB/s, random: reads/s; cold %s):"
        % (args.size_mib, args.repeat, "after drop_caches" if cold_ok else "NOT dropped (not root)"))
    for key in sorted({k[1:] for k in res}):
        w, z = res[("watching",) + key], res[("refresh=0",) + key]
        line = "  %-14s %-8s watching %8.0f..%-8.0f refresh=0 %8.0f..%-8.0f (median ratio %.3f)" % (
            key[0], key[1], min(w), max(w), min(z), max(z), statistics.median(w) / statistics.median(z))
        if args.strict:
            b = res[("strict",) + key]
            line += "; strict %8.0f..%-8.0f (strict/refresh=0 median ratio %.3f)" % (
                min(b), max(b), statistics.median(b) / statistics.median(z))
        if args.base:
            b = res[("base",) + key]
            line += "; base %8.0f..%-8.0f (watching/base median ratio %.3f)" % (
                min(b), max(b), statistics.median(w) / statistics.median(b))
        say(line)
    for key in sorted(cpu, key=lambda k: (k[1], k[2], k[0])):
        say("  daemon CPU ms per GiB, %-7s %-5s %-9s %6.0f..%-6.0f median %6.0f"
            % (key[1], key[2], key[0], min(cpu[key]), max(cpu[key]), statistics.median(cpu[key])))


def changed(args):
    path = make_data(args)
    res, cpu = {}, {}
    variants = [("watching", "ro", None), ("refresh=0", "ro,refresh=0", None)]
    if args.base:
        variants.append(("base", "ro", args.base))
    for rep in range(args.repeat):
        for label, opts, binary in variants:
            seq_read(path)      # FILE in the page cache
            with Mount(args, path, opts, binary) as m:
                os.utime(path)  # a change: the watcher opens FILE anew
                time.sleep(1.5)
                os.stat(os.path.join(m.mnt, "contig"))
                for ds in ("contig", "deflate"):
                    for kind in ("first", "second"):
                        c0 = cpu_s(m.proc.pid)
                        res.setdefault((label, ds, kind), []).append(
                            seq_read(os.path.join(m.mnt, ds), 8 * MiB))
                        cpu.setdefault((label, ds, kind), []).append(
                            (cpu_s(m.proc.pid) - c0) * 1000 * 1024 / args.size_mib)
    say("after a change, 8 MiB read()s (%d MiB datasets, %d runs; MiB/s):" % (args.size_mib, args.repeat))
    for key in sorted({k[1:] for k in res}):
        line = "  %-8s %-7s" % key
        for label, _, _ in variants:
            r, c = res[(label,) + key], cpu[(label,) + key]
            line += " %s %5.0f..%-5.0f (CPU ms/GiB %4.0f..%-4.0f med %4.0f)" % (
                label, min(r), max(r), min(c), max(c), statistics.median(c))
        say(line)


# ---- 3. follow a SWMR writer ------------------------------------------------------

WRITER = r'''
import sys, time, struct, h5py, numpy as np
path, rows, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
RL = 1 << 20
f = h5py.File(path, "a", libver="latest")
f.swmr_mode = True
d = f["rows"]
t0 = time.time()
for i in range(rows):
    r = np.full(RL, i % 251, dtype=np.uint8)
    d.resize((i + 1, RL))
    d[i] = r
    d.flush()
    # the row's number and the flush time (ns) in its first bytes: written
    # after the flush they would not be the row's; the reader measures from
    # here, so the lag includes everything after this row became durable
    stamp = struct.pack("<QQ", i, time.time_ns())
    d[i, :16] = np.frombuffer(stamp, dtype=np.uint8)
    d.flush()
    nxt = t0 + (i + 1) / rate
    time.sleep(max(0, nxt - time.time()))
f.close()
'''


def follow(args):
    path = os.path.join(args.dir, "follow.h5")
    RL = MiB
    rows = int(args.follow_seconds * 100)
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("rows", shape=(0, RL), maxshape=(None, RL), chunks=(1, RL), dtype="u1")
    with Mount(args, path, "ro") as m:
        p = os.path.join(m.mnt, "rows")
        w = subprocess.Popen([sys.executable, "-c", WRITER, path, str(rows), "100"])
        seen, lags, bad = set(), [], 0
        fd = os.open(p, os.O_RDONLY)
        deadline = time.time() + args.follow_seconds + 30
        nxt = 0
        while nxt < rows and time.time() < deadline:
            n = os.fstat(fd).st_size // RL
            if n <= nxt:
                time.sleep(0.002)
                continue
            while nxt < n:
                b = os.pread(fd, RL, nxt * RL)
                i, t = struct.unpack("<QQ", b[:16])
                if len(b) != RL or b[16:] != bytes([nxt % 251]) * (RL - 16):
                    bad += 1
                elif i != nxt:
                    # read between the row's two flushes: its stamp is not
                    # there yet; read it again
                    time.sleep(0.001)
                    continue
                else:
                    lags.append(time.time_ns() / 1e9 - t / 1e9)
                    seen.add(nxt)
                nxt += 1
        os.close(fd)
        w.wait(60)
    lost = rows - len(seen)
    say("follow (SWMR writer, 1 MiB rows at 100 rows/s, %d rows): rows lost %d, bad %d; lag median %s max %s"
        % (rows, lost, bad, ms(statistics.median(lags)) if lags else "-", ms(max(lags)) if lags else "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--h5fs", required=True)
    ap.add_argument("--dir", default="/var/tmp/h5fs-live")
    ap.add_argument("--appends", type=int, default=100)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--reads", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--follow-seconds", type=float, default=10.0)
    ap.add_argument("--only", default="latency,throughput,follow")
    ap.add_argument("--strict", action="store_true", help="throughput: also -o ro,live=strict (the checked "
                    "path from the first read), alternated with the others")
    ap.add_argument("--base", default="", help="throughput: another h5fs binary (e.g. main's), mounted -o ro "
                    "in the same rounds")
    args = ap.parse_args()
    args.h5fs = os.path.abspath(args.h5fs)
    args.base = os.path.abspath(args.base) if args.base else ""
    os.makedirs(args.dir, exist_ok=True)
    for name in args.only.split(","):
        globals()[name](args)


if __name__ == "__main__":
    main()
