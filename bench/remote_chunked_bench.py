#!/usr/bin/python3
"""Issue 23's benchmark, run by hand (not in make check): remote chunked
data.

    /usr/bin/python3 bench/remote_chunked_bench.py [--runs 3] [--delay-ms 20]
        [--window-mib N ...] [--reads 2000] [--fsspec-reads 200]
        [--loopback-only] [--cat-rounds N]

A 256 MiB float64 dataset "data" in 1 MiB shuffle+deflate chunks (its
2-D twin "grid", 4096 x 8192 in 512 x 256 chunks, and an "after"
chunked dataset stored behind them make a ~420 MB file), served by nginx
on 127.0.0.1, directly (loopback) and through delay_proxy.py (--delay-ms
each way; no window, and each --window-mib, default this kernel's
largest receive window). Per link, --runs times each:
- h5fs: `cat` of data (and of grid) on a fresh mount (cold: nothing of
  the file cached by h5fs nor the kernel's page cache of the mount),
  requests and bytes fetched from nginx's log, the most requests in
  flight at once (log timestamps);
- h5fs on a local mount of the same file (loopback only; the file in the
  page cache: warm);
- h5py over fsspec's HTTP file system, `h5py.File(fsspec.open(url))`,
  `ds[()]` (block_size 2 and 8 MiB, the better one counted);
- curl-then-decode: one curl of the whole file to a temp file, then h5py
  reads data from it (what a user does today);
- --reads random 4 KiB preads of data on a fresh mount (one reader,
  fadvise RANDOM) against --fsspec-reads of them through h5py+fsspec;
- CPU seconds of each (h5fs's daemon from /proc, the Python process's
  with its threads, curl's as a child), which a loaded machine changes
  less than the wall times.
--cat-rounds N times only `cat data`, local and loopback interleaved round
by round (the quick check of the 0.8x target on a shared machine).
Every cat is compared with h5py's bytes. Run from the build directory.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import h5fs_testlib as T  # noqa: E402
import test_remote_nginx as N  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402

try:
    import fsspec  # noqa: E402
except ImportError:
    fsspec = None

MiB = 1 << 20


def make(path):
    rng = np.random.default_rng(23)
    n = 256 * MiB // 8
    ck = MiB // 8
    with h5py.File(path, "w") as f:
        d = f.create_dataset("data", shape=(n,), dtype="<f8", chunks=(ck,), shuffle=True, compression="gzip")
        for i in range(0, n, 16 * ck):
            d[i:i + 16 * ck] = np.round(rng.normal(size=16 * ck) * 1000, 2)
        g = f.create_dataset("grid", shape=(4096, 8192), dtype="<f8", chunks=(512, 256), shuffle=True,
                             compression="gzip")
        for r in range(0, 4096, 512):
            g[r:r + 512] = np.round(rng.normal(size=(512, 8192)) * 1000, 2)
        a = f.create_dataset("after", shape=(8 * MiB,), dtype="<f8", chunks=(ck,), shuffle=True,
                             compression="gzip")
        for i in range(0, 8 * MiB, 16 * ck):
            a[i:i + 16 * ck] = np.round(rng.normal(size=16 * ck) * 1000, 2)


def timing(wd):
    """[(start, end, bytes)] of nginx's timing log (start = end - request time)."""
    out = []
    try:
        lines = open(os.path.join(wd, "timing.log")).read().splitlines()
    except OSError:
        return out
    for ln in lines:
        p = ln.split()
        end, rt, nbytes = float(p[0]), float(p[1]), int(p[4])
        out.append((end - rt, end, nbytes))
    return out


def most_at_once(reqs):
    ev = sorted([(s, 1) for s, _, _ in reqs] + [(e, -1) for _, e, _ in reqs], key=lambda x: (x[0], x[1]))
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def reset_log(wd):
    for n in ("access.log", "timing.log"):
        open(os.path.join(wd, n), "w").close()
    subprocess.run(["kill", "-USR1", open(os.path.join(wd, "nginx.pid")).read().strip()])
    time.sleep(0.2)


def rng_(a):
    return "%.2f-%.2f" % (min(a), max(a)) if a else "-"


