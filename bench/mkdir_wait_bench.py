#!/usr/bin/python3
"""mkdir alone, many in one group, through a read-write h5fs mount: the
calls that wait for the link batch's commit (issue 70 item 3, branch
slots70). Run by hand, never in CI.

    bench/mkdir_wait_bench.py --h5fs PATH --base OLD_H5FS [-n N]
                              [--rounds R] [--load CPUS] [--dir DIR]
                              [--format default|latest]

Each round, base and head (the order swapped each round): a fresh file
(an empty group g), a fresh mount, N mkdir g/dNNNNN each timed alone;
printed: mean, median, p90, p99, how many calls took over 1 ms and over
5 ms and the time they took together. meta_ops_bench.py measures
mkdir, setfattr and rmdir beside h5py; this one only mkdir, at a larger
N and with the tail counted, since a commit's wait is a few calls of
milliseconds among thousands of 0.05 ms ones. With --dir on a disk the
commits' fsyncs cost what they cost there (on a tmpfs they are nearly
free, and the wait is short). --load CPUS runs `stress-ng --cpu CPUS`
for the run, stopped by PID at the end.
"""
import argparse
import os
import signal
import subprocess
import time

import h5py


def one(h5fs, d, n, fmt):
    path, mnt = os.path.join(d, "x.h5"), os.path.join(d, "m")
    with h5py.File(path, "w", libver="latest" if fmt == "latest" else "earliest") as f:
        f.create_group("g")
    os.makedirs(mnt, exist_ok=True)
    p = subprocess.Popen([h5fs, "-f", path, mnt], stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.ismount(mnt):
                break
            time.sleep(0.05)
        os.stat(os.path.join(mnt, "g"))
        ts = []
        for i in range(n):
            t = time.perf_counter()
            os.mkdir(os.path.join(mnt, "g", "d%05d" % i))
            ts.append(time.perf_counter() - t)
    finally:
        subprocess.run(["fusermount3", "-u", mnt])
        p.wait()
    ts.sort()
    slow = [t for t in ts if t > 1e-3]
    return (sum(ts) / n * 1e3, ts[n // 2] * 1e3, ts[int(n * .9)] * 1e3, ts[int(n * .99)] * 1e3,
            len(slow), sum(1 for t in ts if t > 5e-3), sum(slow) * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--dir", default="/tmp/h5fs-mkdir-wait")
    ap.add_argument("-n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--load", type=int, default=0)
    ap.add_argument("--format", default="default", choices=("default", "latest"))
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    st = None
    if a.load:
        st = subprocess.Popen(["stress-ng", "--cpu", str(a.load), "--timeout", "3600"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
    try:
        for r in range(a.rounds):
            for name in (("base", "head") if r % 2 == 0 else ("head", "base")):
                m = one(a.base if name == "base" else a.h5fs, a.dir, a.n, a.format)
                print("%s round %d %s mean %.3f p50 %.3f p90 %.3f p99 %.3f  >1ms %d  >5ms %d  "
                      "ms in >1ms calls %.0f  load %.1f" % (a.format, r, name, *m, os.getloadavg()[0]), flush=True)
    finally:
        if st:
            st.send_signal(signal.SIGTERM)
            st.wait()


if __name__ == "__main__":
    main()
