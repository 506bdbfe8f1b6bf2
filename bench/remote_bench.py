#!/usr/bin/python3
"""Issue 15's remote benchmark, run by hand (not in make check):

    /usr/bin/python3 bench/remote_bench.py [--size-mib 1024] [--delay-ms 20]

A file of --size-mib with 200 datasets (h5py) served by nginx on
127.0.0.1, directly (loopback) and through delay_proxy.py (--delay-ms each
way): once with no window (latency only: one connection is as fast as
loopback) and once per --window-mib (each connection at most that many
bytes unacknowledged per round trip, as TCP is; default: this kernel's
largest receive window). For each: requests and seconds for mount + ls -R + getfattr -d of
every dataset (cold: a fresh mount); a sequential cat of the largest
dataset against curl -o /dev/null of the same byte range; bytes fetched
(nginx's log) against bytes stored; --reads random 4 KiB preads of big
on a fresh mount (loopback and the delayed link without a window), each
checked against the served file, and the same reads through ROS3
(--ros3-reads of them over the delayed link: one request each). Run
from the build directory.
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


LAYOUTS = ("interleaved", "meta-first", "paged")


def make(path, size_mib, layout):
    """199 datasets in 10 groups with an attribute each, and a large "big".
    interleaved: each dataset written as it is created, so object headers
    and heaps lie between the data (h5py's usual way). meta-first: every
    group, dataset and attribute created before any data is written (late
    allocation): all metadata in the first 100 KiB. paged: the same made
    with libver="latest" and paged aggregation (fs_strategy="page",
    4 MiB pages, persistent free space): metadata and raw data in separate
    4 MiB pages, the metadata in the first."""
    big = min(200, size_mib // 2) << 20
    per = ((size_mib << 20) - big) // 199
    kw = {}
    if layout == "paged":
        kw = dict(libver="latest", fs_strategy="page", fs_page_size=4 << 20, fs_persist=True)
    with h5py.File(path, "w", **kw) as f:
        ds = []
        for i in range(199):
            g = f.require_group("g%02d" % (i % 10))
            if layout == "interleaved":
                d = g.create_dataset("d%03d" % i, data=np.full(per // 8, i, dtype="<f8"))
            else:
                d = g.create_dataset("d%03d" % i, shape=(per // 8,), dtype="<f8")
            d.attrs["index"] = i
            ds.append(d)
        if layout == "interleaved":
            f.create_dataset("big", data=np.arange(big // 8, dtype="<f8"))
        else:
            b = f.create_dataset("big", shape=(big // 8,), dtype="<f8")
            for i, d in enumerate(ds):
                d[...] = np.full(per // 8, i, dtype="<f8")
            b[...] = np.arange(big // 8, dtype="<f8")


def rmem_max():
    """The largest receive window this kernel's autotuning gives a TCP
    connection (net.ipv4.tcp_rmem, third field)."""
    return int(open("/proc/sys/net/ipv4/tcp_rmem").read().split()[2])


def logged(wd):
    try:
        lines = open(os.path.join(wd, "access.log")).read().splitlines()
    except OSError:
        return 0, 0
    return len(lines), sum(int(ln.rsplit(" ", 1)[1]) for ln in lines)


def reset_log(wd):
    open(os.path.join(wd, "access.log"), "w").close()
    subprocess.run(["kill", "-USR1", open(os.path.join(wd, "nginx.pid")).read().strip()])
    time.sleep(0.2)


def run(url, wd, mnt, label, big_off, big_len):
    reset_log(wd)
    t0 = time.monotonic()
    with T.Mount(url, mnt, ["-o", "retries=2,timeout=30"]):
        subprocess.run(["ls", "-R", mnt], stdout=subprocess.DEVNULL, check=True)
        subprocess.run("find %s -type f -print0 | xargs -0 getfattr -d >/dev/null" % mnt, shell=True,
                       stderr=subprocess.DEVNULL)
        t1 = time.monotonic()
        time.sleep(0.2)
        n1, b1 = logged(wd)
        t2 = time.monotonic()
        subprocess.run(["cat", os.path.join(mnt, "big")], stdout=subprocess.DEVNULL, check=True)
        t3 = time.monotonic()
    time.sleep(0.2)
    n2, b2 = logged(wd)
    t4 = time.monotonic()
    subprocess.run(["curl", "-s", "-o", "/dev/null", "-r", "%d-%d" % (big_off, big_off + big_len - 1), url],
                   check=True)
    t5 = time.monotonic()
    size = os.path.getsize(os.path.join(wd, "www", "f.h5"))
    print("%s h5fs (cold mount): mount+ls -R+getfattr -d: %d requests, %.2f s, %.1f MiB fetched" % (
        label, n1, t1 - t0, b1 / 2**20))
    print("%s h5fs: cat big (%.0f MiB): %.2f s (%.0f MiB/s), %d requests; curl same range: %.2f s (%.0f MiB/s); "
          "cat/curl %.2f" % (label, big_len / 2**20, t3 - t2, big_len / 2**20 / (t3 - t2), n2 - n1, t5 - t4,
                             big_len / 2**20 / (t5 - t4), (t3 - t2) / (t5 - t4)))
    print("%s h5fs: total fetched %.1f MiB (stored file %.1f MiB, %.3fx)" % (
        label, b2 / 2**20, size / 2**20, b2 / size))
    sys.stdout.flush()


def offsets(big_len, n):
    rng = np.random.default_rng(15)
    return [int(x) * 4096 for x in rng.integers(0, big_len // 4096, n)]


def run_random(url, wd, mnt, label, big_off, big_len, n):
    """n random 4 KiB preads of big on a fresh mount (one reader), every
    one checked against the file nginx serves."""
    local = open(os.path.join(wd, "www", "f.h5"), "rb")
    offs = offsets(big_len, n)
    reset_log(wd)
    with T.Mount(url, mnt, ["-o", "retries=2,timeout=30"]):
        fd = os.open(os.path.join(mnt, "big"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            t0 = time.monotonic()
            got = [os.pread(fd, 4096, o) for o in offs]
            t1 = time.monotonic()
        finally:
            os.close(fd)
    time.sleep(0.2)
    nreq, nbytes = logged(wd)
    bad = sum(1 for o, g in zip(offs, got) if g != os.pread(local.fileno(), 4096, big_off + o))
    local.close()
    print("%s h5fs: %d random 4 KiB reads of big (fresh mount): %.2f s (%.0f reads/s), %d requests, "
          "%.1f MiB fetched, %d wrong" % (label, n, t1 - t0, n / (t1 - t0), nreq, nbytes / 2**20, bad))
    sys.stdout.flush()


def run_random_ros3(url, wd, label, big_len, n):
    offs = offsets(big_len, n)
    reset_log(wd)
    with h5py.File(url, "r", driver="ros3") as f:
        d = f["big"]
        t0 = time.monotonic()
        for o in offs:
            d[o // 8:o // 8 + 512]
        t1 = time.monotonic()
    time.sleep(0.2)
    nreq, nbytes = logged(wd)
    print("%s ROS3: %d random 4 KiB reads of big: %.2f s (%.0f reads/s), %d requests (with the open), "
          "%.1f MiB fetched" % (label, n, t1 - t0, n / (t1 - t0), nreq, nbytes / 2**20))
    sys.stdout.flush()


def read_attrs(name, obj):
    dict(obj.attrs)
    return None  # anything else would end visititems()


def run_ros3(url, wd, label):
    """libhdf5's read-only S3 driver on the same URL: open, visit every
    object and read its attributes (what ls -R + getfattr -d need), then
    read big whole."""
    reset_log(wd)
    t0 = time.monotonic()
    with h5py.File(url, "r", driver="ros3") as f:
        f.visititems(read_attrs)
    t1 = time.monotonic()
    time.sleep(0.2)
    n1, b1 = logged(wd)
    with h5py.File(url, "r", driver="ros3") as f:
        d = f["big"]
        n1o, _ = logged(wd)
        t2 = time.monotonic()
        d[...]
        t3 = time.monotonic()
    time.sleep(0.2)
    n2, b2 = logged(wd)
    print("%s ROS3 (libhdf5 %s): open+visit+attributes: %d requests, %.2f s, %.1f MiB fetched" % (
        label, h5py.version.hdf5_version, n1, t1 - t0, b1 / 2**20))
    print("%s ROS3: read big: %.2f s, %d requests" % (label, t3 - t2, n2 - n1o))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--delay-ms", type=float, default=20)
    ap.add_argument("--layout", action="append", choices=LAYOUTS,
                    help="file layout(s) to measure (default: all)")
    ap.add_argument("--no-ros3", action="store_true", help="skip libhdf5's ROS3 driver")
    ap.add_argument("--reads", type=int, default=20000, help="random 4 KiB reads of big (0: none)")
    ap.add_argument("--ros3-reads", type=int, default=500,
                    help="random reads through ROS3 over the delayed link (one request each)")
    ap.add_argument("--window-mib", type=float, action="append",
                    help="also through the delay with a TCP window of this many MiB per connection "
                         "(default: none, and this kernel's largest receive window, tcp_rmem's third field)")
    a = ap.parse_args()
    windows = [0] + [int(w * 2**20) for w in (a.window_mib or [rmem_max() / 2**20])]
    ros3 = not a.no_ros3 and "ros3" in h5py.registered_drivers()
    for layout in a.layout or LAYOUTS:
        wd = tempfile.mkdtemp(prefix="h5fs-remote-bench-")
        os.makedirs(os.path.join(wd, "www"))
        path = os.path.join(wd, "www", "f.h5")
        make(path, a.size_mib, layout)
        with h5py.File(path, "r") as f:
            big_off, big_len = f["big"].id.get_offset(), f["big"].id.get_storage_size()
        proc, port = N.start_nginx(os.path.join(wd, "www"), wd)
        proxy = None
        mnt = os.path.join(wd, "mnt")
        print("== %s layout, %d MiB file" % (layout, os.path.getsize(path) >> 20))
        try:
            url = "http://127.0.0.1:%d/f.h5" % port
            run(url, wd, mnt, "loopback", big_off, big_len)
            if a.reads:
                run_random(url, wd, mnt, "loopback", big_off, big_len, a.reads)
            if ros3:
                run_ros3(url, wd, "loopback")
                if a.reads:
                    run_random_ros3(url, wd, "loopback", big_len, a.reads)
            for w in windows:
                proxy = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "tests", "integration",
                                                                       "delay_proxy.py"),
                                          str(port), str(a.delay_ms), str(w)], stdout=subprocess.PIPE)
                pport = int(proxy.stdout.readline())
                url = "http://127.0.0.1:%d/f.h5" % pport
                label = "%g ms each way, %s" % (a.delay_ms, "window %g MiB" % (w / 2**20) if w else "no window")
                run(url, wd, mnt, label, big_off, big_len)
                if a.reads and not w:
                    run_random(url, wd, mnt, label, big_off, big_len, a.reads)
                if ros3 and not w:
                    run_ros3(url, wd, label)
                    if a.ros3_reads:
                        run_random_ros3(url, wd, label, big_len, min(a.reads, a.ros3_reads))
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