def cpu(pid):
    """CPU seconds (user + system, all threads) of a process so far."""
    p = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(p[11]) + int(p[12])) / os.sysconf("SC_CLK_TCK")


CPU = {}  # what -> [CPU seconds of h5fs during the cat]


def cat_remote(url, wd, mnt, name, want, runs, what=None):
    ts, info = [], ""
    for _ in range(runs):
        with T.Mount(url, mnt, ["-o", "retries=2,timeout=30"]) as m:
            os.stat(os.path.join(mnt, name))
            time.sleep(0.3)
            reset_log(wd)
            c0 = cpu(m.proc.pid)
            t0 = time.monotonic()
            # timed as the local mount is (`cat` to /dev/null): a read into
            # Python would add faulting in a 256 MiB buffer to the remote side
            subprocess.run(["cat", os.path.join(mnt, name)], stdout=subprocess.DEVNULL, check=True)
            ts.append(time.monotonic() - t0)
            CPU.setdefault(what or name, []).append(cpu(m.proc.pid) - c0)
            time.sleep(0.3)
            r = timing(wd)  # the cat's requests alone
            with open(os.path.join(mnt, name), "rb") as fh:  # the kernel's cache, or fetched again
                got = fh.read()
        if got != want:
            print("  WRONG BYTES in cat %s" % name)
        time.sleep(0.3)
        info = "%d requests, %.1f MiB fetched, %d at once at most" % (
            len(r), sum(b for _, _, b in r) / MiB, most_at_once(r))
    return ts, info


def cat_local(path, mnt, name, runs):
    ts = []
    for _ in range(runs):
        with T.Mount(path, mnt) as m:
            os.stat(os.path.join(mnt, name))
            c0 = cpu(m.proc.pid)
            t0 = time.monotonic()
            subprocess.run(["cat", os.path.join(mnt, name)], stdout=subprocess.DEVNULL, check=True)
            ts.append(time.monotonic() - t0)
            CPU.setdefault("local " + name, []).append(cpu(m.proc.pid) - c0)
    return ts


