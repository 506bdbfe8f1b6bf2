#!/usr/bin/python3
"""The default mount's warm path (issue 70 item 1): a plain `h5fs FILE MNT`
of a local file is live (refresh=1); does it answer warm walks and reads
as fast as a frozen (`-o refresh=0`) mount? Run by hand, never in CI:

    cc -O2 -o /tmp/make_many bench/make_many.c $(pkg-config --cflags --libs hdf5)
    cc -O2 -o /tmp/tree_floor bench/tree_floor.c bench/floor_common.c $(pkg-config --cflags --libs fuse3)
    /usr/bin/python3 bench/warm_bench.py --h5fs ./h5fs [--n 100000] [--rounds 5]

1. find: make_many's tree of N one-element datasets (groups of 1,000) is
   walked by `find MNT` once (cold, not compared), then --walks more times
   on the same mount (warm: the kernel's entries, attributes and listings
   are what is measured). Sides, alternated per round: `-o ro` (live, the
   default), `-o ro,refresh=0` (frozen), and the FUSE floor
   (bench/tree_floor.c --synth N: the same tree from memory, same timeouts,
   cache_readdir). Each walk's wall time and the daemon's CPU; per round
   the ratios default/floor and default/refresh=0; median over rounds.
2. read: a 256 MiB contiguous float32 dataset, read with 1 MiB read()s
   once (filling the page cache), then --reads more times, each with a
   fresh open() --gap seconds after the last (so a live mount's entry and
   attribute timeouts, refresh=1, would have run out). Sides `-o ro` and
   `-o ro,refresh=0`, alternated per round; ratio refresh=0 time / default
   time (1 = the same speed; the goal is >= 0.95).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

MiB = 1 << 20


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Mount:
    def __init__(self, argv, mnt):
        self.argv, self.mnt = argv, mnt

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        self.p = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while not os.path.ismount(self.mnt):
            if self.p.poll() is not None or time.monotonic() - t0 > 20:
                raise SystemExit("mount failed: %s" % " ".join(self.argv))
            time.sleep(0.01)
        return self

    def __exit__(self, *a):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def find_walks(m, walks):
    """cold walk, then `walks` warm ones: [(wall, daemon cpu)]"""
    out = []
    for i in range(walks + 1):
        c0, t0 = cpu_s(m.p.pid), time.perf_counter()
        r = subprocess.run(["find", m.mnt], stdout=subprocess.PIPE, check=True)
        out.append((time.perf_counter() - t0, cpu_s(m.p.pid) - c0, r.stdout.count(b"\n")))
    return out


def bench_find(a, d):
    path = os.path.join(d, "many%d.h5" % a.n)
    if not os.path.exists(path):
        subprocess.run([a.gen, path, str(a.n)], check=True, stdout=subprocess.DEVNULL)
    mnt = os.path.join(d, "mnt")
    sides = [("default", [a.h5fs, "-f", "-o", "ro", path, mnt]),
             ("refresh=0", [a.h5fs, "-f", "-o", "ro,refresh=0", path, mnt])]
    if a.floor:
        sides.append(("floor", [a.floor, "--synth", str(a.n), mnt]))
    res = {s: [] for s, _ in sides}
    for r in range(a.rounds):
        for s, argv in sides:
            with Mount(argv, mnt) as m:
                w = find_walks(m, a.walks)
            best = min(w[1:], key=lambda x: x[0])
            res[s].append(best)
            print("round %d %-9s cold %.2f s, warm %s (daemon CPU %s), %d names" % (
                r, s, w[0][0], " ".join("%.3f" % x[0] for x in w[1:]),
                " ".join("%.3f" % x[1] for x in w[1:]), w[0][2]), flush=True)
    print("find warm, N=%d, best warm walk per round:" % a.n)
    for s in res:
        print("  %-9s %s s" % (s, " ".join("%.3f" % x[0] for x in res[s])))
    for other in [o for o in ("floor", "refresh=0") if o in res]:
        rat = [x[0] / y[0] for x, y in zip(res["default"], res[other])]
        print("  default/%s per round %s, median %.2fx" % (other, " ".join("%.2f" % x for x in rat),
                                                        statistics.median(rat)))


def read_all(p):
    fd = os.open(p, os.O_RDONLY)
    buf = bytearray(MiB)
    n = 0
    try:
        while True:
            k = os.readv(fd, [buf])
            if not k:
                return n
            n += k
    finally:
        os.close(fd)


def bench_read(a, d):
    import h5py
    import numpy as np
    path = os.path.join(d, "contig256.h5")
    if not os.path.exists(path):
        with h5py.File(path, "w") as f:
            f.create_dataset("d", data=np.random.default_rng(1).random(64 * MiB, dtype=np.float32))
    mnt = os.path.join(d, "mnt")
    res = {"default": [], "refresh=0": []}
    for r in range(a.rounds):
        for s, o in (("default", "ro"), ("refresh=0", "ro,refresh=0")):
            with Mount([a.h5fs, "-f", "-o", o, path, mnt], mnt):
                n = read_all(os.path.join(mnt, "d"))
                ts = []
                for _ in range(a.reads):
                    time.sleep(a.gap)
                    t0 = time.perf_counter()
                    read_all(os.path.join(mnt, "d"))
                    ts.append(time.perf_counter() - t0)
            res[s].append(statistics.median(ts))
            print("round %d %-9s %d bytes, warm reads %s s" % (r, s, n, " ".join("%.4f" % t for t in ts)),
                  flush=True)
    rat = [z / x for x, z in zip(res["default"], res["refresh=0"])]
    print("read warm 256 MiB: median per round default %s s, refresh=0 %s s" % (
        " ".join("%.4f" % x for x in res["default"]), " ".join("%.4f" % x for x in res["refresh=0"])))
    print("  refresh=0 time / default time per round %s, median %.2fx" % (
        " ".join("%.2f" % x for x in rat), statistics.median(rat)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--h5fs", default="./h5fs")
    ap.add_argument("--gen", default="/tmp/make_many")
    ap.add_argument("--floor", default="/tmp/tree_floor", help="tree_floor binary ('' to skip)")
    ap.add_argument("--dir", default="/var/tmp/h5fs-warm")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--walks", type=int, default=3)
    ap.add_argument("--reads", type=int, default=5)
    ap.add_argument("--gap", type=float, default=1.2)
    ap.add_argument("--only", default="find,read")
    a = ap.parse_args()
    a.h5fs = os.path.abspath(a.h5fs)
    os.makedirs(a.dir, exist_ok=True)
    print("load %s" % open("/proc/loadavg").read().strip())
    if "find" in a.only:
        bench_find(a, a.dir)
    if "read" in a.only:
        bench_read(a, a.dir)
    print("load %s" % open("/proc/loadavg").read().strip())


if __name__ == "__main__":
    sys.exit(main())
