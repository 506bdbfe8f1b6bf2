#!/usr/bin/python3
"""Issue 15's remote benchmark, run by hand (not in make check):

    /usr/bin/python3 bench/remote_bench.py [--size-mib 1024] [--delay-ms 20]

A file of --size-mib with 200 datasets (h5py) served by nginx on
127.0.0.1, directly (loopback) and through delay_proxy.py (--delay-ms each
way). For each: requests and seconds for mount + ls -R + getfattr -d of
every dataset (cold: a fresh mount); a sequential cat of the largest
dataset against curl -o /dev/null of the same byte range; bytes fetched
(nginx's log) against bytes stored. Run from the build directory.
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


def make(path, size_mib):
    big = min(200, size_mib // 2) << 20
    per = ((size_mib << 20) - big) // 199
    with h5py.File(path, "w") as f:
        for i in range(199):
            g = f.require_group("g%02d" % (i % 10))
            d = g.create_dataset("d%03d" % i, data=np.full(per // 8, i, dtype="<f8"))
            d.attrs["index"] = i
        f.create_dataset("big", data=np.arange(big // 8, dtype="<f8"))


def logged(wd):
    try:
        lines = open(os.path.join(wd, "access.log")).read().splitlines()
    except OSError:
        return 0, 0
    return len(lines), sum(int(ln.rsplit(" ", 1)[1]) for ln in lines)


def run(url, wd, mnt, label, big_off, big_len):
    open(os.path.join(wd, "access.log"), "w").close()
    subprocess.run(["kill", "-USR1", open(os.path.join(wd, "nginx.pid")).read().strip()])
    time.sleep(0.2)
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
    print("%s (cold mount): mount+ls -R+getfattr -d: %d requests, %.2f s, %.1f MiB fetched" % (
        label, n1, t1 - t0, b1 / 2**20))
    print("%s: cat big (%.0f MiB): %.2f s (%.0f MiB/s), %d requests; curl same range: %.2f s (%.0f MiB/s)" % (
        label, big_len / 2**20, t3 - t2, big_len / 2**20 / (t3 - t2), n2 - n1, t5 - t4,
        big_len / 2**20 / (t5 - t4)))
    print("%s: total fetched %.1f MiB (stored file %.1f MiB)" % (label, b2 / 2**20, os.path.getsize(
        os.path.join(wd, "www", "f.h5")) / 2**20))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--delay-ms", type=float, default=20)
    a = ap.parse_args()
    wd = tempfile.mkdtemp(prefix="h5fs-remote-bench-")
    os.makedirs(os.path.join(wd, "www"))
    path = os.path.join(wd, "www", "f.h5")
    make(path, a.size_mib)
    with h5py.File(path, "r") as f:
        big_off, big_len = f["big"].id.get_offset(), f["big"].id.get_storage_size()
    proc, port = N.start_nginx(os.path.join(wd, "www"), wd)
    proxy = None
    mnt = os.path.join(wd, "mnt")
    try:
        run("http://127.0.0.1:%d/f.h5" % port, wd, mnt, "loopback", big_off, big_len)
        proxy = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "tests", "integration", "delay_proxy.py"),
                                  str(port), str(a.delay_ms)], stdout=subprocess.PIPE)
        pport = int(proxy.stdout.readline())
        run("http://127.0.0.1:%d/f.h5" % pport, wd, mnt, "%g ms each way" % a.delay_ms, big_off, big_len)
    finally:
        if proxy:
            proxy.kill()
            proxy.wait(10)
        proc.terminate()
        proc.wait(10)
        subprocess.run(["rm", "-rf", wd])


if __name__ == "__main__":
    main()