def fsspec_read(url, name, runs, block):
    ts = []
    for _ in range(runs):
        c0 = time.process_time()
        t0 = time.monotonic()
        with fsspec.open(url, "rb", block_size=block) as fo, h5py.File(fo, "r") as f:
            f[name][()]
        ts.append(time.monotonic() - t0)
        CPU.setdefault("fsspec %d MiB" % (block // MiB), []).append(time.process_time() - c0)
    return ts


def curl_decode(url, name, runs, tmp):
    ts = []
    for _ in range(runs):
        c0 = time.process_time()
        r0 = os.times()
        t0 = time.monotonic()
        subprocess.run(["curl", "-s", "-o", tmp, url], check=True)
        with h5py.File(tmp, "r") as f:
            f[name][()]
        ts.append(time.monotonic() - t0)
        r1 = os.times()
        CPU.setdefault("curl-then-decode", []).append(
            time.process_time() - c0 + r1.children_user + r1.children_system - r0.children_user - r0.children_system)
        os.unlink(tmp)
    return ts


def offsets(n, size):
    rng = np.random.default_rng(23)
    return [int(x) * 4096 for x in rng.integers(0, size // 4096, n)]


def random_h5fs(url, mnt, want, n):
    offs = offsets(n, len(want))
    with T.Mount(url, mnt, ["-o", "retries=2,timeout=30"]):
        fd = os.open(os.path.join(mnt, "data"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            t0 = time.monotonic()
            got = [os.pread(fd, 4096, o) for o in offs]
            dt = time.monotonic() - t0
        finally:
            os.close(fd)
    bad = sum(1 for o, g in zip(offs, got) if g != want[o:o + 4096])
    return n / dt, bad


def random_fsspec(url, size, n):
    offs = offsets(n, size)
    with fsspec.open(url, "rb", block_size=2 * MiB) as fo, h5py.File(fo, "r") as f:
        d = f["data"]
        t0 = time.monotonic()
        for o in offs:
            d[o // 8:o // 8 + 512]
        dt = time.monotonic() - t0
    return n / dt


def rmem_max():
    return int(open("/proc/sys/net/ipv4/tcp_rmem").read().split()[2])


def link(url, wd, mnt, label, a, want, wantg, size, local_cat):
    print("== %s" % label)
    CPU.clear()
    ts, info = cat_remote(url, wd, mnt, "data", want, a.runs, "data " + label)
    print("  h5fs cat data: %s s (%s)" % (rng_(ts), info))
    if local_cat:
        print("  remote/local: %.2f-%.2fx the local mount's time (>= 0.8x its speed: <= 1.25)" % (
            min(ts) / max(local_cat), max(ts) / min(local_cat)))
    tg, infog = cat_remote(url, wd, mnt, "grid", wantg, a.runs, "grid " + label)
    print("  h5fs cat grid (2-D chunks): %s s (%s)" % (rng_(tg), infog))
    cd = curl_decode(url, "data", a.runs, os.path.join(wd, "dl.h5"))
    print("  curl-then-decode: %s s; h5fs %.1f-%.1fx faster" % (rng_(cd), min(cd) / max(ts), max(cd) / min(ts)))
    if fsspec:
        best = None
        for blk in (2 * MiB, 8 * MiB):
            fs = fsspec_read(url, "data", min(a.runs, 2), blk)
            print("  h5py over fsspec (block %d MiB): %s s" % (blk // MiB, rng_(fs)))
            best = fs if best is None or min(fs) < min(best) else best
        print("  h5fs %.1f-%.1fx faster than the better fsspec" % (min(best) / max(ts), max(best) / min(ts)))
    print("  CPU seconds (user + system, all threads; h5fs: the daemon alone, nginx not counted): " +
          "; ".join("%s %s" % (k, rng_(v)) for k, v in CPU.items()))
    if a.reads:
        rate, bad = random_h5fs(url, mnt, want, a.reads)
        line = "  random 4 KiB reads: h5fs %.0f reads/s (%d wrong)" % (rate, bad)
        if fsspec and a.fsspec_reads:
            fr = random_fsspec(url, size, a.fsspec_reads)
            line += ", fsspec+h5py %.0f reads/s: %.1fx" % (fr, rate / fr)
        print(line)
    sys.stdout.flush()


def median(a):
    b = sorted(a)
    return (b[len(b) // 2] + b[(len(b) - 1) // 2]) / 2


def fetch_floor(path, url, mnt, nbytes):
    """The remote floor of one `cat data`: the local mount's cat with, at
    the same time, curl fetching nbytes (what the remote mount fetched)
    from the same nginx into /dev/null. A remote mount must do both on the
    same CPUs (receive the bytes, decode them), so it cannot finish before
    both are done, however well it overlaps them. (seconds, curl's alone)"""
    with T.Mount(path, mnt) as m:
        os.stat(os.path.join(mnt, "data"))
        t0 = time.monotonic()
        curl = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-r", "0-%d" % (nbytes - 1), url])
        subprocess.run(["cat", os.path.join(mnt, "data")], stdout=subprocess.DEVNULL, check=True)
        curl.wait(120)
        both = time.monotonic() - t0
    t0 = time.monotonic()
    subprocess.run(["curl", "-s", "-o", "/dev/null", "-r", "0-%d" % (nbytes - 1), url], check=True)
    return both, time.monotonic() - t0


def cat_rounds(path, url, wd, mnt, want, rounds):
    """`cat data` local and over loopback, interleaved round by round, so
    the load of a shared machine falls on both alike; ranges, medians and
    the per-round ratio of the times. Each round also the remote floor
    (fetch_floor): remote / floor says how much of the gap any remote
    mount on this machine would have."""
    loc, rem, ratio, flo, fratio = [], [], [], [], []
    for i in range(rounds):
        load = open("/proc/loadavg").read().split()[0]
        tl = cat_local(path, mnt, "data", 1)[0]
        tr, info = cat_remote(url, wd, mnt, "data", want, 1, "data loopback")
        tr = tr[0]
        fetched = int(float(info.split(" MiB fetched")[0].split()[-1]) * MiB)
        tf, tc = fetch_floor(path, url, mnt, fetched)
        loc.append(tl)
        rem.append(tr)
        flo.append(tf)
        ratio.append(tr / tl)
        fratio.append(tf / tl)
        print("  round %d (load %s): local %.2f s, remote %.2f s (%.2fx; CPU %.2f / %.2f s; %s); floor: local cat"
              " beside curl of the same %d MiB %.2f s (%.2fx local; curl alone %.2f s)" % (
                  i + 1, load, tl, tr, tr / tl, CPU["local data"][-1], CPU["data loopback"][-1], info,
                  fetched // MiB, tf, tf / tl, tc))
        sys.stdout.flush()
    print("cat data, %d rounds: local %s s (median %.2f), remote %s s (median %.2f); remote/local time %s "
          "(median %.2f; target <= 1.25); CPU local %s (median %.2f), remote %s (median %.2f)" % (
              rounds, rng_(loc), median(loc), rng_(rem), median(rem), rng_(ratio), median(ratio),
              rng_(CPU["local data"]), median(CPU["local data"]), rng_(CPU["data loopback"]),
              median(CPU["data loopback"])))
    print("remote floor (local cat beside curl of the fetched bytes): %s s (median %.2f); floor/local %s (median"
          " %.2f); remote/floor %s (median %.2f)" % (
              rng_(flo), median(flo), rng_(fratio), median(fratio),
              rng_([r / f for r, f in zip(rem, flo)]), median([r / f for r, f in zip(rem, flo)])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--delay-ms", type=float, default=20)
    ap.add_argument("--window-mib", type=float, action="append")
    ap.add_argument("--reads", type=int, default=2000)
    ap.add_argument("--fsspec-reads", type=int, default=200)
    ap.add_argument("--loopback-only", action="store_true")
    ap.add_argument("--cat-rounds", type=int, default=0,
                    help="only `cat data`: this many rounds, each a local then a loopback mount, interleaved")
    a = ap.parse_args()
    windows = [0] + [int(w * MiB) for w in (a.window_mib or [rmem_max() / MiB])]
    wd = tempfile.mkdtemp(prefix="h5fs-chunked-bench-")
    os.makedirs(os.path.join(wd, "www"))
    path = os.path.join(wd, "www", "f.h5")
    make(path)
    with h5py.File(path, "r") as f:
        want = f["data"][()].tobytes()
        wantg = f["grid"][()].tobytes()
        stored = f["data"].id.get_storage_size()
    size = os.path.getsize(path)
    print("file %.0f MB; data 256 MiB in %.0f MiB stored; fsspec %s" % (
        size / 1e6, stored / MiB, "yes" if fsspec else "missing (Debian python3-fsspec python3-aiohttp)"))
    proc, port = N.start_nginx(os.path.join(wd, "www"), wd)
    proxy = None
    mnt = os.path.join(wd, "mnt")
    try:
        if a.cat_rounds:
            cat_rounds(path, "http://127.0.0.1:%d/f.h5" % port, wd, mnt, want, a.cat_rounds)
            return
        loc = cat_local(path, mnt, "data", a.runs)
        print("== local mount: cat data %s s (warm page cache), h5fs CPU %s s" % (
            rng_(loc), rng_(CPU["local data"])))
        url = "http://127.0.0.1:%d/f.h5" % port
        link(url, wd, mnt, "loopback", a, want, wantg, len(want), loc)
        for w in ([] if a.loopback_only else windows):
            proxy = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "tests", "integration",
                                                                   "delay_proxy.py"),
                                      str(port), str(a.delay_ms), str(w)], stdout=subprocess.PIPE)
            pport = int(proxy.stdout.readline())
            label = "%g ms each way, %s" % (a.delay_ms, "window %g MiB" % (w / MiB) if w else "no window")
            link("http://127.0.0.1:%d/f.h5" % pport, wd, mnt, label, a, want, wantg, len(want), None)
            proxy.kill()
            proxy.wait(10)
            proxy = None
    finally:
        if proxy:
            proxy.kill()
            proxy.wait(10)
        proc.terminate()
        proc.wait(10)
        subprocess.run(["rm", "-rf", wd])


if __name__ == "__main__":
    main()
